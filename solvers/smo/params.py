"""The parameters of ``smo`` (C-SVC; the package docstring states the problem and the mapping)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from solvers import config
from solvers.base import SolverParams, Solves, gap_tolerance_field
from solvers.core.kernels import Kernel

#: C-SVC: the hinge loss with a free bias (the equality constraint y'alpha = 0 of the dual is
#: the free bias), binary, one-vs-one (LIBSVM's multi-class) and one-vs-rest.
SMO_SOLVES = (
    Solves.product(("binary", "ovo", "ovr"), ("hinge",), ("free",))
).refusing("SMO solves C-SVC, whose dual has the equality constraint y'alpha = 0 of a free "
           "bias; a regularized bias is a constant feature, another kernel and a dual "
           "without that constraint", bias="regularized").refusing(
    "SMO solves C-SVC, whose dual has the equality constraint y'alpha = 0 of a free bias; "
    "without a bias the dual has no equality constraint (dual coordinate descent solves it)",
    bias="none").refusing(
    "SMO solves the hinge loss's dual (a box-constrained QP, C-SVC); the other losses have "
    "other duals", loss="squared_hinge").refusing(
    "SMO solves the hinge loss's dual (C-SVC); lp with 1 < p < 2 has no QP dual",
    loss="lp").refusing(
    "SMO solves the hinge loss's dual (C-SVC)", loss="modified_huber").refusing(
    "SMO solves the hinge loss's dual (C-SVC); the least-squares loss is the lssvm family's",
    loss="least_squares").refusing(
    "SMO has no Crammer-Singer solver (use multiclass='ovo', LIBSVM's strategy)",
    task="crammer_singer").refusing(
    "SMO solves classification only", task="ordinal")

SMOKernelName = Literal["linear", "rbf", "polynomial", "sigmoid"]


class SMOParams(SolverParams):
    """Parameters of ``smo``: C-SVC with LIBSVM's kernels and stopping rule."""

    solves: ClassVar[Solves] = SMO_SOLVES
    own_kernel: ClassVar[bool] = True

    solver: Literal["smo"] = "smo"
    loss: SMO_SOLVES.choices("loss") = Field("hinge", description="C-SVC's loss: the hinge.")
    bias: SMO_SOLVES.choices("bias") = SMO_SOLVES.bias_field(
        "free", "C-SVC's bias is free (the dual's y'alpha = 0).")
    multiclass: SMO_SOLVES.choices("multiclass") = Field(
        "ovo", description="Multi-class strategy: ovo, one binary C-SVC per pair of classes "
                           "and voting (LIBSVM's, the default: each subproblem holds two "
                           "classes' rows; measured on letter (5,000 rows, 26 classes) 2.4 s "
                           "and 87.8% test accuracy against one-vs-rest's 4.7 s and 84.7%, "
                           "on dna level); ovr, one per class against the rest.")
    kernel: SMOKernelName = Field(
        "rbf", description="Kernel (LIBSVM's -t): linear x.z, rbf exp(-gamma ||x-z||^2), "
                           "polynomial (gamma x.z + coef0)^degree, sigmoid "
                           "tanh(gamma x.z + coef0); 'poly' is accepted for polynomial.")
    gamma: float | Literal["scale"] | Literal["auto"] = Field(
        "scale", description="Kernel gamma (LIBSVM's -g): a positive number, 'scale' = "
                             "1 / (n_features Var(X)) (scikit-learn's default) or 'auto' = "
                             "1 / n_features (LIBSVM's default).")
    degree: int = Field(3, ge=1, description="Polynomial degree (LIBSVM's -d).")
    coef0: float = Field(0.0, description="Constant of the polynomial and sigmoid kernels "
                                          "(LIBSVM's -r).")
    cache_mb: float = Field(config.KERNEL_CACHE_MB, gt=0,
                            description="Memory of the kernel-row cache in MiB (rows of "
                                        "float64, LRU; at least two rows are kept).")
    shrinking: bool = Field(True, description="LIBSVM's shrinking heuristic (-h).")
    stop_rule: Literal["gap", "kkt"] = Field(
        "gap", description="gap: stop once the certified relative duality gap is at most "
                           "tol (the project's rule; checked at every report from the "
                           "maintained gradient, and by tightening the KKT tolerance tenfold "
                           "each time it is met first); kkt: LIBSVM's rule, the maximal "
                           "violating pair m(alpha) - M(alpha) <= kkt_tol.")
    tol: float = gap_tolerance_field()
    kkt_tol: float = Field(1e-3, gt=0,
                           description="LIBSVM's -e: the maximal violating pair's "
                                       "m(alpha) - M(alpha) at which stop_rule='kkt' stops "
                                       "(the first KKT tolerance of stop_rule='gap').")
    max_iter: int = Field(10_000_000, ge=1, description="SMO iterations (two-variable "
                                                        "updates) per binary problem.")

    @model_validator(mode="before")
    @classmethod
    def _poly_alias(cls, data: Any) -> Any:
        """LIBSVM and scikit-learn call the polynomial kernel 'poly'."""
        if isinstance(data, dict) and data.get("kernel") == "poly":
            data = {**data, "kernel": "polynomial"}
        return data

    @model_validator(mode="after")
    def _exact_kernel(self):
        if self.approximation != "none":
            raise ValueError("smo solves the exact kernel problem; approximation='nystrom' "
                             "or 'icf' trains a linear solver on a low-rank factor (mfn, "
                             "alm, cutting_plane, interior_point, dual_cd)")
        return self

    @classmethod
    def _posing_values(cls, problem: dict[str, Any]) -> dict[str, Any]:
        """A problem without a kernel is the linear kernel's; without a strategy, one-vs-rest
        (the default of a posed problem, SolverParams._normalized)."""
        return {"kernel": "linear", "multiclass": "ovr", **problem}

    def kernel_function(self, X) -> Kernel:
        """The kernel on training data X (gamma resolved on it): the base's."""
        return self.approximation_kernel(X)

    def problem_fields(self) -> dict[str, Any]:
        """The base fields plus the kernel and its parameters (the linear kernel adds none:
        it poses the linear problem the other families solve)."""
        fields = super().problem_fields()
        if self.kernel != "linear":
            fields["kernel"] = self.kernel
            fields["gamma"] = self.gamma if isinstance(self.gamma, str) else float(self.gamma)
            if self.kernel in ("polynomial", "sigmoid"):
                fields["coef0"] = float(self.coef0)
            if self.kernel == "polynomial":
                fields["degree"] = self.degree
        return fields
