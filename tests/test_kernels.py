"""The kernel core (solvers/core/kernels.py) against the NumPy references in naive_kernels."""

from __future__ import annotations

import naive_kernels as naive
import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import load, random_csr

from solvers.core import Kernel, KernelCache, kernel_decision, kernel_diagonal, kernel_matrix

KERNEL_RTOL = 1e-12
KERNEL_ATOL = 1e-12

KERNELS = [
    Kernel("linear"),
    Kernel("rbf", gamma=0.7),
    Kernel("polynomial", gamma=0.5, degree=3, coef0=1.0),
    Kernel("polynomial", gamma=2.0, degree=2, coef0=-0.5),
    Kernel("sigmoid", gamma=0.3, coef0=-0.2),
]
KERNEL_IDS = ["linear", "rbf", "poly3", "poly2-negative-coef0", "sigmoid"]


def _naive(Q, Z, kernel: Kernel):
    return naive.kernel_matrix(Q, Z, kernel.name, kernel.gamma, kernel.degree, kernel.coef0)


@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_kernel_blocks_match_naive(kernel, parallel, index_dtype):
    Q = random_csr(37, 23, 0.3, seed=1, index_dtype=index_dtype)
    Z = random_csr(52, 23, 0.2, seed=2, index_dtype=index_dtype)
    np.testing.assert_allclose(kernel_matrix(Q, Z, kernel, parallel=parallel),
                               _naive(Q, Z, kernel), rtol=KERNEL_RTOL, atol=KERNEL_ATOL)
    np.testing.assert_allclose(kernel_diagonal(Q, kernel), np.diag(_naive(Q, Q, kernel)),
                               rtol=KERNEL_RTOL, atol=KERNEL_ATOL)


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_kernel_blocks_on_real_data(parallel):
    X = load("heart_scale").X[:60]
    for kernel in KERNELS:
        np.testing.assert_allclose(kernel_matrix(X, X, kernel, parallel=parallel),
                                   _naive(X, X, kernel), rtol=KERNEL_RTOL, atol=KERNEL_ATOL)


def test_rbf_of_a_row_with_itself_is_exactly_one_and_empty_rows_work():
    X = sp.csr_matrix(np.array([[0.0, 0.0], [1e8, 3.0], [0.0, 0.0]]))
    K = kernel_matrix(X, X, Kernel("rbf", gamma=1.0))
    np.testing.assert_array_equal(np.diag(K), [1.0, 1.0, 1.0])
    assert K[0, 2] == 1.0 and K[0, 1] == 0.0


@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_decision_values_match_naive(kernel, parallel, index_dtype):
    Q = random_csr(41, 17, 0.3, seed=3, index_dtype=index_dtype)
    Z = random_csr(29, 17, 0.3, seed=4, index_dtype=index_dtype)
    rng = np.random.default_rng(5)
    coef = rng.standard_normal((3, 29))
    intercept = rng.standard_normal(3)
    expected = _naive(Q, Z, kernel) @ coef.T + intercept
    np.testing.assert_allclose(kernel_decision(Q, Z, kernel, coef, intercept, parallel=parallel),
                               expected, rtol=1e-11, atol=1e-11)


def test_shape_errors_and_bad_kernels():
    Q, Z = random_csr(4, 3, 0.5, seed=6), random_csr(5, 4, 0.5, seed=7)
    with pytest.raises(ValueError, match="columns"):
        kernel_matrix(Q, Z, Kernel())
    with pytest.raises(ValueError, match="coef must have shape"):
        kernel_decision(Q, Q, Kernel(), np.ones((1, 3)), [0.0])
    with pytest.raises(ValueError, match="unknown kernel 'laplacian'"):
        Kernel("laplacian")
    with pytest.raises(ValueError, match="gamma"):
        Kernel("rbf", gamma=0.0)
    with pytest.raises(ValueError, match="degree"):
        Kernel("polynomial", degree=0)
    with pytest.raises(ValueError, match="cache_mb"):
        KernelCache(Q, Kernel(), cache_mb=0.0)


# -- the row cache -------------------------------------------------------------------------------


def test_cache_capacity_follows_the_memory_budget():
    X = random_csr(1000, 10, 0.3, seed=8)
    row_mib = 8 * 1000 / 2**20
    assert KernelCache(X, Kernel(), cache_mb=10 * row_mib).capacity == 10
    assert KernelCache(X, Kernel(), cache_mb=10.5 * row_mib).capacity == 10
    assert KernelCache(X, Kernel(), cache_mb=0.1 * row_mib).capacity == 1  # at least one row
    assert KernelCache(X, Kernel(), cache_mb=1e6).capacity == 1000  # at most n rows
    cache = KernelCache(X, Kernel(), cache_mb=10 * row_mib)
    assert cache.store[0].nbytes <= 10 * row_mib * 2**20


@pytest.mark.parametrize("capacity", [1, 7, 40])
def test_cache_rows_and_lru_policy_match_the_reference(capacity, index_dtype):
    X = random_csr(40, 15, 0.4, seed=9, index_dtype=index_dtype)
    kernel = Kernel("rbf", gamma=0.3)
    K = _naive(X, X, kernel)
    cache = KernelCache(X, kernel, cache_mb=capacity * 8 * 40 / 2**20)
    assert cache.capacity == capacity
    reference = naive.LRURowCache(capacity)
    rng = np.random.default_rng(10)
    # a skewed request stream: some rows come back often, as SMO's working sets do
    requests = np.concatenate([rng.integers(0, 40, 300), rng.integers(0, 6, 200)])
    rng.shuffle(requests)
    for i in requests:
        np.testing.assert_allclose(cache.row(int(i)), K[i], rtol=KERNEL_RTOL,
                                   atol=KERNEL_ATOL)
        reference.request(int(i))
    assert (cache.hits, cache.misses) == (reference.hits, reference.misses)
    np.testing.assert_array_equal(cache.cached_rows(), reference.most_recent_first())
    np.testing.assert_allclose(cache.diagonal, np.diag(K), rtol=KERNEL_RTOL)
    stats = cache.stats()
    assert stats["cache_hits"] + stats["cache_misses"] == requests.size
    assert 0.0 < stats["cache_hit_rate"] < 1.0


@pytest.mark.parametrize("capacity", [5, 30])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_cache_products_do_not_evict(capacity, parallel):
    X = load("diabetes_scale").X[:30]
    kernel = Kernel("polynomial", gamma=0.5, degree=2, coef0=1.0)
    K = _naive(X, X, kernel)
    cache = KernelCache(X, kernel, cache_mb=capacity * 8 * 30 / 2**20, parallel=parallel)
    for i in (29, 28, 3):
        cache.row(i)
    requested = cache.cached_rows()[:3].tolist()
    v = np.random.default_rng(11).standard_normal(30)
    np.testing.assert_allclose(cache.matvec(v), K @ v, rtol=1e-12, atol=1e-12)
    assert cache.rows_cached == capacity  # free slots were filled ...
    assert set(requested) <= set(cache.cached_rows().tolist())  # ... and nothing evicted
    order = cache.cached_rows().tolist()
    np.testing.assert_allclose(cache.matvec(v), K @ v, rtol=1e-12, atol=1e-12)
    assert cache.cached_rows().tolist() == order  # a scan leaves the LRU order alone
    for i in range(30):
        np.testing.assert_allclose(cache.row(i), K[i], rtol=1e-12, atol=1e-12)


def test_cache_fill_computes_each_row_once():
    X = load("breast-cancer_scale").X[:50]
    cache = KernelCache(X, Kernel("rbf"), cache_mb=1.0, parallel=True)
    assert cache.fill() == 50 and cache.fill() == 0
    assert cache.misses == 50
    for i in range(50):
        cache.row(i)
    assert (cache.hits, cache.misses) == (50, 50)
    with pytest.raises(IndexError):
        cache.row(50)


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_no_support_vectors_leaves_the_intercept(parallel):
    Q = random_csr(6, 5, 0.5, seed=12)
    Z = sp.csr_matrix((0, 5))
    out = kernel_decision(Q, Z, Kernel(), np.empty((2, 0)), [0.5, -1.0], parallel=parallel)
    np.testing.assert_array_equal(out, np.tile([0.5, -1.0], (6, 1)))
    assert kernel_matrix(Z, Q, Kernel(), parallel=parallel).shape == (0, 6)


def test_scale_gamma_is_scikit_learns():
    """gamma="scale" = 1 / (n_features * X.var()) over the dense matrix, as scikit-learn."""
    from solvers.core.kernels import scale_gamma

    X = load("heart_scale").X
    dense = X.toarray()
    assert scale_gamma(X) == pytest.approx(1.0 / (X.shape[1] * dense.var()), rel=1e-12)


@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_dense_columns_give_the_scattered_rows_values(kernel, monkeypatch):
    """A dense enough matrix runs kernel rows over its dense columns (config
    KERNEL_DENSE_MIN_DENSITY); the products and their order are the scatter's, so the values
    are identical, and a matrix below the density keeps the scatter."""
    from solvers import config
    from solvers.core.kernels import column_operand

    X = load("heart_scale").X
    Q = random_csr(7, X.shape[1], 0.6, seed=11)
    assert column_operand(X)[4].shape == (X.shape[1], X.shape[0])
    assert column_operand(random_csr(50, 40, 0.04, seed=12))[4].size == 0
    dense = kernel_matrix(Q, X, kernel, parallel=False)
    monkeypatch.setattr(config, "KERNEL_DENSE_MIN_DENSITY", 2.0)
    assert column_operand(X)[4].size == 0
    np.testing.assert_array_equal(kernel_matrix(Q, X, kernel, parallel=False), dense)


def test_vectorized_exponential_is_within_one_ulp_of_the_c_library():
    """The RBF kernel's exponential (solvers.core.exp) against NumPy's (the C library's) on
    arguments spanning the whole range a kernel row meets, the underflow edge included."""
    from solvers.core.exp import UNDERFLOW, rbf_from_dots

    rng = np.random.default_rng(0)
    x = -np.concatenate([rng.exponential(3.0, 200_000), rng.uniform(0.0, 800.0, 50_000),
                         [0.0, 5e-324, 1e-300, 1e-16, np.log(2.0) / 2, 707.9, 708.0, 708.5,
                          745.2, 1e6]])
    # rbf_from_dots(out = dots, sq_i = 0, z_sq = 0, gamma = 0.5): exp(-0.5 * -2 x) = exp(x)
    values = x.copy()
    rbf_from_dots(values, 0.0, np.zeros_like(x), 0.5)
    exact = np.exp(x)
    normal = x >= UNDERFLOW
    assert np.all(np.abs(values[normal] - exact[normal]) <= np.spacing(exact[normal]))
    assert np.all(values[~normal] == 0.0) and np.all(exact[~normal] < 3.4e-308)
    assert values[x == 0.0][0] == 1.0  # k(x, x) is exactly one


def test_model_prediction_takes_threads_only_for_batches_that_pay(monkeypatch):
    """predict(parallel=True) chooses by size (config.KERNEL_DECISION_PARALLEL_MIN_ENTRIES,
    measured): one row runs serially, a large batch on the thread pool; both give the
    serial values."""
    import numba

    from solvers import config
    from solvers.core import kernels
    from solvers.models import KernelModel

    if numba.get_num_threads() < 2:
        pytest.skip("one Numba thread: nothing to choose")
    Z = random_csr(700, 20, 0.3, seed=11)
    model = KernelModel(Z, np.random.default_rng(12).standard_normal((1, 700)), [0.1],
                        np.array([-1.0, 1.0]), Kernel("rbf", 0.5))
    calls = []
    for name in ("kernel_decision_serial", "kernel_decision_parallel"):
        original = getattr(kernels, name)
        monkeypatch.setattr(kernels, name,
                            lambda *a, _f=original, _n=name: (calls.append(_n), _f(*a))[1])
    large = -(-config.KERNEL_DECISION_PARALLEL_MIN_ENTRIES // (2 * 700))
    for rows, expected in ((1, "kernel_decision_serial"), (large, "kernel_decision_parallel")):
        X = random_csr(rows, 20, 0.3, seed=13)
        calls.clear()
        threaded = model.decision_function(X, parallel=True)
        assert calls == [expected]
        np.testing.assert_allclose(threaded, model.decision_function(X), rtol=1e-12,
                                   atol=1e-12)
    assert kernels.use_parallel_decision(large, 700, 1)
    assert not kernels.use_parallel_decision(large - 1, 700, 1)



@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_rows_loaded_together_are_the_single_rows_values(kernel, parallel):
    """KernelCache.load computes the missing rows of a block together, column chunk by column
    chunk over the dense copy (3,000 rows of a9a: three chunks of KERNEL_BLOCK_COLUMNS) or
    row by row over the scatter (w8a's 4% density): bitwise the rows one at a time; the rows
    of a block stay resident while it is loaded, cached ones count as hits."""
    for name, rows in (("a9a", 3000), ("w8a", 1500)):
        ds = load(name)
        X = ds.X[np.sort(np.random.default_rng(1).permutation(ds.n_samples)[:rows])]
        cache = KernelCache(X, kernel, cache_mb=40 * 8 * rows / 2**20, parallel=parallel)
        assert cache.capacity == 40
        assert (cache.columns[4].size > 0) == (name == "a9a")
        first = np.arange(0, 60, 2)
        cache.load(first, parallel=parallel)
        second = np.concatenate([first[:10], np.arange(100, 130)])  # 10 hits, 30 misses
        cache.load(second, parallel=parallel)
        assert (cache.hits, cache.misses) == (10, 60)
        assert set(cache.cached_rows()) >= set(second)
        expected = kernel_matrix(X[second], X, kernel, parallel=False)
        for k, i in enumerate(second):
            np.testing.assert_array_equal(cache.store[0][cache.slots_of(np.array([i]))[0]],
                                          expected[k])
        with pytest.raises(ValueError, match="do not fit"):
            cache.load(np.arange(41))


@pytest.mark.parametrize("name", ["letter.scale", "w8a"])
def test_operands_of_a_row_subset_are_the_submatrixs(name, index_dtype):
    """take_operands gives X[which]'s row_operand and column_operand (the CSR arrays, the
    norms, the CSC arrays with sorted rows, or the dense copy where one applies: letter's
    dense 16 columns, w8a's 4% scatter) without building X[which]; a cache on them, its rows
    in a reused buffer, computes X[which]'s kernel rows bitwise."""
    from solvers.core.kernels import column_operand, row_operand, take_operands

    X = load(name).X[:3000]
    if index_dtype == np.int64:
        X = sp.csr_matrix((X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64)),
                          shape=X.shape)
    which = np.sort(np.random.default_rng(5).permutation(X.shape[0])[:700])
    rows, columns = take_operands(row_operand(X), column_operand(X), which)
    sub = X[which]
    dense = name == "letter.scale"
    for k, (got, expected) in enumerate(zip((*rows, *columns),
                                            (*row_operand(sub), *column_operand(sub)),
                                            strict=True)):
        if dense and k in (4, 5, 6):  # the CSC arrays: the dense copy stands in for them
            assert got.size == 0
        else:
            np.testing.assert_array_equal(got, expected)
    assert (columns[4].size > 0) == dense
    kernel = Kernel("rbf", gamma=0.3)
    buffer = np.full(700 * 700 + 5, np.nan)
    cache = KernelCache((rows, columns), kernel, cache_mb=100 * 8 * 700 / 2**20,
                        buffer=buffer, min_rows=2)
    assert cache.capacity == 100 and np.shares_memory(cache.store[0], buffer)
    cache.load(np.arange(0, 200, 2))
    expected = kernel_matrix(sub[np.arange(0, 200, 2)], sub, kernel, parallel=False)
    for k, i in enumerate(range(0, 200, 2)):
        np.testing.assert_array_equal(cache.store[0][cache.slots_of(np.array([i]))[0]],
                                      expected[k])
    np.testing.assert_array_equal(cache.diagonal, kernel_diagonal(sub, kernel))
    small = KernelCache((rows, columns), kernel, cache_mb=1.0, buffer=np.empty(10))
    assert not np.shares_memory(small.store[0], buffer)  # too small a buffer: its own
