"""Gertz & Griffin's MPC method on a distributed dataset (``interior_point`` with
``linear_solver="direct"``, binary and one-vs-rest): :class:`PartitionedMPCRows`, the
partitioned implementation of :class:`solvers.problems.mpc_rows.MPCRows`, under ``mpc.py``'s
one loop (:func:`~solvers.interior_point.mpc.solve_rows`), the way H2O's PSVM distributes an
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
sums); the loop, the same for local rows, the rest (``solve_reduced``, ``fold_blocking``,
``mehrotra_step_length``, :class:`~solvers.interior_point.mpc.OOQPStatus`,
``parameters_of``).  Rounds per MPC iteration, and the protocol's calls each answers:

* **A** (at the new iterate; the last step x + alpha dx is applied first): the residual
  sums (X~'(d v), d'v, OOQP's gap, max |r_z|, max |r_s|), the complementarity v's + u'z, the
  record's loss sum at the margins and its dual point alpha = clip(v, 0, tau) (its dual
  sums, or with a free bias its share of the balancing shift's g); then Omega^-1 and the
  normal equations' data: the weighted Gram matrix (lower triangle), y_d and sigma (8c-d),
  and the predictor's X~'(d q) and d'q (``iterate``; ``prepare`` and
  ``predictor_products`` are then answered without a round);
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
  combines them and solves for the corrector's (dw, dbeta) (``predictor``; with a free
  bias made already by ``dual_objective``, which asks the loop's predictor solve before the
  record; ``mu_affine`` and ``corrector_products`` without a round);
* **D**: the corrector's back substitution (kept), per group of complementary pairs the
  partition's blocking candidate (ratio and the pair's values) and mu_step's coefficients;
  the driver folds the candidates in the single machine's order, takes Mehrotra's step
  length and updates w, beta; the workers apply the step at the next round A
  (``corrector``; ``mu_step`` without a round; ``step`` rides with the next round A).

Each round's answer from a partition is a named dataclass (the problem layer's
:class:`~solvers.problems.mpc_rows.MPCPoint` for A, :class:`PredictorAnswer` for B,
:class:`CorrectorAnswer` for D, :class:`SetupAnswer`, :class:`ViolationAnswer`), summed field
by field by :func:`~solvers.problems.newton_rows.combine` (maxima, minima and per-partition
lists as the fields declare).  The loop is ``mpc.py``'s, the single machine's: the second
driver this module held until 2026-12-07 is gone (issue 51), with bit for bit the same
records, rounds and bytes.

So 3 rounds per MPC iteration (no bias, regularized bias), 3 + the balance's (free bias:
typically 4), and one packed lower triangle of the (d+1) x (d+1) matrix, a few d-vectors and
scalars moved per partition.  Before the first
iteration: one round for max |x_ij| (the start's scale), then the default start's affine
step (two rounds: its data, its back substitution and violations); a warm start (``start``,
or the resume from ``problem.checkpoint`` after a lost worker: the last recorded iterate's
(w, b)) one round for the margins and the KKT point, and the balance's.  At the end one
round for the objective at the returned parameters (a fresh product, as the single
machine's ``problem.objective``).

Not distributed (the rows declare no matrix-free M, and
:meth:`~solvers.interior_point.params.InteriorPointParams.rows_refusal` refuses with the
reason): ``linear_solver="pcg"`` (the preconditioner's rule (15) picks rows by a global
threshold, and each PCG iteration would be two rounds), more than
``INTERIOR_POINT_MAX_DENSE_PARAMS`` parameters (the dense M).  ``"auto"`` runs
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
    SVMQP,
    blocking_candidates,
    data_norm,
    fold_blocking,
    initial_iterate,
    mu_from_coefficients,
    shift_start,
    solve_rows,
    warm_iterate,
    warm_parameters,
)
from solvers.interior_point.params import INTERIOR_POINT_SOLVES, InteriorPointParams
from solvers.monitor import Monitor, Reporter
from solvers.problems.mpc_rows import MPCPoint
from solvers.problems.newton_rows import combine

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
    elif kind == "step":  # (w, beta) come with the round
        st["x"].axpy_examples(move[1], st.pop("step"))


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
    return MPCPoint(adjoint_dv, float(rho), float(gap), complementarity,
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


class PartitionedMPCRows:
    """The rows of a :class:`~solvers.distributed.DistributedBinaryProblem` under the MPC
    loop (:class:`solvers.problems.mpc_rows.MPCRows`; the module docstring has the rounds):
    the iterate's changes ride with the next round, and the calls the rounds answered in
    advance (the normal equations and the predictor's products with round A, the corrector's
    right-hand side and mu along the affine step with round B, mu along the step with
    round D) make none."""

    capabilities = frozenset()  # no matrix-free M: linear_solver "direct" only

    def __init__(self, problem: DistributedBinaryProblem):
        INTERIOR_POINT_SOLVES.require_problem(problem.template, "interior_point")
        self.problem = problem
        self.template = problem.template
        self.bias = problem.bias
        self.free = problem.bias == "free"
        hinge = problem.loss_function.piecewise_linear  # as SVMQP.hinge
        self.n_pairs = 2 if hinge else 1
        c = problem.bias_scale if problem.bias == "regularized" else 0.0
        self.dim = problem.n_features + 1
        # the single machine's DirectSolver on an operator of no rows: M is formed from the
        # partitions' Gram shares and factorized here
        self.linsys = DirectSolver(NormalOperator(sp.csr_matrix((0, problem.n_features)), c,
                                                  self.free))
        self.small = max(config.DISTRIBUTED_GATHER_BREAKPOINTS // max(len(problem.group), 1),
                         1)
        self.quantiles = config.DISTRIBUTED_PIVOTS
        self.lower = np.tril_indices(self.dim)
        self.pivots = None  # the last balance's pivots, where the next one's are taken
        setup = combine(problem.round(_setup))
        self.n = int(setup.n)
        self.linsys.active_size = self.n
        self.dnorm = data_norm(setup.data_max if setup.data_max is not None else 0.0, c)
        self._move = None  # the iterate's change, made with the next round A
        self._predicted: PredictorAnswer | None = None
        self._sigma_mu = 0.0
        self._coefficients = None

    def round(self, function, *args):
        return self.problem.round(function, *args)

    def _balance(self, shares) -> float:
        shift = balancing_shift(self.problem.group, shares, self.pivots)
        self.pivots = balance_pivots(shares)
        if shift is None:
            raise ValueError("no dual point balances the classes (is only one class "
                             "present?)")
        return shift

    # -- the protocol ----------------------------------------------------------------------------
    def cold(self, a: float, start: str) -> None:
        self._move = ("cold", a, self.dim, start)

    def warm(self, start: np.ndarray) -> tuple[np.ndarray, float]:
        """A round for the margins and the KKT point at ``start`` (and the balance's with a
        free bias); the point is made with the next round A."""
        beta_start, w, beta = warm_parameters(start, self.dim, self.bias)
        shares = self.round(_warm, beta_start, self.quantiles, self.small, self.pivots)
        shift = self._balance(shares) if self.free else None
        self._move = ("warm", w.copy(), beta, shift)
        return w, beta

    def iterate(self, w: np.ndarray, beta: float, record: bool = True) -> MPCPoint:
        """Round A."""
        move, self._move = self._move, None
        self._predicted = None
        pivots = (self.pivots,) if record else ()  # the record's balance reads them
        return combine(self.round(_iterate, move, w, beta, record, self.quantiles, self.small,
                                  *pivots))

    def objective(self, parameters: np.ndarray, point: MPCPoint) -> float:
        return self.template.regularizer(parameters) + point.loss_sum

    def dual_objective(self, point: MPCPoint, predictor) -> float:
        """From round A's dual sums; with a free bias at the balanced point, whose sums ride
        with round B: the predictor's solve is asked for here (a failed factorization makes
        round B with the record's sums only, and fails the loop where it asks)."""
        if not self.free:
            return dual_objective_from_shares(self.template, point.shares)
        shift = self._balance(point.shares)
        try:
            dw, dbeta = predictor()
        except SingularSystemError:
            dw = dbeta = None
        answer = combine(self.round(_predictor, dw, dbeta, shift))
        if dw is not None:
            self._predicted = answer
        return dual_objective_from_shares(self.template, answer.dual)

    def prepare(self, point: MPCPoint, mu: float) -> tuple[np.ndarray, float]:
        """M (11) from round A's Gram matrix (its lower triangle, packed), y_d and sigma,
        factorized here."""
        G = np.zeros((self.dim, self.dim))
        G[self.lower] = point.gram
        if self.free:
            y_d, sigma = point.y_d, float(point.sigma)
        else:
            y_d, sigma = np.zeros(self.dim), 1.0
        self.linsys.factorize(G, y_d, sigma)
        return y_d, sigma

    def predictor_products(self, point: MPCPoint) -> tuple[np.ndarray, float]:
        return point.adjoint_dq, point.dq

    def start_step(self, dw: np.ndarray, dbeta: float) -> tuple[float, float]:
        violations = combine(self.round(_start_step, dw, dbeta))
        return violations.primal, violations.dual

    def shift(self, start: str, primal: float, dual: float) -> None:
        self._move = ("shift", start, primal, dual)

    def predictor(self, dw: np.ndarray, dbeta: float) -> float:
        """Round B (none when the free bias's record made it)."""
        if self._predicted is None:
            self._predicted = combine(self.round(_predictor, dw, dbeta, None))
        return min(1.0, self._predicted.ratio)

    def mu_affine(self, alpha: float) -> float:
        return mu_from_coefficients(self._predicted.coefficients, alpha, self.n_pairs, self.n)

    def corrector_products(self, sigma_mu: float) -> tuple[np.ndarray, float]:
        """From round B's two parts, at sigma mu = 0 and per unit of it: no round."""
        p = self._predicted
        self._sigma_mu = sigma_mu
        return p.a0 + sigma_mu * p.a1, float(p.b0) + sigma_mu * float(p.b1)

    def corrector(self, dw: np.ndarray, dbeta: float) -> tuple[float, tuple | None]:
        """Round D: the partitions' blocking candidates folded in the single machine's
        order."""
        corrected = combine(self.round(_corrector, dw, dbeta, self._sigma_mu))
        self._coefficients = corrected.coefficients
        return fold_blocking(_combine_candidates(corrected.candidates))

    def mu_step(self, alpha: float) -> float:
        return mu_from_coefficients(self._coefficients, alpha, self.n_pairs, self.n)

    def step(self, alpha: float) -> None:
        self._move = ("step", alpha)

    def final_objective(self, parameters: np.ndarray) -> float:
        """From a fresh product, as the single machine's ``problem.objective``."""
        return self.template.regularizer(parameters) + \
            float(sum(self.round(_final_loss, parameters)))

    def unstarted(self) -> tuple[float, float]:
        return -np.inf, float("nan")

    def record_extras(self) -> dict:
        return {"distributed": True}


def solve(problem: DistributedBinaryProblem, params: InteriorPointParams,
          monitor: Monitor | None = None, start: WarmStart | None = None, *,
          resume: np.ndarray | None = None) -> Solution:
    """Gertz & Griffin's MPC method on a distributed binary problem: ``mpc.py``'s loop
    (:func:`~solvers.interior_point.mpc.solve_rows`) over :class:`PartitionedMPCRows`.
    ``start``: a :class:`~solvers.base.WarmStart` whose ``beta`` is docs/design.md's (w, b)
    of a nearby problem or the last recorded iterate of a solve that lost a worker
    (``problem.checkpoint``, which the loop keeps current and ``solvers.train`` passes), from
    which :func:`~solvers.interior_point.mpc.warm_starting_point`'s point is built instead of
    ``params.cold_start``; the rest of it is ignored.  ``resume``: the deprecated spelling of
    ``start=WarmStart(beta=...)``, kept for one release."""
    start = replaced_keyword(warm_start_argument(start), "resume", resume, "beta")
    reason = params.rows_refusal(PartitionedMPCRows.capabilities, problem.n_features)
    if reason is not None:
        raise ValueError(reason)
    beta = None if start is None else start.beta
    problem.checkpoint = None if beta is None else WarmStart(
        beta=np.array(beta, dtype=np.float64))

    def checkpoint(parameters):
        problem.checkpoint = WarmStart(beta=parameters.copy())

    with single_threaded_blas():
        rows = PartitionedMPCRows(problem)
        solution = solve_rows(rows, params, Reporter(monitor, "relative_duality_gap"), beta,
                              on_record=checkpoint)
    solution.extras.update({"distributed": True, **problem.communication_totals()})
    return solution
