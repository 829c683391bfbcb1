"""dual_cd (Hsieh et al., ICML 2008; LIBLINEAR -s 1 / -s 3) against independent optima.

* Objectives within 1e-6 (relative) of LIBLINEAR's (``-s 1`` squared hinge, ``-s 3`` hinge,
  ``-B 1``, ``-e 1e-10``) where LIBLINEAR's own point certifies a relative duality gap of at
  most 1e-9; where it does not (``-s 3`` ends at its 1000 iterations on a9a and w8a for the
  hinge at C >= 1, on heart_scale at C >= 1), against the stored certified references of
  ``bench/reference_optima.json`` (Clarabel, LIBLINEAR -s 2) or Clarabel through cvxpy, and
  dual_cd is then never worse than LIBLINEAR's point.
* The certified gap of every record bounds the true relative suboptimality.
* No bias (LIBLINEAR without -B), per-example costs (LIBLINEAR's class weights -wi, and
  random weights against Clarabel), warm starts (dual, primal, C path), the free bias refused
  with its reason, one-vs-rest on dna against LIBLINEAR's one-vs-rest.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from shared_data import load

import solvers
from bench.problems import BenchProblem
from bench.references import hinge_clarabel, load_references
from solvers import dual_cd
from solvers.base import InvalidParametersError, WarmStart
from solvers.dual_cd import DualCDParams
from solvers.monitor import ListMonitor
from solvers.problems import BinaryProblem

OBJECTIVE_RTOL = 1e-6  # the bar
TIGHT = 1e-9  # a reference counts as the optimum at or below this certified relative gap
LIBLINEAR_TYPE = {"squared_hinge": 1, "hinge": 3}


def liblinear_beta(problem: BinaryProblem, extra: str = "") -> np.ndarray:
    """LIBLINEAR -s 1 / -s 3 at -e 1e-10 on ``problem`` (-B bias_scale for the regularized
    bias, no -B without one), as docs/design.md's beta."""
    from liblinear.liblinearutil import train

    options = f"-s {LIBLINEAR_TYPE[problem.loss]} -c {problem.C!r} -e 1e-10 -q {extra}"
    if problem.bias == "regularized":
        options += f" -B {problem.bias_scale!r}"
    model = train(problem.y, problem.X, options)
    w, b = model.get_decfun()
    # the decision function is for LIBLINEAR's first label
    sign = 1.0 if model.get_labels()[0] > 0 else -1.0
    beta = np.r_[sign * np.asarray(w, dtype=np.float64), 0.0]
    if problem.bias == "regularized":
        beta[-1] = sign * b / problem.bias_scale
    return beta


def reference_optimum(problem: BinaryProblem, key: str | None = None) -> tuple[float, float]:
    """(P*, P(LIBLINEAR's point)): LIBLINEAR's objective when its certified gap is tight, else
    a stored certified reference (``key``), else Clarabel's primal objective certified by its
    multipliers."""
    beta = liblinear_beta(problem)
    liblinear = problem.objective(beta)
    if problem.relative_duality_gap(beta) <= TIGHT:
        return liblinear, liblinear
    references = load_references()
    if key is not None and key in references:
        entry = references[key]
        assert entry["certificate"]["relative_duality_gap"] <= TIGHT, entry
        return entry["objective"], liblinear
    clarabel = hinge_clarabel(problem)
    assert (clarabel["objective"] - clarabel["dual"]) / clarabel["objective"] <= TIGHT
    return clarabel["objective"], liblinear


def solve_to(problem: BinaryProblem, tol: float = 1e-9, **settings):
    params = DualCDParams(C=problem.C, loss=problem.loss, bias=problem.bias, tol=tol,
                          max_iter=settings.pop("max_iter", 200_000), **settings)
    return dual_cd.solve(problem, params)


# (dataset, loss, C): heart_scale at every C, the larger sets where dual CD reaches a 1e-9
# gap in seconds; slow: C = 1 on a9a and w8a, the squared hinge at C = 100 (a9a: about 2e4
# outer iterations, where LIBLINEAR -s 1 switches to its primal Newton method), news20 made
# binary at C = 0.01.
CASES = [("heart_scale", loss, C) for loss in ("squared_hinge", "hinge")
         for C in (0.01, 1.0, 100.0)]
CASES += [(name, loss, 0.01) for name in ("a9a", "w8a") for loss in ("squared_hinge", "hinge")]
SLOW_CASES = [("a9a", loss, 1.0) for loss in ("squared_hinge", "hinge")]
# minutes each (measured 2026-11-26 with the suite's other processes beside: a9a's squared
# hinge at C = 100 took 2.5 min), so beyond the suite's budget: SVMSVC_HEAVY_TESTS=1 runs them
HEAVY_CASES = [("w8a", loss, 1.0) for loss in ("squared_hinge", "hinge")]
HEAVY_CASES += [("a9a", "squared_hinge", 100.0), ("w8a", "squared_hinge", 100.0),
                ("news20-binary", "squared_hinge", 0.01), ("news20-binary", "hinge", 0.01)]
HEAVY = pytest.mark.skipif(
    not os.environ.get("SVMSVC_HEAVY_TESTS"),
    reason="minutes each (dual CD alone at large C, news20; bench/bench_dual_cd.py times "
           "them against LIBLINEAR): SVMSVC_HEAVY_TESTS=1 runs them")
# not here: news20 at C = 1 (dual CD alone needs thousands of passes: 31 s to a 1e-2 gap on a
# loaded machine, bench/history/notebook.md) and the hinge at C = 100 on a9a and w8a (no certified
# reference; 1e5 passes left a9a at a 4e-5 gap)
ALL_CASES = [pytest.param(*c, id=f"{c[0]}-{c[1]}-C={c[2]:g}") for c in CASES] + \
    [pytest.param(*c, id=f"{c[0]}-{c[1]}-C={c[2]:g}", marks=pytest.mark.slow)
     for c in SLOW_CASES] + \
    [pytest.param(*c, id=f"{c[0]}-{c[1]}-C={c[2]:g}", marks=[pytest.mark.slow, HEAVY])
     for c in HEAVY_CASES]


@pytest.mark.parametrize(("name", "loss", "C"), ALL_CASES)
def test_reaches_liblinears_optimum(name, loss, C):
    bench = BenchProblem(name, loss=loss, C=C)
    problem = bench.binary_problem()
    optimum, liblinear = reference_optimum(problem, bench.key)
    solution = solve_to(problem)
    assert solution.status == "converged", solution.message
    assert solution.extras["relative_duality_gap"] <= 1e-9
    assert abs(solution.objective - optimum) / optimum <= OBJECTIVE_RTOL
    assert solution.objective <= liblinear * (1 + OBJECTIVE_RTOL)


@pytest.mark.parametrize(("name", "loss", "C"), [("heart_scale", "hinge", 1.0),
                                                 ("heart_scale", "squared_hinge", 100.0),
                                                 ("a9a", "hinge", 0.01),
                                                 ("a9a", "squared_hinge", 0.01)])
def test_certified_gap_bounds_the_suboptimality_at_every_record(name, loss, C):
    bench = BenchProblem(name, loss=loss, C=C)
    problem = bench.binary_problem()
    optimum, _ = reference_optimum(problem, bench.key)
    monitor = ListMonitor()
    # dual CD's own certificate at every record: no Newton switch (tested on its own)
    solution = dual_cd.solve(problem, DualCDParams(C=C, loss=loss, tol=1e-8, max_iter=100_000,
                                                   newton_switch_iter=None), monitor)
    assert solution.status == "converged", solution.message
    assert len(monitor.records) >= 3
    for record in monitor.records:
        assert record.extras["optimality_measure"] == "relative_duality_gap"
        true_gap = (record.objective - optimum) / record.objective
        assert true_gap <= record.optimality + 1e-12, (record.iteration, true_gap)
        assert record.extras["dual_objective"] <= optimum * (1 + 1e-12)
    # the final certificate is recomputed from alpha (no accumulated round-off) and holds
    assert (solution.objective - optimum) / optimum <= solution.extras["relative_duality_gap"] \
        + 1e-12


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_gap_checks_on_the_work_clock_are_reproducible_and_certified(loss):
    """gap_check_clock='work' (how auto races dual_cd) spaces the checks by descended
    entries, never by seconds: two runs return the same point bit for bit, certified within
    tol of the stored optimum, their checks about gap_check_work passes apart."""
    bench = BenchProblem("a9a", loss=loss, C=1.0)
    problem = bench.binary_problem()
    optimum = load_references()[bench.key]["objective"]  # certified, stored
    params = DualCDParams(C=1.0, loss=loss, tol=1e-3, gap_check_clock="work")
    first, second = ListMonitor(), ListMonitor()
    one, two = dual_cd.solve(problem, params, first), dual_cd.solve(problem, params, second)
    assert one.status == "converged", one.message
    np.testing.assert_array_equal(one.beta, two.beta)
    assert [r.extras["work"] for r in first.records] == [r.extras["work"] for r in second.records]
    assert (one.objective - optimum) / optimum <= 1e-3
    size = problem.X.nnz + problem.n_samples
    assert all(r.extras["work"] >= params.gap_check_work * size for r in first.records[1:])


@pytest.mark.parametrize(("name", "loss"), [
    ("heart_scale", "squared_hinge"), ("heart_scale", "hinge"), ("a9a", "squared_hinge"),
    pytest.param("a9a", "hinge", marks=pytest.mark.slow)])  # Clarabel on a9a: 12 s
def test_no_bias_matches_liblinear_without_B(name, loss):
    ds = BenchProblem(name).train_dataset()
    problem = BinaryProblem(ds.X, ds.y, C=0.05 if name == "a9a" else 1.0, loss=loss,
                            bias="none")
    beta = liblinear_beta(problem)
    if problem.relative_duality_gap(beta) <= TIGHT:
        optimum = problem.objective(beta)
    else:  # -s 3 at its iteration cap: Clarabel
        clarabel = hinge_clarabel(problem)
        optimum = clarabel["objective"]
    solution = solve_to(problem)
    assert solution.status == "converged", solution.message
    assert solution.beta[-1] == 0.0
    assert abs(solution.objective - optimum) / optimum <= OBJECTIVE_RTOL


@pytest.mark.parametrize("loss", ["squared_hinge",
                                  pytest.param("hinge", marks=pytest.mark.slow)])
def test_class_weights_match_liblinears_wi(loss):
    """Per-example costs C_i = C w_{y_i}: LIBLINEAR's -w1 / -w-1 (its only per-example
    costs: the official LIBLINEAR has no instance weights)."""
    ds = BenchProblem("a9a").train_dataset()
    weights = np.where(ds.y > 0, 2.5, 0.4)
    problem = BinaryProblem(ds.X, ds.y, C=0.02, loss=loss, sample_weight=weights)
    beta = liblinear_beta(problem, "-w1 2.5 -w-1 0.4")
    liblinear = problem.objective(beta)
    if problem.relative_duality_gap(beta) <= TIGHT:
        optimum = liblinear
    else:  # -s 3 at its iteration cap: Clarabel, which takes the same costs
        clarabel = hinge_clarabel(problem)
        assert (clarabel["objective"] - clarabel["dual"]) / clarabel["objective"] <= TIGHT
        optimum = clarabel["objective"]
    solution = solve_to(problem)
    assert solution.status == "converged", solution.message
    assert abs(solution.objective - optimum) / optimum <= OBJECTIVE_RTOL
    assert solution.objective <= liblinear * (1 + OBJECTIVE_RTOL)


@pytest.mark.parametrize("bias", ["regularized", "none"])
@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_random_example_weights_match_clarabel(loss, bias):
    ds = load("heart_scale")
    y = np.where(ds.y == ds.classes[1], 1.0, -1.0)
    weights = np.random.default_rng(7).uniform(0.1, 3.0, ds.n_samples)
    problem = BinaryProblem(ds.X, y, C=2.0, loss=loss, bias=bias, sample_weight=weights)
    clarabel = hinge_clarabel(problem)
    assert (clarabel["objective"] - clarabel["dual"]) / clarabel["objective"] <= TIGHT
    solution = solve_to(problem)
    assert solution.status == "converged", solution.message
    assert abs(solution.objective - clarabel["objective"]) / clarabel["objective"] \
        <= OBJECTIVE_RTOL


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_warm_starts_reach_the_same_optimum_in_fewer_iterations(loss):
    """Outer iterations compared under LIBLINEAR's rule (PG spread within 1e-3), whose stop
    is deterministic (the gap checks are paced by time, so the iteration at which a run first
    sees its gap within tol varies from run to run); the optimum compared under the gap rule.
    Measured 2026-11-26 (a9a, C = 0.1): hinge cold 1851, C path 1447, from OCAS 1720; squared
    hinge cold 37, C path 25, from mfn 20."""
    problem = BenchProblem("a9a", loss=loss, C=0.1).binary_problem()
    exact = DualCDParams(C=0.1, loss=loss, tol=1e-7, max_iter=100_000)
    rule = DualCDParams(C=0.1, loss=loss, stop_rule="projected_gradient", eps=1e-3,
                        max_iter=100_000)
    cold = dual_cd.solve(problem, exact)
    assert cold.status == "converged", cold.message
    cold_rule = dual_cd.solve(problem, rule)
    # a C path: C = 0.05 then C = 0.1 from its alpha scaled into the new box
    path = dual_cd.solve_path(problem, [0.05, 0.1], exact)
    assert [s.status for s in path] == ["converged", "converged"]
    assert abs(path[1].objective - cold.objective) / cold.objective <= 1e-6
    assert path[1].extras["seconds"] > 0
    assert dual_cd.solve_path(problem, [0.05, 0.1], rule)[1].iterations < cold_rule.iterations
    # a primal start: another solver's point at C = 0.1 to a loose gap (mfn's squared hinge,
    # the cutting planes' hinge), through the spec's warm start (the KKT map, then w from
    # alpha)
    other = "mfn" if loss == "squared_hinge" else "cutting_plane"
    loose = solvers.get_solver(other).params_model(C=0.1, loss=loss, tol=1e-3)
    start = WarmStart(beta=solvers.get_solver(other).run(problem, loose, None).beta)
    warm = dual_cd.run(problem, exact, None, start=start)
    assert warm.status == "converged", warm.message
    assert abs(warm.objective - cold.objective) / cold.objective <= 1e-6
    if loss == "squared_hinge":
        # the squared hinge's KKT map is exact (alpha_i = 2 C xi_i): a near-optimal w gives a
        # near-optimal alpha.  The hinge's gives only bounds (alpha_i = C inside the margin, 0
        # outside, nothing known on it), so from a loose point it may take longer than cold:
        # seen 1720 and 2494 passes against 1851 (2026-11-26, 2026-11-27), by the cutting
        # planes' point, whose last iterations a loaded machine's timing choices move.
        assert dual_cd.run(problem, rule, None, start=start).iterations < cold_rule.iterations
    # a dual start outside the box is clipped into it
    alpha = np.full(problem.n_samples, 5.0)
    clipped = dual_cd.dual_start(problem, alpha)
    lower, upper = problem.dual_bounds()
    assert np.all(clipped.alpha >= lower) and np.all(clipped.alpha <= upper)
    np.testing.assert_allclose(clipped.beta, problem.primal_from_dual(clipped.alpha))
    from_dual = dual_cd.solve(problem, exact, start=WarmStart(dual=alpha))
    assert abs(from_dual.objective - cold.objective) / cold.objective <= 1e-6


@pytest.mark.parametrize("tol", [1e-3, pytest.param(1e-8, marks=pytest.mark.slow)])
def test_squared_hinge_switches_to_newton_at_its_limit_as_liblinear(tol):
    """Issue 52's case: news20 made binary, squared hinge, C = 1.  Dual CD alone ends at its
    iteration limit 0.9% above the optimum whatever tol (never certified); like LIBLINEAR's
    -s 1 (train_one: 'Switching to use -s 2') it hands w to the Newton method after 300
    iterations, which ends certified at tol.  The switch is in the message, the extras and
    the records."""
    problem = BenchProblem("news20-binary", C=1.0)
    bp = problem.binary_problem()
    monitor = ListMonitor()
    # the registered spec: dual_cd given mfn's Newton method (solvers.registry.mfn_newton)
    solution = solvers.get_solver("dual_cd").run(
        bp, DualCDParams(C=1.0, loss="squared_hinge", tol=tol), monitor)
    assert solution.status == "converged", solution.message
    switch = solution.extras["newton_switch"]
    assert switch["at_epoch"] == 300 and switch["gap_at_switch"] > tol
    assert "switched to the Newton method" in solution.message
    assert bp.relative_duality_gap(solution.beta) <= tol
    assert solution.extras["relative_duality_gap"] <= tol
    optimum = load_references()[problem.key]["objective"]
    assert (solution.objective - optimum) / optimum <= tol
    assert solution.iterations == 300 + switch["newton_iterations"]
    # one log: dual CD's checks, then mfn's Newton iterations numbered and timed on
    records = monitor.records
    newton = [r for r in records if r.extras.get("stage") == "newton"]
    assert len(newton) == switch["newton_iterations"]
    assert records[-len(newton):] == newton
    assert [r.iteration for r in newton] == list(range(301, 301 + len(newton)))
    elapsed = [r.elapsed for r in records]
    assert elapsed == sorted(elapsed)
    assert newton[-1].optimality <= tol


@pytest.mark.parametrize("bias", ["regularized", "none"])
def test_newton_switch_only_for_the_squared_hinge_below_max_iter(bias):
    """heart_scale at C = 100 needs more than 300 outer iterations: the squared hinge switches
    and reaches the optimum, in a C path too; the hinge never switches (LIBLINEAR -s 3 only
    warns), nor does a run whose max_iter comes first, one with newton_switch_iter=None, or
    dual_cd called without a Newton method."""
    bench = BenchProblem("heart_scale", loss="squared_hinge", bias=bias, C=100.0)
    problem = bench.binary_problem()
    optimum, _ = reference_optimum(problem, bench.key)
    spec = solvers.get_solver("dual_cd")
    params = DualCDParams(C=100.0, bias=bias, tol=1e-8)
    switched = spec.run(problem, params, None)
    assert switched.status == "converged" and "newton_switch" in switched.extras
    assert abs(switched.objective - optimum) / optimum <= 1e-8
    *_, last = spec.path(problem, [1.0, 100.0], params)
    assert last.status == "converged" and "newton_switch" in last.extras
    assert abs(last.objective - optimum) / optimum <= 1e-8
    limited = spec.run(problem, params.model_copy(update={"max_iter": 300}), None)
    assert limited.status == "max_iter" and "newton_switch" not in limited.extras
    unswitched = [spec.run(problem, params.model_copy(update={"newton_switch_iter": None,
                                                              "max_iter": 100_000}), None),
                  dual_cd.solve(problem, params.model_copy(update={"max_iter": 100_000}))]
    for alone in unswitched:
        assert alone.status == "converged" and "newton_switch" not in alone.extras
        assert alone.iterations > 300
    hinge = BenchProblem("heart_scale", loss="hinge", bias=bias, C=100.0).binary_problem()
    hinge_run = spec.run(hinge, DualCDParams(C=100.0, loss="hinge", bias=bias, tol=1e-12,
                                             max_iter=400), None)
    assert hinge_run.status == "max_iter" and "newton_switch" not in hinge_run.extras


def test_free_bias_is_refused_with_the_reason():
    data = load("heart_scale")
    with pytest.raises(InvalidParametersError, match="equality constraint"):
        solvers.train(data, solver="dual_cd", bias="free")
    y = np.where(data.y == data.classes[1], 1.0, -1.0)
    with pytest.raises(ValueError, match="dual_cd does not solve binary problems .*equality"):
        dual_cd.solve(BinaryProblem(data.X, y, loss="hinge", bias="free"))
    with pytest.raises(InvalidParametersError, match="'dual_cd' does not solve"):
        solvers.train(data, solver="dual_cd", loss="modified_huber")


def test_projected_gradient_rule_is_liblinears():
    """stop_rule='projected_gradient' ends where the PG spread on the full set is within eps
    (LIBLINEAR's rule); a smaller eps ends closer to the optimum."""
    problem = BenchProblem("a9a", loss="hinge", C=1.0).binary_problem()
    gaps = []
    for eps in (0.1, 1e-3):
        monitor = ListMonitor()
        solution = dual_cd.solve(problem, DualCDParams(C=1.0, loss="hinge",
                                                       stop_rule="projected_gradient",
                                                       eps=eps, max_iter=100_000), monitor)
        assert solution.status == "converged", solution.message
        assert monitor.records[-1].extras["projected_gradient_spread"] <= eps
        assert monitor.records[-1].extras["active_size"] == problem.n_samples
        gaps.append(solution.extras["relative_duality_gap"])
    assert gaps[1] < gaps[0]


def test_no_shrinking_reaches_the_same_optimum():
    problem = BenchProblem("heart_scale", loss="hinge", C=1.0).binary_problem()
    shrunk = solve_to(problem)
    plain = solve_to(problem, shrinking=False)
    assert plain.status == shrunk.status == "converged"
    assert abs(plain.objective - shrunk.objective) / shrunk.objective <= 1e-8


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_one_vs_rest_on_dna_matches_liblinear(loss):
    """train(..., solver='dual_cd') on dna (3 classes): each class's binary problem reaches
    the objective of LIBLINEAR's one-vs-rest model for that class."""
    from liblinear.liblinearutil import train

    data = load("dna.scale")
    C = 0.1
    result = solvers.train(data, solver="dual_cd", loss=loss, C=C, tol=1e-9,
                           max_iter=100_000)
    assert result.status == "converged", result.message
    model = train(data.y, data.X, f"-s {LIBLINEAR_TYPE[loss]} -B 1 -c {C} -e 1e-10 -q")
    labels = list(model.get_labels())
    assert len(result.subproblems) == 3
    for k, label in enumerate(data.classes):
        y = np.where(data.y == label, 1.0, -1.0)
        problem = BinaryProblem(data.X, y, C=C, loss=loss)
        w, b = model.get_decfun(labels.index(label))
        theirs = problem.objective(np.r_[w, b])
        ours = problem.objective(problem.join(result.model.coef_[k],
                                              float(result.model.intercept_[k])))
        assert abs(ours - result.subproblems[k].objective) <= 1e-9 * ours
        if problem.relative_duality_gap(np.r_[w, b]) <= TIGHT:
            assert abs(ours - theirs) / theirs <= OBJECTIVE_RTOL
        else:
            assert ours <= theirs * (1 + 1e-12)
    accuracy = np.mean(result.model.predict(data.X) == data.y)
    assert accuracy > 0.9


def _liblinear_crammer_singer(data, C: float) -> np.ndarray:
    """LIBLINEAR -s 4 -B 1 -e 1e-10 as W (rows in the dataset's class order)."""
    from liblinear.liblinearutil import train

    model = train(data.y, data.X, f"-s 4 -B 1 -c {C!r} -e 1e-10 -q")
    labels = list(model.get_labels())
    W = np.zeros((data.classes.shape[0], data.n_features + 1))
    for k, label in enumerate(data.classes):
        w, b = model.get_decfun(labels.index(label))
        W[k, :-1], W[k, -1] = w, b
    return W


@pytest.mark.slow
def test_crammer_singer_gap_certifies_against_liblinear_s4():
    """The sequential dual method stopped at a 1e-4 certified gap on dna (C = 0.1): LIBLINEAR
    -s 4's point at eps 1e-10 lies between the dual value and dual_cd's objective."""
    data = load("dna.scale")
    result = solvers.train(data, solver="dual_cd", loss="hinge", C=0.1,
                           multiclass="crammer_singer", tol=1e-4)
    assert result.status == "converged", result.message
    (summary,) = result.subproblems
    problem = dual_cd.crammer_singer_problem(data, result.params)
    theirs = problem.objective(_liblinear_crammer_singer(data, 0.1))
    gap = summary.extras["relative_duality_gap"]
    assert gap <= 1e-4
    assert theirs <= result.objective * (1 + 1e-12)
    assert (result.objective - theirs) / theirs <= gap
    assert np.mean(result.model.predict(data.X) == data.y) > 0.9


@pytest.mark.slow
@pytest.mark.parametrize(("name", "C"), [("dna.scale", 0.01),
                                         pytest.param("dna.scale", 1.0, marks=HEAVY),
                                         pytest.param("dna.scale", 100.0, marks=HEAVY),
                                         pytest.param("letter.scale", 0.01, marks=HEAVY)])
def test_crammer_singer_reaches_liblinears_optimum(name, C):
    """Measured 2026-11-26 (loaded machine): dna 439 / 4632 / 8522 passes at C = 0.01 / 1 /
    100 to a 1e-8 gap, within 1e-8 of LIBLINEAR -s 4; letter at C = 0.01 926 passes."""
    data = load(name)
    params = DualCDParams(C=C, loss="hinge", multiclass="crammer_singer", tol=1e-8,
                          max_iter=100_000)
    problem = dual_cd.crammer_singer_problem(data, params)
    solution, _ = dual_cd.solve_crammer_singer(problem, params)
    assert solution.status == "converged", solution.message
    theirs = problem.objective(_liblinear_crammer_singer(data, C))
    assert abs(solution.objective - theirs) / theirs <= OBJECTIVE_RTOL


@pytest.mark.parametrize(("name", "C", "rows"), [("dna.scale", 0.1, 600),
                                                  pytest.param("letter.scale", 0.01, None,
                                                               marks=pytest.mark.slow)])
def test_crammer_singer_shrinking_reaches_the_same_optimum(name, C, rows):
    """LIBLINEAR -s 4's shrinking of classes and examples changes the path, not the optimum:
    with and without it, the same objective (to 1e-8 of each other and of LIBLINEAR) at a
    1e-9 certified gap.  Measured 2026-11-27 at load 12-15 on the whole of dna at C = 1:
    14.9 s shrunk against 37.2 s not (LIBLINEAR -e 1e-10: 5.8 s); letter at C = 0.01:
    6.6 s against 105 s (LIBLINEAR 9.1 s)."""
    data = load(name)
    if rows is not None:
        data = data.subset(np.arange(rows))
    objectives = {}
    for shrinking in (True, False):
        params = DualCDParams(C=C, loss="hinge", multiclass="crammer_singer", tol=1e-9,
                              max_iter=100_000, shrinking=shrinking)
        problem = dual_cd.crammer_singer_problem(data, params)
        solution, alpha = dual_cd.solve_crammer_singer(problem, params)
        assert solution.status == "converged", solution.message
        assert solution.extras["relative_duality_gap"] <= 1e-9
        np.testing.assert_allclose(problem.primal_from_dual(alpha), solution.beta, rtol=0,
                                   atol=1e-9 * np.abs(solution.beta).max())
        objectives[shrinking] = solution.objective
    theirs = problem.objective(_liblinear_crammer_singer(data, C))
    assert abs(objectives[True] - objectives[False]) / theirs <= 1e-8
    assert abs(objectives[True] - theirs) / theirs <= OBJECTIVE_RTOL


def test_crammer_singer_squared_hinge_is_refused():
    with pytest.raises(InvalidParametersError, match="sequential dual method"):
        solvers.train(load("dna.scale"), solver="dual_cd", loss="squared_hinge",
                      multiclass="crammer_singer")
