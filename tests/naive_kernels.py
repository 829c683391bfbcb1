"""Slow, obviously correct NumPy references for the kernels, the row cache and the dense
systems of the least-squares SVM family (tests only)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import scipy.optimize


def dense(X) -> np.ndarray:
    return np.asarray(X.todense()) if hasattr(X, "todense") else np.asarray(X, dtype=float)


def kernel_matrix(Q, Z, name, gamma=1.0, degree=3, coef0=0.0) -> np.ndarray:
    """k(q_i, z_j) row by row from dense rows (squared distances from differences)."""
    Qd, Zd = dense(Q), dense(Z)
    K = np.empty((Qd.shape[0], Zd.shape[0]))
    for i, q in enumerate(Qd):
        if name == "linear":
            K[i] = Zd @ q
        elif name == "rbf":
            K[i] = np.exp(-gamma * np.sum((Zd - q) ** 2, axis=1))
        elif name == "sigmoid":
            K[i] = np.tanh(gamma * (Zd @ q) + coef0)
        else:
            K[i] = (gamma * (Zd @ q) + coef0) ** degree
    return K


class LRURowCache:
    """The cache policy spelled out with an OrderedDict: ``capacity`` rows, a request for a
    cached row is a hit and makes it the most recent, a miss computes it and evicts the least
    recently used row when full."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.rows: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def request(self, i: int) -> None:
        if i in self.rows:
            self.hits += 1
            self.rows.move_to_end(i)
            return
        self.misses += 1
        if len(self.rows) == self.capacity:
            self.rows.popitem(last=False)
        self.rows[i] = None

    def most_recent_first(self) -> list[int]:
        return list(reversed(self.rows))


# -- the dense systems ---------------------------------------------------------------------------


def lssvm_classical(K, y, C_J):
    """Suykens' system (7) with Omega = D K D: [[0, y'], [y, Omega + I/C_J]] [b; alpha] =
    [0; e].  Returns (coefficients y * alpha, b)."""
    n = y.shape[0]
    M = np.zeros((n + 1, n + 1))
    M[0, 1:] = y
    M[1:, 0] = y
    M[1:, 1:] = np.outer(y, y) * K + np.diag(1.0 / C_J * np.ones(n))
    solution = np.linalg.solve(M, np.concatenate([[0.0], np.ones(n)]))
    return y * solution[1:], solution[0]


def relaxed_Q(K, y, C_J, A):
    """Q of (20), derived from (14)-(19): y_i y_j (K_ij + 1/A) + delta_ij / C_J."""
    return np.outer(y, y) * (K + 1.0 / A) + np.eye(y.shape[0]) / C_J


def relaxed_2smo(K, y, C_J, A):
    """The unconstrained dual (20) by a dense solve.  Returns (coefficients y * lambda,
    b = lambda'y / A, lambda)."""
    lam = np.linalg.solve(relaxed_Q(K, y, C_J, A), np.ones(y.shape[0]))
    return y * lam, lam @ y / A, lam


def relaxed_sesquismo(K, y, C_J, A):
    """The bound-constrained dual of (32)-(33): min 1/2 l'Ql - e'l, l >= 0, by L-BFGS-B, then
    polished by solving Q_FF l_F = e_F on its free set F (exact when F is right) and checked
    against the KKT conditions (34)-(35)."""
    Q = relaxed_Q(K, y, C_J, A)
    n = y.shape[0]
    result = scipy.optimize.minimize(
        lambda lam: (0.5 * lam @ Q @ lam - lam.sum(), Q @ lam - 1.0), np.zeros(n), jac=True,
        method="L-BFGS-B", bounds=[(0.0, None)] * n,
        options={"ftol": 1e-16, "gtol": 1e-12, "maxiter": 100_000, "maxcor": 30})
    free = result.x > 1e-9
    lam = np.zeros(n)
    lam[free] = np.linalg.solve(Q[np.ix_(free, free)], np.ones(free.sum()))
    g = Q @ lam - 1.0
    assert np.all(lam >= 0.0) and np.all(g[~free] >= -1e-9), "active set not optimal"
    return y * lam, lam @ y / A, lam


def proximal(G, y, C_J, s=1.0):
    """Fung & Mangasarian (12) as written: v = [I/C + D(G + s^2 ee')D]^{-1} e with G = K K'
    (K = X for the linear PSVM).  Returns (v, z = D v)."""
    n = y.shape[0]
    D = np.diag(y)
    v = np.linalg.solve(np.eye(n) / C_J + D @ (G + s * s * np.ones((n, n))) @ D, np.ones(n))
    return v, y * v
