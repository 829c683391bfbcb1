"""The shared-core pieces L2-SVM-MFN added: paired CGLS rows (ordinal regression), the
diagonal preconditioner, the section 4.3 stopping rule, and serial/parallel agreement."""

from __future__ import annotations

import numpy as np
import pytest
from shared_data import random_csr

from solvers.config import CGLS_PARALLEL_MIN_FEATURES
from solvers.core.linalg import cg_dual_compact, cgls, cgls_compact, dot
from solvers.core.sparse import CompactRows

SOLVE_ATOL = 1e-10


def dense_paired_solution(X, rows, pair_ptr, pair_col, c, t, extra_value, lam, reg_extra,
                          n_extra):
    """argmin lam/2 beta' D beta + 1/2 sum_k c_k (a_k . beta - t_k)^2 with a_k = (x_{rows[j]},
    extra_value e_{pair_col[k]}) for the pairs k of row j, by the normal equations."""
    dense = X.toarray()
    d = dense.shape[1]
    A = np.zeros((c.shape[0], d + n_extra))
    for j, row in enumerate(rows):
        for k in range(pair_ptr[j], pair_ptr[j + 1]):
            A[k, :d] = dense[row]
            A[k, d + pair_col[k]] = extra_value
    D = np.r_[np.ones(d), np.full(n_extra, reg_extra)]
    return np.linalg.solve(lam * np.diag(D) + A.T @ (c[:, None] * A), A.T @ (c * t))


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
@pytest.mark.parametrize("precondition", [0.0, 0.01, 1.0])
@pytest.mark.parametrize("rho", [None, 3.0])
def test_paired_cgls_solves_the_threshold_least_squares_problem(parallel, precondition, rho,
                                                                index_dtype):
    X = random_csr(120, 25, 0.2, seed=11, index_dtype=index_dtype)
    rng = np.random.default_rng(12)
    rows = np.sort(rng.choice(120, 70, replace=False)).astype(np.int64)
    counts = rng.integers(1, 4, size=70)  # each selected row takes part in 1-3 pairs
    pair_ptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
    pair_col = np.concatenate([rng.choice(4, size=k, replace=False) for k in counts])
    n_pairs = pair_col.shape[0]
    t = rng.choice([-1.0, 1.0], size=n_pairs)
    c = rng.uniform(0.5, 2.0, size=n_pairs)
    lam, extra_value, reg_extra = 0.2, -1.5, 0.8
    beta = rng.standard_normal(25 + 4) * 0.1
    iterations, optimal = cgls(X, rows, np.sqrt(c), t, beta, bias_scale=extra_value, lam=lam,
                               reg_bias=reg_extra, eps=1e-13, max_iter=500, parallel=parallel,
                               pair_ptr=pair_ptr, pair_col=pair_col, precondition=precondition,
                               rho=rho)
    assert optimal and iterations > 0
    expected = dense_paired_solution(X, rows, pair_ptr, pair_col, c, t, extra_value, lam,
                                     reg_extra, 4)
    np.testing.assert_allclose(beta, expected, atol=SOLVE_ATOL)


@pytest.mark.parametrize("precondition", [0.0, 0.5])
@pytest.mark.parametrize("n_features, density, lam, steps",
                         [(40, 0.1, 1e-3, 15), (CGLS_PARALLEL_MIN_FEATURES, 3e-3, 1.0, 5)],
                         ids=["narrow", "wide"])
def test_serial_and_parallel_cgls_take_the_same_iterates(precondition, n_features, density,
                                                         lam, steps):
    """Wide matrices also run the loops over the features in parallel.  (Compared before CG
    converges: past that, reduction-order round-off is all that is left to amplify.)"""
    X = random_csr(3000, n_features, density, seed=13)
    rng = np.random.default_rng(14)
    rows = np.sort(rng.choice(3000, 2000, replace=False)).astype(np.int64)
    t = rng.choice([-1.0, 1.0], size=2000)
    results = []
    for parallel in (False, True):
        beta = np.zeros(n_features + 1)
        iterations, _ = cgls(X, rows, np.ones(2000), t, beta, bias_scale=1.0, lam=lam,
                             eps=1e-30, max_iter=steps, parallel=parallel,
                             precondition=precondition)
        results.append((iterations, beta))
    assert results[0][0] == results[1][0] == steps
    # same arithmetic up to the order of the reductions
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-9, atol=1e-12)


def test_preconditioning_changes_directions_not_the_solution():
    """On badly scaled columns the diagonal preconditioner needs far fewer iterations."""
    X = random_csr(400, 30, 0.3, seed=15)
    X = X @ np.diag(np.logspace(-2, 2, 30))
    X = type(random_csr(1, 1, 1.0, seed=0))(X)
    rng = np.random.default_rng(16)
    rows = np.arange(400, dtype=np.int64)
    t = rng.choice([-1.0, 1.0], size=400)
    iterations = {}
    solutions = {}
    for alpha in (0.0, 1.0):
        beta = np.zeros(31)
        iterations[alpha], optimal = cgls(X, rows, np.ones(400), t, beta, bias_scale=1.0,
                                          lam=1e-2, eps=1e-10, max_iter=5000,
                                          precondition=alpha)
        assert optimal
        solutions[alpha] = beta
    np.testing.assert_allclose(solutions[1.0], solutions[0.0], rtol=1e-7, atol=1e-9)
    assert iterations[1.0] < iterations[0.0] / 2


def test_gradient_bound_rule_is_looser_than_rule_13():
    """||r|| <= eps (rho ||z|| + lam ||beta||) with rho >= 1 stops no later than (13)."""
    X = random_csr(300, 200, 0.05, seed=17)  # more features than rows: tiny residuals
    rng = np.random.default_rng(18)
    rows = np.arange(300, dtype=np.int64)
    t = rng.choice([-1.0, 1.0], size=300)
    counts = {}
    for rho in (None, 10.0):
        beta = np.zeros(201)
        counts[rho], optimal = cgls(X, rows, np.ones(300), t, beta, bias_scale=1.0, lam=1e-3,
                                    eps=1e-4, max_iter=5000, rho=rho)
        assert optimal
    assert counts[10.0] < counts[None]


def test_dot_matches_numpy():
    rng = np.random.default_rng(19)
    a, b = rng.standard_normal(1001), rng.standard_normal(1001)
    assert dot(a, b) == pytest.approx(float(a @ b), rel=1e-12)


@pytest.mark.parametrize("n_blocks", [1, 2])
@pytest.mark.parametrize("unit_values", [False, True], ids=["values", "unit"])
@pytest.mark.parametrize("bias_scale", [1.0, 0.0])
@pytest.mark.parametrize("n_features", [60, CGLS_PARALLEL_MIN_FEATURES])
def test_row_space_cg_solves_the_least_squares_problem(n_blocks, unit_values, bias_scale,
                                                       n_features, index_dtype):
    """cg_dual_compact: from cgls_compact's warm start (z^0, r^0 at a point beta^0) to the
    solution of the same problem, rule (13) met on the returned beta and z, and z the residual
    of that beta; the rows fewer than the features and of very unequal norms."""
    X = random_csr(200, n_features, min(0.5, 8.0 / n_features), seed=21,
                   index_dtype=index_dtype)
    rng = np.random.default_rng(22)
    X.data = np.ones(X.nnz) if unit_values else np.floor(rng.pareto(1.0, X.nnz) + 1.0)
    rows = np.sort(rng.choice(200, 50, replace=False)).astype(np.int64)
    A = CompactRows(X, rows, n_blocks=n_blocks, unit_values=unit_values)
    c = rng.uniform(0.5, 2.0, 50)
    sqrt_c = np.sqrt(c)
    t = rng.choice([-1.0, 1.0], size=50)
    lam = 1e-2
    dense = np.c_[X[rows].toarray(), np.full(50, bias_scale)]
    # the normal equations (lam I + A'CA) beta = A'C t through the 50 x 50 row system:
    # beta = A' u with (lam I + C A A') u = C t (the same solution, without the wide case's
    # 4097 x 4097 solve, which took most of the test's time)
    expected = dense.T @ np.linalg.solve(lam * np.eye(50) + c[:, None] * (dense @ dense.T),
                                         c * t)
    beta = 0.1 * rng.standard_normal(n_features + 1)
    if bias_scale == 0.0:
        beta[-1] = 0.0
    z = sqrt_c * (t - dense @ beta)
    gradient = dense.T @ (sqrt_c * z) - lam * beta
    eps = 1e-8
    iterations, optimal = cg_dual_compact(A, sqrt_c, beta, bias_scale=bias_scale, lam=lam,
                                          eps=eps, residual=z, gradient=gradient)
    assert optimal and iterations > 0
    np.testing.assert_allclose(beta, expected, rtol=1e-6, atol=1e-7 * np.abs(expected).max())
    # z is kept up to date, not recomputed: round-off relative to the size of A beta
    scale = np.abs(sqrt_c * (dense @ beta)).max()
    np.testing.assert_allclose(z, sqrt_c * (t - dense @ beta), atol=1e-6 * scale)
    r = dense.T @ (sqrt_c * z) - lam * beta
    assert np.linalg.norm(r) <= 1.01 * eps * np.linalg.norm(z)


def test_row_space_cg_needs_fewer_iterations_than_cgls_on_rows_of_unequal_norms():
    """Raw word counts (row norms over three orders of magnitude), fewer rows than features,
    small lambda: the row-Jacobi preconditioned row system against CGLS, both from zero."""
    X = random_csr(400, 3000, 0.01, seed=23)
    rng = np.random.default_rng(24)
    X.data = np.minimum(np.floor(rng.pareto(1.0, X.nnz) + 1.0), 300.0)
    rows = np.arange(400, dtype=np.int64)
    A = CompactRows(X, rows)
    t = rng.choice([-1.0, 1.0], size=400)
    counts, solutions = {}, {}
    for name, solve in (("cgls", cgls_compact), ("rows", cg_dual_compact)):
        beta = np.zeros(3001)
        z = t.copy()
        gradient = np.r_[A.rmatvec(z), z.sum()]
        extra = {"t": None} if solve is cgls_compact else {}
        counts[name], optimal = solve(A, np.ones(400), beta=beta, bias_scale=1.0, lam=1e-2,
                                      eps=1e-6, residual=z, gradient=gradient, **extra)
        assert optimal
        solutions[name] = beta
    np.testing.assert_allclose(solutions["rows"], solutions["cgls"], rtol=1e-5,
                               atol=1e-7 * np.abs(solutions["cgls"]).max())
    assert counts["rows"] < counts["cgls"] / 2


def test_row_space_cg_refuses_a_bad_warm_start():
    X = random_csr(10, 5, 0.5, seed=25)
    A = CompactRows(X, np.arange(10, dtype=np.int64))
    with pytest.raises(ValueError):
        cg_dual_compact(A, np.ones(10), np.zeros(6), bias_scale=1.0, lam=1.0,
                        residual=np.ones(9), gradient=np.zeros(6))
    with pytest.raises(ValueError):
        cg_dual_compact(A, np.ones(10), np.zeros(6), bias_scale=1.0, lam=0.0,
                        residual=np.ones(10), gradient=np.zeros(6))


def _forcing_runs(solve, eta: float) -> tuple[dict, float]:
    """``solve`` (cgls_compact or cg_dual_compact) from zero on word-count-like rows (norms
    over orders of magnitude, fewer rows than features) with forcing 0 and ``eta``: per
    forcing (iterations, optimal, ||r||, ||t - A beta||) at the returned beta, and ||r^0||."""
    X = random_csr(400, 3000, 0.01, seed=26)
    rng = np.random.default_rng(27)
    X.data = np.minimum(np.floor(rng.pareto(1.0, X.nnz) + 1.0), 300.0)
    A = CompactRows(X, np.arange(400, dtype=np.int64))
    t = rng.choice([-1.0, 1.0], size=400)
    dense = np.c_[X.toarray(), np.ones(400)]
    lam = 1e-2
    runs = {}
    for forcing in (0.0, eta):
        beta = np.zeros(3001)
        z = t.copy()
        gradient = dense.T @ z
        extra = {"t": None} if solve is cgls_compact else {}
        iterations, optimal = solve(A, np.ones(400), beta=beta, bias_scale=1.0, lam=lam,
                                    eps=1e-6, residual=z, gradient=gradient, forcing=forcing,
                                    **extra)
        r = dense.T @ (t - dense @ beta) - lam * beta
        runs[forcing] = (iterations, optimal, np.linalg.norm(r), np.linalg.norm(t - dense @ beta))
    return runs, np.linalg.norm(dense.T @ t)


def test_cgls_forcing_term_stops_early_and_says_so():
    """cgls_compact's ``forcing`` = eta: the iteration stops at the first iterate with
    ||r|| <= eta ||r^0|| (r^0 the warm start's gradient), reported as not optimal while rule
    (13) is unmet; eta = 0 is rule (13) alone.  Rows of unequal norms, fewer than features."""
    eta = 0.5
    runs, r0 = _forcing_runs(cgls_compact, eta)
    exact, forced = runs[0.0], runs[eta]
    assert exact[1] and exact[2] <= 1.01e-6 * exact[3]
    assert not forced[1] and 0 < forced[0] < exact[0] / 4
    assert forced[2] <= eta * r0 * (1 + 1e-9)


def test_row_space_cg_forcing_term_stops_early_and_says_so():
    """cg_dual_compact's ``forcing`` = eta, as cgls_compact's: it stops at the first iterate
    with ||r|| <= eta ||r^0||, reported as not optimal while rule (13) is unmet (mfn's
    gap-tied steps in the tight rounds on text run here)."""
    eta = 0.5
    runs, r0 = _forcing_runs(cg_dual_compact, eta)
    exact, forced = runs[0.0], runs[eta]
    assert exact[1] and exact[2] <= 1e-6 * r0
    assert not forced[1] and 0 < forced[0] < exact[0] / 2
    assert eta * r0 / 10 < forced[2] <= eta * r0 * (1 + 1e-9)
