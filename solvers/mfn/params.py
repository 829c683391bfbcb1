"""The parameters of ``mfn`` (the package docstring explains each departure from the paper)."""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from solvers.base import (
    REGRESSION_NEEDS_RESIDUAL_LOSS,
    SolverParams,
    Solves,
    gap_tolerance_field,
    residual_loss_refusal,
)
from solvers.losses import DEFAULT_EPSILON, LossFamily, get_loss
from solvers.problems.newton_rows import GRADIENT_BOUND, HOMOTOPY, ROW_SPACE, SLACKS

#: The losses mfn's engine runs on, by their declarations: the clipped family L'(xi) = kappa
#: clip(xi - xi_lo, 0, width) (the squared hinge; modified Huber, section 6) and a loss with a
#: clipped smoothing, reached by section 6's homotopy (the hinge).  A loss of the catalogue
#: that declares either is solved without an edit here.
MFN_LOSSES = LossFamily(
    "the clipped family (L'(xi) = kappa clip(xi - xi_lo, 0, width)) or a loss with a clipped "
    "smoothing", lambda loss: loss.clipped or loss.smoothing is not None,
    order=("squared_hinge", "modified_huber", "hinge"))

#: What mfn solves: the losses of its engine (:data:`MFN_LOSSES`), binary and one-vs-rest,
#: ordinal regression (section 7) on the squared hinge with its thresholds, and L2-loss
#: support vector regression (two squared-hinge terms per example; LIBLINEAR -s 11's problem).
MFN_SOLVES = (
    Solves.product(("binary", "ovr", "ovo"), MFN_LOSSES, ("regularized", "none"))
    | Solves.product(("ordinal",), ("squared_hinge",), ("regularized",))
    | Solves.product(("regression",), ("squared_epsilon_insensitive",), ("regularized", "none"))
).refusing("the thresholds of ordinal regression (section 7) are its bias: it needs the "
           "squared hinge loss and bias='regularized'", task="ordinal"
).refusing("the paper regularizes b like a weight (its b^2/2 term, LIBLINEAR's -B); a free "
           "bias would need the equality constraint its least-squares steps do not keep",
           bias="free"
).refusing("mfn's regression is the squared epsilon-insensitive loss, two squared-hinge terms "
           "per example (piecewise quadratic, Appendix A as it is); the L1 loss would need the "
           "hinge homotopy, whose smoothed terms overlap inside the tube: use dual_cd (Ho & "
           "Lin, LIBLINEAR -s 13) for epsilon_insensitive", task="regression",
           loss="epsilon_insensitive"
).refusing(REGRESSION_NEEDS_RESIDUAL_LOSS, task="regression"
).refusing(residual_loss_refusal("squared_epsilon_insensitive"),
           loss="squared_epsilon_insensitive")


class MFNParams(SolverParams):
    """Parameters of ``mfn``.  The defaults are the paper's (Appendix A) except for measured
    departures, each explained in the module docstring: ``linear_solver="auto"`` (step 3 by
    factorization when that is cheap, in the rows' space in tight rounds on text),
    ``preconditioning="auto"``, ``c_path_start`` (beta-seeding from a smaller C) and
    ``newton_forcing`` (inexact Newton steps in the loose rounds).  ``linear_solver="cgls",
    preconditioning=0, c_path_start=None, newton_forcing=None`` is Appendix A as written."""

    solves: ClassVar[Solves] = MFN_SOLVES
    tube_field: ClassVar[str | None] = "insensitivity"  # its epsilon is CGLS's tolerance
    renamed_fields: ClassVar[dict[str, str]] = {
        "initial_cgls_iterations": "initial_cgls_iter",  # alm's max_cgls_iter, max_iter
        "max_cgls_iterations": "max_cgls_iter",
        "dual_kkt_tolerance": "dual_kkt_tol",
    }

    solver: Literal["mfn"] = "mfn"
    multiclass: MFN_SOLVES.choices("multiclass") = MFN_SOLVES.multiclass_field()
    task: MFN_SOLVES.choices("task") = Field(
        "classification",
        description="classification (binary, one-vs-rest for more classes), ordinal "
                    "regression over the sorted labels (section 7; squared hinge only) or "
                    "regression: the labels as real values, L2-loss support vector "
                    "regression (squared_epsilon_insensitive; LIBLINEAR -s 11's problem).")
    loss: MFN_SOLVES.choices("loss") = "squared_hinge"
    bias: MFN_SOLVES.choices("bias") = "regularized"
    epsilon: float = Field(1e-6, gt=0, lt=1,
                           description="CGLS relative tolerance, rule (13), of the final round "
                                       "(task='regression': give it as cgls_epsilon; "
                                       "epsilon is then the tube's width, insensitivity).")
    insensitivity: float = Field(
        DEFAULT_EPSILON, ge=0,
        description="task='regression': the half width of the insensitive tube, "
                    "max(0, |y - f(x)| - eps)^2 (LIBLINEAR's -p, default 0.1).  With "
                    "task='regression', epsilon= given to mfn sets this (the name every "
                    "regression solver takes), and cgls_epsilon= sets the CGLS tolerance.")
    first_round_epsilon: float | None = Field(
        1e-2, gt=0, lt=1,
        description="Heuristic 2: tolerance of a first round from a crude start (None: off).")
    initial_cgls_iter: int | None = Field(
        10, ge=1,
        description="Heuristic 1: CGLS iteration cap of the first call after a crude start "
                    "(None: off).")
    newton_forcing: float | None = Field(
        0.5, gt=0, lt=1,
        description="Inexact Newton far from the solution: in the C path's stages and in "
                    "heuristic 2's first round after a crude start (for at most half of "
                    "itermax Newton iterations there), on fewer active rows than parameters, "
                    "CGLS also stops once ||r|| <= "
                    "newton_forcing ||r^0||, r^0 the gradient at the current point (a forcing "
                    "term; a round still ends only where rule (13) holds at its eps).  With "
                    "a gap tol, at the asked C, the cap of the gap-tied forcing instead (see "
                    "tol).  None: rule (13) alone, as in Appendix A.")
    max_cgls_iter: int = Field(5000, ge=1, description="cgitermax of every other call.")
    linear_solver: Literal["auto", "cgls", "cholesky", "dual_cg"] = Field(
        "auto",
        description="How step 3's least-squares problem is solved: 'cgls' is Appendix A "
                    "(CGLS from the current point); 'cholesky' factorizes the normal "
                    "equations of the active terms (Gram matrix kept up to date as terms "
                    "enter and leave) and lets CGLS check rule (13) from that solution; "
                    "'dual_cg' solves the same problem in the active rows' space, (A A' + "
                    "lambda I) u = b with beta = A'u, by CG with the row-Jacobi "
                    "preconditioner, from the same warm start and to the same rule (13) "
                    "(binary problems, 'residual' rule); 'auto' takes 'cholesky' when the "
                    "dense factorization and the Gram matrix cost fewer operations than a few "
                    "dozen passes over the data (few features), else at each Newton step "
                    "'dual_cg' when the active rows are fewer than the parameters and lambda "
                    "is small against their norms, 'cgls' otherwise.")
    cgls_rule: Literal["residual", "gradient_bound"] = Field(
        "residual",
        description="CGLS stopping rule: 'residual' is rule (13), ||r|| <= eps ||z||; "
                    "'gradient_bound' the rule (13) is derived from, ||r|| <= eps (||X|| ||z|| "
                    "+ lambda ||beta||) (section 4.3).")
    preconditioning: Annotated[float, Field(ge=0)] | Literal["auto"] = Field(
        "auto",
        description="alpha of CGLS's diagonal preconditioner M = lambda I + alpha diag(X_I'X_I) "
                    "(0: none, the paper's CGLS).  'auto': LIBLINEAR's alpha = 0.01, except "
                    "0 when the active least-squares rows are fewer than the parameters and "
                    "their norms vary (coefficient of variation of c_i ||x~_i||^2 above 0.5), "
                    "or when CGLS only checks a factorized step.")
    max_iter: int = Field(50, ge=1,
                          description="itermax: Newton iterations per run of Appendix A (one "
                                      "iteration: a least-squares solve and a line search).")
    c_path_start: float | None = Field(
        10.0, gt=0,
        description="When step 3 runs CGLS, cold starts at a large C go through a C path "
                    "(beta-seeding, section 4.1): C / 10^J, ..., C / 10 at the first-round "
                    "eps, then C, with J the largest integer such that C / 10^J >= "
                    "c_path_start / mean_i c_i ||x~_i||^2 (None: Appendix A from zero at "
                    "every C).  The factorized step 3 always starts at C.")
    tol: float | None = gap_tolerance_field(
        description="Stop once the certified relative duality gap (P - D)/P is at most this "
                    "(the rule, and the default, of every solver).  Squared hinge and "
                    "modified Huber: the first Newton iterate at the asked C within it ends "
                    "the run; each Newton step's CGLS also stops once ||r|| <= eta ||r^0||, "
                    "eta = min(newton_forcing, 0.5 sqrt(tol / gap)) at the current point's "
                    "certified gap (the step then aims the next gap at tol / 4), and the "
                    "last round runs rule (13) at eps = min(1e-4, tol / 10), or epsilon if "
                    "larger (once more at epsilon should it end above the gap); None: "
                    "Appendix A's finite termination alone, the exact optimum.  Hinge: the "
                    "tau = 2^-j homotopy stops once the hinge duality gap is within it "
                    "(None is refused: the homotopy has no other end).")
    set_tol: float = Field(
        1e-8, ge=0,
        description="Step 5's tolerance on t_i y_i around the set boundaries (capped at 1% of "
                    "the quadratic band's width: modified Huber's 2, the hinge homotopy's "
                    "2 tau).")
    dual_kkt_tol: float | None = Field(
        None, gt=0,
        description="Section 4.7: continue with smaller eps until the maximum dual KKT "
                    "violation is at most this (None: no such requirement; squared hinge).  "
                    "A stopping rule of its own: given, it replaces tol's (tol is then None "
                    "unless given too, which is refused).")
    hinge_max_rounds: int = Field(30, ge=1, description="hinge only: largest j in tau = 2^-j.")

    @model_validator(mode="before")
    @classmethod
    def _one_stopping_rule(cls, data):
        """dual_kkt_tol replaces the gap rule unless tol is given too."""
        data = cls._with_current_names(data)  # this runs before the base model's validators
        data = cls._regression_names(data)
        if isinstance(data, dict) and data.get("dual_kkt_tol") is not None \
                and "tol" not in data:
            data = {**data, "tol": None}
        return data

    @staticmethod
    def _regression_names(data):
        """With task='regression', ``epsilon`` is the tube's width (``insensitivity``, the
        name dual_cd and LIBLINEAR's -p use) and ``cgls_epsilon`` the CGLS tolerance: mfn's
        own ``epsilon`` was its CGLS tolerance first.  (Parameters written by
        ``model_dump``, which name ``insensitivity``, pass unchanged.)"""
        if not isinstance(data, dict) or data.get("task") != "regression" \
                or "insensitivity" in data:
            return data
        data = dict(data)
        if "epsilon" in data:
            data["insensitivity"] = data.pop("epsilon")
        if "cgls_epsilon" in data:
            data["epsilon"] = data.pop("cgls_epsilon")
        return data

    @property
    def loss_epsilon(self) -> float:
        return self.insensitivity

    @model_validator(mode="after")
    def _ordinal_problem(self):
        if self.task == "ordinal":
            if self.linear_solver == "dual_cg":
                raise ValueError("linear_solver='dual_cg' solves one least-squares row per "
                                 "term; ordinal regression's pairs need 'cgls' or 'auto'")
        if self.linear_solver == "dual_cg" and self.cgls_rule != "residual":
            raise ValueError("linear_solver='dual_cg' stops on rule (13) only: "
                             "cgls_rule='residual'")
        engine_loss = get_loss(self.loss)
        engine_loss = getattr(engine_loss, "margin_loss", engine_loss)  # regression's terms
        if self.tol is None and not engine_loss.clipped:
            raise ValueError(f"the {self.loss} homotopy stops on its certified gap: tol must "
                             f"be a number")
        if self.tol is not None and self.dual_kkt_tol is not None:
            raise ValueError("tol and dual_kkt_tol are two stopping rules: give one "
                             "(tol=None with dual_kkt_tol)")
        if self.dual_kkt_tol is not None and (self.task == "regression"
                                              or not dual_kkt_applies(engine_loss)):
            raise ValueError("dual_kkt_tol (section 4.7) is for the squared hinge loss "
                             "(a clipped loss whose multipliers have no upper bound)")
        return self

    def rows_refusal(self, loss, capabilities: frozenset) -> str | None:
        """Why mfn does not run these parameters over rows that offer only ``capabilities``
        (:mod:`solvers.problems.newton_rows`: a distributed dataset's partitions offer none of
        the extras), or None."""
        where = "mfn on distributed data" if not capabilities else "mfn on these rows"
        if not loss.clipped and HOMOTOPY not in capabilities:
            return (f"{where}: the {loss.name} loss's homotopy (section 6) is not "
                    f"distributed; use cutting_plane (ocas) for the hinge")
        if self.linear_solver == "dual_cg" and ROW_SPACE not in capabilities:
            return (f"{where}: linear_solver='dual_cg' (CG in the active rows' space) is not "
                    f"distributed; use 'cgls', 'cholesky' or 'auto'")
        if self.cgls_rule != "residual" and GRADIENT_BOUND not in capabilities:
            return (f"{where}: cgls_rule='gradient_bound' is not distributed; use "
                    f"'residual' (rule (13))")
        if self.dual_kkt_tol is not None and SLACKS not in capabilities:
            return f"{where}: dual_kkt_tol is not distributed"
        return None


def dual_kkt_applies(loss) -> bool:
    """Whether section 4.7's dual KKT check is defined for ``loss``: a clipped loss without an
    upper bound on its multipliers (width = inf: the squared hinge, whose dual the paper's
    check is written for, with kappa and xi_lo as the loss has them)."""
    return loss.clipped and math.isinf(loss.width)
