"""Runners: our registered solvers and the anchors users would pick instead.

Every runner turns a :class:`~bench.problems.BenchProblem` into a :class:`Run`: an
objective-versus-time trace, the total time, the final objective and the test accuracy.

* Our solvers trace through the monitor: each iteration record carries the seconds since the
  solver started and the primal objective, so one run gives the whole curve.
* The anchors (LIBLINEAR through liblinear-official and its multi-core build in its own
  environment, :mod:`bench.liblinear_multicore`; scikit-learn) are black boxes: a trace
  point is a separate run at a tolerance from a loose-to-tight schedule, timed from scratch;
  its objective is evaluated afterwards (not timed) by :class:`solvers.BinaryProblem`.
  Data conversion to LIBLINEAR's structures happens once, outside the timing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

import solvers
from bench.problems import BenchProblem
from solvers.losses import loss_type
from solvers.monitor import ListMonitor
from solvers.problems import BinaryProblem

LIBLINEAR_EPS_SCHEDULE = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
SKLEARN_TOL_SCHEDULE = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8)


@dataclass
class Run:
    runner: str
    trace: list[tuple[float, float]]  # (seconds, primal objective)
    seconds: float
    objective: float
    accuracy: float | None
    note: str = ""
    extras: dict = field(default_factory=dict)


def _accuracy(predict, test: solvers.Dataset | None) -> float | None:
    if test is None:
        return None
    return float(np.mean(predict(test.X) == test.y))


class ProjectSolver:
    """One of the library's registered solvers, run through :func:`solvers.train`."""

    anchor = False

    def __init__(self, solver: str, **params):
        self.solver = solver
        self.params = params
        suffix = ",".join(f"{k}={v}" for k, v in params.items())
        self.name = f"{solver}({suffix})" if suffix else solver

    def supports(self, problem: BenchProblem) -> bool:
        spec = solvers.get_solver(self.solver)
        return problem.loss in spec.losses and problem.bias in spec.bias_modes

    def train(self, problem: BenchProblem, monitor: ListMonitor, **settings):
        """(result, seconds) of one timed ``solvers.train`` on the problem."""
        start = time.perf_counter()
        result = solvers.train(problem.train_dataset(), solver=self.solver, C=problem.C,
                               loss=problem.loss, bias=problem.bias,
                               bias_scale=problem.bias_scale, monitor=monitor,
                               **self.params, **settings)
        return result, time.perf_counter() - start

    def run(self, problem: BenchProblem) -> Run:
        result, seconds = self.train(problem, ListMonitor())
        trace = [(r.elapsed, r.objective) for r in result.log]
        return Run(self.name, trace, seconds, result.objective,
                   _accuracy(result.model.predict, problem.test_dataset()), result.status,
                   {"iterations": result.iterations})


class ProjectSolverSchedule(ProjectSolver):
    """One of our solvers stopped at each gap tolerance of ``tol_schedule``, each run timed
    from scratch as the anchors' schedules are: for ``auto``, whose candidates (and their
    race) depend on ``tol``, one traced run at a tight tolerance is not what a user asking for
    a loose one gets.  A run still going after ``time_limit`` seconds is stopped and its point
    kept, like any anchor's: the harness counts it at the gaps its objective is within.
    ``extras`` keeps, per tolerance, what ``auto`` chose (the winner, the strategy and every
    candidate's seconds)."""

    def __init__(self, solver: str, tol_schedule=(1e-2, 1e-3, 1e-6), time_limit: float = 60.0,
                 **params):
        super().__init__(solver, **params)
        self.tol_schedule = tol_schedule
        self.time_limit = time_limit

    def run(self, problem: BenchProblem) -> Run:
        trace, choices, result = [], {}, None
        for tol in self.tol_schedule:
            result, seconds = self.train(problem, ListMonitor(time_limit=self.time_limit),
                                         tol=tol)
            trace.append((seconds, result.objective))
            if result.choice is not None:
                choices[f"{tol:g}"] = {
                    "winner": result.choice.candidate, "strategy": result.choice.strategy,
                    "status": str(result.status),
                    "runs": {r["candidate"]: round(r["seconds"], 4)
                             for r in result.choice.runs}}
        return Run(self.name, trace, trace[-1][0], trace[-1][1],
                   _accuracy(result.model.predict, problem.test_dataset()),
                   f"tol schedule {self.tol_schedule[0]:g}..{self.tol_schedule[-1]:g}",
                   {"choices": choices})


class Liblinear:
    """LIBLINEAR (liblinear-official) with ``-s solver_type``, ``-B bias_scale``."""

    anchor = True

    def __init__(self, solver_type: int, eps_schedule=LIBLINEAR_EPS_SCHEDULE):
        self.solver_type = solver_type
        self.eps_schedule = eps_schedule
        self.name = f"liblinear -s {solver_type}"
        self._prepared: dict = {}

    def supports(self, problem: BenchProblem) -> bool:
        return self.solves(self.solver_type, problem)

    @staticmethod
    def solves(solver_type: int, problem: BenchProblem) -> bool:
        """Whether LIBLINEAR's ``-s solver_type`` trains ``problem``: a type its loss declares
        (``Loss.liblinear_types``), with a regularized bias (-B) or none."""
        return (solver_type in loss_type(problem.loss).liblinear_types
                and problem.bias in ("regularized", "none"))

    def _problem(self, problem: BenchProblem):
        from liblinear.liblinear import problem as ll_problem

        key = (problem.dataset, problem.n_rows, problem.bias, problem.bias_scale)
        if key not in self._prepared:
            train = problem.train_dataset()
            prob = ll_problem(train.y, train.X)
            prob.set_bias(problem.bias_scale if problem.bias == "regularized" else -1)
            self._prepared = {key: prob}  # one dataset at a time: the structures are large
        return self._prepared[key]

    def fit(self, problem: BenchProblem, eps: float):
        """(seconds, beta, model) of one LIBLINEAR run at tolerance ``eps``."""
        bias = problem.bias_scale if problem.bias == "regularized" else -1
        seconds, model = liblinear_train(
            self._problem(problem), f"-s {self.solver_type} -c {problem.C!r} -e {eps!r} -B {bias}")
        return seconds, liblinear_beta(model, problem.train_dataset().n_features), model

    def run(self, problem: BenchProblem) -> Run:
        bp = problem.binary_problem()
        test = problem.test_dataset()
        trace = []
        beta = None
        for eps in self.eps_schedule:
            seconds, beta, _ = self.fit(problem, eps)
            trace.append((seconds, bp.objective(beta)))
        w, intercept = bp.split(beta)

        def predict(X):
            from solvers.core import csr_matvec
            from solvers.models import as_feature_matrix

            scores = csr_matvec(as_feature_matrix(X, w.shape[0]), w, intercept)
            return np.where(scores > 0, 1.0, -1.0)

        return Run(self.name, trace, trace[-1][0], trace[-1][1], _accuracy(predict, test),
                   f"eps schedule {self.eps_schedule[0]:g}..{self.eps_schedule[-1]:g}")


def liblinear_train(prob, options: str):
    """(seconds, model): one run of liblinear-official on its prepared ``problem`` structure
    with the command-line ``options`` (quiet), timed alone -- the one place the anchors and the
    bench scripts call LIBLINEAR."""
    from liblinear.liblinear import parameter
    from liblinear.liblinearutil import train as ll_train

    param = parameter(f"{options} -q")
    start = time.perf_counter()
    model = ll_train(prob, param)
    return time.perf_counter() - start, model


def liblinear_trace(X, y, options: str, bias_scale: float | None, eps_schedule,
                    objective) -> list[tuple[float, float]]:
    """LIBLINEAR with ``options`` (``-s``, ``-c``, ``-B`` ...) once per eps of
    ``eps_schedule`` on (X, y), each run timed from scratch: [(seconds, objective(model))].
    The data are converted to LIBLINEAR's structures once, outside the timing, with the
    constant feature ``bias_scale`` (None: no constant feature); ``objective`` evaluates each
    model afterwards, untimed."""
    from liblinear.liblinear import problem as ll_problem

    prob = ll_problem(y, X)
    prob.set_bias(-1 if bias_scale is None else bias_scale)
    trace = []
    for eps in eps_schedule:
        seconds, model = liblinear_train(prob, f"{options} -e {eps!r}")
        trace.append((seconds, objective(model)))
    return trace


def liblinear_beta(model, n_features: int) -> np.ndarray:
    """Our beta = (w, b) from a binary LIBLINEAR model (its label order undone; with ``-B``
    the last weight is the coefficient of the constant feature, as in our beta)."""
    nr_feature = model.get_nr_feature()
    has_bias = model.bias >= 0
    w = np.ctypeslib.as_array(model.w, shape=(nr_feature + has_bias,)).copy()
    if model.get_labels()[0] != 1:
        w = -w
    beta = np.zeros(n_features + 1)
    beta[:nr_feature] = w[:nr_feature]
    if has_bias:
        beta[-1] = w[nr_feature]
    return beta


class SklearnLinearSVC:
    """scikit-learn's LinearSVC (LIBLINEAR's dual coordinate descent underneath)."""

    anchor = True

    def __init__(self, tol_schedule=SKLEARN_TOL_SCHEDULE):
        self.tol_schedule = tol_schedule
        self.name = "sklearn LinearSVC"

    def supports(self, problem: BenchProblem) -> bool:
        """LinearSVC(dual=True) runs LIBLINEAR's dual coordinate descent: the losses LIBLINEAR
        has (its ``loss`` names them as we do), without a free bias."""
        return bool(loss_type(problem.loss).liblinear_types) and problem.bias != "free"

    def run(self, problem: BenchProblem) -> Run:
        from sklearn.svm import LinearSVC

        train, test = problem.train_dataset(), problem.test_dataset()
        bp = problem.binary_problem()
        trace = []
        for tol in self.tol_schedule:
            model = LinearSVC(loss=problem.loss, dual=True, tol=tol, C=problem.C,
                              fit_intercept=problem.bias == "regularized",
                              intercept_scaling=problem.bias_scale, max_iter=100_000)
            start = time.perf_counter()
            model.fit(train.X, train.y)
            seconds = time.perf_counter() - start
            beta = np.append(model.coef_[0], model.intercept_[0] / problem.bias_scale
                             if problem.bias == "regularized" else 0.0)
            trace.append((seconds, bp.objective(beta)))
        return Run(self.name, trace, trace[-1][0], trace[-1][1],
                   _accuracy(model.predict, test))


class SklearnLinearKernelSVC:
    """scikit-learn's SVC(kernel="linear"): LIBSVM's SMO, hinge loss with a free bias."""

    anchor = True
    name = "sklearn SVC(linear)"

    def __init__(self, tol_schedule=(1e-1, 1e-2, 1e-3, 1e-5)):
        self.tol_schedule = tol_schedule

    def supports(self, problem: BenchProblem) -> bool:
        """LIBSVM's C-SVC: what the smo family (C-SVC too) declares."""
        return solvers.get_solver("smo").solves.allows("binary", problem.loss, problem.bias)

    def run(self, problem: BenchProblem) -> Run:
        from sklearn.svm import SVC

        train, test = problem.train_dataset(), problem.test_dataset()
        bp = problem.binary_problem()
        trace = []
        for tol in self.tol_schedule:
            model = SVC(kernel="linear", C=problem.C, tol=tol, cache_size=1000)
            start = time.perf_counter()
            model.fit(train.X, train.y)
            seconds = time.perf_counter() - start
            beta = np.append(np.asarray(model.coef_.todense()).ravel()
                             if hasattr(model.coef_, "todense") else model.coef_[0],
                             model.intercept_[0])
            trace.append((seconds, bp.objective(beta)))
        return Run(self.name, trace, trace[-1][0], trace[-1][1],
                   _accuracy(model.predict, test))


def liblinear_crammer_singer_weights(model, classes: np.ndarray, n_features: int) -> np.ndarray:
    """W (n_classes, n_features + 1; the last column the bias coefficients) of a LIBLINEAR
    ``-s 4 -B 1`` model, rows in the order of ``classes`` (the sorted labels)."""
    nr_feature, nr_class = model.get_nr_feature(), model.get_nr_class()
    w = np.ctypeslib.as_array(model.w, shape=((nr_feature + 1) * nr_class,))
    w = w.reshape(nr_feature + 1, nr_class)
    W = np.zeros((classes.shape[0], n_features + 1))
    for j, label in enumerate(model.get_labels()):
        row = int(np.searchsorted(classes, label))
        W[row, :nr_feature] = w[:nr_feature, j]
        W[row, -1] = w[nr_feature, j]
    return W


class ClarabelHinge:
    """Clarabel (interior point) through cvxpy on the hinge QP of
    :func:`bench.references.hinge_clarabel`: one run per tolerance of a schedule, timed by
    Clarabel's own solve time (cvxpy's canonicalization, seconds on a9a, is not counted).  The
    1e-6 anchor for the binary hinge, where LIBLINEAR -s 3 stalls, with any bias mode."""

    anchor = True
    name = "clarabel (cvxpy)"

    def __init__(self, tol_schedule=(1e-3, 1e-6, 1e-9)):
        self.tol_schedule = tol_schedule

    def supports(self, problem: BenchProblem) -> bool:
        return problem.loss == "hinge"

    def trace(self, bp: BinaryProblem) -> list[tuple[float, float]]:
        """[(Clarabel's solve seconds, objective)] per tolerance, on any bias mode of ``bp``."""
        trace = []
        for tol in self.tol_schedule:
            result = hinge_clarabel(bp, tol)
            trace.append((result["seconds"], result["objective"]))
        return trace

    def run(self, problem: BenchProblem) -> Run:
        trace = self.trace(problem.binary_problem())
        return Run(self.name, trace, trace[-1][0], trace[-1][1], None,
                   f"tol schedule {self.tol_schedule[0]:g}..{self.tol_schedule[-1]:g}")


def hinge_clarabel(bp: BinaryProblem, tol: float = 1e-12) -> dict:
    """The hinge problem (any bias mode) as the QP 1/2 (||w||^2 + r b^2) + sum C_i xi_i,
    y_i (x~_i w + s b) >= 1 - xi_i, xi >= 0, solved by Clarabel (a conic interior-point
    method on the full KKT system) through cvxpy; the squared hinge likewise with
    sum C_i xi_i^2.  Returns beta (docs/design.md's layout), the objective evaluated by ``bp``,
    the dual objective at Clarabel's multipliers (a certified lower bound), Clarabel's
    iteration count and its own solve seconds (without cvxpy's canonicalization)."""
    import cvxpy as cp

    if bp.loss not in ("hinge", "squared_hinge"):
        raise ValueError("hinge_clarabel solves the hinge and the squared hinge losses")
    n, m = bp.X.shape
    w = cp.Variable(m)
    xi = cp.Variable(n)
    s = bp.effective_bias_scale
    b = cp.Variable() if bp.bias != "none" else 0.0
    margins = cp.multiply(bp.y, bp.X @ w + s * b)
    penalty = bp.cost @ xi if bp.loss == "hinge" else bp.cost @ cp.square(xi)
    objective = 0.5 * cp.sum_squares(w) + penalty
    if bp.bias == "regularized":
        objective += 0.5 * cp.square(b)
    problem = cp.Problem(cp.Minimize(objective), [margins >= 1 - xi, xi >= 0])
    problem.solve(solver="CLARABEL", tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol,
                  max_iter=500)
    beta = np.r_[np.asarray(w.value, dtype=np.float64),
                 float(b.value) if bp.bias != "none" else 0.0]
    # the margin constraints' multipliers, put into the dual range (and balanced for the
    # free bias): D(alpha) is a certified lower bound on the optimum
    lower, upper = bp.dual_bounds()
    alpha = np.clip(np.asarray(problem.constraints[0].dual_value, dtype=np.float64),
                    lower, upper)
    stats = problem.solver_stats
    return {"beta": beta, "objective": bp.objective(beta),
            "dual": bp.dual_objective(bp.balance(alpha)), "iterations": stats.num_iters,
            "seconds": stats.solve_time, "status": problem.status}
