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
