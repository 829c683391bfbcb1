"""One LIBSVM problem by SMO (:mod:`solvers.smo.engine`), its records and its stopping rules:
:class:`SMOSolver` solves any :class:`~solvers.problems.libsvm.LibsvmProblem` (the five
svm_types), :class:`CSVC` the binary C-SVC on it."""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers import config
from solvers.base import Termination
from solvers.core.kernels import KernelCache
from solvers.monitor import Monitor, Reporter
from solvers.problems import KernelSolution
from solvers.problems.libsvm import LibsvmProblem
from solvers.smo.blocks import BlockSMO
from solvers.smo.engine import (
    ACTIVE_SIZE,
    ITERATIONS,
    OPTIMAL,
    UNSHRINK,
    inactive_gradient,
    initial_gradient,
    rho_and_r_nu,
    rho_of,
    smo_iterations,
    violation,
)
from solvers.smo.params import SMOParams
from solvers.smo.polish import POLISHED_TYPES, Polisher
from solvers.termination import format_gap

#: stop_rule="gap" tightens the KKT tolerance tenfold each time it is met before the gap;
#: below this it stops (the gradient's rounding is of this order)
KKT_FLOOR = 1e-12


@njit(cache=True, nogil=True)
def full_gradient(rows, columns, kernel, store, index, y, p, alpha, cost, G, G_bar, order,
                  state, out):
    """G of every variable into ``out`` without changing the solver's state: the active
    ones as maintained, the inactive ones reconstructed (:func:`inactive_gradient`)."""
    out[:] = G
    inactive_gradient(rows, columns, kernel, store, index, y, p, alpha, cost, G_bar, order,
                      state, out)


class SMOSolver:
    """LIBSVM's ``Solver`` (``Solver_NU`` for the nu-formulations) on the rows of one
    kernel-row cache."""

    def __init__(self, cache: KernelCache):
        self.cache = cache

    def solve(self, problem: LibsvmProblem, params: SMOParams,
              monitor: Monitor) -> KernelSolution:
        """SMO from LIBSVM's starting point until the stopping rule of ``params``
        (``stop_rule``) holds; variables with C_t = 0 keep alpha_t = 0 and take no part."""
        cache = self.cache
        y, p, index, cost, alpha = problem.variables_cache()
        alpha = alpha.copy()
        nu = problem.nu_constraint
        m = y.shape[0]
        positive = cost > 0
        order = np.concatenate([np.flatnonzero(positive), np.flatnonzero(~positive)]).astype(
            np.int64)
        length = int(positive.sum())
        state = np.array([length, min(length, 1000) + 1, 0, 0, length], np.int64)
        engine = (cache.rows, cache.columns, cache.kernel_params, cache.store)
        qd = np.ascontiguousarray(cache.diagonal[index])
        G = p.copy()
        G_bar = np.zeros(m)
        if np.any(alpha > 0):
            rows = cache.diagonal.shape[0]
            upper = (cost > 0) & (alpha >= cost)
            row_coef = np.bincount(index, weights=y * alpha, minlength=rows)
            row_bar = np.bincount(index, weights=np.where(upper, y * cost, 0.0),
                                  minlength=rows)
            initial_gradient(*engine, index, y, p, G, G_bar, order, length, row_coef, row_bar)
        variables = (index, y, p, alpha, cost)
        gradient = np.empty(m)
        report = Reporter(monitor, "kkt_violation")
        chunk = max(length, 1000)
        gap_rule = params.stop_rule == "gap"
        # the gap rule's first KKT stage follows tol: m - M <= max(kkt_tol, tol), so a loose
        # tol (1e-2) no longer does kkt_tol's (1e-3) work first (issue 47: on dna nu-SVC,
        # 1,535 SMO iterations against 2,165, gap 2.6e-3; abalone nu-SVR 2,207 against 2,621);
        # m - M and the relative gap are the same number where LIBSVM's -e meets this rule's
        # tol, and a stage that does not certify tol tightens tenfold as before
        target = max(params.kkt_tol, params.tol) if gap_rule else params.kkt_tol
        block_size = self._block_size(problem, params, length)
        blocks = BlockSMO(cache, block_size) if block_size else None
        polisher = self._polisher(problem, params, blocks is None, length)
        # polishing (polish.py) starts at the looser of the rule's first stage and
        # config.SMO_POLISH_KKT, after every KKT stage while rounds remain
        eps = max(target, config.SMO_POLISH_KKT) if polisher is not None else target
        rounds = config.SMO_POLISH_ROUNDS
        status = message = None

        def measure():
            """The whole gradient into ``gradient``, the measures at alpha, one report;
            (stopped, kkt, primal, dual, rho, r, relative gap)."""
            full_gradient(*engine, *variables, G, G_bar, order, state, gradient)
            kkt, primal, dual, rho, r = self._measures(problem, alpha, gradient, order, length)
            relative_gap = problem.relative_gap(primal, dual)
            stopped = report(int(state[ITERATIONS]), primal, kkt, dual_objective=dual,
                             duality_gap=primal - dual, relative_duality_gap=relative_gap,
                             n_support=int(np.count_nonzero(alpha)),
                             n_bounded=problem.bounded(alpha),
                             active_size=int(state[ACTIVE_SIZE]), kkt_tol=eps,
                             cache_hit_rate=cache.stats()["cache_hit_rate"])
            return stopped, kkt, primal, dual, rho, r, relative_gap

        while status is None:
            budget = min(chunk, params.max_iter - int(state[ITERATIONS]))
            if blocks is not None:
                code, _ = blocks.iterations(index, qd, y, p, alpha, cost, G, order, state, eps,
                                            budget)
            else:
                code, _ = smo_iterations(*engine, index, qd, y, p, alpha, cost, G, G_bar,
                                         order, state, eps, budget, params.shrinking, nu)
            stopped, kkt, primal, dual, rho, r, relative_gap = measure()
            iterations = int(state[ITERATIONS])
            # LIBSVM's rule: a stage at kkt_tol itself, or a looser one (polishing's) whose
            # point happens to meet it
            met = relative_gap <= params.tol if gap_rule else (
                code == OPTIMAL and (eps <= target or kkt <= params.kkt_tol))
            if code == OPTIMAL and not met and not stopped and rounds > 0 and \
                    polisher is not None:
                # after a KKT stage every variable is active and G exact (smo_iterations
                # reconstructed it; the block scheme keeps it whole)
                rounds -= 1
                def enough() -> bool:
                    """Whether the rule holds at the polish's point (G is whole): its
                    rounds stop there."""
                    measures = self._measures(problem, alpha, G, order, length)
                    if gap_rule:
                        return problem.relative_gap(measures[1], measures[2]) <= params.tol
                    return measures[0] <= params.kkt_tol

                if polisher.polish(y, alpha, cost, G, G_bar, order, length, enough):
                    stopped, kkt, primal, dual, rho, r, relative_gap = measure()
                    met = relative_gap <= params.tol if gap_rule else kkt <= params.kkt_tol
                    state[UNSHRINK] = 0  # SMO resumes from a new point: shrink afresh
            polished = f" and {polisher.calls} polish(es)" if polisher is not None and \
                polisher.calls else ""
            if stopped:
                status, message = Termination.STOPPED, report.stop_message
            elif met and gap_rule:
                status, message = Termination.CONVERGED, (
                    f"converged: relative duality gap {format_gap(relative_gap)} <= tol="
                    f"{params.tol:g} after {iterations} SMO iterations{polished}")
            elif met:
                status, message = Termination.CONVERGED, (
                    f"converged: maximal violating pair m - M = {kkt:.3g} <= kkt_tol="
                    f"{params.kkt_tol:g} after {iterations} SMO iterations{polished}")
            elif code == OPTIMAL and gap_rule and eps / 10.0 < KKT_FLOOR:
                status, message = Termination.CONVERGED, (
                    f"converged: m - M = {kkt:.3g} below {KKT_FLOOR:g} (relative duality gap "
                    f"{format_gap(relative_gap)}) after {iterations} SMO iterations{polished}")
            elif code == OPTIMAL:
                # a tighter KKT tolerance (the gap rule's, or polishing's stages down to the
                # KKT rule's own), shrinking afresh
                eps = eps / 10.0 if gap_rule else max(eps / 10.0, target)
                state[UNSHRINK] = 0
            elif iterations >= params.max_iter:
                status, message = Termination.MAX_ITER, (
                    f"max_iter={params.max_iter} SMO iterations reached with m - M = "
                    f"{kkt:.3g}, relative duality gap {format_gap(relative_gap)}")
        # the loop ends at a report: ``gradient`` is the whole gradient at the final alpha (what
        # reconstructing the shrunk variables' gives) and the measures are those of the answer
        coef, intercept = problem.solution(alpha, rho, r)
        extras = {"dual_objective": dual, "duality_gap": primal - dual,
                  "relative_duality_gap": problem.relative_gap(primal, dual),
                  "kkt_violation": kkt, "n_support": int(np.count_nonzero(coef)),
                  "n_bounded": problem.bounded(alpha),
                  "smo_iterations": int(state[ITERATIONS]), **cache.stats(),
                  **(blocks.stats() if blocks is not None else {}),
                  **(polisher.stats() if polisher is not None else {})}
        if problem.svm_type == "nu_svc":
            extras["margin_r"] = r  # LIBSVM prints C = 1/r
        elif problem.svm_type == "nu_svr":
            extras["epsilon"] = -r  # LIBSVM prints epsilon = -r
        return KernelSolution(coef, intercept, primal, status, message,
                              int(state[ITERATIONS]), extras)

    def _block_size(self, problem: LibsvmProblem, params: SMOParams, length: int) -> int:
        """The working set's size of :class:`~solvers.smo.blocks.BlockSMO`, 0 for LIBSVM's
        pairs: ``params.working_set`` given, else (``"auto"``) ``config.SMO_BLOCK_SIZE`` for
        a C-SVC of at least ``config.SMO_BLOCK_MIN_ROWS`` variables; at most the cache's
        rows and the variables, and pairs below 16 (a set that small is the pair scheme
        with more overhead)."""
        size = params.working_set
        if size == "pair":
            return 0
        if size == "auto":
            if problem.svm_type != "c_svc" or length < config.SMO_BLOCK_MIN_ROWS:
                return 0
            size = config.SMO_BLOCK_SIZE
        size = min(int(size), self.cache.capacity, length)
        return size if size >= 16 else 0

    def _polisher(self, problem: LibsvmProblem, params: SMOParams, pairs: bool,
                  length: int) -> Polisher | None:
        """The polisher of ``params.polish``, None without; the pair scheme's keeps G_bar.
        ``"auto"``: C-SVC's, under the gap rule always, under LIBSVM's rule from
        ``config.SMO_POLISH_KKT_MIN_ROWS`` variables (below, SMO's tail from m - M = 1e-2 to
        1e-3 is short and a polish costs as much: measured in docs/design.md 4.7)."""
        if params.polish is False or problem.svm_type not in POLISHED_TYPES:
            return None
        if params.polish == "auto" and params.stop_rule == "kkt" and \
                length < config.SMO_POLISH_KKT_MIN_ROWS:
            return None
        return Polisher(self.cache, keep_g_bar=pairs)

    @staticmethod
    def _levels(problem: LibsvmProblem, alpha, G, order, length) -> tuple[float, float]:
        """(rho, r): LIBSVM's ``calculate_rho`` (``Solver_NU``'s for the nus, which also
        gives r)."""
        y, _, _, cost, _ = problem.variables_cache()
        if problem.nu_constraint:
            rho, r = rho_and_r_nu(y, alpha, cost, G, order, length)
            return float(rho), float(r)
        return float(rho_of(y, alpha, cost, G, order, length)), 0.0

    def _measures(self, problem: LibsvmProblem, alpha, G, order, length
                  ) -> tuple[float, float, float, float, float]:
        """(m - M, primal, dual, rho, r) at alpha with the full gradient G (rho and r:
        :meth:`_levels`)."""
        y, _, _, cost, _ = problem.variables_cache()
        kkt = float(violation(y, alpha, cost, G, order, length, problem.nu_constraint))
        rho, r = self._levels(problem, alpha, G, order, length)
        primal, dual = problem.objectives(alpha, G, rho, r)
        return kkt, primal, dual, rho, r


class CSVC:
    """C-SVC on the rows of one kernel-row cache (the rows of one binary problem)."""

    def __init__(self, cache: KernelCache):
        self.cache = cache

    def solve(self, y: np.ndarray, cost: np.ndarray, params: SMOParams,
              monitor: Monitor) -> KernelSolution:
        """SMO from alpha = 0 until the stopping rule of ``params`` (``stop_rule``) holds;
        examples with C_i = 0 keep alpha_i = 0 and take no part."""
        return SMOSolver(self.cache).solve(LibsvmProblem("c_svc", y, cost), params, monitor)
