"""The rows of Appendix A's Newton method on a distributed dataset: the partitioned
implementation of :class:`solvers.problems.newton_rows.NewtonRows` (``docs/design.md``
section 3.9), under mfn's one loop (:class:`solvers.mfn.engine.Engine`).

Every per-example vector (the outputs, the slacks, the active set, CGLS's z) stays on its
partition; the driver holds parameter vectors (d + 1 entries) and scalars.  Each call of the
protocol is at most one round, whose answer from every partition is a named dataclass of the
problem layer (:class:`~solvers.problems.newton_rows.NewtonPoint`, ``RowsStart``,
``TrialAnswer``, and here :class:`CGProducts`, :class:`FactorAnswer`) summed field by field
(:func:`~solvers.problems.newton_rows.combine`).  Per Newton iteration:

* the point round (:meth:`PartitionedNewtonRows.point`) moves the outputs to the new point
  (the trial's, or along the ray by the line search's step: the move rides with the round)
  and builds step 3's data there: the index sets, the compacted active rows, z^0 and
  g = A'z^0, the loss and dual sums of the record, diag(A'A) for the preconditioner or, with
  the normal equations, the lower triangle of the partition's Gram matrix of the active rows
  (kept up to date by the rows that entered and left, :class:`solvers.core.gram.
  NormalEquations`), the shift q of eq. (23) for saturated terms (modified Huber);
* with the normal equations, the driver solves (lam I + A'A) delta = r^0 by Cholesky and one
  round (:meth:`~PartitionedNewtonRows.factorized_step`) brings z and A'z to the new point
  and makes the trial round's work at beta_bar there (fused: CGLS then only checks rule (13)
  and usually takes no iteration);
* one round per CGLS iteration: q = A p on the workers (kept), returning ||q||^2, z'q,
  ||z||^2 and A'q; the driver updates beta, r = r - gamma (A'q + lam D p) and ||z||^2 by
  recurrence (one round per iteration; the worker applies z -= gamma q at the next round);
* the trial round (none when it came with the factorized step's): the outputs at beta_bar,
  whether every index set holds and the line search's breakpoints, kept on the workers;
* the exact line search as :func:`solvers.distributed.breakpoint_root` rounds (none when the
  breakpoints are few: they came back with the trial round; usually one otherwise).

What these rows do not offer (``capabilities``: the hinge's homotopy, the row-space solve,
the 'gradient_bound' rule, the per-example slacks of the dual KKT continuation) the solver's
declaration refuses (:meth:`solvers.mfn.params.MFNParams.distributed_refusal`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from solvers import config
from solvers.core.gram import NormalEquations
from solvers.core.linalg import cgls_recurrence_products, cholesky_solve, dot, gram_cost
from solvers.core.rows import BinaryRows
from solvers.core.sparse import rows_nnz
from solvers.distributed.cluster import Partition
from solvers.distributed.problem import (
    DistributedBinaryProblem,
    breakpoint_root,
    keep_breakpoints,
)
from solvers.losses import get_loss
from solvers.losses.kernels import (
    clipped_loss_breakpoints,
    clipped_loss_sets,
    clipped_loss_sets_hold,
    margin_slacks,
)
from solvers.problems.newton_rows import (
    NewtonContext,
    NewtonPoint,
    RowsStart,
    Step3Work,
    TrialAnswer,
    combine,
)


@dataclass
class CGProducts:
    """One partition's answer to a CGLS iteration: ||q||^2, z'q, ||z||^2 and A'q."""

    qq: float
    zq: float
    zz: float
    Atq: np.ndarray


@dataclass
class FactorAnswer:
    """One partition's answer to the factorized step's round: A'z and ||z||^2 at the new
    point, and the trial round's answer at beta_bar made in advance."""

    s: np.ndarray
    zz: float
    trial: TrialAnswer = field(metadata={"combine": "list"})


# -- worker side -----------------------------------------------------------------------------


def _start(part: Partition, beta) -> RowsStart:
    """The partition's terms (sorted rows with the bias column) and outputs at beta."""
    problem = part.state["problem"]
    terms = BinaryRows(problem.X, problem.y, problem.cost, problem.effective_bias_scale)
    part.state["terms"] = terms
    part.state["weight"] = terms.cost / problem.C
    part.state["sqrt_weight"] = np.sqrt(part.state["weight"])
    part.state["outputs"] = terms.outputs(beta)
    part.state["normal"] = None  # the Gram matrix's upkeep (_gram), made at first use
    square = part.state["weight"] * terms.square_norms()
    n = terms.X.shape[0]
    return RowsStart(float(square.sum()), int(n), int(terms.X.nnz) + n,
                     int(gram_cost(terms.X.indptr, np.arange(n))) + n)


def _column_squares(A, row_weight, n_features: int, block: int = 1 << 22) -> np.ndarray:
    """sum_k row_weight_k x_kj^2 for every column j over A's rows (diag(A'A) without the bias
    column), a block of about ``block`` stored entries at a time: the temporaries stay small
    against the rows (a whole pass would make two arrays of the rows' size)."""
    out = np.zeros(n_features)
    indptr = A.indptr
    n_rows = indptr.shape[0] - 1
    start = 0
    while start < n_rows:
        end = int(np.searchsorted(indptr, indptr[start] + block, side="right")) - 1
        end = min(max(end, start + 1), n_rows)
        lo, hi = int(indptr[start]), int(indptr[end])
        values = np.repeat(row_weight[start:end], np.diff(indptr[start:end + 1]))
        if not A.unit_values:
            data = A.data[lo:hi]
            values *= data * data
        out += np.bincount(A.indices[lo:hi], weights=values, minlength=n_features)
        start = end
    return out


@lru_cache(maxsize=8)
def _lower(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The indices of an n x n matrix's lower triangle, row by row (how a Gram matrix is
    sent: n (n + 1) / 2 doubles, its half that the Cholesky factorization reads)."""
    return np.tril_indices(n)


@dataclass
class GramChange:
    """A partition's Gram matrix sent as its change since the last one it sent (the driver
    keeps their sum): the lower triangle of the change on the parameters ``columns``
    (packed by :func:`_lower`), or on all of them (``columns`` None).  Rows entering or
    leaving the active set change only the entries of the columns they hold, so after the
    upkeep's update (not a rebuild) the change is confined to those; nothing changed sends
    no columns."""

    columns: np.ndarray | None
    packed: np.ndarray


def _gram(part: Partition, active) -> GramChange:
    """sum_k c_k x~_k x~_k' over the partition's active rows, kept on the partition by the
    single machine's upkeep (:class:`solvers.core.gram.NormalEquations`), sent as its change
    since the last one sent (:class:`GramChange`; the whole matrix the first time)."""
    st = part.state
    if st["normal"] is None:
        st["normal"] = NormalEquations(st["terms"], st["weight"])
        st["gram_sent"] = None
    normal = st["normal"]
    normal.update(active)
    G = normal.G
    n = G.shape[0]
    sent = st["gram_sent"]
    st["gram_sent"] = G.copy()
    change = G if sent is None else G - sent
    columns = None
    if sent is not None:  # an entry (i, j) changed: both i and j are among the columns
        changed = change != 0.0
        columns = np.flatnonzero(np.any(changed, axis=0) | np.any(changed, axis=1))
    # the columns' triangle and their indices, when that is less than the whole triangle
    if columns is None or (columns.size * (columns.size + 1) // 2) * 8 + 4 * columns.size \
            >= 8 * n * (n + 1) // 2:
        return GramChange(None, change[_lower(n)])
    block = change[np.ix_(columns, columns)]
    return GramChange(columns.astype(np.int32), block[_lower(columns.size)])


def _copy_bytes(terms: BinaryRows, entries: int, n_rows: int) -> int:
    """What :meth:`BinaryRows.compact` allocates for ``n_rows`` rows holding ``entries``
    stored entries: their column indices and values (none for unit values), the row
    pointers and the row numbers."""
    per_entry = terms.X.indices.itemsize + (0 if terms.unit_values else 8)
    return entries * per_entry + 16 * (n_rows + 1)


def _move(st: dict, move) -> None:
    """The outputs moved as the driver asked with this round: None, "accept" (the trial's),
    ("reset", beta) (a fresh product: a rejected step's point given back) or the step delta
    along the ray."""
    if isinstance(move, tuple):
        st["outputs"] = st["terms"].outputs(move[1])
    elif move == "accept":
        st["outputs"] = st["outputs_bar"]
    elif move is not None:
        st["outputs"] = st["outputs"] + move * (st["outputs_bar"] - st["outputs"])
    st.pop("outputs_bar", None)


def _point(part: Partition, move, loss_name, precondition, gram, compact_max=1.0,
           memory_fraction=None) -> NewtonPoint:
    """Move the outputs (:func:`_move`), then step 3's data at the point (its shift
    unscaled, its Gram matrix's lower triangle packed).

    The active rows are copied into compacted arrays (CGLS then streams over them only) when
    they hold at most ``compact_max`` of the partition's stored entries
    (``config.DISTRIBUTED_COMPACT_MAX_FRACTION``) and the copy fits in ``memory_fraction`` of
    the worker's memory limit with what the worker holds already
    (``config.DISTRIBUTED_COMPACT_MEMORY_FRACTION``, :meth:`Partition.memory_room`);
    otherwise CGLS runs over all the rows, the inactive ones weighted zero: no copy, more
    work."""
    st = part.state
    terms = st["terms"]
    _move(st, move)
    loss = get_loss(loss_name)
    lo, width = loss.xi_lo, loss.width
    t = terms.labels
    outputs = st["outputs"]
    xi = np.empty_like(outputs)
    margin_slacks(t, outputs, xi)
    st["xi"] = xi
    active, saturated = clipped_loss_sets(xi, lo, width)
    # the last point's compacted rows go before this point's are made: a copy of the active
    # rows is the largest thing a partition makes, and two at once would bound the rows a
    # worker's memory holds (bench distributed_memory)
    st["A"] = st["z"] = st["q"] = None
    n = xi.shape[0]
    masked = False
    if 0 < active.size < n:
        entries = int(rows_nnz(terms.X.indptr, active))  # one pass for both rules
        masked = (compact_max < 1.0 and entries > compact_max * terms.X.nnz) or \
            _copy_bytes(terms, entries, int(active.size)) > part.memory_room(memory_fraction)
    if masked:  # every row, the inactive ones weighted zero
        A = terms.everything
        sqrt_c = np.zeros(n)
        sqrt_c[active] = st["sqrt_weight"][active]
        z = np.zeros(n)
        z[active] = sqrt_c[active] * t[active] * (xi[active] - lo)
        row_weight = np.zeros(n)
        row_weight[active] = st["weight"][active]
    else:
        A, _, _ = terms.compact(active)
        sqrt_c = st["sqrt_weight"][active]
        z = sqrt_c * t[active] * (xi[active] - lo)
        row_weight = st["weight"][active]
    st["A"], st["sqrt_c"], st["z"], st["q"], st["active"] = A, sqrt_c, z, None, active
    g = terms.compact_adjoint(A, sqrt_c * z)
    shift = None
    if saturated.size:
        shift = terms.adjoint(saturated, (st["weight"] * t)[saturated])
    cost = terms.cost
    alpha = cost * loss.derivative(xi)
    diagonal = G = None
    weight = st["weight"][active]
    s = terms.extra_value
    if precondition:
        # diag(A'A) = sum_k c_k x~_k^2 over the active rows, from A's arrays
        diagonal = np.zeros(terms.n_params)
        diagonal[:-1] = _column_squares(A, row_weight, terms.n_features)
        diagonal[-1] = s * s * float(weight.sum())
    if gram:
        G = _gram(part, active)
    norms = (st["weight"] * terms.square_norms())[active]
    return NewtonPoint(int(active.size), int(saturated.size), g, float(dot(z, z)), shift,
                       loss_sum=float(loss.sum(xi, cost)), alpha_sum=float(alpha.sum()),
                       conjugate=float(loss.conjugate_sum(alpha, cost)), diagonal=diagonal,
                       norm_sum=float(norms.sum()), norm_square=float((norms * norms).sum()),
                       gram=G, uncompacted=int(masked))


def _trial(part: Partition, beta_bar, scale, kappa, lo, width, set_tol, quantiles, small,
           window=None) -> TrialAnswer:
    """The outputs at beta_bar (kept; the point's own when beta_bar is None), whether the
    index sets hold within ``set_tol``, the ordinates of the line search's slope at 0 and 1
    (loss part) and its breakpoints (kept), with the first round's summary of them."""
    st = part.state
    terms = st["terms"]
    outputs_bar = st["outputs"].copy() if beta_bar is None else terms.outputs(beta_bar)
    st["outputs_bar"] = outputs_bar
    xi = st["xi"]
    xi_bar = np.empty_like(outputs_bar)
    margin_slacks(terms.labels, outputs_bar, xi_bar)
    holds = bool(clipped_loss_sets_hold(xi, xi_bar, lo, width, set_tol))
    l0, r0, bp, dl, dr = clipped_loss_breakpoints(xi, xi_bar, scale * terms.cost * kappa, lo,
                                                  width)
    return TrialAnswer(holds, float(l0), float(r0),
                       keep_breakpoints(part, bp, dl, dr, quantiles, small, window=window))


def _factor_step(part: Partition, delta, trial_point, trial_options) -> FactorAnswer:
    """Bring CGLS's z to beta_bar + delta (the factorized step): z -= sqrt(c) A~ delta;
    returns A'z, ||z||^2 and the :func:`_trial` round at ``trial_point`` (made here in
    advance: it is the trial round's whenever CGLS's check of rule (13) then takes no
    iteration, the usual case after an exact factorization)."""
    st = part.state
    terms = st["terms"]
    A, sqrt_c = st["A"], st["sqrt_c"]
    st["z"] = st["z"] - sqrt_c * terms.compact_forward(A, delta)
    st["q"] = None
    z = st["z"]
    return FactorAnswer(terms.compact_adjoint(A, sqrt_c * z), float(dot(z, z)),
                        _trial(part, trial_point, *trial_options))


def _cg(part: Partition, p, gamma) -> CGProducts:
    """One CGLS iteration's products on the partition: z -= gamma q (the last iteration's),
    q = A p, and ||q||^2, z'q, ||z||^2 and A'q, in one pass over the rows
    (:func:`solvers.core.linalg.cgls_recurrence_products`: each row read once for both
    products, where two passes and four n-vector temporaries were made until issue 51)."""
    st = part.state
    qq, zq, zz, atq, st["q"] = cgls_recurrence_products(
        st["A"], st["sqrt_c"], st["z"], st["q"], gamma, p,
        bias_scale=st["terms"].extra_value)
    return CGProducts(qq, zq, zz, atq)


def _loss_sum(part: Partition, beta) -> float:
    """The loss sum at beta from a fresh product (the solution's objective)."""
    terms = part.state["terms"]
    outputs = terms.outputs(beta)
    xi = np.empty_like(outputs)
    margin_slacks(terms.labels, outputs, xi)
    return float(part.state["problem"].loss_function.sum(xi, terms.cost))


# -- driver side ----------------------------------------------------------------------------


def _trial_point(beta_bar, shift, extra_value):
    """Step 4's beta_bar from CGLS's solution of (23): the shift q added back, the bias 0
    when it is not a parameter (what the loop does after step 3)."""
    beta_bar = beta_bar.copy()
    if shift is not None:
        beta_bar += shift
    if extra_value == 0.0:
        beta_bar[-1] = 0.0
    return beta_bar


class PartitionedNewtonRows:
    """The rows of a :class:`~solvers.distributed.DistributedBinaryProblem` (module
    docstring)."""

    capabilities = frozenset()

    def __init__(self, problem: DistributedBinaryProblem, on_start=None):
        self.problem = problem
        self.on_start = on_start  # called with the loop's beta (what a lost worker resumes from)
        self.group = problem.group
        self.n_params = problem.n_features + 1
        self.extra_value = problem.effective_bias_scale
        self.loss_name = problem.loss
        self.preconditioning = True  # diag(A'A) asked with the point (MFNParams)
        self._move = None  # how the workers' outputs move with the next point round
        self._made: list | None = None  # the trial answers made with the factorized step
        self._trial: list | None = None
        self._start: RowsStart | None = None
        self._gram: np.ndarray | None = None  # the sum of the partitions' Gram matrices

    def round(self, function, *args) -> list:
        return self.group.map(function, *args)

    def _small(self) -> int:
        return max(config.DISTRIBUTED_GATHER_BREAKPOINTS // max(len(self.group), 1), 1)

    def _trial_options(self, context: NewtonContext) -> tuple:
        loss = context.loss
        return (context.scale, loss.kappa, loss.xi_lo, loss.width, context.set_tol,
                config.DISTRIBUTED_PIVOTS, self._small(), config.DISTRIBUTED_NEWTON_WINDOW)

    # -- the protocol ----------------------------------------------------------------------------
    def start(self, beta: np.ndarray) -> RowsStart:
        """The outputs at beta on the workers; ``on_start(beta)`` then (``beta`` is the loop's,
        updated in place: always the last accepted iterate, what a solve that lost a worker
        resumes from)."""
        self._start = combine(self.round(_start, beta))
        self._gram = None  # the partitions start their Gram matrices again
        if self.on_start is not None:
            self.on_start(beta)
        return self._start

    def outputs_state(self) -> None:
        return None  # on the workers

    def scale_mean(self) -> float:
        s = self._start
        return s.scale_sum / s.n_terms if s.n_terms else 0.0

    def choose_normal_equations(self, choice: str, pays) -> bool:
        """The engine's rule on the partitions' sums: then each partition keeps the Gram
        matrix of its active rows, one reduction of its lower triangle per Newton
        iteration."""
        if choice in ("cgls", "dual_cg"):
            return False
        return choice == "cholesky" or pays(self.n_params, self._start.nnz, self._start.build)

    def point(self, context: NewtonContext, move=None, gram: bool = False,
              diagonal: bool = False) -> NewtonPoint:
        if move is None:
            move, self._move = self._move, None
        point = combine(self.round(_point, move, self.loss_name, diagonal and not gram, gram,
                                   float(config.DISTRIBUTED_COMPACT_MAX_FRACTION),
                                   config.DISTRIBUTED_COMPACT_MEMORY_FRACTION))
        if point.shift is not None:
            point.shift *= context.loss.width / context.lam
        if gram:  # the partitions' changes added to their sum: its lower triangle, what
            # the factorization reads
            if self._gram is None:
                self._gram = np.zeros((self.n_params, self.n_params))
            G = self._gram
            for change in point.gram:
                if change.columns is None:
                    G[_lower(self.n_params)] += change.packed
                elif change.columns.size:
                    rows, cols = _lower(change.columns.size)
                    G[change.columns[rows], change.columns[cols]] += change.packed
            point.gram = G.copy()
        else:
            point.gram = None
        self._made = self._trial = None
        return point

    def commit(self) -> None:
        pass  # the workers moved with the point round

    def revert(self, beta: np.ndarray) -> None:
        """The point round moved the workers' outputs to a rejected step: a fresh product at
        ``beta`` with the next round."""
        self._move = ("reset", np.array(beta, dtype=np.float64))

    def step3_start(self, point: NewtonPoint, lam: float, beta_bar: np.ndarray) -> Step3Work:
        return Step3Work(s=point.g, zz=point.zz)

    def factorized_step(self, work: Step3Work, point: NewtonPoint, context: NewtonContext,
                        beta_bar: np.ndarray) -> bool:
        """(lam I + A'A) delta = r^0 by Cholesky on the driver, then z and A'z at the new
        point in one round, with the trial round at beta_bar there."""
        if point.gram is None:
            return False
        M = point.gram.copy()
        M[np.diag_indices_from(M)] += context.lam
        delta = cholesky_solve(M, point.g - context.lam * beta_bar)
        if delta is None:
            return False
        beta_bar += delta
        answer = combine(self.round(_factor_step, delta,
                                    _trial_point(beta_bar, point.shift, self.extra_value),
                                    self._trial_options(context)))
        work.s, work.zz = answer.s, answer.zz
        self._made = answer.trial
        return True

    def cgls(self, work: Step3Work, point: NewtonPoint, beta_bar: np.ndarray, lam: float,
             eps: float, max_iter: int, precondition: float, forcing: float,
             rho: float | None) -> tuple[int, bool]:
        """CGLS from the warm start (``work``: A'z and ||z||^2 at beta_bar, which it updates
        in place), one round per iteration (module docstring); the diagonal preconditioner
        M = lam + alpha diag(A'A) when ``precondition`` = alpha > 0 and the point has it."""
        m = None
        if precondition and point.diagonal is not None:
            d = lam + precondition * point.diagonal
            m = np.where(d > 0.0, 1.0 / d, 1.0)
        zz = work.zz
        r = work.s - lam * beta_bar
        rr = dot(r, r)
        if rr <= (eps * np.sqrt(zz)) ** 2 or rr == 0.0:
            return 0, True
        self._made = None  # beta_bar moves: the trial made in advance is not its
        forced = forcing * forcing * rr
        m = np.ones(self.n_params) if m is None else m
        p = m * r
        phi1 = dot(r, p)
        phi2 = dot(p, p)
        gamma_prev = 0.0
        for iteration in range(1, max_iter + 1):
            cg = combine(self.round(_cg, p, gamma_prev))
            denominator = cg.qq + lam * phi2
            if denominator <= 0.0:
                return iteration - 1, False
            gamma = phi1 / denominator
            beta_bar += gamma * p
            r -= gamma * (cg.Atq + lam * p)
            zz = cg.zz - 2.0 * gamma * cg.zq + gamma * gamma * cg.qq
            gamma_prev = gamma
            rr = dot(r, r)
            if rr <= (eps * np.sqrt(max(zz, 0.0))) ** 2 or rr == 0.0:
                return iteration, True
            if rr <= forced:
                return iteration, False
            rmr = dot(r, m * r)
            omega = rmr / phi1
            phi1 = rmr
            p = m * r + omega * p
            phi2 = dot(p, p)
        return max_iter, False

    def trial(self, point: NewtonPoint, beta_bar: np.ndarray, at_point: bool,
              context: NewtonContext) -> TrialAnswer:
        if self._made is not None and not at_point:
            answers = self._made  # CGLS did not move beta_bar: the trial made in advance
        else:
            answers = self.round(_trial, None if at_point else beta_bar,
                                 *self._trial_options(context))
        self._made = None
        self._trial = answers
        return combine(answers)

    def line_root(self, point: NewtonPoint, trial: TrialAnswer, context: NewtonContext,
                  l_reg: float, r_reg: float) -> float:
        """Step 6 by :func:`breakpoint_root` over the breakpoints the trial round kept."""
        return breakpoint_root(self.group, trial.summaries, l_reg + trial.l0,
                               r_reg + trial.r0, jumps=False,
                               lines=[(a.l0, a.r0) for a in self._trial])

    def objective(self, beta: np.ndarray, point: NewtonPoint, context: NewtonContext
                  ) -> float:
        """The objective at this stage's C (the loss sums are at the problem's costs)."""
        return self.problem.regularizer(beta) + point.loss_sum * context.scale

    def problem_objective(self, beta: np.ndarray, point: NewtonPoint) -> float:
        return self.problem.regularizer(beta) + point.loss_sum

    def dual_objective(self, point: NewtonPoint, context: NewtonContext,
                       w_alpha: np.ndarray) -> float:
        return point.alpha_sum - self.problem.regularizer(w_alpha) - point.conjugate

    def active_norm_stats(self, point: NewtonPoint) -> tuple[float, float]:
        n = point.n_active
        if not n:
            return 0.0, 0.0
        mean = point.norm_sum / n
        return mean, float(np.sqrt(max(point.norm_square / n - mean * mean, 0.0)))

    def record_extras(self, point: NewtonPoint) -> dict:
        extras = {"distributed": True}
        if point.uncompacted:
            extras["uncompacted_partitions"] = int(point.uncompacted)
        return extras

    def loss_sum(self, beta: np.ndarray) -> float:
        """The loss sum at beta from a fresh product (the solution's objective)."""
        return float(sum(self.round(_loss_sum, beta)))
