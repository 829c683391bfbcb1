"""Low-rank kernel factors: Nystrom and pivoted incomplete Cholesky (``docs/design.md`` section 3).

Both give a dense float64 factor G (n x r) with G G' ~ K, K_ij = k(x_i, x_j) the kernel of
:mod:`solvers.core.kernels` (the same kernels, parameters and Numba row code as the exact
kernel solvers), and a :class:`FeatureMap` that maps new rows x to g(x) = k(x, L) M: exact
kernel rows against the m landmarks (or pivots) L, times an m x r map M.  A linear model on
G, w.g + b, is then the kernel expansion f(x) = sum_j (M w)_j k(l_j, x) + b.

**Nystrom** (Williams & Seeger 2001).  m landmarks L, C = K(X, L) (n x m), W = K(L, L) =
U diag(s) U'.  M = U_k diag(s_k^{-1/2}) over the eigenvalues s_k > ``NYSTROM_EIGEN_RTOL``
* max(s) (1e-10: the directions W cannot resolve in double precision -- a rounding error
eps |C| in C is amplified by s_k^{-1/2} in G -- are dropped, the rest kept exactly), so
G G' = C W^+ C' with W^+ the pseudo-inverse restricted to those directions; r <= m.
Landmarks:

* ``uniform``: m distinct training rows drawn uniformly without replacement (seeded);
* ``kmeans``: the m centroids of Lloyd's k-means (``KMEANS_ITERATIONS`` iterations from m
  uniform rows, empty clusters keep their centroid; Zhang, Tsang & Kwok 2008), distances
  through the linear kernel's rows.

**The rank from the residual trace** (``rank=None``; issue 53).  The relative residual trace
trace(K - G G') / trace(K) is what the factor leaves of the kernel: Nystrom's landmarks are
doubled from ``config.CHOSEN_RANK_START`` (nested: the first m of one seeded permutation, so
uniform landmarks at rank m are the same rows whether m was asked or chosen) until it is at
most ``rank_tol``, at most ``config.CHOSEN_RANK_MAX``; each step estimates it on a uniform
sample of rows (:func:`choose_nystrom_rank`).  The incomplete Cholesky needs no search: it
pivots until the same bound (its residual is exact at every step).

**Pivoted incomplete Cholesky** (Fine & Scheinberg 2001, section 4).  Greedy: the residual
diagonal d = diag(K - G G') starts as diag(K); step j takes the pivot p_j = argmax d, sets
G[p_j, j] = sqrt(d[p_j]) and G[:, j] = (K[:, p_j] - G[:, :j] G[p_j, :j]') / G[p_j, j] (one
exact kernel row), then d -= G[:, j]^2 (pivots' entries set to exactly 0).  It stops at
``rank`` columns, or as soon as trace(K - G G') = sum(d) <= tol * trace(K) (checked before
every step, on the maintained d, which is the residual's diagonal exactly: every entry of
K - G G' is, for a PSD kernel, bounded by the diagonal), or when max(d) is below 1e-14 *
max(diag K) (the kernel has numerical rank j).  The result equals Nystrom with the pivots
as landmarks: G = K(X, P) L^{-T} with L = G[P, :] lower triangular, so M = L^{-T}.

The factorizations run once per training job (``parallel`` Numba loops over the rows); the
map of a trained model is applied through :func:`solvers.core.kernels.kernel_matrix`, serial
by default (request threads).

**Stopping and progress.**  A factorization given a ``checkpoint(step, done, total,
residual) -> reason | None`` calls it between blocks of its work -- after every pivot of the
incomplete Cholesky, after every ``column_block(n)`` landmarks' kernel columns of Nystrom,
after every k-means iteration and every ``_MAP_BLOCK_ROWS`` rows of G = C M -- so that a
caller (a monitor that reads a job's cancel flag) can report progress and stop it within a
block's work; a reason raises :class:`FactorizationStopped`.  Not interruptible: Nystrom's
eigendecomposition of the m x m W and the incomplete Cholesky's m x m triangular inverse
(O(m^3), about a second at m = 2000).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np
import scipy.linalg
import scipy.sparse as sp
from numba import njit, prange

from solvers import config
from solvers.core.kernels import (
    Kernel,
    column_operand,
    kernel_diagonal_values,
    kernel_matrix,
    kernel_row,
    row_operand,
)
from solvers.core.linalg import single_threaded_blas

#: Nystrom keeps the eigen-directions of K(L, L) with eigenvalue above this times the largest.
NYSTROM_EIGEN_RTOL = 1e-10
#: Lloyd iterations of the k-means landmarks.
KMEANS_ITERATIONS = 10
#: Incomplete Cholesky stops when the largest residual diagonal entry falls below this times
#: the largest kernel diagonal entry (numerical rank reached; a smaller pivot divides noise).
ICF_PIVOT_RTOL = 1e-14
#: Rows per block when k-means computes distances (n x m would not fit for large n).
_KMEANS_BLOCK_ROWS = 4096
#: Nystrom computes K(X, L) in blocks of landmarks of about this many kernel entries (a
#: block's work between two checkpoints: ~0.1 s on one core for sparse rows of tens of
#: entries).
_NYSTROM_BLOCK_ENTRIES = 2_000_000
#: Rows per block of G = C M (Nystrom's map), between two checkpoints.
_MAP_BLOCK_ROWS = 4096

#: ``checkpoint(step, done, total, residual)``: ``step`` names the work ("pivots",
#: "kernel columns", "k-means iterations", "map rows"), ``done`` of ``total`` units of it are
#: finished, ``residual`` is trace(K - G G') / trace(K) when known (the incomplete Cholesky),
#: else NaN.  A non-None answer is a reason to stop.
Checkpoint = Callable[[str, int, int, float], "str | None"]


class FactorizationStopped(Exception):
    """A checkpoint asked a factorization to stop: ``reason``, after ``done`` of ``total``
    units of ``step``."""

    def __init__(self, reason: str, step: str, done: int, total: int):
        super().__init__(f"{reason} (while factorizing the kernel: {step} {done} of {total})")
        self.reason = reason
        self.step = step
        self.done = done
        self.total = total


def _check(checkpoint: Checkpoint | None, step: str, done: int, total: int,
           residual: float = float("nan")) -> None:
    """Ask ``checkpoint``; raise :class:`FactorizationStopped` when it gives a reason."""
    if checkpoint is None:
        return
    reason = checkpoint(step, done, total, residual)
    if reason is not None:
        raise FactorizationStopped(reason, step, done, total)


def column_block(n: int) -> int:
    """Landmarks per block of Nystrom's K(X, L) on n rows."""
    return max(8, _NYSTROM_BLOCK_ENTRIES // max(n, 1))

LANDMARKS = ("uniform", "kmeans")


@dataclass
class FeatureMap:
    """g(x) = k(x, landmarks) @ map: the low-rank feature map of a factor.

    ``landmarks`` is a CSR matrix (m rows, the training data's columns), ``map`` m x r."""

    landmarks: sp.csr_matrix
    kernel: Kernel
    map: np.ndarray

    @property
    def rank(self) -> int:
        return int(self.map.shape[1])

    def transform(self, X, *, parallel: bool | None = False) -> np.ndarray:
        """The factor rows of X (CSR with the landmarks' columns): n x r, dense."""
        return kernel_matrix(X, self.landmarks, self.kernel, parallel=parallel) @ self.map


@dataclass
class Factor:
    """G (n x r, dense, C order), its feature map and how it was obtained."""

    G: np.ndarray
    feature_map: FeatureMap
    method: str
    residual_trace: float  # trace(K - G G') (ICF: exact, maintained; Nystrom: computed)
    kernel_trace: float    # trace(K)
    pivots: np.ndarray | None = None  # ICF: the pivot rows, in order; Nystrom: landmark rows
    #: Nystrom with the rank chosen from the residual trace: how it was chosen
    rank_search: RankSearch | None = None

    @property
    def rank(self) -> int:
        return int(self.G.shape[1])


# -- pivoted incomplete Cholesky ----------------------------------------------------------------


@njit(cache=True, inline="always")
def _icf_entry(G, t, j, gp, row, d, pivot_value):
    """G[t, j] = (row[t] - G[t, :j] . gp) / pivot_value, and d[t] -= G[t, j]^2."""
    gt = G[t]
    acc = row[t]
    for k in range(j):
        acc -= gt[k] * gp[k]
    value = acc / pivot_value
    gt[j] = value
    d[t] -= value * value


@njit(cache=True, nogil=True, parallel=True)
def _icf_column(G, j, p, row, d, pivot_value):
    """G[:, j] = (row - G[:, :j] G[p, :j]') / pivot_value, d -= G[:, j]^2 (in parallel
    over the rows)."""
    gp = G[p, :j].copy()
    for t in prange(G.shape[0]):
        _icf_entry(G, t, j, gp, row, d, pivot_value)


@njit(cache=True, nogil=True)
def _icf_column_serial(G, j, p, row, d, pivot_value):
    """Serial form of :func:`_icf_column`."""
    gp = G[p, :j].copy()
    for t in range(G.shape[0]):
        _icf_entry(G, t, j, gp, row, d, pivot_value)


def incomplete_cholesky(X, kernel: Kernel, rank: int, tol: float = 0.0,
                        *, parallel: bool | None = None,
                        checkpoint: Checkpoint | None = None) -> Factor:
    """Pivoted incomplete Cholesky of K(X, X) (module docstring): at most ``rank`` columns,
    fewer when trace(K - G G') <= ``tol`` * trace(K) first.  ``checkpoint`` is asked after
    every pivot (step "pivots", with the relative residual trace).

    Each step reads the n x j columns so far once (K[:, p] - G[:, :j] G[p, :j]'): O(n r^2)
    in all and memory-bound.  The greedy pivot of step j + 1 needs column j's residual
    diagonal, so steps cannot be batched into a matrix-matrix product without changing the
    pivots; a BLAS matrix-vector product for the update (same pivots, factor within 3e-15)
    measured 0.90x-1.29x of this loop's speed on ijcnn1 (n = 20,000 at rank 512, n = 49,990
    at rank 384; 2026-11-27, load average 11-14), so the loop stays (it keeps to the
    worker's Numba threads)."""
    if rank < 1:
        raise ValueError("rank must be at least 1")
    if not 0.0 <= tol < 1.0:
        raise ValueError("tol must be in [0, 1)")
    n = X.shape[0]
    rank = min(int(rank), n)
    rows, columns = row_operand(X), column_operand(X)
    params = kernel.params
    d = np.empty(n)
    kernel_diagonal_values(rows, params, d)
    if np.any(d < 0):
        raise ValueError("the kernel has a negative diagonal entry: not positive semidefinite")
    trace = float(d.sum())
    floor = ICF_PIVOT_RTOL * float(d.max()) if n else 0.0
    G = np.zeros((n, rank))
    pivots = np.empty(rank, np.int64)
    row = np.empty(n)
    if parallel is None:
        parallel = numba.get_num_threads() >= 2 and n * rank >= 200_000
    step = _icf_column if parallel else _icf_column_serial
    j = 0
    residual = trace
    while j < rank:
        residual = float(d.sum())
        if residual <= tol * trace:
            break
        p = int(np.argmax(d))
        if d[p] <= floor:
            break
        pivot_value = float(np.sqrt(d[p]))
        kernel_row(rows, p, columns, params, row)
        step(G, j, p, row, d, pivot_value)
        d[p] = 0.0
        d[pivots[:j]] = 0.0  # pivots stay exact zeros (rounding would make them tiny)
        pivots[j] = p
        j += 1
        if checkpoint is not None:
            _check(checkpoint, "pivots", j, rank, float(d.sum()) / trace if trace else 0.0)
    else:
        residual = float(d.sum())
    pivots = pivots[:j].copy()
    G = np.ascontiguousarray(G[:, :j])
    L = G[pivots, :]  # lower triangular: row k has entries in columns 0..k
    with single_threaded_blas():  # see _nystrom_map
        M = (scipy.linalg.solve_triangular(L, np.eye(j), lower=True).T if j
             else np.zeros((0, 0)))
    landmarks = X[pivots]
    landmarks.sort_indices()
    return Factor(G, FeatureMap(sp.csr_matrix(landmarks), kernel, np.ascontiguousarray(M)),
                  "icf", residual, trace, pivots)


# -- Nystrom ------------------------------------------------------------------------------------


def landmark_order(n: int, seed: int) -> np.ndarray:
    """The order in which uniform landmarks are drawn: a seeded permutation of the n rows.
    The m uniform landmarks are its first m entries, so those of a smaller m are among those
    of a larger one (the rank search below grows them)."""
    return np.random.default_rng(seed).permutation(n)


def uniform_landmarks(n: int, m: int, seed: int) -> np.ndarray:
    """m distinct rows of n, uniformly without replacement (the first m of
    :func:`landmark_order`), sorted."""
    return np.sort(landmark_order(n, seed)[:min(m, n)])


@dataclass
class RankSearch:
    """How :func:`choose_nystrom_rank` chose a rank: ``residuals`` the (landmarks, estimated
    relative residual trace) of every step, in order; the last step's landmarks are the
    rank; ``rows`` the rows the estimate was taken on (n: exact)."""

    rank: int
    tol: float
    residuals: list[tuple[int, float]]
    rows: int

    def describe(self) -> dict:
        return {"tol": self.tol, "rows": self.rows,
                "residuals": [[m, r] for m, r in self.residuals]}


def _nystrom_map(W: np.ndarray) -> np.ndarray:
    """M = U_k diag(s_k^{-1/2}) over the eigenvalues of the landmarks' kernel matrix W above
    ``NYSTROM_EIGEN_RTOL`` times the largest (module docstring).

    The eigendecomposition runs on one BLAS thread: OpenBLAS's threaded syevd at m = 1024
    took 1.5-12 s against 0.43-0.66 s on one thread with other processes on the two cores
    (load 6-7, 2026-12-08; worse after Numba's parallel kernels had run), which is every
    factorization of a busy worker (the map's matrix product, large blocks, keeps its
    threads: 0.44-0.55 s against 0.40-0.57 s on one)."""
    W = 0.5 * (W + W.T)
    with single_threaded_blas():
        s, U = np.linalg.eigh(W)
    keep = s > NYSTROM_EIGEN_RTOL * max(float(s.max()), 0.0) if s.size else s > 0
    return np.ascontiguousarray(U[:, keep] / np.sqrt(s[keep])[None, :])


def choose_nystrom_rank(X, kernel: Kernel, seed: int, tol: float,
                        max_rank: int = config.CHOSEN_RANK_MAX, *,
                        start: int = config.CHOSEN_RANK_START,
                        sample_rows: int = config.RANK_SEARCH_SAMPLE_ROWS,
                        parallel: bool | None = None,
                        checkpoint: Checkpoint | None = None) -> RankSearch:
    """The number of uniform landmarks for a Nystrom factor of K(X, X) chosen from its
    residual trace: m = ``start``, 2 ``start``, 4 ``start``, ... (the first m of
    :func:`landmark_order`, nested), the first m whose relative residual trace
    trace(K - G G') / trace(K) is at most ``tol``, else ``max_rank`` (at most n).

    The residual is estimated on a uniform sample of ``sample_rows`` rows S (every row when n
    is at most that: then it is exact): sum_{i in S} (k(x_i, x_i) - |g_i|^2) / sum_{i in S}
    k(x_i, x_i), with g_i = k(x_i, L) M the factor's row of x_i (an unbiased ratio estimate
    of the whole trace's).  Each step adds the new landmarks' kernel columns on S and their
    block of W = K(L, L), then takes W's eigendecomposition and the sample's factor rows:
    O(|S| m^2 + m^3), a fraction of the factor's own O(n m^2) at the chosen m.
    ``checkpoint`` is asked after every step (step "rank search", m of ``max_rank``, with
    the estimate)."""
    if not 0.0 < tol < 1.0:
        raise ValueError("tol must be in (0, 1)")
    X = sp.csr_matrix(X)
    n = X.shape[0]
    cap = max(1, min(int(max_rank), n))
    order = landmark_order(n, seed)
    if n <= sample_rows:
        sample = np.arange(n)
    else:  # a second stream of the same seed: the sample does not follow the landmarks
        sample = np.sort(np.random.default_rng([seed, 1]).choice(n, size=sample_rows,
                                                                 replace=False))
    XS = X[sample]
    diagonal = np.empty(XS.shape[0])
    kernel_diagonal_values(row_operand(XS), kernel.params, diagonal)
    sample_trace = float(diagonal.sum())
    CS = np.empty((XS.shape[0], cap))
    W = np.empty((cap, cap))
    residuals: list[tuple[int, float]] = []
    done = 0
    m = min(max(1, int(start)), cap)
    while True:
        new = X[order[done:m]]
        new.sort_indices()
        CS[:, done:m] = kernel_matrix(XS, new, kernel, parallel=parallel)
        landmarks = X[order[:m]]
        landmarks.sort_indices()
        block = kernel_matrix(new, landmarks, kernel, parallel=parallel)  # (m - done) x m
        W[done:m, :m] = block
        W[:m, done:m] = block.T
        done = m
        M = _nystrom_map(W[:m, :m])
        GS = CS[:, :m] @ M
        residual = (max(0.0, 1.0 - float(np.einsum("ij,ij->", GS, GS)) / sample_trace)
                    if sample_trace > 0 else 0.0)
        residuals.append((m, residual))
        _check(checkpoint, "rank search", m, cap, residual)
        if residual <= tol or m >= cap:
            return RankSearch(m, float(tol), residuals, int(XS.shape[0]))
        m = min(2 * m, cap)


def kmeans_centroids(X, m: int, seed: int, iterations: int = KMEANS_ITERATIONS,
                     checkpoint: Checkpoint | None = None) -> sp.csr_matrix:
    """Lloyd's k-means on the rows of X from m uniform rows (module docstring): the m
    centroids as a CSR matrix with X's columns.  ``checkpoint`` is asked after every block
    of rows' distances (step "k-means iterations")."""
    X = sp.csr_matrix(X)
    n = X.shape[0]
    start = uniform_landmarks(n, m, seed)
    centroids = X[start].toarray()
    linear = Kernel("linear")
    labels = np.full(n, -1, np.int64)
    for iteration in range(iterations):
        C = sp.csr_matrix(centroids)
        c_sq = np.einsum("ij,ij->i", centroids, centroids)
        new = np.empty(n, np.int64)
        for lo in range(0, n, _KMEANS_BLOCK_ROWS):
            hi = min(n, lo + _KMEANS_BLOCK_ROWS)
            dots = kernel_matrix(X[lo:hi], C, linear)
            new[lo:hi] = np.argmin(c_sq[None, :] - 2.0 * dots, axis=1)
            _check(checkpoint, "k-means iterations", iteration, iterations)
        if np.array_equal(new, labels):
            break
        labels = new
        counts = np.bincount(labels, minlength=centroids.shape[0]).astype(np.float64)
        member = sp.csr_matrix((np.ones(n), (labels, np.arange(n))),
                               shape=(centroids.shape[0], n))
        sums = np.asarray((member @ X).todense())
        filled = counts > 0
        centroids[filled] = sums[filled] / counts[filled, None]
    return sp.csr_matrix(centroids)


def nystrom(X, kernel: Kernel, rank: int | None, seed: int = 0, landmarks: str = "uniform",
            *, rank_tol: float | None = None, max_rank: int = config.CHOSEN_RANK_MAX,
            parallel: bool | None = None, checkpoint: Checkpoint | None = None) -> Factor:
    """Nystrom factor of K(X, X) on ``rank`` landmarks (module docstring); ``rank=None``:
    on the number :func:`choose_nystrom_rank` chooses from the residual trace (``rank_tol``,
    at most ``max_rank``; k-means landmarks are then that many centroids), recorded in the
    factor's ``rank_search``.  ``checkpoint`` is asked between blocks of work: the rank
    search's steps, k-means, the kernel columns K(X, L) by :func:`column_block` landmarks,
    the rows of G = C M by ``_MAP_BLOCK_ROWS``."""
    if rank is not None and rank < 1:
        raise ValueError("rank must be at least 1")
    if landmarks not in LANDMARKS:
        raise ValueError(f"unknown landmarks {landmarks!r}; expected one of "
                         f"{', '.join(LANDMARKS)}")
    X = sp.csr_matrix(X)
    n = X.shape[0]
    search = None
    if rank is None:
        if rank_tol is None:
            raise ValueError("a rank chosen from the residual trace needs rank_tol")
        search = choose_nystrom_rank(X, kernel, seed, rank_tol, max_rank,
                                     parallel=parallel, checkpoint=checkpoint)
        rank = search.rank
    if landmarks == "uniform":
        chosen = uniform_landmarks(n, rank, seed)
        L = X[chosen]
    else:
        chosen = None
        L = kmeans_centroids(X, min(rank, n), seed, checkpoint=checkpoint)
    L.sort_indices()
    m = L.shape[0]
    # by blocks of landmarks (columns of C) and, below, of rows of G, asking between them
    # (always: with or without a checkpoint the factor is the same to the last bit)
    C = np.empty((n, m))
    block = column_block(n)
    for lo in range(0, m, block):
        hi = min(m, lo + block)
        C[:, lo:hi] = kernel_matrix(X, L[lo:hi], kernel, parallel=parallel)
        _check(checkpoint, "kernel columns", hi, m)
    # uniform landmarks are training rows: K(L, L) is C's rows at them, computed already
    W = C[chosen] if chosen is not None else kernel_matrix(L, L, kernel, parallel=False)
    M = _nystrom_map(W)
    G = np.empty((n, M.shape[1]))
    for lo in range(0, n, _MAP_BLOCK_ROWS):
        hi = min(n, lo + _MAP_BLOCK_ROWS)
        np.matmul(C[lo:hi], M, out=G[lo:hi])
        _check(checkpoint, "map rows", hi, n)
    d = np.empty(n)
    kernel_diagonal_values(row_operand(X), kernel.params, d)
    trace = float(d.sum())
    residual = float(trace - np.einsum("ij,ij->", G, G))
    return Factor(G, FeatureMap(L, kernel, M), "nystrom", residual, trace, chosen, search)


def warm_up(X) -> None:
    """Compile the incomplete Cholesky's loops (serial and parallel) on the few rows of ``X``
    (for its index width)."""
    for name in ("linear", "rbf", "polynomial"):
        kernel = Kernel(name, 0.5, 2, 1.0)
        for parallel in (False, True):
            incomplete_cholesky(X, kernel, 2, parallel=parallel)


__all__ = ["ICF_PIVOT_RTOL", "KMEANS_ITERATIONS", "LANDMARKS", "NYSTROM_EIGEN_RTOL",
           "Checkpoint", "Factor", "FactorizationStopped", "FeatureMap", "RankSearch",
           "choose_nystrom_rank", "column_block", "incomplete_cholesky", "kmeans_centroids",
           "landmark_order", "nystrom", "uniform_landmarks"]
