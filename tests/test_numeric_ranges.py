"""Numerics that end (issue 49): the parameters are validated for float64's arithmetic, not
only their sign (``solvers.base.C_RANGE``, ``MIN_RELATIVE_TOL``); the line searches end on any
input; a certified gap in a solution is never negative beyond round-off nor NaN (such a state
is a ``numerical_error`` with its reason)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from shared_data import load

import solvers
from solvers.base import (
    C_RANGE,
    GAP_ROUNDOFF,
    MIN_RELATIVE_TOL,
    InvalidParametersError,
    Solution,
    Termination,
)
from solvers.core.linesearch import piecewise_linear_root, piecewise_linear_root_jumps
from solvers.problems import BinaryProblem
from solvers.registry import get_solver
from solvers.train import validate_params

FAMILIES = [spec.name for spec in solvers.list_solvers() if not spec.portfolio]


@pytest.fixture(scope="module")
def heart():
    return load("heart_scale")


@pytest.mark.parametrize("solver", FAMILIES)
@pytest.mark.parametrize("C", [5e-324, 1e-310, 1e-300, 1e-13, 1e13, 1e100, math.inf])
def test_every_family_refuses_a_C_where_the_arithmetic_breaks(solver, C):
    with pytest.raises(InvalidParametersError, match="C"):
        validate_params(solver, C=C)


@pytest.mark.parametrize("solver", FAMILIES)
def test_every_family_accepts_the_ends_of_the_C_range(solver):
    for C in C_RANGE:
        assert validate_params(solver, C=C)[1].C == C


@pytest.mark.parametrize("solver", [name for name in FAMILIES
                                    if get_solver(name).certifies_gap])
def test_a_gap_tolerance_below_round_off_is_refused_and_zero_means_off(solver):
    with pytest.raises(InvalidParametersError, match="round-off"):
        validate_params(solver, tol=1e-17)
    assert validate_params(solver, tol=MIN_RELATIVE_TOL)[1].tol == MIN_RELATIVE_TOL
    assert validate_params(solver, tol=0.0)[1].tol == 0.0


def test_mfn_refuses_a_cgls_epsilon_below_round_off():
    with pytest.raises(InvalidParametersError, match="epsilon"):
        validate_params("mfn", epsilon=5e-324)
    assert validate_params("mfn", epsilon=MIN_RELATIVE_TOL)[1].epsilon == MIN_RELATIVE_TOL


@pytest.mark.parametrize("search", [piecewise_linear_root, piecewise_linear_root_jumps])
@pytest.mark.parametrize("where", ["breakpoints", "dl", "dr", "l0"])
def test_the_line_searches_end_on_a_non_finite_slope(search, where):
    """A NaN breakpoint compares false with every pivot: the selection used to spin on it
    (mfn at C = 5e-324).  Now the search answers NaN, its callers' "no finite step"."""
    rng = np.random.default_rng(0)
    values = {"breakpoints": rng.uniform(0.1, 2.0, 100), "dl": rng.uniform(0.0, 1.0, 100),
              "dr": rng.uniform(0.0, 1.0, 100)}
    l0 = -10.0
    if where == "l0":
        l0 = np.nan
    else:
        values[where][37] = np.nan
    started = time.perf_counter()
    delta = search(l0, 1.0, values["breakpoints"], values["dl"], values["dr"])
    assert np.isnan(delta)
    assert time.perf_counter() - started < 5.0  # compiled already: it ends at once


@pytest.mark.parametrize("search", [piecewise_linear_root, piecewise_linear_root_jumps])
def test_the_line_searches_still_find_the_root(search):
    """The bound on the selection leaves the search's answer as it was: the zero of the
    slope l + delta (r - l), continuous, bending up by s_i at 200 breakpoints delta_i (the
    line s_i (delta - delta_i) added: dl = -s_i delta_i, dr = s_i (1 - delta_i))."""
    rng = np.random.default_rng(1)
    bp = rng.uniform(0.0, 4.0, 200) + 1e-3
    bend = rng.uniform(0.0, 0.2, 200)
    dl, dr = -bend * bp, bend * (1.0 - bp)
    root = search(-50.0, -49.0, bp, dl, dr)
    assert 0.0 < root < np.inf
    passed = bp < root
    l_at, r_at = -50.0 + dl[passed].sum(), -49.0 + dr[passed].sum()
    assert l_at + root * (r_at - l_at) == pytest.approx(0.0, abs=1e-9)


def _mfn_at(dataset, C: float) -> Solution:
    """mfn's binary solve at a C its parameter model refuses (handed to the engine directly,
    as a library caller of ``spec.run`` can)."""
    spec = get_solver("mfn")
    params = spec.params_model.model_construct(**{**spec.params_model(solver="mfn").model_dump(),
                                                  "C": C})
    y = np.where(dataset.y > 0, 1.0, -1.0)
    return spec.run(BinaryProblem(dataset.X, y, C=C), params, None)


@pytest.mark.parametrize("C", [5e-324, 1e-310])
def test_mfn_at_a_subnormal_C_fails_with_its_reason_instead_of_spinning(heart, C):
    solution = _mfn_at(heart, C)
    assert solution.status == Termination.FAILED
    assert "no finite step" in solution.message and "sound range" in solution.message


def test_mfn_at_C_1e_300_certifies_no_negative_gap(heart):
    """At C = 1e-300 P and D underflow: mfn used to report 'converged' with a certified gap
    of -1.  Whatever the solve ends with, it certifies no negative gap."""
    solution = _mfn_at(heart, 1e-300)
    gap = solution.extras.get("relative_duality_gap")
    if solution.status == Termination.CONVERGED:
        assert gap is not None and gap >= 0.0
    else:
        assert gap is None or gap >= 0.0
        assert solution.status in (Termination.NUMERICAL_ERROR, Termination.FAILED)


@pytest.mark.parametrize("solver", ["mfn", "dual_cd", "alm"])
@pytest.mark.parametrize("C", C_RANGE)
def test_the_ends_of_the_C_range_train_to_a_sound_result(heart, solver, C):
    """At either end of C's range each family ends (within its iteration cap) with a finite
    objective and, where it certifies one, a gap that is not negative."""
    result = solvers.train(heart, solver, C=C)
    assert math.isfinite(result.objective)
    for subproblem in result.subproblems:
        gap = subproblem.extras.get("relative_duality_gap")
        assert gap is None or (math.isfinite(gap) and gap >= 0.0), (subproblem.status, gap)


def _solution(gap, status=Termination.CONVERGED, message="converged: gap <= tol"):
    return Solution(np.zeros(3), 1.0, status, message, 4,
                    {"relative_duality_gap": gap, "epochs": 2})


def test_round_off_below_zero_reads_zero_and_keeps_the_status():
    solution = _solution(-5e-16)
    assert solution.extras["relative_duality_gap"] == 0.0
    assert solution.status == Termination.CONVERGED
    assert solution.message == "converged: gap <= tol"
    assert _solution(3e-7).extras["relative_duality_gap"] == 3e-7


@pytest.mark.parametrize("gap, reason", [(-1.0, "negative beyond round-off"),
                                         (-10 * GAP_ROUNDOFF, "negative beyond round-off"),
                                         (math.nan, "not a number"),
                                         (-math.inf, "negative beyond round-off")])
def test_a_negative_or_nan_gap_is_a_numerical_error_with_its_reason(gap, reason):
    solution = _solution(gap)
    assert solution.status == Termination.NUMERICAL_ERROR
    assert reason in solution.message and "nothing is certified" in solution.message
    assert solution.message.endswith("(the solver said: converged: gap <= tol)")
    assert "relative_duality_gap" not in solution.extras
    assert solution.extras["epochs"] == 2
    # a solver's own failure keeps its status, the reason added
    failed = _solution(gap, Termination.FAILED, "objective rose")
    assert failed.status == Termination.FAILED and reason in failed.message


def test_no_gap_computed_yet_is_left_out_without_a_verdict():
    solution = _solution(math.inf, Termination.STOPPED, "the monitor asked to stop")
    assert solution.status == Termination.STOPPED
    assert "relative_duality_gap" not in solution.extras


def test_messages_and_records_never_show_a_gap_below_zero():
    """Issue 48: a converged pendigits job said "certified relative duality gap -5.25e-16";
    round-off below 0 reads "0" in a message and 0 in an iteration record, while a gap
    negative beyond round-off is shown as it is (the result turns it into a numerical error)."""
    from solvers.monitor import IterationRecord
    from solvers.termination import format_gap

    assert format_gap(-5.25e-16) == "0"
    assert format_gap(0.0) == "0"
    assert format_gap(1.234e-4) == "0.000123"
    assert format_gap(-10 * GAP_ROUNDOFF) == f"{-10 * GAP_ROUNDOFF:.3g}"
    record = IterationRecord(3, 0.1, 2.0, -5.25e-16, {"relative_duality_gap": -5.25e-16})
    assert record.optimality == 0.0 and record.extras["relative_duality_gap"] == 0.0
    kept = IterationRecord(3, 0.1, 2.0, 1e-3, {"relative_duality_gap": -1e-3})
    assert kept.optimality == 1e-3 and kept.extras["relative_duality_gap"] == -1e-3


def test_class_weights_may_not_take_an_examples_cost_out_of_the_sound_range(heart):
    """Issue 49: C passed its own check while a class weight of 1e-300 made the costs the
    arithmetic cannot hold; the costs C x weight are held to C_RANGE, saying which."""
    with pytest.raises(InvalidParametersError,
                       match=r"^class_weight: .* costs from 1e-300 to 1, outside "
                             r"1e-12 \.\. 1e\+12"):
        solvers.train(heart, solver="mfn", C=1.0, class_weight={-1: 1e-300})
    with pytest.raises(InvalidParametersError, match="1e\\+15"):
        solvers.train(heart, solver="dual_cd", C=1e6, class_weight={1: 1e9})
    fit = solvers.train(heart, solver="mfn", C=1.0, class_weight={-1: 1e-6, 1: 1e6})
    assert fit.status == Termination.CONVERGED


def test_pydantics_bounds_are_written_as_a_person_writes_them():
    """Issue 48/49: the C bound's message said 0.000000000001."""
    with pytest.raises(InvalidParametersError, match=r"greater than or equal to 1e-12$"):
        validate_params("mfn", C=1e-13)
