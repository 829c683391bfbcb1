"""The parameters of ``dual_cd`` (the package docstring maps them to the paper and LIBLINEAR)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from solvers.base import (
    REGRESSION_NEEDS_RESIDUAL_LOSS,
    SolverParams,
    Solves,
    gap_tolerance_field,
    residual_loss_refusal,
)
from solvers.losses import DEFAULT_EPSILON

#: What dual_cd solves: the hinge (L1-SVM) and squared hinge (L2-SVM) losses and the logistic
#: loss (Yu, Huang & Lin's dual, LIBLINEAR -s 7), binary and one-vs-rest, with a regularized
#: bias (LIBLINEAR's -B) or none; support vector regression with the epsilon-insensitive loss
#: and its square (Ho & Lin 2012, LIBLINEAR -s 13 / -s 12).
DUAL_CD_SOLVES = (
    Solves.product(("binary", "ovr", "ovo"), ("hinge", "squared_hinge", "logistic"),
                   ("regularized", "none"))
    | Solves.product(("crammer_singer",), ("hinge",), ("regularized", "none"))
    | Solves.product(("regression",), ("squared_epsilon_insensitive", "epsilon_insensitive"),
                     ("regularized", "none"))
).refusing("a free (unregularized) bias adds the equality constraint sum_i y_i alpha_i = 0 "
           "to the dual, which a one-variable coordinate step cannot keep (it needs pairs, as "
           "SMO); use 'regularized' (a constant feature, LIBLINEAR's -B) or 'none'",
           bias="free"
).refusing(REGRESSION_NEEDS_RESIDUAL_LOSS, task="regression"
).refusing(residual_loss_refusal("epsilon_insensitive"), loss="epsilon_insensitive"
).refusing(residual_loss_refusal("squared_epsilon_insensitive"),
           loss="squared_epsilon_insensitive"
).refusing("the sequential dual method of Keerthi et al. (KDD 2008, LIBLINEAR -s 4) solves "
           "the Crammer-Singer problem with its hinge loss only", task="crammer_singer",
           loss="squared_hinge"
).refusing("the sequential dual method of Keerthi et al. (KDD 2008, LIBLINEAR -s 4) solves "
           "the Crammer-Singer problem with its hinge loss only", task="crammer_singer",
           loss="logistic")


class DualCDParams(SolverParams):
    """Parameters of ``dual_cd``: Hsieh et al.'s dual coordinate descent (ICML 2008,
    Algorithms 1 and 3; LIBLINEAR ``-s 3`` for the hinge, ``-s 1`` for the squared hinge) and
    Yu, Huang & Lin's for the logistic loss (MLJ 2011, Algorithm 5; LIBLINEAR ``-s 7``)."""

    solves: ClassVar[Solves] = DUAL_CD_SOLVES
    relative_fields: ClassVar[tuple[str, ...]] = ("tol",)  # its epsilon is the tube's width
    tube_field: ClassVar[str | None] = "epsilon"

    solver: Literal["dual_cd"] = "dual_cd"
    task: DUAL_CD_SOLVES.choices("task") = Field(
        "classification",
        description="classification (binary, one-vs-rest or Crammer-Singer for more "
                    "classes) or regression: the labels as real values, support vector "
                    "regression by Ho & Lin's dual coordinate descent (LIBLINEAR -s 12 / "
                    "-s 13).")
    loss: DUAL_CD_SOLVES.choices("loss") = Field(
        "squared_hinge",
        description="squared_hinge: L2-SVM, U = inf, D_ii = 1/(2 C_i) (LIBLINEAR -s 1); "
                    "hinge: L1-SVM, U = C_i, D_ii = 0 (LIBLINEAR -s 3); logistic: logistic "
                    "regression by its entropy dual, 0 < alpha_i < C_i, each coordinate by "
                    "a modified Newton method (LIBLINEAR -s 7).  task='regression': "
                    "squared_epsilon_insensitive (the default there; L2-loss SVR, U = inf, "
                    "lambda_i = 1/(2 C_i), -s 12) or epsilon_insensitive (L1-loss SVR, "
                    "U = C_i, -s 13).")
    epsilon: float = Field(
        DEFAULT_EPSILON, ge=0,
        description="task='regression': the half width of the insensitive tube, "
                    "max(0, |y - f(x)| - epsilon) (LIBLINEAR's -p, default 0.1).")
    bias: DUAL_CD_SOLVES.choices("bias") = DUAL_CD_SOLVES.bias_field(
        "regularized", "regularized: a constant feature of value bias_scale (LIBLINEAR's -B); "
                       "none: no bias.")
    multiclass: DUAL_CD_SOLVES.choices("multiclass") = DUAL_CD_SOLVES.multiclass_field(
        crammer_singer="the Crammer-Singer problem by the sequential dual method of Keerthi et "
                       "al. (KDD 2008; LIBLINEAR -s 4; hinge only)")
    tol: float = gap_tolerance_field(
        description="stop_rule='gap': stop once the certified relative duality gap (P(w) - "
                    "D(alpha))/P(w) at the iterate (w = sum_i alpha_i y_i x~_i) is at most "
                    "this -- every solver's rule and default.")
    stop_rule: Literal["gap", "projected_gradient"] = Field(
        "gap",
        description="gap: stop on tol (checked between outer iterations, see "
                    "gap_check_work); projected_gradient: LIBLINEAR's rule, stop once the "
                    "projected gradient's spread M-bar - m-bar over all examples is at most "
                    "eps (absolute, not certified).")
    eps: float = Field(
        0.1, gt=0,
        description="The projected-gradient spread at which the shrunk problem counts as "
                    "solved (Algorithm 3: then the full set is checked once more) and, with "
                    "stop_rule='projected_gradient', the stop (LIBLINEAR's -e, default 0.1).  "
                    "With stop_rule='gap' it is the first threshold only: divided by 10 each "
                    "time the full set meets it while the gap is above tol.")
    max_iter: int = Field(
        1000, ge=1,
        description="Outer iterations (one: a random permutation of the active examples and "
                    "one coordinate step on each; LIBLINEAR's max_iter, 1000; its -s 7 stops "
                    "at 300, with a warning).")
    newton_switch_iter: int | None = Field(
        300, ge=1,
        description="Squared hinge and logistic: once this many outer iterations have run "
                    "without the stop (tol, or LIBLINEAR's rule), w goes to a primal Newton "
                    "method (the registered solver's: mfn's for the squared hinge, warm "
                    "started from w (ini = 1), newton's for the logistic loss; dual_cd.solve "
                    "given no Newton method does not switch), which ends the run once its "
                    "certified gap is within tol -- LIBLINEAR's train_one, which hands -s 1's "
                    "w to its Newton method (-s 2), and -s 7's to -s 0, after "
                    "dual_solver_max_iter = 300 iterations.  "
                    "A max_iter at or below it ends the run first (no switch); None: never; "
                    "the hinge never switches (LIBLINEAR only warns for -s 3).")
    face_newton: bool = Field(
        True,
        description="task='regression' with the epsilon_insensitive loss (stop_rule='gap'): "
                    "from newton_switch_iter outer iterations on (None: never), after each "
                    "stretch of coordinate descent between gap checks, "
                    "projected Newton steps on the dual's face (the free b_i and the "
                    "violators with their signs; the objective is quadratic there) while "
                    "they pay (at most 50), which end the slow approach of coordinate "
                    "descent at large C on few features (solvers.dual_cd.regression."
                    "face_newton_step); False: Ho & Lin's coordinate descent alone, as "
                    "LIBLINEAR -s 13.")
    shrinking: bool = Field(
        True, description="Algorithm 3's shrinking (False: Algorithm 1, every example every "
                          "pass); for crammer_singer, LIBLINEAR -s 4's shrinking of classes "
                          "and examples.  The logistic loss has none (no alpha_i reaches a "
                          "bound; LIBLINEAR -s 7 has none either).")
    gap_check_work: float = Field(
        2.0, gt=0,
        description="stop_rule='gap': the duality gap (a pass over the data for P(w), and "
                    "the dual terms) is checked once the descent since the last check has run "
                    "this many times as long as that check took (the first after one pass's "
                    "worth of steps), so checks take at most about 1 / (1 + this) of the run: "
                    "every outer iteration while every example is active, every few once "
                    "shrinking has made the passes cheap.  Measured 2026-11-26 (a9a hinge "
                    "C = 1, w8a squared hinge C = 1, to tol 1e-6): checks after a fixed work "
                    "of one pass took 30-45% of the run, as each costs more than a pass over "
                    "a shrunk active set.")
    gap_check_clock: Literal["time", "work"] = Field(
        "time",
        description="What spaces the gap checks: time (gap_check_work times as long as the "
                    "last check took, measured: the fastest, but where the run stops depends "
                    "on the machine's load) or work (gap_check_work passes' worth of stored "
                    "entries, nnz + n, of descent between checks: the run, and the point it "
                    "returns, are a function of the data and the parameters alone; auto "
                    "races dual_cd this way, solvers.auto.Candidate.fixed).")
    permutation_seed: int = Field(0, ge=0, description="Seed of the random permutations.")
    local_epochs: int = Field(
        1, ge=1,
        description="Distributed data only (CoCoA+, solvers.dual_cd.cocoa): the passes of "
                    "coordinate steps each partition makes over its rows on its local "
                    "subproblem between two rounds (each round moves one d-vector to every "
                    "partition and one back).")
    cocoa_sigma: float | None = Field(
        None, ge=1,
        description="Distributed data only: sigma', the scale of the quadratic term of "
                    "each partition's CoCoA+ subproblem; None: the number of partitions with "
                    "rows (Ma et al.'s safe choice for adding the partitions' steps, "
                    "gamma = 1).  Below it the partitions' steps may overshoot together; the "
                    "driver's exact line search on the dual over their sum (a step in "
                    "[0, 1], from scalars the round brings back) keeps every round a descent "
                    "of the dual either way.")

    @classmethod
    def shown(cls, params: dict[str, Any]) -> dict[str, Any]:
        """:meth:`SolverParams.shown`, without CoCoA+'s fields at their defaults: they act on
        distributed data only, which these parameters do not tell apart (a value the user
        set is shown)."""
        shown = super().shown(params)
        for name in ("local_epochs", "cocoa_sigma"):
            if name in shown and shown[name] == cls.model_fields[name].default:
                del shown[name]
        return shown

    @property
    def loss_epsilon(self) -> float:
        return self.epsilon
