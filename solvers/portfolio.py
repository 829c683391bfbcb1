"""``solver="auto"`` at run time: its candidates race on their certified progress.

:mod:`solvers.auto` ranks the candidates that solve the asked problem by the project's
measurements.  A ranking is a prediction, and predictions fail off the measured map (an
unscaled dataset, a shape no benchmark had); a portfolio that watches each candidate's own
certified progress need not trust it.  (Issue 52: the cap-and-switch this replaces threw a
capped candidate's progress away, and a 0.5 s cap cost 6x on a9a.)

**Lanes that pause.**  Each candidate runs in its own thread, from its cold start, through its
family's ordinary fit; its monitor (a :class:`_Lane`) charges every record to the candidate's
*work* and, once the work reaches the end of the slice the scheduler granted, blocks inside
``report`` until its next slice.  Nothing of the candidate's state is lost between slices (its
iterate, its cuts, its active set, its CG forcing: the thread holds them), so a paused and
resumed candidate computes exactly what it computes alone.  A stopped candidate (behind, or
the race decided) is resumed once with ``stop_reason()`` answering, and returns its point
through its family's ordinary stop.  Only one lane runs at a time, on all the Numba threads:
time slices on the cores, and no two kernels ever at once (so any threading layer will do).
Two lanes at once on two threads was the earlier race; on this project's shared 2-core
machine the second lane had no free core to run on, and a race on wall time is what made the
returned model depend on the load.

**Work, not wall time, decides.**  Every decision reads the candidates' records only: their
certified gaps and their work in *passes* over the stored entries (nnz + n), counted from what
each family's records already say it did (:func:`record_passes`: dual_cd's descended entries,
mfn's CG iterations on its active rows, the interior-point method's PCG iterations and normal
equations, the cutting planes' oracle, fixed cost and QP steps, alm's CGLS iterations).  Each
run is a deterministic function of its data and parameters (dual_cd checks its gap on the work
clock in a race: ``solvers.auto.Candidate.fixed``), so the schedule, the winner and the
returned model are too: the same coefficients on an idle machine and a loaded one
(``tests/test_portfolio.py``).  Wall time is measured and reported (``runs``), never read by
a decision.  The price: a pass is not a second (a candidate whose passes are dearer than the
count says is favoured too long); ``bench/bench_portfolio.py`` measures what that costs
against every candidate run alone.

**The schedule** (successive halving on measured progress, the favourite fed most):

1. The ranking's first candidate (the *favourite*) runs a first slice of the passes the
   rule predicts it needs (:func:`first_slice`: its predicted seconds at
   :data:`ENTRIES_PER_SECOND`; at least :data:`MIN_PASSES`; where the rule predicts a
   challenger faster than the favourite it ranks first, at most :data:`UNSURE_SHARE` of
   that challenger's seconds).  When the rule is right it often certifies within it, and
   nothing else runs.  On a small problem (that slice under
   :data:`HERE_SECONDS` at :data:`ENTRIES_PER_SECOND`) the favourite runs on the calling
   thread, no thread of its own: a favourite that ends within its slice is the race's first
   lane as it is; one that spends it uncertified *hands over from inside its report*
   (:meth:`_Schedule.hand_over`): the calling thread runs the race from there, the
   challengers' slices on their lanes, and returns into the favourite's report when the
   schedule gives it its next slice, so it goes on from its own state (never run again from
   scratch), the same decisions in the same order as on a lane.
2. Otherwise the *challengers* (the next :data:`FIELD` - 1 of the ranking, but none the
   rule predicts at over :data:`PRIOR_BEHIND` times the first's seconds, nor one it never
   measured where the first has a prediction: :func:`_field`) are fed slices in
   turn, doubling, while their total work stays within :data:`CHALLENGER_SHARE` of the
   favourite's; the favourite runs, doubling its slice, the rest of the time.  A challenger
   is compared with the favourite by the work each needs to reach the *same* gap, the
   smaller of their current ones (or ``tol``), on its own trajectory (:func:`versus`,
   :func:`work_to`): the one already there measured, the other's log-gap line (through its
   last :data:`FIT_RECORDS` records) extrapolated down to it, no further than :data:`REACH`
   times the range its records have come (beyond, its work so far bounds its work there from
   below).  From that gap to ``tol`` the one ahead's own line is read and the other is taken
   to keep the pace measured between them.  (Until 2026-12-08 each candidate's line was
   extrapolated to ``tol`` on its own, and a fresh challenger's first steep records made it
   look fast.)  One-vs-rest runs, whose classes' gaps are not comparable, are compared by
   each one's predicted remaining work (:func:`predict`: the current class's remaining plus
   the classes to come at the finished ones' mean).
3. After each slice, a challenger judged on :data:`FIT_RECORDS` records of its own that
   needs under 1 / :data:`SWAP_MARGIN` of the favourite's work to the same gap and of its
   remaining work to ``tol`` takes the lead (:attr:`Versus.lead_taken`, :func:`_favourite`),
   and one that needs over :data:`BEHIND` times its work to the same gap is stopped
   (:attr:`Versus.behind`); one whose gap does not fall yet (a homotopy, a cutting plane's
   first iterations) keeps its share.  The first candidate to end certified wins; its fit is the
   result.  The others are *abandoned*: each unwinds from its next report (:class:`_Abandoned`)
   instead of finishing through its family's stop, whose final objective, gap and model
   nobody would read.
4. A candidate that ends without certifying (its iteration limit, a numerical failure, an
   error) leaves the race; when none is left, the next of the ranking starts, from the best
   point so far where it warm-starts.  When none certifies, the best status, then the lowest
   objective, stands.

The cost of watching: one dict read and a few float operations per record, and a thread
hand-over (tens of microseconds) per slice, slices doubling, so a few milliseconds a run
(measured in ``bench/bench_portfolio.py``).  Records reach the caller's monitor numbered
consecutively across candidates, timed on the race's clock and tagged
``extras["candidate"]``; the caller's stop request (cancellation, a time limit) stops every
candidate.  What ran, its work, seconds and why it ended is the choice's ``runs``.
"""

from __future__ import annotations

import collections
import inspect
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numba

from solvers.auto import AutoChoice, Entrant, Ranking
from solvers.base import Fit, SolverParams, SolverSpec, Termination, WarmStart
from solvers.core.sparse import thread_count
from solvers.data.dataset import Dataset
from solvers.monitor import IterationRecord, Monitor, NullMonitor, Stopwatch

#: Candidates that race (the ranking's first ones); the rest wait for the race to empty.
FIELD = 4
#: A candidate the rule predicts at over this many times the first one's seconds does not
#: join the field (it waits with the rest).
PRIOR_BEHIND = 10.0
#: An inexact alm step's record, in passes: its two products, the dual point's product every
#: fifth step, and its dense vector work over the features (measured against dual_cd's passes
#: in the same process, 2026-12-08, load 4-5: 4.8 passes a record on news20 made binary and
#: a9a, 2.8 on ijcnn1; it was charged 2, and took 4 slices of the challengers' share on news20
#: squared hinge where its time was 12% of dual_cd's alone).
ALM_INEXACT_PASSES = 4.0
#: The least slice, in passes over the stored entries.
MIN_PASSES = 4.0
#: The rule's predicted seconds become passes at this many stored entries a second (a fixed
#: conversion, not a measurement of this machine, so that the schedule stays a function of
#: the data: dual_cd on a9a, hinge, 1e-3, counts 86 passes of 483,000 entries where the
#: measurements say 0.066 s, 6.3e8 a second) ...
ENTRIES_PER_SECOND = 5e8
#: ... and the favourite's first slice is this share of them: a right ranking's candidate
#: certifies within it and nothing else starts (on a9a, C = 1, tol 1e-3, the favourites needed
#: 1.26 and 1.31 times their predicted passes: mfn 60 of 46 on the squared hinge, dual_cd 86
#: of 68 on the hinge; at a share of 1 the challengers then started, and their set-up, which
#: no pass counts, cost 40-60% of mfn's time: 1.29x mfn alone, 0.68x at a share of 2, load
#: 17-20, 2026-12-07); a wrong one's costs at most 1.5 times what the rule expected of it
#: before the race begins (news20 made binary, squared hinge: mfn, the favourite, needs 895
#: passes of the 146 predicted, and dual_cd wins; a share of 2 cost 1.67x dual_cd alone
#: against 1.47x at 1, in the same run).
FIRST_SLICE_SHARE = 1.5
#: Where the rule predicts a challenger at fewer seconds than the favourite it ranks first,
#: the favourite's first slice is at most this share of that challenger's predicted seconds
#: (:func:`first_slice`): the ranking is unsure, and a wrong favourite's first slice is paid
#: in full before the race begins (news20 made binary, squared hinge: mfn first at 0.38 s,
#: dual_cd at 0.32 s; mfn's first slice of 219 passes was half of dual_cd's time alone).
UNSURE_SHARE = 0.25
#: The challengers' work, all together, stays within this share of the favourite's (what a
#: right ranking pays for the race).
CHALLENGER_SHARE = 0.2
#: A challenger that needs over this many times the favourite's work to reach the same gap
#: stops (:attr:`Versus.behind`; one-vs-rest: a predicted total work over this many times the
#: favourite's); judged on :data:`FIT_RECORDS` records of its own at least: a method that
#: starts slowly, the cutting planes, is not written off on its first two.
BEHIND = 4.0
#: A judged challenger takes the lead when its work to the same gap and its predicted
#: remaining work are under the favourite's divided by this (:attr:`Versus.lead_taken`).
SWAP_MARGIN = 2.0
#: The records of a trajectory the log-gap line is fitted through.
FIT_RECORDS = 3
#: How far a candidate's log-gap line is extrapolated to the gap it is compared at
#: (:func:`work_to`): at most this many times the range, in log(gap), its own records have
#: come down; beyond, its work so far only bounds its work there from below.
REACH = 1.0
#: How often the calling thread forwards records and asks its monitor (seconds).
POLL_S = 0.02
#: A favourite whose first slice the rule puts at under this many seconds (its passes at
#: :data:`ENTRIES_PER_SECOND`) runs on the calling thread, no lane, no thread: when it ends
#: within the slice (certified, short of ``tol``, failed), the race goes on from it as from a
#: lane's first slice (the race runs the first slice alone and ends there when it
#: certifies); when it spends the slice uncertified, it hands the calling thread over to the
#: race from inside its ``report`` (:meth:`_Schedule.hand_over`) and goes on from its own
#: state when its next slice comes (until 2026-12-07 the attempt was dropped and a lane ran
#: it again from scratch: that slice twice).  The returned model is the same either way (the
#: slices are counted in passes, never in seconds).  What it saves, a thread's start, the
#: hand-overs and the lanes' queue, is most of auto's fixed cost on a small set (issue 52:
#: housing, mg, heart, solved in 0.1-1 ms by LIBLINEAR; ``bench/history/notebook.md``).  The
#: bound keeps a9a (whose first slice the rule puts at 0.1 s) and larger problems on the
#: lanes: at load 13-16 Numba's parallel kernels ran 2x slower on the calling thread's team
#: than on a new thread's (``bench race``'s note).
HERE_SECONDS = 0.05

FitFor = Callable[[SolverSpec, SolverParams], Callable[..., Fit]]


class _Abandoned(BaseException):
    """Raised inside a losing lane's ``report`` once another candidate won: the lane's fit
    unwinds at once instead of finishing (its family's stop computes the final objective, gap
    and model, a few passes nobody reads).  A BaseException, so that no family's own
    ``except Exception`` takes it for a failure of its own."""


@dataclass
class Outcome:
    """What the portfolio ran and which candidate's fit stands."""

    fit: Fit
    entrant: Entrant
    choice: AutoChoice


def record_passes(extras: dict[str, Any], n: int, nnz: int, d: int) -> float:
    """The work one record stands for, in passes over the stored entries (nnz + n), from what
    the record says was done since the last one (each family's records, ``solvers.monitor``):

    * dual_cd: ``work``, the entries its descent went through, and the check's pass;
    * mfn (and dual_cd's Newton switch): 2 ``cg_iterations`` products on the ``active`` rows,
      the line search's and the gap's passes, and a factorized system's Gram matrix and
      Cholesky (``factorized``: about sum_i nnz_i^2 and min(d, active)^3 / 3);
    * interior_point: 2 ``pcg_iterations`` products and the normal equations it forms and
      factorizes every iteration (``linear_solver``);
    * the cutting planes (:func:`cutting_plane_passes`): one for the oracle, its cut and
      the line search (matrix-vector products over the data on all the threads), the
      iteration's fixed cost, ``qp_steps`` of the reduced QP at ``cuts`` entries each (an SMO
      step reads and updates a gradient of ``cuts`` entries), and the new cut's row of the
      Gram matrix (``cuts`` products of a cut);
    * alm: 2 per ``cgls_iterations`` (exact) and 2 (a step); an inexact step (its records
      carry ``dual_residual`` and no CGLS count) :data:`ALM_INEXACT_PASSES`;
    * anything else: 2.
    """
    size = max(nnz + n, 1)
    gram = nnz * nnz / max(n, 1)  # sum_i nnz_i^2 with rows of equal length
    if "work" in extras:
        return float(extras["work"]) / size + 1.0
    if "cg_iterations" in extras:
        active = min(float(extras.get("active", n)) / max(n, 1), 1.0)
        passes = 2.0 * float(extras["cg_iterations"]) * active + 3.0
        if extras.get("factorized"):
            side = min(d + 1, float(extras.get("active", n)))
            passes += (active * gram + side ** 3 / 3.0) / size
        return passes
    if "linear_solver" in extras:
        return 2.0 * float(extras.get("pcg_iterations", 0)) + 3.0 + \
            (gram + (d + 1) ** 3 / 3.0) / size
    if "cuts" in extras:
        return cutting_plane_passes(float(extras["cuts"]), float(extras.get("qp_steps", 1)),
                                    size, d)
    if "cgls_iterations" in extras:
        return 2.0 * float(extras["cgls_iterations"]) + 2.0
    if "dual_residual" in extras:
        return ALM_INEXACT_PASSES
    return 2.0


#: A cutting-plane iteration's oracle, cut and line search, in passes
#: (:func:`cutting_plane_passes`).
CUT_ORACLE_PASSES = 1.0
#: A cutting-plane iteration's fixed cost (its Python and its kernels' calls), in entries
#: at :data:`ENTRIES_PER_SECOND`: 0.15 ms.
CUT_FIXED_ENTRIES = 0.15e-3 * ENTRIES_PER_SECOND
#: One step of the reduced QP, in entries per cut.
CUT_QP_ENTRIES = 8.0
#: The new cut's row of the Gram matrix, in entries per cut and feature.
CUT_GRAM_ENTRIES = 0.5


def cutting_plane_passes(cuts: float, qp_steps: float, size: int, d: int) -> float:
    """A cutting-plane record's work in passes over the ``size`` stored entries (``d``
    features): :data:`CUT_ORACLE_PASSES`, and, in entries, the iteration's fixed cost
    :data:`CUT_FIXED_ENTRIES`, ``qp_steps`` steps of the QP at :data:`CUT_QP_ENTRIES` a cut
    and the Gram row at :data:`CUT_GRAM_ENTRIES` a cut and feature.  Calibrated against
    dual_cd's passes in the same run (2026-12-08, load 2.2-2.5): on 600 rows of dna,
    Crammer-Singer, 1e-6, a record took 0.2 ms + 16 ns a step and cut + 0.2 us a cut (least
    squares over the four methods' 1,419 records), and a pass 51-62 us with this count for
    each of the four methods and dual_cd (ocas, tca, gca2, cpa: 58, 61, 59, 51; dual_cd 62),
    early records and late alike; on a9a, hinge, C = 1, 1e-3, a tca iteration took 1.4 ms and
    dual_cd's pass 1.27 ms.  The count it replaces (4 passes, and each QP step at half the
    cuts squared) charged ocas there 8 us a pass overall, 131 us over its first 20 records and
    6 us over its second half: a favourite's late records 20 times more passes a second than
    a challenger's early ones, so the challengers' fifth of its passes was two thirds of its
    time (the race's record of 01:47 UTC); and on a9a the oracle 3-4 times more than
    dual_cd's pass took."""
    return CUT_ORACLE_PASSES + (CUT_FIXED_ENTRIES + CUT_QP_ENTRIES * qp_steps * cuts
                                + CUT_GRAM_ENTRIES * (d + 1) * cuts) / size


@dataclass
class _Point:
    """A record as the schedule sees it: work so far, the gap, and its one-vs-rest class."""

    work: float
    gap: float
    subproblem: int
    n_subproblems: int


def predict(points: list[_Point], tol: float) -> float | None:
    """Predicted remaining passes to a certified ``tol``, from a candidate's own trajectory:
    log(gap) is taken linear in work through the last :data:`FIT_RECORDS` records of the
    current (one-vs-rest) subproblem (through all of them when the last few went up: a gap
    need not fall at every check), and every class to come costs the finished classes' mean
    (the current one's predicted total before any finished).  inf: no progress; None: too
    few records to tell."""
    if not points:
        return None
    last = points[-1]
    current = [p for p in points if p.subproblem == last.subproblem
               and math.isfinite(p.gap) and p.gap > 0]
    if current and current[-1].gap <= tol:
        remaining = 0.0
    elif len(current) < 2:
        return None
    else:
        slope = _log_slope(current[-FIT_RECORDS:])
        if slope >= 0:
            slope = _log_slope(current)
        if slope >= 0:
            return math.inf
        remaining = (math.log(current[-1].gap) - math.log(tol)) / -slope
    to_come = last.n_subproblems - last.subproblem - 1
    if to_come <= 0:
        return remaining
    began = [next(p.work for p in points if p.subproblem == k)
             for k in range(last.subproblem + 1)]
    this_began = began[-1]
    finished = last.subproblem
    each = this_began / finished if finished else (last.work - this_began) + remaining
    return remaining + to_come * each


def _log_slope(window: list[_Point]) -> float:
    """d log(gap) / d work from the first record of ``window`` to its last."""
    first, last = window[0], window[-1]
    if last.work <= first.work:
        return 0.0
    return (math.log(last.gap) - math.log(first.gap)) / (last.work - first.work)


def _current(points: list[_Point]) -> list[_Point]:
    """The records of the last record's subproblem with a finite, positive gap."""
    if not points:
        return []
    last = points[-1].subproblem
    return [p for p in points if p.subproblem == last and math.isfinite(p.gap) and p.gap > 0]


def work_to(points: list[_Point], gap: float) -> tuple[float, bool] | None:
    """The work at which a candidate's own trajectory (its current subproblem) reaches
    ``gap``, and whether that is measured.  Measured once it has: the first record at or
    below ``gap``, interpolated in log(gap) from the record before (records are spaced
    differently by each family: one a cutting-plane iteration, one a dual CD check).  Not
    reached yet: its work so far plus the log-gap line of :func:`predict` from its last
    record down to ``gap``, trusted no further in log(gap) than :data:`REACH` times the range
    its own records have come down (a line through a fresh candidate's first steep records
    says little of a gap decades below them); beyond that, None.  inf: a gap that does not
    fall."""
    current = _current(points)
    if not current:
        return None
    for k, point in enumerate(current):
        if point.gap <= gap:
            if k == 0:
                return point.work, True
            before = current[k - 1]
            if before.gap <= point.gap:  # a rise then a fall below: no line between them
                return point.work, True
            share = math.log(before.gap / gap) / math.log(before.gap / point.gap)
            return before.work + share * (point.work - before.work), True
    if len(current) < 2:
        return None
    slope = _log_slope(current[-FIT_RECORDS:])
    if slope >= 0:
        slope = _log_slope(current)
    if slope >= 0:
        return math.inf, False
    distance = math.log(current[-1].gap / gap)
    came = math.log(max(p.gap for p in current) / current[-1].gap)
    if distance > REACH * came:
        return None
    return current[-1].work + distance / -slope, False


@dataclass
class Versus:
    """A challenger against the favourite at the same gap (:func:`versus`).

    ``gap``: the smaller of their current gaps, or ``tol``; ``ratio``: the challenger's work
    to reach it over the favourite's; ``ahead``: which of the two is already there (its work
    measured; the other's is its own line's extrapolation, or, beyond the line's reach, its
    work so far: then ``bounded`` and ``ratio`` only bounds the true one, from below when the
    challenger lags, from above when the favourite does); ``challenger_remaining`` and
    ``favourite_remaining``: predicted passes to ``tol``: the one ahead from its own line (as
    :func:`predict`), the other its way to ``gap`` plus the one ahead's remaining scaled by
    ``ratio`` (from ``gap`` down, it is taken to keep its measured pace relative to the other;
    where the one ahead has stopped falling, its own line; a favourite behind in gap: the
    smaller of that and its own line's remaining, the benefit of the doubt to the one that
    leads, whose trajectory is the longer).  A gap need not be under 1 to be
    compared: mfn's on news20 made binary, squared hinge, is over 100 for 270 passes."""

    gap: float
    ratio: float
    ahead: str  # "challenger" or "favourite"
    bounded: bool
    challenger_remaining: float
    favourite_remaining: float

    @property
    def lead_taken(self) -> bool:
        """The challenger is to take the lead: it needs (or needed) under 1 /
        :data:`SWAP_MARGIN` of the favourite's work to the same gap, and its predicted
        remaining work to ``tol`` is under 1 / :data:`SWAP_MARGIN` of the favourite's (a
        favourite near ``tol`` keeps the lead); never on a lower bound of its own work."""
        if self.bounded and self.ahead == "favourite":
            return False
        return (SWAP_MARGIN * self.ratio < 1.0
                and SWAP_MARGIN * self.challenger_remaining < self.favourite_remaining)

    @property
    def behind(self) -> bool:
        """The challenger needs (or needed) over :data:`BEHIND` times the favourite's work to
        the same gap; never on a bound of the favourite's own work."""
        if self.bounded and self.ahead == "challenger":
            return False
        return self.ratio > BEHIND


def versus(favourite: list[_Point], challenger: list[_Point], tol: float) -> Versus | None:
    """Compare two candidates by the work each needs to reach the *same* gap, the smaller of
    their current ones (or ``tol``), each on its own trajectory (:func:`work_to`): the one
    already there measured, the other extrapolated only down to it.  (Until 2026-12-08 each
    one's log-gap line was extrapolated to ``tol`` independently, and a fresh challenger's
    first two or three steep records made it look fast: on 600 rows of dna, Crammer-Singer,
    1e-6, the lead went from ocas to tca to gca2, each about as fast alone, 2.49 times the best
    alone.)  None: a one-vs-rest run (the classes' gaps are not comparable; :func:`predict`
    orders those), or too few records to tell."""
    fav, cha = _current(favourite), _current(challenger)
    if len(fav) < 2 or len(cha) < 2 or favourite[-1].n_subproblems > 1 \
            or challenger[-1].n_subproblems > 1:
        return None
    gap = max(tol, min(fav[-1].gap, cha[-1].gap))
    challenger_ahead = cha[-1].gap <= fav[-1].gap
    lead, lag = (cha, fav) if challenger_ahead else (fav, cha)
    lead_work = work_to(lead, gap)[0]
    found = work_to(lag, gap)
    bounded = found is None or not math.isfinite(found[0])
    lag_work = lag[-1].work if bounded else found[0]
    if lead_work <= 0 or lag_work <= 0:
        return None
    lead_remaining = predict(lead, tol)
    lead_remaining = math.inf if lead_remaining is None else lead_remaining
    scale = lag_work / lead_work
    if math.isfinite(lead_remaining):
        lag_remaining = (lag_work - lag[-1].work) + scale * lead_remaining
    else:  # the one ahead has stopped falling: the other's own line, if it falls
        own = predict(lag, tol)
        lag_remaining = math.inf if own is None else own
    if challenger_ahead:
        # the favourite's own line may promise less: the lead changes only if the challenger
        # beats both (alm on news20 made binary, squared hinge, its gap 0.9999 after 8 passes
        # where mfn's was 388 after 220, is ahead at a gap of 1 and 8e5 passes from tol on
        # its line; mfn's own line says 925)
        own = predict(lag, tol)
        if own is not None:
            lag_remaining = min(lag_remaining, own)
        return Versus(gap, 1.0 / scale, "challenger", bounded, lead_remaining, lag_remaining)
    return Versus(gap, scale, "favourite", bounded, lag_remaining, lead_remaining)


class _Lane:
    """A candidate's thread and its monitor: charges each record's passes to the candidate,
    queues the record for the calling thread, and pauses once the slice is spent."""

    def __init__(self, index: int, entrant: Entrant, race: _Race, start: _Lane | None = None):
        self.index = index
        self.start_from = start  # the ended candidate whose point this one starts from
        self.entrant = entrant
        self.name = entrant.candidate.name
        self.race = race
        self.work = 0.0
        self.points: list[_Point] = []
        self.slice_end = 0.0
        self.stop: str | None = None
        self.abandoned = False  # another candidate won: unwind instead of finishing
        self.resume = threading.Event()
        self.fit: Fit | None = None
        self.error: BaseException | None = None
        self.warm_from: str | None = None
        self.done = False
        self.seconds = 0.0
        self.slices = 0
        self.thread: threading.Thread | None = None
        self.outcome: str | None = None
        self.here = False  # running on the calling thread (run_here)
        self.schedule: _Schedule | None = None  # the race's decisions, for a lane run here
        self.ask_at = 0.0  # when run_here next asks the caller's monitor
        self.elsewhere = 0.0  # seconds a lane run here spent running the others' slices

    # -- the candidate's thread ------------------------------------------------------------
    def report(self, record: IterationRecord) -> None:
        race = self.race
        self.work += record_passes(record.extras, race.n, race.nnz, race.d)
        extras = record.extras
        self.points.append(_Point(self.work, record.optimality,
                                  int(extras.get("subproblem", 0)),
                                  int(extras.get("n_subproblems", 1))))
        # forwarded by the calling thread when it next wakes (a slice's end, or its poll):
        # no hand-over between the threads per record
        race.records.append((self, IterationRecord(
            record.iteration, race.clock(), record.objective, record.optimality,
            dict(extras))))
        last_class = self.points[-1].subproblem >= self.points[-1].n_subproblems - 1
        certified = last_class and record.optimality <= race.tol
        if self.stop is None and self.work >= self.slice_end and not certified:
            if self.here:  # the calling thread runs the race from here (hand_over)
                self.schedule.hand_over(self)
                return
            self.resume.clear()
            race.events.put(("paused", self))
            self.resume.wait()
        if self.abandoned:
            raise _Abandoned

    def stop_reason(self) -> str | None:
        if self.abandoned:
            raise _Abandoned
        if self.here and time.perf_counter() >= self.ask_at:  # as a lane's poll would
            self.ask_at = time.perf_counter() + POLL_S
            self.race.drain()
            self.race.ask_caller(self)
        return self.stop

    def start(self) -> None:
        """The candidate's thread, waiting for its first slice."""
        start_model = None if self.start_from is None else self.start_from.fit.model
        self.thread = threading.Thread(target=self.main, args=(start_model,),
                                       daemon=True, name=f"auto-{self.name}")
        self.thread.start()

    def run_here(self, passes: float, schedule: _Schedule) -> None:
        """Run the candidate on the calling thread, its first slice ``passes``: when the slice
        is spent uncertified, its ``report`` hands the calling thread over to the race
        (:meth:`_Schedule.hand_over`), which runs the others' slices from there and returns
        when the schedule gives this candidate its next slice, so it goes on from its own
        state, as a paused lane does, never run again from scratch."""
        self.here, self.slice_end, self.slices, self.schedule = True, passes, 1, schedule
        begin = time.perf_counter()
        try:
            with thread_count(self.race.threads):
                self.fit, _ = _fit(self.race.fit_for, self.race.dataset, self.entrant, self)
        except _Abandoned:
            pass  # another candidate won while this one was handed over
        except Exception as exc:  # noqa: BLE001 - a candidate that broke leaves the race
            self.error = exc
        finally:
            self.seconds = time.perf_counter() - begin - self.elsewhere
            self.done = True
        self.race.drain()
        self.race.ask_caller(self)

    def main(self, start_model) -> None:
        self.resume.wait()
        try:
            with thread_count(self.race.threads):
                self.fit, warm = _fit(self.race.fit_for, self.race.dataset, self.entrant,
                                      self, start_model)
            if start_model is not None and warm:
                self.warm_from = self.start_from.name
        except _Abandoned:
            pass  # another candidate won; this one's point is not wanted
        except Exception as exc:  # noqa: BLE001 - a candidate that broke leaves the race
            self.error = exc
        finally:
            self.done = True
            self.race.events.put(("done", self))

    # -- the calling thread --------------------------------------------------------------
    @property
    def converged(self) -> bool:
        return self.fit is not None and _status(self.fit) == Termination.CONVERGED

    def remaining(self) -> float:
        """Predicted remaining passes (inf when unknown: ordered last)."""
        remaining = predict(self.points, self.race.tol)
        return math.inf if remaining is None else remaining

    @property
    def judged(self) -> bool:
        """Whether the lane has run long enough to be judged behind: a slice and a
        prediction of its own."""
        return (self.work >= MIN_PASSES and len(self.points) >= FIT_RECORDS
                and predict(self.points, self.race.tol) is not None)


@dataclass
class _Race:
    dataset: Dataset
    fit_for: FitFor
    threads: int
    tol: float
    monitor: Monitor
    n: int = 0
    nnz: int = 0
    d: int = 0
    events: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    records: collections.deque = field(default_factory=collections.deque)
    clock: Stopwatch = field(default_factory=Stopwatch)
    forwarded: int = 0
    caller_stop: str | None = None

    def forward(self, lane: _Lane, record: IterationRecord) -> None:
        self.forwarded += 1
        extras = record.extras
        extras["candidate"] = lane.name
        extras.setdefault("solver_iteration", record.iteration)
        extras["work_passes"] = round(lane.work, 3)
        self.monitor.report(IterationRecord(self.forwarded, record.elapsed, record.objective,
                                            record.optimality, extras))

    def run_slice(self, lane: _Lane, passes: float) -> None:
        """Let ``lane`` run until its work reaches ``passes`` more (or it ends, or it is
        stopped), forwarding its records and asking the caller's monitor meanwhile."""
        lane.slice_end = lane.work + passes
        lane.slices += 1
        begin = time.perf_counter()
        if lane.thread is None:
            lane.start()
        lane.resume.set()
        while True:
            try:
                _, source = self.events.get(timeout=POLL_S)
            except queue.Empty:
                self.drain()
                self.ask_caller(lane)
                continue
            if source is lane:  # paused or done
                break
        lane.seconds += time.perf_counter() - begin
        self.drain()
        self.ask_caller(lane)

    def drain(self) -> None:
        """Forward the records the lanes have reported, in order."""
        while self.records:
            self.forward(*self.records.popleft())

    def ask_caller(self, lane: _Lane) -> None:
        if self.caller_stop is None:
            self.caller_stop = self.monitor.stop_reason()
        if self.caller_stop is not None and lane.stop is None:
            lane.stop = self.caller_stop

    def end(self, lane: _Lane, reason: str, abandon: bool = False) -> None:
        """Stop a paused lane and let it return its point (its family's stop), or with
        ``abandon`` (another candidate won: its point is not wanted) let it unwind at once."""
        if lane.done or (lane.thread is None and not lane.here):
            return
        lane.stop = reason
        lane.abandoned = abandon
        if lane.here:  # the calling thread is inside its report: it stops when it returns there
            return
        while not lane.done:
            self.run_slice(lane, math.inf)


def _status(fit: Fit) -> Termination:
    return Termination.worst(s.status for s in fit.subproblems)


def _objective(fit: Fit) -> float:
    return float(sum(s.objective for s in fit.subproblems))


def _summary(lane: _Lane, threads: int) -> dict[str, Any]:
    entrant, fit = lane.entrant, lane.fit
    summary = {"candidate": lane.name, "solver": entrant.candidate.solver,
               "seconds": round(lane.seconds, 6), "threads": threads,
               "work_passes": round(lane.work, 3), "slices": lane.slices,
               "outcome": lane.outcome,
               "predicted_seconds": entrant.predicted}
    if fit is not None:
        summary.update(status=str(_status(fit)), objective=_objective(fit),
                       iterations=sum(s.iterations for s in fit.subproblems))
    elif lane.abandoned:
        summary.update(status="abandoned", iterations=len(lane.points))
    if lane.error is not None:
        summary["error"] = f"{type(lane.error).__name__}: {lane.error}"
    return summary


def run(dataset: Dataset, ranking: Ranking, tol: float, monitor: Monitor | None,
        fit_for: FitFor, threads: int | None = None) -> Outcome:
    """Train ``dataset`` with the ranking's candidates as a portfolio (module docstring) on
    ``threads`` Numba threads (None: the calling thread's).  ``fit_for(spec, params)`` is the
    fit procedure of a candidate (``solvers.train.fit_handler``'s)."""
    monitor = monitor if monitor is not None else NullMonitor()
    threads = numba.get_num_threads() if threads is None else threads
    entrants = ranking.entrants
    if len(entrants) == 1:
        fit, runs = _single(dataset, entrants[0], monitor, fit_for, threads)
        winner, strategy = entrants[0], "single"
    else:
        fit, winner, runs = _race(dataset, entrants, tol, monitor, fit_for, threads)
        strategy = "race"
    choice = ranking.choice(tol, winner)
    choice.strategy = strategy
    choice.runs = runs
    return Outcome(fit, winner, choice)


class _Tagged:
    """The only candidate's monitor: its records tagged with its name."""

    def __init__(self, name: str, target: Monitor):
        self.name, self.target = name, target

    def report(self, record: IterationRecord) -> None:
        extras = dict(record.extras)
        extras["candidate"] = self.name
        self.target.report(IterationRecord(record.iteration, record.elapsed, record.objective,
                                           record.optimality, extras))

    def stop_reason(self) -> str | None:
        return self.target.stop_reason()


def _single(dataset: Dataset, entrant: Entrant, monitor: Monitor, fit_for: FitFor,
            threads: int) -> tuple[Fit, list[dict[str, Any]]]:
    begin = time.perf_counter()
    with thread_count(threads):
        fit, _ = _fit(fit_for, dataset, entrant, _Tagged(entrant.candidate.name, monitor))
    status = _status(fit)
    return fit, [{"candidate": entrant.candidate.name, "solver": entrant.candidate.solver,
                  "seconds": round(time.perf_counter() - begin, 6), "threads": threads,
                  "outcome": "won" if status == Termination.CONVERGED else f"ended {status}",
                  "predicted_seconds": entrant.predicted, "status": str(status),
                  "objective": _objective(fit),
                  "iterations": sum(s.iterations for s in fit.subproblems)}]


class _Schedule:
    """The race's decisions (the module docstring's steps 2-4): which lane runs its next
    slice and for how many passes, and what follows each slice (the winner, a new favourite,
    the behind stopped).  Run by the calling thread, at the top of :func:`_race` or, while a
    candidate runs on the calling thread, from inside that candidate's ``report``
    (:meth:`hand_over`): the same decisions in the same order either way."""

    def __init__(self, race: _Race, entrants: list[Entrant]):
        self.race = race
        self.field, rest = _field(entrants)
        self.waiting = self.field + rest
        self.lanes: list[_Lane] = []
        self.favourite: _Lane | None = None
        self.winner: _Lane | None = None
        self.begun = False  # the favourite's first slice is over and the field has entered

    def start(self, start_from: _Lane | None = None) -> _Lane:
        """The next waiting candidate's lane (its thread starts with its first slice), to
        start from ``start_from``'s point where it warm-starts."""
        lane = _Lane(len(self.lanes), self.waiting.pop(0), self.race, start_from)
        self.lanes.append(lane)
        return lane

    def settle(self, lane: _Lane) -> None:
        """After a slice: the lane's verdict if it ended (the winner, or out)."""
        if not lane.done:
            return
        if lane.converged:
            lane.outcome = "won"
            self.winner = lane
            return
        if lane.error is not None:
            lane.outcome = "failed"
        elif lane.outcome is None:
            lane.outcome = f"stopped: {lane.stop}" if lane.stop is not None else \
                f"ended {_status(lane.fit)}"

    def after(self, lane: _Lane) -> None:
        """What follows a slice of ``lane``: after the favourite's first one, the field
        enters (unless it won); after any other, the favourite is chosen again and the
        challengers behind it stop."""
        self.settle(lane)
        if not self.begun:
            self.begun = True
            for _ in range(len(self.field) - 1):
                if self.winner is None:
                    self.start()
            return
        alive = [other for other in self.lanes if not other.done]
        if self.winner is None and alive:
            self.favourite = _favourite(self.favourite, alive)
            _drop_the_behind(self.race, self.lanes, self.favourite)

    def next_turn(self) -> tuple[_Lane, float] | None:
        """The lane to run next and its slice in passes; None when the race is over (a
        winner, the caller's stop, or no candidate left)."""
        while self.winner is None and self.race.caller_stop is None:
            alive = [lane for lane in self.lanes if not lane.done]
            if not alive:
                if not self.waiting:
                    return None
                self.start(_best_point(self.lanes))
                continue
            favourite = self.favourite = _favourite(self.favourite, alive)
            challengers = [lane for lane in alive if lane is not favourite]
            spent = sum(lane.work for lane in self.lanes if lane is not favourite)
            share = CHALLENGER_SHARE * max(favourite.work, MIN_PASSES)
            hungry = [lane for lane in challengers if spent < share]
            if hungry:  # a challenger's slice doubles its work within the share left
                lane = min(hungry, key=lambda lane: (lane.work, lane.index))
                return lane, max(MIN_PASSES, min(lane.work, share - spent))
            return favourite, max(MIN_PASSES, favourite.work)
        return None

    def run(self) -> None:
        """The race from the calling thread's top: slices until it is over."""
        while (turn := self.next_turn()) is not None:
            lane, passes = turn
            self.race.run_slice(lane, passes)
            self.after(lane)

    def hand_over(self, here: _Lane) -> None:
        """Called from inside the ``report`` of ``here``, a candidate running on the calling
        thread, once its slice is spent: the race goes on from there, the other lanes' slices
        run (each on its paused thread), and this returns when the schedule gives ``here``
        its next slice (it goes on from its own state), or with ``here.stop`` set (behind,
        the caller's stop: its family's ordinary stop follows); when another candidate
        certifies, ``here`` unwinds (:class:`_Abandoned`)."""
        race = self.race
        begin = time.perf_counter()
        race.drain()
        race.ask_caller(here)
        try:
            self.after(here)
            while here.stop is None:
                turn = self.next_turn()
                if turn is None:
                    break
                lane, passes = turn
                if lane is here:
                    here.slice_end = here.work + passes
                    here.slices += 1
                    return
                race.run_slice(lane, passes)
                self.after(lane)
        finally:
            here.elsewhere += time.perf_counter() - begin
        if self.winner is not None:
            here.abandoned = True
            here.outcome = f"stopped: {self.winner.name} certified the gap first"
            raise _Abandoned
        if here.stop is None:
            here.stop = race.caller_stop or "the race ended"


def _race(dataset: Dataset, entrants: list[Entrant], tol: float, monitor: Monitor,
          fit_for: FitFor, threads: int) -> tuple[Fit, Entrant, list[dict[str, Any]]]:
    race = _Race(dataset, fit_for, threads, tol, monitor, dataset.n_samples, dataset.nnz,
                 dataset.n_features)
    schedule = _Schedule(race, entrants)
    lanes = schedule.lanes
    passes = first_slice(entrants, dataset)
    first = schedule.favourite = schedule.start()
    try:
        if passes * max(dataset.nnz + dataset.n_samples, 1) <= HERE_SECONDS * ENTRIES_PER_SECOND:
            first.run_here(passes, schedule)  # the race runs from inside its report
        else:
            race.run_slice(first, passes)
        schedule.after(first)
        schedule.run()
    finally:
        winner = schedule.winner
        for lane in lanes:
            if not lane.done and lane.thread is not None:
                reason = race.caller_stop or (
                    f"{winner.name} certified the gap first" if winner is not None
                    else "the race ended")
                if lane.outcome is None:
                    lane.outcome = f"stopped: {reason}"
                # after a winner its point is not wanted; otherwise (the caller's stop, the
                # race ended) the best point so far may be the result
                race.end(lane, reason, abandon=winner is not None)
        race.drain()  # the records still queued
        for lane in lanes:
            if lane.thread is not None:
                lane.thread.join()
    ended = [lane for lane in lanes if lane.fit is not None]
    if not ended:  # every candidate raised: the first one's error is the run's
        raise next(lane.error for lane in lanes if lane.error is not None)
    if winner is None:  # nobody certified: the best status, then the lowest objective
        order = list(Termination)
        winner = min(ended, key=lambda lane: (order.index(_status(lane.fit)),
                                              _objective(lane.fit), lane.index))
        winner.outcome = "kept: no candidate converged"
    if winner.warm_from is not None:
        winner.outcome += f" (started from {winner.warm_from}'s point)"
    ran = [lane for lane in lanes if lane.thread is not None or lane.here]
    for lane in ran:
        if lane.outcome is None:
            lane.outcome = f"ended {_status(lane.fit)}" if lane.fit is not None else "failed"
    return winner.fit, winner.entrant, [_summary(lane, threads) for lane in ran]


def _field(entrants: list[Entrant]) -> tuple[list[Entrant], list[Entrant]]:
    """The entrants that race at once, and the rest: the first :data:`FIELD` the rule does
    not predict at over :data:`PRIOR_BEHIND` times the first one's seconds (one iteration of
    such a candidate can outlast the whole race: alm's exact CGLS step on news20, 1,598 passes and
    5.5 s before its first record), and the rest, in the ranking's order, which run when
    every candidate of the field has ended uncertified.  Where the first one has a
    prediction, a candidate the rule never measured on such problems has none to bound its
    first iteration by, and waits with the rest (newton on news20 made binary, squared hinge:
    its first record came after 18 CG iterations, 1.0 s at load 8 where its count said 39
    passes, 55 ms a CG iteration against mfn's 20 ms: the challengers' whole share, and
    mfn, the wrong favourite, ran 550 passes before dual_cd had its slices)."""
    lead = entrants[0].predicted

    def plausible(entrant: Entrant) -> bool:
        return lead is None or (entrant.predicted is not None
                                and entrant.predicted <= PRIOR_BEHIND * lead)

    field = [e for e in entrants if plausible(e)][:FIELD]
    return field, [e for e in entrants if not any(e is f for f in field)]


def first_slice(entrants: list[Entrant], dataset: Dataset) -> float:
    """The favourite's (the ranking's first one's) first slice in passes:
    :data:`FIRST_SLICE_SHARE` of the rule's predicted seconds at :data:`ENTRIES_PER_SECOND`,
    but where the rule predicts a challenger of the field (:func:`_field`) at fewer seconds
    than the favourite (it ranks by the candidates' times over the fastest's on the
    neighbours, and predicts by their median seconds: the two disagree), at most
    :data:`UNSURE_SHARE` of that challenger's seconds; at least :data:`MIN_PASSES`."""
    field, _ = _field(entrants)
    predicted = field[0].predicted or 0.0
    seconds = FIRST_SLICE_SHARE * predicted
    rivals = [e.predicted for e in field[1:] if e.predicted is not None]
    if rivals and min(rivals) < predicted:
        seconds = min(seconds, UNSURE_SHARE * min(rivals))
    passes = seconds * ENTRIES_PER_SECOND / max(dataset.nnz + dataset.n_samples, 1)
    return max(MIN_PASSES, passes)


def _favourite(current: _Lane, alive: list[_Lane]) -> _Lane:
    """The candidate fed most from now on: ``current``, unless it has ended or a judged
    challenger takes the lead (:attr:`Versus.lead_taken`: under 1 / :data:`SWAP_MARGIN` of
    its work to the same gap, and of its remaining work to ``tol``; a one-vs-rest run: a
    predicted remaining work under 1 / :data:`SWAP_MARGIN` of the favourite's)."""
    judged = [lane for lane in alive if lane.judged and lane is not current]
    if current.done:
        best = min(judged, key=lambda lane: (lane.remaining(), lane.index), default=None)
        return best or min(alive, key=lambda lane: (lane.work, lane.index))
    taking, ovr = [], []
    for lane in judged:
        against = versus(current.points, lane.points, lane.race.tol)
        if against is None:
            ovr.append(lane)
        elif against.lead_taken:
            taking.append((against.challenger_remaining, lane.index, lane))
    if taking:
        return min(taking)[2]
    best = min(ovr, key=lambda lane: (lane.remaining(), lane.index), default=None)
    if best is not None and SWAP_MARGIN * best.remaining() < current.remaining():
        return best
    return current


def _drop_the_behind(race: _Race, lanes: list[_Lane], favourite: _Lane) -> None:
    """Stop every judged challenger behind the favourite: one that needs (or needed) over
    :data:`BEHIND` times its work to the same gap (:attr:`Versus.behind`), or, one-vs-rest,
    is predicted to need over :data:`BEHIND` times its total work (one whose gap does not
    fall is not stopped on its line: a homotopy's or a cutting plane's can stay flat a while
    before it falls; it keeps its share)."""
    alive = [lane for lane in lanes if not lane.done]
    if len(alive) < 2 or favourite.done:
        return
    best = favourite.work + favourite.remaining()
    for lane in alive:
        if lane is favourite or not lane.judged:
            continue
        against = versus(favourite.points, lane.points, race.tol)
        if against is not None:
            if against.behind:
                lane.outcome = (f"stopped: behind ({against.ratio:.3g} times "
                                f"{favourite.name}'s work to a gap of {against.gap:.3g})")
                race.end(lane, "behind another candidate's certified progress")
            continue
        total = lane.work + lane.remaining()
        if not math.isfinite(best) or not math.isfinite(total) or total <= BEHIND * best:
            continue
        lane.outcome = (f"stopped: behind (predicted {total:.3g} passes to tol, "
                        f"{favourite.name} {best:.3g})")
        race.end(lane, "behind another candidate's certified progress")


def _best_point(lanes: list[_Lane]) -> _Lane | None:
    """The ended candidate whose point the next one starts from: the lowest objective."""
    ended = [lane for lane in lanes if lane.fit is not None]
    return min(ended, key=lambda lane: (_objective(lane.fit), lane.index)) if ended else None


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
