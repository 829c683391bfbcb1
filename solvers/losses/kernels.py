"""The Numba kernels of the loss layer, one pass over the examples each.

Two families:

* the clipped family, L'(xi) = clip(xi - xi_lo, 0, width) (``width`` may be inf): the squared
  hinge (xi_lo = 0, width = inf), the modified Huber loss (width = 2) and the smoothed hinge of
  L2-SVM-MFN's homotopy.  Sets, sums and the breakpoints of the exact line search along a ray
  (Keerthi & DeCoste eqs. (14)-(18); the root itself is :func:`solvers.core.linesearch.
  piecewise_linear_root`);
* every loss of ``docs/design.md`` by its code (:data:`HINGE` ...): the weighted sum of values, the
  derivatives, the curvatures (second derivatives, where a Newton method reads them) and the
  proximal operator, in the slack xi = 1 - m.

A loss's code has one branch in each of :func:`_value`, :func:`_derivative` and
:func:`prox_value` (a new loss adds its three formulas there, beside its class in
:mod:`solvers.losses`).  Codes come from canonical loss objects (``solvers.losses.get_loss``):
LP is never called with p = 1 or 2.  :func:`by_loss` is the one table of specializations: a
kernel called through it sees its loss code (and p) as a compile-time constant, so the branches
above fold away inside its loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Codes the kernels dispatch on (``Loss.code``).
HINGE = 0
SQUARED_HINGE = 1
LP = 2
MODIFIED_HUBER = 3
LEAST_SQUARES = 4
LOGISTIC = 5


# -- slacks -------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def margin_slacks(labels, outputs, out):
    """out_i = 1 - t_i y_i."""
    for i in range(out.shape[0]):
        out[i] = 1.0 - labels[i] * outputs[i]


# -- every loss, by code ------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _value(code, p, xi):
    if code == HINGE:
        return xi if xi > 0.0 else 0.0
    if code == SQUARED_HINGE:
        return xi * xi if xi > 0.0 else 0.0
    if code == LP:
        return xi ** p if xi > 0.0 else 0.0
    if code == MODIFIED_HUBER:
        if xi <= 0.0:
            return 0.0
        return xi * xi if xi <= 2.0 else 4.0 * xi - 4.0
    if code == LOGISTIC:
        return _log1p_exp(xi - 1.0)
    return xi * xi  # LEAST_SQUARES


@njit(cache=True, inline="always")
def _derivative(code, p, xi):
    if code == HINGE:
        return 1.0 if xi > 0.0 else 0.0
    if code == SQUARED_HINGE:
        return 2.0 * xi if xi > 0.0 else 0.0
    if code == LP:
        return p * xi ** (p - 1.0) if xi > 0.0 else 0.0
    if code == MODIFIED_HUBER:
        if xi <= 0.0:
            return 0.0
        return 2.0 * xi if xi <= 2.0 else 4.0
    if code == LOGISTIC:
        return _sigmoid(xi - 1.0)
    return 2.0 * xi  # LEAST_SQUARES


@njit(cache=True, inline="always")
def _curvature(code, p, xi):
    """L''(xi): the Hessian's weight of an example in a primal Newton method (the generalized
    second derivative where L' has a kink: the right one at xi = 0 is not taken, as
    :func:`_derivative`; LIBLINEAR's ``-s 2`` uses the same).  NaN for a code without a
    branch here (and for lp, whose L'' is unbounded at 0): a forgotten branch shows."""
    if code == LOGISTIC:
        sig = _sigmoid(xi - 1.0)
        return sig * (1.0 - sig)
    if code == SQUARED_HINGE:
        return 2.0 if xi > 0.0 else 0.0
    if code == LEAST_SQUARES:
        return 2.0
    if code == MODIFIED_HUBER:
        return 2.0 if 0.0 < xi <= 2.0 else 0.0
    if code == HINGE:
        return 0.0
    return np.nan


@njit(cache=True, inline="always")
def _log1p_exp(z):
    """log(1 + exp(z)) without overflow (z + log1p(exp(-z)) for z > 0)."""
    if z > 0.0:
        return z + np.log1p(np.exp(-z))
    return np.log1p(np.exp(z))


@njit(cache=True, inline="always")
def _sigmoid(z):
    """1 / (1 + exp(-z)) without overflow."""
    if z >= 0.0:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z)
    return e / (1.0 + e)


@njit(cache=True, inline="always")
def by_loss(kernel, code, p, args):
    """``kernel(code, p, args)`` with the loss code and p compile-time constants: one
    specialization per loss of ``docs/design.md`` (lp keeps p a run-time value).  ``kernel`` is an
    ``@njit(inline="always")`` function; ``args`` a tuple of its other arguments.  (A loop
    that dispatches on a run-time code per example ran 4x slower in ALM's pass: 1.05 ms
    against 0.27 ms on 50,000 examples.)  In a parallel kernel, call it once per block from a
    function that is not inlined into the ``prange`` body: Numba 0.68 drops writes to an array
    passed in a tuple to an inlined call inside a parfor as dead code (a ``prange`` inside
    ``kernel`` itself does not survive the tuple either)."""
    if code == HINGE:
        return kernel(HINGE, 1.0, args)
    if code == SQUARED_HINGE:
        return kernel(SQUARED_HINGE, 2.0, args)
    if code == MODIFIED_HUBER:
        return kernel(MODIFIED_HUBER, 2.0, args)
    if code == LEAST_SQUARES:
        return kernel(LEAST_SQUARES, 2.0, args)
    return kernel(code, p, args)


@njit(cache=True, nogil=True)
def loss_sum(code, p, xi, weight):
    """sum_i weight_i L(xi_i)."""
    total = 0.0
    for i in range(xi.shape[0]):
        total += weight[i] * _value(code, p, xi[i])
    return total


@njit(cache=True, nogil=True)
def loss_values(code, p, xi, out):
    for i in range(xi.shape[0]):
        out[i] = _value(code, p, xi[i])


@njit(cache=True, nogil=True)
def loss_derivatives(code, p, xi, out):
    """out_i = L'(xi_i) (for the hinge, the subgradient 1 where xi > 0, else 0)."""
    for i in range(xi.shape[0]):
        out[i] = _derivative(code, p, xi[i])


@njit(cache=True, nogil=True)
def loss_curvatures(code, p, xi, out):
    """out_i = L''(xi_i) (:func:`_curvature`)."""
    for i in range(xi.shape[0]):
        out[i] = _curvature(code, p, xi[i])


@njit(cache=True, inline="always")
def _logistic_prox(v, t):
    """The root u of u + t sigma(u - 1) = v (t > 0): the left side is increasing with slope in
    [1, 1 + t/4], and the root lies in [v - t, v] (sigma in (0, 1)); Newton from v, falling back
    to bisection whenever a step leaves the bracket."""
    lo = v - t
    hi = v
    u = v
    for _ in range(200):
        sig = _sigmoid(u - 1.0)
        phi = u + t * sig - v
        if phi > 0.0:
            hi = u
        else:
            lo = u
        if phi == 0.0 or hi - lo <= 1e-15 * max(1.0, abs(hi)):
            break
        step = u - phi / (1.0 + t * sig * (1.0 - sig))
        if not (lo < step < hi):
            step = 0.5 * (lo + hi)
        u = step
    return u


@njit(cache=True, inline="always")
def _lp_prox_positive(v, t, p):
    """The root u in (0, v) of t p u^(p-1) + u - v = 0 (1 < p < 2, v > 0, t > 0): Newton from
    the right end of a bracket, falling back to bisection whenever a step leaves it.  The left
    side phi(u) = t p u^(p-1) + u - v is increasing and concave, so Newton from any point right
    of the root converges monotonically; the bisection only guards round-off."""
    lo = 0.0
    hi = v
    u = v
    for _ in range(200):
        up = u ** (p - 1.0)
        phi = t * p * up + u - v
        if phi > 0.0:
            hi = u
        else:
            lo = u
        if phi == 0.0 or hi - lo <= 1e-15 * hi:
            break
        slope = t * p * (p - 1.0) * up / u + 1.0
        step = u - phi / slope
        if not (lo < step < hi):
            step = 0.5 * (lo + hi)
        if abs(step - u) <= 1e-15 * u:
            u = step
            break
        u = step
    return u


@njit(cache=True, inline="always")
def prox_value(code, p, x, s):
    """argmin_u s L(u) + (u - x)^2 / 2 for one example: the proximal operator of s L at x (the
    scalar form of :func:`loss_prox`, for kernels that fuse it with other work, e.g. ALM's
    e-step and multiplier update)."""
    if code == LEAST_SQUARES:
        return x / (1.0 + 2.0 * s)
    if code == LOGISTIC:  # smooth and positive everywhere: no flat side
        return _logistic_prox(x, s)
    if x <= 0.0:
        return x
    if code == HINGE:
        return x - s if x > s else 0.0
    if code == SQUARED_HINGE:
        return x / (1.0 + 2.0 * s)
    if code == LP:
        return _lp_prox_positive(x, s, p)
    # MODIFIED_HUBER: quadratic up to 2, slope 4 beyond
    u = x / (1.0 + 2.0 * s)
    if u <= 2.0:
        return u
    if x - 4.0 * s >= 2.0:
        return x - 4.0 * s
    return 2.0


@njit(cache=True, nogil=True)
def loss_prox(code, p, v, t, out):
    """out_i = argmin_u t_i L(u) + (u - v_i)^2 / 2, the proximal operator of t_i L at v_i.

    Closed forms for the hinge (soft threshold on the positive side), squared hinge, modified
    Huber and least squares; for the lp loss with 1 < p < 2 a safeguarded Newton iteration on
    t p u^(p-1) + u = v (Nie et al. eq. (11)), and for the logistic loss one on u + t sigma(u -
    1) = v.  Below 0 every loss but least squares and the logistic loss is flat, so u = v
    there.
    """
    for i in range(v.shape[0]):
        out[i] = prox_value(code, p, v[i], t[i])


@njit(cache=True, inline="always")
def _dual_slack(cost):
    """The slack a dual point may leave its box by: 1e-12 of the largest C_i (at least of
    1), the loss layer's ``_DUAL_TOL``."""
    largest = 1.0
    for i in range(cost.shape[0]):
        if cost[i] > largest:
            largest = cost[i]
    return 1e-12 * largest


@njit(cache=True, nogil=True)
def quadratic_conjugate_sum(alpha, cost, nonnegative, upper_factor, linear, quadratic):
    """sum_i C_i L*(alpha_i / C_i) for a loss whose conjugate is quadratic on its dual range,
    L*(v) = linear v + v^2 / quadratic on [0 or -inf, upper_factor] (``quadratic`` = inf: no
    square term), in one pass; +inf when some alpha_i leaves C_i times the range (up to a
    relative 1e-12 of the largest C_i).  The hinge, the clipped family (squared hinge,
    modified Huber, smoothed hinge) and least squares."""
    tol = _dual_slack(cost)
    total = 0.0
    square = np.isfinite(quadratic)
    for i in range(alpha.shape[0]):
        a = alpha[i]
        c = cost[i]
        if (nonnegative and a < -tol) or a > upper_factor * c + tol:
            return np.inf
        if c > 0.0:
            total += linear * a
            if square:
                total += a * a / (quadratic * c)
    return total


@njit(cache=True, nogil=True)
def entropy_conjugate_sum(alpha, cost):
    """sum_i C_i L*(alpha_i / C_i) for the logistic loss, L*(v) = v + v log v + (1 - v)
    log(1 - v) on [0, 1] (0 log 0 = 0), v clipped into it, in one pass; +inf when some
    alpha_i leaves [0, C_i] (up to a relative 1e-12 of the largest C_i); examples with C_i = 0
    add nothing.  The generic numpy form (``Loss.conjugate_sum``) made a dozen temporaries of
    n entries: 25-40 us of a small set's 200 us Newton iteration (issue 47)."""
    tol = _dual_slack(cost)
    total = 0.0
    for i in range(alpha.shape[0]):
        a = alpha[i]
        c = cost[i]
        if a < -tol or a > c + tol:
            return np.inf
        if c > 0.0:
            v = min(max(a / c, 0.0), 1.0)
            u = 1.0 - v
            value = v
            if v > 0.0:
                value += v * np.log(v)
            if u > 0.0:
                value += u * np.log(u)
            total += c * value
    return total


@njit(cache=True, nogil=True)
def conjugate_sum(code, p, alpha, cost):
    """sum_i C_i L*(alpha_i / C_i) for the loss of ``code``, in one pass, from a compiled loop
    (a Newton driver's certificate, ``solvers.problems.binary_kernels``): the same kernel and
    the same arguments as the loss's ``conjugate_sum`` (:func:`entropy_conjugate_sum` for the
    logistic loss, :func:`quadratic_conjugate_sum` with the loss's range and quadratic term
    for the others); NaN for lp (no conjugate kernel: its ``conjugate_sum`` is NumPy's)."""
    if code == LOGISTIC:
        return entropy_conjugate_sum(alpha, cost)
    if code == HINGE:
        return quadratic_conjugate_sum(alpha, cost, True, 1.0, 0.0, np.inf)
    if code == SQUARED_HINGE:  # ClippedLoss(kappa 2, xi_lo 0, width inf)
        return quadratic_conjugate_sum(alpha, cost, True, np.inf, 0.0, 4.0)
    if code == MODIFIED_HUBER:  # ClippedLoss(kappa 2, xi_lo 0, width 2)
        return quadratic_conjugate_sum(alpha, cost, True, 4.0, 0.0, 4.0)
    if code == LEAST_SQUARES:
        return quadratic_conjugate_sum(alpha, cost, False, np.inf, 0.0, 4.0)
    return np.nan


#: L(xi), L'(xi) and L''(xi) of one example by code, inlined into the calling kernel: the
#: public names of the per-example formulas for compiled drivers outside this package (a
#: Newton loop over the problem layer's kernels, ``solvers.problems.binary_kernels``).
value = _value
derivative = _derivative
curvature = _curvature


# -- the clipped family: sets, sums, line-search breakpoints ------------------------------------
#
# L(xi) with L'(xi) = clip(xi - xi_lo, 0, width): 0 for xi <= xi_lo (set I0), quadratic on
# (xi_lo, xi_lo + width) (I1, the least-squares rows), linear from xi_lo + width on (I2).


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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
