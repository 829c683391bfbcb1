"""One binary C-SVC by SMO (:mod:`solvers.smo.engine`), its records and its stopping rules."""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.base import Termination
from solvers.core.kernels import KernelCache
from solvers.monitor import Monitor, Reporter
from solvers.problems import KernelProblem, KernelSolution
from solvers.smo.engine import (
    ACTIVE_SIZE,
    ITERATIONS,
    OPTIMAL,
    UNSHRINK,
    inactive_gradient,
    reconstruct_gradient,
    rho_of,
    smo_iterations,
    violation,
)
from solvers.smo.params import SMOParams
from solvers.termination import format_gap

#: stop_rule="gap" tightens the KKT tolerance tenfold each time it is met before the gap;
#: below this it stops (the gradient's rounding is of this order)
KKT_FLOOR = 1e-12


@njit(cache=True, nogil=True)
def full_gradient(rows, columns, kernel, store, y, alpha, cost, G, G_bar, order, state, out):
    """G of every variable into ``out`` without changing the solver's state: the active
    ones as maintained, the inactive ones reconstructed (:func:`inactive_gradient`)."""
    out[:] = G
    inactive_gradient(rows, columns, kernel, store, y, alpha, cost, G_bar, order, state, out)


class CSVC:
    """C-SVC on the rows of one kernel-row cache (the rows of one binary problem)."""

    def __init__(self, cache: KernelCache):
        self.cache = cache

    def solve(self, y: np.ndarray, cost: np.ndarray, params: SMOParams,
              monitor: Monitor) -> KernelSolution:
        """SMO from alpha = 0 until the stopping rule of ``params`` (``stop_rule``) holds;
        examples with C_i = 0 keep alpha_i = 0 and take no part."""
        cache = self.cache
        n = y.shape[0]
        y = np.ascontiguousarray(y, dtype=np.float64)
        cost = np.ascontiguousarray(cost, dtype=np.float64)
        problem = KernelProblem(y, cost, params.loss)
        alpha = np.zeros(n)
        G = -np.ones(n)
        G_bar = np.zeros(n)
        positive = cost > 0
        if not (np.any(positive & (y > 0)) and np.any(positive & (y < 0))):
            raise ValueError("C-SVC needs examples of both classes with a positive weight")
        order = np.concatenate([np.flatnonzero(positive), np.flatnonzero(~positive)]).astype(
            np.int64)
        length = int(positive.sum())
        state = np.array([length, min(length, 1000) + 1, 0, 0, length], np.int64)
        engine = (cache.rows, cache.columns, cache.kernel_params, cache.store)
        gradient = np.empty(n)
        report = Reporter(monitor, "kkt_violation")
        chunk = max(length, 1000)
        eps = params.kkt_tol
        gap_rule = params.stop_rule == "gap"
        status = message = None
        while status is None:
            budget = min(chunk, params.max_iter - int(state[ITERATIONS]))
            code, _ = smo_iterations(*engine, cache.diagonal, y, alpha, cost, G, G_bar, order,
                                     state, eps, budget, params.shrinking)
            full_gradient(*engine, y, alpha, cost, G, G_bar, order, state, gradient)
            kkt = float(violation(y, alpha, cost, gradient, order, length))
            bias = -float(rho_of(y, alpha, cost, gradient, order, length))
            primal, dual = problem.csvc_objectives(alpha, gradient, bias)
            relative_gap = (primal - dual) / primal if primal > 0 else 0.0
            iterations = int(state[ITERATIONS])
            if report(iterations, primal, kkt, dual_objective=dual,
                      duality_gap=primal - dual, relative_duality_gap=relative_gap,
                      n_support=int(np.count_nonzero(alpha)),
                      active_size=int(state[ACTIVE_SIZE]), kkt_tol=eps,
                      cache_hit_rate=cache.stats()["cache_hit_rate"]):
                status, message = Termination.STOPPED, report.stop_message
            elif gap_rule and relative_gap <= params.tol:
                status, message = Termination.CONVERGED, (
                    f"converged: relative duality gap {format_gap(relative_gap)} <= tol="
                    f"{params.tol:g} after {iterations} SMO iterations")
            elif code == OPTIMAL and not gap_rule:
                status, message = Termination.CONVERGED, (
                    f"converged: maximal violating pair m - M = {kkt:.3g} <= kkt_tol="
                    f"{params.kkt_tol:g} after {iterations} SMO iterations")
            elif code == OPTIMAL and eps / 10.0 < KKT_FLOOR:
                status, message = Termination.CONVERGED, (
                    f"converged: m - M = {kkt:.3g} below {KKT_FLOOR:g} (relative duality gap "
                    f"{format_gap(relative_gap)}) after {iterations} SMO iterations")
            elif code == OPTIMAL:
                eps /= 10.0  # the gap rule: a tighter KKT tolerance, shrinking afresh
                state[UNSHRINK] = 0
            elif iterations >= params.max_iter:
                status, message = Termination.MAX_ITER, (
                    f"max_iter={params.max_iter} SMO iterations reached with m - M = "
                    f"{kkt:.3g}, relative duality gap {format_gap(relative_gap)}")
        reconstruct_gradient(*engine, y, alpha, cost, G, G_bar, order, state)
        bias = -float(rho_of(y, alpha, cost, G, order, length))
        primal, dual = problem.csvc_objectives(alpha, G, bias)
        kkt = float(violation(y, alpha, cost, G, order, length))
        extras = {"dual_objective": dual, "duality_gap": primal - dual,
                  "relative_duality_gap": (primal - dual) / primal if primal > 0 else 0.0,
                  "kkt_violation": kkt, "n_support": int(np.count_nonzero(alpha)),
                  "n_bounded": int(np.count_nonzero(positive & (alpha >= cost))),
                  "smo_iterations": int(state[ITERATIONS]), **cache.stats()}
        return KernelSolution(y * alpha, bias, primal, status, message,
                            int(state[ITERATIONS]), extras)
