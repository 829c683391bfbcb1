"""The parameters of ``alm`` (the package docstring explains the defaults and the paper's
choices)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from solvers.base import SolverParams, Solves, gap_tolerance_field
from solvers.losses import LOSS_TYPES, canonical

#: What alm solves: the Lp-loss SVM (problem (4), 1 <= p <= 2, whose ends are the hinge and
#: the squared hinge), with the paper's free bias or LIBLINEAR's regularized one, or none.
ALM_SOLVES = Solves.product(("binary", "ovr", "ovo"), ("lp", "hinge", "squared_hinge"),
                            ("free", "regularized", "none"))


class ALMParams(SolverParams):
    """Parameters of ``alm`` (SVM-ALM, Nie et al. 2014).  The default stopping rule is the
    relative duality gap ``tol``; ``stop_rule="paper"`` with ``max_iter=100`` is the paper's
    section 4 protocol."""

    solves: ClassVar[Solves] = ALM_SOLVES
    renamed_fields: ClassVar[dict[str, str]] = {"initial_w": "cold_start"}  # as interior_point's

    solver: Literal["alm"] = "alm"
    multiclass: ALM_SOLVES.choices("multiclass") = ALM_SOLVES.multiclass_field()
    loss: ALM_SOLVES.choices("loss") = Field(
        "lp", description="max(0, 1 - m)^p (problem (4)); hinge is p = 1, squared_hinge p = 2.")
    p: float = Field(2.0, ge=1.0, le=2.0,
                     description="Exponent of the lp loss, 1 <= p <= 2 (1 for hinge and 2 for "
                                 "squared_hinge, which fix it).")
    bias: ALM_SOLVES.choices("bias") = Field(
        "free", description="free: the paper's unregularized b (native); regularized: "
                            "LIBLINEAR's -B constant feature; none: b = 0.")
    variant: Literal["exact", "inexact"] = Field(
        "exact",
        description="exact: Algorithm 1, the (w, b)-step (14) solved by CGLS to cgls_tol; "
                    "inexact: Algorithm 2, one steepest-descent step with the exact step "
                    "length (16)-(18).")
    mu0: float | None = Field(
        None, gt=0, description="Penalty mu of the first iteration (None: C 5^-(p - 1), i.e. "
                                "C / 5 for the squared hinge and C for the hinge, measured "
                                "among fixed multiples of C; see the package docstring).")
    mu_rule: Literal["auto", "fixed", "active"] = Field(
        "auto",
        description="active: at iterations 10, 20, 40 and 80, lower mu to 1.5 C times the "
                    "share of ||X~||_F^2 in the rows where the loss is active (at least "
                    "0.01 C) when that is below mu / 1.5 (a refactorization each time); "
                    "fixed: mu0 throughout (with rho); auto: active for the exact variant on "
                    "the squared hinge (p = 2) when mu0 is not given, rho = 1 and residual "
                    "balancing is off, else fixed.")
    rho: float = Field(1.0, ge=1.0,
                       description="Growth factor: mu <- min(rho mu, mu_max) after every "
                                   "iteration (1: fixed mu, i.e. ADMM).")
    mu_max: float = Field(1e5, gt=0, description="Cap on mu (the paper's 1e5).")
    residual_balancing: bool = Field(
        False,
        description="Instead of the growth factor: mu <- mu * balance_factor when the primal "
                    "residual exceeds balance_ratio times the dual one, mu / balance_factor "
                    "in the opposite case (Boyd et al. 2011, section 3.4.1), within "
                    "[mu0 / 1e6, mu_max]; the growth factor is then not used.")
    balance_ratio: float = Field(10.0, gt=1.0, description="Residual balancing: the ratio "
                                 "that triggers a change of mu.")
    balance_factor: float = Field(2.0, gt=1.0, description="Residual balancing: the factor "
                                  "mu is multiplied or divided by.")
    relaxation: float | None = Field(
        None, gt=0, lt=2,
        description="Over-relaxation alpha: the multiplier step (9) and the (w, b)-step's "
                    "targets (14) use alpha e + (1 - alpha)(y - X~ beta_old) in place of the "
                    "e-step's e (1: the paper's step; None: the measured default of the "
                    "variant, see the package docstring).")
    cgls_tol: float = Field(
        1e-3, gt=0, lt=1,
        description="exact: CGLS relative tolerance ||r|| <= eps ||z|| of the (w, b)-step, "
                    "tightened to cgls_gap_factor x the current relative duality gap when "
                    "that is smaller (never below 1e-12).")
    cgls_gap_factor: float = Field(
        1.0, ge=0,
        description="exact: the CGLS tolerance follows this multiple of the relative gap "
                    "(0: cgls_tol throughout).")
    w_solver: Literal["auto", "cholesky", "cgls"] = Field(
        "auto",
        description="exact: how (14) is solved.  cholesky: a Cholesky factor of X~'X~ + D / mu "
                    "(the Gram matrix formed once; refactorized only when mu changes), two "
                    "sparse products per step; cgls: warm-started CGLS to the tolerance "
                    "below; auto: cholesky where the factorization and the Gram matrix are "
                    "cheap (config.ALM_AUTO_CHOLESKY_*), else cgls.")
    gap_every: int = Field(
        5, ge=1,
        description="Evaluate the dual point (one product X~'(alpha y) and, for the free bias, "
                    "the balancing sort) at the first and every gap_every-th iteration; the "
                    "relative gap of the other iterations is taken against the best dual value "
                    "so far (still an upper bound on the relative suboptimality).")
    max_cgls_iter: int = Field(1000, ge=1,
                               description="exact: CGLS iteration cap per (w, b)-step.")
    cold_start: Literal["zero", "one"] = Field(
        "zero", description="Starting point without a warm start: w = 0 (default) or the "
                            "paper's w = 1 (all ones); b = 0 and lambda = 0 either way.")
    stop_rule: Literal["gap", "paper"] = Field(
        "gap",
        description="gap: stop when the relative duality gap is at most tol; paper: stop when "
                    "||grad obj|| <= grad_tol ||grad obj(start)|| or the relative objective "
                    "change is below objective_change_tol (section 4).")
    tol: float = gap_tolerance_field(
        description="stop_rule='gap': stop once the certified relative duality gap (P - D)/P "
                    "is at most this (every solver's rule and default).")
    grad_tol: float = Field(0.01, gt=0, description="stop_rule='paper': the paper's epsilon.")
    objective_change_tol: float = Field(
        1e-4, gt=0, description="stop_rule='paper': relative change of the objective.")
    max_iter: int = Field(
        20000, ge=1,
        description="Outer iterations (one: an e-step, a (w, b)-step, a multiplier step); "
                    "the paper's limit is 100.")

    @property
    def loss_exponent(self) -> float:
        return canonical(self.loss, self.p)[1]

    @model_validator(mode="before")
    @classmethod
    def _p_follows_loss(cls, data: Any) -> Any:
        """hinge and squared_hinge fix p: set it, so that the parameters dumped (a stored
        job's) validate again (a default p = 2 beside loss hinge would not)."""
        if isinstance(data, dict) and "p" not in data:
            fixed = _fixed_exponent(data.get("loss"))
            if fixed is not None:
                data = {**data, "p": fixed}
        return data

    @model_validator(mode="after")
    def _p_matches_loss(self):
        fixed = _fixed_exponent(self.loss)
        if fixed is not None and "p" in self.model_fields_set and self.p != fixed:
            raise ValueError(f"loss {self.loss!r} is p = {fixed:g}; use loss='lp' for p = "
                             f"{self.p:g}")
        if self.mu0 is not None and self.mu0 > self.mu_max:
            raise ValueError("mu0 must not exceed mu_max")
        return self


def _fixed_exponent(loss) -> float | None:
    """The exponent a declared loss without one of its own has fixed (the hinge's 1, the
    squared hinge's 2: lp at the ends of its range); None for lp and for anything else."""
    cls = LOSS_TYPES.get(loss) if isinstance(loss, str) else None
    return None if cls is None or cls.has_exponent else cls.p
