"""solver="auto" races its candidates on their certified progress (``solvers.portfolio``):
paused lanes that keep every candidate's state, decisions on counted work, the result a
deterministic function of the data and parameters.  The issue's cases: the cutting planes on an
unscaled copy of australian take minutes, the interior-point method a fraction of a second;
Crammer-Singer on 600 rows of dna, where dual_cd ends at its iteration limit."""

from __future__ import annotations

import math
import multiprocessing
import threading
from collections.abc import Callable

import numpy as np
import pytest
from shared_data import load

import solvers
from bench.problems import unscaled
from solvers import portfolio
from solvers.auto import Candidate, Entrant, Ranking
from solvers.base import Fit, SubproblemResult, Termination
from solvers.monitor import IterationRecord, ListMonitor
from solvers.portfolio import _Point, predict, record_passes, versus, work_to
from solvers.train import fit_handler

TOL = 1e-6


def unscaled_australian() -> solvers.Dataset:
    return unscaled(load("australian_scale"))


def entrant(solver: str, predicted: float | None = None, loss: str = "hinge",
            **settings) -> Entrant:
    spec = solvers.get_solver(solver)
    candidate = Candidate(solver, tuple(settings.items()))
    problem = {"task": "classification", "multiclass": "ovr", "loss": loss, "C": 1.0,
               "bias": "regularized", "bias_scale": 1.0}
    params = spec.params_model.posing(problem, tol=TOL, **settings)
    return Entrant(candidate, spec, params, predicted=predicted)


def hinge_or_squared_hinge_optimum(data, loss: str) -> float:
    """Clarabel on the primal QP (an independent solve of the same problem)."""
    import cvxpy as cp

    y = np.where(data.y == data.classes[1], 1.0, -1.0)
    X = data.X.toarray()
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    slack = cp.pos(1 - cp.multiply(y, X @ w + b))
    risk = cp.sum(slack) if loss == "hinge" else cp.sum_squares(slack)
    objective = cp.Minimize(0.5 * (cp.sum_squares(w) + cp.square(b)) + risk)
    problem = cp.Problem(objective)
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(problem.value)


def fit_for(dataset):
    return lambda spec, params: fit_handler(spec, params, dataset)


def test_the_race_keeps_the_candidate_ahead_and_stops_the_one_behind():
    data = unscaled_australian()
    slow, fast = entrant("cutting_plane", method="ocas"), entrant("interior_point")
    monitor = ListMonitor()
    outcome = portfolio.run(data, Ranking([slow, fast], "test"), TOL, monitor, fit_for(data))
    assert outcome.choice.strategy == "race"
    assert outcome.entrant is fast and outcome.choice.solver == "interior_point"
    runs = {r["candidate"]: r for r in outcome.choice.runs}
    assert runs["interior_point"]["outcome"] == "won"
    assert runs["interior_point"]["status"] == "converged"
    assert runs["cutting_plane(method=ocas)"]["outcome"].startswith("stopped: ")
    assert runs["cutting_plane(method=ocas)"]["status"] == "stopped"
    # one stream of records, numbered consecutively, timed on one clock, each tagged with
    # its candidate and the work it had done
    assert [r.iteration for r in monitor.records] == list(range(1, len(monitor.records) + 1))
    times = [r.elapsed for r in monitor.records]
    assert times == sorted(times)
    assert {r.extras["candidate"] for r in monitor.records} == set(runs)
    ours = [r for r in monitor.records if r.extras["candidate"] == "interior_point"]
    assert ours[-1].optimality <= TOL
    assert ours[-1].extras["work_passes"] == runs["interior_point"]["work_passes"] > 0


def test_a_paused_candidate_computes_what_it_computes_alone(monkeypatch):
    """Slices of half a pass pause a candidate at every record: its result is still, bit for
    bit, its run alone (the lane keeps its whole state; nothing is restarted)."""
    monkeypatch.setattr(portfolio, "MIN_PASSES", 0.5)
    monkeypatch.setattr(portfolio, "CHALLENGER_SHARE", 10.0)  # the other runs between
    data = load("a9a").subset(np.arange(3000))
    first = entrant("mfn", loss="squared_hinge")
    other = entrant("alm", loss="squared_hinge", variant="inexact")
    outcome = portfolio.run(data, Ranking([first, other], "test"), TOL, ListMonitor(),
                            fit_for(data))
    alone = fit_handler(first.spec, first.params, data)(data, first.spec, first.params,
                                                         ListMonitor())
    assert outcome.entrant is first, outcome.choice.runs
    assert len(outcome.choice.runs) == 2  # the other one did run in between
    np.testing.assert_array_equal(outcome.fit.model.coef_, alone.model.coef_)
    np.testing.assert_array_equal(outcome.fit.model.intercept_, alone.model.intercept_)


def test_a_candidate_that_ends_unconverged_hands_its_point_to_the_next(monkeypatch):
    """The first two candidates hit their iteration limits (as first-order methods do on
    badly scaled data); the third, outside the field, starts from the better point and
    certifies the gap."""
    monkeypatch.setattr(portfolio, "FIELD", 2)
    data = unscaled_australian()
    first = entrant("dual_cd", max_iter=2)
    second = entrant("cutting_plane", method="ocas", max_iter=2)
    third = entrant("interior_point")
    outcome = portfolio.run(data, Ranking([first, second, third], "test"), TOL, ListMonitor(),
                            fit_for(data))
    assert outcome.entrant is third
    runs = outcome.choice.runs
    assert [r["candidate"] for r in runs] == [e.candidate.name for e in (first, second, third)]
    assert [r["outcome"] for r in runs[:2]] == ["ended max_iter"] * 2, runs
    better = min(runs[:2], key=lambda r: r["objective"])["candidate"]
    assert runs[2]["outcome"] == f"won (started from {better}'s point)", runs
    assert outcome.fit.subproblems[0].status == "converged"


def test_crammer_singer_on_dna_certifies():
    """Issue 52's case: dual_cd ends at its iteration limit here (tol 1e-6); the race keeps
    the cutting planes' progress and returns a certified point."""
    data = load("dna.scale").subset(np.arange(600))
    result = solvers.train(data, solver="auto", loss="hinge", C=1.0, tol=TOL,
                           multiclass="crammer_singer")
    assert result.status == "converged", result.choice.runs
    assert result.choice.solver == "cutting_plane"


def test_a_loser_still_running_when_another_wins_is_abandoned(monkeypatch):
    """Once a candidate certifies, the others are not asked for their points (their
    family's stop would compute an objective, a gap and a model nobody reads): each unwinds
    from its next report and is listed as abandoned, with the records it made.  The winner's
    fit is its run alone, bit for bit."""
    monkeypatch.setattr(portfolio, "CHALLENGER_SHARE", 10.0)  # the challenger runs between
    monkeypatch.setattr(portfolio, "BEHIND", math.inf)  # and is never stopped as behind
    data = load("a9a").subset(np.arange(3000))
    first = entrant("mfn", loss="squared_hinge")
    other = entrant("alm", loss="squared_hinge", variant="inexact")
    monitor = ListMonitor()
    outcome = portfolio.run(data, Ranking([first, other], "test"), TOL, monitor,
                            fit_for(data))
    assert outcome.entrant is first, outcome.choice.runs
    runs = {r["candidate"]: r for r in outcome.choice.runs}
    loser = runs["alm(variant=inexact)"]
    assert loser["status"] == "abandoned", loser
    assert loser["outcome"] == "stopped: mfn certified the gap first"
    assert "objective" not in loser
    made = [r for r in monitor.records if r.extras["candidate"] == loser["candidate"]]
    assert loser["iterations"] == len(made) > 0
    alone = fit_handler(first.spec, first.params, data)(data, first.spec, first.params,
                                                         ListMonitor())
    np.testing.assert_array_equal(outcome.fit.model.coef_, alone.model.coef_)


def test_the_callers_stop_ends_every_candidate():
    data = unscaled_australian()
    ranking = Ranking([entrant("cutting_plane", method="ocas"), entrant("alm")], "test")
    outcome = portfolio.run(data, ranking, TOL, ListMonitor(time_limit=0.0), fit_for(data))
    assert outcome.choice.runs
    assert all(r["status"] == "stopped" for r in outcome.choice.runs), outcome.choice.runs


def test_a_candidate_that_raises_leaves_the_race():
    data = load("heart_scale")
    good, bad = entrant("interior_point"), entrant("alm")
    real = fit_for(data)

    def flaky(spec, params):
        if spec.name == "alm":
            def broken(*args, **kwargs):
                raise FloatingPointError("the lane blew up")
            return broken
        return real(spec, params)

    outcome = portfolio.run(data, Ranking([bad, good], "test"), TOL, ListMonitor(), flaky)
    assert outcome.entrant is good
    failed = next(r for r in outcome.choice.runs if r["candidate"] == "alm")
    assert failed["outcome"] == "failed" and "the lane blew up" in failed["error"]


def test_a_candidate_the_rule_never_measured_waits_outside_the_field():
    """Where the first candidate has a prediction, one without any (unmeasured on such
    problems) cannot be bounded and waits with the rest; one the rule puts at over
    PRIOR_BEHIND times the first's waits too; without a prediction for the first, all race."""
    sq = "squared_hinge"
    lead, near = entrant("mfn", 1.0, sq), entrant("dual_cd", 2.0, sq)
    unmeasured, far = entrant("newton", None, sq), entrant("alm", 50.0, sq)

    def names(entrants):
        return [e.candidate.name for e in entrants]

    field, rest = portfolio._field([lead, unmeasured, far, near])
    assert names(field) == ["mfn", "dual_cd"] and names(rest) == ["newton", "alm"]
    field, rest = portfolio._field([entrant("mfn", None, sq), unmeasured, far])
    assert names(field) == ["mfn", "newton", "alm"] and rest == []


def test_the_prediction_reads_the_trajectory():
    """A gap that falls a decade every 10 passes is 30 passes from 1e-6 at 1e-3; a
    one-vs-rest run adds the classes to come at the finished ones' mean; a gap that does not
    fall predicts no end; one record predicts nothing yet."""
    line = [_Point(10.0 * k, 10.0 ** -k, 0, 1) for k in range(4)]
    assert predict(line, 1e-6) == pytest.approx(30.0)
    assert predict(line[:1], 1e-6) is None
    assert predict([_Point(1, 1e-2, 0, 1), _Point(2, 1e-2, 0, 1)], 1e-6) == math.inf
    # class 0 took 40 passes; class 1 of 3 is 30 from the end; class 2 to come: 40
    ovr = [_Point(40.0, 1e-7, 0, 3)] + [_Point(40.0 + 10.0 * k, 10.0 ** -k, 1, 3)
                                       for k in range(4)]
    assert predict(ovr, 1e-6) == pytest.approx(30.0 + 40.0)
    assert record_passes({"work": 300}, 100, 200, 5) == pytest.approx(2.0)
    assert record_passes({"cg_iterations": 4, "active": 50}, 100, 200, 5) == pytest.approx(7.0)
    # a cutting plane: one pass for the oracle, and in entries its fixed cost, 6 QP steps of
    # 10 cuts at 8 entries a cut, and the Gram row (10 cuts of 6 entries at half an entry each)
    assert record_passes({"cuts": 10, "qp_steps": 6}, 100, 200, 5) == pytest.approx(
        1.0 + (portfolio.CUT_FIXED_ENTRIES + 8.0 * 6 * 10 + 0.5 * 6 * 10) / 300)
    # alm: an exact step by its CGLS iterations, an inexact one (no CGLS count) 4 passes
    assert record_passes({"cgls_iterations": 5, "dual_residual": 1.0}, 100, 200, 5) == 12.0
    assert record_passes({"dual_residual": 1.0, "mu": 0.2}, 100, 200, 5) == 4.0


def test_a_cutting_planes_qp_is_charged_by_its_steps_times_its_cuts_not_the_cuts_squared():
    """An SMO step of the reduced QP reads and updates a gradient of one entry a cut: twice the
    cuts, twice the QP's charge (the count this replaced charged each step the cuts squared, so
    a favourite's late records, hundreds of cuts, were charged 20 times more passes a second
    than a challenger's early ones: dna600, Crammer-Singer, the race's record of 01:47 UTC)."""
    size, d = 100_000, 9

    def qp(cuts, steps):
        return (record_passes({"cuts": cuts, "qp_steps": steps}, size - 1000, 1000, d)
                - record_passes({"cuts": cuts, "qp_steps": 0}, size - 1000, 1000, d))

    assert qp(200, 50) == pytest.approx(2.0 * qp(100, 50))
    assert qp(100, 100) == pytest.approx(2.0 * qp(100, 50))
    # the iteration's fixed cost is a larger share of a pass on a small problem
    small = record_passes({"cuts": 1, "qp_steps": 0}, 900, 100, d)
    large = record_passes({"cuts": 1, "qp_steps": 0}, size - 1000, 1000, d)
    assert small > large > portfolio.CUT_ORACLE_PASSES


def test_an_unsure_ranking_gives_its_favourite_a_short_first_slice():
    """The favourite's first slice is 1.5 times its predicted passes, but at most a quarter of
    a challenger's predicted seconds where the rule predicts that challenger faster than the
    favourite it ranks first (news20 made binary, squared hinge: mfn ranked first at 0.38 s,
    dual_cd at 0.32 s)."""
    data = solvers.Dataset(np.ones((10, 3)), np.arange(10) % 2.0)  # 40 stored entries
    size = data.nnz + data.n_samples

    def entrant(name, predicted):
        return Entrant(Candidate(name), None, None, predicted=predicted)

    per_second = portfolio.ENTRIES_PER_SECOND / size
    sure = [entrant("a", 1e-3), entrant("b", 2e-3)]
    assert portfolio.first_slice(sure, data) == pytest.approx(1.5e-3 * per_second)
    unsure = [entrant("a", 1e-3), entrant("b", 0.8e-3)]
    assert portfolio.first_slice(unsure, data) == pytest.approx(0.25 * 0.8e-3 * per_second)
    # a challenger the rule never measured says nothing of the favourite
    assert portfolio.first_slice([entrant("a", 1e-3), entrant("b", None)], data) == \
        pytest.approx(1.5e-3 * per_second)


def test_the_work_to_a_gap_is_measured_once_reached_and_extrapolated_within_reach():
    """A gap that falls a decade every 10 passes reached 1e-2 at 20 passes and 10^-2.5 at 25
    (interpolated in log gap); 1e-5, two decades on, is 20 passes more; 1e-7, four decades on,
    is further than the three its records came down: not told."""
    line = [_Point(10.0 * k, 10.0 ** -k, 0, 1) for k in range(4)]
    assert work_to(line, 1e-2) == (pytest.approx(20.0), True)
    assert work_to(line, 10 ** -2.5) == (pytest.approx(25.0), True)
    assert work_to(line, 1e-5) == (pytest.approx(50.0), False)
    assert work_to(line, 1e-7) is None
    assert work_to([_Point(1, 1e-2, 0, 1), _Point(2, 1e-2, 0, 1)], 1e-3) == (math.inf, False)


def test_candidates_are_compared_at_the_same_gap():
    """The favourite falls a decade every 10 passes and is at 1e-3 (30 passes); a challenger
    falling a decade every 20 is at 1e-2 (40 passes): to 1e-3 it needs 60, twice the
    favourite's 30, and 20 + 2 x 30 passes to 1e-6 against the favourite's 30.  A fresh
    challenger down one decade in its first two passes would reach 1e-3 in 4 passes on its
    line, but that is two decades beyond the one its records came: its 2 passes only bound
    its work from below, and it does not take the lead on them (each line extrapolated to
    tol on its own, as until 2026-12-08, it would: 5 passes to 1e-6 against 30)."""
    favourite = [_Point(10.0 * k, 10.0 ** -k, 0, 1) for k in range(4)]
    slower = [_Point(20.0 * k, 10.0 ** -k, 0, 1) for k in range(3)]
    against = versus(favourite, slower, 1e-6)
    assert (against.gap, against.ahead, against.bounded) == (1e-3, "favourite", False)
    assert against.ratio == pytest.approx(2.0)
    assert against.challenger_remaining == pytest.approx(80.0)
    assert against.favourite_remaining == pytest.approx(30.0)
    assert not against.lead_taken and not against.behind
    fresh = [_Point(1.0, 1.0, 0, 1), _Point(2.0, 0.1, 0, 1)]
    against = versus(favourite, fresh, 1e-6)
    assert against.bounded and against.ratio == pytest.approx(2.0 / 30.0)
    assert not against.lead_taken
    assert predict(fresh, 1e-6) < predict(favourite, 1e-6) / portfolio.SWAP_MARGIN
    # a challenger a decade every 3 passes, at 1e-4 in 13: the favourite's line reaches 1e-4
    # at 40; 6 passes to 1e-6 against the favourite's 10 + 40 / 13 x 6: it takes the lead
    faster = [_Point(3.0 * k + 1.0, 10.0 ** -k, 0, 1) for k in range(5)]
    against = versus(favourite, faster, 1e-6)
    assert (against.ahead, against.gap, against.bounded) == ("challenger", 1e-4, False)
    assert against.ratio == pytest.approx(13.0 / 40.0)
    assert against.challenger_remaining == pytest.approx(6.0)
    assert against.favourite_remaining == pytest.approx(10.0 + 40.0 / 13.0 * 6.0)
    assert against.lead_taken
    # one needing six times the favourite's work to the same gap is behind
    crawling = [_Point(60.0 * k, 10.0 ** -k, 0, 1) for k in range(3)]
    assert versus(favourite, crawling, 1e-6).behind


def _scripted(traces: dict[str, list[float]], tol: float):
    """Fits that report the given gaps, one record of 2 passes each (``record_passes``'
    default), converging at the first gap at or below ``tol``: the race's decisions on known
    trajectories, no solver run."""
    def fit_for(spec, name):
        def fit(dataset, spec_, params, monitor, start=None):
            for k, gap in enumerate(traces[name]):
                monitor.report(IterationRecord(k, 0.0, 1.0 + gap, gap, {}))
                if gap <= tol:
                    break
                if monitor.stop_reason() is not None:
                    return Fit(None, [SubproblemResult(name, 1.0 + gap, Termination.STOPPED,
                                                       "", k + 1)])
            status = Termination.CONVERGED if gap <= tol else Termination.MAX_ITER
            return Fit(None, [SubproblemResult(name, 1.0 + gap, status, "", k + 1)])
        return fit
    return fit_for


def _scripted_race(traces: dict[str, list[float]], tol: float, first_slice_passes: float):
    data = solvers.Dataset(np.eye(4), np.array([1.0, -1.0, 1.0, -1.0]))
    spec = solvers.get_solver("mfn")
    # the rule's seconds that make the favourite's first slice ``first_slice_passes``
    size = data.nnz + data.n_samples
    predicted = first_slice_passes * size / (portfolio.FIRST_SLICE_SHARE
                                             * portfolio.ENTRIES_PER_SECOND)
    entrants = [Entrant(Candidate(name), spec, name, predicted=predicted) for name in traces]
    outcome = portfolio.run(data, Ranking(entrants, "test"), tol, ListMonitor(),
                            _scripted(traces, tol))
    return outcome.entrant.candidate.name, {r["candidate"]: r for r in outcome.choice.runs}


def _decaying(passes_per_decade_at: Callable[[float], float], records: int) -> list[float]:
    """Gaps falling from 1 at the given local pace (passes a decade at each work)."""
    gaps, log_gap = [], 0.0
    for k in range(records):
        log_gap -= 2.0 / passes_per_decade_at(2.0 * k)
        gaps.append(10.0 ** log_gap)
    return gaps


def _slowing(work: float) -> float:
    """Passes a decade: 40 at first, 640 after 1,200 passes (a first-order method's pace)."""
    return 40.0 + 0.5 * work


def test_candidates_alike_with_noisy_gaps_cost_little_more_than_one_alone():
    """Three candidates on one trajectory, each with its own noise (the gap times e^u, u
    uniform in [-1, 1], as a cutting plane's primal line search or a dual CD check makes it
    jump): whichever runs alone certifies 1e-6 after 1,200-1,280 passes.  Compared at the
    same gap, measured, the race's whole work stays within 1.25 times the least of them on
    every one of 8 draws.  (With each one's line to tol, as until 2026-12-08, a fresh
    challenger's noisy last three records took the lead again and again, up to 1.5 times:
    dna600 Crammer-Singer's 2.49.)"""
    tol = 1e-6
    for seed in range(8):
        traces = {}
        for k, name in enumerate(("favourite", "second", "third")):
            rng = np.random.default_rng(3 * seed + k)
            traces[name] = [gap * float(np.exp(rng.uniform(-1.0, 1.0)))
                            for gap in _decaying(_slowing, 3000)]
        alone = min(2.0 * (next(i for i, gap in enumerate(trace) if gap <= tol) + 1)
                    for trace in traces.values())
        _, runs = _scripted_race(traces, tol, first_slice_passes=40.0)
        race = sum(r["work_passes"] for r in runs.values())
        assert race <= 1.25 * alone, (seed, alone, runs)


def test_a_challenger_three_times_faster_at_the_same_gap_takes_the_lead_and_wins():
    def pace(work):
        return 10.0 + 0.5 * work

    traces = {"favourite": _decaying(pace, 2000),
              "challenger": _decaying(lambda work: pace(3.0 * work) / 3.0, 2000)}
    winner, runs = _scripted_race(traces, 1e-6, first_slice_passes=40.0)
    assert winner == "challenger", runs
    assert runs["favourite"]["outcome"].startswith("stopped"), runs


def _fit_coefficients(data):
    result = solvers.train(data, solver="auto", loss="hinge", C=1.0, tol=1e-3)
    return result.choice.candidate, result.model.coef_.copy(), result.model.intercept_.copy()


def _busy(started, stop):
    started.set()
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def test_auto_gives_the_same_model_twice_idle_and_busy():
    """Issue 48's and 52's reproducibility: the race decides on counted work, never on wall
    time, so two fits of auto give identical coefficients -- also while another process keeps
    a core busy (a race on wall time could then end differently)."""
    data = load("a9a").subset(np.arange(8000))
    first = _fit_coefficients(data)
    second = _fit_coefficients(data)
    context = multiprocessing.get_context("spawn")
    started, stop = context.Event(), context.Event()
    busy = context.Process(target=_busy, args=(started, stop), daemon=True)
    busy.start()
    try:
        assert started.wait(timeout=300.0), "the busy process never started"
        loaded = _fit_coefficients(data)
    finally:
        stop.set()
        busy.join(timeout=60.0)
    for other in (second, loaded):
        assert other[0] == first[0]
        np.testing.assert_array_equal(other[1], first[1])
        np.testing.assert_array_equal(other[2], first[2])


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_auto_returns_a_certified_point_on_unscaled_data(loss):
    data = unscaled_australian()
    result = solvers.train(data, solver="auto", loss=loss, C=1.0, tol=TOL)
    assert result.status == "converged", result.message
    # a favourite whose first slice is small runs alone and certifies within it (train's
    # run_auto, issue 47), else the race
    assert result.choice.strategy in ("race", "alone")
    assert sum(r["outcome"].startswith("won") for r in result.choice.runs) == 1
    assert result.model.metadata["auto"]["runs"] == result.choice.runs
    assert any("scale='maxabs'" in w for w in result.warnings)
    # within the certified gap of an independent optimum (the KKT map's dual point of the
    # problem layer is a poor certificate for the hinge on such data: the solvers' own are not)
    reference = hinge_or_squared_hinge_optimum(data, loss)
    difference = (result.objective - reference) / reference
    assert -1e-9 <= difference <= TOL + 1e-9, (difference, result.choice.runs)


#: The ceiling on a whole portfolio run of a test on a small set (a few ms idle; a run that
#: waits on a lane that never reports fails here instead of hanging the suite).
CEILING_S = 300.0


def within_ceiling(run, seconds: float = CEILING_S):
    """``run()``'s result, computed on a daemon thread that must end within ``seconds``."""
    done = threading.Event()
    box = {}

    def target():
        try:
            box["result"] = run()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, daemon=True, name="portfolio-under-test").start()
    assert done.wait(timeout=seconds), f"the portfolio run did not end within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["result"]


def _run_counting_lanes(monkeypatch, data, ranking, monitor, here_seconds=None):
    """portfolio.run under a ceiling, with the lanes' threads counted (the real start runs:
    nothing the race waits on is stubbed); ``here_seconds`` overrides HERE_SECONDS."""
    started, here = [], []
    real_start, real_here = portfolio._Lane.start, portfolio._Lane.run_here

    def counting_start(lane):
        started.append(lane.name)
        real_start(lane)

    def counting_here(lane, passes, schedule):
        here.append(lane.name)
        real_here(lane, passes, schedule)

    with monkeypatch.context() as patch:
        patch.setattr(portfolio._Lane, "start", counting_start)
        patch.setattr(portfolio._Lane, "run_here", counting_here)
        if here_seconds is not None:
            patch.setattr(portfolio, "HERE_SECONDS", here_seconds)
        outcome = within_ceiling(lambda: portfolio.run(data, ranking, TOL, monitor,
                                                       fit_for(data)))
    return outcome, started, here


def _same_model(a, b):
    np.testing.assert_array_equal(a.fit.model.coef_, b.fit.model.coef_)
    np.testing.assert_array_equal(a.fit.model.intercept_, b.fit.model.intercept_)


def test_a_small_problem_is_won_on_the_calling_thread_with_the_races_model(monkeypatch):
    """Issue 52's fixed cost: a favourite whose first slice is small runs it on the calling
    thread and, certifying there, is the result without a lane's thread; the model is the
    one the race with its lanes returns, bit for bit."""
    data = load("heart_scale")
    first = entrant("mfn", predicted=0.01, loss="squared_hinge")
    other = entrant("dual_cd", predicted=0.01, loss="squared_hinge", gap_check_clock="work")
    monitor = ListMonitor()
    here, started, attempts = _run_counting_lanes(monkeypatch, data,
                                                  Ranking([first, other], "test"), monitor)
    assert attempts == ["mfn"] and started == [], here.choice.runs
    assert here.entrant is first
    assert [r["outcome"] for r in here.choice.runs] == ["won"]
    assert here.choice.strategy == "race" and here.fit.subproblems[0].status == "converged"
    assert [r.iteration for r in monitor.records] == list(range(1, len(monitor.records) + 1))
    assert {r.extras["candidate"] for r in monitor.records} == {"mfn"}
    raced, started, attempts = _run_counting_lanes(
        monkeypatch, data, Ranking([first, other], "test"), ListMonitor(), here_seconds=0.0)
    assert attempts == [] and started == ["mfn"] and raced.entrant is first, raced.choice.runs
    _same_model(here, raced)
    assert here.choice.runs[0]["work_passes"] == raced.choice.runs[0]["work_passes"]


@pytest.mark.parametrize("case", ["ends_uncertified", "slice_spent"])
def test_a_favourite_not_certified_on_the_calling_thread_races_as_before(monkeypatch, case):
    """A favourite that does not certify within its first slice on the calling thread races
    on as it would have from a lane: one that ends there (its iteration limit: dual_cd,
    hinge, 1e-6 on heart) is the race's first lane as it is; one whose slice is spent (mfn
    given the least slice) hands the calling thread over to the race from inside its report
    and goes on from its own state, never run again on a lane.  The same candidates,
    outcomes, model and record stream as the race without the calling-thread slice."""
    data = load("heart_scale")
    if case == "ends_uncertified":
        first = entrant("dual_cd", predicted=0.01, gap_check_clock="work")
        other = entrant("interior_point", predicted=0.01)
    else:
        first = entrant("mfn", predicted=1e-12, loss="squared_hinge")
        other = entrant("dual_cd", predicted=1e-12, loss="squared_hinge",
                        gap_check_clock="work")
    ranking = Ranking([first, other], "test")
    monitor = ListMonitor()
    here, started, attempts = _run_counting_lanes(monkeypatch, data, ranking, monitor)
    name = first.candidate.name
    assert attempts == [name] and name not in started, here.choice.runs
    if case == "ends_uncertified":
        assert here.choice.runs[0]["outcome"] == "ended max_iter"
    else:
        # the challenger ran on its lane while the favourite was handed over
        assert started == [other.candidate.name], here.choice.runs
    lanes_only = ListMonitor()
    raced, _, attempts = _run_counting_lanes(monkeypatch, data, ranking, lanes_only,
                                             here_seconds=0.0)
    assert attempts == []
    assert [(r["candidate"], r["outcome"]) for r in here.choice.runs] == \
        [(r["candidate"], r["outcome"]) for r in raced.choice.runs]
    assert here.entrant is raced.entrant and here.fit.subproblems[0].status == "converged"
    _same_model(here, raced)
    # a dropped attempt's records never reach the caller: the stream is the race's

    def stream(records):
        return [(r.iteration, r.extras["candidate"], r.objective, r.optimality)
                for r in records]

    assert stream(monitor.records) == stream(lanes_only.records)


def test_a_favourite_handed_over_at_every_record_computes_what_it_computes_alone(
        monkeypatch):
    """The favourite runs on the calling thread and, with slices of half a pass, hands the
    thread over to the race at every record (the challenger runs in between, on its lane):
    it goes on from its own state each time, so its result is, bit for bit, its run alone,
    and it never runs on a lane of its own."""
    monkeypatch.setattr(portfolio, "MIN_PASSES", 0.5)
    monkeypatch.setattr(portfolio, "CHALLENGER_SHARE", 10.0)  # the other runs between
    data = load("a9a").subset(np.arange(3000))
    first = entrant("mfn", predicted=1e-12, loss="squared_hinge")
    other = entrant("alm", predicted=1e-12, loss="squared_hinge", variant="inexact")
    outcome, started, attempts = _run_counting_lanes(
        monkeypatch, data, Ranking([first, other], "test"), ListMonitor(), here_seconds=1.0)
    assert attempts == ["mfn"] and started == ["alm(variant=inexact)"], outcome.choice.runs
    assert outcome.entrant is first, outcome.choice.runs
    runs = {r["candidate"]: r for r in outcome.choice.runs}
    assert runs["mfn"]["slices"] > 2 and runs["mfn"]["outcome"] == "won"
    assert runs["alm(variant=inexact)"]["slices"] >= 2
    alone = fit_handler(first.spec, first.params, data)(data, first.spec, first.params,
                                                         ListMonitor())
    np.testing.assert_array_equal(outcome.fit.model.coef_, alone.model.coef_)
    np.testing.assert_array_equal(outcome.fit.model.intercept_, alone.model.intercept_)


def test_the_race_replayed_on_the_candidates_runs_alone_takes_the_same_decisions():
    """``bench race``'s replay feeds each candidate's records from its run alone back to the
    race: the decisions read work, never time, so the replayed race runs the same candidates
    to the same work and crowns the same winner as the race on the real fits (600 rows of
    dna, Crammer-Singer, 1e-3: four cutting planes race)."""
    from bench.bench_race import RaceProblem, replay, run_candidates

    problem = RaceProblem("dna600-cs", "dna600", "hinge", 1e-3, multiclass="crammer_singer")
    data = problem.data()
    real = solvers.train(data, solver="auto", loss="hinge", C=1.0, tol=1e-3,
                         bias="regularized", multiclass="crammer_singer")
    alone = run_candidates(data, problem, cap=600.0)
    assert all(run["status"] != "stopped" for run in alone), alone
    replayed = replay(data, problem, alone)
    assert replayed["winner"] == real.choice.candidate
    assert [(lane["candidate"], lane["work_passes"]) for lane in replayed["lanes"]] == \
        [(run["candidate"], run["work_passes"]) for run in real.choice.runs]
    assert len(real.choice.runs) > 1
