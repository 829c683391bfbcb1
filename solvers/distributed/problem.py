"""The row operator of a binary problem over partitions (``docs/design.md`` section 3.9).

:class:`DistributedBinaryProblem` is :class:`solvers.problems.BinaryProblem` posed on every
partition of a :class:`~solvers.distributed.dataset.DistributedDataset`: each worker holds
its partition's problem (labels +1/-1 for the class asked, costs C_i, the bias column of
value s) and the per-example vectors of the solve, named by :class:`RemoteVector` handles.
The driver holds parameter vectors (d + 1 entries) and scalars only.  Every evaluation is one
round (:meth:`~solvers.distributed.cluster.PartitionGroup.map`): the same kernel the single
machine runs, on each partition's rows, and a sum of the partitions' risks, cuts (d-vectors)
or counts.  The problem is separable over examples, so these sums are the single machine's
values up to the order of floating-point additions.

The exact line searches (OCAS's over a hinge's jumps, Appendix A's over a piecewise-linear
slope) are :func:`breakpoint_root`: a distributed selection over the breakpoints the workers
keep, which moves a bounded number of scalars per round.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass

import numpy as np
from numba import njit

from solvers import config
from solvers.core.linalg import dot
from solvers.core.linesearch import piecewise_linear_root, piecewise_linear_root_jumps
from solvers.core.sparse import TimedChoice
from solvers.distributed.cluster import Partition, PartitionGroup, reduce_sum
from solvers.distributed.dataset import DistributedDataset
from solvers.problems import BinaryProblem
from solvers.problems.binary import _balancing_events

_SLOTS = itertools.count()


class RemoteVector:
    """A per-example vector kept on the workers (one piece per partition), by name.  When the
    handle is collected the pieces are dropped with the next round."""

    def __init__(self, owner: DistributedBinaryProblem, name: str):
        self.name = name
        weakref.finalize(self, owner._dead.append, name)

    def __repr__(self) -> str:
        return f"RemoteVector({self.name!r})"


# -- worker side ----------------------------------------------------------------------------


def _pose(part: Partition, positive, C, loss, bias, bias_scale, p):
    """The partition's BinaryProblem for class ``positive`` against the rest."""
    data = part.data
    y = np.where(data.y == positive, 1.0, -1.0)
    part.state.clear()
    part.state["problem"] = BinaryProblem(data.X, y, C=C, loss=loss, bias=bias,
                                          bias_scale=bias_scale, p=p,
                                          sample_weight=data.sample_weight)
    part.state["vectors"] = {}
    return int(y.shape[0])


def _drop(part: Partition, names) -> None:
    vectors = part.state.get("vectors", {})
    for name in names:
        vectors.pop(name, None)


def _with_pending(part: Partition, drop, pending, function, *args):
    """Drop the collected vectors, make the deferred ones (``on_ray``'s interpolations and
    ``margins``' products, in the order asked), then the round's ``function``."""
    _drop(part, drop)
    vectors = part.state["vectors"]
    for kind, *what in pending:
        if kind == "ray":
            a, b, t, out = what
            va, vb = vectors[a], vectors[b]
            vectors[out] = va + t * (vb - va)
        else:  # "margins" at a point, by the oracle's own pass (no cut)
            beta, out = what
            _oracle(part, beta, None, False, out)
    return function(part, *args)


def _oracle(part: Partition, beta, given, want_cut, out, loss_at=None):
    """(R, cut, loss sum) of the partition's rows at beta; its margins stored as ``out`` (or
    taken from ``given``); the loss sum at the margins ``loss_at`` (``out`` itself allowed),
    or None.  The oracle's serial or parallel form (the worker's Numba threads) is chosen by
    timing, one choice per kind of call, as the single machine's cutting planes do
    (:class:`solvers.core.sparse.TimedChoice`).

    With the margins ``given`` the kernel reads only beta's length (R and the cut are
    functions of the margins), so the driver sends ``beta`` None and a kept zero vector
    stands in for it: OCAS's cut at w_c (interpolated margins) moves one d-vector a
    partition, the cut coming back, not two (issue 51)."""
    problem = part.state["problem"]
    vectors = part.state["vectors"]
    margins = vectors[given] if given is not None else None
    if beta is None:
        if margins is None:
            raise ValueError("the oracle needs beta or the margins at beta")
        beta = part.state.get("length_only")
        if beta is None:
            beta = part.state["length_only"] = problem.zeros()
    choices = part.state.setdefault("oracle_choices", {})
    key = (given is None, bool(want_cut))
    if key not in choices:
        choices[key] = TimedChoice(problem.oracle_parallel_allowed())
    risk, cut, margins = choices[key].run(
        lambda parallel: problem.risk_oracle(beta, margins, want_cut, parallel))
    vectors[out] = margins
    return risk, cut, None if loss_at is None else _loss_sum(part, loss_at)


def _loss_sum(part: Partition, margins):
    problem = part.state["problem"]
    return problem.loss_function.sum(1.0 - part.state["vectors"][margins], problem.cost)


def _hinge_ray(part: Partition, kernel, mb, mt, quantiles, small, window=None):
    """OCAS's breakpoints on the ray between the margins ``mb`` and ``mt`` (the family's
    kernel, sent once and kept: :func:`solvers.cutting_plane.search.hinge_ray_breakpoints`),
    kept here for :func:`breakpoint_root`; returns the slope at 0+ and the first round's
    summary (:func:`keep_breakpoints`: those in [0, ``window``] when given)."""
    if kernel is not None:
        part.state["ray_kernel"] = kernel
    kernel = part.state["ray_kernel"]
    problem = part.state["problem"]
    vectors = part.state["vectors"]
    slope, bp, jump = kernel(vectors[mb], vectors[mt], problem.cost)
    return slope, keep_breakpoints(part, bp, jump, jump, quantiles, small, window=window)


@dataclass
class WindowAnswer:
    """A partition's first answer when the driver expects the root in [0, ``window``]:
    every breakpoint there (``exact``: values and updates, the updates of jumps sent once)
    and a :func:`_summary` of those above it (``beyond``: a few points, relative to the
    window's end).  Breakpoints above the root never change it, so when the summed slope is
    >= 0 at the window's end the driver finishes with these alone (no round); otherwise the
    bracket (window, beyond's points) goes on as a selection."""

    window: float
    exact: tuple
    beyond: tuple


def keep_breakpoints(part: Partition, bp, dl, dr, quantiles: int, small: int,
                     key: str = "breakpoints", window: float | None = None):
    """Store breakpoints with their updates (as ``key``: a round may keep several sets, of
    which the driver searches one); return the first round's summary of them:
    :func:`_summary` of the bracket (0, inf), or with ``window`` a :class:`WindowAnswer`
    (unless the window holds more than ``small`` of them).  ``dr is dl`` (jumps: the
    slope's line moves in parallel) is kept and sent once.

    Without a window (the interior point's balance) the set is sorted with the prefix sums
    of its updates, and every round's answer is a few searches in it.  With a window (OCAS,
    mfn) nothing is sorted but what goes back: the window's breakpoints when they are few
    enough, the breakpoints of a bracket narrow enough later; the points of a wider bracket
    are order statistics by selection and their sums one pass (:func:`_unsorted_summary`),
    and each round keeps only the breakpoints of the bracket it answered.  On 2 M rows a
    partition made 10^5-10^6 breakpoints an OCAS iteration, whose sort was work the single
    machine's O(m) selection does not do (issue 51)."""
    same = dr is dl
    if window is not None:
        kept = _Unsorted(bp, dl, dr)
        # the window's breakpoints in (0, U], as the bracket (0, inf) of the selection
        # counts them; the rest as a few points
        inside = (bp > 0.0) & (bp <= window)
        if int(np.count_nonzero(inside)) <= small:
            few = max(min(quantiles, 16), 2)
            part.state[key] = kept
            wb, wl = bp[inside], dl[inside]
            order = np.argsort(wb, kind="stable")  # the whole set's stable order, restricted
            exact = (wb[order], wl[order], None if same else dr[inside][order])
            beyond, _ = _unsorted_summary(kept, window, window, np.inf, few, few)
            return WindowAnswer(float(window), exact, beyond)
        answer, part.state[key] = _unsorted_summary(kept, 0.0, 0.0, np.inf, quantiles, small)
        return answer
    order = np.argsort(bp, kind="stable")
    bp, dl = bp[order], dl[order]
    dr = dl if same else dr[order]
    sums_l = np.concatenate(([0.0], np.cumsum(dl)))
    sums_r = sums_l if same else np.concatenate(([0.0], np.cumsum(dr)))
    part.state[key] = (bp, dl, dr, sums_l, sums_r)
    return _summary(part.state[key], 0.0, 0.0, np.inf, quantiles, small)


@dataclass
class _Unsorted:
    """Breakpoints kept as made, with their updates (``dr is dl`` for jumps)."""

    bp: np.ndarray
    dl: np.ndarray
    dr: np.ndarray


def _unsorted_summary(kept: _Unsorted, passed_from, a, b, quantiles: int, small: int
                      ) -> tuple[tuple, _Unsorted]:
    """:func:`_summary`'s answer for the bracket (a, b) from unsorted breakpoints, and the
    breakpoints a later round can still ask for (those in (a, b): the driver's brackets
    only narrow).  One compiled pass sums the updates passed, (passed_from, a], and copies
    out the bracket's breakpoints (:func:`_bracket_pass`); when they are at most ``small``
    they go back sorted, else points among them with the summed updates of the bracket's
    breakpoints below and at each (:func:`_point_sums`, one more pass).  The points are
    the bracket's least and greatest breakpoints (the bounds of :func:`_slope_bounds` need
    both ends) and quantiles of an evenly strided sample of the rest, at least 16 a point:
    any breakpoints serve as points, the sums at them being exact; quantiles keep about
    two gaps' worth for the next round.  O(m) where a sort costs O(m log m); measured on
    200,000 rows a partition, 9.5 s of a 34 s OCAS solve in NumPy's selection and searches
    (issue 51), now a few milliseconds a round."""
    bp, dl, dr = kept.bp, kept.dl, kept.dr
    same = dr is dl
    pl, pr, values, left, right = _bracket_pass(bp, dl, dl if same else dr, same,
                                                float(passed_from), float(a), float(b))
    if same:
        right = left
    passed = (pl, pl if same else pr)
    rest = _Unsorted(values, left, right)
    count = int(values.shape[0])
    if count <= small:
        order = np.argsort(values, kind="stable")
        return (passed, count, None, (values[order], left[order],
                                      None if same else right[order])), rest
    m = min(max(quantiles, -(-4 * count // small)), small)
    sample = np.sort(values[::max(1, count // (16 * m))])
    inner = sample[np.linspace(0, sample.shape[0] - 1, m).astype(np.int64)]
    points = np.unique(np.concatenate(([values.min()], inner, [values.max()])))
    lt_l, le_l, lt_r, le_r = _point_sums(values, left, right, same, points)
    if same:
        lt_r, le_r = lt_l, le_l
    return (passed, count, (points, lt_l, lt_r, le_l, le_r), None), rest


@njit(cache=True, nogil=True)
def _bracket_pass(bp, dl, dr, same, passed_from, a, b):
    """(sum of dl, of dr over the breakpoints in (passed_from, a], and the breakpoints in
    (a, b) with their dl and dr, in their order), in one pass (dr not read when
    ``same``)."""
    n = bp.shape[0]
    values = np.empty(n)
    left = np.empty(n)
    right = np.empty(0 if same else n)
    pl = 0.0
    pr = 0.0
    count = 0
    for i in range(n):
        v = bp[i]
        if passed_from < v <= a:
            pl += dl[i]
            if not same:
                pr += dr[i]
        elif a < v < b:
            values[count] = v
            left[count] = dl[i]
            if not same:
                right[count] = dr[i]
            count += 1
    return (pl, pr, values[:count].copy(), left[:count].copy(),
            right[:count].copy() if not same else right)


@njit(cache=True, nogil=True)
def _point_sums(values, left, right, same, points):
    """For each of the sorted ``points``: the sums of ``left`` (and ``right``) over the
    breakpoints below it and at most it: (lt_l, le_l, lt_r, le_r)."""
    m = points.shape[0]
    below_l = np.zeros(m + 1)
    upto_l = np.zeros(m + 1)
    below_r = np.zeros(m + 1)
    upto_r = np.zeros(m + 1)
    for i in range(values.shape[0]):
        v = values[i]
        # j = the points <= v (v is below point j on), by bisection; k = the points < v (v
        # is at most point k on): j - 1 when v is a point (the points are distinct)
        lo, hi = 0, m
        while lo < hi:
            mid = (lo + hi) >> 1
            if points[mid] <= v:
                lo = mid + 1
            else:
                hi = mid
        j = lo
        k = j - 1 if j > 0 and points[j - 1] == v else j
        below_l[j] += left[i]
        upto_l[k] += left[i]
        if not same:
            below_r[j] += right[i]
            upto_r[k] += right[i]
    lt_l = np.cumsum(below_l)[:m]
    le_l = np.cumsum(upto_l)[:m]
    lt_r = np.cumsum(below_r)[:m]
    le_r = np.cumsum(upto_r)[:m]
    return lt_l, le_l, lt_r, le_r


def _window_points(answer: WindowAnswer) -> tuple:
    """A :class:`WindowAnswer` as a :func:`_summary` of the bracket (0, inf) with points:
    every breakpoint of the window (exact sums at each) and the points above it (their sums
    past the window's)."""
    bp, dl, dr = _updates(answer.exact)
    inside = _points((None, None, None, (bp, dl, dr)))
    above = _points(answer.beyond)
    total_l, total_r = float(dl.sum()), float(dr.sum())
    stats = (np.concatenate((inside[0], above[0])),
             np.concatenate((inside[1], total_l + above[1])),
             np.concatenate((inside[2], total_r + above[2])),
             np.concatenate((inside[3], total_l + above[3])),
             np.concatenate((inside[4], total_r + above[4])))
    return (0.0, 0.0), int(bp.shape[0]) + int(answer.beyond[1]), stats, None


def _updates(kept) -> tuple:
    """(values, dl, dr) of breakpoints sent with ``dr`` None when it is ``dl`` (jumps)."""
    bp, dl, dr = kept
    return bp, dl, dl if dr is None else dr


def _bracket_stats(part: Partition, a, pivots, key="breakpoints"):
    """For each pivot p: the summed updates of the breakpoints in (a, p) and (a, p]."""
    bp, _, _, sums_l, sums_r = part.state[key]
    start = np.searchsorted(bp, a, side="right")
    left = np.searchsorted(bp, pivots, side="left")
    right = np.searchsorted(bp, pivots, side="right")
    return (sums_l[left] - sums_l[start], sums_r[left] - sums_r[start],
            sums_l[right] - sums_l[start], sums_r[right] - sums_r[start])


def _summary(kept, passed_from, a, b, quantiles: int, small: int):
    """One partition's answer to the bracket (a, b): the summed updates of its breakpoints in
    (passed_from, a] (the driver passes them: a is below the root), the count in (a, b), and
    either every one of them (at most ``small``) or points among them with the summed
    updates below and at each, relative to a: (values, left l, left r, at l, at r).

    The points are quantiles, the first and last breakpoint included; more than
    ``quantiles`` when the breakpoints are many (4 count / small, at most ``small``), so
    that the bracket the driver narrows to from them (about two gaps between points) holds
    few enough to be sent the next round."""
    bp, dl, dr, sums_l, sums_r = kept
    n = bp.shape[0]
    start = np.searchsorted(bp, passed_from, side="right")
    lo = np.searchsorted(bp, a, side="right")
    hi = np.searchsorted(bp, b, side="left") if np.isfinite(b) else n
    passed = (float(sums_l[lo] - sums_l[start]), float(sums_r[lo] - sums_r[start]))
    count = int(hi - lo)
    if count <= small:
        return passed, count, None, (bp[lo:hi], dl[lo:hi], None if dr is dl else dr[lo:hi])
    m = min(max(quantiles, -(-4 * count // small)), small)
    values = bp[np.unique(np.linspace(lo, hi - 1, m).astype(np.int64))]
    left = np.searchsorted(bp, values, side="left")
    right = np.searchsorted(bp, values, side="right")
    return passed, count, (values, sums_l[left] - sums_l[lo], sums_r[left] - sums_r[lo],
                           sums_l[right] - sums_l[lo], sums_r[right] - sums_r[lo]), None


def _bracket_summary(part: Partition, passed_from, a, b, quantiles, small,
                     key="breakpoints"):
    kept = part.state[key]
    if isinstance(kept, _Unsorted):  # a windowed search's (keep_breakpoints)
        answer, part.state[key] = _unsorted_summary(kept, passed_from, a, b, quantiles,
                                                    small)
        return answer
    return _summary(kept, passed_from, a, b, quantiles, small)


def _points(summary):
    """(values, left l, left r, at l, at r, exact) of one partition's answer: its points
    with the updates below and at each; ``exact`` when they are all its breakpoints (its
    slope is then known between them, not only bounded)."""
    _, _, stats, kept = summary
    if stats is not None:
        return (*stats, False)
    bp, dl, dr = _updates(kept)
    # all its breakpoints, ties merged (the sums at a value pass every tie)
    values, first = np.unique(bp, return_index=True)
    at = np.concatenate((first[1:], [bp.shape[0]]))
    sums_l = np.concatenate(([0.0], np.cumsum(dl)))
    sums_r = np.concatenate(([0.0], np.cumsum(dr)))
    return values, sums_l[first], sums_r[first], sums_l[at], sums_r[at], True


def _slope_bounds(x, line, points):
    """Bounds on one partition's share of the slope at the candidates ``x`` (sorted): an
    upper bound on its right limit and a lower bound on its left limit, from its line at the
    bracket's start ``line`` = (l, r) and its ``points`` (:func:`_points`).  The share is the
    derivative of the partition's convex loss along the ray, non-decreasing: between two of
    its points it lies between its values there (exact when the points are all its
    breakpoints, or at a point, or outside them)."""
    values, lt_l, lt_r, le_l, le_r, exact = points
    l, r = line
    m = values.shape[0]

    def at(sl, sr, where):
        return (l + sl) + where * ((r + sr) - (l + sl))

    if m == 0:  # no breakpoint in the bracket: the line itself
        exact_share = at(0.0, 0.0, x)
        return exact_share, exact_share
    above = np.searchsorted(values, x, side="right")  # points <= x
    below = np.searchsorted(values, x, side="left")  # points < x
    own = above > below
    # right limit: at a point, or with every point <= x passed, on that line at x
    passed_l = np.where(above > 0, le_l[np.maximum(above - 1, 0)], 0.0)
    passed_r = np.where(above > 0, le_r[np.maximum(above - 1, 0)], 0.0)
    upper = at(passed_l, passed_r, x)
    if not exact:  # between two points: at most the left limit at the next one
        nxt = np.minimum(above, m - 1)
        between = (above > 0) & (above < m) & ~own
        upper = np.where(between, at(lt_l[nxt], lt_r[nxt], values[nxt]), upper)
    # left limit: at a point, the updates below it; else the line after the points < x
    left_l = np.where(below > 0, le_l[np.maximum(below - 1, 0)], 0.0)
    left_r = np.where(below > 0, le_r[np.maximum(below - 1, 0)], 0.0)
    idx = np.minimum(below, m - 1)
    left_l = np.where(own, lt_l[idx], left_l)
    left_r = np.where(own, lt_r[idx], left_r)
    lower = at(left_l, left_r, x)
    if not exact:  # between two points: at least the right limit at the one before
        prv = np.maximum(below - 1, 0)
        between = (below > 0) & (below < m) & ~own
        lower = np.where(between, at(le_l[prv], le_r[prv], values[prv]), lower)
    return upper, lower


# -- driver side ----------------------------------------------------------------------------


def breakpoint_root(group: PartitionGroup, first: list, l0: float, r0: float,
                    jumps: bool, lines: list, key: str = "breakpoints",
                    first_stats=None) -> float:
    """The root over delta >= 0 of a non-decreasing piecewise-linear slope whose breakpoints
    the partitions keep (:func:`keep_breakpoints`): what :func:`solvers.core.linesearch.
    piecewise_linear_root` (``jumps`` False) or ``piecewise_linear_root_jumps`` returns on
    all of them, found by selection with at most one round per narrowing.

    ``first``: each partition's :func:`_summary` from the round that made the breakpoints;
    ``l0``, ``r0``: the slope's line at 0+ (the sum of the partitions' ``lines``, their
    loss parts' (l, r) at 0+, and the driver's regularizer part).  When every partition sent
    its breakpoints (at most ``DISTRIBUTED_GATHER_BREAKPOINTS`` over all), the driver
    finishes with the single machine's sweep: no round.  Otherwise the driver keeps a bracket
    (a, b) with every breakpoint <= a passed (the exact line there) and the root in (a, b].
    Each partition's share of the slope is non-decreasing (the derivative of its convex
    loss along the ray), so the points it sent (quantiles with the updates below and at
    each) bound its share anywhere in the bracket; summed, they bound the slope at every
    partition's points, and the bracket narrows to the last point where the slope is surely
    negative and the first where it is surely >= 0.  The next round sends that bracket and
    gets back, in the same answer, the updates passed and the breakpoints inside it (or
    points again, when still many): typically one round (the old selection took two: the
    pivots' sums, then the breakpoints).  ``key``: the set :func:`keep_breakpoints` stored
    them as; ``first_stats``: (pivots, the summed :func:`_bracket_stats` at them from 0)
    when the first round also took them at pivots known before it (a previous search's):
    the slope is then known exactly there too, for the first narrowing."""
    finish = piecewise_linear_root_jumps if jumps else piecewise_linear_root
    ls, rs = l0, r0
    if ls >= 0.0:
        return 0.0
    shares = [(float(l), float(r)) for l, r in lines]
    base_l = l0 - sum(l for l, _ in shares)
    base_r = r0 - sum(r for _, r in shares)
    q = config.DISTRIBUTED_PIVOTS
    small = max(config.DISTRIBUTED_GATHER_BREAKPOINTS // max(len(group), 1), 1)
    summaries = first
    named = () if key == "breakpoints" else (key,)  # the default costs no bytes
    a, b = 0.0, np.inf
    if first and all(isinstance(s, WindowAnswer) for s in first):
        # every breakpoint in [0, U] came back: the slope's right limit at U is exact
        exact = [_updates(s.exact) for s in first]
        bp = np.concatenate([e[0] for e in exact])
        dl = np.concatenate([e[1] for e in exact])
        dr = np.concatenate([e[2] for e in exact])
        window = first[0].window
        passed = [(float(e[1].sum()), float(e[2].sum())) for e in exact]
        lu, ru = ls + sum(p[0] for p in passed), rs + sum(p[1] for p in passed)
        if lu + window * (ru - lu) >= 0.0:
            return float(finish(ls, rs, bp, dl, dr))  # the root is in [0, U]
        # above U: the bracket (U, inf) with every breakpoint <= U passed
        ls, rs = lu, ru
        shares = [(sl + p[0], sr + p[1]) for (sl, sr), p in zip(shares, passed, strict=True)]
        a = window
        summaries = [s.beyond for s in first]
    elif any(isinstance(s, WindowAnswer) for s in first):
        # a partition held more than it may send in the window and answered with points
        # over (0, inf): the others' windows as points there too (no round)
        summaries = [_window_points(s) if isinstance(s, WindowAnswer) else s for s in first]
    while True:
        for k, (passed, _, _, _) in enumerate(summaries):
            ls += passed[0]
            rs += passed[1]
            shares[k] = (shares[k][0] + passed[0], shares[k][1] + passed[1])
        if a > 0.0 and ls + a * (rs - ls) >= 0.0:
            return a  # only by rounding: a was chosen with the slope surely < 0 there
        if all(s[3] is not None for s in summaries):
            kept = [_updates(s[3]) for s in summaries]
            bp = np.concatenate([k[0] for k in kept])
            dl = np.concatenate([k[1] for k in kept])
            dr = np.concatenate([k[2] for k in kept])
            return float(finish(ls, rs, bp, dl, dr))
        points = [_points(s) for s in summaries]
        x = np.unique(np.concatenate([p[0] for p in points]))
        upper = base_l + x * (base_r - base_l)
        lower = upper.copy()
        for share, p in zip(shares, points, strict=True):
            up, low = _slope_bounds(x, share, p)
            upper += up
            lower += low
        negative = np.flatnonzero(upper < 0.0)  # right limit surely < 0: the root is above
        positive = np.flatnonzero(lower >= 0.0)  # left limit surely >= 0: the root is at most
        new_a = float(x[negative[-1]]) if negative.size else a
        new_b = float(x[positive[0]]) if positive.size else b
        if first_stats is not None and first_stats[0].shape[0]:
            # the slope at the pivots, exactly (the line at 0 with the sums below and at each)
            pivots, (lt_l, lt_r, le_l, le_r) = first_stats
            right = (l0 + le_l) + pivots * ((r0 + le_r) - (l0 + le_l))
            left = (l0 + lt_l) + pivots * ((r0 + lt_r) - (l0 + lt_l))
            if np.any(right < 0.0):
                new_a = max(new_a, float(pivots[right < 0.0].max()))
            if np.any(left >= 0.0):
                new_b = min(new_b, float(pivots[left >= 0.0].min()))
        first_stats = None
        if not new_a < new_b:
            return new_a  # only by rounding (the bounds say the root is here)
        if new_a == a and new_b == b:
            # no narrowing: every breakpoint left is at one value x with the slope < 0 just
            # below it and >= 0 just above (the bounds are exact at the extreme points): a
            # jump over zero there
            return float(x[0])
        summaries = group.map(_bracket_summary, a, new_a, new_b, q, small, *named)
        a, b = new_a, new_b


class DistributedBinaryProblem:
    """A binary problem (``docs/design.md``) on a distributed dataset: class ``positive`` against
    the rest, the same parameters as :class:`~solvers.problems.BinaryProblem`."""

    def __init__(self, dataset: DistributedDataset, positive: float, C: float = 1.0,
                 loss: str = "squared_hinge", bias: str = "regularized",
                 bias_scale: float = 1.0, p: float = 2.0):
        # the driver's copy: the same checks and the same parameter layout, on no rows
        self.template = BinaryProblem(np.zeros((0, dataset.n_features)), np.zeros(0), C=C,
                                      loss=loss, bias=bias, bias_scale=bias_scale, p=p)
        self.dataset = dataset
        self.group = dataset.partitions
        self.positive = positive
        self.C = float(C)
        self.loss, self.bias, self.bias_scale, self.p = (self.template.loss, bias,
                                                          bias_scale, self.template.p)
        self.loss_function = self.template.loss_function
        self._dead: list[str] = []
        self._pending: list[tuple] = []  # on_ray and margins made with the next round
        self._kernel_set = False  # the line search's kernel is on the workers
        #: what a solve on this problem could resume from if a worker is lost, a
        #: ``solvers.base.WarmStart`` (the family's engine keeps it current: mfn and the
        #: interior-point method their last iterate as its beta, the cutting planes w_best
        #: with their cuts as its state); ``solvers.train`` hands it to the restarted solve
        #: as its ``start``
        self.checkpoint = None
        self.communication_start = self.group.communication.totals()  # posing counts
        self.group.map(_pose, positive, self.C, self.loss, bias, bias_scale, self.p)

    # the layout of the single machine's problem
    @property
    def n_features(self) -> int:
        return self.dataset.n_features

    @property
    def n_samples(self) -> int:
        return self.dataset.n_samples

    @property
    def effective_bias_scale(self) -> float:
        return self.template.effective_bias_scale

    @property
    def bias_regularization(self) -> float:
        return self.template.bias_regularization

    def zeros(self) -> np.ndarray:
        return self.template.zeros()

    def split(self, beta):
        return self.template.split(beta)

    def join(self, w, intercept):
        return self.template.join(w, intercept)

    def regularizer(self, beta) -> float:
        return self.template.regularizer(beta)

    @property
    def communication(self):
        return self.group.communication

    def communication_totals(self) -> dict:
        """The rounds, bytes and seconds of this problem's solve (from its posing on), not
        those of earlier solves on the same dataset."""
        return self.group.communication.since(self.communication_start)

    def round(self, function, *args) -> list:
        """One round of ``function(partition, *args)``, after the deferred element-wise
        work and the drops of collected vectors (they ride with it: no round of their
        own)."""
        # the same list emptied, not a new one: every handle's finalizer appends to the list
        # that was current when the handle was made (a new list here left the names of the
        # handles made before it undropped: the workers kept ~3 margins vectors per OCAS
        # iteration, 1 per CPA iteration, for the whole solve)
        dead = self._dead[:]
        del self._dead[:len(dead)]
        pending, self._pending = self._pending, []
        return self.group.map(_with_pending, dead, pending, function, *args)

    def _new(self) -> RemoteVector:
        return RemoteVector(self, f"v{next(_SLOTS)}")

    # -- evaluations (one round each) ------------------------------------------------------------
    def risk_oracle(self, beta, margins: RemoteVector | None = None, want_cut: bool = True
                    ) -> tuple[float, np.ndarray | None, RemoteVector]:
        """(R(beta), its cut, the margins at beta kept on the workers): the sum of the
        partitions' :meth:`BinaryProblem.risk_oracle`."""
        risk, cut, out, _ = self.risk_oracle_and_objective(beta, margins, want_cut)
        return risk, cut, out

    def risk_oracle_and_objective(self, beta, margins: RemoteVector | None = None,
                                  want_cut: bool = True, best=None,
                                  best_margins: RemoteVector | None = None):
        """:meth:`risk_oracle` and, in the same round, the objective at ``best`` from the
        margins ``best_margins`` (default: at beta, from the margins the oracle makes;
        None without ``best`` or ``best_margins`` asked: pass ``best=beta``)."""
        out = margins if margins is not None else self._new()
        beta = np.ascontiguousarray(beta, dtype=np.float64)
        loss_at = None
        if best is not None:
            loss_at = (best_margins if best_margins is not None else out).name
        # with the margins given the workers need beta's length only (:func:`_oracle`)
        results = self.round(_oracle, beta if margins is None else None,
                             None if margins is None else margins.name, want_cut, out.name,
                             loss_at)
        risk = float(sum(r for r, _, _ in results))
        cut = None
        if want_cut:
            cut = np.zeros(beta.shape[0])
            for _, c, _ in results:
                cut += c
        objective = None
        if best is not None:
            objective = self.regularizer(best) + float(sum(s for _, _, s in results))
        return risk, cut, out, objective

    def margins(self, beta) -> RemoteVector:
        """The margins at beta, made on the workers with the next round (the oracle's pass
        without the cut): no round of their own."""
        out = self._new()
        self._pending.append(("margins", np.array(beta, dtype=np.float64), out.name))
        return out

    def on_ray(self, a: RemoteVector, b: RemoteVector, t: float) -> RemoteVector:
        """a + t (b - a), per example, on the workers (made with the next round)."""
        out = self._new()
        self._pending.append(("ray", a.name, b.name, float(t), out.name))
        return out

    def objective_from_margins(self, beta, margins: RemoteVector) -> float:
        return self.regularizer(beta) + float(sum(self.round(_loss_sum, margins.name)))

    def hinge_ray_exact(self, kernel, mb: RemoteVector, mt: RemoteVector, B0: float,
                        A0: float, window: float | None = None) -> float:
        """OCAS's exact mu (:meth:`solvers.cutting_plane.search.Ray.exact`) on the ray
        between the margins ``mb`` and ``mt``: the breakpoints stay on the workers
        (``kernel`` makes them there); those in [0, ``window``] come back when it is given
        (:class:`WindowAnswer`: no further round when mu is there)."""
        send = None if self._kernel_set else kernel
        small = max(config.DISTRIBUTED_GATHER_BREAKPOINTS // max(len(self.group), 1), 1)
        results = self.round(_hinge_ray, send, mb.name, mt.name, config.DISTRIBUTED_PIVOTS,
                             small, window)
        self._kernel_set = True
        slope = float(sum(s for s, _ in results))
        l0 = B0 + slope
        mu = breakpoint_root(self.group, [r for _, r in results], l0, l0 + A0, jumps=True,
                             lines=[(s, s) for s, _ in results])
        return float(mu) if np.isfinite(mu) else 0.0


# -- the dual point of a free bias and the dual objective, as reductions ----------------------
#
# BinaryProblem.balance finds the shift s with sum_i y_i clip(alpha_i + s y_i, l_i, u_i) = 0
# by walking g's breakpoints from 0 in the direction g(0)'s sign asks; here g(0) is a sum over
# partitions, so each partition keeps its breakpoints for both directions and the driver
# searches the one the sum decides (breakpoint_root: the same line as the walk, h(t) = -|g(0)|
# + the integral of the slope).  BinaryProblem.dual_objective is sums over examples and one
# d-vector, beta(alpha) = X~'(alpha y).

BALANCE_KEYS = ("balance+", "balance-")


def balance_shares(part: Partition, problem: BinaryProblem, alpha: np.ndarray,
                   quantiles: int, small: int, pivots=None):
    """The partition's share of :meth:`BinaryProblem.balance` at ``alpha``: (its part of
    g(0), then per direction (+1, -1) the slope at 0, :func:`keep_breakpoints`' summary
    of the breakpoints, kept as ``BALANCE_KEYS``, and :func:`_bracket_stats` at that
    direction's ``pivots`` when given: a previous balance's pivots, which bracket this root
    closely when alpha moved little, so that the driver's first narrowing needs no round)."""
    lower, upper = problem.dual_bounds()
    alpha = np.ascontiguousarray(alpha, dtype=np.float64)
    g0 = 0.0
    shares = []
    for direction, key in zip((1.0, -1.0), BALANCE_KEYS, strict=True):
        g0, _, slope, events, changes = _balancing_events(alpha, problem.y, lower, upper,
                                                          direction)
        # h(t) = -|g(0)| + slope t: passing t_k changes the slope by c_k, the line through
        # (0, l) and (1, r) by dl = -c_k t_k, dr = c_k (1 - t_k) (continuous)
        summary = keep_breakpoints(part, events, -changes * events, changes * (1.0 - events),
                                   quantiles, small, key)
        stats = None
        if pivots is not None and pivots[len(shares)].shape[0]:
            stats = _bracket_stats(part, 0.0, pivots[len(shares)], key)
        shares.append((float(slope), summary, stats))
    return float(g0), shares[0], shares[1]


def balancing_shift(group: PartitionGroup, shares: list, pivots=None) -> float | None:
    """The driver's part: the shift s of :meth:`BinaryProblem.balance` from every partition's
    :func:`balance_shares` (rounds of :func:`breakpoint_root` when the breakpoints are many:
    one fewer when the shares were taken at ``pivots``), or None when none balances."""
    g0 = float(sum(s[0] for s in shares))
    if g0 == 0.0:
        return 0.0
    direction = 1.0 if g0 < 0.0 else -1.0
    k = 1 if direction > 0.0 else 2
    l0 = -abs(g0)
    slope = float(sum(s[k][0] for s in shares))
    first_stats = None
    if pivots is not None and all(s[k][2] is not None for s in shares):
        first_stats = (pivots[k - 1], reduce_sum([s[k][2] for s in shares]))
    # a partition's share of h is its part of the integral of the slope: 0 at t = 0
    t = breakpoint_root(group, [s[k][1] for s in shares], l0, l0 + slope, jumps=False,
                        lines=[(0.0, s[k][0]) for s in shares], key=BALANCE_KEYS[k - 1],
                        first_stats=first_stats)
    return direction * float(t) if np.isfinite(t) else None


def balance_pivots(shares: list, most: int = 128, ladder: int = 48
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per direction, the pivots the next balance can be taken at (:func:`balance_shares`'
    ``pivots``): these shares' quantiles of their breakpoints, merged (at most ``most``),
    and below the smallest a ladder of ``ladder`` halvings (an interior point's root moves
    toward 0 as its multipliers reach their bounds, where the breakpoints crowd: measured on
    a9a, the root fell below the smallest quantile from the 8th MPC iteration on, to 1e-17)."""
    out = []
    for k in (1, 2):
        pieces = [_points(s[k][1])[0] for s in shares]
        merged = np.unique(np.concatenate(pieces)) if pieces else np.empty(0)
        merged = merged[merged > 0.0]
        if merged.shape[0] > most:
            merged = merged[np.unique(np.linspace(0, merged.shape[0] - 1, most)
                                      .astype(np.int64))]
        if merged.shape[0]:
            below = merged[0] * 0.5 ** np.arange(ladder, 0, -1)
            merged = np.unique(np.concatenate((below[below > 0.0], merged)))
        out.append(np.ascontiguousarray(merged))
    return out[0], out[1]


def balanced(problem: BinaryProblem, alpha: np.ndarray, shift: float) -> np.ndarray:
    """clip(alpha + s y, lower, upper): the balanced point (the worker's part)."""
    lower, upper = problem.dual_bounds()
    return np.clip(alpha + shift * problem.y, lower, upper)


def dual_shares(problem: BinaryProblem, alpha: np.ndarray) -> tuple:
    """The partition's sums of :meth:`BinaryProblem.dual_objective` at ``alpha``: (sum
    alpha, sum |alpha|, alpha'y, the conjugate sum, beta(alpha)'s share)."""
    return (float(alpha.sum()), float(np.abs(alpha).sum()), float(dot(alpha, problem.y)),
            float(problem.loss_function.conjugate_sum(alpha, problem.cost)),
            problem.primal_from_dual(alpha))


def dual_objective_from_shares(template: BinaryProblem, shares: list) -> float:
    """D(alpha) of :meth:`BinaryProblem.dual_objective` from the partitions'
    :func:`dual_shares` (-inf outside the dual domain, the free bias's balance checked to
    the same relative 1e-9)."""
    total, absolute, balance, conjugate, beta_alpha = reduce_sum(shares)
    if not np.isfinite(conjugate):
        return -np.inf
    if template.bias == "free" and abs(balance) > 1e-9 * max(1.0, absolute):
        return -np.inf
    return total - template.regularizer(beta_alpha) - conjugate
