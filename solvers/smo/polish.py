"""Active-set Newton polishing of an SMO point: the free variables' KKT system solved exactly.

The tail of SMO (from m - M ~ 1e-2 to a certified relative gap of 1e-6) is tens of thousands
of pair updates that mostly refine the free variables F = {t: 0 < alpha_t < C_t} while the
bounded ones have nearly settled.  With the working set W (at first F) free and the others
fixed, the dual (engine.py's problem, 1/2 alpha'Q alpha + p'alpha under y'alpha = Delta and
the box) restricted to W is an equality-constrained QP whose optimality conditions are linear:
at its optimum y_t G_t = rho on W (LIBSVM's ``calculate_rho``: b = -rho) and y'alpha stays.  A
step d_W changes G_W by Q_WW d_W, so

    Q_WW d_W - rho y_W = -G_W,    y_W' d_W = 0.

In the coefficients beta_t = y_t alpha_t (u = y_W * d_W; Q_WW = diag(y_W) K_WW diag(y_W)) this
is the bordered kernel system of the rows of W (the LS-SVM's, on W):

    K_WW u - rho e = -y_W * G_W,    e'u = s  (s = 0, or what the clamped variables moved),

solved by one Cholesky factorization of K_WW (+ a ridge of 1e-10 its mean diagonal, so that
duplicated rows, frequent in a9a, factor; tenfold more if it still fails): v = K^-1 e,
w = K^-1 (y G), rho = (s + e'w) / e'v, u = rho v - w (:func:`bordered_solve`; LAPACK on one
BLAS thread, :func:`solvers.core.linalg.cholesky_solve`).

One working set (:meth:`Polisher._solve_set`): solve; the variables whose new value leaves the
box go to the bound they cross and leave the set, the rest is solved again with the equality
constraint carrying what they moved (a primal-dual active-set step, ``config.SMO_POLISH_SOLVES``
solves at most); the result is kept when it lowers the dual objective (Delta f = G_W' Delta
alpha + 1/2 Delta beta' K_WW Delta beta, from K_WW alone), else one solve on the strictly free
variables and the largest step t <= 1 inside the box, along which f(alpha + t d) - f(alpha) =
-t (u'Ku + lambda u'u) + t^2/2 u'Ku < 0 (ridge lambda).  Then the whole gradient is updated
once, G_t += y_t sum_{w in W} (beta_w - beta_w^old) K(w, t), from W's kernel rows (loaded into
the cache in blocks of at most its capacity, on every core when it pays:
:func:`solvers.smo.blocks.update_gradient_parallel`), and LIBSVM's G_bar likewise for the
variables that reached or left their upper bound (the pair scheme's reconstruction of shrunk
variables reads it).

Rounds (:meth:`Polisher.polish`, ``config.SMO_POLISH_SET_ROUNDS`` at most): after a set is
solved, the bounded variables whose KKT condition fails at the set's level (alpha_t = 0 needs
G_t - y_t rho >= 0, that is y_t f(x_t) >= 1; alpha_t = C_t needs <= 0) join the free ones in
the next working set, the most violating first (at most ``config.SMO_POLISH_MAX_FREE`` in
all); the rounds stop when none violates, or when the caller's rule holds at the new point
(``enough``).  The solver (:class:`solvers.smo.solver.SMOSolver`) polishes after a KKT stage
and certifies the result as it certifies SMO's (the relative duality gap, or m - M for
LIBSVM's rule); from a point that does not meet it SMO resumes, with a lower dual objective.

C-SVC only (``POLISHED_TYPES``): the nu-formulations keep a second equality constraint
(e'alpha, two multipliers), the SVRs' two variables of one row share a kernel row (a singular
K_WW when both are free) and one-class's level is its own; those keep SMO's tail.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numba
import numpy as np

from solvers import config
from solvers.core.kernels import (
    KernelCache,
    kernel_block_parallel,
    kernel_block_serial,
    take_operands,
    use_parallel_kernel,
)
from solvers.core.linalg import cholesky_solve, single_threaded_blas
from solvers.smo.blocks import gather_block, update_gradient_parallel, update_gradient_serial

#: the svm_types whose SMO points are polished (the module's description says why only these)
POLISHED_TYPES = ("c_svc",)

#: ridges tried on K_FF, relative to its mean diagonal, until the Cholesky factorization holds
_RIDGES = (1e-10, 1e-8, 1e-6)
#: a bounded variable's KKT violation |G_t - y_t rho| above which a polish takes it into its
#: next working set (the solves leave the free ones at rounding, about 1e-13)
_VIOLATION_FLOOR = 1e-9


def bordered_solve(K: np.ndarray, right: np.ndarray,
                   total: float = 0.0) -> tuple[np.ndarray, float]:
    """(u, rho) solving K u - rho e = -right, e'u = total (K symmetric positive semidefinite,
    ridged as the module says); K is not changed."""
    n = K.shape[0]
    scale = float(np.trace(K)) / n if n else 1.0
    if not scale > 0:
        scale = 1.0
    rhs = np.empty((n, 2))
    rhs[:, 0] = 1.0
    rhs[:, 1] = right
    diagonal = np.diag_indices(n)
    for ridge in _RIDGES:
        A = K.copy()
        A[diagonal] += ridge * scale
        solved = cholesky_solve(A, rhs)  # LAPACK on one BLAS thread (the shared layer's)
        if solved is None:
            continue
        v, w = solved[:, 0], solved[:, 1]
        rho = float((total + w.sum()) / v.sum())
        u = rho * v - w
        u += (total - u.sum()) / n  # e'u = total to rounding, whatever K's conditioning
        return u, rho
    raise np.linalg.LinAlgError("the free variables' kernel matrix did not factor")


class Polisher:
    """Polishing of one problem's SMO points (C-SVC: variable t is training row t), with the
    counters the solver reports (:meth:`stats`)."""

    def __init__(self, cache: KernelCache, keep_g_bar: bool):
        self.cache = cache
        self.keep_g_bar = keep_g_bar  # the pair scheme reads G_bar, the block scheme not
        self.max_free = config.SMO_POLISH_MAX_FREE
        self.max_solves = config.SMO_POLISH_SOLVES
        self.max_rounds = config.SMO_POLISH_SET_ROUNDS
        self.parallel = numba.get_num_threads() >= 2
        self.calls = 0  # polishes done
        self.skipped = 0  # polishes refused: more free variables than max_free
        self.rounds = 0  # working sets solved (a polish's first, and those with violators)
        self.solves = 0  # bordered systems solved, over all polishes
        self.clipped = 0  # variables a solve sent to a bound, over all polishes
        self.fallbacks = 0  # working sets whose solves did not settle: a clipped step instead
        self.free = 0  # |F| at the last polish (or refusal)
        self.seconds = 0.0

    def stats(self) -> dict:
        """The counters (the record extras ``polish_*``)."""
        return {"polish_calls": self.calls, "polish_skipped": self.skipped,
                "polish_rounds": self.rounds, "polish_solves": self.solves,
                "polish_clipped": self.clipped, "polish_fallbacks": self.fallbacks,
                "polish_free": self.free, "polish_seconds": self.seconds}

    @staticmethod
    def free_set(alpha: np.ndarray, cost: np.ndarray, order: np.ndarray,
                 length: int) -> np.ndarray:
        """The free variables among the first ``length`` of ``order`` (those with C_t > 0):
        0 < alpha_t < C_t, ascending."""
        active = order[:length]
        free = active[(alpha[active] > 0.0) & (alpha[active] < cost[active])]
        return np.sort(free)

    def _block(self, which: np.ndarray) -> np.ndarray:
        """K(which, which): gathered from the cached rows when they fit the cache (they are
        loaded, and the gradient update reads them next), else computed over those rows
        alone."""
        cache = self.cache
        K = np.empty((which.shape[0], which.shape[0]))
        if which.shape[0] <= cache.capacity:
            cache.load(which)
            gather_block(cache.store[0], cache.store[2], np.arange(cache.n, dtype=np.int64),
                         which, K)
            return K
        rows, columns = take_operands(cache.rows, cache.columns, which)
        nnz = float(rows[0][-1])
        if use_parallel_kernel(which.shape[0], which.shape[0] * nnz):
            kernel_block_parallel(rows, columns, cache.kernel_params, K,
                                  config.KERNEL_BLOCKS_PER_THREAD * numba.get_num_threads())
        else:
            kernel_block_serial(rows, columns, cache.kernel_params, K)
        return K

    def _add_rows(self, target: np.ndarray, y: np.ndarray, which: np.ndarray,
                  coef: np.ndarray) -> None:
        """target_t += y_t sum_c coef_c K(which_c, t) for every t, the rows of ``which``
        loaded in blocks of at most the cache's capacity."""
        cache = self.cache
        step = cache.capacity
        for lo in range(0, which.shape[0], step):
            part = np.ascontiguousarray(which[lo:lo + step])
            cache.load(part)
            args = (cache.store[0], cache.store[2], y, np.ascontiguousarray(coef[lo:lo + step]),
                    part, target)
            if self.parallel and float(part.shape[0]) * y.shape[0] >= \
                    config.KERNEL_PARALLEL_MIN_WORK:
                update_gradient_parallel(*args, config.KERNEL_BLOCKS_PER_THREAD *
                                         numba.get_num_threads())
            else:
                update_gradient_serial(*args)

    def _solve_set(self, working, y, alpha, cost, G):
        """The new beta = y alpha of the variables ``working`` (the others fixed), from the
        module's solves: the set's optimum with every variable that leaves the box put on its
        bound and the rest solved again (``max_solves`` at most), accepted when it lowers the
        dual objective (Delta f = G_W' Delta alpha + 1/2 Delta beta' K_WW Delta beta, from
        K_WW alone); else one solve on the strictly free ones and the largest step t <= 1 in
        the box.  Returns (beta, beta at the start, rho) or None when nothing moves."""
        n = working.shape[0]
        K = self._block(working)
        yW = y[working]
        beta0 = yW * alpha[working]
        low = np.where(yW > 0, 0.0, -cost[working])  # the box of beta: y = -1 flips it
        high = np.where(yW > 0, cost[working], 0.0)
        slack = 1e-12 * (high - low)
        grad0 = G[working]
        beta = beta0.copy()
        solving = np.ones(n, np.bool_)
        rho = 0.0
        settled = False
        for _ in range(self.max_solves):
            idx = np.flatnonzero(solving)
            if idx.shape[0] == 0:
                break
            whole = idx.shape[0] == n
            # G at beta on idx (K_WW's product: the moved variables of W are its only change)
            grad = (grad0 + yW * (K @ (beta - beta0)))[idx] if not whole else grad0
            u, rho = bordered_solve(K if whole else K[np.ix_(idx, idx)], yW[idx] * grad,
                                    float(beta0.sum() - beta.sum()))
            self.solves += 1
            target = beta[idx] + u
            out = (target < low[idx] - slack[idx]) | (target > high[idx] + slack[idx])
            if not out.any():
                beta[idx] = np.clip(target, low[idx], high[idx])
                settled = True
                break
            hit = idx[out]
            beta[hit] = np.where(target[out] > high[hit], high[hit], low[hit])
            solving[hit] = False
            self.clipped += int(hit.shape[0])
        if settled:
            change = beta - beta0
            decrease = float((yW * grad0) @ change + 0.5 * change @ (K @ change))
            settled = decrease < 0.0
        if settled:
            return beta, beta0, rho
        # the clipped step along the strictly free variables' direction
        self.fallbacks += 1
        beta = beta0.copy()
        idx = np.flatnonzero((beta0 > low) & (beta0 < high))
        if idx.shape[0] == 0:
            return None
        u, rho = bordered_solve(K[np.ix_(idx, idx)], yW[idx] * grad0[idx])
        self.solves += 1
        b = beta0[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            reach = np.where(u > 0, (high[idx] - b) / u,
                             np.where(u < 0, (low[idx] - b) / u, np.inf))
        t = max(0.0, min(1.0, float(reach.min())))
        beta[idx] = b + t * u
        if t < 1.0:
            blocked = reach <= t * (1.0 + 1e-12)
            hit = idx[blocked]
            beta[hit] = np.where(u[blocked] > 0, high[hit], low[hit])  # exactly on the bound
            self.clipped += int(hit.shape[0])
        np.clip(beta, low, high, out=beta)
        return beta, beta0, rho

    def polish(self, y: np.ndarray, alpha: np.ndarray, cost: np.ndarray, G: np.ndarray,
               G_bar: np.ndarray, order: np.ndarray, length: int,
               enough: Callable[[], bool] | None = None) -> bool:
        """:meth:`_polish` with BLAS on one thread: OpenBLAS's threads, left spinning after a
        factorization, take the cores from the Numba kernels (and on a busy machine from
        each other: a Cholesky factorization of 1,500 rows took 1.2-2.9 s on two BLAS
        threads against 0.06-0.07 s on one, load 10, 2026-12-07)."""
        with single_threaded_blas():
            return self._polish(y, alpha, cost, G, G_bar, order, length, enough)

    def _polish(self, y: np.ndarray, alpha: np.ndarray, cost: np.ndarray, G: np.ndarray,
                G_bar: np.ndarray, order: np.ndarray, length: int,
                enough: Callable[[], bool] | None) -> bool:
        """One polish of the point (alpha, G = Q alpha + p exact for every variable), in
        place: alpha, G and (``keep_g_bar``) G_bar move to the point the module describes.
        Returns whether alpha changed (False: no free variable, or more than ``max_free``)."""
        start = time.perf_counter()
        working = self.free_set(alpha, cost, order, length)
        self.free = int(working.shape[0])
        if working.shape[0] == 0 or working.shape[0] > self.max_free:
            self.skipped += working.shape[0] > self.max_free
            self.seconds += time.perf_counter() - start
            return False
        self.calls += 1
        active = order[:length]
        moved = False
        for _ in range(self.max_rounds):
            self.rounds += 1
            solved = self._solve_set(working, y, alpha, cost, G)
            if solved is None:
                break
            beta, beta0, rho = solved
            new_alpha = np.clip(y[working] * beta, 0.0, cost[working])
            delta = y[working] * new_alpha - beta0
            changed = np.flatnonzero(delta)
            if changed.shape[0] == 0:
                break
            moved = True
            was_upper = alpha[working] >= cost[working]
            alpha[working] = new_alpha
            self._add_rows(G, y, working[changed], delta[changed])
            if self.keep_g_bar:
                # G_bar_t = sum_{s: alpha_s = C_s} C_s Q_st: the variables that reached the
                # upper bound add their column, those that left it take it away
                turned = (new_alpha >= cost[working]).astype(np.float64) - was_upper
                which = np.flatnonzero(turned)
                if which.shape[0]:
                    s = working[which]
                    self._add_rows(G_bar, y, s, turned[which] * y[s] * cost[s])
            if enough is not None and enough():
                break
            # the bounded variables' KKT conditions at the set's level rho: alpha_t = 0 needs
            # G_t - y_t rho >= 0 (y_t f(x_t) >= 1), alpha_t = C_t needs <= 0
            a = alpha[active]
            level = G[active] - y[active] * rho
            violation = np.where(a <= 0.0, -level, np.where(a >= cost[active], level, 0.0))
            over = np.flatnonzero(violation > _VIOLATION_FLOOR)
            free = working[(new_alpha > 0.0) & (new_alpha < cost[working])]
            if over.shape[0] == 0:
                break
            room = self.max_free - free.shape[0]
            if room < 1:
                break
            if over.shape[0] > room:  # the most violating ones
                over = over[np.argpartition(-violation[over], room - 1)[:room]]
            working = np.union1d(free, active[over])
            if working.shape[0] > self.max_free:
                break
        self.seconds += time.perf_counter() - start
        return moved
