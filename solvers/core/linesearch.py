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
(16)-(17).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def piecewise_linear_root(l0, r0, breakpoints, dl, dr):
    """The zero of a continuous, non-decreasing, piecewise-linear slope on delta >= 0.

    Between consecutive breakpoints the slope is the line through (0, l) and (1, r); passing
    ``breakpoints[i]`` adds ``dl[i]`` to l and ``dr[i]`` to r.  Breakpoints must be positive
    (their order is irrelevant).  Returns delta* >= 0 with slope zero (0 when the slope is
    already non-negative at 0).

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
    if ls >= 0.0:
        return 0.0
    bp = breakpoints.copy()
    a = dl.copy()
    c = dr.copy()
    lo = 0
    hi = bp.shape[0]
    found = False  # a breakpoint with a non-negative slope exists
    while hi - lo > 16:
        mid = (lo + hi) // 2
        pivot = max(min(bp[lo], bp[mid]), min(max(bp[lo], bp[mid]), bp[hi - 1]))
        # bp[lo:m] < pivot <= bp[m:hi]; (sl, sr) sums the updates of the lower part
        m = lo
        sl = 0.0
        sr = 0.0
        for j in range(lo, hi):
            if bp[j] < pivot:
                _swap3(bp, a, c, j, m)
                sl += a[m]
                sr += c[m]
                m += 1
        low_l = ls + sl
        low_r = rs + sr
        if low_l + pivot * (low_r - low_l) >= 0.0:
            found = True
            hi = m  # the root is at most the pivot: search below it
        else:
            ls = low_l  # the root lies above the pivot: pass everything up to it
            rs = low_r
            k = m
            for j in range(m, hi):
                if bp[j] == pivot:
                    _swap3(bp, a, c, j, k)
                    ls += a[k]
                    rs += c[k]
                    k += 1
            lo = k
    # the few left: insertion sort, then the sweep of Appendix A
    for j in range(lo + 1, hi):
        k = j
        while k > lo and bp[k - 1] > bp[k]:
            _swap3(bp, a, c, k - 1, k)
            k -= 1
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
def _swap3(x, y, z, i, j):
    x[i], x[j] = x[j], x[i]
    y[i], y[j] = y[j], y[i]
    z[i], z[j] = z[j], z[i]


@njit(cache=True)
def clipped_loss_breakpoints(xi0, xi1, weight, xi_lo, width):
    """Breakpoints of sum_i weight_i L(xi_i(delta)) on xi_i(delta) = xi0_i + delta (xi1_i - xi0_i)
    for a loss whose derivative is L'(xi) = clip(xi - xi_lo, 0, width) (``width`` may be inf).

    This covers the L2 loss (xi_lo = 0, width = inf; Keerthi & DeCoste eqs. (14)-(15)), the
    modified Huber loss (width = 2, section 6) and its shifted form for the L1 homotopy.  Each
    example contributes, on its current piece, the slope line with ordinates
    weight * L'_piece(xi0) dxi at delta = 0 and weight * L'_piece(xi1) dxi at delta = 1
    (dxi = xi1 - xi0), where L'_piece is the piece's linear formula extended; crossing a knot
    swaps the piece, changing the ordinates by (dl, dr) -- eq. (18).

    Returns (l0_sum, r0_sum, breakpoints, dl, dr): the summed ordinates of the loss part at
    delta = 0 (the caller adds the regularizer's) and the breakpoints with their updates.
    """
    n = xi0.shape[0]
    capacity = 2 * n if np.isfinite(width) else n
    breakpoints = np.empty(capacity)
    dl = np.empty(capacity)
    dr = np.empty(capacity)
    count = 0
    l0 = 0.0
    r0 = 0.0
    hi = xi_lo + width
    for i in range(n):
        a = xi0[i]
        b = xi1[i]
        dxi = b - a
        w = weight[i]
        # piece at delta = 0 (0: flat below xi_lo, 1: quadratic, 2: linear above hi); the
        # active set is open at xi_lo (Keerthi's I = {t y < 1}) and closed at hi.
        if a <= xi_lo:
            piece = 0
        elif a < hi:
            piece = 1
        else:
            piece = 2
        l0 += w * _piece_slope(piece, a, xi_lo, width) * dxi
        r0 += w * _piece_slope(piece, b, xi_lo, width) * dxi
        if dxi == 0.0:
            continue
        # walk the knots in the direction xi moves
        while True:
            if dxi > 0.0:
                if piece == 2:
                    break
                knot = xi_lo if piece == 0 else hi
                if not np.isfinite(knot):
                    break
                new_piece = piece + 1
            else:
                if piece == 0:
                    break
                knot = xi_lo if piece == 1 else hi
                new_piece = piece - 1
            delta = (knot - a) / dxi
            if delta <= 0.0:
                # already at the knot: the example switches immediately
                delta = 0.0
            breakpoints[count] = delta
            dl[count] = w * (_piece_slope(new_piece, a, xi_lo, width)
                             - _piece_slope(piece, a, xi_lo, width)) * dxi
            dr[count] = w * (_piece_slope(new_piece, b, xi_lo, width)
                             - _piece_slope(piece, b, xi_lo, width)) * dxi
            count += 1
            piece = new_piece
    return l0, r0, breakpoints[:count], dl[:count], dr[:count]


@njit(cache=True, inline="always")
def _piece_slope(piece, xi, xi_lo, width):
    """The linear formula of L'(xi) on a piece, extended beyond it."""
    if piece == 0:
        return 0.0
    if piece == 1:
        return xi - xi_lo
    return width


# -- the sets and values of the clipped-loss family, in one pass each ------------------------
#
# L(xi) with L'(xi) = clip(xi - xi_lo, 0, width): 0 for xi <= xi_lo (set I0), quadratic on
# (xi_lo, xi_lo + width) (I1, the least-squares rows), linear from xi_lo + width on (I2).


@njit(cache=True)
def clipped_loss_sets(xi, xi_lo, width):
    """(I1, I2): the indices with xi_lo < xi < xi_lo + width and with xi >= xi_lo + width."""
    hi = xi_lo + width
    n = xi.shape[0]
    n_quadratic = 0
    n_linear = 0
    for i in range(n):
        if xi[i] > xi_lo:
            if xi[i] < hi:
                n_quadratic += 1
            else:
                n_linear += 1
    quadratic = np.empty(n_quadratic, np.int64)
    linear = np.empty(n_linear, np.int64)
    a = 0
    b = 0
    for i in range(n):
        if xi[i] > xi_lo:
            if xi[i] < hi:
                quadratic[a] = i
                a += 1
            else:
                linear[b] = i
                b += 1
    return quadratic, linear


@njit(cache=True)
def clipped_loss_sum(xi, weight, xi_lo, width):
    """sum_i weight_i L(xi_i) with L(xi) = u^2 / 2 + width (xi - xi_lo - width)_+,
    u = clip(xi - xi_lo, 0, width)."""
    total = 0.0
    for i in range(xi.shape[0]):
        u = xi[i] - xi_lo
        if u <= 0.0:
            continue
        if u < width:
            total += weight[i] * 0.5 * u * u
        else:
            total += weight[i] * (0.5 * width * width + width * (u - width))
    return total


@njit(cache=True)
def clipped_loss_sets_hold(xi0, xi1, xi_lo, width, tol):
    """Whether every index keeps, within ``tol``, at ``xi1`` the set it has at ``xi0``
    (Keerthi & DeCoste, Appendix A step 5 (b)-(c), for three sets)."""
    hi = xi_lo + width
    for i in range(xi0.shape[0]):
        a = xi0[i]
        b = xi1[i]
        if a <= xi_lo:
            if b > xi_lo + tol:
                return False
        elif a < hi:
            if b < xi_lo - tol or b > hi + tol:
                return False
        elif b < hi - tol:
            return False
    return True


@njit(cache=True)
def margin_slacks(labels, outputs, out):
    """out_i = 1 - t_i y_i."""
    for i in range(out.shape[0]):
        out[i] = 1.0 - labels[i] * outputs[i]
