"""The shared-layer pieces the interior-point method added: the weighted full Gram build
(solvers/core/gram.py) and the Cholesky factor reused for several solves
(solvers/core/linalg.py)."""

from __future__ import annotations

import numpy as np
import pytest
from shared_data import random_csr

from solvers.core.gram import mirror_lower, weighted_gram
from solvers.core.linalg import cholesky_factor, cholesky_factor_solve


@pytest.mark.parametrize("extra_value", [0.0, 1.5])
def test_weighted_gram_matches_dense(extra_value):
    X = random_csr(300, 40, 0.2, seed=4)
    weights = np.random.default_rng(0).random(300) * 1e3
    Xt = np.hstack([X.toarray(), np.full((300, 1), extra_value)])
    expected = Xt.T @ (weights[:, None] * Xt)
    np.testing.assert_allclose(weighted_gram(X, weights, extra_value=extra_value), expected,
                               rtol=1e-12, atol=1e-9)
    rows = np.array([3, 10, 11, 200])
    G = weighted_gram(X, weights[rows], extra_value=extra_value, rows=rows, mirror=False)
    np.testing.assert_allclose(np.tril(G), np.tril(Xt[rows].T @ (weights[rows, None]
                                                                 * Xt[rows])), atol=1e-9)
    assert not np.triu(G, 1).any()
    mirror_lower(G)
    np.testing.assert_allclose(G, G.T)


@pytest.mark.parametrize("n", [20, 300])  # below and above the one-thread BLAS limit
def test_cholesky_factor_serves_several_solves(n):
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    M = A @ A.T + n * np.eye(n)
    factor = cholesky_factor(M.copy())
    for _ in range(2):
        rhs = rng.standard_normal(n)
        np.testing.assert_allclose(M @ cholesky_factor_solve(factor, rhs), rhs, atol=1e-8)
    assert cholesky_factor(-np.eye(3)) is None
