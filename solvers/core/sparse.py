"""Sparse products over a CSR matrix and over subsets of its rows.

These are the kernels every linear solver spends its time in (LIBLINEAR's ``Xv``/``XTv`` and
``subXv``/``subXTv``).  Each product exists in a serial form, safe to call from any thread (the
web process predicts with these: the prediction kernels ``matvec_serial`` and ``matmat_serial``
release the GIL, so a long prediction does not stop the process's other threads), and a
parallel form for the worker processes, which splits the rows into blocks.  ``X'z`` in
parallel accumulates into one buffer per thread and sums them; :func:`use_parallel` decides
when that pays.

Conventions: ``indptr, indices, data`` are the CSR arrays; ``rows`` (int64) selects rows; the
products add a scalar ``intercept`` to every output so a bias column never has to be stored.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit, prange

from solvers import config


@njit(cache=True, inline="always")
def _u(i):
    """An index as unsigned: Numba then skips its negative-index wraparound test, which
    otherwise about doubles the cost of a sparse product (CSR indices are never negative)."""
    return np.uint64(i)


@njit(cache=True, inline="always")
def _row_dot(indptr, indices, data, i, w):
    acc = 0.0
    for k in range(_u(indptr[i]), _u(indptr[i + 1])):
        acc += data[k] * w[_u(indices[k])]
    return acc


@njit(cache=True, inline="always")
def _row_axpy(indptr, indices, data, i, a, out):
    """out += a x_i."""
    for k in range(_u(indptr[i]), _u(indptr[i + 1])):
        out[_u(indices[k])] += data[k] * a


#: x_i . w and out += a x_i for one CSR row, inlined into the calling kernel: the public names
#: of the two row primitives for the families' own coordinate loops (``solvers.dual_cd``).
row_dot = _row_dot
row_axpy = _row_axpy


# -- X w + intercept -----------------------------------------------------------------------


@njit(cache=True, nogil=True)
def matvec_serial(indptr, indices, data, w, intercept, out):
    """out[i] = x_i . w + intercept for every row i."""
    for i in range(out.shape[0]):
        out[i] = _row_dot(indptr, indices, data, i, w) + intercept


@njit(cache=True, nogil=True, parallel=True)
def matvec_parallel(indptr, indices, data, w, intercept, out):
    """Parallel form of :func:`matvec_serial`."""
    for i in prange(out.shape[0]):
        out[i] = _row_dot(indptr, indices, data, i, w) + intercept


@njit(cache=True, nogil=True)
def matvec_rows_serial(indptr, indices, data, rows, w, intercept, out):
    """out[k] = x_{rows[k]} . w + intercept."""
    for k in range(rows.shape[0]):
        out[k] = _row_dot(indptr, indices, data, rows[k], w) + intercept


@njit(cache=True, nogil=True, parallel=True)
def matvec_rows_parallel(indptr, indices, data, rows, w, intercept, out):
    """Parallel form of :func:`matvec_rows_serial`."""
    for k in prange(rows.shape[0]):
        out[k] = _row_dot(indptr, indices, data, rows[k], w) + intercept


# -- X' z -------------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def rmatvec_serial(indptr, indices, data, z, out):
    """out = X' z (out is overwritten)."""
    out[:] = 0.0
    for i in range(z.shape[0]):
        zi = z[i]
        if zi != 0.0:
            _row_axpy(indptr, indices, data, i, zi, out)


@njit(cache=True, nogil=True)
def rmatvec_rows_serial(indptr, indices, data, rows, z, out):
    """out = sum_k z[k] x_{rows[k]} (out is overwritten)."""
    out[:] = 0.0
    for k in range(rows.shape[0]):
        zk = z[k]
        if zk != 0.0:
            _row_axpy(indptr, indices, data, rows[k], zk, out)


@njit(cache=True, nogil=True, parallel=True)
def _rmatvec_blocks(indptr, indices, data, rows, z, out, all_rows, n_threads):
    n_rows = z.shape[0]
    n_blocks = min(n_threads, max(1, n_rows))
    buffers = np.zeros((n_blocks, out.shape[0]))
    step = (n_rows + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        acc = buffers[b]
        for k in range(b * step, min(n_rows, (b + 1) * step)):
            zk = z[k]
            if zk != 0.0:
                _row_axpy(indptr, indices, data, k if all_rows else rows[k], zk, acc)
    for j in prange(out.shape[0]):
        s = 0.0
        for b in range(n_blocks):
            s += buffers[b, j]
        out[j] = s


def rmatvec_parallel(indptr, indices, data, z, out):
    """Parallel form of :func:`rmatvec_serial` (one accumulator per thread)."""
    _rmatvec_blocks(indptr, indices, data, _NO_ROWS, z, out, True, numba.get_num_threads())


def rmatvec_rows_parallel(indptr, indices, data, rows, z, out):
    """Parallel form of :func:`rmatvec_rows_serial` (one accumulator per thread)."""
    _rmatvec_blocks(indptr, indices, data, rows, z, out, False, numba.get_num_threads())


_NO_ROWS = np.empty(0, np.int64)


# -- compacted row subsets ------------------------------------------------------------------
#
# An iterative solver that multiplies by the same subset of rows many times (CGLS on the active
# set of L2-SVM-MFN: tens to thousands of products per subset) pays once to copy those rows
# into contiguous arrays and then streams them: reaching rows through an index list costs up
# to 3x more per stored entry once the subset is a small part of the matrix.  The copy keeps
# the rows' order; rows of equal length next to each other (see :func:`length_order`) keep the
# inner loop's trip count predictable, which matters as much again on rows of varied length.
# The rows are cut into blocks of equal work, one per thread, and every per-thread
# accumulator is padded to whole cache lines: unpadded, two threads writing the two halves of
# a short buffer (22 features on ijcnn1) share a line and run slower than one thread.

# doubles per 64-byte cache line: per-thread partial results are kept this far apart
CACHE_LINE_DOUBLES = 8


def padded_width(n: int) -> int:
    """Row length of a per-thread accumulator of ``n`` doubles: whole cache lines plus one,
    so that no two threads' rows share a line whatever the base address's alignment."""
    return (n + CACHE_LINE_DOUBLES - 1) // CACHE_LINE_DOUBLES * CACHE_LINE_DOUBLES \
        + CACHE_LINE_DOUBLES


def length_order(indptr) -> np.ndarray | None:
    """A stable permutation putting the rows in non-decreasing order of stored entries, or
    None when they already are (constant-length rows, e.g. one-hot or dense data)."""
    lengths = np.diff(indptr)
    if lengths.shape[0] < 2 or np.all(lengths[1:] >= lengths[:-1]):
        return None
    return np.argsort(lengths, kind="stable")


def work_blocks(indptr, n_blocks: int) -> np.ndarray:
    """Row boundaries of ``n_blocks`` contiguous blocks of about equal work (stored entries
    plus a per-row cost), as an int64 array of n_blocks + 1 entries."""
    n_rows = indptr.shape[0] - 1
    n_blocks = max(1, min(n_blocks, n_rows))
    work = indptr.astype(np.int64) + _ROW_COST * np.arange(n_rows + 1)
    targets = work[-1] * np.arange(1, n_blocks) / n_blocks
    cuts = np.searchsorted(work, targets)
    return np.concatenate(([0], cuts, [n_rows])).astype(np.int64)


# a row costs about as much as this many stored entries beyond its entries (loop setup, the
# write of its result, the branch at its end)
_ROW_COST = 4


@njit(cache=True, nogil=True, parallel=True)
def _gather_rows(indptr, indices, data, rows, out_indptr, out_indices, out_data, blocks,
                 copy_data):
    for b in prange(blocks.shape[0] - 1):
        for j in range(blocks[b], blocks[b + 1]):
            source = _u(indptr[rows[j]])
            target = _u(out_indptr[j])
            for k in range(_u(out_indptr[j + 1]) - target):
                out_indices[target + k] = indices[source + k]
                if copy_data:
                    out_data[target + k] = data[source + k]


@njit(cache=True, nogil=True)
def _subset_indptr(indptr, rows, out):
    out[0] = 0
    for j in range(rows.shape[0]):
        out[j + 1] = out[j] + (indptr[rows[j] + 1] - indptr[rows[j]])


@njit(cache=True, inline="always")
def compact_row_dot(indptr, indices, data, unit_values, j, w):
    """x_j . w for row ``j`` of a compacted matrix (all values 1 when ``unit_values``)."""
    acc = 0.0
    if unit_values:
        for k in range(_u(indptr[j]), _u(indptr[j + 1])):
            acc += w[_u(indices[k])]
    else:
        for k in range(_u(indptr[j]), _u(indptr[j + 1])):
            acc += data[k] * w[_u(indices[k])]
    return acc


@njit(cache=True, inline="always")
def compact_row_axpy(indptr, indices, data, unit_values, j, a, out):
    """out += a x_j for row ``j`` of a compacted matrix."""
    if unit_values:
        for k in range(_u(indptr[j]), _u(indptr[j + 1])):
            out[_u(indices[k])] += a
    else:
        for k in range(_u(indptr[j]), _u(indptr[j + 1])):
            out[_u(indices[k])] += data[k] * a


@njit(cache=True, nogil=True, parallel=True)
def _compact_matvec(indptr, indices, data, unit_values, blocks, w, intercept, out):
    for b in prange(blocks.shape[0] - 1):
        for j in range(blocks[b], blocks[b + 1]):
            out[j] = compact_row_dot(indptr, indices, data, unit_values, j, w) + intercept


@njit(cache=True, nogil=True, parallel=True)
def _compact_rmatvec(indptr, indices, data, unit_values, blocks, z, buffers, out):
    n_blocks = blocks.shape[0] - 1
    for b in prange(n_blocks):
        acc = buffers[b]
        acc[:] = 0.0
        for j in range(blocks[b], blocks[b + 1]):
            if z[j] != 0.0:
                compact_row_axpy(indptr, indices, data, unit_values, j, z[j], acc)
    for f in range(out.shape[0]):
        s = 0.0
        for b in range(n_blocks):
            s += buffers[b, f]
        out[f] = s


class CompactRows:
    """Selected rows of a CSR matrix copied into contiguous CSR arrays, in the given order,
    split into ``n_blocks`` blocks of equal work (one per thread; 1: serial).

    ``unit_values`` (every stored value is 1, as in one-hot or binary bag-of-words data) drops
    the values: the products then read the column indices only.  ``rows`` is kept: row ``j``
    here is row ``rows[j]`` of the source.  :meth:`all_rows` wraps a whole matrix without a
    copy.
    """

    def __init__(self, X, rows, *, n_blocks: int = 1, unit_values: bool = False):
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.rows = rows
        self.n_features = X.shape[1]
        self.unit_values = bool(unit_values)
        self.indptr = np.empty(rows.shape[0] + 1, dtype=np.int64)
        _subset_indptr(X.indptr, rows, self.indptr)
        self.blocks = work_blocks(self.indptr, n_blocks)
        nnz = int(self.indptr[-1])
        self.indices = np.empty(nnz, dtype=X.indices.dtype)
        self.data = np.empty(0 if self.unit_values else nnz)
        with thread_count(self.n_blocks):
            _gather_rows(X.indptr, X.indices, X.data, rows, self.indptr, self.indices,
                         self.data, self.blocks, not self.unit_values)

    @classmethod
    def all_rows(cls, X, *, n_blocks: int = 1, unit_values: bool = False) -> CompactRows:
        """Every row of ``X``, in order, on ``X``'s own arrays (``rows`` is None)."""
        self = cls.__new__(cls)
        self.rows = None
        self.n_features = X.shape[1]
        self.unit_values = bool(unit_values)
        self.indptr = X.indptr
        self.indices = X.indices
        self.data = np.empty(0) if self.unit_values else X.data
        self.blocks = work_blocks(self.indptr, n_blocks)
        return self

    @property
    def n_rows(self) -> int:
        return self.indptr.shape[0] - 1

    @property
    def n_blocks(self) -> int:
        return self.blocks.shape[0] - 1

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def arrays(self):
        """(indptr, indices, data, unit_values, blocks) for the compiled kernels."""
        return self.indptr, self.indices, self.data, self.unit_values, self.blocks

    def matvec(self, w, intercept: float = 0.0) -> np.ndarray:
        """x_j . w + intercept for every row j."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        out = np.empty(self.n_rows)
        with thread_count(self.n_blocks):
            _compact_matvec(*self.arrays(), w, float(intercept), out)
        return out

    def rmatvec(self, z) -> np.ndarray:
        """sum_j z_j x_j."""
        z = np.ascontiguousarray(z, dtype=np.float64)
        if z.shape[0] != self.n_rows:
            raise ValueError("z must have one entry per row")
        out = np.empty(self.n_features)
        buffers = np.empty((self.n_blocks, padded_width(self.n_features)))
        with thread_count(self.n_blocks):
            _compact_rmatvec(*self.arrays(), z, buffers, out)
        return out


@contextmanager
def thread_count(n_threads: int):
    """Run the parallel kernels of the block with ``n_threads`` threads (1: on the caller's
    thread only; a parallel region of one thread costs about a microsecond)."""
    previous = numba.get_num_threads()
    n_threads = min(max(1, n_threads), numba.config.NUMBA_NUM_THREADS)
    if n_threads == previous:
        yield
        return
    numba.set_num_threads(n_threads)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


#: Numba's threading layers that several Python threads may enter at once.
_THREADSAFE_LAYERS = ("omp", "tbb")


def threadsafe_threading_layer() -> bool:
    """Whether Numba's threading layer in this process lets several threads run parallel
    kernels at once (OpenMP, TBB; not the workqueue layer, which aborts the process on
    concurrent use).  The layer is chosen at the first parallel kernel's launch; this runs a
    tiny one if none has run yet."""
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel region has run in this process yet
        one = np.zeros(1)
        matvec_parallel(np.array([0, 1]), np.array([0]), np.ones(1), one, 0.0, np.empty(1))
        layer = numba.threading_layer()
    return layer in _THREADSAFE_LAYERS


# -- dense coefficient matrices (prediction with several classes) ----------------------------


@njit(cache=True, nogil=True)
def matmat_serial(indptr, indices, data, W, intercepts, out):
    """out[i, c] = x_i . W[c] + intercepts[c]; W has one row per class."""
    n_classes = W.shape[0]
    for i in range(out.shape[0]):
        for c in range(n_classes):
            out[i, c] = _row_dot(indptr, indices, data, i, W[c]) + intercepts[c]


@njit(cache=True, nogil=True, parallel=True)
def matmat_parallel(indptr, indices, data, W, intercepts, out):
    """Parallel form of :func:`matmat_serial`."""
    n_classes = W.shape[0]
    for i in prange(out.shape[0]):
        for c in range(n_classes):
            out[i, c] = _row_dot(indptr, indices, data, i, W[c]) + intercepts[c]


# -- X~' D X~ v: a Hessian's product in one pass ---------------------------------------------


@njit(cache=True, nogil=True)
def weighted_gram_matvec(indptr, indices, data, weights, v, bias_value, out):
    """out = X~' diag(weights) X~ v with x~_i = (x_i, bias_value) (out's and v's last entry the
    bias column's; ``bias_value`` 0: no bias), in one pass over the rows: each row's dot and
    its scatter while the row is in cache, rows of weight 0 skipped (LIBLINEAR's ``Hv``,
    serial; a primal Newton method's Hessian products, ``BinaryProblem.hessian_product``)."""
    d = out.shape[0] - 1
    for j in range(out.shape[0]):
        out[j] = 0.0
    vb = bias_value * v[d]
    for i in range(indptr.shape[0] - 1):
        c = weights[i]
        if c == 0.0:
            continue
        t = c * (_row_dot(indptr, indices, data, i, v) + vb)
        _row_axpy(indptr, indices, data, i, t, out)
        out[d] += t * bias_value


# -- small pieces ---------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def row_norms_squared(indptr, indices, data, out):
    """out[i] = ||x_i||^2."""
    for i in range(out.shape[0]):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * data[k]
        out[i] = s


@njit(cache=True, nogil=True)
def column_max_abs(indices, data, out):
    """out[j] = max_i |x_ij| over the stored entries (out zeroed by the caller): one pass in
    storage order.  ``train`` runs it on every call (the scale warning): on the synthetic
    400k x 200k set (7.7M entries) 11.7 ms against 26-31 ms for numpy's maximum.at
    (2026-11-27)."""
    for k in range(data.shape[0]):
        value = abs(data[k])
        j = indices[k]
        if value > out[j]:
            out[j] = value


@njit(cache=True, nogil=True)
def rows_nnz(indptr, rows):
    """Number of stored entries in the selected rows."""
    total = 0
    for k in range(rows.shape[0]):
        total += indptr[rows[k] + 1] - indptr[rows[k]]
    return total


def use_parallel(nnz_touched: int, n_features: int) -> bool:
    """Whether a product touching ``nnz_touched`` entries should use the parallel kernels."""
    # the size first: numba.get_num_threads costs microseconds, and a small problem's Newton
    # iteration asks this of every product
    if nnz_touched < config.PARALLEL_MIN_NNZ or numba.get_num_threads() < 2:
        return False
    buffer_cost = numba.get_num_threads() * n_features
    return buffer_cost <= config.PARALLEL_MAX_BUFFER_RATIO * nnz_touched


class TimedChoice:
    """Serial or parallel for a kernel called many times on the same data, chosen by timing.

    Whether waking the thread pool pays depends on the work of a call and on the machine's
    load, which a static threshold (:func:`use_parallel`) cannot know.  On a loaded machine the
    cutting-plane risk oracle (:func:`solvers.problems.oracles.binary_oracle`) took two to
    nine times its serial time in parallel (bench/history/measurements.json,
    timed-choice-oracle): the parallel region waits for a core the scheduler
    gives to another process (the passive wait of ``solvers/__init__.py``), while on an idle
    machine it costs about a microsecond.  A caller that repeats a kernel hundreds of times
    (the cutting-plane loop) therefore times both forms.  A parallel call that loses can cost
    several milliseconds, so it is tried only once the serial form takes at least
    ``config.TIMED_CHOICE_MIN_SECONDS``; the losing form is timed again after ``recheck``
    calls, an interval that doubles each time it loses again (the load changes, and the probes
    stay a small share of the calls).  A form's estimate is the (upper) median of its last
    ``window`` times: under load average 10 a 0.4 ms serial call took over 2 ms now and then
    (an average of times then switched to the parallel form for no gain), and the smallest
    time favours the parallel form, which is now and then fast when the other core happens to
    be free (letter, Crammer-Singer: parallel 26 ms typical, serial 9 ms, and the minimum
    chose parallel).  The forms differ only in the order of
    floating-point sums.
    """

    def __init__(self, allowed: bool, recheck: int = 16, window: int = 8):
        self.allowed = bool(allowed) and numba.get_num_threads() > 1
        self.times: dict[bool, list[float]] = {False: [], True: []}
        self.window = window
        self.estimate = {False: float("inf"), True: float("inf")}
        self.recheck = recheck
        self.interval = recheck
        self.countdown = 0
        self.current = False
        self.calls = 0
        self.parallel_calls = 0

    def choose(self) -> bool:
        """The form of the next call."""
        if not self.allowed or self.estimate[False] == float("inf"):
            return False  # serial first
        other = not self.current
        if self.estimate[other] == float("inf"):
            # the other form untried: parallel only once serial is slow enough to gain
            if other and self.estimate[False] < config.TIMED_CHOICE_MIN_SECONDS:
                return self.current
            return other
        if self.countdown <= 0:
            return other
        return self.current

    def record(self, parallel: bool, seconds: float) -> None:
        """The time of a call made in the form ``parallel``."""
        times = self.times[parallel]
        times.append(seconds)
        if len(times) > self.window:
            del times[0]
        self.estimate[parallel] = sorted(times)[len(times) // 2]
        self.calls += 1
        self.parallel_calls += int(parallel)
        if parallel != self.current:  # a probe of the other form
            if self.estimate[parallel] < self.estimate[self.current]:
                self.current = parallel
                self.interval = self.recheck
            else:
                self.interval *= 2
            self.countdown = self.interval
        else:
            self.countdown -= 1

    def run(self, kernel):
        """``kernel(parallel)`` in the chosen form, timed."""
        parallel = self.choose()
        start = time.perf_counter()
        out = kernel(parallel)
        self.record(parallel, time.perf_counter() - start)
        return out


# -- Python-level conveniences (validate, allocate, dispatch) -------------------------------


def _csr_arrays(X):
    return X.indptr, X.indices, X.data


def csr_matvec(X, w, intercept: float = 0.0, *, parallel: bool | None = None) -> np.ndarray:
    """X w + intercept for a CSR matrix ``X``."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape[0] != X.shape[1]:
        raise ValueError(f"w has {w.shape[0]} entries, X has {X.shape[1]} columns")
    out = np.empty(X.shape[0])
    if parallel is None:
        parallel = use_parallel(X.nnz, 0)
    kernel = matvec_parallel if parallel else matvec_serial
    kernel(*_csr_arrays(X), w, float(intercept), out)
    return out


def csr_rmatvec(X, z, *, parallel: bool | None = None) -> np.ndarray:
    """X' z for a CSR matrix ``X``."""
    z = np.ascontiguousarray(z, dtype=np.float64)
    if z.shape[0] != X.shape[0]:
        raise ValueError(f"z has {z.shape[0]} entries, X has {X.shape[0]} rows")
    out = np.empty(X.shape[1])
    if parallel is None:
        parallel = use_parallel(X.nnz, X.shape[1])
    kernel = rmatvec_parallel if parallel else rmatvec_serial
    kernel(*_csr_arrays(X), z, out)
    return out


def csr_matvec_rows(X, rows, w, intercept: float = 0.0, *, parallel: bool | None = None):
    """(X w + intercept) restricted to ``rows``."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    out = np.empty(rows.shape[0])
    if parallel is None:
        parallel = use_parallel(rows_nnz(X.indptr, rows), 0)
    kernel = matvec_rows_parallel if parallel else matvec_rows_serial
    kernel(*_csr_arrays(X), rows, w, float(intercept), out)
    return out


def csr_rmatvec_rows(X, rows, z, *, parallel: bool | None = None) -> np.ndarray:
    """X[rows]' z without forming X[rows]."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    z = np.ascontiguousarray(z, dtype=np.float64)
    if z.shape[0] != rows.shape[0]:
        raise ValueError("z must have one entry per selected row")
    out = np.empty(X.shape[1])
    if parallel is None:
        parallel = use_parallel(rows_nnz(X.indptr, rows), X.shape[1])
    kernel = rmatvec_rows_parallel if parallel else rmatvec_rows_serial
    kernel(*_csr_arrays(X), rows, z, out)
    return out


def csr_matmat(X, W, intercepts, *, parallel: bool = False) -> np.ndarray:
    """X W' + intercepts for a CSR ``X`` and a dense ``W`` with one row per output."""
    W = np.ascontiguousarray(W, dtype=np.float64)
    intercepts = np.ascontiguousarray(intercepts, dtype=np.float64)
    out = np.empty((X.shape[0], W.shape[0]))
    kernel = matmat_parallel if parallel else matmat_serial
    kernel(*_csr_arrays(X), W, intercepts, out)
    return out
