"""Gertz & Griffin's MPC method on a distributed dataset (``interior_point`` with
``linear_solver="direct"``, binary and one-vs-rest), the way H2O's PSVM distributes an
interior-point method for few features: the normal equations are (d+1) x (d+1), so one
reduction of the weighted Gram matrix X~' Omega^-1 X~ per MPC iteration (each partition
builds its share with the core's :func:`~solvers.core.gram.weighted_gram`) gives the driver
what it factorizes, by the single machine's :class:`~solvers.interior_point.linsys.
DirectSolver` (``factor_with_shift``'s Cholesky).

Every n-vector of the iterate stays on its partition: v, z, u, s, the residuals r_z, r_s,
the outputs, Omega^-1, the affine step and the step.  The driver holds w, beta (the free
bias), d-vectors and scalars.  Each partition runs the single machine's per-example code on
its own :class:`~solvers.interior_point.mpc.SVMQP` (``residual_pieces``,
``reduced_vectors``, ``reduced_products``, ``back_substitute``, ``Iterate``'s pairs and
sums); the driver the same small steps (``solve_reduced``, ``fold_blocking``,
``mehrotra_step_length``, :class:`~solvers.interior_point.mpc.OOQPStatus`,
``parameters_of``).  Rounds per MPC iteration:

* **A** (at the new iterate; the last step x + alpha dx is applied first): the residual
  sums (X~'(d v), d'v, OOQP's gap, max |r_z|, max |r_s|), the complementarity v's + u'z, the
  record's loss sum at the margins and its dual point alpha = clip(v, 0, tau) (its dual
  sums, or with a free bias its share of the balancing shift's g); then Omega^-1 and the
  normal equations' data: the weighted Gram matrix (lower triangle), y_d and sigma (8c-d),
  and the predictor's X~'(d q) and d'q;
* with a free bias, the balancing shift (:func:`solvers.distributed.problem.
  balancing_shift`): 0 rounds when the partitions hold at most
  ``DISTRIBUTED_GATHER_BREAKPOINTS`` breakpoints in all; else round A also sums the
  breakpoints' updates at the last balance's pivots (its quantiles and a ladder of halvings
  below them, :func:`~solvers.distributed.problem.balance_pivots`), so the first narrowing
  needs no round of its own: 1 round when that bracket is small enough to gather, else 2
  more per narrowing (a9a, 2 partitions: 1 in 28 of 31 MPC iterations, 3 in the others);
* the driver factorizes M and solves for the predictor's (dw, dbeta);
* **B**: the affine step's back substitution (kept), its step bound (each partition's
  smallest ratio) and its mu_step as a polynomial in alpha (coefficients summed), the record's
  dual sums at the balanced point (free bias), and the corrector's right-hand side: r_u and
  r_v of the corrector are linear in sigma mu, so the partitions return X~'(d q) and d'q for
  sigma mu = 0 and per unit of it; the driver, once it has alpha_aff, mu_aff and sigma,
  combines them and solves for the corrector's (dw, dbeta);
* **D**: the corrector's back substitution (kept), per group of complementary pairs the
  partition's blocking candidate (ratio and the pair's values) and mu_step's coefficients;
  the driver folds the candidates in the single machine's order, takes Mehrotra's step
  length and updates w, beta; the workers apply the step at the next round A.

Each round's answer from a partition is a named dataclass (:class:`IterateAnswer` for A,
:class:`PredictorAnswer` for B, :class:`CorrectorAnswer` for D, :class:`SetupAnswer`,
:class:`ViolationAnswer`), summed field by field by the problem layer's
:func:`~solvers.problems.newton_rows.combine` (maxima, minima and per-partition lists as the
fields declare): no positional tuples.  This module's ``_solve`` is still a second driver of
``mpc.py``'s loop (issue 51: one loop over a row-operator protocol, as mfn's, is not done).

So 3 rounds per MPC iteration (no bias, regularized bias), 3 + the balance's (free bias:
typically 4), and one packed lower triangle of the (d+1) x (d+1) matrix, a few d-vectors and
scalars moved per partition.  Before the first
iteration: one round for max |x_ij| (the start's scale), then the default start's affine
step (two rounds: its data, its back substitution and violations); a warm start (``start``,
or the resume from ``problem.checkpoint`` after a lost worker: the last recorded iterate's
(w, b)) one round for the margins and the KKT point, and the balance's.  At the end one
round for the objective at the returned parameters (a fresh product, as the single
machine's ``problem.objective``).

Not distributed (refused with the reason): ``linear_solver="pcg"`` (the preconditioner's
rule (15) picks rows by a global threshold, and each PCG iteration would be two rounds),
more than ``INTERIOR_POINT_MAX_DENSE_PARAMS`` parameters (the dense M).  ``"auto"`` runs
``direct`` (the single machine's cost model may choose PCG; the optimum is the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers import config
from solvers.base import Solution, WarmStart, replaced_keyword, warm_start_argument
from solvers.core.gram import weighted_gram
from solvers.core.linalg import dot, single_threaded_blas
from solvers.distributed import DistributedBinaryProblem, Partition
from solvers.distributed.problem import (
    balance_pivots,
    balance_shares,
    balanced,
    balancing_shift,
    dual_objective_from_shares,
    dual_shares,
)
from solvers.interior_point.linsys import DirectSolver, NormalOperator, SingularSystemError
from solvers.interior_point.mpc import (
    _BEST_ITERATE,
    SVMQP,
    OOQPStatus,
    blocking_candidates,
    data_norm,
    fold_blocking,
    initial_iterate,
    mehrotra_step_length,
    mu_from_coefficients,
    parameters_of,
    shift_start,
    solve_reduced,
    warm_iterate,
    warm_parameters,
)
from solvers.interior_point.params import INTERIOR_POINT_SOLVES, InteriorPointParams
from solvers.monitor import Monitor, Reporter
from solvers.problems.newton_rows import combine
from solvers.termination import Termination, format_gap

# -- the rounds' answers (one partition's; combine() sums them field by field) ------------------


@dataclass
class SetupAnswer:
    """The partition's max |x_ij| and rows."""

    data_max: float = field(metadata={"combine": "max"})
    n: int


@dataclass
class ViolationAnswer:
    """The default start's largest negativities after its affine step (primal, dual)."""

    primal: float = field(metadata={"combine": "max"})
    dual: float = field(metadata={"combine": "max"})


@dataclass
class IterateAnswer:
    """Round A: the residual sums X~'(d v), d'v and OOQP's gap, the complementarity, the
    largest |r_z| and |r_s|, the record's loss sum and dual shares (``dual_shares``, or with a
    free bias ``balance_shares``; None without a record), the Gram matrix's lower triangle,
    y_d and sigma (free bias), and the predictor's X~'(d q) and d'q."""

    adjoint_dv: np.ndarray
    rho: float
    gap: float
    complementarity: float
    r_z_max: float = field(metadata={"combine": "max"})
    r_s_max: float = field(metadata={"combine": "max"})
    loss_sum: float | None
    shares: Any = field(metadata={"combine": "list"})
    gram: np.ndarray
    y_d: np.ndarray | None
    sigma: float
    adjoint_dq: np.ndarray
    dq: float


@dataclass
class PredictorAnswer:
    """Round B: the record's dual shares at the balanced point (free bias; else None); the
    affine step's bound (the partition's smallest ratio), its mu_step coefficients and the
    corrector's X~'(d q), d'q at sigma mu = 0 (a0, b0) and per unit of it (a1, b1); None
    when the factorization failed."""

    dual: Any = field(metadata={"combine": "list"})
    ratio: float | None = field(default=None, metadata={"combine": "min"})
    coefficients: np.ndarray | None = None
    a0: np.ndarray | None = None
    b0: float | None = None
    a1: np.ndarray | None = None
    b1: float | None = None


@dataclass
class CorrectorAnswer:
    """Round D: per group of pairs the partition's blocking candidate, and mu_step's
    coefficients along the step."""

    candidates: list = field(metadata={"combine": "list"})
    coefficients: np.ndarray


# -- worker side ---------------------------------------------------------------------------------


def _setup(part: Partition):
    """The partition's SVMQP (its rows, labels, costs, the operator of (11)); returns its
    max |x_ij| and row count."""
    qp = SVMQP(part.state["problem"])
    part.state["ipm"] = {"qp": qp}
    return SetupAnswer(qp.data_max, qp.n)


def _warm(part: Partition, beta, quantiles, small, pivots=None):
    """A warm start's margins and KKT dual point at docs/design.md's ``beta`` (kept); with a
    free bias the partition's share of the balancing shift."""
    problem = part.state["problem"]
    st = part.state["ipm"]
    st["warm_margins"] = problem.margins(beta)
    st["warm_alpha"] = problem.dual_from_primal(beta)
    if problem.bias == "free":
        return balance_shares(part, problem, st["warm_alpha"], quantiles, small, pivots)
    return None


def _move(part: Partition, move) -> None:
    """The driver's pending change of the iterate: the cold start's point, its shift, the
    warm start's point, or the last step x + alpha dx."""
    st = part.state["ipm"]
    qp = st["qp"]
    kind = move[0]
    if kind == "cold":
        _, a, dim, start = move
        st["x"] = initial_iterate(qp.n, a, dim, qp.tau, qp.hinge, start)
    elif kind == "shift":
        _, start, primal, dual = move
        shift_start(st["x"], start, primal, dual, qp.tau)
    elif kind == "warm":
        _, w, bias, shift = move
        alpha = st.pop("warm_alpha")
        if shift is not None:
            alpha = balanced(qp.problem, alpha, shift)
        st["x"] = warm_iterate(w.copy(), bias, st.pop("warm_margins"), alpha, qp.tau, qp.hinge)
    elif kind == "step":
        st["x"].axpy(move[1], st.pop("step"))


def _iterate(part: Partition, move, w, beta, record: bool, quantiles, small, pivots=None):
    """Round A: the iterate's residual sums and record sums, then Omega^-1 and the normal
    equations' data with the predictor's right-hand side (module docstring)."""
    _move(part, move)
    st = part.state["ipm"]
    qp = st["qp"]
    x = st["x"]
    x.w, x.beta = np.array(w), beta  # the worker's own copy: the step is added to it
    adjoint_dv, rho, r_z, r_s, gap, outputs = qp.residual_pieces(x)
    st["r_z"], st["r_s"] = r_z, r_s
    complementarity = sum(dot(p, q) for p, q in x.pairs())
    loss_sum = shares = None
    if record:
        problem = qp.problem
        loss_sum = float(problem.loss_function.sum(1.0 - qp.d * (outputs - x.beta),
                                                   problem.cost))
        upper = qp.tau if qp.hinge else np.inf
        alpha = np.clip(x.v, 0.0, upper)  # SVMQP.dual_point before the balance
        if qp.free:
            st["alpha"] = alpha
            shares = balance_shares(part, problem, alpha, quantiles, small, pivots)
        else:
            shares = dual_shares(problem, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        qp.set_weights(x)  # Omega^-1 and this partition's share of y_d, sigma
        gram = weighted_gram(qp.X, qp.op.inv_omega, extra_value=qp.op.c, mirror=False)
        zu, r_z_hat, r_omega, q = qp.reduced_vectors(x, r_s, r_z, x.z * x.u, x.s * x.v)
        adjoint_dq, dq = qp.reduced_products(q)
    if "lower" not in st:
        st["lower"] = np.tril_indices(gram.shape[0])
    gram = gram[st["lower"]]  # the lower triangle only: half the bytes
    st["predictor"] = (zu, r_z_hat, r_omega)
    sigma = float(qp.op.inv_omega.sum()) if qp.free else 0.0
    return IterateAnswer(adjoint_dv, float(rho), float(gap), complementarity,
                         float(np.max(np.abs(r_z), initial=0.0)),
                         float(np.max(np.abs(r_s), initial=0.0)), loss_sum, shares, gram,
                         qp.op.y_d if qp.free else None, sigma, adjoint_dq, float(dq))


def _start_step(part: Partition, dw, dbeta):
    """The default start's affine step (back substitution, x += dx) and the largest
    negativities of the primal and dual variables after it."""
    st = part.state["ipm"]
    qp, x = st["qp"], st["x"]
    zu, r_z_hat, r_omega = st.pop("predictor")
    with np.errstate(divide="ignore", invalid="ignore"):
        step = qp.back_substitute(x, x.z * x.u, x.s * x.v, zu, r_z_hat, r_omega, dw, dbeta)
    x.axpy(1.0, step)
    return ViolationAnswer(*x.violation())


def _predictor(part: Partition, dw, dbeta, shift):
    """Round B: the affine step (kept), its step bound and mu_step coefficients, the
    record's dual sums at the balanced point (``shift`` not None), and the corrector's
    right-hand side sums at sigma mu = 0 and per unit of sigma mu."""
    st = part.state["ipm"]
    qp, x = st["qp"], st["x"]
    dual = None
    if shift is not None:
        dual = dual_shares(qp.problem, balanced(qp.problem, st.pop("alpha"), shift))
    if dw is None:  # the factorization failed: the record's sums only
        return PredictorAnswer(dual)
    zu, r_z_hat, r_omega = st.pop("predictor")
    with np.errstate(divide="ignore", invalid="ignore"):
        affine = qp.back_substitute(x, x.z * x.u, x.s * x.v, zu, r_z_hat, r_omega, dw, dbeta)
        st["affine"] = affine
        ratios = [c[0] for c in blocking_candidates(x, affine) if c is not None]
        coefficients = x.mu_step_coefficients(affine)
        r_u = x.z * x.u + affine.z * affine.u
        r_v = x.s * x.v + affine.s * affine.v
        q0 = qp.reduced_vectors(x, st["r_s"], st["r_z"], r_u, r_v)[3]
        unit = -np.ones(qp.n)
        q1 = qp.reduced_vectors(x, 0.0, 0.0, unit, unit)[3]
        a0, b0 = qp.reduced_products(q0)
        a1, b1 = qp.reduced_products(q1)
    return PredictorAnswer(dual, min(ratios, default=1.0), np.asarray(coefficients), a0,
                           float(b0), a1, float(b1))


def _corrector(part: Partition, dw, dbeta, sigma_mu):
    """Round D: the corrector's back substitution (kept as the step), the blocking
    candidates per group of pairs and mu_step's coefficients along it."""
    st = part.state["ipm"]
    qp, x = st["qp"], st["x"]
    affine = st.pop("affine")
    with np.errstate(divide="ignore", invalid="ignore"):
        r_u = x.z * x.u + affine.z * affine.u - sigma_mu
        r_v = x.s * x.v + affine.s * affine.v - sigma_mu
        zu, r_z_hat, r_omega, _ = qp.reduced_vectors(x, st["r_s"], st["r_z"], r_u, r_v)
        step = qp.back_substitute(x, r_u, r_v, zu, r_z_hat, r_omega, dw, dbeta)
        st["step"] = step
        return CorrectorAnswer(blocking_candidates(x, step),
                               np.asarray(x.mu_step_coefficients(step)))


def _final_loss(part: Partition, beta):
    """The loss sum at docs/design.md's ``beta`` from a fresh product."""
    problem = part.state["problem"]
    return float(problem.loss_function.sum(problem.slacks(beta), problem.cost))


# -- driver ------------------------------------------------------------------------------------


def refusal(params: InteriorPointParams, n_features: int) -> str | None:
    """Why the distributed MPC does not run ``params`` (None when it does)."""
    if params.linear_solver == "pcg":
        return ("interior_point on distributed data: linear_solver='pcg' is not distributed "
                "(the SVM preconditioner's rule (15) selects rows by a global threshold and "
                "each PCG iteration would be two rounds); use 'direct' (one (d+1) x (d+1) "
                "reduction per MPC iteration) or 'auto'")
    side = n_features + 1
    if side > config.INTERIOR_POINT_MAX_DENSE_PARAMS:
        return (f"interior_point on distributed data forms and factorizes the dense "
                f"{side} x {side} normal equations on the driver; at most "
                f"{config.INTERIOR_POINT_MAX_DENSE_PARAMS} parameters "
                f"(INTERIOR_POINT_MAX_DENSE_PARAMS): use mfn or cutting_plane")
    return None


def _combine_candidates(per_partition: list) -> list:
    """Per group, the smallest ratio over the partitions (in row order, the first on ties:
    the single machine's first index of the smallest)."""
    groups = len(per_partition[0])
    out = []
    for g in range(groups):
        best = None
        for candidates in per_partition:
            c = candidates[g]
            if c is not None and (best is None or c[0] < best[0]):
                best = c
        out.append(best)
    return out


class _Driver:
    def __init__(self, problem: DistributedBinaryProblem, params: InteriorPointParams):
        INTERIOR_POINT_SOLVES.require_problem(problem.template, "interior_point")
        reason = refusal(params, problem.n_features)
        if reason is not None:
            raise ValueError(reason)
        self.problem = problem
        self.params = params
        self.template = problem.template
        self.bias = problem.bias
        self.hinge = problem.loss_function.piecewise_linear  # as SVMQP.hinge
        self.free = problem.bias == "free"
        self.c = problem.bias_scale if problem.bias == "regularized" else 0.0
        self.dim = problem.n_features + 1
        # the single machine's DirectSolver on an operator of no rows: M is formed from the
        # partitions' Gram shares and factorized here
        self.linsys = DirectSolver(NormalOperator(sp.csr_matrix((0, problem.n_features)),
                                                  self.c, self.free))
        self.n_pairs = 2 if self.hinge else 1
        self.small = max(config.DISTRIBUTED_GATHER_BREAKPOINTS // max(len(problem.group), 1),
                         1)
        self.quantiles = config.DISTRIBUTED_PIVOTS
        self.lower = np.tril_indices(self.dim)
        self.pivots = None  # the last balance's pivots, where the next one's are taken
        setup = combine(problem.round(_setup))
        self.n = int(setup.n)
        self.linsys.active_size = self.n
        self.dnorm = data_norm(setup.data_max if setup.data_max is not None else 0.0,
                               self.c)

    def round(self, function, *args):
        return self.problem.round(function, *args)

    def normal_equations(self, answer: IterateAnswer) -> None:
        """From round A's summed answer: the Gram matrix (its lower triangle, packed), y_d
        and sigma; M (11) factorized."""
        G = np.zeros((self.dim, self.dim))
        G[self.lower] = answer.gram
        if self.free:
            self.y_d = answer.y_d
            self.sigma = float(answer.sigma)
        else:
            self.y_d, self.sigma = np.zeros(self.dim), 1.0
        self.linsys.factorize(G, self.y_d, self.sigma)

    def solve(self, r_w, rho, adjoint_dq, dq, corrector, mu):
        return solve_reduced(r_w, rho, adjoint_dq, dq, self.y_d, self.sigma, self.free,
                             self.linsys, None, corrector, mu)

    def balance(self, shares) -> float:
        shift = balancing_shift(self.problem.group, shares, self.pivots)
        self.pivots = balance_pivots(shares)
        if shift is None:
            raise ValueError("no dual point balances the classes (is only one class "
                             "present?)")
        return shift


def solve(problem: DistributedBinaryProblem, params: InteriorPointParams,
          monitor: Monitor | None = None, start: WarmStart | None = None, *,
          resume: np.ndarray | None = None) -> Solution:
    """Gertz & Griffin's MPC method on a distributed binary problem (the module docstring
    lists the rounds).  ``start``: a :class:`~solvers.base.WarmStart` whose ``beta`` is
    docs/design.md's (w, b) of a nearby problem or the last recorded iterate of a solve that
    lost a worker (``problem.checkpoint``, which ``solvers.train`` passes), from which
    :func:`~solvers.interior_point.mpc.warm_starting_point`'s point is built instead of
    ``params.cold_start``; the rest of it is ignored.  ``resume``: the deprecated spelling of
    ``start=WarmStart(beta=...)``, kept for one release."""
    start = replaced_keyword(warm_start_argument(start), "resume", resume, "beta")
    with single_threaded_blas():
        return _solve(problem, params, monitor, None if start is None else start.beta)


def _solve(problem: DistributedBinaryProblem, params: InteriorPointParams,
           monitor: Monitor | None, start: np.ndarray | None) -> Solution:
    reporter = Reporter(monitor, "relative_duality_gap")
    drv = _Driver(problem, params)
    template = problem.template
    status_test = OOQPStatus(drv.dnorm, params.mu_tol, params.residual_tol,
                             params.max_iter, test_mu=params.stop_rule == "paper")
    free, n, n_pairs = drv.free, drv.n, drv.n_pairs
    status, message = None, ""
    alpha = sigma = float("nan")
    recorded = best = None  # (w, beta, dual objective, mu) of the last / best record
    best_gap = np.inf
    iteration = 0
    problem.checkpoint = None if start is None else WarmStart(
        beta=np.array(start, dtype=np.float64))
    try:
        # -- the starting point
        if start is None:
            a = float(np.sqrt(drv.dnorm))
            w, beta = np.zeros(drv.dim), 0.0
            answer = combine(drv.round(_iterate, ("cold", a, drv.dim, params.cold_start), w,
                                       beta, False, drv.quantiles, drv.small))
            r_w = w - answer.adjoint_dv
            mu0 = answer.complementarity / (n_pairs * n)
            drv.normal_equations(answer)
            dw, dbeta = drv.solve(r_w, answer.rho, answer.adjoint_dq, answer.dq, False, mu0)
            violations = combine(drv.round(_start_step, dw, dbeta))
            w += 1.0 * dw
            beta += 1.0 * dbeta
            move = ("shift", params.cold_start, violations.primal, violations.dual)
        else:
            beta_start, w, beta = warm_parameters(start, drv.dim, drv.bias)
            shares = drv.round(_warm, beta_start, drv.quantiles, drv.small, drv.pivots)
            shift = drv.balance(shares) if free else None
            move = ("warm", w.copy(), beta, shift)
        # -- MPC
        while True:
            answer = combine(drv.round(_iterate, move, w, beta, True, drv.quantiles,
                                       drv.small, drv.pivots))
            move = None
            r_w = w - answer.adjoint_dv
            rho = answer.rho
            gap = answer.gap
            mu = answer.complementarity / (n_pairs * n)
            norms = {"r_w": float(np.max(np.abs(r_w))), "rho_beta": abs(rho),
                     "r_z": answer.r_z_max, "r_s": answer.r_s_max}
            rnorm = max(norms.values())
            elapsed = reporter.clock()
            verdict = status_test(iteration, mu, rnorm, gap)
            if verdict is not None:
                status, message = verdict
            params_vector = parameters_of(w, beta, drv.bias)
            objective = template.regularizer(params_vector) + answer.loss_sum
            shift = drv.balance(answer.shares) if free else None
            # the predictor's solve (with the record's dual sums in its round B)
            failure = None
            dw = dbeta = None
            try:
                drv.normal_equations(answer)
                dw, dbeta = drv.solve(r_w, rho, answer.adjoint_dq, answer.dq, False, mu)
            except SingularSystemError as error:
                failure = error
            predicted = None
            if free:  # the record's dual sums need the shift: they ride with round B
                outcome = combine(drv.round(_predictor, dw, dbeta, shift))
                if dw is not None:
                    predicted = outcome
                shares = outcome.dual
            else:
                shares = answer.shares
            dual_value = dual_objective_from_shares(template, shares)
            duality_gap = objective - dual_value
            relative_gap = duality_gap / max(abs(objective), 1e-300)
            recorded = (w.copy(), beta, dual_value, mu)
            if relative_gap < best_gap:
                best, best_gap = recorded, relative_gap
            problem.checkpoint = WarmStart(beta=params_vector.copy())
            if params.stop_rule == "gap" and relative_gap <= params.tol:
                status = Termination.CONVERGED
                message = (f"converged: relative duality gap {format_gap(relative_gap)} <= "
                           f"tol={params.tol:g}")
            stop = reporter(iteration, objective, relative_gap,
                            elapsed=elapsed, mu=mu, residual_norm=rnorm / drv.dnorm,
                            **norms, duality_gap=duality_gap, step_length=alpha,
                            sigma=sigma, pcg_iterations=0, active_set=int(n), gamma=0.0,
                            linear_solver="direct", distributed=True)
            if status is not None:
                break
            if stop:
                status, message = Termination.STOPPED, reporter.stop_message
                break
            if not mu > 0.0:
                raise SingularSystemError(f"mu = {mu:g}: no interior left to step from")
            if failure is not None:
                raise failure
            if not free:  # round B after the record: none at the last iteration
                predicted = combine(drv.round(_predictor, dw, dbeta, None))
            iteration += 1
            # predictor's step bound and mu_aff, sigma; the corrector's right-hand side
            alpha_aff = min(1.0, predicted.ratio)
            mu_aff = mu_from_coefficients(predicted.coefficients, alpha_aff, n_pairs, n)
            sigma = (mu_aff / mu) ** params.sigma_exponent
            sigma_mu = sigma * mu
            adjoint_dq = predicted.a0 + sigma_mu * predicted.a1
            dq = float(predicted.b0) + sigma_mu * float(predicted.b1)
            dw, dbeta = drv.solve(r_w, rho, adjoint_dq, dq, True, mu)
            corrected = combine(drv.round(_corrector, dw, dbeta, sigma_mu))
            max_alpha, blocking = fold_blocking(_combine_candidates(corrected.candidates))
            coefficients = corrected.coefficients

            def mu_at(t, coefficients=coefficients):
                return mu_from_coefficients(coefficients, t, n_pairs, n)

            alpha = mehrotra_step_length(max_alpha, blocking, mu_at, params.step_factor)
            if not (np.isfinite(mu_at(alpha)) and np.all(np.isfinite(dw))
                    and np.isfinite(dbeta)):
                raise SingularSystemError("the step is not finite (the iterate is kept)")
            w += alpha * dw
            beta += alpha * dbeta
            move = ("step", alpha)
    except SingularSystemError as error:
        status, message = Termination.NUMERICAL_ERROR, f"numerical error: {error}"
        iteration = max(len(status_test.mu) - 1, 0)
    chosen = recorded
    if status in _BEST_ITERATE and best is not None:
        chosen = best
        message += (f"; the iterate of smallest relative duality gap ({format_gap(best_gap)})"
                    " is returned")
    if chosen is None:  # no iterate recorded (the start failed)
        chosen = (np.zeros(drv.dim), 0.0, -np.inf, float("nan"))
    w_out, beta_out, dual_value, mu_out = chosen
    params_vector = parameters_of(w_out, beta_out, drv.bias)
    objective = template.regularizer(params_vector) + \
        float(sum(problem.round(_final_loss, params_vector)))
    duality_gap = objective - dual_value
    extras = {
        "linear_solver": "direct",
        "mpc_iterations": iteration,
        "pcg_iterations": 0,
        "pcg_per_mpc_iteration": 0.0,
        "mu": mu_out,
        "relative_duality_gap": duality_gap / max(abs(objective), 1e-300),
        "active_set": int(n),
        "gamma": 0.0,
        "start": params.cold_start if start is None else "warm",
        "distributed": True,
        **problem.communication_totals(),
    }
    return Solution(params_vector, objective, status, message, iteration, extras)
