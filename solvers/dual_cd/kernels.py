"""The Numba loop of dual coordinate descent: Hsieh et al. (ICML 2008), Algorithm 1 with the
random permutation of section 3.1 and the shrinking of Algorithm 3 (LIBLINEAR's
``solve_l2r_l1l2_svc``).  Serial (each update depends on the last), ``nogil`` so a portfolio
can run it on a thread beside others; rows through the core's inlined row primitives.

The dual it minimizes (the package docstring gives the mapping)::

    f(alpha) = 1/2 alpha' Qbar alpha - e' alpha,   0 <= alpha_i <= U_i,
    Qbar = Q + D,  Q_ij = y_i y_j x~_i . x~_j,  D = diag(diag_i)

with w = sum_i alpha_i y_i x~_i kept up to date (its last entry the coefficient of the bias
column of value ``s``; s = 0 without a bias).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.core.sparse import row_axpy, row_dot


@njit(cache=True, nogil=True)
def _random_below(rng, k):
    """A pseudo-random integer in [0, k) (xorshift64*: reproducible from the seed, and
    thread-safe as the state is the caller's)."""
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    return np.int64((x * np.uint64(2685821657736338717)) >> np.uint64(11)) % k


@njit(cache=True, nogil=True)
def _shuffle_active(index, active, rng):
    """Permute ``index[:active]`` uniformly (Fisher-Yates, first to last) with ``rng``."""
    for k in range(active - 1):
        j = k + _random_below(rng, active - k)
        t = index[k]
        index[k] = index[j]
        index[j] = t


@njit(cache=True, nogil=True)
def dcd_epochs(indptr, indices, data, y, s, qd, diag, upper, alpha, w, index, istate,
               fstate, rng, max_epochs, eps, work_budget, shrinking, sigma=1.0):
    """Outer iterations of Algorithm 3 until one of: ``max_epochs`` done; the projected
    gradient's spread M-bar - m-bar over the full set is at most ``eps`` (LIBLINEAR's stop);
    the rows touched since the call (in stored entries) reach ``work_budget`` (the caller then
    checks the duality gap).

    State kept across calls: ``index`` (the permutation; its first ``istate[0]`` entries are
    the active set), ``fstate`` = (M-bar, m-bar) of the last pass (Algorithm 3's bounds:
    +inf / -inf when unknown), ``rng`` the generator's state.  ``alpha`` and ``w`` are
    updated in place.

    ``sigma``: the scale of the quadratic term of CoCoA+'s local subproblem
    (:mod:`solvers.dual_cd.cocoa`): ``w`` is then the partition's v = w + sigma dw, each step
    moves it by sigma (alpha_i - alpha_i^old) y_i x~_i, and ``qd`` holds sigma ||x~_i||^2 +
    D_ii.  1 (the serial descent): every product by it is exact, the steps are Hsieh et
    al.'s bit for bit.

    Returns (epochs run, 1 if the spread rule held on the full set else 0, the last pass's
    spread, the stored entries touched).
    """
    n = y.shape[0]
    d = w.shape[0] - 1
    active = istate[0]
    pg_max_old = fstate[0]
    pg_min_old = fstate[1]
    work = 0
    epochs = 0
    converged = 0
    spread = np.inf
    while epochs < max_epochs:
        pg_max_new = -np.inf
        pg_min_new = np.inf
        # section 3.1: a random permutation of the active set every outer iteration
        _shuffle_active(index, active, rng)
        k = 0
        while k < active:
            i = index[k]
            yi = y[i]
            start = indptr[i]
            end = indptr[i + 1]
            G = yi * (row_dot(indptr, indices, data, i, w) + s * w[d]) - 1.0 \
                + alpha[i] * diag[i]
            work += end - start + 1
            u = upper[i]
            pg = 0.0
            a = alpha[i]
            if a == 0.0:
                if shrinking and G > pg_max_old:
                    active -= 1
                    index[k] = index[active]
                    index[active] = i
                    continue
                elif G < 0.0:
                    pg = G
            elif a == u:
                if shrinking and G < pg_min_old:
                    active -= 1
                    index[k] = index[active]
                    index[active] = i
                    continue
                elif G > 0.0:
                    pg = G
            else:
                pg = G
            if pg > pg_max_new:
                pg_max_new = pg
            if pg < pg_min_new:
                pg_min_new = pg
            if abs(pg) > 1e-12:
                if qd[i] > 0.0:
                    new = min(max(a - G / qd[i], 0.0), u)
                else:  # an empty row, no bias, the hinge: f is linear in alpha_i (G < 0)
                    new = u
                alpha[i] = new
                delta = (new - a) * yi * sigma
                row_axpy(indptr, indices, data, i, delta, w)
                w[d] += delta * s
                work += end - start + 1
            k += 1
        epochs += 1
        spread = pg_max_new - pg_min_new
        if spread <= eps:
            if active == n:
                converged = 1
                pg_max_old = pg_max_new if pg_max_new > 0.0 else np.inf
                pg_min_old = pg_min_new if pg_min_new < 0.0 else -np.inf
                break
            # Algorithm 3: the shrunk problem is solved; check the full set once more
            active = n
            pg_max_old = np.inf
            pg_min_old = -np.inf
            if work >= work_budget:
                break
            continue
        pg_max_old = pg_max_new if pg_max_new > 0.0 else np.inf
        pg_min_old = pg_min_new if pg_min_new < 0.0 else -np.inf
        if work >= work_budget:
            break
    istate[0] = active
    fstate[0] = pg_max_old
    fstate[1] = pg_min_old
    return epochs, converged, spread, work


#: Yu, Huang & Lin's modified Newton method on one coordinate (LIBLINEAR's solve_l2r_lr_dual):
#: at most this many Newton steps, and eta (their xi) the factor of a step that would leave
#: (0, C_i) on the left
LR_MAX_INNER_ITER = 100
LR_ETA = 0.1


@njit(cache=True, nogil=True)
def lr_dual_epochs(indptr, indices, data, y, s, xTx, upper, alpha, complement, w, index,
                   fstate, rng, max_epochs, eps, work_budget):
    """Outer iterations of Yu, Huang & Lin's dual coordinate descent for logistic regression
    (Machine Learning 85, 2011, Algorithm 5; LIBLINEAR ``-s 7``'s ``solve_l2r_lr_dual``) on

        minimize  1/2 alpha'Q alpha + sum_i alpha_i log alpha_i + (C_i - alpha_i) log(C_i -
                  alpha_i),   0 < alpha_i < C_i,   Q_ij = y_i y_j x~_i . x~_j

    keeping alpha_i and C_i - alpha_i (``complement``) both, so that the one near 0 keeps its
    relative precision.  For each example of a random permutation: with a = Q_ii and
    b = y_i w . x~_i, minimize over z = alpha_i (when 1/2 a (C_i - 2 alpha_i) + b >= 0) or
    z = C_i - alpha_i (else) the sub-problem g(z) = z log z + (C_i - z) log(C_i - z) +
    a/2 (z - z_old)^2 +- b (z - z_old) (their (30)) by Newton's method from z_old (divided by
    10 first when it is above C_i / 2), a step to z <= 0 replaced by z eta (eta = 0.1), until
    |g'(z)| < the inner tolerance (``fstate[0]``), at most 100 steps.  After each pass the inner
    tolerance is divided by 10, down to ``fstate[1]`` = min(1e-8, eps), whenever the pass took
    at most n/10 Newton steps in all; the stop (LIBLINEAR's) is max_i |g'(z_old)| < ``eps``.
    No shrinking (LIBLINEAR has none for ``-s 7``: no alpha_i reaches a bound).

    Stops also after ``max_epochs`` or once ``work_budget`` stored entries were touched.
    Returns (epochs run, 1 if the rule held, the last pass's largest |g'|, the stored entries
    touched)."""
    n = y.shape[0]
    d = w.shape[0] - 1
    innereps = fstate[0]
    innereps_min = fstate[1]
    work = 0
    epochs = 0
    converged = 0
    gmax = np.inf
    while epochs < max_epochs:
        _shuffle_active(index, n, rng)
        newton_steps = 0
        gmax = 0.0
        for k in range(n):
            i = index[k]
            yi = y[i]
            C = upper[i]
            if C <= 0.0:  # a zero cost (a zero sample weight): alpha_i = 0, out of the dual
                continue
            nnz = indptr[i + 1] - indptr[i] + 1
            a = xTx[i]
            b = yi * (row_dot(indptr, indices, data, i, w) + s * w[d])
            work += nnz
            # which of alpha_i and C_i - alpha_i to move: the one whose sub-problem's optimum
            # lies in (0, C_i / 2] (Yu et al., section 3.2)
            sign = 1.0
            z_old = alpha[i]
            if 0.5 * a * (complement[i] - alpha[i]) + b < 0.0:
                sign = -1.0
                z_old = complement[i]
            z = z_old
            if C - z < 0.5 * C:
                z = 0.1 * z
            gp = a * (z - z_old) + sign * b + np.log(z / (C - z))
            if abs(gp) > gmax:
                gmax = abs(gp)
            inner = 0
            while inner <= LR_MAX_INNER_ITER:
                if abs(gp) < innereps:
                    break
                gpp = a + C / (C - z) / z
                step = z - gp / gpp
                if step <= 0.0:
                    z *= LR_ETA
                elif step >= C:  # not in theory (the optimum is at most C/2); round-off
                    z = 0.5 * (z + C)
                else:
                    z = step
                gp = a * (z - z_old) + sign * b + np.log(z / (C - z))
                newton_steps += 1
                inner += 1
            if inner > 0:
                if sign > 0.0:
                    alpha[i] = z
                    complement[i] = C - z
                else:
                    complement[i] = z
                    alpha[i] = C - z
                delta = sign * (z - z_old) * yi
                row_axpy(indptr, indices, data, i, delta, w)
                w[d] += delta * s
                work += nnz
        epochs += 1
        if gmax < eps:
            converged = 1
            break
        if newton_steps <= n // 10:
            innereps = max(innereps_min, 0.1 * innereps)
        if work >= work_budget:
            break
    fstate[0] = innereps
    return epochs, converged, gmax, work


@njit(cache=True, nogil=True)
def _crammer_singer_step(A, y_position, C, B, D, out, size):
    """The sub-problem of one example exactly (Keerthi et al. 2008, section 3; LIBLINEAR's
    ``solve_sub_problem``) over its ``size`` active classes (positions 0..size-1 of B and
    out; the shrunk ones sit at their bounds): minimize 1/2 A sum_m a_m^2 + sum_m B_m a_m
    subject to sum_m a_m = -(the shrunk ones' sum: C if the example's own class is shrunk,
    else 0), a_{y_i} <= C, a_m <= 0 otherwise.  With D = B + A C e_{y_i} sorted in
    decreasing order, beta is the mean of the largest D's while beta < r D_r (after removing
    A C from the first), and a_m = min(bound_m, (beta - B_m) / A).  ``y_position`` is the
    own class's position, >= size when it is shrunk (at C: then A C is removed all the same,
    as LIBLINEAR does, which keeps the constraint's right-hand side)."""
    for m in range(size):
        D[m] = B[m]
    if y_position < size:
        D[y_position] += A * C
    D[:size].sort()  # increasing: D[size - 1 - r] is the r-th largest
    beta = D[size - 1] - A * C
    r = 1
    while r < size and beta < r * D[size - 1 - r]:
        beta += D[size - 1 - r]
        r += 1
    beta /= r
    for m in range(size):
        value = (beta - B[m]) / A
        bound = C if m == y_position else 0.0
        out[m] = value if value < bound else bound


@njit(cache=True, nogil=True, inline="always")
def _crammer_singer_shrinkable(alpha_value, at_own_class, C, g, min_g):
    """LIBLINEAR's ``be_shrunk``: a dual variable at its bound (C for the example's own class,
    0 for the others) whose gradient is below the smallest gradient of a free one."""
    bound = C if at_own_class else 0.0
    return alpha_value == bound and g < min_g


@njit(cache=True, nogil=True)
def crammer_singer_epochs(indptr, indices, data, labels, s, cost, sqnorm, alpha, W, index,
                          class_order, n_active_classes, y_position, istate, fstate,
                          shrinking, rng, max_epochs, eps, work_budget):
    """Outer iterations of the sequential dual method (Keerthi et al., KDD 2008; LIBLINEAR
    ``-s 4``, ``Solver_MCSVM_CS::Solve``, its shrinking included): a random permutation of
    the active examples, then for each example i the gradient G_m = w_m . x~_i + [m != y_i]
    of its active classes; with ``shrinking``, a class whose variable sits at its bound with
    G_m below the smallest G of a free variable leaves the example's active set (moved to
    the end of ``class_order[i]``), and an example with at most one class left leaves the
    pass; then the example is skipped when max_m G_m - min_{m: alpha_i^m < bound} G_m <=
    1e-12 (optimal already), else its sub-problem is solved exactly
    (:func:`_crammer_singer_step`) and the rows w_m updated.  When a pass's largest such
    violation falls below the shrinking threshold (``fstate[0]``, LIBLINEAR's ``eps_shrink``,
    starting at max(10 eps, 1)), every example and class is active again and the threshold
    halves (not below ``eps``); it stops when that happens twice in a row below ``eps``
    (LIBLINEAR's stop; returns 1 then; ``eps = 0`` never stops so).  Without shrinking a
    pass below ``eps`` stops.  Also stops after ``max_epochs`` or once ``work_budget`` stored
    entries were touched.

    The state that carries over between calls: ``class_order`` (n, k), each example's class
    permutation, its first ``n_active_classes[i]`` active; ``y_position[i]`` where the own
    class sits in it; ``index[:istate[0]]`` the active examples; ``istate[1]`` whether the
    last pass started from all of them; ``fstate[0]`` the shrinking threshold.

    Returns (epochs run, 1 if the violation rule held, the last pass's largest violation
    over its active variables, the stored entries touched)."""
    n = labels.shape[0]
    k = W.shape[0]
    d = W.shape[1] - 1
    G = np.empty(k)
    B = np.empty(k)
    D = np.empty(k)
    new = np.empty(k)
    epochs = 0
    work = 0
    converged = 0
    violation = np.inf
    active = istate[0]
    start_from_all = istate[1] == 1
    eps_shrink = fstate[0]
    while epochs < max_epochs:
        _shuffle_active(index, active, rng)
        violation = 0.0
        q = 0
        while q < active:
            i = index[q]
            A = sqnorm[i]
            if A <= 0.0:
                q += 1
                continue
            yi = labels[i]
            C = cost[i]
            nnz = indptr[i + 1] - indptr[i] + 1
            size = n_active_classes[i]
            own = y_position[i]
            max_g = -np.inf
            min_g = np.inf
            for p in range(size):
                m = class_order[i, p]
                g = row_dot(indptr, indices, data, i, W[m]) + s * W[m, d]
                if m != yi:
                    g += 1.0
                G[p] = g
                if g > max_g:
                    max_g = g
                bound = C if m == yi else 0.0
                if alpha[i, m] < bound and g < min_g:
                    min_g = g
            work += size * nnz
            if shrinking:
                p = 0
                while p < size:
                    if _crammer_singer_shrinkable(alpha[i, class_order[i, p]], p == own, C,
                                                  G[p], min_g):
                        size -= 1
                        while size > p:
                            if not _crammer_singer_shrinkable(alpha[i, class_order[i, size]],
                                                              size == own, C, G[size], min_g):
                                t = class_order[i, p]
                                class_order[i, p] = class_order[i, size]
                                class_order[i, size] = t
                                g = G[p]
                                G[p] = G[size]
                                G[size] = g
                                if own == size:
                                    own = p
                                elif own == p:
                                    own = size
                                break
                            size -= 1
                    p += 1
                n_active_classes[i] = size
                y_position[i] = own
                if size <= 1:  # nothing left to move: out of the pass
                    active -= 1
                    t = index[q]
                    index[q] = index[active]
                    index[active] = t
                    continue
            if max_g - min_g <= 1e-12:
                q += 1
                continue
            if max_g - min_g > violation:
                violation = max_g - min_g
            for p in range(size):
                B[p] = G[p] - A * alpha[i, class_order[i, p]]
            _crammer_singer_step(A, own, C, B, D, new, size)
            for p in range(size):
                m = class_order[i, p]
                delta = new[p] - alpha[i, m]
                if delta != 0.0:  # alpha and w together: w_m = sum_i alpha_i^m x~_i holds
                    alpha[i, m] = new[p]
                    row_axpy(indptr, indices, data, i, delta, W[m])
                    W[m, d] += delta * s
                    work += nnz
            q += 1
        epochs += 1
        if shrinking:
            if violation < eps_shrink:
                if violation < eps and start_from_all:
                    converged = 1
                    break
                active = n  # every example and class again; the threshold halves
                for i in range(n):
                    n_active_classes[i] = k
                eps_shrink = max(eps_shrink / 2.0, eps)
                start_from_all = True
            else:
                start_from_all = False
        elif violation < eps:
            converged = 1
            break
        if work >= work_budget:
            break
    istate[0] = active
    istate[1] = 1 if start_from_all else 0
    fstate[0] = eps_shrink
    return epochs, converged, violation, work


@njit(cache=True, nogil=True)
def svr_epochs(indptr, indices, data, y, s, qd, lam, upper, epsilon, b, w, index, istate,
               fstate, rng, max_epochs, eps, work_budget, shrinking):
    """Outer iterations of Ho & Lin's dual coordinate descent for L1- and L2-loss SVR (JMLR
    2012, Algorithm 4; LIBLINEAR's ``solve_l2r_l1l2_svr``, ``-s 13`` and ``-s 12``) on

        f(b) = 1/2 b' (Q + diag(lam)) b - y'b + epsilon ||b||_1,   -U_i <= b_i <= U_i,

    Q_ij = x~_i . x~_j, with w = sum_i b_i x~_i kept up to date (its last entry the bias
    column's coefficient, of value ``s``).  For each active i: G = w . x~_i - y_i + lam_i b_i,
    the one-variable problem's Newton direction (their eq. (26)): with H = qd_i + lam_i,
    Gp = G + epsilon, Gn = G - epsilon, d = -Gp / H if Gp < H b_i, -Gn / H if Gn > H b_i, else
    -b_i; b_i moves by d clipped into the box.  The violation of the optimality conditions
    (|Gp| for b_i > 0, |Gn| for b_i < 0, the distance of 0 to [Gn, Gp] at b_i = 0, and the
    wrong-signed side at a bound) gives Gmax (the largest) and Gnorm1 (their sum).  Shrinking
    (their section 4.4, LIBLINEAR's conditions): b_i = 0 with Gn < -M and Gp > M, b_i = U_i
    with Gp < -M, b_i = -U_i with Gn > M (M the last pass's Gmax) leaves the active set; once
    Gnorm1 <= eps * Gnorm1 of the first pass (LIBLINEAR's relative stop) the full set is
    checked once more (M = inf) and the stop holds when it meets the rule too.

    Stops after ``max_epochs``, on that rule over the full set (returns 1), or once the
    stored entries touched reach ``work_budget``.  State kept across calls: ``index`` (its
    first ``istate[0]`` the active set), ``fstate`` = (M, Gnorm1 of the first pass, -1 before
    it), ``rng``.  Returns (epochs, 1 if the rule held on the full set, the last Gnorm1
    relative to the first, stored entries touched)."""
    n = y.shape[0]
    d = w.shape[0] - 1
    active = istate[0]
    gmax_old = fstate[0]
    gnorm1_init = fstate[1]
    work = 0
    epochs = 0
    converged = 0
    relative = np.inf
    while epochs < max_epochs:
        gmax_new = 0.0
        gnorm1_new = 0.0
        _shuffle_active(index, active, rng)
        k = 0
        while k < active:
            i = index[k]
            start = indptr[i]
            end = indptr[i + 1]
            bi = b[i]
            G = row_dot(indptr, indices, data, i, w) + s * w[d] - y[i] + lam[i] * bi
            H = qd[i] + lam[i]
            work += end - start + 1
            u = upper[i]
            gp = G + epsilon
            gn = G - epsilon
            violation = 0.0
            if bi == 0.0:
                if gp < 0.0:
                    violation = -gp
                elif gn > 0.0:
                    violation = gn
                elif shrinking and gp > gmax_old and gn < -gmax_old:
                    active -= 1
                    index[k] = index[active]
                    index[active] = i
                    continue
            elif bi >= u:
                if gp > 0.0:
                    violation = gp
                elif shrinking and gp < -gmax_old:
                    active -= 1
                    index[k] = index[active]
                    index[active] = i
                    continue
            elif bi <= -u:
                if gn < 0.0:
                    violation = -gn
                elif shrinking and gn > gmax_old:
                    active -= 1
                    index[k] = index[active]
                    index[active] = i
                    continue
            elif bi > 0.0:
                violation = abs(gp)
            else:
                violation = abs(gn)
            if violation > gmax_new:
                gmax_new = violation
            gnorm1_new += violation
            k += 1
            if H <= 0.0:  # an empty row without a bias and the L1 loss: f is flat in b_i
                continue
            if gp < H * bi:
                step = -gp / H
            elif gn > H * bi:
                step = -gn / H
            else:
                step = -bi
            if abs(step) < 1e-12:
                continue
            new = min(max(bi + step, -u), u)
            delta = new - bi
            if delta != 0.0:
                b[i] = new
                row_axpy(indptr, indices, data, i, delta, w)
                w[d] += delta * s
                work += end - start + 1
        if gnorm1_init < 0.0:
            gnorm1_init = gnorm1_new
        epochs += 1
        relative = gnorm1_new / gnorm1_init if gnorm1_init > 0.0 else 0.0
        if gnorm1_new <= eps * gnorm1_init:
            if active == n:
                converged = 1
                gmax_old = gmax_new
                break
            active = n  # the shrunk problem is solved: the full set once more
            gmax_old = np.inf
            if work >= work_budget:
                break
            continue
        gmax_old = gmax_new
        if work >= work_budget:
            break
    istate[0] = active
    fstate[0] = gmax_old
    fstate[1] = gnorm1_init
    return epochs, converged, relative, work
