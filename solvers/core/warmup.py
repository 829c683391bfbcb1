"""Compile (or load from the on-disk cache) every Numba kernel once per process.

Worker processes call :func:`warm_up` at start so that the first job does not pay for
compilation; the kernels are compiled with ``cache=True``, so after the first process on a
machine this mostly loads machine code from ``__pycache__``.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from solvers.core import linalg, linesearch, lowrank, sparse


def _tiny_matrices():
    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]])
    X32 = sp.csr_matrix(dense)
    X32.indices = X32.indices.astype(np.int32)
    X32.indptr = X32.indptr.astype(np.int32)
    # set after construction: SciPy's constructor narrows index arrays to int32 when their
    # values fit, which made this matrix int32 too and left the int64 kernels uncompiled
    X64 = X32.copy()
    X64.indices = X32.indices.astype(np.int64)
    X64.indptr = X32.indptr.astype(np.int64)
    return X32, X64


def warm_up(parallel: bool = True, index_widths: tuple[int, ...] = (32, 64)) -> float:
    """Compile the kernels for CSR index widths ``index_widths`` (bits; both by default);
    returns the seconds it took."""
    start = time.perf_counter()
    rows = np.array([0, 2], dtype=np.int64)
    w = np.ones(3)
    for X in _tiny_matrices():
        if 8 * X.indices.dtype.itemsize not in index_widths:
            continue
        for flag in ((False, True) if parallel else (False,)):
            sparse.csr_matvec(X, w, 0.5, parallel=flag)
            sparse.csr_rmatvec(X, np.ones(3), parallel=flag)
            sparse.csr_matvec_rows(X, rows, w, 0.0, parallel=flag)
            sparse.csr_rmatvec_rows(X, rows, np.ones(2), parallel=flag)
            sparse.csr_matmat(X, np.ones((2, 3)), np.zeros(2), parallel=flag)
        sparse.rows_nnz(X.indptr, rows)
        sparse.row_norms_squared(X.indptr, X.indices, X.data, np.empty(3))
        sparse.column_max_abs(X.indices, X.data, np.zeros(X.shape[1]))
        for n_blocks in ((1, 2) if parallel else (1,)):
            compact = sparse.CompactRows(X, rows, n_blocks=n_blocks)
            compact.matvec(w)
            compact.rmatvec(np.ones(2))
            # all rows: the matrix's own index arrays (int32 or int64), not a copy
            everything = sparse.CompactRows.all_rows(X, n_blocks=n_blocks)
            everything.matvec(w)
            everything.rmatvec(np.ones(3))
            linalg.cgls_compact(everything, np.ones(3), None, np.zeros(4), bias_scale=1.0,
                                lam=1.0, residual=np.ones(3), gradient=np.ones(4))
            # the row-space form on the same two kinds of rows
            linalg.cg_dual_compact(everything, np.ones(3), np.zeros(4), bias_scale=1.0,
                                   lam=1.0, residual=np.ones(3), gradient=np.ones(4))
            linalg.cg_dual_compact(compact, np.ones(2), np.zeros(4), bias_scale=1.0, lam=1.0,
                                   residual=np.ones(2), gradient=np.ones(4))
        # CGLS (one kernel serves serial and parallel, single and paired rows, with and
        # without a warm start given)
        linalg.cgls(X, rows, np.ones(2), np.ones(2), np.zeros(4), bias_scale=1.0, lam=1.0)
        linalg.cgls(X, rows, np.ones(3), np.ones(3), np.zeros(5), bias_scale=-1.0, lam=1.0,
                    pair_ptr=np.array([0, 1, 3]), pair_col=np.array([0, 0, 1]))
        linalg.cgls_compact(compact, np.ones(2), None, np.zeros(4), bias_scale=1.0, lam=1.0,
                            residual=np.ones(2), gradient=np.ones(4))
        for flag in ((False, True) if parallel else (False,)):
            linalg.gram_update(X, rows, np.ones(2), np.zeros((4, 4)), extra_value=1.0,
                               parallel=flag)
        lowrank.warm_up(X)
    linalg.dot(w, w)
    linesearch.piecewise_linear_root(-1.0, 1.0, np.array([0.5]), np.array([0.1]),
                                     np.array([0.1]))
    return time.perf_counter() - start
