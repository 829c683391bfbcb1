"""Mehrotra's predictor-corrector method on the SVM problem (1), as OOQP implements it
(Gertz & Wright 2003; OOQP's ``MehrotraSolver``, ``Solver::finalStepLength``,
``Solver::defaultStart``, ``Solver::defaultStatus`` and the ``Svm`` module's variables and
residuals).  See the package docstring for the problem and the parameter mapping.

One loop, :func:`solve_rows`, over the rows of :class:`solvers.problems.mpc_rows.MPCRows`:
it holds (w, beta) and the scalars, the rows the per-example part of the iterate and the data
(:class:`LocalMPCRows` in this process, ``distributed.PartitionedMPCRows`` on a distributed
dataset's partitions)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.base import Solution, WarmStart, warm_start_argument
from solvers.core.linalg import dot, single_threaded_blas
from solvers.interior_point.auto import choose_linear_solver
from solvers.interior_point.linsys import (
    DirectSolver,
    NormalOperator,
    PCGSolver,
    SingularSystemError,
)
from solvers.interior_point.params import INTERIOR_POINT_SOLVES, InteriorPointParams
from solvers.monitor import Monitor, Reporter
from solvers.problems import BinaryProblem
from solvers.problems.mpc_rows import MATRIX_FREE, MPCPoint, MPCRows
from solvers.termination import Termination, format_gap


@dataclass
class Iterate:
    """(w, beta, v, z, u, s) of (4): w has n_features + 1 entries (the last the coefficient of
    the constant column, inert without the regularized bias); beta the free bias (0
    otherwise); v the multipliers of the margin constraints, z the hinge slacks, u the
    multipliers of z >= 0, s the slacks of the margin constraints.

    The squared hinge (``hinge=False``, the extension of the issue: penalty sum tau_i z_i^2
    with z free) has no z >= 0 and no u: u stays 0 and the complementary pairs are (s, v)
    only."""

    w: np.ndarray
    beta: float
    v: np.ndarray
    z: np.ndarray
    u: np.ndarray
    s: np.ndarray
    hinge: bool = True

    def copy(self) -> Iterate:
        return Iterate(self.w.copy(), self.beta, self.v.copy(), self.z.copy(), self.u.copy(),
                       self.s.copy(), self.hinge)

    def pairs(self, step: Iterate | None = None):
        """The complementary (primal, dual) pairs: (s, v) and, for the hinge, (z, u)."""
        if step is None:
            return ((self.s, self.v), (self.z, self.u)) if self.hinge else ((self.s, self.v),)
        if self.hinge:
            return ((self.s, step.s, self.v, step.v), (self.z, step.z, self.u, step.u))
        return ((self.s, step.s, self.v, step.v),)

    def axpy(self, alpha: float, step: Iterate) -> None:
        self.w += alpha * step.w
        self.beta += alpha * step.beta
        self.axpy_examples(alpha, step)

    def axpy_examples(self, alpha: float, step: Iterate) -> None:
        """The per-example part of :meth:`axpy` (v, z, u, s): what the rows keep, (w, beta)
        being the loop's."""
        self.v += alpha * step.v
        self.z += alpha * step.z
        self.u += alpha * step.u
        self.s += alpha * step.s

    def mu(self) -> float:
        """mu = (v's + u'z) / (2n) (v's / n for the squared hinge)."""
        pairs = self.pairs()
        return sum(dot(p, q) for p, q in pairs) / (len(pairs) * self.v.shape[0])

    def mu_step(self, step: Iterate, alpha: float) -> float:
        """mu at the point alpha along ``step`` (OOQP's ``mustep``)."""
        pairs = self.pairs(step)
        return sum(dot(p + alpha * dp, q + alpha * dq) for p, dp, q, dq in pairs) \
            / (len(pairs) * self.v.shape[0])

    def violation(self) -> tuple[float, float]:
        """(largest negativity of the primal variables s, z, of the duals v, u), 0 when
        none."""
        pairs = self.pairs()
        primal = max([0.0] + [-float(np.min(p, initial=0.0)) for p, _ in pairs])
        dual = max([0.0] + [-float(np.min(q, initial=0.0)) for _, q in pairs])
        return primal, dual

    def mu_step_coefficients(self, step: Iterate) -> tuple[float, float, float]:
        """(c0, c1, c2) with sum over the pairs of (p + alpha dp)'(q + alpha dq) = c0 + alpha
        c1 + alpha^2 c2: mu along ``step`` is (c0 + alpha c1 + alpha^2 c2) / (pairs * n).
        Sums over examples, so a distributed driver adds the partitions' coefficients and
        evaluates mu at any alpha without another pass (:func:`mu_from_coefficients`)."""
        c0 = c1 = c2 = 0.0
        for p, dp, q, dq in self.pairs(step):
            c0 += dot(p, q)
            c1 += dot(p, dq) + dot(dp, q)
            c2 += dot(dp, dq)
        return c0, c1, c2


def mu_from_coefficients(coefficients, alpha: float, n_pairs: int, n: int) -> float:
    """mu at alpha from :meth:`Iterate.mu_step_coefficients` (summed over partitions)."""
    c0, c1, c2 = coefficients
    return (c0 + alpha * (c1 + alpha * c2)) / (n_pairs * n)


def step_bound(x: Iterate, step: Iterate) -> float:
    """The largest alpha <= 1 keeping s, z, u, v >= 0 (OOQP's ``stepbound``)."""
    bound = 1.0
    for primal, d_primal, dual, d_dual in x.pairs(step):
        for value, delta in ((primal, d_primal), (dual, d_dual)):
            negative = delta < 0.0
            if negative.any():
                bound = min(bound, float(np.min(-value[negative] / delta[negative])))
    return bound


def blocking_candidates(x: Iterate, step: Iterate) -> list:
    """For each complementary pair of ``x.pairs(step)`` and each side (primal, which = 1;
    dual, which = 2), in that order: (ratio, (primal value, primal step, dual value, dual
    step, which)) at the first example of smallest ratio -value / delta over delta < 0, or
    None when no entry decreases.  Per partition on distributed data: the driver keeps, per
    group, the smallest ratio over the partitions in row order (the first on ties) and folds
    the groups with :func:`fold_blocking`, which is the single machine's choice."""
    out = []
    for primal, d_primal, dual, d_dual in x.pairs(step):
        for which, value, delta in ((1, primal, d_primal), (2, dual, d_dual)):
            negative = np.flatnonzero(delta < 0.0)
            if negative.shape[0] == 0:
                out.append(None)
                continue
            ratios = -value[negative] / delta[negative]
            k = int(np.argmin(ratios))
            i = negative[k]
            out.append((float(ratios[k]), (float(primal[i]), float(d_primal[i]),
                                           float(dual[i]), float(d_dual[i]), which)))
    return out


def fold_blocking(candidates) -> tuple[float, tuple | None]:
    """(alpha_max, blocking pair) from :func:`blocking_candidates`' groups in order: the
    largest step <= 1 keeping every pair non-negative, and the pair that blocks it (the
    last group on ties, as OOQP's loop)."""
    best = 1.0
    blocking = None
    for candidate in candidates:
        if candidate is not None and candidate[0] <= best:
            best, blocking = candidate
    return best, blocking


def mehrotra_step_length(max_alpha: float, blocking, mu_at, gamma_f: float) -> float:
    """Mehrotra's heuristic given the blocking pair (``blocking``: primal value, primal
    step, dual value, dual step, which; None when nothing blocks) and ``mu_at(alpha)``, the
    complementarity along the step (called at alpha_max only)."""
    gamma_a = 1.0 / (1.0 - gamma_f)
    if blocking is None:
        alpha = 1.0
    else:
        mu_full = mu_at(max_alpha) / gamma_a
        p_value, p_step, d_value, d_step, which = blocking
        if which == 1:
            partner = d_value + max_alpha * d_step
            alpha = (-p_value + mu_full / partner) / p_step if partner > 0.0 else 0.0
        else:
            partner = p_value + max_alpha * p_step
            alpha = (-d_value + mu_full / partner) / d_step if partner > 0.0 else 0.0
        alpha = min(alpha, max_alpha)
    alpha = max(alpha, gamma_f * max_alpha)
    return alpha * 0.99999999


def final_step_length(x: Iterate, step: Iterate, gamma_f: float) -> float:
    """Mehrotra's step-length heuristic (OOQP's ``Solver::finalStepLength``): find the
    blocking complementary pair (primal s_i or z_i, dual v_i or u_i) and the largest step
    alpha_max; aim the blocking product at mu_full / gamma_a, mu_full the complementarity at
    alpha_max and gamma_a = 1 / (1 - gamma_f); take at least gamma_f alpha_max."""
    max_alpha, blocking = fold_blocking(blocking_candidates(x, step))
    return mehrotra_step_length(max_alpha, blocking, lambda a: x.mu_step(step, a), gamma_f)


@dataclass
class Residuals:
    """r_w, rho_beta, r_z, r_s of (4) at a point, OOQP's duality gap (the complementarity
    the residuals leave, (tau - v)'z + (Yw - beta d + z - e)'v) and the infinity norm of
    (r_w, rho_beta, r_z, r_s)."""

    r_w: np.ndarray
    rho: float
    r_z: np.ndarray
    r_s: np.ndarray
    gap: float
    norm: float
    outputs: np.ndarray  # x~_i . w (without the free bias)

    def norms(self) -> dict[str, float]:
        return {"r_w": float(np.max(np.abs(self.r_w))), "rho_beta": abs(self.rho),
                "r_z": float(np.max(np.abs(self.r_z))), "r_s": float(np.max(np.abs(self.r_s)))}


class SVMQP:
    """Problem (1) with its data: labels d, costs tau_i = C_i, the operator of (11).

    The squared hinge (extension): minimize 1/2||w||^2 + sum tau_i z_i^2 subject to
    d_i (x_i'w - beta) >= 1 - z_i, z free (docs/design.md's C max(0, 1 - m)^2, no 1/2).  Its
    conditions replace (4c) by r_z = 2 tau z - v and drop (4e), u and z >= 0; the Newton
    system reduces the same way with dz = (dv - r_z) / (2 tau), so Omega = V^-1 S + 1/(2 tau)
    and r_Omega = r_s + V^-1 r_v - r_z / (2 tau)."""

    def __init__(self, problem: BinaryProblem):
        INTERIOR_POINT_SOLVES.require_problem(problem, "interior_point")
        # the hinge's QP (1), slacks z >= 0 with multipliers u, for a piecewise-linear loss;
        # else the squared hinge's penalty tau z^2 (the declaration admits these two)
        self.hinge = problem.loss_function.piecewise_linear
        self.problem = problem
        self.X = problem.X
        self.d = problem.y
        self.tau = problem.cost
        self.free = problem.bias == "free"
        c = problem.bias_scale if problem.bias == "regularized" else 0.0
        self.op = NormalOperator(self.X, c, self.free)
        self.n = self.X.shape[0]
        self.data_max = float(np.max(np.abs(self.X.data), initial=0.0))
        self.dnorm = data_norm(self.data_max, c)

    def residual_pieces(self, x: Iterate):
        """The sums over examples and the per-example vectors of the residuals:
        (X~'(d v), rho_beta = d'v, r_z, r_s, OOQP's gap, outputs X~w)."""
        d = self.d
        outputs = self.op.forward(x.w)
        adjoint_dv = self.op.adjoint(d * x.v)
        rho = dot(d, x.v) if self.free else 0.0
        margin_part = d * outputs - x.beta * d + x.z - 1.0
        if self.hinge:
            r_z = self.tau - x.v - x.u
            gap = dot(self.tau - x.v, x.z) + dot(margin_part, x.v)
        else:
            r_z = 2.0 * self.tau * x.z - x.v
            gap = dot(margin_part, x.v)
        r_s = margin_part - x.s
        return adjoint_dv, rho, r_z, r_s, gap, outputs

    def residuals(self, x: Iterate) -> Residuals:
        adjoint_dv, rho, r_z, r_s, gap, outputs = self.residual_pieces(x)
        r_w = x.w - adjoint_dv
        norm = max(float(np.max(np.abs(r_w))), abs(rho), float(np.max(np.abs(r_z))),
                   float(np.max(np.abs(r_s))))
        return Residuals(r_w, rho, r_z, r_s, gap, norm, outputs)

    def set_weights(self, x: Iterate) -> None:
        """Omega = V^-1 S + U^-1 Z (7) at ``x`` (V^-1 S + 1/(2 tau): squared hinge)."""
        other = x.z / x.u if self.hinge else 0.5 / self.tau
        self.op.set_weights(1.0 / (x.s / x.v + other))

    def newton_step(self, x: Iterate, res: Residuals, r_u: np.ndarray, r_v: np.ndarray,
                    linsys, corrector: bool, mu: float, w0: np.ndarray | None = None) -> Iterate:
        """The solution of (5) with the complementarity right-hand sides r_u, r_v, by the
        reduction (6)-(10) and the back substitutions of section 3."""
        zu, r_z_hat, r_omega, q = self.reduced_vectors(x, res.r_s, res.r_z, r_u, r_v)
        adjoint_dq, dq = self.reduced_products(q)
        dw, dbeta = solve_reduced(res.r_w, res.rho, adjoint_dq, dq, self.op.y_d,
                                  self.op.sigma, self.free, linsys, w0, corrector, mu)
        return self.back_substitute(x, r_u, r_v, zu, r_z_hat, r_omega, dw, dbeta)

    def reduced_vectors(self, x: Iterate, r_s, r_z, r_u, r_v):
        """(6)-(7) per example: (U^-1 Z or 1/(2 tau), r^_z, r_Omega, q = Omega^-1 r_Omega).
        Linear in (r_s, r_z, r_u, r_v) together."""
        if self.hinge:
            zu = x.z / x.u
            r_z_hat = r_z + r_u / x.z                      # (6a)
        else:
            zu = 0.5 / self.tau
            r_z_hat = r_z
        r_s_hat = r_s + r_v / x.v                          # (6b)
        r_omega = r_s_hat - zu * r_z_hat
        return zu, r_z_hat, r_omega, self.op.inv_omega * r_omega

    def reduced_products(self, q: np.ndarray) -> tuple[np.ndarray, float]:
        """The sums over examples of (8): (X~'(d q), d'q) (d'q only for the free bias)."""
        return self.op.adjoint(self.d * q), (dot(self.d, q) if self.free else 0.0)

    def back_substitute(self, x: Iterate, r_u, r_v, zu, r_z_hat, r_omega, dw: np.ndarray,
                        dbeta: float) -> Iterate:
        """(10) and section 3's back substitutions, per example, given (dw, dbeta)."""
        d = self.d
        dv = -self.op.inv_omega * (r_omega + d * self.op.forward(dw) - d * dbeta)  # (10)
        dz = -zu * (r_z_hat - dv)
        du = -(r_u + x.u * dz) / x.z if self.hinge else np.zeros_like(dz)
        ds = -(r_v + x.s * dv) / x.v
        return Iterate(dw, dbeta, dv, dz, du, ds, self.hinge)

    def dual_point(self, x: Iterate) -> np.ndarray:
        """The dual point of the records' gap: alpha = clip(v, 0, tau) (squared hinge:
        max(v, 0)), balanced for the free bias by the problem layer
        (``BinaryProblem.balance``)."""
        upper = self.tau if self.hinge else np.inf
        return self.problem.balance(np.clip(x.v, 0.0, upper))

    def parameters(self, x: Iterate) -> np.ndarray:
        """docs/design.md's beta = (w, b) of the iterate: b = -beta (the paper's decision is
        x'w - beta) for the free bias, the constant column's coefficient when regularized."""
        return parameters_of(x.w, x.beta, self.problem.bias)


def data_norm(data_max: float, extra_value: float) -> float:
    """OOQP's datanorm, max_ij |x~_ij| (the constant column's value included), 1 when 0."""
    return max(data_max, extra_value) or 1.0


def parameters_of(w: np.ndarray, beta: float, bias: str) -> np.ndarray:
    """docs/design.md's (w, b) of an iterate's (w, beta): b = -beta for the free bias, the
    constant column's coefficient when regularized, 0 without a bias."""
    out = w.copy()
    if bias == "free":
        out[-1] = -beta
    elif bias == "none":
        out[-1] = 0.0
    return out


def solve_reduced(r_w: np.ndarray, rho: float, adjoint_dq: np.ndarray, dq: float,
                  y_d: np.ndarray, sigma: float, free: bool, linsys, w0, corrector: bool,
                  mu: float) -> tuple[np.ndarray, float]:
    """(8)-(9) given the sums over examples: r^_w = r_w + X~'(d q), rho^ = rho - d'q,
    M dw = -(r^_w + rho^ y_d / sigma), dbeta = (-rho^ + y_d'dw) / sigma (free bias)."""
    r_w_hat = r_w + adjoint_dq                             # (8a)
    rhs = -r_w_hat
    if free:
        rho_hat = rho - dq                                 # (8b)
        rhs -= (rho_hat / sigma) * y_d                     # (9a)
    dw = linsys.solve(rhs, w0, corrector, mu)
    dbeta = (-rho_hat + dot(y_d, dw)) / sigma if free else 0.0  # (9b)
    return dw, dbeta


def make_linear_solver(qp: SVMQP, params: InteriorPointParams, choice: str):
    if choice == "direct":
        return DirectSolver(qp.op)
    return PCGSolver(qp.op, params.pcg_gamma)


def starting_point(rows: MPCRows, params: InteriorPointParams) -> tuple[np.ndarray, float]:
    """OOQP's ``Solver::defaultStart``: from w = 0, beta = 0, z = s = u = v = sqrt(max|x_ij|),
    the full affine-scaling step (the Newton step (5) with r_u = Zu, r_v = Sv), then every
    slack and multiplier shifted by 1e3 + 2 * the largest negativity (``cold_start="ooqp"``).

    ``cold_start="scaled"`` (default) takes the same step from z = s = sqrt(max|x_ij|) and
    u = v = tau_i / 2 (the middle of the dual box 0 <= v <= tau, so r_z = 0 at the start) and
    shifts by the problem's own scales: the primal slacks s, z by 1 + 2 * their largest
    negativity (margins are measured in units of 1: the constraint is m_i >= 1 - z_i) and the
    multipliers v, u by tau_i / 2 + 2 * their largest negativity (they live in [0, tau_i]).
    OOQP's 1e3 puts v and u four orders of magnitude outside their box when tau = 0.05 (Adult)
    and the iterations spend themselves bringing them back; the package docstring has the
    measured iteration counts of both starts.  Returns (w, beta); ``rows`` keep the rest."""
    w, beta = np.zeros(rows.dim), 0.0
    rows.cold(float(np.sqrt(rows.dnorm)), params.cold_start)
    point = rows.iterate(w, beta, record=False)
    mu = point.complementarity / (rows.n_pairs * rows.n)
    y_d, sigma = rows.prepare(point, mu)
    adjoint_dq, dq = rows.predictor_products(point)
    dw, dbeta = solve_reduced(w - point.adjoint_dv, point.rho, adjoint_dq, dq, y_d, sigma,
                              rows.free, rows.linsys, None, False, mu)
    primal, dual = rows.start_step(dw, dbeta)
    w += 1.0 * dw
    beta += 1.0 * dbeta
    rows.shift(params.cold_start, primal, dual)
    return w, beta


def initial_iterate(n: int, a: float, dim: int, tau: np.ndarray, hinge: bool,
                    start: str) -> Iterate:
    """The point the default start's affine step is taken from (:func:`starting_point`):
    z = s = a = sqrt(max|x_ij|), v = u = a (``ooqp``) or tau / 2 (``scaled``); the squared
    hinge's z at 0 and no u."""
    b = np.full(n, a) if start == "ooqp" else tau / 2.0
    if hinge:
        return Iterate(np.zeros(dim), 0.0, b.copy(), np.full(n, a), b.copy(), np.full(n, a))
    return Iterate(np.zeros(dim), 0.0, b.copy(), np.zeros(n), np.zeros(n), np.full(n, a),
                   hinge=False)


def shift_start(x: Iterate, start: str, primal: float, dual: float, tau: np.ndarray) -> None:
    """The default start's shift after the affine step, given the largest negativities
    ``primal`` (of s, z) and ``dual`` (of v, u) over all examples (:func:`starting_point`)."""
    if start == "ooqp":
        shift = 1e3 + 2.0 * max(primal, dual)
        shift_primal, shift_dual = shift, np.full(x.v.shape[0], shift)
    else:
        shift_primal, shift_dual = 1.0 + 2.0 * primal, tau / 2.0 + 2.0 * dual
    x.s += shift_primal
    x.v += shift_dual
    if x.hinge:
        x.z += shift_primal
        x.u += shift_dual


# A warm start's distance from the boundary (the measurements are in the package docstring):
# the slacks s, z get WARM_PRIMAL_SHIFT added, and the multipliers v are kept within
# [WARM_DUAL_MARGIN tau_i, (1 - WARM_DUAL_MARGIN) tau_i] (u = tau - v).
WARM_PRIMAL_SHIFT = 0.01
WARM_DUAL_MARGIN = 0.2


def warm_starting_point(qp: SVMQP, start: np.ndarray) -> Iterate:
    """An interior point near ``start`` (a warm start's ``beta``: ``solvers.base.WarmStart``),
    docs/design.md's (w, b) of a nearby problem (the same data
    at another C): w and the bias from it, the slacks from its margins m_i (z_i = max(0, 1 -
    m_i), s_i = max(0, m_i - 1), each plus WARM_PRIMAL_SHIFT), v from its KKT map (the problem
    layer's ``dual_from_primal``, balanced for the free bias) held WARM_DUAL_MARGIN tau_i
    inside the box [0, tau_i], u = tau - v (squared hinge: v >= WARM_DUAL_MARGIN tau_i, z =
    max(0, 1 - m), no u).  The residuals r_w, rho_beta of the point are not zero; MPC takes
    infeasible starts (OOQP's default start is infeasible too)."""
    problem = qp.problem
    beta, w, bias = warm_parameters(start, qp.op.dim, problem.bias)
    margins = problem.margins(beta)  # one product: the KKT map below reuses the outputs
    alpha = problem.dual_from_primal(beta)
    if qp.free:
        alpha = problem.balance(alpha)
    return warm_iterate(w, bias, margins, alpha, qp.tau, qp.hinge)


def warm_parameters(start: np.ndarray, dim: int, bias_mode: str
                    ) -> tuple[np.ndarray, np.ndarray, float]:
    """(docs/design.md's beta of ``start``, the iterate's w, its beta): the driver's part of
    :func:`warm_starting_point`."""
    beta = np.array(start, dtype=np.float64)  # a copy: the caller's start is not changed
    if beta.shape != (dim,):
        raise ValueError(f"start.beta must have n_features + 1 = {dim} entries")
    if bias_mode == "none":
        beta[-1] = 0.0
    w = beta.copy()
    bias = 0.0
    if bias_mode == "free":
        bias = -w[-1]  # the paper's decision is x'w - beta
    if bias_mode != "regularized":
        w[-1] = 0.0
    return beta, w, bias


def warm_iterate(w: np.ndarray, bias: float, margins: np.ndarray, alpha: np.ndarray,
                 tau: np.ndarray, hinge: bool) -> Iterate:
    """The per-example part of :func:`warm_starting_point` from the margins at the start and
    its (balanced) KKT dual point."""
    s = np.maximum(margins - 1.0, 0.0) + WARM_PRIMAL_SHIFT
    z = np.maximum(1.0 - margins, 0.0)
    if hinge:
        v = np.clip(alpha, WARM_DUAL_MARGIN * tau, (1.0 - WARM_DUAL_MARGIN) * tau)
        return Iterate(w, bias, v, z + WARM_PRIMAL_SHIFT, tau - v, s)
    v = np.maximum(alpha, WARM_DUAL_MARGIN * tau)
    return Iterate(w, bias, v, z, np.zeros_like(v), s, hinge=False)


class OOQPStatus:
    """OOQP's ``Solver::defaultStatus`` with the SVM module's tolerances: each call gets the
    iterate's mu, ||r||_inf and OOQP's duality gap, keeps their history and returns
    (status, message) or None to go on.  phi = (||r||_inf + |gap|) / max|x_ij|.

    * converged: mu <= mu_tol and ||r||_inf <= residual_tol max|x_ij| (skipped
      when the caller stops on a certified gap instead);
    * max_iter: ``max_iter`` MPC iterations taken;
    * infeasible: after 10 checks, phi >= 1e-8 and phi >= 1e4 * its smallest value so far;
    * failed (OOQP's UNKNOWN, slow convergence): after 30 checks, the smallest phi did not
      halve over the last 30;
    * numerical_error (OOQP's UNKNOWN): the residual is above tolerance and ||r|| / mu grew
      1e8 times since the first check (the residuals stopped following mu)."""

    INFEASIBLE_AFTER = 10
    STAGNATION_WINDOW = 30

    def __init__(self, dnorm: float, mu_tol: float, residual_tol: float,
                 max_iter: int, test_mu: bool = True):
        self.dnorm = dnorm
        self.mu_tol = mu_tol
        self.residual_tol = residual_tol
        self.artol = residual_tol * dnorm
        self.max_iter = max_iter
        self.test_mu = test_mu
        self.mu, self.rnorm, self.phi_min = [], [], []

    def __call__(self, iteration: int, mu: float, rnorm: float, gap: float):
        phi = (rnorm + abs(gap)) / self.dnorm
        self.mu.append(mu)
        self.rnorm.append(rnorm)
        self.phi_min.append(min(phi, self.phi_min[-1]) if self.phi_min else phi)
        idx = len(self.phi_min) - 1
        if self.test_mu and mu <= self.mu_tol and rnorm <= self.artol:
            return Termination.CONVERGED, (
                f"converged: mu = {mu:.3g} <= {self.mu_tol:g} and ||r||_inf = "
                f"{rnorm:.3g} <= {self.residual_tol:g} max|x_ij|")
        if iteration >= self.max_iter:
            return Termination.MAX_ITER, f"stopped after {iteration} MPC iterations (max_iter)"
        if idx >= self.INFEASIBLE_AFTER and phi >= 1e-8 and phi >= 1e4 * self.phi_min[idx]:
            return Termination.INFEASIBLE, (
                "infeasible (OOQP's test): phi = (||r|| + |gap|) / max|x_ij| grew 1e4 times "
                "above its smallest value")
        window = self.STAGNATION_WINDOW
        if idx >= window and self.phi_min[idx] >= 0.5 * self.phi_min[idx - window]:
            return Termination.FAILED, (
                "stagnation (OOQP's slow-convergence test): the smallest phi did not halve "
                f"in {window} iterations")
        if rnorm > self.artol and self.mu[idx] > 0.0 and self.mu[0] > 0.0 and \
                self.rnorm[0] > 0.0 and \
                (self.rnorm[idx] / self.mu[idx]) / (self.rnorm[0] / self.mu[0]) >= 1e8:
            return Termination.NUMERICAL_ERROR, (
                "OOQP's residual test: ||r|| / mu grew 1e8 times since the start (the "
                "residuals no longer follow mu)")
        return None


# statuses that return the iterate of smallest certified relative gap instead of the last
_BEST_ITERATE = (Termination.MAX_ITER, Termination.INFEASIBLE, Termination.FAILED,
                 Termination.NUMERICAL_ERROR)


class LocalMPCRows:
    """The rows of one problem in this process (:class:`solvers.problems.mpc_rows.MPCRows`):
    the per-example part of the iterate on :class:`SVMQP`'s data and the linear solver of
    ``params`` on its operator (``direct``, ``pcg`` or ``auto``'s choice); every call computes
    what it is asked, in the order the loop asks."""

    capabilities = frozenset({MATRIX_FREE})

    def __init__(self, problem: BinaryProblem, params: InteriorPointParams):
        self.problem = problem
        self.qp = qp = SVMQP(problem)
        choice = params.linear_solver
        if choice == "auto":
            choice = choose_linear_solver(problem.X, problem.bias == "regularized")
        self.linsys = make_linear_solver(qp, params, choice)
        self.n, self.dim, self.bias, self.free = qp.n, qp.op.dim, problem.bias, qp.free
        self.n_pairs = 2 if qp.hinge else 1
        self.dnorm = qp.dnorm
        self.x: Iterate | None = None
        self._r_z = self._r_s = self._outputs = None
        self._rhs = None  # (r_u, r_v, U^-1 Z, r^_z, r_Omega) of the last right-hand side
        self._affine: Iterate | None = None
        self._step: Iterate | None = None

    def cold(self, a: float, start: str) -> None:
        qp = self.qp
        self.x = initial_iterate(qp.n, a, qp.op.dim, qp.tau, qp.hinge, start)

    def warm(self, start: np.ndarray) -> tuple[np.ndarray, float]:
        self.x = warm_starting_point(self.qp, start)
        return self.x.w, self.x.beta

    def iterate(self, w: np.ndarray, beta: float, record: bool = True) -> MPCPoint:
        x = self.x
        x.w, x.beta = w, beta
        adjoint_dv, rho, r_z, r_s, gap, outputs = self.qp.residual_pieces(x)
        self._r_z, self._r_s, self._outputs = r_z, r_s, outputs
        return MPCPoint(adjoint_dv, rho, gap, sum(dot(p, q) for p, q in x.pairs()),
                        float(np.max(np.abs(r_z))), float(np.max(np.abs(r_s))))

    def objective(self, parameters: np.ndarray, point: MPCPoint) -> float:
        qp = self.qp
        return self.problem.objective_from_margins(parameters,
                                                   qp.d * (self._outputs - self.x.beta))

    def dual_objective(self, point: MPCPoint, predictor) -> float:
        return self.problem.dual_objective(self.qp.dual_point(self.x))

    def prepare(self, point: MPCPoint, mu: float) -> tuple[np.ndarray, float]:
        self.qp.set_weights(self.x)
        self.linsys.prepare(mu)
        return self.qp.op.y_d, self.qp.op.sigma

    def _products(self, r_u, r_v) -> tuple[np.ndarray, float]:
        zu, r_z_hat, r_omega, q = self.qp.reduced_vectors(self.x, self._r_s, self._r_z, r_u,
                                                          r_v)
        self._rhs = (r_u, r_v, zu, r_z_hat, r_omega)
        return self.qp.reduced_products(q)

    def _back_substitute(self, dw: np.ndarray, dbeta: float) -> Iterate:
        return self.qp.back_substitute(self.x, *self._rhs, dw, dbeta)

    def predictor_products(self, point: MPCPoint) -> tuple[np.ndarray, float]:
        x = self.x
        return self._products(x.z * x.u, x.s * x.v)

    def start_step(self, dw: np.ndarray, dbeta: float) -> tuple[float, float]:
        self.x.axpy_examples(1.0, self._back_substitute(dw, dbeta))
        return self.x.violation()

    def shift(self, start: str, primal: float, dual: float) -> None:
        shift_start(self.x, start, primal, dual, self.qp.tau)

    def predictor(self, dw: np.ndarray, dbeta: float) -> float:
        self._affine = self._back_substitute(dw, dbeta)
        return step_bound(self.x, self._affine)

    def mu_affine(self, alpha: float) -> float:
        return self.x.mu_step(self._affine, alpha)

    def corrector_products(self, sigma_mu: float) -> tuple[np.ndarray, float]:
        x, affine = self.x, self._affine
        return self._products(x.z * x.u + affine.z * affine.u - sigma_mu,
                              x.s * x.v + affine.s * affine.v - sigma_mu)

    def corrector(self, dw: np.ndarray, dbeta: float) -> tuple[float, tuple | None]:
        self._step = self._back_substitute(dw, dbeta)
        return fold_blocking(blocking_candidates(self.x, self._step))

    def mu_step(self, alpha: float) -> float:
        return self.x.mu_step(self._step, alpha)

    def step(self, alpha: float) -> None:
        self.x.axpy_examples(alpha, self._step)

    def final_objective(self, parameters: np.ndarray) -> float:
        return self.problem.objective(parameters)

    def unstarted(self) -> tuple[float, float]:
        """(the dual value, mu) reported when the start failed: at v = u = tau / 2."""
        qp = self.qp
        x = Iterate(np.zeros(qp.op.dim), 0.0, qp.tau / 2, np.ones(qp.n), qp.tau / 2,
                    np.ones(qp.n), qp.hinge)
        return self.problem.dual_objective(qp.dual_point(x)), x.mu()

    def record_extras(self) -> dict:
        return {}


class _Predictor:
    """The predictor's solve at the current iterate, (dw, dbeta) of (9) with r_u = Zu,
    r_v = Sv, made once when first asked (the loop asks after the record; rows may ask
    before, as the partitioned rows do when the record's dual value rides with the
    predictor's round) and its failure kept to be raised where the loop asks."""

    def __init__(self, rows: MPCRows, point: MPCPoint, r_w: np.ndarray, mu: float):
        self.rows, self.point, self.r_w, self.mu = rows, point, r_w, mu
        self.y_d = self.sigma = None
        self._result = self._error = None

    def __call__(self) -> tuple[np.ndarray, float]:
        if self._result is None and self._error is None:
            rows, point = self.rows, self.point
            try:
                rows.linsys.start_iteration()
                self.y_d, self.sigma = rows.prepare(point, self.mu)
                adjoint_dq, dq = rows.predictor_products(point)
                self._result = solve_reduced(self.r_w, point.rho, adjoint_dq, dq, self.y_d,
                                             self.sigma, rows.free, rows.linsys, None, False,
                                             self.mu)
            except SingularSystemError as error:
                self._error = error
        if self._error is not None:
            raise self._error
        return self._result


def run(problem: BinaryProblem, params: InteriorPointParams | None = None,
        monitor: Monitor | None = None, start: WarmStart | None = None) -> Solution:
    """Solve the hinge-loss ``problem`` by Gertz & Griffin's interior-point method (BLAS
    held to one thread: :func:`solvers.core.linalg.single_threaded_blas`).  ``start``: a
    :class:`~solvers.base.WarmStart` whose ``beta``, the parameter vector of a nearby problem
    (another C), :func:`warm_starting_point` starts from instead of ``params.cold_start``; its
    ``dual``, ``state`` and ``model`` are ignored (the multipliers come from beta's KKT map,
    held inside the box)."""
    start = warm_start_argument(start)
    params = params or InteriorPointParams(C=problem.C, bias=problem.bias,
                                           bias_scale=problem.bias_scale)
    with single_threaded_blas():
        return solve_rows(LocalMPCRows(problem, params), params,
                          Reporter(monitor, "relative_duality_gap"),
                          None if start is None else start.beta)


def solve_rows(rows: MPCRows, params: InteriorPointParams, reporter: Reporter,
               start: np.ndarray | None = None, on_record=None) -> Solution:
    """The MPC iterations over ``rows`` (:class:`~solvers.problems.mpc_rows.MPCRows`: local
    or partitioned), from ``params.cold_start`` or the (w, b) ``start``; the loop holds
    (w, beta), the rows the rest.  ``on_record(parameters)``: told every recorded iterate's
    (w, b) (a distributed solve's checkpoint)."""
    linsys = rows.linsys
    n_pairs, n = rows.n_pairs, rows.n
    status_test = OOQPStatus(rows.dnorm, params.mu_tol, params.residual_tol,
                             params.max_iter, test_mu=params.stop_rule == "paper")
    pcg_total = 0
    status, message = None, ""
    alpha = sigma = float("nan")
    recorded = best = None  # (w, beta, dual objective, mu) of the last / best record
    best_gap = np.inf
    iteration = 0
    try:
        linsys.start_iteration()
        w, beta = starting_point(rows, params) if start is None else rows.warm(start)
        pcg_total += linsys.iterations
        pcg_this = linsys.iterations
        while True:
            point = rows.iterate(w, beta)
            r_w = w - point.adjoint_dv
            norms = {"r_w": float(np.max(np.abs(r_w))), "rho_beta": abs(point.rho),
                     "r_z": point.r_z_max, "r_s": point.r_s_max}
            rnorm = max(norms.values())
            mu = point.complementarity / (n_pairs * n)
            elapsed = reporter.clock()
            verdict = status_test(iteration, mu, rnorm, point.gap)
            if verdict is not None:
                status, message = verdict
            parameters = parameters_of(w, beta, rows.bias)
            objective = rows.objective(parameters, point)
            predictor = _Predictor(rows, point, r_w, mu)
            dual_value = rows.dual_objective(point, predictor)
            duality_gap = objective - dual_value
            relative_gap = duality_gap / max(abs(objective), 1e-300)
            recorded = (w.copy(), beta, dual_value, mu)
            if relative_gap < best_gap:
                best, best_gap = recorded, relative_gap
            if on_record is not None:
                on_record(parameters)
            if params.stop_rule == "gap" and relative_gap <= params.tol:
                status = Termination.CONVERGED
                message = (f"converged: relative duality gap {format_gap(relative_gap)} <= "
                           f"tol={params.tol:g}")
            stop = reporter(iteration, objective, relative_gap,
                            elapsed=elapsed, mu=mu, residual_norm=rnorm / rows.dnorm,
                            **norms, duality_gap=duality_gap, step_length=alpha, sigma=sigma,
                            pcg_iterations=pcg_this, active_set=int(linsys.active_size),
                            gamma=float(linsys.gamma), linear_solver=linsys.name,
                            **rows.record_extras())
            if status is not None:
                break
            if stop:
                status, message = Termination.STOPPED, reporter.stop_message
                break
            if not mu > 0.0:
                raise SingularSystemError(f"mu = {mu:g}: no interior left to step from")
            iteration += 1
            # predictor: the affine-scaling step (r_u = Zu, r_v = Sv)
            dw, dbeta = predictor()
            alpha_aff = rows.predictor(dw, dbeta)
            mu_aff = rows.mu_affine(alpha_aff)
            sigma = (mu_aff / mu) ** params.sigma_exponent
            # corrector: second-order term and centering, warm-started from the predictor
            adjoint_dq, dq = rows.corrector_products(sigma * mu)
            dw_c, dbeta_c = solve_reduced(r_w, point.rho, adjoint_dq, dq, predictor.y_d,
                                          predictor.sigma, rows.free, linsys, dw, True, mu)
            max_alpha, blocking = rows.corrector(dw_c, dbeta_c)
            alpha = mehrotra_step_length(max_alpha, blocking, rows.mu_step,
                                         params.step_factor)
            if not (np.isfinite(rows.mu_step(alpha)) and np.all(np.isfinite(dw_c))
                    and np.isfinite(dbeta_c)):
                raise SingularSystemError("the step is not finite (the iterate is kept)")
            w += alpha * dw_c
            beta += alpha * dbeta_c
            rows.step(alpha)
            pcg_this = linsys.iterations
            pcg_total += pcg_this
    except SingularSystemError as error:
        status, message = Termination.NUMERICAL_ERROR, f"numerical error: {error}"
        iteration = max(len(status_test.mu) - 1, 0)
    chosen = recorded
    if status in _BEST_ITERATE and best is not None:
        chosen = best
        message += (f"; the iterate of smallest relative duality gap ({format_gap(best_gap)})"
                    " is returned")
    if chosen is None:  # no iterate recorded (the start failed)
        chosen = (np.zeros(rows.dim), 0.0, *rows.unstarted())
    w_out, beta_out, dual_value, mu_out = chosen
    parameters = parameters_of(w_out, beta_out, rows.bias)
    objective = rows.final_objective(parameters)
    gap = objective - dual_value
    extras = {
        "linear_solver": linsys.name,
        "mpc_iterations": iteration,
        "pcg_iterations": pcg_total,
        "pcg_per_mpc_iteration": pcg_total / max(iteration, 1) if linsys.name == "pcg"
        else 0.0,
        "mu": mu_out,
        "relative_duality_gap": gap / max(abs(objective), 1e-300),
        "active_set": int(linsys.active_size),
        "gamma": float(linsys.gamma),
        "start": params.cold_start if start is None else "warm",
    }
    return Solution(parameters, objective, status, message, iteration, extras)
