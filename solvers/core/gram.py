"""Gram-matrix upkeep for solvers that factorize normal equations on few parameters.

:class:`NormalEquations` keeps G = sum_{k in I} c_k x~_k x~_k' of an index set I of terms (the
rows of :mod:`solvers.core.rows`) up to date as terms enter and leave I, and solves
(lam I + G) delta = rhs by Cholesky.  L2-SVM-MFN's factorized step 3 uses it; the interior-point
method's normal equations are the same matrix with other weights.
"""

from __future__ import annotations

import numpy as np

from solvers.core.linalg import cholesky_solve, gram_cost, gram_update
from solvers.core.sparse import use_parallel


def weighted_gram(X, weights: np.ndarray, *, extra_value: float = 0.0,
                  rows: np.ndarray | None = None, out: np.ndarray | None = None,
                  mirror: bool = True) -> np.ndarray:
    """The weighted Gram matrix sum_k w_k x~_k x~_k' of the rows ``rows`` (all rows by
    default; ``weights`` one per selected row) of a canonical CSR ``X``, x~_k = (x_k,
    extra_value): lower triangle built by :func:`gram_update` (parallel over the rows when
    that pays), then mirrored (``mirror=False`` leaves the upper triangle 0: enough for a
    Cholesky factorization, which reads the lower one).  ``out`` ((n_features + 1)^2,
    C-contiguous) is overwritten when given.  The interior-point method forms its
    normal-equations matrix Y' Omega^-1 Y with weights 1 / omega_i this way at every
    iteration."""
    n = X.shape[1] + 1
    G = np.zeros((n, n)) if out is None else out
    G[:] = 0.0
    if rows is None:
        rows = np.arange(X.shape[0], dtype=np.int64)
    else:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    cost = gram_cost(X.indptr, rows)
    gram_update(X, rows, weights, G, extra_value=extra_value,
                parallel=use_parallel(cost, n * n))
    if mirror:
        mirror_lower(G)
    return G


def mirror_lower(G: np.ndarray) -> None:
    """Copy the lower triangle of a square matrix onto its upper triangle, in place."""
    upper = np.triu_indices_from(G, 1)
    G[upper] = G.T[upper]


class NormalEquations:
    """Normal equations by factorization, for problems with few parameters (L2-SVM-MFN's step
    3, Keerthi & DeCoste section 4.3: "factorization methods such as QR or SVD"): the Gram
    matrix G = sum_{k in I} c_k x~_k x~_k' of the
    active terms is kept up to date as terms enter and leave I (at a cost of about L^2 / 2 per
    changed term with L stored entries; rebuilt from the active terms when more of them
    changed than remain, or when the updates since the last rebuild outnumber the active
    terms, which bounds the round-off they accumulate), and the normal equations (12),
    (lam I + G) delta = r^0, are solved by Cholesky.  G does not depend on lam, so it serves
    every stage of a C path and every tau of the hinge homotopy.  ``terms`` is a row operator
    of :mod:`solvers.core.rows`; ``weight`` the c_k of every term."""

    def __init__(self, terms, weight: np.ndarray):
        self.terms = terms
        self.weight = weight
        n = terms.n_params
        self.G = np.zeros((n, n))
        self.members = np.zeros(weight.shape[0], dtype=bool)
        self.updates = 0  # terms added or removed since G was last rebuilt

    def _add(self, terms: np.ndarray, weights: np.ndarray):
        rows, pair_ptr, pair_col = self.terms.structure(terms)
        cost = gram_cost(self.terms.X.indptr, rows)
        gram_update(self.terms.X, rows, weights, self.G, extra_value=self.terms.extra_value,
                    pair_ptr=pair_ptr, pair_col=pair_col,
                    parallel=use_parallel(cost, self.G.shape[0] ** 2))

    def update(self, active: np.ndarray):
        """Make G the Gram matrix of the terms ``active`` (sorted)."""
        mask = np.zeros_like(self.members)
        mask[active] = True
        entered = np.flatnonzero(mask & ~self.members)
        left = np.flatnonzero(self.members & ~mask)
        changed = entered.size + left.size
        if changed >= active.size or self.updates + changed > active.size:
            self.G[:] = 0.0
            self._add(active, self.weight[active])
            self.updates = 0
        elif changed:
            terms = np.concatenate((entered, left))
            weights = np.concatenate((self.weight[entered], -self.weight[left]))
            order = np.argsort(terms, kind="stable")
            self._add(terms[order], weights[order])
            self.updates += changed
        self.members = mask

    def solve(self, active: np.ndarray, lam: float, rhs: np.ndarray) -> np.ndarray | None:
        """delta with (lam I + G_active) delta = rhs, or None if the factorization fails."""
        self.update(active)
        M = self.G.copy()
        M[np.diag_indices_from(M)] += lam
        return cholesky_solve(M, rhs)
