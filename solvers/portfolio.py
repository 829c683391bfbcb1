"""``solver="auto"`` at run time: its candidates as a portfolio.

:mod:`solvers.auto` ranks the candidates that solve the asked problem by the project's
measurements.  A ranking is a prediction, and predictions fail (an unscaled dataset, a shape
no benchmark had): a portfolio bounds what a wrong prediction costs, the way Gurobi's
concurrent optimizer and LIBLINEAR's cap-and-switch do.

* **race** (two threads or more, a Numba threading layer that lets threads run kernels at
  once, and a first candidate not predicted to end within ``RACE_ABOVE_S``): the first
  ``min(threads, RACE_WIDTH)`` candidates run at once, each in its own thread on its share
  of the Numba threads; the first to end *converged* (its certified gap within ``tol``)
  wins, and the others stop at their next iteration through their monitors.
  A candidate that ends without converging (its iteration limit on badly scaled data, an
  error) hands its lane to the next candidate of the ranking, started from its point where
  that one warm-starts.
* **cap-and-switch** (one thread, or a first candidate predicted to end within
  ``RACE_ABOVE_S``, on all the threads): the first candidate runs alone with a budget of
  ``BUDGET_FACTOR`` times its predicted time (at least ``MIN_BUDGET_S``); if it has not
  converged by then, the next one takes over, started from the first one's point where it can
  (every candidate solves the same problem, so a point of one is a start for any other that
  warm-starts), and so on; a candidate that ends unconverged within its budget (its
  iteration limit) hands over the same way; the last one runs without a budget.
* **single**: one candidate (the only one that solves the problem) runs as it is.

Records reach the caller's monitor as they come, numbered consecutively across candidates and
tagged ``extras["candidate"]``; the monitor's stop request (cancellation, a time limit) stops
every candidate.  What ran, for how long, and which won is the choice's ``runs``.
"""

from __future__ import annotations

import inspect
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import numba

from solvers.auto import AutoChoice, Entrant, Ranking
from solvers.base import Fit, SolverParams, SolverSpec, Termination, WarmStart
from solvers.core.sparse import thread_count, threadsafe_threading_layer
from solvers.data.dataset import Dataset
from solvers.monitor import IterationRecord, Monitor, NullMonitor, QueuedLane

#: Candidates raced at once (at most one per thread).
RACE_WIDTH = 2
#: cap-and-switch: a candidate's budget is this many times its predicted seconds ...
BUDGET_FACTOR = 3.0
#: ... and at least this (a prediction is a median over other problems: small ones vary most).
MIN_BUDGET_S = 0.5
#: A race pays when the first candidate's predicted time is at least this (seconds); below,
#: two lanes' Python steps contend for the GIL and cost more than a second opinion saves
#: (the raw breast-cancer copy, squared hinge: mfn 1.4 ms alone, 4.9 ms racing alm), so the
#: candidates cap-and-switch on all the threads instead.
RACE_ABOVE_S = 0.05
#: How often the calling thread forwards a race's records and asks its monitor (seconds).
POLL_S = 0.02

FitFor = Callable[[SolverSpec, SolverParams], Callable[..., Fit]]


@dataclass
class Outcome:
    """What the portfolio ran and which candidate's fit stands."""

    fit: Fit
    entrant: Entrant
    choice: AutoChoice


class _Forward:
    """Numbers the records of every candidate consecutively and tags them (the caller's
    monitor sees one stream); only the calling thread forwards."""

    def __init__(self, target: Monitor):
        self.target = target
        self.count = 0

    def __call__(self, name: str, record: IterationRecord) -> None:
        self.count += 1
        extras = dict(record.extras)
        extras["candidate"] = name
        extras.setdefault("solver_iteration", record.iteration)
        self.target.report(IterationRecord(self.count, record.elapsed, record.objective,
                                           record.optimality, extras))


class _Budget:
    """The monitor of a capped candidate: forwards its records, stops it once its budget is
    spent (or when the caller's monitor asks)."""

    def __init__(self, name: str, forward: _Forward, budget: float | None):
        self.name = name
        self.forward = forward
        self.deadline = None if budget is None else time.monotonic() + budget
        self.budget = budget
        self.spent = False

    def report(self, record: IterationRecord) -> None:
        self.forward(self.name, record)

    def stop_reason(self) -> str | None:
        reason = self.forward.target.stop_reason()
        if reason is not None:
            return reason
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.spent = True
            return f"its budget of {self.budget:.3g} s was spent"
        return None


def _status(fit: Fit) -> Termination:
    return Termination.worst(s.status for s in fit.subproblems)


def _objective(fit: Fit) -> float:
    return float(sum(s.objective for s in fit.subproblems))


def _summary(entrant: Entrant, fit: Fit | None, seconds: float, threads: int,
             outcome: str, error: str | None = None) -> dict[str, Any]:
    summary = {"candidate": entrant.candidate.name, "solver": entrant.candidate.solver,
               "seconds": round(seconds, 6), "threads": threads, "outcome": outcome,
               "predicted_seconds": entrant.predicted}
    if fit is not None:
        summary.update(status=str(_status(fit)), objective=_objective(fit),
                       iterations=sum(s.iterations for s in fit.subproblems))
    if error is not None:
        summary["error"] = error
    return summary


def run(dataset: Dataset, ranking: Ranking, tol: float, monitor: Monitor | None,
        fit_for: FitFor, threads: int | None = None) -> Outcome:
    """Train ``dataset`` with the ranking's candidates as a portfolio (module docstring) on
    ``threads`` Numba threads (None: the calling thread's).  ``fit_for(spec, params)`` is the
    fit procedure of a candidate (``solvers.train.fit_handler``'s)."""
    monitor = monitor if monitor is not None else NullMonitor()
    threads = numba.get_num_threads() if threads is None else threads
    entrants = ranking.entrants
    quick = entrants[0].predicted is not None and entrants[0].predicted < RACE_ABOVE_S
    if len(entrants) == 1:
        strategy = "single"
    elif threads >= 2 and not quick and threadsafe_threading_layer():
        strategy = "race"
    else:
        strategy = "cap-and-switch"
    if strategy == "race":
        fit, winner, runs = _race(dataset, entrants, min(threads, RACE_WIDTH), monitor,
                                  fit_for, threads)
    else:
        fit, winner, runs = _cap_and_switch(dataset, entrants, monitor, fit_for, threads,
                                            capped=strategy == "cap-and-switch")
    choice = ranking.choice(tol, winner)
    choice.strategy = strategy
    choice.runs = runs
    return Outcome(fit, winner, choice)


def _race(dataset: Dataset, entrants: list[Entrant], width: int, monitor: Monitor,
          fit_for: FitFor, threads: int) -> tuple[Fit, Entrant, list[dict[str, Any]]]:
    """The first ``width`` entrants at once; a lane whose candidate ends without converging
    (its iteration limit, a numerical failure, an error) before any has won takes the next
    entrant, so that a wrong ranking costs time, not the certificate."""
    records: queue.SimpleQueue = queue.SimpleQueue()
    decided = threading.Event()
    stop: list[str | None] = [None]
    forward = _Forward(monitor)
    each = max(1, threads // width)
    lanes = list(entrants[:width])  # the entrants started, in the order they started

    def run_lane(entrant: Entrant, start_model=None) -> tuple[Fit, float, bool]:
        lane = QueuedLane(entrant.candidate.name, records,
                          lambda: stop[0] or ("another candidate certified the gap first"
                                              if decided.is_set() else None))
        start = time.perf_counter()
        with thread_count(each):
            fit, warm = _fit(fit_for, dataset, entrant, lane, start_model)
        return fit, time.perf_counter() - start, warm

    def drain() -> None:
        while True:
            try:
                name, record = records.get_nowait()
            except queue.Empty:
                return
            forward(name, record)

    finished: dict[int, tuple[Fit | None, float, BaseException | None]] = {}
    handed_by: dict[int, int] = {}  # a refilled lane's entrant: the one whose lane it took
    handed_from: dict[int, str] = {}  # ... and whose point it started from, where it did
    winner: int | None = None
    started = time.perf_counter()
    with ThreadPoolExecutor(width, thread_name_prefix="auto-race") as pool:
        futures = {pool.submit(run_lane, entrant): k for k, entrant in enumerate(lanes)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            drain()
            if stop[0] is None:
                stop[0] = monitor.stop_reason()
            for future in done:
                k = futures[future]
                fit = None
                try:
                    fit, seconds, warm = future.result()
                except Exception as exc:  # noqa: BLE001 - a lane that broke loses the race
                    finished[k] = (None, time.perf_counter() - started, exc)
                else:
                    finished[k] = (fit, seconds, None)
                    if warm:
                        handed_from[k] = lanes[handed_by[k]].candidate.name
                    if winner is None and _status(fit) == Termination.CONVERGED:
                        winner = k
                        decided.set()
                        continue
                if winner is None and stop[0] is None and len(lanes) < len(entrants):
                    # the lane takes the next entrant, from this one's point where it can
                    # (LIBLINEAR -s 1 hands dual CD's w to its primal Newton method likewise)
                    lanes.append(entrants[len(lanes)])
                    handed_by[len(lanes) - 1] = k
                    refill = pool.submit(run_lane, lanes[-1],
                                         fit.model if fit is not None else None)
                    futures[refill] = len(lanes) - 1
                    pending.add(refill)
        drain()
    fits = {k: entry for k, entry in finished.items() if entry[0] is not None}
    if not fits:  # every lane raised: the first one's error is the run's
        raise next(entry[2] for _, entry in sorted(finished.items()))
    if winner is None:  # nobody converged: the best status, then the lowest objective
        order = list(Termination)
        winner = min(fits, key=lambda k: (order.index(_status(fits[k][0])),
                                          _objective(fits[k][0])))
    runs = []
    for k, entrant in enumerate(lanes):
        fit, seconds, error = finished[k]
        if k == winner:
            outcome = "won" if _status(fit) == Termination.CONVERGED else \
                "kept: no candidate converged"
            if k in handed_from:
                outcome += f" (started from {handed_from[k]}'s point)"
        elif error is not None:
            outcome = "failed"
        else:
            outcome = "stopped: another candidate certified the gap first" \
                if _status(fit) == Termination.STOPPED and stop[0] is None else \
                f"ended {_status(fit)}"
        runs.append(_summary(entrant, fit, seconds, each, outcome,
                             None if error is None else f"{type(error).__name__}: {error}"))
    return fits[winner][0], lanes[winner], runs


def _cap_and_switch(dataset: Dataset, entrants: list[Entrant], monitor: Monitor,
                    fit_for: FitFor, threads: int, capped: bool
                    ) -> tuple[Fit, Entrant, list[dict[str, Any]]]:
    forward = _Forward(monitor)
    runs: list[dict[str, Any]] = []
    start_model = None
    for k, entrant in enumerate(entrants):
        last = k == len(entrants) - 1 or not capped
        budget = None if last else max(MIN_BUDGET_S, BUDGET_FACTOR * (entrant.predicted or 0.0))
        lane = _Budget(entrant.candidate.name, forward, budget)
        begin = time.perf_counter()
        with thread_count(threads):
            fit, warm = _fit(fit_for, dataset, entrant, lane, start_model)
        seconds = time.perf_counter() - begin
        status = _status(fit)
        # a candidate that ended on its own without converging (its iteration limit) hands
        # over as one whose budget is spent does; a stop the caller asked for ends the run
        ended_early = not lane.spent and status not in (Termination.CONVERGED,
                                                         Termination.STOPPED)
        if last or not (lane.spent or ended_early):
            outcome = "won" if status == Termination.CONVERGED else f"ended {status}"
            if start_model is not None:
                outcome += f" (started from {runs[-1]['candidate']}'s point)" \
                    if warm else " (started cold)"
            runs.append(_summary(entrant, fit, seconds, threads, outcome))
            return fit, entrant, runs
        why = f"budget of {budget:.3g} s spent" if lane.spent else f"ended {status}"
        runs.append(_summary(entrant, fit, seconds, threads,
                             f"{why}: switched to {entrants[k + 1].candidate.name}"))
        start_model = fit.model
    raise AssertionError("unreachable: the last candidate has no budget")


def _fit(fit_for: FitFor, dataset: Dataset, entrant: Entrant, lane: Monitor,
         start_model=None) -> tuple[Fit, bool]:
    """The entrant's fit, from ``start_model`` where it warm-starts (else cold), and whether
    it started from it."""
    handler = fit_for(entrant.spec, entrant.params)
    if start_model is not None and _warm_startable(entrant.spec, handler):
        return handler(dataset, entrant.spec, entrant.params, lane,
                       start=WarmStart(model=start_model)), True
    return handler(dataset, entrant.spec, entrant.params, lane), False


def _warm_startable(spec: SolverSpec, handler: Callable[..., Fit]) -> bool:
    """Whether a candidate takes the previous one's model as its start
    (``start=WarmStart(model=...)``): a solver that warm-starts, through a fit procedure that
    takes a start (one-vs-rest over its binary problems; not a joint multi-class problem
    such as Crammer-Singer's)."""
    return spec.warm_start and "start" in inspect.signature(handler).parameters
