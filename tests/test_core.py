"""The shared Numba core against the NumPy references in tests/naive.py."""

from __future__ import annotations

import naive
import numpy as np
import pytest
from shared_data import load, random_csr

from solvers.core import (
    cgls,
    clipped_loss_breakpoints,
    conjugate_gradient,
    csr_matmat,
    csr_matvec,
    csr_matvec_rows,
    csr_rmatvec,
    csr_rmatvec_rows,
    piecewise_linear_root,
    warm_up,
)

PRODUCT_RTOL = 1e-12
SOLVE_RTOL = 1e-8


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_products_match_dense(parallel, index_dtype):
    X = random_csr(300, 57, 0.1, seed=1, index_dtype=index_dtype)
    rng = np.random.default_rng(2)
    w, z = rng.standard_normal(57), rng.standard_normal(300)
    rows = np.sort(rng.choice(300, 120, replace=False)).astype(np.int64)
    np.testing.assert_allclose(csr_matvec(X, w, 0.3, parallel=parallel),
                               naive.matvec(X, w, 0.3), rtol=PRODUCT_RTOL, atol=1e-12)
    np.testing.assert_allclose(csr_rmatvec(X, z, parallel=parallel), naive.rmatvec(X, z),
                               rtol=PRODUCT_RTOL, atol=1e-12)
    np.testing.assert_allclose(csr_matvec_rows(X, rows, w, -1.5, parallel=parallel),
                               naive.matvec_rows(X, rows, w, -1.5), rtol=PRODUCT_RTOL,
                               atol=1e-12)
    np.testing.assert_allclose(csr_rmatvec_rows(X, rows, z[:120], parallel=parallel),
                               naive.rmatvec_rows(X, rows, z[:120]), rtol=PRODUCT_RTOL,
                               atol=1e-12)
    W = rng.standard_normal((4, 57))
    b = rng.standard_normal(4)
    np.testing.assert_allclose(csr_matmat(X, W, b, parallel=parallel),
                               naive.dense(X) @ W.T + b, rtol=PRODUCT_RTOL, atol=1e-12)


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_products_on_real_data(parallel):
    ds = load("a9a")
    X = ds.X
    rng = np.random.default_rng(0)
    w = rng.standard_normal(X.shape[1])
    z = rng.standard_normal(X.shape[0])
    np.testing.assert_allclose(csr_matvec(X, w, parallel=parallel), X @ w, rtol=1e-12)
    np.testing.assert_allclose(csr_rmatvec(X, z, parallel=parallel), X.T @ z, rtol=1e-10,
                               atol=1e-9)
    rows = np.flatnonzero(rng.random(X.shape[0]) < 0.3)
    np.testing.assert_allclose(csr_rmatvec_rows(X, rows, z[rows], parallel=parallel),
                               X[rows].T @ z[rows], rtol=1e-10, atol=1e-9)


def test_empty_row_subset_gives_zeros():
    X = random_csr(20, 5, 0.5, seed=3)
    rows = np.empty(0, dtype=np.int64)
    assert csr_matvec_rows(X, rows, np.ones(5)).shape == (0,)
    np.testing.assert_array_equal(csr_rmatvec_rows(X, rows, np.empty(0)), np.zeros(5))


def test_product_shape_errors():
    X = random_csr(10, 4, 0.5, seed=4)
    with pytest.raises(ValueError, match="columns"):
        csr_matvec(X, np.ones(5))
    with pytest.raises(ValueError, match="rows"):
        csr_rmatvec(X, np.ones(3))


@pytest.mark.parametrize("reg_bias, bias_scale", [(1.0, 1.0), (0.0, 1.0), (1.0, 0.0),
                                                  (1.0, 3.0)])
@pytest.mark.parametrize("weighted", [False, True])
def test_cgls_solves_regularized_least_squares(reg_bias, bias_scale, weighted, index_dtype):
    X = random_csr(200, 30, 0.2, seed=5, index_dtype=index_dtype)
    rng = np.random.default_rng(6)
    rows = np.sort(rng.choice(200, 150, replace=False)).astype(np.int64)
    t = rng.choice([-1.0, 1.0], size=150)
    c = rng.uniform(0.5, 2.0, size=150) if weighted else np.ones(150)
    lam = 0.37
    beta = rng.standard_normal(31) * 0.1  # a warm start
    if bias_scale == 0.0:
        beta[-1] = 0.0
    iterations, optimal = cgls(X, rows, np.sqrt(c), t, beta, bias_scale=bias_scale, lam=lam,
                               reg_bias=reg_bias, eps=1e-12, max_iter=1000)
    assert optimal and iterations <= 31 + 5
    expected = naive.regularized_least_squares(X, rows, c, t, bias_scale, lam,
                                               reg_bias if bias_scale else 1.0)
    np.testing.assert_allclose(beta, expected, rtol=SOLVE_RTOL, atol=1e-10)


def test_cgls_respects_iteration_cap_and_warm_start_at_optimum():
    X = random_csr(100, 20, 0.3, seed=7)
    rows = np.arange(100, dtype=np.int64)
    t = np.where(np.arange(100) % 2 == 0, 1.0, -1.0)
    beta = np.zeros(21)
    iterations, optimal = cgls(X, rows, np.ones(100), t, beta, bias_scale=1.0, lam=0.1,
                               eps=1e-14, max_iter=3)
    assert iterations == 3 and not optimal
    exact = naive.regularized_least_squares(X, rows, np.ones(100), t, 1.0, 0.1, 1.0)
    start = exact.copy()
    iterations, optimal = cgls(X, rows, np.ones(100), t, start, bias_scale=1.0, lam=0.1,
                               eps=1e-6, max_iter=10)
    assert optimal and iterations == 0  # rule (13) already holds at the warm start


def test_conjugate_gradient_matches_direct_solve():
    rng = np.random.default_rng(8)
    M = rng.standard_normal((40, 40))
    A = M @ M.T + 40 * np.eye(40)
    b = rng.standard_normal(40)
    diagonal = np.diag(A).copy()
    seen = []
    result = conjugate_gradient(lambda v: A @ v, b, precondition=lambda r: r / diagonal,
                                rtol=1e-12, callback=lambda k, x, res: seen.append(k))
    assert result.converged, result.message
    np.testing.assert_allclose(result.x, np.linalg.solve(A, b), rtol=1e-9)
    assert seen == list(range(1, result.iterations + 1))


def test_conjugate_gradient_reports_breakdown_and_limit():
    A = np.diag([1.0, -1.0])
    assert conjugate_gradient(lambda v: A @ v, np.array([1.0, 1.0])).status == 2
    B = np.diag(np.linspace(1, 1000, 50))
    limited = conjugate_gradient(lambda v: B @ v, np.ones(50), rtol=1e-14, max_iter=2)
    assert limited.status == 1 and limited.iterations == 2


@pytest.mark.parametrize("width", [np.inf, 2.0, 0.5])
@pytest.mark.parametrize("xi_lo", [0.0, -0.25])
def test_exact_line_search_matches_bisection(width, xi_lo):
    """phi(delta) = lam/2 ||beta + delta p||^2 + sum_i c_i L(xi0_i + delta dxi_i)."""
    rng = np.random.default_rng(int(10 * width if np.isfinite(width) else 99))
    n = 400
    xi0 = rng.normal(0.5, 1.5, n)
    xi1 = rng.normal(0.0, 1.5, n)
    xi0[:5] = xi_lo  # examples exactly at a knot
    if np.isfinite(width):
        xi0[5:10] = xi_lo + width
    c = rng.uniform(0.5, 2.0, n)
    beta = rng.standard_normal(10)
    p = rng.standard_normal(10)
    lam = 0.3

    def slope(delta):
        xi = xi0 + delta * (xi1 - xi0)
        return (lam * (beta + delta * p) @ p
                + np.sum(c * np.clip(xi - xi_lo, 0.0, width) * (xi1 - xi0)))

    l0_loss, r0_loss, breakpoints, dl, dr = clipped_loss_breakpoints(xi0, xi1, c, xi_lo, width)
    l0 = lam * beta @ p + l0_loss
    r0 = lam * (beta + p) @ p + r0_loss
    assert l0 == pytest.approx(slope(0.0), rel=1e-12, abs=1e-9)
    delta = piecewise_linear_root(l0, r0, breakpoints, dl, dr)
    expected = naive.line_search_by_bisection(slope)
    assert delta == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert abs(slope(delta)) <= 1e-8 * (1 + np.abs(c * (xi1 - xi0)).sum())


def test_line_search_returns_zero_for_an_ascent_direction():
    assert piecewise_linear_root(0.5, 2.0, np.array([0.3]), np.array([1.0]),
                                 np.array([1.0])) == 0.0


def test_warm_up_compiles_everything():
    assert warm_up() >= 0.0
