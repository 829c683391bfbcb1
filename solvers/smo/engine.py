"""The SMO engine of C-SVC (LIBSVM's ``Solver``), in Numba, on the shared kernel-row cache.

Dual (Fan, Chen & Lin 2005, eq. (1); Chang & Lin, LIBSVM, eq. (2))::

    minimize f(alpha) = 1/2 alpha'Q alpha - e'alpha
    subject to y'alpha = 0,  0 <= alpha_i <= C_i,        Q_ij = y_i y_j K(x_i, x_j)

The gradient G = Q alpha - e is maintained.  Each iteration picks the working set {i, j} by
WSS 2, "working set selection using second order information" (Fan, Chen & Lin, section 3):
i maximizes -y_t G_t over I_up, j minimizes -b_it^2 / a_it over the t in I_low with
-y_t G_t < -y_i G_i, where a_it = K_ii + K_tt - 2 K_it and b_it = -y_i G_i + y_t G_t; a
non-positive a_it is replaced by tau = 1e-12 (their treatment of non-positive-definite kernels,
section 4, such as the sigmoid).  This is LIBSVM's ``Solver::select_working_set``.  The
two-variable subproblem is solved exactly and clipped to the box (LIBSVM's update in
``Solver::Solve``).  Stopping: m(alpha) - M(alpha) <= eps, the maximal violating pair
(Keerthi et al. 2001; Fan, Chen & Lin's stopping condition), LIBSVM's ``-e``.

Shrinking (Chang & Lin, LIBSVM, section 5.1; Joachims 1999; LIBSVM's ``do_shrinking``): every
min(l, 1000) iterations the bounded variables whose gradient says they will stay bounded leave
the active set; the first time m - M <= 10 eps the whole set is made active again and the
gradient of the inactive variables reconstructed from G_bar_i = sum_{j: alpha_j = C_j} C_j Q_ij
(maintained whenever a variable reaches or leaves its upper bound) and the free variables' rows.
On termination the whole set is reconstructed and checked again, so the answer is the full
problem's.

Kernel rows come from :func:`solvers.core.kernels.cache_row` (full rows of K in float64; the
LRU cache keeps at least two rows, those of i and j).  Q_ij = y_i y_j K_ij is applied on the fly.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.core.kernels import cache_row

TAU = 1e-12
INF = np.inf

# positions in the int64 state array
ACTIVE_SIZE, COUNTER, UNSHRINK, ITERATIONS, LENGTH = 0, 1, 2, 3, 4
# return codes of smo_iterations
BUDGET, OPTIMAL = 0, 1


@njit(cache=True, inline="always")
def _upper(alpha, cost, t):
    return alpha[t] >= cost[t]


@njit(cache=True, inline="always")
def _lower(alpha, t):
    return alpha[t] <= 0.0


@njit(cache=True, inline="always")
def _clip_same_sign(first, second, total, cost_first):
    """One half of LIBSVM's clipping of a pair with y_i = y_j (first + second = total): if
    total exceeds the first's bound, the first at most that bound, else the second at least
    0.  Returns (first, second)."""
    if total > cost_first:
        if first > cost_first:
            first = cost_first
            second = total - cost_first
    elif second < 0.0:
        second = 0.0
        first = total
    return first, second


@njit(cache=True, inline="always")
def _extreme_violations(y, alpha, cost, G, order, size):
    """(max_{I_up} -y_t G_t, max_{I_low} y_t G_t) over the first ``size`` indices of
    ``order``: LIBSVM's Gmax1 and Gmax2, whose sum is m(alpha) - M(alpha)."""
    gmax1 = -INF
    gmax2 = -INF
    for k in range(size):
        t = order[k]
        if y[t] > 0:
            if not _upper(alpha, cost, t):
                gmax1 = max(gmax1, -G[t])
            if not _lower(alpha, t):
                gmax2 = max(gmax2, G[t])
        else:
            if not _upper(alpha, cost, t):
                gmax2 = max(gmax2, -G[t])
            if not _lower(alpha, t):
                gmax1 = max(gmax1, G[t])
    return gmax1, gmax2


@njit(cache=True, nogil=True)
def violation(y, alpha, cost, G, order, size):
    """m(alpha) - M(alpha) over the first ``size`` indices of ``order``:
    max_{I_up} -y_t G_t - min_{I_low} -y_t G_t."""
    gmax1, gmax2 = _extreme_violations(y, alpha, cost, G, order, size)
    return gmax1 + gmax2


@njit(cache=True, nogil=True)
def inactive_gradient(rows, columns, kernel, store, y, alpha, cost, G_bar, order, state, out):
    """The gradient of the inactive (shrunk) variables into ``out``: G_bar_t - 1 plus the
    free variables' rows (LIBSVM's ``reconstruct_gradient``); ``out`` of the active ones is
    left as it is."""
    active = state[ACTIVE_SIZE]
    length = state[LENGTH]
    if active == length:
        return
    slots = store[0]
    for k in range(active, length):
        t = order[k]
        out[t] = G_bar[t] - 1.0
    for k in range(active):
        i = order[k]
        if 0.0 < alpha[i] < cost[i]:
            row = slots[cache_row(rows, columns, kernel, store, i)]
            coef = y[i] * alpha[i]
            for m in range(active, length):
                t = order[m]
                out[t] += coef * y[t] * row[t]


@njit(cache=True, nogil=True)
def reconstruct_gradient(rows, columns, kernel, store, y, alpha, cost, G, G_bar, order, state):
    """G of the inactive variables reconstructed (:func:`inactive_gradient`), then every
    variable active."""
    inactive_gradient(rows, columns, kernel, store, y, alpha, cost, G_bar, order, state, G)
    state[ACTIVE_SIZE] = state[LENGTH]


@njit(cache=True, inline="always")
def _be_shrunk(y, alpha, cost, G, t, gmax1, gmax2):
    if _upper(alpha, cost, t):
        if y[t] > 0:
            return -G[t] > gmax1
        return -G[t] > gmax2
    if _lower(alpha, t):
        if y[t] > 0:
            return G[t] > gmax2
        return G[t] > gmax1
    return False


@njit(cache=True, nogil=True)
def do_shrinking(rows, columns, kernel, store, y, alpha, cost, G, G_bar, order, state, eps):
    """LIBSVM's ``do_shrinking``: unshrink once when m - M <= 10 eps, then move the variables
    that ``be_shrunk`` to the end of the active part of ``order``."""
    gmax1, gmax2 = _extreme_violations(y, alpha, cost, G, order, state[ACTIVE_SIZE])
    if state[UNSHRINK] == 0 and gmax1 + gmax2 <= eps * 10.0:
        state[UNSHRINK] = 1
        reconstruct_gradient(rows, columns, kernel, store, y, alpha, cost, G, G_bar, order,
                             state)
    size = state[ACTIVE_SIZE]
    k = 0
    while k < size:
        if _be_shrunk(y, alpha, cost, G, order[k], gmax1, gmax2):
            size -= 1
            while size > k:
                if not _be_shrunk(y, alpha, cost, G, order[size], gmax1, gmax2):
                    tmp = order[k]
                    order[k] = order[size]
                    order[size] = tmp
                    break
                size -= 1
        k += 1
    state[ACTIVE_SIZE] = size


@njit(cache=True, nogil=True)
def select_working_set(rows, columns, kernel, store, diag, y, alpha, cost, G, order, size,
                       eps):
    """WSS 2 with the tau fix over the active indices; (i, j, m - M), i = -1 when
    m - M < eps (optimal at eps) or no j exists."""
    slots = store[0]
    gmax = -INF
    gmax2 = -INF
    gmax_idx = -1
    for k in range(size):
        t = order[k]
        if y[t] > 0:
            if not _upper(alpha, cost, t) and -G[t] >= gmax:
                gmax = -G[t]
                gmax_idx = t
        else:
            if not _lower(alpha, t) and G[t] >= gmax:
                gmax = G[t]
                gmax_idx = t
    i = gmax_idx
    gmin_idx = -1
    obj_diff_min = INF
    if i >= 0:
        row = slots[cache_row(rows, columns, kernel, store, i)]
        kii = diag[i]
        for k in range(size):
            t = order[k]
            # t in I_low: y_t = +1 and alpha_t > 0, or y_t = -1 and alpha_t < C_t; its
            # violation is y_t G_t (LIBSVM's two branches, one with the sign folded in)
            if y[t] > 0:
                if _lower(alpha, t):
                    continue
                y_grad = G[t]
            else:
                if _upper(alpha, cost, t):
                    continue
                y_grad = -G[t]
            grad_diff = gmax + y_grad
            if y_grad >= gmax2:
                gmax2 = y_grad
            if grad_diff > 0.0:
                quad = kii + diag[t] - 2.0 * row[t]
                if quad <= 0.0:
                    quad = TAU
                obj_diff = -(grad_diff * grad_diff) / quad
                if obj_diff <= obj_diff_min:
                    gmin_idx = t
                    obj_diff_min = obj_diff
    else:
        for k in range(size):  # m(alpha) - M(alpha) still needs M
            t = order[k]
            if y[t] > 0:
                if not _lower(alpha, t):
                    gmax2 = max(gmax2, G[t])
            elif not _upper(alpha, cost, t):
                gmax2 = max(gmax2, -G[t])
    gap = gmax + gmax2
    if gap < eps or gmin_idx == -1:
        return -1, -1, gap
    return i, gmin_idx, gap


@njit(cache=True, nogil=True)
def smo_iterations(rows, columns, kernel, store, diag, y, alpha, cost, G, G_bar, order, state,
                   eps, budget, shrinking):
    """At most ``budget`` SMO iterations (LIBSVM's ``Solver::Solve`` loop).  Returns
    (code, m - M): OPTIMAL when m(alpha) - M(alpha) < eps holds on the whole set (the gradient
    reconstructed), BUDGET otherwise."""
    slots = store[0]
    length = state[LENGTH]
    done = 0
    gap = INF
    while done < budget:
        state[COUNTER] -= 1
        if state[COUNTER] <= 0:
            state[COUNTER] = min(length, 1000)
            if shrinking:
                do_shrinking(rows, columns, kernel, store, y, alpha, cost, G, G_bar, order,
                             state, eps)
        i, j, gap = select_working_set(rows, columns, kernel, store, diag, y, alpha, cost, G,
                                       order, state[ACTIVE_SIZE], eps)
        if i < 0:
            reconstruct_gradient(rows, columns, kernel, store, y, alpha, cost, G, G_bar,
                                 order, state)
            i, j, gap = select_working_set(rows, columns, kernel, store, diag, y, alpha, cost,
                                           G, order, state[ACTIVE_SIZE], eps)
            if i < 0:
                return OPTIMAL, gap
            state[COUNTER] = 1  # shrink again at the next iteration
        done += 1
        state[ITERATIONS] += 1
        row_i = slots[cache_row(rows, columns, kernel, store, i)]
        row_j = slots[cache_row(rows, columns, kernel, store, j)]
        ci = cost[i]
        cj = cost[j]
        old_i = alpha[i]
        old_j = alpha[j]
        qij = y[i] * y[j] * row_i[j]
        if y[i] != y[j]:
            quad = diag[i] + diag[j] + 2.0 * qij
            if quad <= 0.0:
                quad = TAU
            delta = (-G[i] - G[j]) / quad
            diff = alpha[i] - alpha[j]
            alpha[i] += delta
            alpha[j] += delta
            if diff > 0.0:
                if alpha[j] < 0.0:
                    alpha[j] = 0.0
                    alpha[i] = diff
            elif alpha[i] < 0.0:
                alpha[i] = 0.0
                alpha[j] = -diff
            if diff > ci - cj:
                if alpha[i] > ci:
                    alpha[i] = ci
                    alpha[j] = ci - diff
            elif alpha[j] > cj:
                alpha[j] = cj
                alpha[i] = cj + diff
        else:
            quad = diag[i] + diag[j] - 2.0 * qij
            if quad <= 0.0:
                quad = TAU
            delta = (G[i] - G[j]) / quad
            total = alpha[i] + alpha[j]
            alpha[i] -= delta
            alpha[j] += delta
            # LIBSVM's clipping to the box, i's bound then j's (the same rule, roles swapped)
            alpha[i], alpha[j] = _clip_same_sign(alpha[i], alpha[j], total, ci)
            alpha[j], alpha[i] = _clip_same_sign(alpha[j], alpha[i], total, cj)
        di = (alpha[i] - old_i) * y[i]
        dj = (alpha[j] - old_j) * y[j]
        for k in range(state[ACTIVE_SIZE]):
            t = order[k]
            G[t] += y[t] * (row_i[t] * di + row_j[t] * dj)
        # G_bar follows the variables that reached or left their upper bound
        if (old_i >= ci) != (alpha[i] >= ci):
            sign = -ci if old_i >= ci else ci
            for k in range(length):
                t = order[k]
                G_bar[t] += sign * y[i] * y[t] * row_i[t]
        if (old_j >= cj) != (alpha[j] >= cj):
            sign = -cj if old_j >= cj else cj
            for k in range(length):
                t = order[k]
                G_bar[t] += sign * y[j] * y[t] * row_j[t]
    return BUDGET, gap


@njit(cache=True, nogil=True)
def rho_of(y, alpha, cost, G, order, length):
    """LIBSVM's ``calculate_rho``: the mean of y_i G_i over the free variables, else the
    midpoint of the bounds the bounded ones give.  The bias is b = -rho."""
    ub = INF
    lb = -INF
    free = 0
    total = 0.0
    for k in range(length):
        t = order[k]
        yg = y[t] * G[t]
        if _upper(alpha, cost, t):
            if y[t] < 0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        elif _lower(alpha, t):
            if y[t] > 0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        else:
            free += 1
            total += yg
    if free > 0:
        return total / free
    return (ub + lb) / 2.0
