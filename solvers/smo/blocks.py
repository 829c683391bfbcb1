"""SMO over a working set of many variables (ThunderSVM's and oneDAL's "Thunder" scheme) on the
engine of :mod:`solvers.smo.engine`, for C-SVC on many rows.

Wen et al., "ThunderSVM: a fast SVM library on GPUs and CPUs", JMLR 19 (2018): each outer step
takes a working set B of q variables, q/2 of them the most violating ones not already in B
(alternately the largest -y_t G_t over I_up and the smallest over I_low: the pairs that make
m(alpha) - M(alpha)) and the other q/2 the newest of the previous set; computes the missing
kernel rows K(B, :) together (:meth:`solvers.core.kernels.KernelCache.load`: one block, read
column chunk by column chunk, on every core when it pays); solves the subproblem over B by
LIBSVM's two-variable SMO (:func:`solvers.smo.engine.smo_iterations` itself, on a cache that
holds the q x q block K(B, B)) until B's own m - M falls below max(eps, f times its value at
the start) or a budget of iterations (ThunderSVM's f is 0.1; here
``config.SMO_BLOCK_INNER_FACTOR``, 0.01: an inner update costs far less than a kernel row, and
a set solved further needs fewer steps, so fewer rows); then updates the whole gradient once,
G_t += y_t sum_{b in B} y_b (alpha_b - alpha_b^old) K(b, t) (on every core when it pays).

Why it pays where the profile says so (a9a, C = 1, LIBSVM's stop): LIBSVM's scheme computes one
kernel row per cache miss, 21,774 rows of 32,561 entries, 80% of the CPU time; each row alone
streams the 14 columns of the dense copy its features touch (3.6 MB) from memory, where a block
of rows reads each column chunk once from cache; and a block has rows enough for two cores
where the pair's two rows do not.

The answer is the same problem's: the outer loop stops by LIBSVM's rule on the whole gradient
(the maximal violating pair over every variable, kept exact at every outer step), and the
certified gap of :class:`solvers.smo.solver.SMOSolver` is computed from that gradient as in the
pair scheme.  Shrinking does not apply (every step reads the whole gradient, as ThunderSVM).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from solvers import config
from solvers.core.kernels import KernelCache
from solvers.smo.engine import (
    ACTIVE_SIZE,
    BUDGET,
    ITERATIONS,
    LENGTH,
    OPTIMAL,
    smo_iterations,
    violation,
)

INF = np.inf


@njit(cache=True, nogil=True)
def _extreme_candidates(values, positions, count, wanted, largest):
    """The positions of the ``wanted`` largest (``largest``) or smallest of values[:count],
    ordered from the most extreme (ties at the threshold all kept): a partition finds the
    threshold, only those past it are sorted."""
    if count > wanted > 0:
        if largest:
            threshold = np.partition(values[:count], count - wanted)[count - wanted]
        else:
            threshold = np.partition(values[:count], wanted - 1)[wanted - 1]
        kept = 0
        for k in range(count):
            if (values[k] >= threshold) if largest else (values[k] <= threshold):
                values[kept] = values[k]
                positions[kept] = positions[k]
                kept += 1
        count = kept
    ranked = np.argsort(-values[:count] if largest else values[:count], kind="mergesort")
    return positions[:count][ranked]


@njit(cache=True, inline="always")
def _candidate(values, at, count, f, t, member):
    """Variable t (value f) appended to the candidates unless already a member; the count."""
    if member[t]:
        return count
    values[count] = f
    at[count] = t
    return count + 1


@njit(cache=True, inline="always")
def _take_next(ranked, at, member, out, size):
    """The next of ``ranked`` from position ``at`` not yet a member appended to ``out``;
    returns (the position after it, the new size)."""
    while at < ranked.shape[0] and member[ranked[at]]:
        at += 1
    if at < ranked.shape[0]:
        member[ranked[at]] = True
        out[size] = ranked[at]
        return at + 1, size + 1
    return at, size


@njit(cache=True, nogil=True)
def select_block(y, alpha, cost, G, order, length, keep, n_new, member, out):
    """The working set: ``keep`` (kept from the previous one) then up to ``n_new`` variables
    not in it, alternately the next largest -y_t G_t over I_up and the next smallest over
    I_low among the first ``length`` of ``order`` (a variable in both taken once).
    ``member`` is a scratch array of False per variable.  Writes the set to ``out`` and
    returns (its size, m(alpha) - M(alpha) over the whole set)."""
    for k in range(keep.shape[0]):
        member[keep[k]] = True
    up_values = np.empty(length)
    up_at = np.empty(length, np.int64)
    low_values = np.empty(length)
    low_at = np.empty(length, np.int64)
    n_up = 0
    n_low = 0
    gmax = -INF
    gmin = INF
    for k in range(length):
        t = order[k]
        f = -y[t] * G[t]
        if y[t] > 0:
            up = alpha[t] < cost[t]
            low = alpha[t] > 0.0
        else:
            up = alpha[t] > 0.0
            low = alpha[t] < cost[t]
        if up:
            gmax = max(gmax, f)
            n_up = _candidate(up_values, up_at, n_up, f, t, member)
        if low:
            gmin = min(gmin, f)
            n_low = _candidate(low_values, low_at, n_low, f, t, member)
    ups = _extreme_candidates(up_values, up_at, n_up, n_new, True)
    lows = _extreme_candidates(low_values, low_at, n_low, n_new, False)
    size = keep.shape[0]
    out[:size] = keep
    top = 0
    bottom = 0
    end = size + n_new
    while size < end and (top < ups.shape[0] or bottom < lows.shape[0]):
        top, size = _take_next(ups, top, member, out, size)
        if size < end:
            bottom, size = _take_next(lows, bottom, member, out, size)
    for k in range(size):
        member[out[k]] = False
    return size, gmax - gmin


@njit(cache=True, nogil=True)
def gather_block(slots, row_slot, index, block, out):
    """out[a, b] = K(index[block[a]], index[block[b]]) from the cached rows of the block."""
    for a in range(block.shape[0]):
        row = slots[row_slot[index[block[a]]]]
        for b in range(block.shape[0]):
            out[a, b] = row[index[block[b]]]


_CHUNK = 2048


@njit(cache=True, nogil=True)
def _gradient_rows(slots, row_slot, y, coef, changed, G, lo, hi):
    """G_t += y_t sum_c coef_c K(changed_c, t) for t in [lo, hi), a chunk of t at a time
    (the chunk's sums stay in cache while every changed row is read once)."""
    acc = np.empty(_CHUNK)
    for j0 in range(lo, hi, _CHUNK):
        j1 = min(hi, j0 + _CHUNK)
        width = j1 - j0
        acc[:width] = 0.0
        for c in range(changed.shape[0]):
            row = slots[row_slot[changed[c]]]
            w = coef[c]
            for j in range(width):
                acc[j] += w * row[j0 + j]
        for j in range(width):
            G[j0 + j] += y[j0 + j] * acc[j]


@njit(cache=True, nogil=True)
def update_gradient_serial(slots, row_slot, y, coef, changed, G):
    """G_t += y_t sum_c coef_c K(changed_c, t) for every variable t (coef_c = y_c (alpha_c -
    alpha_c^old)); C-SVC's variables are the rows (index the identity), and those with
    C_t = 0, never selected, get their exact gradient too."""
    _gradient_rows(slots, row_slot, y, coef, changed, G, 0, G.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def update_gradient_parallel(slots, row_slot, y, coef, changed, G, n_blocks):
    """:func:`update_gradient_serial` on the threads, one block of variables each."""
    n = G.shape[0]
    n_blocks = min(n, n_blocks)
    step = (n + n_blocks - 1) // n_blocks
    for b in prange(n_blocks):
        _gradient_rows(slots, row_slot, y, coef, changed, G, b * step, min(n, (b + 1) * step))


class BlockSMO:
    """The outer loop (Python, between the serial cached engine and the block kernels): one
    instance per problem, holding the working set between calls of :meth:`iterations`."""

    def __init__(self, cache: KernelCache, size: int):
        if size < 2 or size > cache.capacity:
            raise ValueError(f"a working set of {size} variables needs 2 <= size <= the "
                             f"cache's {cache.capacity} rows")
        self.cache = cache
        self.size = size
        self.keep = np.empty(0, np.int64)
        self.member = None
        self.parallel = numba.get_num_threads() >= 2
        self.block_index = np.arange(size, dtype=np.int64)
        # counters the solver reports in its extras (:meth:`stats`)
        self.steps = 0  # outer steps (working sets solved)
        self.inner_capped = 0  # of which the inner SMO stopped on its budget
        self.new_variables = 0  # variables new to the working set, summed over the steps
        self.rows_computed = 0  # kernel rows the steps' loads computed (the rest were cached)
        self.changed = 0  # variables the inner SMO moved, summed over the steps

    def stats(self) -> dict:
        """The outer loop's counters (the record extras ``block_*``)."""
        return {"block_size": self.size, "block_steps": self.steps,
                "block_inner_capped": self.inner_capped,
                "block_new_variables": self.new_variables,
                "block_rows_computed": self.rows_computed, "block_changed": self.changed}

    @staticmethod
    def _local_store(q):
        """A kernel-row store (:class:`KernelCache`'s layout) of q rows, all resident: slot a
        holds row a, the LRU list runs 0, 1, ..., q - 1."""
        ids = np.arange(q, dtype=np.int64)
        nxt = ids + 1
        nxt[q - 1] = -1
        state = np.array([0, q - 1, q, 0, 0], np.int64)
        return (np.empty((q, q)), ids, ids.copy(), ids - 1, nxt, state)

    def iterations(self, index, qd, y, p, alpha, cost, G, order, state, eps, budget):
        """At most about ``budget`` two-variable updates in outer steps; (code, m - M) as
        :func:`solvers.smo.engine.smo_iterations`: OPTIMAL when m(alpha) - M(alpha) < eps on
        the whole set.  ``order``'s first ``state[LENGTH]`` are the variables with C_t > 0,
        all active."""
        cache = self.cache
        length = int(state[LENGTH])
        state[ACTIVE_SIZE] = length
        if self.member is None:
            if index.shape[0] != cache.n or np.any(index != np.arange(cache.n)):
                raise ValueError("working sets of many variables are C-SVC's: one variable "
                                 "a training row")
            self.member = np.zeros(y.shape[0], np.bool_)
        engine = (cache.rows, cache.columns, cache.kernel_params)
        slots, row_slot = cache.store[0], cache.store[2]
        q_max = min(self.size, length)
        working = np.empty(q_max, np.int64)
        start = int(state[ITERATIONS])
        gap = INF
        while int(state[ITERATIONS]) - start < budget:
            keep = self.keep[-min(self.keep.shape[0], q_max // 2):] \
                if self.keep.shape[0] else self.keep
            q, gap = select_block(y, alpha, cost, G, order, length, keep,
                                  q_max - keep.shape[0], self.member, working)
            if gap < eps:
                return OPTIMAL, gap
            block = working[:q].copy()
            misses = cache.misses
            cache.load(index[block])
            self.steps += 1
            self.new_variables += q - keep.shape[0]
            self.rows_computed += cache.misses - misses
            # the subproblem's cache: K(B, B), every row resident (smo_iterations reads K
            # through cache_row; here it always hits)
            local = self._local_store(q)
            gather_block(slots, row_slot, index, block, local[0])
            old = alpha[block]
            a = old.copy()
            yb = y[block]
            cb = cost[block]
            g = G[block]
            local_state = np.array([q, 2**62, 1, 0, q], np.int64)
            first = violation(yb, a, cb, g, self.block_index[:q], q, False)
            local_eps = max(eps, config.SMO_BLOCK_INNER_FACTOR * first)
            inner = min(budget - (int(state[ITERATIONS]) - start),
                        config.SMO_BLOCK_INNER_ITERATIONS * q)
            code, _ = smo_iterations(*engine, local, self.block_index[:q], qd[block], yb,
                                     p[block], a, cb, g, np.zeros(q),
                                     self.block_index[:q].copy(), local_state, local_eps,
                                     max(inner, 1), False, False)
            self.inner_capped += code != OPTIMAL
            state[ITERATIONS] += local_state[ITERATIONS]
            delta = a - old
            changed = np.flatnonzero(delta)
            self.changed += changed.size
            alpha[block] = a
            if changed.size:
                coef = np.ascontiguousarray(yb[changed] * delta[changed])
                args = (slots, row_slot, y, coef, block[changed], G)
                if self.parallel and float(changed.size) * y.shape[0] >= \
                        config.KERNEL_PARALLEL_MIN_WORK:
                    update_gradient_parallel(*args, config.KERNEL_BLOCKS_PER_THREAD *
                                             numba.get_num_threads())
                else:
                    update_gradient_serial(*args)
            # the newest half stays: the variables selected this step
            self.keep = block[keep.shape[0]:]
        return BUDGET, gap
