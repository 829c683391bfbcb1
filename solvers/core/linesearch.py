"""Exact line search for convex, continuously differentiable, piecewise-quadratic functions.

On the ray beta(delta) = beta_k + delta (beta_bar - beta_k) the objective phi(delta) of an
L2-SVM (and of the modified Huber and ordinal variants) is convex and piecewise quadratic, so
its slope phi'(delta) is continuous and piecewise linear; it bends only where an example
switches between pieces of its loss.  Keerthi & DeCoste (2005, section 4.4, eqs. (14)-(18))
sort those breakpoints and sweep them left to right, tracking the slope's line through the
ordinates ``l`` at delta = 0 and ``r`` at delta = 1, until the slope crosses zero: O(m log m).
:func:`piecewise_linear_root` finds the same crossing by selection instead, in expected O(m).

This module holds the sweep, written once: callers describe their breakpoints as
(delta_i, dl_i, dr_i) -- where the slope line's ordinates at 0 and 1 change by dl_i and dr_i
when delta passes delta_i, eq. (18) -- together with the starting ordinates l_0, r_0 of eqs.
(16)-(17).  The losses make their own breakpoints (``solvers.losses.kernels``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def piecewise_linear_root(l0, r0, breakpoints, dl, dr):
    """The zero of a continuous, non-decreasing, piecewise-linear slope on delta >= 0.

    Between consecutive breakpoints the slope is the line through (0, l) and (1, r); passing
    ``breakpoints[i]`` adds ``dl[i]`` to l and ``dr[i]`` to r.  Breakpoints must be positive
    (their order is irrelevant).  Returns delta* >= 0 with slope zero (0 when the slope is
    already non-negative at 0), or NaN when a number describing the slope is not finite.

    Keerthi & DeCoste, Appendix A step 6: in increasing order of the breakpoints, the slope at
    a breakpoint delta is l + delta (r - l); at the first one where it is >= 0 the root is
    -l / (r - l) on the current line.  The same root is found here without sorting everything,
    in expected O(m): split the breakpoints left to locate at a pivot (the median of three);
    the slope at the pivot, on the line with every breakpoint below it passed, says whether
    the root lies below the pivot (keep the lower part) or above (pass the lower part and the
    pivot, keep the upper part).  The last few are swept in sorted order.
    """
    ls = l0
    rs = r0
    if not _finite_slope(l0, r0, breakpoints, dl, dr):
        return np.nan
    if ls >= 0.0:
        return 0.0
    bp, a, c, lo, hi = _working_copies(breakpoints, dl, dr)
    found = False  # a breakpoint with a non-negative slope exists
    for _ in range(_max_selection_steps(hi)):
        if hi - lo <= 16:
            break
        pivot, m, low_l, low_r, root_below = _split_at_pivot(bp, a, c, lo, hi, ls, rs)
        if root_below:
            found = True
            hi = m  # the root is at most the pivot: search below it
        else:
            # the root lies above the pivot: pass everything up to it
            lo, ls, rs = _move_to_front(bp, a, c, m, hi, pivot, True, low_l, low_r)
    if hi - lo > 16:
        return np.nan  # every step shrinks the range: only broken arithmetic gets here
    # the few left: insertion sort, then the sweep of Appendix A
    _insertion_sort(bp, a, c, lo, hi)
    for j in range(lo, hi):
        if ls + bp[j] * (rs - ls) >= 0.0:
            return -ls / (rs - ls)
        ls += a[j]
        rs += c[j]
    if not found and rs - ls <= 0.0:
        # Only possible without regularization and with an unbounded direction.
        return np.inf
    return -ls / (rs - ls)


@njit(cache=True, inline="always")
def _finite_slope(l0, r0, breakpoints, dl, dr):
    """Whether every number describing the slope is finite.  A NaN breakpoint compares
    false with every pivot, so the selection would never pass it and never end (as at
    C = 5e-324, where 1/C is infinite): the search returns NaN instead, its callers' "no
    finite step"."""
    if not (np.isfinite(l0) and np.isfinite(r0)):
        return False
    for j in range(breakpoints.shape[0]):
        if not (np.isfinite(breakpoints[j]) and np.isfinite(dl[j]) and np.isfinite(dr[j])):
            return False
    return True


@njit(cache=True, inline="always")
def _max_selection_steps(m):
    """A bound on the selection steps over m breakpoints: each step passes the pivot or
    drops it with everything above, so the range shrinks by at least one (m steps at
    worst); the loop is bounded by it all the same, so no input makes it spin."""
    return m + 1


@njit(cache=True, inline="always")
def _working_copies(breakpoints, dl, dr):
    """The arrays the selection reorders, and the range [0, m) still in play."""
    return breakpoints.copy(), dl.copy(), dr.copy(), 0, breakpoints.shape[0]


@njit(cache=True, inline="always")
def _split_at_pivot(bp, a, c, lo, hi, ls, rs):
    """One selection step of both roots: moves the breakpoints of [lo, hi) below the median of
    three to the front (bp[lo:m] < pivot <= bp[m:hi]); returns the pivot, m, the line's
    ordinates (l, r) with that lower part passed, and whether the slope on that line is
    already >= 0 at the pivot (the root is at most the pivot)."""
    pivot = _median_of_three(bp, lo, hi)
    m, sl, sr = _move_to_front(bp, a, c, lo, hi, pivot, False, 0.0, 0.0)
    low_l = ls + sl
    low_r = rs + sr
    return pivot, m, low_l, low_r, low_l + pivot * (low_r - low_l) >= 0.0


@njit(cache=True, inline="always")
def _median_of_three(bp, lo, hi):
    mid = (lo + hi) // 2
    return max(min(bp[lo], bp[mid]), min(max(bp[lo], bp[mid]), bp[hi - 1]))


@njit(cache=True, inline="always")
def _move_to_front(bp, a, c, lo, hi, pivot, ties, ls, rs):
    """Moves the breakpoints of [lo, hi) below ``pivot`` (``ties``: equal to it) to the front
    of the range; returns their end and (ls, rs) with their updates added one by one."""
    m = lo
    for j in range(lo, hi):
        if (bp[j] == pivot) if ties else (bp[j] < pivot):
            _swap3(bp, a, c, j, m)
            ls += a[m]
            rs += c[m]
            m += 1
    return m, ls, rs


@njit(cache=True, inline="always")
def _insertion_sort(bp, a, c, lo, hi):
    for j in range(lo + 1, hi):
        k = j
        while k > lo and bp[k - 1] > bp[k]:
            _swap3(bp, a, c, k - 1, k)
            k -= 1


@njit(cache=True, inline="always")
def _swap3(x, y, z, i, j):
    x[i], x[j] = x[j], x[i]
    y[i], y[j] = y[j], y[i]
    z[i], z[j] = z[j], z[i]


@njit(cache=True, nogil=True)
def piecewise_linear_root_jumps(l0, r0, breakpoints, dl, dr):
    """The minimizer over delta >= 0 of a convex function whose slope is piecewise linear and
    may JUMP up at its breakpoints (a hinge along a ray: each example's term adds a constant
    to the slope where its slack changes sign; OCAS's line search, Franc & Sonnenburg 2008).

    Same description as :func:`piecewise_linear_root`: just right of 0 the slope is the line
    through (0, l0) and (1, r0); passing ``breakpoints[i]`` (> 0, any order, ties allowed)
    adds ``dl[i]`` to l and ``dr[i]`` to r (a jump of size J is dl = dr = J; a kink changes
    the two differently); every change must keep the slope non-decreasing.  Returns the
    delta* >= 0 where the subdifferential contains 0: 0 when the right slope at 0 is >= 0;
    else either a point inside a segment where the current line crosses zero, or exactly a
    breakpoint p with left slope < 0 <= right slope (the slope jumps over zero there).
    ``piecewise_linear_root`` would return the crossing of the next line instead, which lies
    before p: wrong for a jump (and libocas's chord interpolation across the jump is inexact
    too).  Returns inf when the slope stays negative (an unbounded direction), NaN when a
    number describing the slope is not finite.

    Expected O(m) by selection, as in :func:`piecewise_linear_root`: at a pivot (median of
    three) the left slope (every breakpoint below passed) >= 0 puts the root at or below the
    pivot; else passing the pivot's ties gives the right slope, >= 0 puts it AT the pivot;
    else the root lies above.  The last few breakpoints are swept in sorted order, ties passed
    together.
    """
    ls = l0
    rs = r0
    if not _finite_slope(l0, r0, breakpoints, dl, dr):
        return np.nan
    if ls >= 0.0:
        return 0.0
    bp, a, c, lo, hi = _working_copies(breakpoints, dl, dr)
    for _ in range(_max_selection_steps(hi)):
        if hi - lo <= 16:
            break
        pivot, m, low_l, low_r, root_below = _split_at_pivot(bp, a, c, lo, hi, ls, rs)
        if root_below:
            hi = m  # left slope at the pivot >= 0: the root is at most the pivot
            continue
        k, low_l, low_r = _move_to_front(bp, a, c, m, hi, pivot, True, low_l, low_r)
        if low_l + pivot * (low_r - low_l) >= 0.0:
            return pivot  # the slope jumps over zero at the pivot
        ls = low_l
        rs = low_r
        lo = k
    if hi - lo > 16:
        return np.nan  # as in piecewise_linear_root: only broken arithmetic gets here
    _insertion_sort(bp, a, c, lo, hi)
    j = lo
    while j < hi:
        p = bp[j]
        if ls + p * (rs - ls) >= 0.0:
            return -ls / (rs - ls)  # inside the segment before p
        while j < hi and bp[j] == p:
            ls += a[j]
            rs += c[j]
            j += 1
        if ls + p * (rs - ls) >= 0.0:
            return p
    if rs - ls <= 0.0:
        return np.inf
    return -ls / (rs - ls)
