"""The parameters of ``smo`` (LIBSVM's five svm_types; the package docstring states the problems
and the mapping)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from solvers import config
from solvers.base import SolverParams, Solves, gap_tolerance_field
from solvers.core.kernels import Kernel
from solvers.problems.libsvm import SVM_TYPE_TASKS, SVM_TYPES
from solvers.smo.polish import POLISHED_TYPES

#: C-SVC and nu-SVC: the hinge loss with a free bias (the equality constraint y'alpha = 0 of
#: the dual is the free bias), binary, one-vs-one (LIBSVM's multi-class) and one-vs-rest;
#: one-class (Schölkopf et al.: the hinge of rho - w.phi(x), the offset rho free); epsilon-
#: and nu-SVR (the epsilon-insensitive loss, free bias).  ``svm_type`` says which.
SMO_SOLVES = (
    Solves.product(("binary", "ovo", "ovr"), ("hinge",), ("free",))
    | Solves.product(("one_class",), ("hinge",), ("free",))
    | Solves.product(("regression",), ("epsilon_insensitive",), ("free",))
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
    "SMO solves LIBSVM's problems (classification, one-class, regression); ordinal "
    "regression is mfn's", task="ordinal")

SMOKernelName = Literal["linear", "rbf", "polynomial", "sigmoid"]
SVMType = Literal[SVM_TYPES]  # type: ignore[valid-type]
#: the loss of each svm_type in the loss catalogue (the declaration's)
SVM_TYPE_LOSSES = {"c_svc": "hinge", "nu_svc": "hinge", "one_class": "hinge",
                   "epsilon_svr": "epsilon_insensitive", "nu_svr": "epsilon_insensitive"}
#: the svm_type a task given without one means (LIBSVM's -s 3 for regression, as
#: scikit-learn's SVR)
TASK_SVM_TYPES = {"regression": "epsilon_svr", "one_class": "one_class"}


class SMOParams(SolverParams):
    """Parameters of ``smo``: LIBSVM's svm_types with its kernels and stopping rule.

    ``svm_type`` poses the task, and the task is derived from it (the design chosen: one
    switch, LIBSVM's -s, says the problem): c_svc and nu_svc classify (``task``
    "classification", binary or multi-class by the labels), one_class poses ``task``
    "one_class", epsilon_svr and nu_svr pose "regression".  ``task`` may be given as well:
    it must agree with svm_type (a contradiction is refused, naming both), and a task given
    alone chooses LIBSVM's svm_type for it (regression: epsilon_svr, as scikit-learn's SVR;
    one_class: one_class).  The loss follows likewise (the hinge for the classifiers and
    one-class, epsilon_insensitive for the regressions).  ``nu`` (-n) is read by nu_svc,
    one_class and nu_svr, ``epsilon`` (-p) by epsilon_svr, ``C`` by every type but nu_svc
    and one_class (whose bounds are 1 in LIBSVM's scaling)."""

    solves: ClassVar[Solves] = SMO_SOLVES
    own_kernel: ClassVar[bool] = True
    #: ``epsilon`` is epsilon-SVR's tube, not a tolerance
    relative_fields: ClassVar[tuple[str, ...]] = ("tol",)
    tube_field: ClassVar[str | None] = "epsilon"

    solver: Literal["smo"] = "smo"
    svm_type: SVMType = Field(
        "c_svc", description="LIBSVM's -s: c_svc (0, C-SVC), nu_svc (1, nu-SVC, Chang & Lin "
                             "2001), one_class (2, Schölkopf et al. 2001), epsilon_svr (3), "
                             "nu_svr (4, Chang & Lin 2002).  It poses the task: one_class "
                             "task='one_class', the SVRs task='regression'.")
    task: SMO_SOLVES.choices("task") = Field(
        "classification", description="Derived from svm_type (classification for c_svc and "
                                      "nu_svc, one_class, regression for the SVRs); given, "
                                      "it must agree, and alone it picks the svm_type "
                                      "(regression: epsilon_svr).")
    nu: float = Field(0.5, gt=0, le=1,
                      description="LIBSVM's -n: nu of nu_svc, one_class and nu_svr, in (0, 1] "
                                  "(an upper bound on the fraction of margin errors and a "
                                  "lower bound on the fraction of support vectors).")
    epsilon: float = Field(0.1, ge=0,
                           description="LIBSVM's -p: the half width of epsilon_svr's "
                                       "insensitive tube.")
    loss: SMO_SOLVES.choices("loss") = Field(
        "hinge", description="Derived from svm_type: the hinge (c_svc, nu_svc, one_class), "
                             "epsilon_insensitive (epsilon_svr, nu_svr).")
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
    working_set: int | Literal["auto", "pair"] = Field(
        "auto", description="pair: LIBSVM's two-variable working sets; a number q >= 16: "
                            "ThunderSVM's working sets of q variables (q/2 new a step, their "
                            "kernel rows computed together on every core, an inner SMO over "
                            "them; C-SVC only, shrinking does not apply; at most the cache's "
                            "rows); auto: q = 512 for a C-SVC of 10,000 rows or more, pairs "
                            "otherwise.  Every choice stops by the same rule on the whole "
                            "gradient.")
    stop_rule: Literal["gap", "kkt"] = Field(
        "gap", description="gap: stop once the certified relative duality gap is at most "
                           "tol (the project's rule; checked at every report from the "
                           "maintained gradient, and by tightening the KKT tolerance tenfold "
                           "each time it is met first); kkt: LIBSVM's rule, the maximal "
                           "violating pair m(alpha) - M(alpha) <= kkt_tol.")
    polish: bool | Literal["auto"] = Field(
        "auto", description="Active-set Newton polishing (C-SVC): after a KKT stage the free "
                            "variables' optimality conditions are solved exactly (a dense "
                            "factorization of their kernel block, at most 5,000 of them, "
                            "bounded variables that violate theirs taken in) and the point "
                            "certified or SMO resumed from it; auto: c_svc under the gap "
                            "rule, and under stop_rule='kkt' from 10,000 rows; the other "
                            "svm_types keep SMO's tail (True is refused for them).")
    tol: float = gap_tolerance_field()
    kkt_tol: float = Field(1e-3, gt=0,
                           description="LIBSVM's -e: the maximal violating pair's "
                                       "m(alpha) - M(alpha) at which stop_rule='kkt' stops "
                                       "(stop_rule='gap' starts at the larger of it "
                                       "and tol, and at 1e-2 where C-SVC polishes).")
    max_iter: int = Field(10_000_000, ge=1, description="SMO iterations (two-variable "
                                                        "updates) per binary problem.")

    @model_validator(mode="before")
    @classmethod
    def _poly_alias(cls, data: Any) -> Any:
        """LIBSVM and scikit-learn call the polynomial kernel 'poly'."""
        if isinstance(data, dict) and data.get("kernel") == "poly":
            data = {**data, "kernel": "polynomial"}
        return cls._svm_type_poses(data)

    @staticmethod
    def _svm_type_poses(data: Any) -> Any:
        """The task and the loss from svm_type (or svm_type from a task given alone); a task
        that contradicts svm_type is refused naming both."""
        if not isinstance(data, dict):
            return data
        svm_type = data.get("svm_type")
        task = data.get("task")
        if svm_type is None and task in TASK_SVM_TYPES:
            svm_type = TASK_SVM_TYPES[task]
        if svm_type is None:
            svm_type = "c_svc"
        if svm_type not in SVM_TYPES:
            return data  # the field's own check says what is wrong
        posed = SVM_TYPE_TASKS[svm_type] or "classification"
        if task is not None and task != posed:
            raise ValueError(f"svm_type={svm_type!r} poses task={posed!r}, not "
                             f"task={task!r} (leave task out: svm_type says it)")
        # a loss given stays: the declaration refuses a loss the task does not pose, with
        # its reason (the squared hinge, the hinge for a regression, ...)
        loss = data.get("loss", SVM_TYPE_LOSSES[svm_type])
        if svm_type == "nu_svc" and data.get("multiclass") == "ovr":
            raise ValueError("nu_svc is one-vs-one for more than two classes (LIBSVM's): "
                             "multiclass='ovr' would pose a nu constraint per class against "
                             "the rest; leave multiclass as 'ovo'")
        return {**data, "svm_type": svm_type, "task": posed, "loss": loss}

    @model_validator(mode="after")
    def _exact_kernel(self):
        if self.approximation != "none":
            raise ValueError("smo solves the exact kernel problem; approximation='nystrom' "
                             "or 'icf' trains a linear solver on a low-rank factor (mfn, "
                             "alm, cutting_plane, interior_point, dual_cd)")
        return self

    @model_validator(mode="after")
    def _working_set_applies(self):
        """A working set of many variables is C-SVC's (the nu-formulations pick pairs of one
        sign) and at least 16 variables."""
        size = self.working_set
        if isinstance(size, int):
            if size < 16:
                raise ValueError(f"working_set={size}: a set of many variables has at least "
                                 "16 (working_set='pair' is LIBSVM's two)")
            if self.svm_type != "c_svc":
                raise ValueError(f"working_set={size} is C-SVC's; svm_type="
                                 f"{self.svm_type!r} uses LIBSVM's pairs (working_set='pair' "
                                 "or 'auto')")
        return self

    @model_validator(mode="after")
    def _polish_applies(self):
        """Polishing is C-SVC's (solvers/smo/polish.py says why the others are not)."""
        if self.polish is True and self.svm_type not in POLISHED_TYPES:
            raise ValueError(f"polish=True is C-SVC's; svm_type={self.svm_type!r} keeps "
                             "SMO's tail (its second equality constraint, or the two "
                             "variables of a row, are not in the polishing's system): leave "
                             "polish as 'auto' or False")
        return self

    @property
    def loss_epsilon(self) -> float:
        """epsilon-SVR's tube (LIBSVM's -p)."""
        return self.epsilon

    @model_validator(mode="after")
    def _svm_type_applies(self):
        """What a one-class or regression model has not: class probabilities, class weights;
        and no kernel model takes a scaler (it predicts on raw inputs: scale the data first;
        the linear kernel's C-SVC is a linear model, which folds one in)."""
        what = {"one_class": "a one-class model", "regression": "a regression model"}.get(
            self.task)
        if what is not None and self.probability:
            raise ValueError(f"probability=True calibrates class probabilities; {what} has "
                             "no classes (its decision_function is the score)")
        if self.task == "one_class" and self.class_weight is not None:
            raise ValueError("class_weight weighs classes; a one-class fit reads no labels "
                             "(give per-example weights, sample_weight, instead)")
        if self.scale != "none" and (self.kernel != "linear" or what is not None):
            raise ValueError(f"scale={self.scale!r}: smo's kernel models predict on raw "
                             "inputs and a scaler cannot be folded into a kernel; scale the "
                             "data before training (only the linear kernel's classifiers, "
                             "linear models, take a scaler)")
        return self

    @classmethod
    def shown(cls, params: dict[str, Any]) -> dict[str, Any]:
        """:meth:`SolverParams.shown`, and of ``nu`` and ``epsilon`` only what the svm_type
        reads: nu for nu_svc, one_class and nu_svr, the tube for epsilon_svr alone (nu_svr
        finds its own)."""
        shown = super().shown(params)
        svm_type = params.get("svm_type")
        if svm_type not in ("nu_svc", "one_class", "nu_svr"):
            shown.pop("nu", None)
        if svm_type != "epsilon_svr":
            shown.pop("epsilon", None)
        return shown

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
        it poses the linear problem the other families solve), and for the svm_types other
        than C-SVC the type and nu.  C stays (nu-SVC and one-class do not read it) and so does
        the residual loss's epsilon (nu-SVR finds its tube), as every solver's fields have
        them (:meth:`SolverParams.posing` reads them back)."""
        fields = super().problem_fields()
        if self.svm_type != "c_svc":
            fields["svm_type"] = self.svm_type
            if self.svm_type in ("nu_svc", "one_class", "nu_svr"):
                fields["nu"] = float(self.nu)
        if self.kernel != "linear":
            fields["kernel"] = self.kernel
            fields["gamma"] = self.gamma if isinstance(self.gamma, str) else float(self.gamma)
            if self.kernel in ("polynomial", "sigmoid"):
                fields["coef0"] = float(self.coef0)
            if self.kernel == "polynomial":
                fields["degree"] = self.degree
        return fields
