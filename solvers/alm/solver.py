"""SVM-ALM on one binary problem: Algorithms 1 (exact) and 2 (inexact) of Nie et al. (2014)."""

from __future__ import annotations

import math

import numba
import numpy as np

from solvers import config
from solvers.alm.kernels import fused_outputs_and_pass, multiplier_and_e_step, row_squares
from solvers.alm.params import ALM_SOLVES, ALMParams
from solvers.base import (
    Solution,
    Termination,
    WarmStart,
    replaced_keyword,
    warm_start_argument,
)
from solvers.core.gram import weighted_gram
from solvers.core.linalg import cgls_compact, cholesky_factor, cholesky_factor_solve, dot, gram_cost
from solvers.core.sparse import CompactRows, padded_width, thread_count, use_parallel
from solvers.monitor import Monitor, Reporter
from solvers.problems import BinaryProblem
from solvers.termination import format_gap

_REFRESH = 50  # recompute the outputs exactly every this many iterations (updates drift)


def default_params(problem: BinaryProblem) -> ALMParams:
    return ALMParams(C=problem.C, loss=problem.loss, bias=problem.bias,
                     bias_scale=problem.bias_scale,
                     **({"p": problem.p} if problem.loss_function.has_exponent else {}))


def use_cholesky(params: ALMParams, X) -> bool:
    """Whether the exact (w, b)-step is solved by a Cholesky factor (``w_solver``; "auto": the
    cost rule of ``config.ALM_AUTO_CHOLESKY_*``).  Raises ValueError for "cholesky" beyond
    ``config.ALM_CHOLESKY_MAX_PARAMS`` parameters."""
    if params.variant != "exact" or params.w_solver == "cgls":
        return False
    n = X.shape[1] + 1
    if params.w_solver == "cholesky":
        if n > config.ALM_CHOLESKY_MAX_PARAMS:
            raise ValueError(f"w_solver='cholesky' factorizes a dense {n} x {n} matrix; above "
                             f"{config.ALM_CHOLESKY_MAX_PARAMS} parameters use 'cgls' or "
                             f"'auto'")
        return True
    if n > config.ALM_AUTO_CHOLESKY_MAX_PARAMS:
        return False
    nnz = int(X.indptr[-1]) + X.shape[0]  # with the bias column
    build = gram_cost(X.indptr, np.arange(X.shape[0])) + X.shape[0]
    return (n ** 3 / 3.0 <= config.ALM_AUTO_CHOLESKY_PASSES * nnz
            and build <= config.ALM_AUTO_CHOLESKY_PASSES * nnz)


def scaled_dual_value(problem: BinaryProblem, alpha: np.ndarray,
                      beta_alpha: np.ndarray | None = None) -> float:
    """max over theta >= 0 of D(theta alpha), theta alpha in the dual range: for a dual point
    alpha (in its box, balanced), D(theta alpha) = theta S - theta^2 R - theta^q K with S =
    sum alpha, R = the regularizer at beta(alpha), K = the loss conjugate's sum (homogeneous
    of degree q = p / (p - 1) for the lp losses; the hinge's is 0 on its box, so theta <=
    min C_i / alpha_i).  Scaling keeps alpha balanced and in the box, so the best theta gives a
    dual value at least D(alpha) (theta = 1) for the price of three sums: far better early on,
    when ALM's multipliers are still off in scale (a9a, C = 1, mu = 0.3 C: relative gap 7.3
    unscaled at iteration 6, when the objective is within 1e-3 of the optimum)."""
    if beta_alpha is None:
        beta_alpha = problem.primal_from_dual(alpha)
    S = float(alpha.sum())
    R = problem.regularizer(beta_alpha)
    K = problem.loss_function.conjugate_sum(alpha, problem.cost)
    unscaled = S - R - K
    p = problem.loss_function.p
    if not math.isfinite(K) or S <= 0.0:
        return unscaled
    if p == 1.0:  # the hinge: K = 0 in the box
        positive = alpha > 0.0
        cap = float(np.min(problem.cost[positive] / alpha[positive])) if positive.any() \
            else math.inf
        theta = min(S / (2.0 * R), cap) if R > 0.0 else cap
        if not math.isfinite(theta):
            return unscaled
    elif p == 2.0 or K <= 0.0:
        theta = S / (2.0 * (R + K)) if R + K > 0.0 else 1.0
    else:  # D'(theta) = S - 2 R theta - q K theta^(q - 1), decreasing: bisection
        q = p / (p - 1.0)
        hi = (S / (q * K)) ** (1.0 / (q - 1.0))
        if R > 0.0:
            hi = min(hi, S / (2.0 * R))
        lo = 0.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if S - 2.0 * R * mid - q * K * mid ** (q - 1.0) > 0.0:
                lo = mid
            else:
                hi = mid
        theta = 0.5 * (lo + hi)
    q_power = 0.0 if p == 1.0 else theta ** (p / (p - 1.0))
    return max(unscaled, theta * S - theta * theta * R - q_power * K)


def initial_mu(problem: BinaryProblem) -> float:
    """mu_1 when ``mu0`` is not given: C 5^-(p - 1), i.e. C / 5 for the squared hinge and C
    for the hinge, geometric in between (the package docstring: measured at p = 1, 1.5, 2)."""
    return problem.C * 5.0 ** -(problem.loss_function.p - 1.0)


# mu_rule="active" (the package docstring gives the measurements): at these iterations, mu
# is lowered to MU_ENERGY_FACTOR C x the share of ||X~||_F^2 in the rows where the loss is
# active, when that is below mu / MU_CHANGE (a refactorization each time); never below
# MU_FLOOR C.  Only lowered: raising it (or checking before iteration 10, when the active set
# is still far from the final one) cost iterations on svmguide1 and australian.
MU_CHECKS = (10, 20, 40, 80)
# Over-relaxation of the exact variant (the package docstring gives the measurements); the
# inexact variant's single gradient step does not take it (it lost on a9a, w8a and ijcnn1).
RELAXATION = 1.8
MU_ENERGY_FACTOR = 1.5
MU_CHANGE = 1.5
MU_FLOOR = 0.01


def relaxation(params: ALMParams) -> float:
    """The over-relaxation factor of the e-step's output in (9) and (14) (None: RELAXATION
    for the exact variant, 1 for the inexact one)."""
    if params.relaxation is not None:
        return params.relaxation
    return RELAXATION if params.variant == "exact" else 1.0


def adapts_mu(problem: BinaryProblem, params: ALMParams) -> bool:
    """Whether mu is lowered from the active rows (``mu_rule``; "auto": the exact variant on
    the squared hinge with the default mu0, a fixed rho = 1 and no residual balancing, where
    it was measured)."""
    if params.mu_rule == "fixed" or params.residual_balancing or params.rho != 1.0:
        return False
    if params.mu_rule == "active":
        return True
    return (problem.loss_function.p == 2.0 and params.mu0 is None
            and params.variant == "exact")


def active_mu(problem: BinaryProblem, energy: np.ndarray, e: np.ndarray) -> float:
    """MU_ENERGY_FACTOR C E, E the share of sum_i ||x~_i||^2 in the rows where the loss is
    active (y_i e_i > 0 after the e-step), at least MU_FLOOR C."""
    total = float(energy.sum())
    share = float(energy[problem.y * e > 0.0].sum()) / total if total > 0 else 1.0
    return problem.C * max(MU_ENERGY_FACTOR * share, MU_FLOOR)


class _Iterate:
    """(w, b), the outputs X~ beta, e, lambda and the targets z of (14), with the products
    through the core's row kernels (one block per Numba thread when that pays)."""

    def __init__(self, problem: BinaryProblem, beta: np.ndarray, lam: np.ndarray):
        self.problem = problem
        X = problem.X
        n_blocks = numba.get_num_threads() if use_parallel(X.nnz, X.shape[1]) else 1
        # binary data (a9a, w8a): the products read the column indices only
        unit = X.nnz > 0 and bool(np.all(X.data == 1.0))
        self.rows = CompactRows.all_rows(X, n_blocks=n_blocks, unit_values=unit)
        self.s = problem.effective_bias_scale
        self.r = problem.bias_regularization
        self.beta = beta
        self.lam = lam
        self.e = np.zeros(problem.n_samples)
        self.z = np.empty(problem.n_samples)
        self.gram = None  # X~'X~ (lower triangle) for the factorized exact step
        self.factor_mu = None
        self.factor = None
        self.factorizations = 0
        self.rhs = None  # X~'z for the factorized step, when the fused sweep has it
        self.buffers = self.stats = None
        self._row_energy = None
        self.refresh_outputs()

    def build_gram(self) -> None:
        """X~'X~ = sum_i x~_i x~_i' (lower triangle), once per solve: it does not depend on
        mu, e or lambda."""
        X = self.problem.X
        self.gram = weighted_gram(X, np.ones(X.shape[0]), extra_value=self.s, mirror=False)

    def row_energy(self) -> np.ndarray:
        """||x~_i||^2 per row (the bias entry s^2 included), computed once, when first
        asked for (at the first check of mu_rule="active", not before the first records)."""
        if self._row_energy is None:
            X = self.problem.X
            self._row_energy = row_squares(X.indptr, X.data, self.rows.unit_values,
                                           self.s * self.s)
        return self._row_energy

    def refresh_outputs(self) -> None:
        self.outputs = self.rows.matvec(self.beta[:-1], self.s * self.beta[-1])

    def adjoint(self, coef: np.ndarray) -> np.ndarray:
        """X~' coef as a parameter vector."""
        out = np.empty(self.beta.shape[0])
        out[:-1] = self.rows.rmatvec(coef)
        out[-1] = self.s * float(coef.sum())
        return out

    def exact_step(self, mu: float, eps: float, max_iter: int) -> int:
        """(14) by CGLS from the current (w, b): min 1/(2 mu) ||beta||_D^2 + 1/2 ||X~ beta -
        z||^2.  Pass 0's residual z - X~ beta comes from the outputs at hand; CGLS returns the
        final residual, from which the new outputs follow without a product."""
        residual = self.z - self.outputs
        gradient = self.adjoint(residual)
        gradient[:-1] -= self.beta[:-1] / mu
        gradient[-1] -= self.r * self.beta[-1] / mu
        iterations, _ = cgls_compact(self.rows, np.ones(residual.shape[0]), None, self.beta,
                                     bias_scale=self.s, lam=1.0 / mu, reg_bias=self.r,
                                     eps=eps, max_iter=max_iter, residual=residual,
                                     gradient=gradient)
        self.outputs = self.z - residual
        return iterations

    def factorized_step(self, mu: float) -> None:
        """(14) exactly: (X~'X~ + D / mu) beta = X~'z by the Cholesky factor, refactorized
        only when mu has changed.  Two products: X~'z and the new outputs X~ beta."""
        self.rhs = self.adjoint(self.z)
        self.factorized_beta(mu)
        self.refresh_outputs()

    def factorized_beta(self, mu: float) -> None:
        """beta <- (X~'X~ + D / mu)^-1 rhs, refactorizing when mu has changed."""
        if self.factor_mu != mu:
            M = self.gram.copy()
            diagonal = np.einsum("ii->i", M)
            diagonal[:-1] += 1.0 / mu
            diagonal[-1] += self.r / mu
            if self.s == 0.0:
                diagonal[-1] = 1.0  # b = 0: its row and column of X~'X~ are 0
            self.factor = cholesky_factor(M)
            if self.factor is None:
                raise FloatingPointError("the Cholesky factorization of X~'X~ + D / mu failed")
            self.factor_mu = mu
            self.factorizations += 1
        beta = cholesky_factor_solve(self.factor, self.rhs)
        if beta is None:
            raise FloatingPointError("non-finite (w, b)-step")
        if self.s == 0.0:
            beta[-1] = 0.0
        self.beta[:] = beta

    def fused_step(self, mu: float, mu_next: float, loss, relax: float) -> tuple[float, float]:
        """The factorized (w, b)-step and the pass after it in one sweep over the rows
        (:func:`solvers.alm.kernels.fused_outputs_and_pass`): beta from the factor and the
        right-hand side X~'z the previous sweep accumulated, then the new outputs, the
        multiplier step (9) with ``mu``, the e-step (10) with ``mu_next`` and the next X~'z.
        Returns (||X~ beta - X~ beta_old||, ||primal residual||^2)."""
        if self.rhs is None:
            self.rhs = self.adjoint(self.z)
        self.factorized_beta(mu)
        if self.buffers is None:
            self.buffers = np.empty((self.rows.n_blocks, padded_width(self.beta.shape[0] - 1)))
            self.stats = np.empty((self.rows.n_blocks, 4))
        rhs = np.empty(self.beta.shape[0] - 1)
        problem = self.problem
        with thread_count(self.rows.n_blocks):
            diff, primal, zsum, _ = fused_outputs_and_pass(
                loss.code, loss.p, self.rows, self.beta[:-1], self.s * self.beta[-1],
                problem.y, problem.cost, self.outputs, self.e, self.lam, self.z, mu, mu_next,
                self.buffers, self.stats, rhs, relax)
        self.rhs = np.append(rhs, self.s * zsum)
        return math.sqrt(diff), primal

    def inexact_step(self, mu: float) -> None:
        """One steepest-descent step on (14) with the exact step length: the gradient (16)
        (halved, as the paper writes it) g = X~'(X~ beta - z) + D beta / mu, and (18)
        s = ||g||^2 / (||X~ g||^2 + ||g||_D^2 / mu).  Two products: X~'(.) for g and X~ g for
        the denominator; the paper's third, X~ beta at the new point, is the update
        outputs - s X~ g."""
        g = self.adjoint(self.outputs - self.z)
        g[:-1] += self.beta[:-1] / mu
        g[-1] += self.r * self.beta[-1] / mu
        if self.s == 0.0:
            g[-1] = 0.0
        gg = dot(g, g)
        if gg == 0.0:
            return
        q = self.rows.matvec(g[:-1], self.s * g[-1])
        denominator = dot(q, q) + (gg - (1.0 - self.r) * g[-1] * g[-1]) / mu
        step = gg / denominator
        self.beta -= step * g
        self.outputs -= step * q


def _start(problem: BinaryProblem, params: ALMParams, start: WarmStart | None):
    """(beta, lambda) of the first iteration: the cold start (w = 0, or 1 with
    ``cold_start="one"``; b = 0; lambda = 0), or ``start.beta`` and lambda = -y alpha with
    alpha ``start.dual`` or, without one, the balanced KKT map of ``start.beta``."""
    beta_given = start is not None and start.beta is not None
    if beta_given:
        beta = np.array(start.beta, dtype=np.float64)
        if beta.shape != (problem.n_features + 1,):
            raise ValueError("start.beta must have n_features + 1 entries")
    else:
        beta = problem.zeros()
        if params.cold_start == "one":
            beta[:-1] = 1.0
    if problem.bias == "none":
        beta[-1] = 0.0
    if start is not None and start.dual is not None:
        lam = -problem.y * np.asarray(start.dual, dtype=np.float64)
    elif beta_given:
        # the multipliers a warm start implies: lambda = -y alpha, alpha the KKT map
        lam = -problem.y * problem.balance(problem.dual_from_primal(beta))
    else:
        lam = np.zeros(problem.n_samples)  # Algorithms 1-2
    return beta, lam


def _weights_start(problem: BinaryProblem, w_guess) -> np.ndarray:
    """The deprecated ``w_guess``'s beta: (w_guess, 0)."""
    w_guess = np.asarray(w_guess, dtype=np.float64)
    if w_guess.shape != (problem.n_features,):
        raise ValueError(f"w_guess must have n_features = {problem.n_features} entries")
    return problem.join(w_guess, 0.0)


def solve(problem: BinaryProblem, params: ALMParams | None = None,
          monitor: Monitor | None = None, start: WarmStart | None = None, *,
          beta0: np.ndarray | None = None, w_guess: np.ndarray | None = None,
          lambda0: np.ndarray | None = None) -> Solution:
    """Solve a binary ``problem`` (hinge, squared hinge or lp loss; any bias mode) by SVM-ALM.

    Start: w = 0 (or the paper's w = 1 with ``cold_start="one"``), b = 0, lambda = 0; or the
    :class:`~solvers.base.WarmStart` ``start``: (w, b) = ``start.beta`` and the multipliers
    lambda = -y alpha, alpha = ``start.dual`` or, without it, the balanced KKT map of
    ``start.beta`` (its ``state`` and ``model`` are ignored).  C, the loss and the bias are
    the problem's.

    Deprecated spellings, kept for one release: ``beta0`` (``start.beta``), ``w_guess``
    (``start.beta`` = (w_guess, 0)) and ``lambda0`` (``start.dual`` = -y lambda0).
    """
    ALM_SOLVES.require_problem(problem, "alm")
    params = params or default_params(problem)
    start = replaced_keyword(warm_start_argument(start), "beta0", beta0, "beta")
    start = replaced_keyword(
        start, "w_guess", None if w_guess is None else _weights_start(problem, w_guess),
        "beta", "start=WarmStart(beta=problem.join(w_guess, 0.0))")
    start = replaced_keyword(
        start, "lambda0",
        None if lambda0 is None else -problem.y * np.asarray(lambda0, dtype=np.float64),
        "dual", "start=WarmStart(dual=alpha), alpha = -y lambda0")
    reporter = Reporter(monitor, "relative_duality_gap")
    loss = problem.loss_function
    y = problem.y
    lower, upper = problem.dual_bounds()
    beta, lam = _start(problem, params, start)
    it = _Iterate(problem, beta, lam)
    exact = params.variant == "exact"
    factorized = use_cholesky(params, problem.X)
    if factorized:
        it.build_gram()

    mu = min(params.mu0 if params.mu0 is not None else initial_mu(problem), params.mu_max)
    mu_floor = mu * 1e-6
    relax = relaxation(params)
    multiplier_and_e_step(loss.code, loss.p, y, problem.cost, it.outputs, it.e, it.lam, it.z,
                          mu, mu, False, relax=relax)
    grad0 = None
    if params.stop_rule == "paper":
        grad0 = float(np.linalg.norm(problem.gradient(beta)))
    previous_objective = math.inf
    status, message = Termination.MAX_ITER, f"{params.max_iter} iterations"
    best = (math.inf, beta.copy())
    best_dual = -math.inf
    total_cg = 0
    dual_evaluations = 0
    iteration = 0
    gap = math.inf
    adapt = adapts_mu(problem, params)
    fused = factorized and not params.residual_balancing
    for iteration in range(1, params.max_iter + 1):
        # the next mu (residual balancing: after the step, from its residuals)
        mu_next = min(mu * params.rho, params.mu_max)
        if adapt and iteration in MU_CHECKS:
            target = min(active_mu(problem, it.row_energy(), it.e), params.mu_max)
            if target < mu_next / MU_CHANGE:
                mu_next = target
        # (w, b)-step (14) with e fixed
        old_outputs = it.outputs
        cg = 0
        if fused:
            # the step, then the multiplier step (9) with mu and the e-step (10) with the
            # next mu, in one sweep over the rows
            try:
                change, primal_sq = it.fused_step(mu, mu_next, loss, relax)
            except FloatingPointError as error:
                status, message = Termination.NUMERICAL_ERROR, str(error)
                break
            dual_residual = mu * change
        elif factorized:
            try:
                it.factorized_step(mu)
            except FloatingPointError as error:
                status, message = Termination.NUMERICAL_ERROR, str(error)
                break
        elif exact:
            eps = params.cgls_tol
            if params.cgls_gap_factor > 0:
                eps = max(min(eps, params.cgls_gap_factor * gap), 1e-12)
            cg = it.exact_step(mu, eps, params.max_cgls_iter)
            total_cg += cg
        else:
            it.outputs = old_outputs.copy()
            it.inexact_step(mu)
        if not fused:
            if not factorized and iteration % _REFRESH == 0:
                it.refresh_outputs()
            dual_residual = mu * float(np.linalg.norm(it.outputs - old_outputs))
            if params.residual_balancing:
                primal = float(np.linalg.norm(it.outputs - y + it.e))
                if primal > params.balance_ratio * dual_residual:
                    mu_next = min(mu * params.balance_factor, params.mu_max)
                elif dual_residual > params.balance_ratio * primal:
                    mu_next = max(mu / params.balance_factor, mu_floor)
                else:
                    mu_next = mu
            # one pass: multiplier step (9) with mu, e-step (10) with the next mu
            primal_sq = multiplier_and_e_step(loss.code, loss.p, y, problem.cost, it.outputs,
                                              it.e, it.lam, it.z, mu, mu_next, True,
                                              previous=old_outputs, relax=relax)
        objective = problem.objective_from_slacks(it.beta, 1.0 - y * it.outputs)
        # the certificate: alpha = -y lambda in the dual range, balanced for the free bias, at
        # the first and every gap_every-th iteration; in between, the best dual value so far
        # (any dual value bounds P* from below, so P(beta_k) - D_best bounds P(beta_k) - P*)
        if iteration == 1 or iteration % params.gap_every == 0:
            alpha = np.clip(-y * it.lam, lower, upper)
            if problem.bias == "free":
                alpha = problem.balance(alpha)
            # beta(alpha) = X~'(alpha y) by the iterate's row kernels (binary values: indices
            # only), as problem.primal_from_dual has it (no bias entry unless regularized)
            beta_alpha = it.adjoint(alpha * y)
            if problem.bias != "regularized":
                beta_alpha[-1] = 0.0
            best_dual = max(best_dual, scaled_dual_value(problem, alpha, beta_alpha))
            dual_evaluations += 1
        gap = (objective - best_dual) / max(abs(objective), 1e-300)
        if objective < best[0]:
            best = (objective, it.beta.copy())
        extras = {"primal_residual": math.sqrt(primal_sq), "dual_residual": dual_residual,
                  "mu": mu}
        if exact:
            extras["cgls_iterations"] = cg
        stop_paper = False
        if params.stop_rule == "paper":
            grad = float(np.linalg.norm(problem.gradient(it.beta)))
            change = abs(previous_objective - objective) / max(abs(objective), 1e-300)
            extras["gradient_norm"] = grad
            stop_paper = grad <= params.grad_tol * grad0 or change < params.objective_change_tol
            previous_objective = objective
        if reporter(iteration, objective, gap, **extras):
            status, message = Termination.STOPPED, reporter.stop_message
            break
        if not (math.isfinite(objective) and math.isfinite(gap)):
            status, message = Termination.NUMERICAL_ERROR, "non-finite objective or gap"
            break
        if params.stop_rule == "gap" and gap <= params.tol:
            status, message = Termination.CONVERGED, f"relative duality gap {format_gap(gap)}"
            break
        if stop_paper:
            status, message = Termination.CONVERGED, "the paper's stopping rule"
            break
        mu = mu_next
    final = it.beta
    if status == Termination.NUMERICAL_ERROR:
        final = best[1]
    objective = problem.objective(final)
    extras = {"variant": params.variant, "relative_duality_gap": gap, "mu": mu,
              "w_solver": "cholesky" if factorized else ("cgls" if exact else "gradient"),
              "dual_evaluations": dual_evaluations, "factorizations": it.factorizations,
              "relaxation": relax}
    if exact:
        extras["cgls_iterations"] = total_cg
    return Solution(final, objective, status, message, iteration, extras)


def run(problem: BinaryProblem, params: ALMParams, monitor: Monitor,
        start: WarmStart | None = None) -> Solution:
    """The spec's entry point (binary problems; the multiclass layer does one-vs-rest);
    ``start``: a :class:`~solvers.base.WarmStart`, e.g. the parameter vector of a nearby
    problem (another C), read as :func:`solve` reads it."""
    return solve(problem, params, monitor, start=warm_start_argument(start))
