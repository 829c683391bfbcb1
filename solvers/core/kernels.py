"""Kernel functions between CSR rows, kernel rows and blocks, and a bounded kernel-row cache.

Kernels (``docs/design.md`` section 2.7), for rows x, z of sparse matrices::

    linear       k(x, z) = x . z
    rbf          k(x, z) = exp(-gamma ||x - z||^2)       ||x - z||^2 = ||x||^2 + ||z||^2 - 2 x.z
    polynomial   k(x, z) = (gamma x . z + coef0)^degree
    sigmoid      k(x, z) = tanh(gamma x . z + coef0)          (not positive semidefinite)

gamma, coef0 and degree mean what they mean in LIBSVM (``-g``, ``-r``, ``-d``);
:func:`scale_gamma` gives scikit-learn's ``gamma="scale"``, 1 / (n_features Var(X)).

A kernel row k(q_i, z_j), j = 1..m, is computed from the stored entries of q_i (CSR) and a
column-major (CSC) copy of Z: for each feature f of q_i, q_if z_jf is added to the j-th
accumulator for every z_j that has feature f.  This touches only the (j, f) pairs that share a
feature -- on sparse data a fraction of the stored entries of Z, on dense data all of them --
and sums each dot product in increasing feature order.  Squared row norms are computed once
(RBF needs them); a squared distance that rounding makes negative is clamped to 0.

Every product exists in a serial form, safe to call from any thread (the web process predicts
with it: the serial decision values and the diagonal release the GIL), and a parallel form that
splits the rows into blocks (one buffer per block).

:class:`KernelCache` keeps kernel rows of one training matrix in a fixed memory budget
(``cache_mb`` MiB of float64 rows, at least one row), evicting the least recently used row, as
the LS-SVM solvers of Joshi et al. (section V: "kernel entries computed on a need basis and
cached") and LIBSVM do.  It also holds the diagonal k(x_i, x_i), computed once.  Its state is
plain arrays, so Numba loops (the SMO inner loop of :mod:`solvers.lssvm`) fetch rows through
:func:`cache_row` without returning to Python.  Products K v over the whole matrix (conjugate
gradients) read cached rows and compute the others on the fly without evicting anything: a scan
through every row would otherwise flush an LRU cache smaller than the matrix each time.

Operands: :func:`row_operand` (CSR arrays and squared norms) for the rows a kernel row is
computed for, :func:`column_operand` (CSC arrays, the squared norms of the rows and, for a
dense enough matrix, its dense transpose) for the rows it runs over.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from solvers import config
from solvers.core.exp import exp_nonpositive, rbf_from_dots
from solvers.core.sparse import row_norms_squared

LINEAR = 0
RBF = 1
POLYNOMIAL = 2
SIGMOID = 3
KERNEL_CODES = {"linear": LINEAR, "rbf": RBF, "polynomial": POLYNOMIAL, "sigmoid": SIGMOID}

# Positions in KernelCache.state.
_HEAD, _TAIL, _USED, _HITS, _MISSES = 0, 1, 2, 3, 4
_BLOCK_COLUMNS = config.KERNEL_BLOCK_COLUMNS


@dataclass(frozen=True)
class Kernel:
    """A kernel function and its parameters (``gamma`` > 0; ``degree`` >= 1 is used by the
    polynomial kernel only, ``coef0`` by the polynomial and sigmoid kernels)."""

    name: str = "rbf"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self):
        if self.name not in KERNEL_CODES:
            raise ValueError(
                f"unknown kernel {self.name!r}; expected one of {', '.join(KERNEL_CODES)}"
            )
        if not (np.isfinite(self.gamma) and self.gamma > 0):
            raise ValueError("kernel gamma must be a positive finite number")
        if int(self.degree) != self.degree or self.degree < 1:
            raise ValueError("polynomial degree must be an integer >= 1")
        if not np.isfinite(self.coef0):
            raise ValueError("kernel coef0 must be finite")

    @property
    def params(self) -> tuple[int, float, float, int]:
        """(code, gamma, coef0, degree): the form the Numba kernels take."""
        return (KERNEL_CODES[self.name], float(self.gamma), float(self.coef0), int(self.degree))

    def as_dict(self) -> dict:
        return {"kernel": self.name, "gamma": float(self.gamma), "degree": int(self.degree),
                "coef0": float(self.coef0)}


def scale_gamma(X) -> float:
    """scikit-learn's ``gamma="scale"``: 1 / (n_features * Var(X)), the variance over every
    entry of X (zeros included), 1.0 when that variance is 0."""
    n, d = X.shape
    total = float(n) * float(d)
    if total == 0:
        return 1.0
    mean = float(X.data.sum()) / total
    variance = float(np.dot(X.data, X.data)) / total - mean * mean
    return 1.0 / (d * variance) if variance > 0 else 1.0


def row_operand(X) -> tuple:
    """(indptr, indices, data, squared row norms) of a CSR matrix."""
    sq = np.empty(X.shape[0])
    row_norms_squared(X.indptr, X.indices, X.data, sq)
    return (X.indptr, X.indices, X.data, sq)


def column_operand(X) -> tuple:
    """(column pointers, row indices, values, squared row norms, dense columns): X in CSC with
    its rows' squared norms, the side a kernel row runs over.  When X is dense enough
    (``config.KERNEL_DENSE_MIN_DENSITY``) and small enough (``KERNEL_DENSE_MAX_ENTRIES``),
    the last entry is X' as a dense (n_features, n_rows) array, and a kernel row adds
    q_if times a whole dense column per feature (a contiguous, vectorized loop) instead of
    scattering the stored entries: the same products in the same order, so the same values;
    otherwise it is an empty (0, 0) array."""
    Xc = X.tocsc()
    Xc.sort_indices()
    n, d = X.shape
    if _dense_enough(n, d, X.nnz):
        dense = np.ascontiguousarray(Xc.T.toarray(), dtype=np.float64)
    else:
        dense = np.empty((0, 0))
    return (Xc.indptr, Xc.indices, Xc.data, row_operand(X)[3], dense)


@njit(cache=True, nogil=True)
def _take_csr(indptr, indices, data, which):
    """The CSR arrays of rows ``which`` of a CSR matrix (in that order; each row's entries in
    their stored order): what ``X[which]`` holds."""
    n = which.shape[0]
    out_ptr = np.empty(n + 1, indptr.dtype)
    out_ptr[0] = 0
    for k in range(n):
        i = which[k]
        out_ptr[k + 1] = out_ptr[k] + indptr[i + 1] - indptr[i]
    out_indices = np.empty(out_ptr[n], indices.dtype)
    out_data = np.empty(out_ptr[n], data.dtype)
    for k in range(n):
        i = which[k]
        at = out_ptr[k] - indptr[i]
        for p in range(indptr[i], indptr[i + 1]):
            out_indices[at + p] = indices[p]
            out_data[at + p] = data[p]
    return out_ptr, out_indices, out_data


@njit(cache=True, nogil=True)
def _csr_to_csc(indptr, indices, data, n_columns):
    """The CSC arrays of a CSR matrix, each column's rows increasing (scipy's ``tocsc``
    with sorted indices)."""
    col_ptr = np.zeros(n_columns + 1, indptr.dtype)
    for p in range(indptr[indptr.shape[0] - 1]):
        col_ptr[indices[p] + 1] += 1
    for f in range(n_columns):
        col_ptr[f + 1] += col_ptr[f]
    fill = col_ptr[:n_columns].copy()
    row_idx = np.empty(indices.shape[0], indices.dtype)
    values = np.empty(data.shape[0], data.dtype)
    for r in range(indptr.shape[0] - 1):
        for p in range(indptr[r], indptr[r + 1]):
            f = indices[p]
            row_idx[fill[f]] = r
            values[fill[f]] = data[p]
            fill[f] += 1
    return col_ptr, row_idx, values


@njit(cache=True, nogil=True)
def _dense_columns(col_ptr, row_idx, values, n_rows):
    """X' as a dense (n_features, n_rows) array from X's CSC arrays (duplicates added, as
    scipy's ``toarray``)."""
    out = np.zeros((col_ptr.shape[0] - 1, n_rows))
    for f in range(col_ptr.shape[0] - 1):
        for p in range(col_ptr[f], col_ptr[f + 1]):
            out[f, row_idx[p]] += values[p]
    return out


def _dense_enough(n: int, d: int, nnz: int) -> bool:
    """Whether a matrix of n rows, d columns and nnz stored entries gets a dense column copy
    (``config.KERNEL_DENSE_MIN_DENSITY``, ``KERNEL_DENSE_MAX_ENTRIES``)."""
    entries = n * d
    return bool(entries) and entries <= config.KERNEL_DENSE_MAX_ENTRIES and \
        nnz >= config.KERNEL_DENSE_MIN_DENSITY * entries


def take_operands(rows: tuple, columns: tuple, which) -> tuple[tuple, tuple]:
    """(:func:`row_operand`, :func:`column_operand`) of ``X[which]`` from those of X, without
    building the submatrix (one-vs-one poses a problem on two classes' rows per pair): the
    same arrays, so the same kernel values, at a fraction of scipy's indexing and
    conversion cost.  ``which`` are distinct row indices; the squared norms and a dense
    column copy are taken from X's when it has one.  Where the dense copy applies, the CSC
    arrays of the column operand are left empty: the kernels read the dense copy only."""
    which = np.ascontiguousarray(which, dtype=np.int64)
    indptr, indices, data, sq = rows
    sub_ptr, sub_indices, sub_data = _take_csr(indptr, indices, data, which)
    sub_sq = sq[which]
    col_ptr, row_idx, values, _, dense = columns
    d = dense.shape[0] if dense.shape[0] > 0 else col_ptr.shape[0] - 1
    n = which.shape[0]
    if _dense_enough(n, d, int(sub_ptr[n])):
        if dense.shape[0] > 0:
            dense = np.ascontiguousarray(dense[:, which])
        else:
            dense = _dense_columns(*_csr_to_csc(sub_ptr, sub_indices, sub_data, d), n)
        csc = (col_ptr[:0], row_idx[:0], values[:0])
    else:
        dense = np.empty((0, 0))
        csc = _csr_to_csc(sub_ptr, sub_indices, sub_data, d)
    return (sub_ptr, sub_indices, sub_data, sub_sq), (*csc, sub_sq, dense)


# -- one kernel row --------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _kernel_value(kernel, dot, sq_a, sq_b):
    kind, gamma, coef0, degree = kernel
    if kind == RBF:
        d2 = sq_a + sq_b - 2.0 * dot
        if d2 < 0.0:
            d2 = 0.0
        return exp_nonpositive(-gamma * d2)
    if kind == POLYNOMIAL:
        return (gamma * dot + coef0) ** degree
    if kind == SIGMOID:
        return np.tanh(gamma * dot + coef0)
    return dot


@njit(cache=True, nogil=True)
def _row_into(Q, i, Z, kernel, out):
    """out[j] = k(q_i, z_j) for every row z_j of Z (``out`` has one entry per row of Z)."""
    indptr, indices, data, q_sq = Q
    col_ptr, row_idx, values, z_sq, dense = Z
    out[:] = 0.0
    if dense.shape[0] > 0:
        for k in range(indptr[i], indptr[i + 1]):
            v = data[k]
            column = dense[indices[k]]
            for j in range(out.shape[0]):
                out[j] += v * column[j]
    else:
        for k in range(indptr[i], indptr[i + 1]):
            f = indices[k]
            v = data[k]
            for p in range(col_ptr[f], col_ptr[f + 1]):
                out[row_idx[p]] += v * values[p]
    if kernel[0] == RBF:  # most of a row's cost on few features: a vectorized exponential
        rbf_from_dots(out, q_sq[i], z_sq, kernel[1])
    elif kernel[0] != LINEAR:
        sq_i = q_sq[i]
        for j in range(out.shape[0]):
            out[j] = _kernel_value(kernel, out[j], sq_i, z_sq[j])


@njit(cache=True, nogil=True)
def kernel_row(Q, i, Z, kernel, out):
    """out[j] = k(q_i, z_j): one kernel row, for callers outside this module (the incomplete
    Cholesky of :mod:`solvers.core.lowrank` takes one per pivot)."""
    _row_into(Q, i, Z, kernel, out)


@njit(cache=True, inline="always")
def _block_range(b, n_blocks, n):
    step = (n + n_blocks - 1) // n_blocks
    return b * step, min(n, (b + 1) * step)


@njit(cache=True, nogil=True)
def kernel_diagonal_values(Q, kernel, out):
    """out[i] = k(q_i, q_i)."""
    sq = Q[3]
    for i in range(out.shape[0]):
        out[i] = _kernel_value(kernel, sq[i], sq[i], sq[i])


# -- blocks: K(Q, Z) -------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def kernel_block_serial(Q, Z, kernel, out):
    """out[i, j] = k(q_i, z_j)."""
    for i in range(out.shape[0]):
        _row_into(Q, i, Z, kernel, out[i])


@njit(cache=True, nogil=True, parallel=True)
def kernel_block_parallel(Q, Z, kernel, out, n_blocks):
    """Parallel form of :func:`kernel_block_serial` (``n_blocks`` blocks of rows)."""
    n = out.shape[0]
    n_blocks = min(n, n_blocks)
    for b in prange(n_blocks):
        lo, hi = _block_range(b, n_blocks, n)
        for i in range(lo, hi):
            _row_into(Q, i, Z, kernel, out[i])


# -- decision values: K(Q, Z) coef' + intercept ---------------------------------------------


@njit(cache=True, inline="always")
def _decision_row(Q, i, Z, kernel, coef, intercept, out_row, buffer):
    _row_into(Q, i, Z, kernel, buffer)
    for c in range(coef.shape[0]):
        acc = intercept[c]
        for j in range(buffer.shape[0]):
            acc += coef[c, j] * buffer[j]
        out_row[c] = acc


@njit(cache=True, nogil=True)
def kernel_decision_serial(Q, Z, kernel, coef, intercept, out):
    """out[i, c] = sum_j coef[c, j] k(q_i, z_j) + intercept[c]."""
    buffer = np.empty(coef.shape[1])
    for i in range(out.shape[0]):
        _decision_row(Q, i, Z, kernel, coef, intercept, out[i], buffer)


@njit(cache=True, nogil=True, parallel=True)
def kernel_decision_parallel(Q, Z, kernel, coef, intercept, out, n_blocks):
    """Parallel form of :func:`kernel_decision_serial`."""
    n = out.shape[0]
    n_blocks = min(n, n_blocks)
    for b in prange(n_blocks):
        buffer = np.empty(coef.shape[1])
        lo, hi = _block_range(b, n_blocks, n)
        for i in range(lo, hi):
            _decision_row(Q, i, Z, kernel, coef, intercept, out[i], buffer)


# -- the row cache -----------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _lru_unlink(prev, nxt, state, s):
    p = prev[s]
    q = nxt[s]
    if p >= 0:
        nxt[p] = q
    else:
        state[_HEAD] = q
    if q >= 0:
        prev[q] = p
    else:
        state[_TAIL] = p


@njit(cache=True, inline="always")
def _lru_push_front(prev, nxt, state, s):
    head = state[_HEAD]
    prev[s] = -1
    nxt[s] = head
    if head >= 0:
        prev[head] = s
    state[_HEAD] = s
    if state[_TAIL] < 0:
        state[_TAIL] = s


@njit(cache=True, inline="always")
def _claim_slot(store, i):
    """The slot that will hold row i: a free one, else the least recently used (evicted).
    The slot is moved to the front of the LRU list and mapped to row i."""
    slots, slot_row, row_slot, prev, nxt, state = store
    if state[_USED] < slots.shape[0]:
        s = state[_USED]
        state[_USED] += 1
    else:
        s = state[_TAIL]
        row_slot[slot_row[s]] = -1
        _lru_unlink(prev, nxt, state, s)
    _lru_push_front(prev, nxt, state, s)
    slot_row[s] = i
    row_slot[i] = s
    return s


@njit(cache=True, inline="always")
def _touch(store, s):
    """A hit on slot s: counted, and the slot made the most recently used."""
    _, _, _, prev, nxt, state = store
    state[_HITS] += 1
    if state[_HEAD] != s:
        _lru_unlink(prev, nxt, state, s)
        _lru_push_front(prev, nxt, state, s)


@njit(cache=True, nogil=True)
def cache_row(rows, columns, kernel, store, i):
    """The slot of ``store`` holding kernel row i of X (computed on a miss from X's
    :func:`row_operand` and :func:`column_operand`); the row becomes the most recently
    used."""
    slots, _, row_slot, _, _, state = store
    s = row_slot[i]
    if s >= 0:
        _touch(store, s)
        return s
    state[_MISSES] += 1
    s = _claim_slot(store, i)
    _row_into(rows, i, columns, kernel, slots[s])
    return s


@njit(cache=True, nogil=True)
def _reserve_free_slots(store, n_rows):
    """Map uncached rows 0, 1, ... to the free slots (no eviction); returns the rows and slots
    so that the caller can compute them (in parallel)."""
    slots, _, row_slot, _, _, state = store
    free = max(slots.shape[0] - state[_USED], 0)
    which = np.empty(free, np.int64)
    count = 0
    for i in range(n_rows):
        if count == free:
            break
        if row_slot[i] < 0:
            which[count] = i
            count += 1
    return _reserve_rows(store, which[:count])


@njit(cache=True, nogil=True)
def _reserve_rows(store, which):
    """Rows ``which`` made resident, in order: a cached one becomes the most recently used (a
    hit), an uncached one gets a slot (a miss; the least recently used is evicted) that the
    caller must fill.  Returns the missing rows and their slots.  A row of ``which`` is not
    evicted by a later one as long as ``which`` has at most the cache's capacity of rows."""
    row_slot = store[2]
    rows = np.empty(which.shape[0], np.int64)
    targets = np.empty(which.shape[0], np.int64)
    count = 0
    for k in range(which.shape[0]):
        i = which[k]
        s = row_slot[i]
        if s >= 0:
            _touch(store, s)
        else:
            rows[count] = i
            targets[count] = _claim_slot(store, i)
            count += 1
    store[5][_MISSES] += count
    return rows[:count], targets[:count]


@njit(cache=True, nogil=True)
def _rows_block(rows, columns, kernel, which, targets, slots, lo, hi):
    """Kernel rows which[lo:hi] into their slots.  Over a dense column copy the rows are
    computed together one chunk of ``config.KERNEL_BLOCK_COLUMNS`` columns at a time, so that
    the chunk of the dense copy is read from cache by every row of the block instead of once
    from memory per row (one row alone streams all its features' columns: on a9a 3.6 MB a
    row); each entry's sum runs over the features in the same order as :func:`_row_into`'s,
    so the values are the same."""
    indptr, indices, data, q_sq = rows
    dense = columns[4]
    z_sq = columns[3]
    if dense.shape[0] == 0:
        for k in range(lo, hi):
            _row_into(rows, which[k], columns, kernel, slots[targets[k]])
        return
    n = dense.shape[1]
    width = _BLOCK_COLUMNS
    for j0 in range(0, n, width):
        j1 = min(n, j0 + width)
        for k in range(lo, hi):
            i = which[k]
            out = slots[targets[k], j0:j1]
            out[:] = 0.0
            p = indptr[i]
            end = indptr[i + 1]
            # four features a pass over the chunk (a quarter of the loads and stores of
            # ``out``), added in the same order as one at a time
            while p + 4 <= end:
                v0, v1, v2, v3 = data[p], data[p + 1], data[p + 2], data[p + 3]
                c0 = dense[indices[p], j0:j1]
                c1 = dense[indices[p + 1], j0:j1]
                c2 = dense[indices[p + 2], j0:j1]
                c3 = dense[indices[p + 3], j0:j1]
                for j in range(out.shape[0]):
                    out[j] = (((out[j] + v0 * c0[j]) + v1 * c1[j]) + v2 * c2[j]) + v3 * c3[j]
                p += 4
            while p < end:
                v = data[p]
                column = dense[indices[p], j0:j1]
                for j in range(out.shape[0]):
                    out[j] += v * column[j]
                p += 1
            if kernel[0] == RBF:
                rbf_from_dots(out, q_sq[i], z_sq[j0:j1], kernel[1])
            elif kernel[0] != LINEAR:
                for j in range(out.shape[0]):
                    out[j] = _kernel_value(kernel, out[j], q_sq[i], z_sq[j0 + j])


@njit(cache=True, nogil=True)
def _compute_rows_serial(rows, columns, kernel, which, targets, slots):
    _rows_block(rows, columns, kernel, which, targets, slots, 0, which.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def _compute_rows_parallel(rows, columns, kernel, which, targets, slots, n_blocks):
    n = which.shape[0]
    n_blocks = min(n, n_blocks)
    for b in prange(n_blocks):
        lo, hi = _block_range(b, n_blocks, n)
        _rows_block(rows, columns, kernel, which, targets, slots, lo, hi)


@njit(cache=True, inline="always")
def _matvec_row(rows, columns, kernel, slots, row_slot, v, i, buffer):
    s = row_slot[i]
    if s >= 0:
        row = slots[s]
    else:
        _row_into(rows, i, columns, kernel, buffer)
        row = buffer
    acc = 0.0
    for j in range(v.shape[0]):
        acc += row[j] * v[j]
    return acc


@njit(cache=True, nogil=True)
def _cached_matvec_serial(rows, columns, kernel, slots, row_slot, v, out):
    buffer = np.empty(v.shape[0])
    for i in range(out.shape[0]):
        out[i] = _matvec_row(rows, columns, kernel, slots, row_slot, v, i, buffer)


@njit(cache=True, nogil=True, parallel=True)
def _cached_matvec_parallel(rows, columns, kernel, slots, row_slot, v, out, n_blocks):
    n = out.shape[0]
    n_blocks = min(n, n_blocks)
    for b in prange(n_blocks):
        buffer = np.empty(v.shape[0])
        lo, hi = _block_range(b, n_blocks, n)
        for i in range(lo, hi):
            out[i] = _matvec_row(rows, columns, kernel, slots, row_slot, v, i, buffer)


# -- Python-level API -----------------------------------------------------------------------


def _n_blocks() -> int:
    return config.KERNEL_BLOCKS_PER_THREAD * numba.get_num_threads()


def use_parallel_kernel(n_rows: int, work: float) -> bool:
    """Whether ``n_rows`` kernel rows costing about ``work`` multiply-adds in all should be
    computed in parallel (enough rows for every thread and enough work to wake them)."""
    threads = numba.get_num_threads()
    return threads >= 2 and n_rows >= threads and work >= config.KERNEL_PARALLEL_MIN_WORK


def use_parallel_decision(n_rows: int, n_support: int, n_functions: int) -> bool:
    """Whether decision values of ``n_rows`` rows against ``n_support`` support vectors and
    ``n_functions`` decision functions pay for the thread pool
    (``config.KERNEL_DECISION_PARALLEL_MIN_ENTRIES``, measured)."""
    entries = float(n_rows) * float(n_support) * (1 + n_functions)
    return numba.get_num_threads() >= 2 and n_rows >= 2 and \
        entries >= config.KERNEL_DECISION_PARALLEL_MIN_ENTRIES


def _check_columns(Q, Z):
    if Q.shape[1] != Z.shape[1]:
        raise ValueError(f"matrices have {Q.shape[1]} and {Z.shape[1]} columns")


def kernel_matrix(Q, Z, kernel: Kernel, *, parallel: bool | None = None) -> np.ndarray:
    """The dense block K[i, j] = k(q_i, z_j) for CSR matrices with the same columns."""
    _check_columns(Q, Z)
    out = np.empty((Q.shape[0], Z.shape[0]))
    if parallel is None:
        parallel = use_parallel_kernel(Q.shape[0], float(Q.shape[0]) * Z.nnz)
    args = (row_operand(Q), column_operand(Z), kernel.params, out)
    if parallel:
        kernel_block_parallel(*args, _n_blocks())
    else:
        kernel_block_serial(*args)
    return out


def kernel_diagonal(X, kernel: Kernel) -> np.ndarray:
    """k(x_i, x_i) for every row."""
    out = np.empty(X.shape[0])
    kernel_diagonal_values(row_operand(X), kernel.params, out)
    return out


def kernel_decision(Q, Z, kernel: Kernel, coef, intercept, *,
                    parallel: bool | None = False,
                    Z_columns: tuple | None = None) -> np.ndarray:
    """K(Q, Z) coef' + intercept: shape (n_rows of Q, rows of ``coef``).

    ``coef`` has one row per output and one column per row of Z; ``Z_columns`` may pass
    :func:`column_operand` of Z precomputed (a model keeps it).  ``parallel``: True the
    parallel kernel, False the serial one, None the parallel one only where it pays
    (:func:`use_parallel_decision`).
    """
    _check_columns(Q, Z)
    coef = np.ascontiguousarray(np.atleast_2d(coef), dtype=np.float64)
    intercept = np.ascontiguousarray(np.atleast_1d(intercept), dtype=np.float64)
    if coef.shape != (intercept.shape[0], Z.shape[0]):
        raise ValueError(f"coef must have shape ({intercept.shape[0]}, {Z.shape[0]})")
    out = np.empty((Q.shape[0], coef.shape[0]))
    columns = Z_columns if Z_columns is not None else column_operand(Z)
    args = (row_operand(Q), columns, kernel.params, coef, intercept, out)
    if parallel is None:
        parallel = use_parallel_decision(Q.shape[0], Z.shape[0], coef.shape[0])
    if parallel:
        kernel_decision_parallel(*args, _n_blocks())
    else:
        kernel_decision_serial(*args)
    return out


class KernelCache:
    """Kernel rows of one CSR matrix X (n rows) in at most ``cache_mb`` MiB, LRU.

    ``capacity`` rows of n float64 each fit in the budget (at least one, at most n).  The
    diagonal k(x_i, x_i) is computed at construction.  :meth:`row` returns one row (a view
    into the cache: valid until the next call), :meth:`matvec` returns K v.  ``hits`` and
    ``misses`` count row requests served from memory and rows computed (a row computed on the
    fly inside :meth:`matvec` counts as a miss).  ``parallel`` (default: when it pays) makes
    :meth:`fill` and :meth:`matvec` use the parallel kernels.  ``min_rows`` raises the
    capacity above the budget when a caller holds that many rows at once (SMO reads the
    rows of both working-set indices: two).

    ``X`` may also be the pair (:func:`row_operand`, :func:`column_operand`) of the matrix
    (:func:`take_operands` gives a subset's), and ``buffer`` a float64 array of at least
    ``capacity * n`` entries that the rows are stored in (a caller solving many problems one
    after another reuses one; its contents are overwritten).
    """

    def __init__(self, X, kernel: Kernel, cache_mb: float = config.KERNEL_CACHE_MB,
                 parallel: bool | None = None, min_rows: int = 1,
                 buffer: np.ndarray | None = None):
        if not cache_mb > 0:
            raise ValueError("cache_mb must be positive")
        self.X = None if isinstance(X, tuple) else X  # the matrix, when given as one
        if isinstance(X, tuple):
            self.rows, self.columns = X
            self.n = self.rows[3].shape[0]
            self.nnz = int(self.rows[0][self.n])
        else:
            self.n = X.shape[0]
            self.nnz = int(X.nnz)
            self.rows = row_operand(X)
            self.columns = column_operand(X)
        self.kernel = kernel
        self.kernel_params = kernel.params
        self.capacity = self.rows_for(self.n, cache_mb, min_rows)
        self.cache_mb = float(cache_mb)
        if buffer is not None and buffer.dtype == np.float64 and \
                buffer.size >= self.capacity * self.n:
            slots = buffer.reshape(-1)[:self.capacity * self.n].reshape(self.capacity, self.n)
        else:
            slots = np.empty((self.capacity, self.n))
        slot_row = np.full(self.capacity, -1, np.int64)
        row_slot = np.full(self.n, -1, np.int64)
        prev = np.full(self.capacity, -1, np.int64)
        nxt = np.full(self.capacity, -1, np.int64)
        state = np.array([-1, -1, 0, 0, 0], np.int64)
        self.store = (slots, slot_row, row_slot, prev, nxt, state)
        self.diagonal = np.empty(self.n)
        kernel_diagonal_values(self.rows, self.kernel_params, self.diagonal)
        if parallel is None:
            parallel = use_parallel_kernel(self.n, float(self.n) * self.nnz)
        self.parallel = parallel

    @staticmethod
    def rows_for(n: int, cache_mb: float, min_rows: int = 1) -> int:
        """The capacity of a cache of ``cache_mb`` MiB over n rows: as many rows of n float64
        as fit, at least ``min_rows`` (and one), at most n."""
        return int(min(n, max(min_rows, 1, (cache_mb * 2**20) // (8 * max(n, 1)))))

    # -- counters ---------------------------------------------------------------------------
    @property
    def hits(self) -> int:
        return int(self.store[5][_HITS])

    @property
    def misses(self) -> int:
        return int(self.store[5][_MISSES])

    @property
    def rows_cached(self) -> int:
        return int(self.store[5][_USED])

    def cached_rows(self) -> np.ndarray:
        """Indices of the cached rows, most recently used first."""
        _, slot_row, _, _, nxt, state = self.store
        out = []
        s = state[_HEAD]
        while s >= 0:
            out.append(int(slot_row[s]))
            s = nxt[s]
        return np.array(out, dtype=np.int64)

    def stats(self) -> dict:
        requests = self.hits + self.misses
        return {
            "cache_mb": self.cache_mb,
            "cache_rows": self.capacity,
            "cache_hits": self.hits,
            "cache_misses": self.misses,
            "cache_hit_rate": self.hits / requests if requests else 0.0,
        }

    # -- access -----------------------------------------------------------------------------
    def row(self, i: int) -> np.ndarray:
        """Kernel row i (a view into the cache, overwritten when the slot is reused)."""
        if not 0 <= i < self.n:
            raise IndexError(f"row {i} out of range for {self.n} rows")
        s = cache_row(self.rows, self.columns, self.kernel_params, self.store, i)
        return self.store[0][s]

    def fill(self) -> int:
        """Compute rows 0, 1, ... into the free slots (in parallel when it pays); returns the
        number of rows computed.  Nothing is evicted."""
        which, targets = _reserve_free_slots(self.store, self.n)
        if which.size:
            args = (self.rows, self.columns, self.kernel_params, which, targets,
                    self.store[0])
            if self.parallel:
                _compute_rows_parallel(*args, _n_blocks())
            else:
                _compute_rows_serial(*args)
        return int(which.size)

    def load(self, which: np.ndarray, parallel: bool | None = None) -> None:
        """Rows ``which`` (at most :attr:`capacity`, distinct) resident at once: those cached
        become the most recently used, the others are computed together (in parallel when it
        pays, or as ``parallel`` says) into the least recently used slots."""
        which = np.ascontiguousarray(which, dtype=np.int64)
        if which.shape[0] > self.capacity:
            raise ValueError(f"{which.shape[0]} rows do not fit a cache of {self.capacity}")
        missing, targets = _reserve_rows(self.store, which)
        if missing.size:
            args = (self.rows, self.columns, self.kernel_params, missing, targets,
                    self.store[0])
            if parallel is None:
                parallel = self.parallel and use_parallel_kernel(
                    missing.size, float(missing.size) * self.nnz)
            if parallel:
                _compute_rows_parallel(*args, _n_blocks())
            else:
                _compute_rows_serial(*args)

    def slots_of(self, which: np.ndarray) -> np.ndarray:
        """The slots holding rows ``which`` (-1 for a row not cached)."""
        return self.store[2][which]

    def matvec(self, v) -> np.ndarray:
        """K v.  The first call fills the free slots; rows that do not fit are computed on the
        fly at every call (and counted as misses)."""
        v = np.ascontiguousarray(v, dtype=np.float64)
        if v.shape != (self.n,):
            raise ValueError(f"v must have {self.n} entries")
        self.fill()
        out = np.empty(self.n)
        args = (self.rows, self.columns, self.kernel_params, self.store[0], self.store[2], v,
                out)
        if self.parallel:
            _cached_matvec_parallel(*args, _n_blocks())
        else:
            _cached_matvec_serial(*args)
        state = self.store[5]
        state[_HITS] += state[_USED]
        state[_MISSES] += self.n - state[_USED]
        return out
