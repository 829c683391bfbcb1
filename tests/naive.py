"""Slow, obviously correct NumPy references for the Numba core (tests only)."""

from __future__ import annotations

import numpy as np


def dense(X) -> np.ndarray:
    return np.asarray(X.todense())


def matvec(X, w, intercept=0.0):
    return dense(X) @ w + intercept


def rmatvec(X, z):
    return dense(X).T @ z


def matvec_rows(X, rows, w, intercept=0.0):
    return dense(X)[rows] @ w + intercept


def rmatvec_rows(X, rows, z):
    return dense(X)[rows].T @ z


def regularized_least_squares(X, rows, c, t, bias_scale, lam, reg_bias):
    """argmin lam/2 beta' D beta + 1/2 sum_k c_k (x~_{rows[k]} . beta - t_k)^2 by a dense
    solve of the normal equations (lam D + X~' C X~) beta = X~' C t."""
    A = dense(X)[rows]
    A = np.hstack([A, np.full((A.shape[0], 1), bias_scale)])
    D = np.ones(A.shape[1])
    D[-1] = reg_bias
    H = lam * np.diag(D) + A.T @ (c[:, None] * A)
    return np.linalg.solve(H, A.T @ (c * t))


def clipped_loss(xi, xi_lo, width):
    """L(xi) with L'(xi) = clip(xi - xi_lo, 0, width)."""
    u = np.clip(xi - xi_lo, 0.0, width)
    value = 0.5 * u * u
    if np.isfinite(width):
        value = value + width * np.maximum(xi - xi_lo - width, 0.0)
    return value


def line_search_by_bisection(slope, lo=0.0, hi=None, iterations=200):
    """Root of a continuous non-decreasing function on [lo, inf) by bracketing + bisection."""
    if slope(lo) >= 0:
        return lo
    hi = 1.0 if hi is None else hi
    while slope(hi) < 0:
        hi *= 2.0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if slope(mid) < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def gram(X, rows, weights, extra_value=0.0, pair_ptr=None, pair_col=None, n_extra=1):
    """sum_k w_k x~_k x~_k' of the least-squares rows of solvers.core.linalg.gram_update,
    from dense rows."""
    dense_rows = dense(X)[rows]
    if pair_ptr is None:
        pair_ptr = np.arange(len(rows) + 1)
        pair_col = np.zeros(len(rows), dtype=np.int64)
    stacked = []
    for j in range(len(rows)):
        for k in range(pair_ptr[j], pair_ptr[j + 1]):
            extra = np.zeros(n_extra)
            extra[pair_col[k]] = extra_value
            stacked.append(np.r_[dense_rows[j], extra])
    R = np.array(stacked).reshape(-1, X.shape[1] + n_extra)
    return R.T @ (np.asarray(weights)[:, None] * R)
