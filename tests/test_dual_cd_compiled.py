"""dual_cd's regression driver compiled whole (``solvers.dual_cd.compiled``, issue 47) against
its Python driver on the real regression sets, both on the work clock (``auto``'s): the same
checks record by record (epochs, objectives and gaps to round-off), the same stops, statuses
and messages, the same point when a monitor stops the run, and where the L1 loss reaches its
face Newton steps (bodyfat, mg at C = 10) the Python driver going on from the compiled
loop's state.  (``tests/test_regression.py``'s anchors -- LIBLINEAR -s 11/12/13 at -e 1e-10
and Clarabel -- run through the compiled loop too: it is the default on these sets.)"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from shared_data import load

from solvers.dual_cd import DualCDParams
from solvers.dual_cd import solve_regression as dual_cd_regression
from solvers.monitor import ListMonitor
from solvers.problems import RegressionProblem
from solvers.registry import mfn_newton
from solvers.termination import Termination

SETS = ("housing", "mg", "bodyfat", "space_ga", "abalone")
LOSSES = ("squared_epsilon_insensitive", "epsilon_insensitive")


@functools.cache
def _problem(name: str, loss: str, C: float) -> RegressionProblem:
    data = load(f"regression/{name}_scale")
    return RegressionProblem(data.X, data.y, C=C, loss=loss, epsilon=0.1 * float(np.std(data.y)))


def _params(problem: RegressionProblem, **settings) -> DualCDParams:
    return DualCDParams(task="regression", loss=problem.loss, C=problem.C,
                        epsilon=problem.epsilon, gap_check_clock="work", **settings)


def _both(problem: RegressionProblem, monitors=None, **settings):
    params = _params(problem, **settings)
    runs = {}
    for driver in ("python", "compiled"):
        monitor = ListMonitor() if monitors is None else monitors()
        solution = dual_cd_regression(problem, params, monitor, newton=mfn_newton,
                                      driver=driver)
        runs[driver] = (solution, monitor.records)
    return runs


def _assert_same_run(runs):
    """Bit for bit: the compiled checks sum as the problem's methods do (NumPy's pairwise
    sums, the core's dot), and the sweeps are the same kernel on the same state."""
    (py, py_records), (cc, cc_records) = runs["python"], runs["compiled"]
    assert py.extras["driver"] == "python" and cc.extras["driver"].startswith("compiled")
    assert cc.status == py.status
    assert cc.message == py.message
    assert cc.iterations == py.iterations
    for key in ("gap_checks", "final_eps", "relative_duality_gap", "epochs"):
        assert cc.extras[key] == py.extras[key], key
    assert cc.objective == py.objective
    np.testing.assert_array_equal(cc.beta, py.beta)
    assert len(cc_records) == len(py_records)
    for mine, theirs in zip(cc_records, py_records, strict=True):
        assert (mine.iteration, mine.objective, mine.optimality) == \
            (theirs.iteration, theirs.objective, theirs.optimality)
        assert mine.extras == theirs.extras


@pytest.mark.parametrize("tol", [1e-3, 1e-6])
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("name", SETS)
def test_the_compiled_loop_makes_the_python_loops_checks(name, loss, C, tol):
    problem = _problem(name, loss, C)
    runs = _both(problem, tol=tol)
    _assert_same_run(runs)
    solution = runs["compiled"][0]
    assert solution.status == Termination.CONVERGED, solution.message
    assert 0.0 <= solution.extras["relative_duality_gap"] <= tol
    assert problem.objective(solution.beta) == pytest.approx(solution.objective, rel=1e-12)


def test_the_face_newton_steps_go_on_from_the_compiled_state():
    """bodyfat's L1 loss at C = 10 reaches the face Newton steps (newton_switch_iter): the
    compiled loop hands its state to the Python driver, which ends it as it ends alone."""
    problem = _problem("bodyfat", "epsilon_insensitive", 10.0)
    runs = _both(problem, tol=1e-8)
    assert runs["compiled"][0].extras["driver"] == "compiled, then python"
    assert runs["compiled"][0].extras["epochs"] > 300
    _assert_same_run(runs)


def test_the_l2_losss_newton_switch_after_the_compiled_loop():
    """At a low ``newton_switch_iter`` the L2 loss hands w to mfn's Newton method after the
    compiled loop, as after the Python one."""
    problem = _problem("housing", "squared_epsilon_insensitive", 10.0)
    runs = _both(problem, tol=1e-10, newton_switch_iter=3)
    assert "newton_switch" in runs["compiled"][0].extras
    _assert_same_run(runs)


class _StopAt(ListMonitor):
    def __init__(self, count: int):
        super().__init__()
        self.count = count

    def stop_reason(self):
        return "enough" if len(self.records) >= self.count else None


@pytest.mark.parametrize("loss", LOSSES)
def test_a_stop_returns_the_point_of_the_check_it_was_asked_at(loss):
    problem = _problem("mg", loss, 10.0)
    runs = _both(problem, monitors=lambda: _StopAt(3), tol=1e-12)
    py, cc = runs["python"][0], runs["compiled"][0]
    assert cc.status == py.status == Termination.STOPPED
    _assert_same_run(runs)
    assert cc.extras["gap_checks"] == 3
