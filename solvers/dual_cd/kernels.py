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
def dcd_epochs(indptr, indices, data, y, s, qd, diag, upper, alpha, w, index, istate,
               fstate, rng, max_epochs, eps, work_budget, shrinking):
    """Outer iterations of Algorithm 3 until one of: ``max_epochs`` done; the projected
    gradient's spread M-bar - m-bar over the full set is at most ``eps`` (LIBLINEAR's stop);
    the rows touched since the call (in stored entries) reach ``work_budget`` (the caller then
    checks the duality gap).

    State kept across calls: ``index`` (the permutation; its first ``istate[0]`` entries are
    the active set), ``fstate`` = (M-bar, m-bar) of the last pass (Algorithm 3's bounds:
    +inf / -inf when unknown), ``rng`` the generator's state.  ``alpha`` and ``w`` are
    updated in place.

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
        for k in range(active - 1):
            j = k + _random_below(rng, active - k)
            t = index[k]
            index[k] = index[j]
            index[j] = t
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
                delta = (new - a) * yi
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
