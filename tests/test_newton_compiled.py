"""newton's loop compiled whole (``solvers.newton.compiled``, issue 47) against its Python
driver and against LIBLINEAR on real data: the same iterates (objectives and gaps record by
record to round-off), the same stops (statuses, iteration counts, certified gaps), the same
point when a monitor stops the run, and LIBLINEAR ``-s 0``'s / ``-s 2``'s optimum (``-e
1e-10``) to 1e-6 relative."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from liblinear import liblinearutil
from shared_data import load

from solvers.models import load_model
from solvers.monitor import ListMonitor
from solvers.newton import NewtonParams, solve
from solvers.newton.compiled import compiled_applies
from solvers.problems import BinaryProblem
from solvers.termination import Termination

SETS = ("heart_scale", "breast-cancer_scale", "diabetes_scale", "australian_scale")


@functools.cache
def _problem(name: str, C: float, bias: str, loss: str = "logistic") -> BinaryProblem:
    data = load(name)
    y = np.where(data.y == data.classes[1], 1.0, -1.0)
    return BinaryProblem(data.X, y, C=C, loss=loss, bias=bias)


def _both(problem: BinaryProblem, **settings):
    params = NewtonParams(C=problem.C, loss=problem.loss, bias=problem.bias, **settings)
    runs = {}
    for driver in ("python", "compiled"):
        monitor = ListMonitor()
        runs[driver] = (solve(problem, params, monitor, driver=driver), monitor.records)
    return runs


def _assert_same_run(runs):
    """Bit for bit: the compiled loop sums as the Python loop's NumPy and core calls do
    (``core.linalg.pairwise_sum``, the CG's inner products by the core's ``dot``)."""
    (py, py_records), (cc, cc_records) = runs["python"], runs["compiled"]
    assert cc.extras["driver"] == "compiled" and py.extras["driver"] == "python"
    assert cc.status == py.status, (cc.message, py.message)
    assert cc.message == py.message
    assert cc.iterations == py.iterations
    assert cc.extras["cg_iterations"] == py.extras["cg_iterations"]
    assert cc.objective == py.objective
    assert cc.extras["relative_duality_gap"] == py.extras["relative_duality_gap"]
    np.testing.assert_array_equal(cc.beta, py.beta)
    assert len(cc_records) == len(py_records)
    for mine, theirs in zip(cc_records, py_records, strict=True):
        assert (mine.iteration, mine.objective, mine.optimality) == \
            (theirs.iteration, theirs.objective, theirs.optimality)
        assert {k: v for k, v in mine.extras.items()} == theirs.extras


@pytest.mark.parametrize("tol", [1e-3, 1e-9])
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("bias", ["regularized", "none"])
@pytest.mark.parametrize("name", SETS)
def test_the_compiled_loop_runs_the_python_loops_iterates(name, bias, C, tol):
    problem = _problem(name, C, bias)
    assert compiled_applies(problem, 1000)
    runs = _both(problem, tol=tol)
    _assert_same_run(runs)
    solution = runs["compiled"][0]
    assert solution.status == Termination.CONVERGED
    gap = solution.extras["relative_duality_gap"]
    assert 0.0 <= gap <= tol
    # the certificate is the problem layer's own at the returned point
    assert problem.relative_duality_gap(solution.beta) == pytest.approx(gap, rel=1e-8,
                                                                        abs=1e-14)
    assert problem.objective(solution.beta) == pytest.approx(solution.objective, rel=1e-13)


@pytest.mark.parametrize("name", ["heart_scale", "australian_scale"])
def test_the_squared_hinge_too(name):
    """LIBLINEAR -s 2's problem: the same loop with the squared hinge's generalized
    Hessian."""
    _assert_same_run(_both(_problem(name, 1.0, "regularized", "squared_hinge"), tol=1e-9))


def test_liblinears_gradient_rule_and_the_iteration_limit():
    problem = _problem("diabetes_scale", 10.0, "regularized")
    _assert_same_run(_both(problem, stop_rule="gradient", eps=0.01))
    runs = _both(problem, tol=1e-12, max_iter=2)
    _assert_same_run(runs)
    assert runs["compiled"][0].status == Termination.MAX_ITER


class _StopAt(ListMonitor):
    """Asks to stop once it has seen ``count`` records."""

    def __init__(self, count: int):
        super().__init__()
        self.count = count

    def stop_reason(self):
        return "enough" if len(self.records) >= self.count else None


def test_a_stop_returns_the_point_of_the_record_it_was_asked_at():
    problem = _problem("australian_scale", 10.0, "regularized")
    params = NewtonParams(C=10.0, loss="logistic", tol=1e-12)
    stopped = {driver: solve(problem, params, _StopAt(2), driver=driver)
               for driver in ("python", "compiled")}
    py, cc = stopped["python"], stopped["compiled"]
    assert cc.status == py.status == Termination.STOPPED
    assert cc.iterations == py.iterations == 2
    assert cc.objective == py.objective
    np.testing.assert_array_equal(cc.beta, py.beta)
    assert cc.extras["relative_duality_gap"] == pytest.approx(
        problem.relative_duality_gap(cc.beta), rel=1e-8)


@pytest.mark.parametrize(("loss", "solver_type"), [("logistic", 0), ("squared_hinge", 2)])
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("name", ["heart_scale", "diabetes_scale"])
def test_the_compiled_loop_reaches_liblinears_optimum(name, C, loss, solver_type, tmp_path):
    problem = _problem(name, C, "regularized", loss)
    solution = solve(problem, NewtonParams(C=C, loss=loss, tol=1e-10), driver="compiled")
    assert solution.status == Termination.CONVERGED, solution.message
    data = load(name)
    path = str(tmp_path / "liblinear.model")
    liblinearutil.save_model(path, liblinearutil.train(
        data.y.astype(float).tolist(), data.X, f"-s {solver_type} -c {C!r} -B 1 -e 1e-10 -q"))
    model = load_model(path)  # classes_ sorted: coef_[0] scores classes_[1]
    theirs = problem.objective(problem.join(model.coef_[0], model.intercept_[0]))
    assert solution.objective == pytest.approx(theirs, rel=1e-6)
    assert solution.objective <= theirs * (1 + 1e-9)


def test_a_free_bias_and_lp_keep_the_python_driver():
    assert not compiled_applies(_problem("heart_scale", 1.0, "free"), 1000)
    assert compiled_applies(_problem("heart_scale", 1.0, "regularized"), 1000)
    free = solve(_problem("heart_scale", 1.0, "free"), NewtonParams(C=1.0, loss="logistic",
                                                                    bias="free"))
    assert free.extras["driver"] == "python"
