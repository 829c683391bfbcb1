"""The SMO engine of LIBSVM's ``Solver`` and ``Solver_NU``, in Numba, on the shared kernel-row
cache.

Every svm_type of LIBSVM is one problem (Chang & Lin, LIBSVM, ACM TIST 2 (2011), eq. (11))::

    minimize f(alpha) = 1/2 alpha'Q alpha + p'alpha
    subject to y'alpha = Delta,  0 <= alpha_t <= C_t,      Q_st = y_s y_t K(x_idx(s), x_idx(t))

over variables t = 0..m-1 with signs y_t = +-1, a linear term p and a map idx from variables to
training rows: C-SVC has m = l variables, idx the identity, p = -e (Fan, Chen & Lin 2005, eq.
(1)); one-class has y = e, p = 0; epsilon-SVR and nu-SVR have m = 2l variables, alpha_t and
alpha*_t of row t with signs +1 and -1 and idx(t) = idx(t + l) = t (LIBSVM's ``SVR_Q``).  The
nu-formulations (nu-SVC, nu-SVR; Chang & Lin, "Training nu-support vector classifiers" (2001)
and "... regression" (2002)) add e'alpha = constant, kept by ``nu=True``: the working set is
then two variables of the same sign (``Solver_NU``).

The gradient G = Q alpha + p is maintained.  Each iteration picks the working set {i, j} by
WSS 2, "working set selection using second order information" (Fan, Chen & Lin, section 3):
i maximizes -y_t G_t over I_up, j minimizes -b_it^2 / a_it over the t in I_low with
-y_t G_t < -y_i G_i, where a_it = K_ii + K_tt - 2 K_it and b_it = -y_i G_i + y_t G_t; a
non-positive a_it is replaced by tau = 1e-12 (their treatment of non-positive-definite kernels,
section 4, such as the sigmoid).  This is LIBSVM's ``Solver::select_working_set``; with
``nu=True`` i is chosen in each sign separately (i_p over y = +1, i_n over y = -1) and j from
the sign whose i it pairs with (``Solver_NU::select_working_set``, Chang & Lin 2001 section 4).
The two-variable subproblem is solved exactly and clipped to the box (LIBSVM's update in
``Solver::Solve``).  Stopping: m(alpha) - M(alpha) <= eps, the maximal violating pair
(Keerthi et al. 2001; Fan, Chen & Lin's stopping condition), LIBSVM's ``-e``; with ``nu=True``
the larger of the two signs' violations.

Shrinking (Chang & Lin, LIBSVM, section 5.1; Joachims 1999; LIBSVM's ``do_shrinking``): every
min(l, 1000) iterations the bounded variables whose gradient says they will stay bounded leave
the active set; the first time m - M <= 10 eps the whole set is made active again and the
gradient of the inactive variables reconstructed from G_bar_t = sum_{s: alpha_s = C_s} C_s Q_ts
(maintained whenever a variable reaches or leaves its upper bound) and the free variables' rows.
On termination the whole set is reconstructed and checked again, so the answer is the full
problem's.

Kernel rows come from :func:`solvers.core.kernels.cache_row` (full rows of K over the training
rows, in float64; the LRU cache keeps at least two rows, those of i and j): K(s, t) is
``row_s[idx[t]]`` and Q_st = y_s y_t K(s, t) is applied on the fly, so the two variables of an
SVR row share one cached row (LIBSVM's ``SVR_Q`` does the same).  ``qd`` is K(t, t) per
variable.
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


@njit(cache=True, inline="always")
def _extreme_violations_nu(y, alpha, cost, G, order, size):
    """``Solver_NU::do_shrinking``'s four extremes over the first ``size`` indices of
    ``order``: max -G over I_up and max G over I_low among y = +1 (Gmax1, Gmax2), max G
    over I_low and max -G over I_up among y = -1 (Gmax3, Gmax4); m - M of the positive
    variables is Gmax1 + Gmax2, of the negative ones Gmax3 + Gmax4."""
    gmax1 = -INF
    gmax2 = -INF
    gmax3 = -INF
    gmax4 = -INF
    for k in range(size):
        t = order[k]
        if not _upper(alpha, cost, t):
            if y[t] > 0:
                gmax1 = max(gmax1, -G[t])
            else:
                gmax4 = max(gmax4, -G[t])
        if not _lower(alpha, t):
            if y[t] > 0:
                gmax2 = max(gmax2, G[t])
            else:
                gmax3 = max(gmax3, G[t])
    return gmax1, gmax2, gmax3, gmax4


@njit(cache=True, nogil=True)
def violation(y, alpha, cost, G, order, size, nu):
    """m(alpha) - M(alpha) over the first ``size`` indices of ``order``:
    max_{I_up} -y_t G_t - min_{I_low} -y_t G_t; with ``nu`` the larger of the two signs'
    (each sign has its own equality constraint)."""
    if nu:
        g1, g2, g3, g4 = _extreme_violations_nu(y, alpha, cost, G, order, size)
        return max(g1 + g2, g3 + g4)
    gmax1, gmax2 = _extreme_violations(y, alpha, cost, G, order, size)
    return gmax1 + gmax2


@njit(cache=True, nogil=True)
def inactive_gradient(rows, columns, kernel, store, index, y, p, alpha, cost, G_bar, order,
                      state, out):
    """The gradient of the inactive (shrunk) variables into ``out``: G_bar_t + p_t plus the
    free variables' rows (LIBSVM's ``reconstruct_gradient``); ``out`` of the active ones is
    left as it is."""
    active = state[ACTIVE_SIZE]
    length = state[LENGTH]
    if active == length:
        return
    slots = store[0]
    for k in range(active, length):
        t = order[k]
        out[t] = G_bar[t] + p[t]
    for k in range(active):
        i = order[k]
        if 0.0 < alpha[i] < cost[i]:
            row = slots[cache_row(rows, columns, kernel, store, index[i])]
            coef = y[i] * alpha[i]
            for m in range(active, length):
                t = order[m]
                out[t] += coef * y[t] * row[index[t]]


@njit(cache=True, nogil=True)
def reconstruct_gradient(rows, columns, kernel, store, index, y, p, alpha, cost, G, G_bar,
                         order, state):
    """G of the inactive variables reconstructed (:func:`inactive_gradient`), then every
    variable active."""
    inactive_gradient(rows, columns, kernel, store, index, y, p, alpha, cost, G_bar, order,
                      state, G)
    state[ACTIVE_SIZE] = state[LENGTH]


@njit(cache=True, nogil=True)
def initial_gradient(rows, columns, kernel, store, index, y, p, G, G_bar, order, length,
                     row_coef, row_bar):
    """G = Q alpha + p and G_bar = sum_{s: alpha_s = C_s} C_s Q_s at a starting point with
    nonzero alpha (LIBSVM's ``Solver::Solve`` before its loop: the nu-formulations and
    one-class start from a feasible alpha != 0), by training row: ``row_coef[r]`` = sum of
    y_s alpha_s and ``row_bar[r]`` = sum of y_s C_s over row r's variables (at their bound
    for the latter), so that Q alpha_t = y_t sum_r row_coef[r] K(r, idx(t)).  A row whose
    variables cancel (nu-SVR starts with alpha_i = alpha*_i) costs no kernel row, where
    LIBSVM computes one per nonzero variable."""
    slots = store[0]
    for k in range(length):
        t = order[k]
        G[t] = p[t]
        G_bar[t] = 0.0
    for r in range(row_coef.shape[0]):
        if row_coef[r] == 0.0 and row_bar[r] == 0.0:
            continue
        row = slots[cache_row(rows, columns, kernel, store, r)]
        for m in range(length):
            t = order[m]
            q = y[t] * row[index[t]]
            G[t] += row_coef[r] * q
            G_bar[t] += row_bar[r] * q


@njit(cache=True, inline="always")
def _be_shrunk(y, alpha, cost, G, t, gmax1, gmax2, gmax3, gmax4):
    """``Solver_NU::be_shrunk``; ``Solver::be_shrunk`` with (gmax3, gmax4) = (gmax1, gmax2):
    one pair of extremes for both signs."""
    if _upper(alpha, cost, t):
        if y[t] > 0:
            return -G[t] > gmax1
        return -G[t] > gmax4
    if _lower(alpha, t):
        if y[t] > 0:
            return G[t] > gmax2
        return G[t] > gmax3
    return False


@njit(cache=True, nogil=True)
def do_shrinking(rows, columns, kernel, store, index, y, p, alpha, cost, G, G_bar, order,
                 state, eps, nu):
    """LIBSVM's ``do_shrinking`` (``Solver_NU``'s with ``nu``): unshrink once when m - M <=
    10 eps, then move the variables that ``be_shrunk`` to the end of the active part of
    ``order``."""
    size = state[ACTIVE_SIZE]
    if nu:
        gmax1, gmax2, gmax3, gmax4 = _extreme_violations_nu(y, alpha, cost, G, order, size)
        worst = max(gmax1 + gmax2, gmax3 + gmax4)
    else:
        gmax1, gmax2 = _extreme_violations(y, alpha, cost, G, order, size)
        gmax3, gmax4 = gmax1, gmax2
        worst = gmax1 + gmax2
    if state[UNSHRINK] == 0 and worst <= eps * 10.0:
        state[UNSHRINK] = 1
        reconstruct_gradient(rows, columns, kernel, store, index, y, p, alpha, cost, G, G_bar,
                             order, state)
    size = state[ACTIVE_SIZE]
    k = 0
    while k < size:
        if _be_shrunk(y, alpha, cost, G, order[k], gmax1, gmax2, gmax3, gmax4):
            size -= 1
            while size > k:
                t = order[size]
                if not _be_shrunk(y, alpha, cost, G, t, gmax1, gmax2, gmax3, gmax4):
                    order[size] = order[k]
                    order[k] = t
                    break
                size -= 1
        k += 1
    state[ACTIVE_SIZE] = size


@njit(cache=True, inline="always")
def _low_violation(y, alpha, cost, G, t):
    """(whether t is in I_low, its violation y_t G_t): y_t = +1 and alpha_t > 0, or y_t = -1
    and alpha_t < C_t (LIBSVM's two branches, one with the sign folded in)."""
    if y[t] > 0:
        return not _lower(alpha, t), G[t]
    return not _upper(alpha, cost, t), -G[t]


@njit(cache=True, inline="always")
def _second_order_gain(grad_diff, kii, ktt, kit):
    """WSS 2's -b^2 / a for the pair (i, t), a = K_ii + K_tt - 2 K_it (tau when a <= 0)."""
    quad = kii + ktt - 2.0 * kit
    if quad <= 0.0:
        quad = TAU
    return -(grad_diff * grad_diff) / quad


@njit(cache=True, nogil=True)
def select_working_set(rows, columns, kernel, store, index, qd, y, alpha, cost, G, order,
                       size, eps):
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
        row = slots[cache_row(rows, columns, kernel, store, index[i])]
        kii = qd[i]
        for k in range(size):
            t = order[k]
            low, y_grad = _low_violation(y, alpha, cost, G, t)
            if not low:
                continue
            grad_diff = gmax + y_grad
            if y_grad >= gmax2:
                gmax2 = y_grad
            if grad_diff > 0.0:
                obj_diff = _second_order_gain(grad_diff, kii, qd[t], row[index[t]])
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
def select_working_set_nu(rows, columns, kernel, store, index, qd, y, alpha, cost, G, order,
                          size, eps):
    """``Solver_NU::select_working_set``: WSS 2 within each sign (the pair keeps both
    y'alpha and e'alpha); i_p maximizes -G over the positive variables in I_up, i_n
    maximizes G over the negative ones in I_low, and j minimizes -b^2 / a against the i of
    its own sign (ties to the later t).  (i, j, max of the two signs' m - M); i = -1 when
    that is < eps or no j exists.  As LIBSVM, one pass over the active set chooses j among
    both signs, with the rows of i_p and i_n at hand (the cache holds at least two rows)."""
    gmaxp = -INF
    gmaxp_idx = -1
    gmaxn = -INF
    gmaxn_idx = -1
    for k in range(size):
        t = order[k]
        if y[t] > 0:
            if not _upper(alpha, cost, t) and -G[t] >= gmaxp:
                gmaxp = -G[t]
                gmaxp_idx = t
        elif not _lower(alpha, t) and G[t] >= gmaxn:
            gmaxn = G[t]
            gmaxn_idx = t
    ip = gmaxp_idx
    iN = gmaxn_idx
    slots = store[0]
    # a sign without its i reads no row (qd stands in; its t only update the violation)
    row_p = slots[cache_row(rows, columns, kernel, store, index[ip])] if ip >= 0 else qd
    row_n = slots[cache_row(rows, columns, kernel, store, index[iN])] if iN >= 0 else qd
    gmaxp2 = -INF
    gmaxn2 = -INF
    gmin_idx = -1
    obj_diff_min = INF
    for k in range(size):
        t = order[k]
        # t in I_low of its sign: for +1 alpha_t > 0 (violation G_t), for -1 alpha_t < C_t
        # (violation -G_t), paired with its sign's i; Q between two variables of one sign
        # is +K
        low, violation_t = _low_violation(y, alpha, cost, G, t)
        if not low:
            continue
        if y[t] > 0:
            gmaxp2 = max(gmaxp2, violation_t)
            if ip < 0:
                continue
            grad_diff, kii, kit = gmaxp + violation_t, qd[ip], row_p[index[t]]
        else:
            gmaxn2 = max(gmaxn2, violation_t)
            if iN < 0:
                continue
            grad_diff, kii, kit = gmaxn + violation_t, qd[iN], row_n[index[t]]
        if grad_diff > 0.0:
            obj_diff = _second_order_gain(grad_diff, kii, qd[t], kit)
            if obj_diff <= obj_diff_min:
                gmin_idx = t
                obj_diff_min = obj_diff
    gap = max(gmaxp + gmaxp2, gmaxn + gmaxn2)
    if gap < eps or gmin_idx == -1:
        return -1, -1, gap
    i = ip if y[gmin_idx] > 0 else iN
    return i, gmin_idx, gap


@njit(cache=True, nogil=True)
def _select(rows, columns, kernel, store, index, qd, y, alpha, cost, G, order, size, eps,
            nu):
    if nu:
        return select_working_set_nu(rows, columns, kernel, store, index, qd, y, alpha, cost,
                                     G, order, size, eps)
    return select_working_set(rows, columns, kernel, store, index, qd, y, alpha, cost, G,
                              order, size, eps)


@njit(cache=True, nogil=True)
def smo_iterations(rows, columns, kernel, store, index, qd, y, p, alpha, cost, G, G_bar, order,
                   state, eps, budget, shrinking, nu):
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
                do_shrinking(rows, columns, kernel, store, index, y, p, alpha, cost, G, G_bar,
                             order, state, eps, nu)
        i, j, gap = _select(rows, columns, kernel, store, index, qd, y, alpha, cost, G, order,
                            state[ACTIVE_SIZE], eps, nu)
        if i < 0:
            reconstruct_gradient(rows, columns, kernel, store, index, y, p, alpha, cost, G,
                                 G_bar, order, state)
            i, j, gap = _select(rows, columns, kernel, store, index, qd, y, alpha, cost, G,
                                order, state[ACTIVE_SIZE], eps, nu)
            if i < 0:
                return OPTIMAL, gap
            state[COUNTER] = 1  # shrink again at the next iteration
        done += 1
        state[ITERATIONS] += 1
        row_i = slots[cache_row(rows, columns, kernel, store, index[i])]
        row_j = slots[cache_row(rows, columns, kernel, store, index[j])]
        ci = cost[i]
        cj = cost[j]
        old_i = alpha[i]
        old_j = alpha[j]
        qij = y[i] * y[j] * row_i[index[j]]
        if y[i] != y[j]:
            quad = qd[i] + qd[j] + 2.0 * qij
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
            quad = qd[i] + qd[j] - 2.0 * qij
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
            r = index[t]
            G[t] += y[t] * (row_i[r] * di + row_j[r] * dj)
        # G_bar follows the variables that reached or left their upper bound
        if (old_i >= ci) != (alpha[i] >= ci):
            sign = -ci if old_i >= ci else ci
            for k in range(length):
                t = order[k]
                G_bar[t] += sign * y[i] * y[t] * row_i[index[t]]
        if (old_j >= cj) != (alpha[j] >= cj):
            sign = -cj if old_j >= cj else cj
            for k in range(length):
                t = order[k]
                G_bar[t] += sign * y[j] * y[t] * row_j[index[t]]
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


@njit(cache=True, inline="always")
def _sign_level(G, alpha, cost, order, length, y, sign):
    """``Solver_NU::calculate_rho``'s r1 (sign +1) or r2 (sign -1): the mean of G over that
    sign's free variables, else the midpoint of its bounded ones' bounds."""
    ub = INF
    lb = -INF
    free = 0
    total = 0.0
    for k in range(length):
        t = order[k]
        if y[t] != sign:
            continue
        if _upper(alpha, cost, t):
            lb = max(lb, G[t])
        elif _lower(alpha, t):
            ub = min(ub, G[t])
        else:
            free += 1
            total += G[t]
    if free > 0:
        return total / free
    return (ub + lb) / 2.0


@njit(cache=True, nogil=True)
def rho_and_r_nu(y, alpha, cost, G, order, length):
    """``Solver_NU::calculate_rho``: (rho, r) = ((r1 - r2)/2, (r1 + r2)/2) from the two
    signs' levels; b = -rho, and r is nu-SVC's margin rho of Chang & Lin (2001) (the
    rescaling 1/r) or minus nu-SVR's epsilon."""
    r1 = _sign_level(G, alpha, cost, order, length, y, 1.0)
    r2 = _sign_level(G, alpha, cost, order, length, y, -1.0)
    return (r1 - r2) / 2.0, (r1 + r2) / 2.0
