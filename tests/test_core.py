"""The shared Numba core against the NumPy references in tests/naive.py."""

from __future__ import annotations

import json
import subprocess
import sys

import naive
import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import data_path, load, random_csr

from solvers.core import (
    CompactRows,
    cgls,
    cgls_compact,
    conjugate_gradient,
    csr_matmat,
    csr_matvec,
    csr_matvec_rows,
    csr_rmatvec,
    csr_rmatvec_rows,
    piecewise_linear_root,
)
from solvers.core.linalg import cholesky_solve, gram_cost, gram_update
from solvers.core.sparse import length_order, work_blocks
from solvers.losses.kernels import (
    clipped_loss_breakpoints,
    clipped_loss_sets,
    clipped_loss_sets_hold,
    clipped_loss_sum,
)
from solvers.termination import Termination

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
    assert conjugate_gradient(lambda v: A @ v, np.array([1.0, 1.0])).status == \
        Termination.NUMERICAL_ERROR
    B = np.diag(np.linspace(1, 1000, 50))
    limited = conjugate_gradient(lambda v: B @ v, np.ones(50), rtol=1e-14, max_iter=2)
    assert limited.status == Termination.MAX_ITER and limited.iterations == 2


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


# Run in a fresh interpreter (in this one, other tests have compiled the kernels already):
# the core's warm-up for int32 indices, then the core's products, CGLS, Gram update, line
# search and incomplete Cholesky on a real dataset's matrix (int32 indices, as the parser gives
# them); then the warm-up for int64 indices and the same work on a copy with int64 indices.
# Prints the seconds the first warm-up returned, the wall time of that call, and the Numba
# specializations each phase added, as JSON.
_CORE_WARM_UP = r"""
import json, sys, time
import numba.core.registry, numpy as np
import solvers
from solvers.core import (Kernel, CompactRows, cgls, csr_matmat, csr_matvec, csr_matvec_rows,
                          csr_rmatvec, csr_rmatvec_rows, incomplete_cholesky,
                          piecewise_linear_root, warm_up)
from solvers.core.linalg import gram_update

def specializations():
    return {f"{name}.{attribute}": len(value.signatures)
            for name, module in list(sys.modules.items()) if name.startswith("solvers.core")
            for attribute, value in vars(module).items()
            if isinstance(value, numba.core.registry.CPUDispatcher)}

def added_by(step, *args):
    before = specializations()
    step(*args)
    return sorted(name for name, count in specializations().items()
                  if count > before.get(name, 0))

def work(X):
    n, d = X.shape
    rows = np.arange(0, n, 3, dtype=np.int64)
    w = np.linspace(-1.0, 1.0, d)
    for parallel in (False, True):
        csr_matvec(X, w, 0.5, parallel=parallel)
        csr_rmatvec(X, np.ones(n), parallel=parallel)
        csr_matvec_rows(X, rows, w, 0.0, parallel=parallel)
        csr_rmatvec_rows(X, rows, np.ones(rows.size), parallel=parallel)
        csr_matmat(X, np.ones((2, d)), np.zeros(2), parallel=parallel)
        A = CompactRows(X, rows, n_blocks=2 if parallel else 1)
        A.matvec(w)
        A.rmatvec(np.ones(rows.size))
        cgls(X, rows, np.ones(rows.size), np.ones(rows.size), np.zeros(d + 1), bias_scale=1.0,
             lam=1.0, parallel=parallel)
        gram_update(X, rows, np.ones(rows.size), np.zeros((d + 1, d + 1)), extra_value=1.0,
                    parallel=parallel)
        incomplete_cholesky(X, Kernel("rbf", 0.5, 3, 1.0), 5, parallel=parallel)
    piecewise_linear_root(-1.0, 1.0, np.array([0.5]), np.array([0.1]), np.array([0.1]))

X = solvers.read_svmlight(sys.argv[1]).X
assert X.indices.dtype == np.int32
X64 = X.copy()  # SciPy's constructor would narrow int64 indices that fit back to int32
X64.indices, X64.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
timed = {}

def timed_warm_up():
    start = time.perf_counter()
    timed["seconds"] = warm_up(parallel=True, index_widths=(32,))
    timed["wall"] = time.perf_counter() - start

report = {"warm_up_32": added_by(timed_warm_up), "int32": added_by(work, X),
          "warm_up_64": added_by(warm_up, True, (64,)), "int64": added_by(work, X64)}
print(json.dumps({**report, **timed}))
"""


def test_warm_up_compiles_what_the_core_runs_and_times_itself():
    """In a fresh process, after ``warm_up(index_widths=(32,))`` the core's work on int32
    indices compiles nothing more, and after ``index_widths=(64,)`` (which compiles its own
    specializations) the same work on int64 indices neither; the seconds returned are those
    the call took."""
    done = subprocess.run([sys.executable, "-c", _CORE_WARM_UP, str(data_path("heart_scale"))],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0.0 < report["seconds"] <= report["wall"]
    for width in ("32", "64"):
        assert {"solvers.core.sparse.matvec_serial", "solvers.core.sparse.matvec_parallel",
                "solvers.core.linalg._cgls_kernel", "solvers.core.linalg._gram_kernel",
                "solvers.core.lowrank.kernel_row"} <= set(report[f"warm_up_{width}"]), report
        assert report[f"int{width}"] == [], f"compiled after the warm-up: {report}"


# -- compacted row subsets and the CGLS warm start --------------------------------------------


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
@pytest.mark.parametrize("unit_values", [False, True], ids=["values", "unit"])
def test_compact_rows_products_match_dense(n_blocks, unit_values, index_dtype):
    X = random_csr(300, 57, 0.1, seed=31, index_dtype=index_dtype)
    if unit_values:
        X.data[:] = 1.0
    rng = np.random.default_rng(32)
    rows = np.sort(rng.choice(300, 120, replace=False)).astype(np.int64)
    A = CompactRows(X, rows, n_blocks=n_blocks, unit_values=unit_values)
    assert A.n_rows == 120 and A.nnz == X[rows].nnz and A.n_blocks == n_blocks
    w, z = rng.standard_normal(57), rng.standard_normal(120)
    np.testing.assert_allclose(A.matvec(w, 0.3), naive.matvec_rows(X, rows, w, 0.3),
                               rtol=PRODUCT_RTOL, atol=1e-12)
    np.testing.assert_allclose(A.rmatvec(z), naive.rmatvec_rows(X, rows, z),
                               rtol=PRODUCT_RTOL, atol=1e-12)


def test_compact_rows_of_an_empty_subset():
    X = random_csr(20, 5, 0.5, seed=33)
    A = CompactRows(X, np.empty(0, dtype=np.int64), n_blocks=2)
    assert A.matvec(np.ones(5)).shape == (0,)
    np.testing.assert_array_equal(A.rmatvec(np.empty(0)), np.zeros(5))


def test_work_blocks_split_stored_entries_evenly():
    lengths = np.r_[np.ones(900, dtype=np.int64), np.full(100, 90)]  # sorted by length
    indptr = np.r_[0, np.cumsum(lengths)]
    blocks = work_blocks(indptr, 2)
    assert blocks[0] == 0 and blocks[-1] == 1000 and blocks.shape == (3,)
    first = indptr[blocks[1]] + 4 * blocks[1]  # stored entries plus the per-row cost
    total = indptr[-1] + 4 * 1000
    assert abs(first - total / 2) <= 94
    assert work_blocks(indptr[:2], 4).tolist() == [0, 1]  # never more blocks than rows


def test_length_order_is_stable_and_skips_sorted_matrices():
    indptr = np.array([0, 3, 4, 4, 7, 8])  # lengths 3, 1, 0, 3, 1
    np.testing.assert_array_equal(length_order(indptr), [2, 1, 4, 0, 3])
    assert length_order(np.array([0, 1, 2, 4, 6])) is None


@pytest.mark.parametrize("precondition", [0.0, 1.0])
def test_cgls_warm_start_from_given_residual_and_gradient(precondition):
    """Footnote 7: with z^0 and r^0 supplied, pass 0's products are skipped and the iterates
    are those of the cold computation."""
    X = random_csr(400, 40, 0.15, seed=34)
    rng = np.random.default_rng(35)
    rows = np.sort(rng.choice(400, 250, replace=False)).astype(np.int64)
    c = rng.uniform(0.5, 2.0, 250)
    t = rng.choice([-1.0, 1.0], size=250)
    start = rng.standard_normal(41) * 0.1
    lam = 0.05
    cold = start.copy()
    cold_iterations, _ = cgls(X, rows, np.sqrt(c), t, cold, bias_scale=1.0, lam=lam,
                              eps=1e-30, max_iter=6, precondition=precondition)
    A = CompactRows(X, rows, n_blocks=2)
    outputs = naive.matvec_rows(X, rows, start[:-1], start[-1])
    residual = np.sqrt(c) * (t - outputs)
    gradient = np.r_[naive.rmatvec_rows(X, rows, c * (t - outputs)),
                     np.sum(c * (t - outputs))] - lam * start
    warm = start.copy()
    warm_iterations, _ = cgls_compact(A, np.sqrt(c), None, warm, bias_scale=1.0, lam=lam,
                                      eps=1e-30, max_iter=6, precondition=precondition,
                                      residual=residual, gradient=gradient)
    assert warm_iterations == cold_iterations == 6
    # (compared before CG converges: past that only round-off is left to amplify)
    np.testing.assert_allclose(warm, cold, rtol=1e-9, atol=1e-12)
    # the residual comes back as the final z = sqrt(c) (t - x~ . beta)
    final = naive.matvec_rows(X, rows, warm[:-1], warm[-1])
    np.testing.assert_allclose(residual, np.sqrt(c) * (t - final), atol=1e-10)


@pytest.mark.parametrize("width", [np.inf, 2.0])
@pytest.mark.parametrize("xi_lo", [0.0, -0.25])
def test_clipped_loss_sets_and_sums_match_numpy(width, xi_lo):
    rng = np.random.default_rng(36)
    xi = rng.normal(0.5, 1.5, 500)
    xi[:5] = xi_lo  # at the knots: I0 is closed at xi_lo, I2 closed at xi_lo + width
    if np.isfinite(width):
        xi[5:10] = xi_lo + width
    weight = rng.uniform(0.5, 2.0, 500)
    quadratic, linear = clipped_loss_sets(xi, xi_lo, width)
    np.testing.assert_array_equal(quadratic, np.flatnonzero((xi > xi_lo) & (xi < xi_lo + width)))
    np.testing.assert_array_equal(linear, np.flatnonzero(xi >= xi_lo + width))
    assert clipped_loss_sum(xi, weight, xi_lo, width) == pytest.approx(
        float(weight @ naive.clipped_loss(xi, xi_lo, width)), rel=1e-12)
    tol = 1e-8
    moved = xi + rng.uniform(-0.5 * tol, 0.5 * tol, 500)
    assert clipped_loss_sets_hold(xi, moved, xi_lo, width, tol)
    jumped = xi.copy()
    jumped[quadratic[0]] = xi_lo - 2 * tol  # an active term leaves I1
    assert not clipped_loss_sets_hold(xi, jumped, xi_lo, width, tol)


# -- the Gram matrix of weighted least-squares rows and its Cholesky solve -------------------


@pytest.mark.parametrize("parallel", [False, True])
def test_gram_update_of_rows_with_a_bias_column(parallel, index_dtype):
    X = random_csr(300, 40, 0.2, seed=37, index_dtype=index_dtype)
    rng = np.random.default_rng(38)
    rows = np.sort(rng.choice(300, 150, replace=False)).astype(np.int64)
    weights = rng.uniform(0.1, 2.0, 150)
    G = np.zeros((41, 41))
    gram_update(X, rows, weights, G, extra_value=0.7, parallel=parallel)
    expected = naive.gram(X, rows, weights, extra_value=0.7)
    np.testing.assert_allclose(np.tril(G), np.tril(expected), rtol=1e-12, atol=1e-12)
    assert not np.any(np.triu(G, 1))  # the lower triangle only
    # negative weights take rows out again: G follows a changing row set
    leaving, entering = rows[::3], np.setdiff1d(np.arange(0, 300, 7), rows)
    gram_update(X, leaving, -weights[::3], G, extra_value=0.7, parallel=parallel)
    gram_update(X, entering, np.ones(entering.size), G, extra_value=0.7, parallel=parallel)
    kept = np.setdiff1d(rows, leaving)
    expected = naive.gram(X, np.r_[kept, entering],
                          np.r_[weights[np.isin(rows, kept)], np.ones(entering.size)],
                          extra_value=0.7)
    np.testing.assert_allclose(np.tril(G), np.tril(expected), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("parallel", [False, True])
def test_gram_update_of_paired_rows(parallel):
    """Ordinal pairs: row j's pairs share x_j, each with its own threshold column."""
    X = random_csr(200, 30, 0.2, seed=39)
    rows = np.array([3, 5, 7, 9, 100, 150, 199], dtype=np.int64)
    pair_ptr = np.array([0, 2, 3, 3, 5, 6, 7, 9])
    pair_col = np.array([0, 2, 1, 0, 1, 2, 0, 1, 2])
    weights = np.random.default_rng(40).uniform(0.5, 1.0, 9)
    G = np.zeros((33, 33))
    gram_update(X, rows, weights, G, extra_value=-0.5, pair_ptr=pair_ptr, pair_col=pair_col,
                parallel=parallel)
    expected = naive.gram(X, rows, weights, -0.5, pair_ptr, pair_col, n_extra=3)
    np.testing.assert_allclose(np.tril(G), np.tril(expected), rtol=1e-12, atol=1e-12)


def test_gram_cost_and_argument_checks():
    X = random_csr(50, 10, 0.3, seed=41)
    rows = np.array([1, 4, 9], dtype=np.int64)
    lengths = np.diff(X.indptr)[rows]
    assert gram_cost(X.indptr, rows) == int(np.sum(lengths * (lengths + 1) // 2))
    with pytest.raises(ValueError, match="one entry per row"):
        gram_update(X, rows, np.ones(2), np.zeros((11, 11)))
    with pytest.raises(ValueError, match="square"):
        gram_update(X, rows, np.ones(3), np.zeros((10, 10)))
    repeated = sp.csr_matrix((np.ones(2), np.array([3, 3]), np.array([0, 2])), shape=(1, 10))
    with pytest.raises(ValueError, match="canonical"):
        gram_update(repeated, np.array([0]), np.ones(1), np.zeros((11, 11)))


def test_cholesky_solve_reads_the_lower_triangle_and_reports_failure():
    rng = np.random.default_rng(42)
    B = rng.standard_normal((30, 30))
    M = B @ B.T + 0.1 * np.eye(30)
    rhs = rng.standard_normal(30)
    lower = np.tril(M)
    lower[0, 29] = 1e6  # garbage above the diagonal is never read
    np.testing.assert_allclose(cholesky_solve(lower, rhs.copy()), np.linalg.solve(M, rhs),
                               rtol=1e-9)
    assert cholesky_solve(-np.eye(3), np.ones(3)) is None


def test_pairwise_sum_is_numpys_sum_bit_for_bit():
    """``core.linalg.pairwise_sum``: NumPy's ``ndarray.sum`` of a 1-d float64 array, bit for
    bit (its pairwise summation), at every length around its block sizes and beyond."""
    from solvers.core.linalg import pairwise_sum

    rng = np.random.default_rng(7)
    for n in [*range(0, 300), 511, 512, 513, 683, 1000, 4097, 65_537]:
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
        assert pairwise_sum(a) == a.sum(), n
