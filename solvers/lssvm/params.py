"""The parameters of the least-squares family (the package docstring maps them to the papers)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from solvers import config
from solvers.base import SolverParams, Solves
from solvers.core.kernels import Kernel
from solvers.problems import BinaryProblem

KernelName = Literal["linear", "rbf", "polynomial"]
Method = Literal["auto", "direct", "iterative"]


#: What the family's three solvers solve (binary, one-vs-rest): the LS-SVM's least squares
#: with its free bias, the proximal SVM's with a regularized one, the relaxed LS-SVM's (13)
#: (a regularized bias weighted by A) with least squares (2SMO) or the squared hinge
#: (SesquiSMO).
LSSVM_SOLVES = Solves.product(("binary", "ovr"), ("least_squares",), ("free",))
PROXIMAL_SVM_SOLVES = Solves.product(("binary", "ovr"), ("least_squares",), ("regularized",))
#: The loss each variant of the relaxed LS-SVM solves: 2SMO's equality constraints (6) make
#: the error the least-squares one, SesquiSMO's inequalities (33) max(0, 1 - m).
RELAXED_VARIANT_LOSSES = {"2smo": "least_squares", "sesquismo": "squared_hinge"}
RELAXED_LSSVM_SOLVES = Solves.product(("binary", "ovr"), tuple(RELAXED_VARIANT_LOSSES.values()),
                                      ("regularized",))


class KernelSolverParams(SolverParams):
    """Kernel and cache parameters shared by the LS-SVM family."""

    own_kernel: ClassVar[bool] = True

    loss: Literal["least_squares"] = "least_squares"
    kernel: KernelName = Field(
        "rbf", description="Kernel: linear x.z, rbf exp(-gamma ||x-z||^2), polynomial "
                           "(gamma x.z + coef0)^degree.")
    gamma: float = Field(1.0, gt=0, description="Kernel gamma (rbf, polynomial); Joshi et al. "
                                                "use 1 in all experiments.")
    degree: int = Field(3, ge=1, description="Polynomial kernel degree.")
    coef0: float = Field(0.0, description="Polynomial kernel constant term.")
    cache_mb: float = Field(config.KERNEL_CACHE_MB, gt=0,
                            description="Memory of the kernel-row cache in MiB (at least one "
                                        "row is kept).")

    @classmethod
    def _posing_values(cls, problem: dict[str, Any]) -> dict[str, Any]:
        """A problem without a kernel is the linear kernel's."""
        return {"kernel": "linear", **problem}

    def kernel_function(self) -> Kernel:
        return Kernel(self.kernel, self.gamma, self.degree, self.coef0)

    def problem_fields(self) -> dict[str, Any]:
        """The base fields plus the kernel and its parameters; the linear kernel adds none
        (it poses the linear problem the other families solve)."""
        fields = super().problem_fields()
        if self.kernel != "linear":
            fields["kernel"] = self.kernel
            fields["gamma"] = float(self.gamma)
            if self.kernel == "polynomial":
                fields["degree"] = self.degree
                fields["coef0"] = float(self.coef0)
        return fields


class SystemParams(KernelSolverParams):
    method: Method = Field(
        "auto",
        description="direct: dense factorization of the kernel system; iterative: conjugate "
                    "gradients (CGLS on the primal for the linear kernel, a kernel operator "
                    "through the row cache otherwise); auto: iterative for the linear kernel, "
                    "direct up to a size threshold otherwise.")
    cg_tol: float = Field(1e-6, gt=0, lt=1,
                          description="iterative: relative residual at which CG stops (for "
                                      "the linear kernel, CGLS rule (13) ||X'z - lambda "
                                      "beta|| <= cg_tol ||z||).  The least-squares family "
                                      "stops on its residuals, not on a certified gap (it "
                                      "has no tol).")
    max_iter: int = Field(10000, ge=1, description="iterative: conjugate-gradient iterations "
                                                   "(one kernel or data product each).")


class LSSVMParams(SystemParams):
    """Parameters of ``lssvm`` (Suykens' gamma = 2 C)."""

    solves: ClassVar[Solves] = LSSVM_SOLVES

    solver: Literal["lssvm"] = "lssvm"
    bias: LSSVM_SOLVES.choices("bias") = Field(
        "free", description="The LS-SVM bias is free (unregularized).")


class ProximalSVMParams(SystemParams):
    """Parameters of ``proximal_svm`` (Fung & Mangasarian's nu = 2 C)."""

    solves: ClassVar[Solves] = PROXIMAL_SVM_SOLVES

    solver: Literal["proximal_svm"] = "proximal_svm"
    bias: PROXIMAL_SVM_SOLVES.choices("bias") = Field(
        "regularized", description="The proximal SVM regularizes the bias: 1/2 b~^2 with "
                                   "intercept bias_scale * b~.")


class RelaxedLSSVMParams(KernelSolverParams):
    """Parameters of ``relaxed_lssvm`` (Joshi's C = 2 C; ``A`` weighs the bias)."""

    solves: ClassVar[Solves] = RELAXED_LSSVM_SOLVES

    solver: Literal["relaxed_lssvm"] = "relaxed_lssvm"
    loss: RELAXED_LSSVM_SOLVES.choices("loss") = Field(
        "least_squares",
        description="least_squares for variant 2smo (equality constraints (6)); "
                    "squared_hinge for sesquismo (inequality constraints (33) make the error "
                    "max(0, 1 - m)); follows the variant when not given.")
    bias: RELAXED_LSSVM_SOLVES.choices("bias") = Field(
        "regularized", description="The bias enters as A/2 b^2 (13) (docs/design.md's regularized "
                                   "bias with bias_scale = 1/sqrt(A)); set A, not bias_scale.")
    variant: Literal["2smo", "sesquismo"] = Field(
        "2smo", description="2smo: equality constraints, multipliers free; sesquismo: "
                            "inequality constraints (32)-(35), multipliers >= 0.")
    A: float = Field(1e4, gt=0, description="Weight of A/2 b^2 in (13); Joshi et al. chose "
                                            "1e4. With sumt, the starting value.")
    @model_validator(mode="after")
    def _no_approximation(self):
        if self.approximation != "none":
            raise ValueError("relaxed_lssvm solves its n x n dual through kernel rows whatever "
                             "the kernel, so a low-rank factor does not make it smaller; "
                             "approximation='nystrom' or 'icf' trains lssvm, proximal_svm or a "
                             "linear solver (mfn, alm, cutting_plane, interior_point, dual_cd) "
                             "on the factor")
        return self

    kkt_tol: float = Field(1e-3, gt=0,
                           description="Stop when the largest KKT violation of (18) (or "
                                       "(34)-(35)), in units of the margin, is at most this "
                                       "(the family stops on its KKT conditions, not on a "
                                       "certified gap: it has no tol).")
    max_iter: int = Field(1000, ge=1, description="Epochs of n multiplier updates each (over "
                                                  "all SUMT rounds).")
    sumt: bool = Field(False, description="Section VI: drive A towards 0 over rounds to "
                                          "recover the classical (free-bias) problem.")
    sumt_factor: float = Field(0.1, gt=0, lt=1,
                               description="rho in A <- rho A between SUMT rounds (the paper "
                                           "illustrates 0.9; each round costs more as A "
                                           "shrinks, so fewer, larger steps are cheaper).")
    sumt_tol: float = Field(1e-6, gt=0,
                            description="SUMT stops when |lambda'y| <= sumt_tol * "
                                        "sum |lambda_i|.")
    sumt_max_rounds: int = Field(100, ge=1, description="Largest number of SUMT rounds.")

    @model_validator(mode="before")
    @classmethod
    def _loss_follows_variant(cls, data: Any) -> Any:
        """The variant and the loss name one another: either given alone sets the other
        (so each declared loss trains by its name alone)."""
        if isinstance(data, dict):
            variant_of = {loss: variant for variant, loss in RELAXED_VARIANT_LOSSES.items()}
            # only names are looked up: any other value (a dict, a list) is left for the
            # field's own validation to refuse (a 422), not a TypeError from a dict lookup
            variant, loss = data.get("variant"), data.get("loss")
            if isinstance(variant, str) and variant in RELAXED_VARIANT_LOSSES \
                    and "loss" not in data:
                data = {**data, "loss": RELAXED_VARIANT_LOSSES[variant]}
            elif isinstance(loss, str) and loss in variant_of and "variant" not in data:
                data = {**data, "variant": variant_of[data["loss"]]}
        return data

    @model_validator(mode="after")
    def _check_consistency(self):
        expected = RELAXED_VARIANT_LOSSES[self.variant]
        if self.loss != expected:
            raise ValueError(f"variant {self.variant!r} solves loss {expected!r}, not "
                             f"{self.loss!r}")
        if self.bias_scale != 1.0:
            raise ValueError("relaxed_lssvm weighs the bias by A (A = 1/bias_scale^2): set A "
                             "instead of bias_scale")
        return self

    @classmethod
    def _posing_values(cls, problem: dict[str, Any]) -> dict[str, Any]:
        """(13) poses docs/design.md's regularized bias of scale s with A = 1/s^2, and the free
        bias through SUMT (its rounds drive A to 0)."""
        values = super()._posing_values(problem)
        bias = values.pop("bias", None)
        scale = values.pop("bias_scale", 1.0)
        if bias == "free":
            values["sumt"] = True
        elif bias == "regularized":
            values["A"] = 1.0 / float(scale) ** 2
        else:
            values["bias"] = bias  # refused by the declaration, with its reason
        return values

    def problem_fields(self) -> dict[str, Any]:
        """(13) as docs/design.md's regularized bias with bias_scale = 1/sqrt(A); with SUMT, the
        free-bias LS-SVM its rounds drive towards."""
        fields = super().problem_fields()
        if self.sumt:
            fields["bias"] = "free"
            del fields["bias_scale"]
        else:
            fields["bias_scale"] = float(1.0 / np.sqrt(self.A))
        return fields

    def binary_problem(self, X, y, sample_weight=None) -> BinaryProblem:
        """(13) is ``docs/design.md``'s regularized bias with bias_scale = 1/sqrt(A) (without SUMT;
        its rounds drive A towards 0, the free-bias LS-SVM)."""
        return BinaryProblem(X, y, C=self.C, loss=self.loss, bias="regularized",
                             bias_scale=1.0 / np.sqrt(self.A), sample_weight=sample_weight)
