"""The rows of a least-squares Newton method, as its one loop sees them (``docs/design.md``
section 3.9): a row-operator protocol with a local and a partitioned implementation.

Appendix A of Keerthi & DeCoste (``solvers.mfn.engine``) asks the rows of a problem for a few
things per Newton iteration, each the answer of one evaluation over the rows (a *round* when
the rows are partitioned):

* :meth:`~NewtonRows.start`: the outputs at the starting point and the sizes the linear
  solver's rule reads (:class:`RowsStart`);
* :meth:`~NewtonRows.point`: step 3's data at the current point, after moving the outputs
  (accepting the trial point, or a step along the ray): :class:`NewtonPoint`;
* :meth:`~NewtonRows.factorized_step`, :meth:`~NewtonRows.cgls`: step 3's solve, from the
  warm start z^0, r^0 (:class:`Step3Work`);
* :meth:`~NewtonRows.trial`: the outputs at the trial point beta_bar and whether the index sets
  hold (:class:`TrialAnswer`); :meth:`~NewtonRows.line_root`: step 6's exact line search;
* :meth:`~NewtonRows.objective`, :meth:`~NewtonRows.problem_objective`,
  :meth:`~NewtonRows.dual_objective`: the values the records report, from the point.

:class:`LocalNewtonRows` is the terms of one problem in this process (a row operator of
:mod:`solvers.core.rows`: binary, ordinal or regression terms); CGLS runs as one compiled kernel
over the compacted active rows.  The partitioned implementation
(:class:`solvers.distributed.newton_rows.PartitionedNewtonRows`) answers the same calls by
rounds over the partitions of a distributed dataset, the partitions' answers named
dataclasses summed field by field (:func:`combine`).  What an implementation cannot do it
declares (``capabilities``): the loop never asks it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Protocol

import numpy as np

from solvers import config
from solvers.core.gram import NormalEquations
from solvers.core.linalg import cg_dual_compact, cgls_compact, dot, gram_cost
from solvers.core.linesearch import piecewise_linear_root
from solvers.losses import ClippedLoss
from solvers.losses.kernels import (
    clipped_loss_breakpoints,
    clipped_loss_sets,
    clipped_loss_sets_hold,
    margin_slacks,
)

#: what a row operator may offer beyond the protocol's core (``capabilities``)
ROW_SPACE = "row_space"  # step 3 by CG in the active rows' space (cg_dual_compact)
GRADIENT_BOUND = "gradient_bound"  # the data norm rho of CGLS's 'gradient_bound' rule
HOMOTOPY = "homotopy"  # the objective of another loss than the round's (the hinge homotopy)
SLACKS = "slacks"  # the per-example slacks at the point (the dual KKT continuation)


def combine(answers: list):
    """The sum of the partitions' answers to one round (dataclasses of one type), field by
    field: numbers and arrays summed, None skipped (None when every one is None); a field with
    ``metadata={"combine": "all"}`` and-ed, ``"max"`` or ``"min"`` the largest or smallest
    (None skipped), ``"list"`` kept as the list of the answers'."""
    first = answers[0]
    values = {}
    for f in fields(first):
        items = [getattr(a, f.name) for a in answers]
        how = f.metadata.get("combine", "sum")
        if how == "list":
            values[f.name] = items
        elif how == "all":
            values[f.name] = all(items)
        elif how in ("max", "min"):
            present = [x for x in items if x is not None]
            values[f.name] = (max if how == "max" else min)(present) if present else None
        else:
            present = [x for x in items if x is not None]
            if not present:
                values[f.name] = None
            elif isinstance(present[0], np.ndarray):
                total = present[0].copy()
                for x in present[1:]:
                    total += x
                values[f.name] = total
            else:
                values[f.name] = sum(present[1:], present[0])
    return type(first)(**values)


@dataclass(frozen=True)
class NewtonContext:
    """What a run of Appendix A evaluates with: the round's loss, this stage's C against the
    problem's (a stage of the C path scales every cost by C / target_C), lambda = 1 / (C kappa)
    and step 5's tolerance."""

    loss: ClippedLoss
    C: float
    target_C: float
    lam: float
    set_tol: float

    @property
    def scale(self) -> float:
        return self.C / self.target_C

    @property
    def at_target(self) -> bool:
        return self.C == self.target_C


@dataclass
class RowsStart:
    """The answer of :meth:`NewtonRows.start`: sum_k c_k ||x~_k||^2 (c_k = C_k / C), the terms,
    the stored entries with the bias column and the multiply-adds of the Gram matrix's build
    (``linear_solver="auto"``'s rule reads the last two)."""

    scale_sum: float
    n_terms: int
    nnz: int
    build: int


@dataclass
class NewtonPoint:
    """Step 3's data at the current point (summed over the rows): |I1|, |I2|, g = A'z^0,
    ||z^0||^2, the shift q of eq. (23) (None without saturated terms).  The partitioned rows
    add the sums the records' values come from (the loss at the problem's costs, sum alpha,
    the conjugate sum), diag(A'A) or the Gram matrix when asked (each partition's change to
    it, kept as a list and summed by the rows: ``solvers.distributed.newton_rows``), the
    active rows' weighted squared norms (sum, sum of squares) and the partitions that did
    not compact their active rows; ``rows``: what the implementation keeps of the point (the
    local one: the slacks, the compacted rows, z^0)."""

    n_active: int
    n_saturated: int
    g: np.ndarray
    zz: float
    shift: np.ndarray | None
    loss_sum: float | None = None
    alpha_sum: float | None = None
    conjugate: float | None = None
    diagonal: np.ndarray | None = None
    norm_sum: float = 0.0
    norm_square: float = 0.0
    gram: Any = field(default=None, metadata={"combine": "list"})
    uncompacted: int = 0
    rows: Any = field(default=None, repr=False)


@dataclass
class Step3Work:
    """CGLS's warm start at beta_bar: ``s`` = A'z (the local rows: z itself, ``residual``,
    and r = A'z - lam beta_bar, ``gradient``) and ||z||^2 (``zz``)."""

    s: np.ndarray | None = None
    zz: float = 0.0
    residual: np.ndarray | None = None
    gradient: np.ndarray | None = None


@dataclass
class TrialAnswer:
    """Step 5 at the trial point: whether every index set holds within tol; the loss parts of
    the line search's slope at 0 and 1 and its breakpoints when the rows made them with the
    trial (the partitioned rows: kept on the workers, ``summaries`` their first answers)."""

    holds: bool = field(metadata={"combine": "all"})
    l0: float | None = None
    r0: float | None = None
    summaries: list | None = field(default=None, metadata={"combine": "list"})


class NewtonRows(Protocol):
    """The row operator Appendix A's loop runs over (module docstring)."""

    n_params: int
    extra_value: float
    capabilities: frozenset

    def start(self, beta: np.ndarray) -> RowsStart: ...
    def outputs_state(self) -> np.ndarray | None: ...
    def choose_normal_equations(self, choice: str, pays) -> bool: ...
    def point(self, context: NewtonContext, move=None, gram: bool = False,
              diagonal: bool = False) -> NewtonPoint: ...
    def commit(self) -> None: ...
    def revert(self, beta: np.ndarray) -> None: ...
    def step3_start(self, point: NewtonPoint, lam: float, beta_bar: np.ndarray
                    ) -> Step3Work: ...
    def factorized_step(self, work: Step3Work, point: NewtonPoint, context: NewtonContext,
                        beta_bar: np.ndarray) -> bool: ...
    def cgls(self, work: Step3Work, point: NewtonPoint, beta_bar: np.ndarray, lam: float,
             eps: float, max_iter: int, precondition: float, forcing: float,
             rho: float | None) -> tuple[int, bool]: ...
    def trial(self, point: NewtonPoint, beta_bar: np.ndarray, at_point: bool,
              context: NewtonContext) -> TrialAnswer: ...
    def line_root(self, point: NewtonPoint, trial: TrialAnswer, context: NewtonContext,
                  l_reg: float, r_reg: float) -> float: ...
    def objective(self, beta: np.ndarray, point: NewtonPoint, context: NewtonContext
                  ) -> float: ...
    def problem_objective(self, beta: np.ndarray, point: NewtonPoint) -> float: ...
    def dual_objective(self, point: NewtonPoint, context: NewtonContext,
                       w_alpha: np.ndarray) -> float: ...
    def active_norm_stats(self, point: NewtonPoint) -> tuple[float, float]: ...
    def record_extras(self, point: NewtonPoint) -> dict: ...


@dataclass
class _LocalPoint:
    """What the local rows keep of a point: its slacks, the index sets, the active terms
    compacted for CGLS (with the pair structure of ordinal terms) and z^0."""

    xi: np.ndarray
    active: np.ndarray
    A: Any
    pair_ptr: np.ndarray | None
    pair_col: np.ndarray | None
    residual: np.ndarray


class LocalNewtonRows:
    """The terms of one problem in this process (``terms``: a row operator of
    :mod:`solvers.core.rows`; ``problem`` evaluates every objective and dual value)."""

    capabilities = frozenset({ROW_SPACE, GRADIENT_BOUND, HOMOTOPY, SLACKS})

    def __init__(self, terms, problem, C: float):
        self.terms = terms
        self.problem = problem
        self.t = terms.labels
        self.n_params = terms.n_params
        self.extra_value = terms.extra_value
        self.weight = terms.cost / C  # c_i, the example weights (the same at every stage)
        self.sqrt_weight = np.sqrt(self.weight)
        self.target_cost = terms.cost  # C_i of the problem asked for
        self.normal: NormalEquations | None = None
        self.outputs: np.ndarray | None = None
        self._candidate: np.ndarray | None = None
        self._outputs_bar: np.ndarray | None = None
        self._xi_bar: np.ndarray | None = None
        self._rho: float | None = None
        self._stage: tuple[float, np.ndarray] | None = None

    def retarget(self, problem) -> None:
        """The same terms at ``problem``'s C (a C path): the sorted rows, the Gram upkeep and
        the data norm depend on the example weights only."""
        self.problem = problem
        self.target_cost = self.weight * problem.C
        self._stage = None

    def cost(self, context: NewtonContext) -> np.ndarray:
        """C_i of the problem being solved (a stage of the C path scales the asked ones)."""
        if context.C == context.target_C:
            return self.target_cost
        if self._stage is None or self._stage[0] != context.C:
            self._stage = (context.C, self.target_cost * (context.C / context.target_C))
        return self._stage[1]

    # -- the protocol ----------------------------------------------------------------------------
    def start(self, beta: np.ndarray) -> RowsStart:
        self.outputs = self.terms.outputs(beta)
        n = self.t.shape[0]
        indptr = self.terms.X.indptr
        return RowsStart(float((self.weight * self.terms.square_norms()).sum()), int(n),
                         int(indptr[-1]) + self.terms.X.shape[0],
                         int(gram_cost(indptr, np.arange(self.terms.X.shape[0])))
                         + self.terms.X.shape[0])

    def outputs_state(self) -> np.ndarray | None:
        return self.outputs

    def scale_mean(self) -> float:
        """mean_k c_k ||x~_k||^2 (the C path's lowest stage)."""
        return float(np.mean(self.weight * self.terms.square_norms()))

    def choose_normal_equations(self, choice: str, pays) -> bool:
        """Keep the Gram matrix of the active terms (``linear_solver``: "cholesky", or "auto"
        when ``pays(n_params, nnz, build)``)."""
        if choice in ("cgls", "dual_cg"):
            return False
        if choice == "auto":
            indptr = self.terms.X.indptr
            nnz = int(indptr[-1]) + self.terms.X.shape[0]  # with the bias column
            build = gram_cost(indptr, np.arange(self.terms.X.shape[0])) + self.terms.X.shape[0]
            if not pays(self.n_params, nnz, build):
                return False
        self.normal = NormalEquations(self.terms, self.weight)
        return True

    def point(self, context: NewtonContext, move=None, gram: bool = False,
              diagonal: bool = False) -> NewtonPoint:
        """Step 3's data at the outputs moved by ``move`` (None: where they are; "accept": to
        the trial's; a number delta: along the ray to them), kept as a candidate until
        :meth:`commit`.  ``gram`` and ``diagonal`` are the partitioned rows' (the local Gram
        upkeep is the factorized step's, CGLS's diagonal its kernel's)."""
        if move is None:
            outputs = self.outputs
        elif move == "accept":
            outputs = self._outputs_bar
        else:
            outputs = self.outputs + move * (self._outputs_bar - self.outputs)
        self._candidate = outputs
        loss = context.loss
        xi = np.empty_like(outputs)
        margin_slacks(self.t, outputs, xi)
        lo = loss.xi_lo
        active, saturated = clipped_loss_sets(xi, lo, loss.width)
        A, pair_ptr, pair_col = self.terms.compact(active)
        sqrt_c = self.sqrt_weight[active]
        residual = sqrt_c * self.t[active] * (xi[active] - lo)
        g = self.terms.compact_adjoint(A, sqrt_c * residual, pair_ptr, pair_col)
        shift = None
        if saturated.size:
            # q = (width / lambda) sum_{I2} c_i t_i x~_i, eq. (23)
            shift = self.terms.adjoint(saturated, (self.weight * self.t)[saturated])
            shift *= loss.width / context.lam
        return NewtonPoint(int(active.size), int(saturated.size), g, float("nan"), shift,
                           rows=_LocalPoint(xi, active, A, pair_ptr, pair_col, residual))

    def commit(self) -> None:
        if self._candidate is not None and self._candidate is not self.outputs:
            self.outputs[:] = self._candidate
        self._candidate = None

    def revert(self, beta: np.ndarray) -> None:
        self._candidate = None  # the outputs never moved

    def slacks(self, point: NewtonPoint) -> np.ndarray:
        return point.rows.xi

    def step3_start(self, point: NewtonPoint, lam: float, beta_bar: np.ndarray) -> Step3Work:
        return Step3Work(residual=point.rows.residual.copy(), gradient=point.g - lam * beta_bar)

    def factorized_step(self, work: Step3Work, point: NewtonPoint, context: NewtonContext,
                        beta_bar: np.ndarray) -> bool:
        """Solve (lam I + A'A) delta = r^0 by Cholesky, move ``beta_bar`` by delta and bring
        z and r to the new point: two products over the active terms.  False, changing
        nothing, when the factorization fails."""
        lam = context.lam
        rows = point.rows
        delta = self.normal.solve(rows.active, lam, work.gradient)
        if delta is None:
            return False
        sqrt_c = self.sqrt_weight[rows.active]
        beta_bar += delta
        work.residual -= sqrt_c * self.terms.compact_forward(rows.A, delta, rows.pair_ptr,
                                                             rows.pair_col)
        work.gradient[:] = self.terms.compact_adjoint(rows.A, sqrt_c * work.residual,
                                                      rows.pair_ptr, rows.pair_col)
        work.gradient -= lam * beta_bar
        return True

    def cgls(self, work: Step3Work, point: NewtonPoint, beta_bar: np.ndarray, lam: float,
             eps: float, max_iter: int, precondition: float, forcing: float,
             rho: float | None) -> tuple[int, bool]:
        rows = point.rows
        return cgls_compact(rows.A, self.sqrt_weight[rows.active], None, beta_bar,
                            bias_scale=self.extra_value, lam=lam, eps=eps, max_iter=max_iter,
                            pair_ptr=rows.pair_ptr, pair_col=rows.pair_col,
                            precondition=precondition, rho=rho, residual=work.residual,
                            gradient=work.gradient, forcing=forcing)

    def row_space_solve(self, work: Step3Work, point: NewtonPoint, beta_bar: np.ndarray,
                        lam: float, eps: float, max_iter: int, forcing: float
                        ) -> tuple[int, bool]:
        """The same least-squares problem as (u = z / lambda, beta = A'u) over the active rows,
        from the same warm start (:func:`cg_dual_compact`)."""
        rows = point.rows
        return cg_dual_compact(rows.A, self.sqrt_weight[rows.active], beta_bar,
                               bias_scale=self.extra_value, lam=lam, eps=eps,
                               max_iter=max_iter, residual=work.residual,
                               gradient=work.gradient, forcing=forcing)

    def row_space_pays(self, point: NewtonPoint, lam: float) -> bool:
        """lambda at most ``MFN_ROW_SPACE_MAX_LAMBDA`` times the median c_i ||x~_i||^2 of the
        active rows."""
        norms = (self.weight * self.terms.square_norms())[point.rows.active]
        return lam <= config.MFN_ROW_SPACE_MAX_LAMBDA * float(np.median(norms))

    def has_pairs(self, point: NewtonPoint) -> bool:
        return point.rows.pair_ptr is not None

    def active_norm_stats(self, point: NewtonPoint) -> tuple[float, float]:
        """Mean and standard deviation of c_k ||x~_k||^2 over the active terms."""
        norms = (self.weight * self.terms.square_norms())[point.rows.active]
        if not norms.size:
            return 0.0, 0.0
        return float(norms.mean()), float(norms.std())

    def data_norm(self) -> float:
        """rho = ||X~||, the largest singular value of the weighted matrix of all terms, by
        power iteration to 1% (computed once)."""
        if self._rho is None:
            everything = np.arange(self.t.shape[0])
            v = np.ones(self.n_params)
            rho = 0.0
            for _ in range(100):
                v /= np.sqrt(dot(v, v))
                u = self.sqrt_weight * self.terms.forward(everything, v)
                v = self.terms.adjoint(everything, self.sqrt_weight * u)
                previous, rho = rho, np.sqrt(dot(u, u))
                if rho - previous <= 1e-2 * rho:
                    break
            self._rho = rho
        return self._rho

    def trial(self, point: NewtonPoint, beta_bar: np.ndarray, at_point: bool,
              context: NewtonContext) -> TrialAnswer:
        """The outputs at beta_bar (a copy of the point's when ``at_point``) and step 5's
        test: active terms keep xi >= -tol (and, with three sets, <= hi + tol), inactive ones
        xi <= tol, saturated ones xi >= hi - tol."""
        outputs = self.outputs
        self._outputs_bar = outputs.copy() if at_point else self.terms.outputs(beta_bar)
        xi_bar = np.empty_like(outputs)
        margin_slacks(self.t, self._outputs_bar, xi_bar)
        self._xi_bar = xi_bar
        loss = context.loss
        return TrialAnswer(bool(clipped_loss_sets_hold(point.rows.xi, xi_bar, loss.xi_lo,
                                                       loss.width, context.set_tol)))

    def line_root(self, point: NewtonPoint, trial: TrialAnswer, context: NewtonContext,
                  l_reg: float, r_reg: float) -> float:
        """Step 6, eqs. (14)-(18): the root of the slope on the ray (its ordinates at 0 and 1,
        the regularizer's parts given) over the breakpoints where terms change set."""
        loss = context.loss
        loss_l0, loss_r0, breakpoints, dl, dr = clipped_loss_breakpoints(
            point.rows.xi, self._xi_bar, self.cost(context) * loss.kappa, loss.xi_lo,
            loss.width)
        return piecewise_linear_root(l_reg + loss_l0, r_reg + loss_r0, breakpoints, dl, dr)

    def objective(self, beta: np.ndarray, point: NewtonPoint, context: NewtonContext
                  ) -> float:
        """The objective with the round's loss at this stage's costs."""
        return self.problem.objective_from_slacks(beta, point.rows.xi, self.cost(context),
                                                  context.loss)

    def problem_objective(self, beta: np.ndarray, point: NewtonPoint) -> float:
        """The objective of the problem asked for (its loss and C)."""
        return self.problem_objective_from_slacks(beta, point.rows.xi)

    def problem_objective_from_slacks(self, beta: np.ndarray, xi: np.ndarray) -> float:
        return self.problem.objective_from_slacks(beta, xi, self.target_cost)

    def dual_objective(self, point: NewtonPoint, context: NewtonContext,
                       w_alpha: np.ndarray | None) -> float:
        """D(alpha) at alpha_i = C_i loss'(xi_i) (the problem's costs)."""
        return self.dual_from_slacks(point.rows.xi, context.loss, w_alpha)

    def dual_from_slacks(self, xi: np.ndarray, loss: ClippedLoss,
                         w_alpha: np.ndarray | None = None) -> float:
        cost = self.target_cost
        alpha = cost * loss.derivative(xi)
        if w_alpha is None:
            support = np.flatnonzero(alpha)
            w_alpha = self.terms.adjoint(support, (alpha * self.t)[support])
        return self.problem.dual_objective(alpha, w_alpha, cost)

    def record_extras(self, point: NewtonPoint) -> dict:
        return {}
