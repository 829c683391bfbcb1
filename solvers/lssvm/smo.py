"""The relaxed LS-SVM's 2SMO and SesquiSMO (Joshi et al. (20)-(35)) and the SUMT loop of
section VI, on the kernel-row cache."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from solvers.base import Termination
from solvers.core.kernels import cache_row
from solvers.lssvm.params import RelaxedLSSVMParams
from solvers.monitor import Monitor, Reporter
from solvers.problems import KernelProblem, KernelSolution


@njit(cache=True, inline="always")
def _violation(g, lam, nonneg):
    """KKT violation of one multiplier: |g| for (18); for (34)-(35), max(0, -g) at 0."""
    if nonneg and lam <= 0.0:
        return -g if g < 0.0 else 0.0
    return abs(g)


@njit(cache=True, nogil=True)
def max_violation(g, lam, nonneg):
    """(index, value) of the largest KKT violation."""
    best = 0
    worst = -1.0
    for j in range(g.shape[0]):
        v = _violation(g[j], lam[j], nonneg)
        if v > worst:
            worst = v
            best = j
    return best, worst


@njit(cache=True, nogil=True)
def smo_updates(rows, columns, kernel, store, y, inv_cj, inv_a, q_diag, nonneg, lam, g, tol,
                budget):
    """At most ``budget`` updates of the most violating multiplier (2SMO / SesquiSMO).

    g = Q lambda - e is kept up to date: after lambda_k moves by delta,
    g_j += y_j y_k (K_jk + 1/A) delta (+ delta / C_J,k for j = k), with row k from the cache;
    the same pass finds the next multiplier.  Returns (updates, largest violation).
    """
    slots = store[0]
    n = lam.shape[0]
    k, worst = max_violation(g, lam, nonneg)
    updates = 0
    while updates < budget and worst > tol:
        new = lam[k] - g[k] / q_diag[k]  # (31), exact minimization of (20) along lambda_k
        if nonneg and new < 0.0:
            new = 0.0  # SesquiSMO: lambda_k >= 0
        delta = new - lam[k]
        lam[k] = new
        g[k] += delta * inv_cj[k]
        row = slots[cache_row(rows, columns, kernel, store, k)]
        step = y[k] * delta
        worst = -1.0
        for j in range(n):
            gj = g[j] + y[j] * step * (row[j] + inv_a)
            g[j] = gj
            v = _violation(gj, lam[j], nonneg)
            if v > worst:
                worst = v
                k = j
        updates += 1
    return updates, worst


@dataclass
class _SMOState:
    """Multipliers, the gradient g = Q lambda - e of (20) and the work done so far."""

    lam: np.ndarray
    g: np.ndarray
    epochs: int = 0
    updates: int = 0
    worst: float = np.inf


@njit(cache=True, nogil=True)
def exact_gradient(rows, columns, kernel, store, y, inv_cj, inv_a, lam, g):
    """g = Q lambda - e from scratch: y_i ((K (y lambda))_i + y'lambda / A) + lambda_i / C_J,i
    - 1, where K (y lambda) sums the kernel rows of the nonzero multipliers only (K is
    symmetric), fetched through the cache."""
    slots = store[0]
    n = lam.shape[0]
    acc = np.zeros(n)
    balance = 0.0
    for j in range(n):
        if lam[j] != 0.0:
            coef = y[j] * lam[j]
            balance += coef
            row = slots[cache_row(rows, columns, kernel, store, j)]
            for i in range(n):
                acc[i] += coef * row[i]
    for i in range(n):
        g[i] = y[i] * (acc[i] + inv_a * balance) + inv_cj[i] * lam[i] - 1.0


class RelaxedSMO:
    """2SMO / SesquiSMO (and the SUMT loop) on the rows of X, one cache for every class."""

    def __init__(self, work):
        self.cache = work.cache  # a solvers.lssvm.systems.KernelWork's row cache

    @staticmethod
    def _summary(state: _SMOState, problem: KernelProblem, inv_cj, A) -> tuple[float, dict]:
        """Primal objective of (13) (or (32)) and the extras of a record.  With
        m_i = y_i f(x_i) = g_i + 1 - lambda_i / C_J,i, ||w||^2 + A b^2 = sum lambda_i m_i
        (from (15), (16), (19)); the dual (20) is 1/2 (e'lambda - lambda'g)."""
        lam, g = state.lam, state.g
        m = g + 1.0 - lam * inv_cj
        primal = problem.objective_from_margins(float(lam @ m), m)
        dual = problem.relaxed_dual_objective(lam, g)
        return primal, {"dual_objective": dual, "duality_gap": primal - dual,
                        "updates": state.updates, "n_support": int(np.count_nonzero(lam)),
                        "A": A, "lambda_y": float(lam @ problem.y)}

    def _converge(self, state: _SMOState, problem: KernelProblem, inv_cj, A,
                  params: RelaxedLSSVMParams,
                  report: Reporter, sumt_round: int | None) -> tuple[Termination, str] | None:
        """Epochs of n updates on the relaxed problem at this A until the KKT conditions hold
        on a freshly computed gradient; None when they do, else (status, message)."""
        cache = self.cache
        y = problem.y
        nonneg = params.variant == "sesquismo"
        inv_a = 1.0 / A
        q_diag = cache.diagonal + inv_a + inv_cj  # the cached Q_kk
        while True:
            if state.epochs >= params.max_iter:
                return Termination.MAX_ITER, (
                    f"max_iter={params.max_iter} epochs reached with KKT violation "
                    f"{state.worst:.3g} (A={A:g})")
            done, state.worst = smo_updates(cache.rows, cache.columns, cache.kernel_params,
                                            cache.store, y, inv_cj, inv_a, q_diag, nonneg,
                                            state.lam, state.g, params.kkt_tol, y.shape[0])
            state.updates += done
            state.epochs += 1
            if state.worst <= params.kkt_tol:
                exact_gradient(cache.rows, cache.columns, cache.kernel_params, cache.store, y,
                               inv_cj, inv_a, state.lam, state.g)
                state.worst = max_violation(state.g, state.lam, nonneg)[1]
            primal, extras = self._summary(state, problem, inv_cj, A)
            if sumt_round is not None:
                extras["sumt_round"] = sumt_round
            if report(state.epochs, primal, state.worst, **extras):
                return Termination.STOPPED, report.stop_message
            if state.worst <= params.kkt_tol:
                return None

    def solve(self, y, cost, params: RelaxedLSSVMParams, monitor: Monitor,
              start=None) -> KernelSolution:
        """The SMO from alpha = 0 (``start`` is not used: the SUMT loop starts its own)."""
        n = y.shape[0]
        problem = KernelProblem(y, cost, params.loss)
        inv_cj = 1.0 / (2.0 * cost)
        state = _SMOState(np.zeros(n), -np.ones(n))
        if params.variant == "2smo" and self.cache.capacity == n:
            self.cache.fill()
        report = Reporter(monitor, "kkt_violation")
        A = params.A
        rounds: list[dict] = []
        while True:
            outcome = self._converge(state, problem, inv_cj, A, params, report,
                                     len(rounds) + 1 if params.sumt else None)
            if outcome is not None:
                status, message = outcome
                break
            balance = float(state.lam @ y)
            scale = float(np.abs(state.lam).sum())
            rounds.append({"round": len(rounds) + 1, "A": A, "lambda_y": balance,
                           "relative_lambda_y": abs(balance) / max(scale, 1e-300),
                           "epochs": state.epochs, "updates": state.updates})
            if not params.sumt:
                status, message = Termination.CONVERGED, (
                    f"converged: largest KKT violation {state.worst:.3g} <= "
                    f"kkt_tol={params.kkt_tol:g} after {state.updates} updates")
                break
            if abs(balance) <= params.sumt_tol * scale:
                status, message = Termination.CONVERGED, (
                    f"SUMT converged: |lambda'y| = {abs(balance):.3g} <= sumt_tol * "
                    f"sum|lambda| after {len(rounds)} rounds (A={A:g})")
                break
            if len(rounds) >= params.sumt_max_rounds:
                status, message = Termination.MAX_ITER, (
                    f"SUMT stopped after {len(rounds)} rounds with |lambda'y| = "
                    f"{abs(balance):.3g} (A={A:g})")
                break
            # (42): the next problem's Q differs by (1/A_new - 1/A) y y'; warm start
            A_new = params.sumt_factor * A
            state.g += (1.0 / A_new - 1.0 / A) * y * balance
            A = A_new
        primal, extras = self._summary(state, problem, inv_cj, A)
        extras.update({"kkt_violation": float(state.worst), "epochs": state.epochs,
                       **self.cache.stats()})
        if params.sumt:
            extras["sumt"] = rounds
        return KernelSolution(y * state.lam, float(state.lam @ y) / A, primal, status, message,
                              state.epochs, extras)
