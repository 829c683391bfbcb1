"""L2-SVM-MFN: the modified finite Newton method of Keerthi & DeCoste (JMLR 6, 2005).

Problem (``design.md``), y_i = +-1, x~_i = (x_i, s) with s = ``bias_scale`` (0 without bias)::

    minimize_beta   1/2 ||beta||^2 + sum_i C_i loss(y_i x~_i . beta)

The paper writes it as f(beta) = lambda/2 ||beta||^2 + sum_i c_i L(xi_i), xi_i = 1 - t_i y_i,
L(xi) = xi^2 / 2 for xi > 0 (eq. 2): our objective is f scaled by 2C, so **lambda = 1/(2C)**
and c_i is the sample weight.  The bias is regularized like any weight (the paper's b^2/2
term; LIBLINEAR's ``-B``), or absent.

One engine serves every loss the paper treats, all with a derivative of the form
L'(xi) = kappa * clip(xi - xi_lo, 0, width):

* ``squared_hinge``: the L2-SVM of sections 2-4 and Appendix A (kappa = 2, width = inf);
* ``modified_huber``: section 6, eqs. (21)-(23) (kappa = 2, width = 2): three index sets, the
  least-squares problem shifted by q = (width/lambda) sum_{I2} c_i t_i x~_i, and a line search
  that watches examples move between the three sets;
* ``hinge``: section 6's homotopy -- the L1 loss is approximated by the scaled modified Huber
  loss with tau_j = 2^-j, each problem seeded with the previous solution, until the hinge
  duality gap (a certificate: alpha_i = C_i h'_tau(xi_i) is hinge-dual feasible) falls below
  ``hinge_gap_tolerance`` relative to the objective.

Each Newton iteration (Appendix A): CGLS on the active rows only, warm-started at the current
point (Frommer & Maass) and stopped by the relative rule (13) ``||r|| <= eps ||z||``; then the
exact line search over sorted breakpoints (eqs. (14)-(18)).  Heuristic 1: after a crude start,
the first CGLS call stops after 10 iterations.  Heuristic 2: a first round at eps = 1e-2, a
second at the requested eps = 1e-6.  Step 5's checks use tol = 1e-8; ``max_iter`` = 50 Newton
iterations; a rising objective ends the run with status ``failed`` (step 7's error exit).

Extras: beta-seeding from a weight guess (section 4.1, eqs. (8)-(9)); a C path solved with warm
starts (Table 1); dual recovery and the maximum dual KKT violation (section 4.7), optionally
driven below ``dual_kkt_tolerance`` by continuing with a smaller eps (section 5's protocol).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from solvers.core.linalg import cgls
from solvers.core.linesearch import clipped_loss_breakpoints, piecewise_linear_root
from solvers.core.sparse import (
    csr_matvec,
    csr_matvec_rows,
    csr_rmatvec_rows,
    rows_nnz,
    use_parallel,
)
from solvers.monitor import IterationRecord, Monitor, NullMonitor, Stopwatch
from solvers.problem import BinaryProblem
from solvers.registry import Solution, SolverParams, SolverSpec, register

# Relative slack on "the objective rose" (step 7): exact line search cannot increase f, but
# the objective is a sum of m terms evaluated in floating point.
_RISE_SLACK = 1e-12


class MFNParams(SolverParams):
    """Parameters of ``mfn`` (defaults are the paper's, Appendix A)."""

    solver: Literal["mfn"] = "mfn"
    loss: Literal["squared_hinge", "modified_huber", "hinge"] = "squared_hinge"
    bias: Literal["regularized", "none"] = "regularized"
    epsilon: float = Field(1e-6, gt=0, lt=1,
                           description="CGLS relative tolerance, rule (13), of the final round.")
    first_round_epsilon: float | None = Field(
        1e-2, gt=0, lt=1,
        description="Heuristic 2: tolerance of a first round from a crude start (None: off).")
    initial_cgls_iterations: int | None = Field(
        10, ge=1,
        description="Heuristic 1: CGLS iteration cap of the first call after a crude start "
                    "(None: off).")
    max_cgls_iterations: int = Field(5000, ge=1, description="cgitermax of every other call.")
    max_iter: int = Field(50, ge=1, description="itermax: Newton iterations in all.")
    tol: float = Field(1e-8, ge=0, description="Step 5's tolerance on t_i y_i around 1.")
    dual_kkt_tolerance: float | None = Field(
        None, gt=0,
        description="Section 4.7: continue with smaller eps until the maximum dual KKT "
                    "violation is at most this (None: no such requirement).")
    hinge_gap_tolerance: float = Field(
        1e-4, gt=0, lt=1,
        description="hinge only: stop the tau = 2^-j homotopy once the hinge duality gap "
                    "relative to the objective is at most this.")
    hinge_max_rounds: int = Field(30, ge=1, description="hinge only: largest j in tau = 2^-j.")


@dataclass(frozen=True)
class ClippedLoss:
    """L(xi) with L'(xi) = kappa * clip(xi - xi_lo, 0, width), in the objective's scale."""

    kappa: float
    xi_lo: float
    width: float

    def value(self, xi: np.ndarray) -> np.ndarray:
        u = np.clip(xi - self.xi_lo, 0.0, self.width)
        value = 0.5 * u * u
        if np.isfinite(self.width):
            value += self.width * np.maximum(xi - self.xi_lo - self.width, 0.0)
        return self.kappa * value

    def derivative(self, xi: np.ndarray) -> np.ndarray:
        return self.kappa * np.clip(xi - self.xi_lo, 0.0, self.width)


SQUARED_HINGE = ClippedLoss(kappa=2.0, xi_lo=0.0, width=np.inf)
MODIFIED_HUBER = ClippedLoss(kappa=2.0, xi_lo=0.0, width=2.0)


def smoothed_hinge(tau: float) -> ClippedLoss:
    """tau/2 L_h(xi/tau + 1) of section 6: 0 below -tau, (xi + tau)^2 / (4 tau) on
    (-tau, tau), xi above; it exceeds the hinge by at most tau/4."""
    return ClippedLoss(kappa=1.0 / (2.0 * tau), xi_lo=-tau, width=2.0 * tau)


@dataclass
class MFNState:
    """The current point: beta, outputs o_i = x~_i . beta on every row, and the round."""

    beta: np.ndarray
    outputs: np.ndarray
    crude: bool  # ini = 0 in Appendix A: the start is a crude approximation


class _Engine:
    """Appendix A for one problem and one loss of the clipped family."""

    def __init__(self, problem: BinaryProblem, params: MFNParams, monitor: Monitor,
                 clock: Stopwatch, iteration_offset: int = 0):
        if problem.bias == "free":
            raise ValueError("mfn solves the regularized-bias and no-bias problems only")
        self.problem = problem
        self.params = params
        self.monitor = monitor
        self.clock = clock
        X = problem.X
        self.X = X
        self.arrays = (X.indptr, X.indices, X.data)
        self.t = problem.y
        self.weight = problem.cost / problem.C  # c_i (sample weights)
        self.sqrt_weight = np.sqrt(self.weight)
        self.s = problem.effective_bias_scale
        self.iteration = iteration_offset
        self.cg_iterations = 0

    # -- helpers -------------------------------------------------------------------------------
    def full_outputs(self, beta: np.ndarray) -> np.ndarray:
        return csr_matvec(self.X, beta[:-1], self.s * beta[-1],
                          parallel=use_parallel(self.X.nnz, 0))

    def weighted_sum_rows(self, rows: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        """sum_k coefficients_k x~_{rows[k]} as a parameter vector."""
        out = np.empty(self.problem.n_features + 1)
        parallel = use_parallel(rows_nnz(self.X.indptr, rows), self.problem.n_features)
        out[:-1] = csr_rmatvec_rows(self.X, rows, coefficients, parallel=parallel)
        out[-1] = self.s * coefficients.sum()
        return out

    def objective(self, beta: np.ndarray, outputs: np.ndarray, loss: ClippedLoss) -> float:
        xi = 1.0 - self.t * outputs
        return 0.5 * float(beta @ beta) + float(self.problem.cost @ loss.value(xi))

    def relative_duality_gap(self, beta, outputs, loss: ClippedLoss, primal: float,
                             true_problem: BinaryProblem | None = None) -> float:
        """(P - D) / |P| with alpha_i = C_i L'(xi_i); for the hinge homotopy, the gap of the
        hinge problem itself (``true_problem``)."""
        xi = 1.0 - self.t * outputs
        alpha = self.problem.cost * loss.derivative(xi)
        support = np.flatnonzero(alpha)
        w_alpha = self.weighted_sum_rows(support, (alpha * self.t)[support])
        conj = _conjugate_term(true_problem or self.problem, alpha, loss)
        dual = float(alpha.sum()) - 0.5 * float(w_alpha @ w_alpha) - conj
        if true_problem is not None:
            primal = true_problem.objective_from_margins(beta, self.t * outputs)
        return (primal - dual) / max(abs(primal), 1e-300)

    # -- one run of Appendix A -------------------------------------------------------------------
    def run(self, state: MFNState, loss: ClippedLoss, epsilon: float,
            true_problem: BinaryProblem | None = None) -> tuple[str, str]:
        """Iterate steps 3-8 from ``state`` (updated in place).  Returns (status, message)."""
        p = self.params
        lam = 1.0 / (self.problem.C * loss.kappa)
        two_rounds = state.crude and p.first_round_epsilon is not None \
            and p.first_round_epsilon > epsilon
        eps = p.first_round_epsilon if two_rounds else epsilon
        first_call = state.crude
        beta, outputs = state.beta, state.outputs
        F_previous = self.objective(beta, outputs, loss)
        newton_steps = 0
        while True:
            # Step 3: the index sets at beta, and the least-squares problem on I1.
            xi = 1.0 - self.t * outputs
            in_quadratic = (xi > loss.xi_lo) & (xi < loss.xi_lo + loss.width)
            rows = np.flatnonzero(in_quadratic)
            saturated = np.flatnonzero(xi >= loss.xi_lo + loss.width)
            # Shift of eq. (23): q = (width / lambda) sum_{I2} c_i t_i x~_i; CGLS works on
            # beta~ = beta - q with targets t~_i = t_i (1 - xi_lo) - x~_i . q.
            targets = self.t[rows] * (1.0 - loss.xi_lo)
            if saturated.size:
                q = self.weighted_sum_rows(saturated, (self.weight * self.t)[saturated])
                q *= loss.width / lam
                targets = targets - csr_matvec_rows(self.X, rows, q[:-1], self.s * q[-1])
            else:
                q = None
            beta_bar = beta - q if q is not None else beta.copy()
            cg_cap = p.max_cgls_iterations
            if first_call and p.initial_cgls_iterations is not None:
                cg_cap = p.initial_cgls_iterations  # heuristic 1
            first_call = False
            parallel = use_parallel(rows_nnz(self.X.indptr, rows), self.problem.n_features)
            cg_iters, optimal = cgls(self.X, rows, self.sqrt_weight[rows], targets, beta_bar,
                                     bias_scale=self.s, lam=lam, eps=eps, max_iter=cg_cap,
                                     parallel=parallel)
            self.cg_iterations += cg_iters
            if q is not None:
                beta_bar += q
            if self.s == 0.0:
                beta_bar[-1] = 0.0
            newton_steps += 1
            self.iteration += 1

            # Step 5: optimality of beta_bar -- CGLS met (13) and no example changes set.
            outputs_bar = self.full_outputs(beta_bar)
            xi_bar = 1.0 - self.t * outputs_bar
            if optimal and _same_index_sets(xi_bar, in_quadratic, saturated, loss, p.tol):
                beta[:] = beta_bar
                outputs[:] = outputs_bar
                F = self.objective(beta, outputs, loss)
                if self._report(beta, outputs, loss, F, rows.size, saturated.size, cg_iters,
                                1.0, eps, true_problem):
                    return "stopped", self._stop_message
                # Step 8: the second round of heuristic 2, or the end.
                if two_rounds:
                    two_rounds = False
                    eps = epsilon
                    F_previous = F
                    continue
                return "converged", (
                    f"converged: CGLS rule (13) met at eps={eps:g} and the index sets are "
                    f"stable within tol={p.tol:g}"
                )

            # Step 6: exact line search on the ray beta -> beta_bar.
            direction = beta_bar - beta
            loss_l0, loss_r0, breakpoints, dl, dr = clipped_loss_breakpoints(
                xi, xi_bar, self.problem.cost * loss.kappa, loss.xi_lo, loss.width)
            l0 = float(beta @ direction) + loss_l0  # eq. (16), objective scale
            r0 = float(beta_bar @ direction) + loss_r0  # eq. (17)
            delta = piecewise_linear_root(l0, r0, breakpoints, dl, dr)

            # Step 7: move, recompute the index sets (next pass) and the objective.
            beta += delta * direction
            outputs += delta * (outputs_bar - outputs)
            F = self.objective(beta, outputs, loss)
            if self._report(beta, outputs, loss, F, rows.size, saturated.size, cg_iters, delta,
                            eps, true_problem):
                return "stopped", self._stop_message
            if F > F_previous * (1.0 + _RISE_SLACK) + 1e-300:
                return "failed", (
                    f"objective rose from {F_previous:.17g} to {F:.17g} at Newton iteration "
                    f"{newton_steps} (Appendix A step 7 error exit)"
                )
            if self.iteration >= p.max_iter:
                return "max_iter", f"itermax={p.max_iter} Newton iterations reached"
            F_previous = F

    def _report(self, beta, outputs, loss, F, n_quadratic, n_saturated, cg_iters, delta, eps,
                true_problem) -> bool:
        gap = self.relative_duality_gap(beta, outputs, loss, F, true_problem)
        primal = F if true_problem is None else \
            true_problem.objective_from_margins(beta, self.t * outputs)
        extras = {
            "optimality_measure": "relative_duality_gap",
            "active": int(n_quadratic),
            "cg_iterations": int(cg_iters),
            "step": float(delta),
            "epsilon": float(eps),
        }
        if n_saturated:
            extras["saturated"] = int(n_saturated)
        if true_problem is not None:
            extras["tau"] = float(-loss.xi_lo)
            extras["smoothed_objective"] = float(F)
        self.monitor.report(IterationRecord(self.iteration, self.clock(), primal, gap, extras))
        reason = self.monitor.stop_reason()
        if reason is not None:
            self._stop_message = f"stopped: {reason}"
            return True
        return False


def _same_index_sets(xi_bar, in_quadratic, saturated, loss: ClippedLoss, tol: float) -> bool:
    """Step 5 (b)-(c), generalized to three sets: every example stays within ``tol`` (in
    t_i y_i) of the set it was assigned to."""
    lo = loss.xi_lo
    hi = loss.xi_lo + loss.width
    out_low = ~in_quadratic
    if saturated.size:
        out_low[saturated] = False
    # (b) active examples keep t y <= 1 + tol, i.e. xi >= lo - tol (and <= hi + tol)
    quad_xi = xi_bar[in_quadratic]
    if np.any(quad_xi < lo - tol) or np.any(quad_xi > hi + tol):
        return False
    # (c) inactive examples keep t y >= 1 - tol
    if np.any(xi_bar[out_low] > lo + tol):
        return False
    return not (saturated.size and np.any(xi_bar[saturated] < hi - tol))


def _conjugate_term(problem: BinaryProblem, alpha: np.ndarray, loss: ClippedLoss) -> float:
    """sum_i C_i loss*(alpha_i / C_i) for the problem's own loss (the dual used for the gap)."""
    if problem.loss == "hinge":
        return 0.0  # alpha_i = C_i h'_tau in [0, C_i]: hinge-dual feasible
    # squared hinge and modified Huber: C_i loss*(v) = alpha^2 / (4 C_i) on their domains
    return float(np.sum(np.square(alpha) / (4.0 * problem.cost)))


def _loss_for(problem: BinaryProblem) -> ClippedLoss:
    if problem.loss == "squared_hinge":
        return SQUARED_HINGE
    if problem.loss == "modified_huber":
        return MODIFIED_HUBER
    raise ValueError(f"mfn cannot solve loss {problem.loss!r}")


def seed_from_weights(problem: BinaryProblem, w_guess: np.ndarray,
                      active: np.ndarray | None = None, refine: bool = True) -> np.ndarray:
    """beta_0 = (gamma w~, b_0) from a weight guess w~ (section 4.1, eqs. (8)-(9)).

    gamma and b_0 minimize lambda/2 (gamma^2 ||w~||^2 + b_0^2) + 1/2 sum_{i in I}
    (gamma w~.x_i + b_0 - t_i)^2 over the guessed active set I (all examples by default);
    with ``refine`` the set is reset to I(beta_0) once and (9) solved again (footnote 4).
    Without a bias, b_0 = 0 and gamma solves the one-dimensional problem.
    """
    lam = 1.0 / (2.0 * problem.C)
    w_guess = np.asarray(w_guess, dtype=np.float64)
    scores = csr_matvec(problem.X, w_guess)  # w~ . x_i, computed once
    t = problem.y
    s = problem.effective_bias_scale
    idx = np.arange(problem.n_samples) if active is None else np.asarray(active, dtype=np.int64)
    ww = float(w_guess @ w_guess)
    for _ in range(2 if refine else 1):
        u = scores[idx]
        ti = t[idx]
        p11 = lam * ww + float(u @ u)
        q1 = float(ti @ u)
        if s == 0.0:
            gamma, b0 = (q1 / p11 if p11 > 0 else 0.0), 0.0
        else:
            # the bias feature has value s: b~ = s b_0 enters as the constant of (8)
            p22 = lam / (s * s) + idx.size
            p12 = float(u.sum())
            q2 = float(ti.sum())
            det = p11 * p22 - p12 * p12
            gamma = (p22 * q1 - p12 * q2) / det
            b0 = (p11 * q2 - p12 * q1) / det
        beta = np.empty(problem.n_features + 1)
        beta[:-1] = gamma * w_guess
        beta[-1] = b0 / s if s else 0.0
        margins = t * (gamma * scores + b0)
        idx = np.flatnonzero(margins < 1.0)
    return beta


def dual_kkt_violation(problem: BinaryProblem, beta: np.ndarray) -> tuple[np.ndarray, float]:
    """Section 4.7: dual variables from the primal solution and their largest KKT violation.

    In the paper's scaling (lambda = 1/(2C), per-example weight c_i): alpha_i = -c_i t_i d_i /
    lambda on the active set, beta^ = sum alpha_i t_i x~_i, xi_i = lambda alpha_i / c_i,
    g_i = t_i y_i(beta^) + xi_i - 1; the violation is max(max_{alpha_i>0} |g_i|,
    max_{alpha_i=0} max(0, -g_i)).  The alpha returned are in ``design.md``'s scaling
    (alpha_i = 2 C_i max(0, 1 - m_i)), which differ from the paper's by the factor 1/(2C)... and
    are exactly ``problem.dual_from_primal(beta)`` for the squared hinge.
    """
    if problem.loss != "squared_hinge":
        raise ValueError("the dual KKT check of section 4.7 is for the squared hinge loss")
    lam = 1.0 / (2.0 * problem.C)
    c = problem.cost / problem.C
    t = problem.y
    outputs = problem.outputs(beta)
    d = outputs - t
    active = t * outputs < 1.0
    alpha_paper = np.where(active, -c * t * d / lam, 0.0)
    rows = np.flatnonzero(alpha_paper)
    s = problem.effective_bias_scale
    beta_hat = np.empty_like(beta)
    coefficients = (alpha_paper * t)[rows]
    beta_hat[:-1] = csr_rmatvec_rows(problem.X, rows, coefficients)
    beta_hat[-1] = s * coefficients.sum()
    xi = lam * alpha_paper / np.where(c > 0, c, 1.0)
    g = t * csr_matvec(problem.X, beta_hat[:-1], s * beta_hat[-1]) + xi - 1.0
    positive = alpha_paper > 0
    violation = max(
        float(np.max(np.abs(g[positive]), initial=0.0)),
        float(np.max(np.maximum(0.0, -g[~positive]), initial=0.0)),
    )
    return alpha_paper * (2.0 * problem.C * lam), violation


def solve(problem: BinaryProblem, params: MFNParams, monitor: Monitor | None = None,
          beta0: np.ndarray | None = None, continuation: bool = False) -> Solution:
    """Solve ``problem`` with L2-SVM-MFN.

    ``beta0``: a starting point (zero by default).  ``continuation=True`` marks it as the
    solution of a nearby problem (Appendix A's ini = 1: no heuristics, eps straight to the
    final value) -- the beta-seeding of a C path; otherwise the start counts as crude and both
    heuristics apply.
    """
    monitor = monitor or NullMonitor()
    clock = Stopwatch()
    engine = _Engine(problem, params, monitor, clock)
    beta = problem.zeros() if beta0 is None else np.array(beta0, dtype=np.float64)
    if beta.shape != (problem.n_features + 1,):
        raise ValueError(f"beta0 must have n_features + 1 = {problem.n_features + 1} entries")
    if problem.effective_bias_scale == 0.0:
        beta[-1] = 0.0
    crude = not continuation
    state = MFNState(beta, engine.full_outputs(beta), crude)
    extras: dict = {}

    if problem.loss == "hinge":
        status, message = _hinge_homotopy(engine, state, problem, params, extras)
    else:
        loss = _loss_for(problem)
        status, message = engine.run(state, loss, params.epsilon)
        if status == "converged" and params.dual_kkt_tolerance is not None:
            status, message = _drive_dual_kkt(engine, state, problem, params, loss, extras)
        if problem.loss == "squared_hinge":
            extras["dual_kkt_violation"] = dual_kkt_violation(problem, state.beta)[1]
    objective = problem.objective_from_margins(state.beta, problem.y * state.outputs)
    extras["cg_iterations"] = engine.cg_iterations
    return Solution(state.beta, objective, status, message, engine.iteration, extras)


def _drive_dual_kkt(engine: _Engine, state: MFNState, problem: BinaryProblem,
                    params: MFNParams, loss: ClippedLoss, extras: dict) -> tuple[str, str]:
    """Section 4.7 / 5: tighten eps by 10x until the dual KKT violation is within tau."""
    tau = params.dual_kkt_tolerance
    eps = params.epsilon
    state.crude = False
    while True:
        violation = dual_kkt_violation(problem, state.beta)[1]
        if violation <= tau:
            extras["final_epsilon"] = eps
            return "converged", (
                f"converged: maximum dual KKT violation {violation:.3g} <= {tau:g} "
                f"(eps={eps:g})"
            )
        eps /= 10.0
        if eps < 1e-15:
            return "max_iter", (
                f"dual KKT violation {violation:.3g} still above {tau:g} at eps={eps * 10:g}"
            )
        status, message = engine.run(state, loss, eps)
        if status != "converged":
            return status, message


def _hinge_homotopy(engine: _Engine, state: MFNState, problem: BinaryProblem,
                    params: MFNParams, extras: dict) -> tuple[str, str]:
    """Section 6: solve with tau_j = 2^-j, j = 0, 1, ..., seeding each with the last.

    Stops when the hinge duality gap relative to the hinge objective is at most
    ``hinge_gap_tolerance``; the gap is a certificate because alpha_i = C_i h'_tau(xi_i) lies
    in the hinge dual's box [0, C_i].
    """
    gap = np.inf
    for j in range(params.hinge_max_rounds + 1):
        tau = 2.0 ** (-j)
        loss = smoothed_hinge(tau)
        status, message = engine.run(state, loss, params.epsilon)
        if status != "converged":
            return status, f"tau={tau:g}: {message}"
        state.crude = False
        primal = problem.objective_from_margins(state.beta, problem.y * state.outputs)
        gap = engine.relative_duality_gap(state.beta, state.outputs, loss, primal, problem)
        extras["tau"] = tau
        extras["hinge_relative_gap"] = gap
        if gap <= params.hinge_gap_tolerance:
            return "converged", (
                f"converged: hinge duality gap {gap:.3g} (relative) <= "
                f"{params.hinge_gap_tolerance:g} after tau={tau:g}"
            )
    return "max_iter", (
        f"hinge homotopy ended at tau=2^-{params.hinge_max_rounds} with relative gap {gap:.3g}"
    )


def run(problem: BinaryProblem, params: MFNParams, monitor: Monitor) -> Solution:
    """Registry entry point."""
    return solve(problem, params, monitor)


def solve_path(problem: BinaryProblem, Cs, params: MFNParams | None = None,
               monitor: Monitor | None = None, seeding: bool = True) -> list[Solution]:
    """Solve for each C in ``Cs`` (in the given order), seeding each from the previous
    solution (beta-seeding, section 4.1 and Table 1) unless ``seeding=False``."""
    params = params or MFNParams()
    solutions = []
    beta = None
    for C in Cs:
        sub = BinaryProblem(problem.X, problem.y, C=float(C), loss=problem.loss,
                            bias=problem.bias, bias_scale=problem.bias_scale,
                            sample_weight=problem.sample_weight)
        solution = solve(sub, params.model_copy(update={"C": float(C)}), monitor,
                         beta0=beta if seeding else None, continuation=seeding and beta is not None)
        solutions.append(solution)
        beta = solution.beta
    return solutions


register(SolverSpec(
    name="mfn",
    params_model=MFNParams,
    run=run,
    description="Modified finite Newton method (L2-SVM-MFN): CGLS on the active set with exact "
                "line search; modified Huber, and hinge by a Huber homotopy.",
    reference="S. S. Keerthi and D. DeCoste, A modified finite Newton method for fast solution "
              "of large scale linear SVMs, JMLR 6 (2005) 341-361.",
))
