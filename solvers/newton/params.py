"""The parameters of ``newton`` (the package docstring maps them to LIBLINEAR's)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from solvers.base import SolverParams, Solves, gap_tolerance_field

#: What newton solves: the twice-differentiable logistic loss (LIBLINEAR -s 0) and the squared
#: hinge with its generalized Hessian (-s 2), binary and one-vs-rest; every bias mode for the
#: logistic loss (its Hessian is positive definite in the bias too: every example has
#: curvature), a regularized bias or none for the squared hinge.
NEWTON_SOLVES = (
    Solves.product(("binary", "ovr", "ovo"), ("logistic",), ("regularized", "none", "free"))
    | Solves.product(("binary", "ovr", "ovo"), ("squared_hinge",), ("regularized", "none"))
).refusing("with a free bias the squared hinge's generalized Hessian is singular in b once no "
           "example is inside the margin; use 'regularized' (LIBLINEAR's -B) or 'none'",
           loss="squared_hinge", bias="free")


class NewtonParams(SolverParams):
    """Parameters of ``newton``: LIBLINEAR's truncated Newton method (``newton.cpp``, ``-s 0``
    and ``-s 2``), stopped on the certified gap."""

    solves: ClassVar[Solves] = NEWTON_SOLVES

    solver: Literal["newton"] = "newton"
    loss: NEWTON_SOLVES.choices("loss") = Field(
        "logistic",
        description="logistic: logistic regression, D_ii = C_i sigma(m_i) sigma(-m_i) "
                    "(LIBLINEAR -s 0); squared_hinge: the L2-SVM with the generalized Hessian "
                    "D_ii = 2 C_i inside the margin (LIBLINEAR -s 2).")
    bias: NEWTON_SOLVES.choices("bias") = NEWTON_SOLVES.bias_field(
        "regularized", "regularized: a constant feature of value bias_scale (LIBLINEAR's -B); "
                       "none: no bias; free (logistic): an unregularized intercept "
                       "(LIBLINEAR's -R).")
    multiclass: NEWTON_SOLVES.choices("multiclass") = NEWTON_SOLVES.multiclass_field()
    tol: float = gap_tolerance_field(
        description="stop_rule='gap': stop once the certified relative duality gap (P(w) - "
                    "D(alpha))/P(w), alpha_i = C_i L'(xi_i) at the iterate (in (0, C_i) for "
                    "the logistic loss), is at most this -- every solver's rule and default.")
    stop_rule: Literal["gap", "gradient"] = Field(
        "gap",
        description="gap: stop on tol (checked at every Newton iterate, from the pass its "
                    "gradient makes anyway); gradient: LIBLINEAR's rule, ||g(w)|| <= eps "
                    "max(min(#pos, #neg), 1) / n ||g(0)|| (not certified).")
    eps: float = Field(
        0.01, gt=0,
        description="stop_rule='gradient': LIBLINEAR's -e (0.01 for -s 0 and -s 2).")
    max_iter: int = Field(1000, ge=1,
                          description="Newton iterations (one: a PCG solve and a line search; "
                                      "LIBLINEAR's 1000).")
    cg_tol: float | None = Field(
        None, gt=0, lt=1,
        description="eps_cg of the CG's stopping rule: the step stops once k (q_k - q_{k-1}) "
                    ">= min(cg_tol, sqrt(||g||_M^-1)) q_k (Nash & Sofer's rule on the "
                    "quadratic model q).  None: LIBLINEAR's 0.1, or 0.5 from a warm start.")
    preconditioning: float = Field(
        0.01, ge=0, le=1,
        description="alpha of the diagonal preconditioner M = (1 - alpha) I + alpha diag(H) "
                    "(Hsia, Chiang & Lin 2018; LIBLINEAR's 0.01; 0: plain CG).")
    max_cg_iter: int | None = Field(
        None, ge=1,
        description="CG iterations per Newton step (None: max(n_features + 1, 5), "
                    "LIBLINEAR's).")
