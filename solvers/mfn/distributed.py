"""Appendix A of Keerthi & DeCoste on a distributed dataset (``mfn`` for the squared hinge
and modified Huber losses, binary and one-vs-rest).

The single-machine engine (:class:`solvers.mfn.engine.Engine`) keeps every per-example vector
(outputs, slacks, the active set, CGLS's residual z) in its process and runs CGLS as one
compiled kernel over the compacted active rows: neither can stay partition-local without
rewriting it, so this module is a second driver of the same steps, written against the
rounds of :class:`solvers.distributed.PartitionGroup` and calling, on each partition, the
same kernels the engine calls (``margin_slacks``, ``clipped_loss_sets``,
``clipped_loss_sets_hold``, ``clipped_loss_breakpoints``, the row operator's compacted
products) and, on the driver, the same small computations (the problem's regularizer, dual
value and the exact root of the line search's slope).  Per Newton iteration:

* one round moves the outputs to the new point (accepted, or along the ray by the line
  search's step) and builds step 3's data there: the index sets, the compacted active rows,
  z^0 and g = A'z^0 (a d-vector), the loss and dual sums of the record, diag(A'A) for the
  preconditioner, the shift q of eq. (23) for saturated terms (modified Huber);
* with the normal equations (the engine's ``linear_solver`` rule: few parameters against the
  stored entries, or ``"cholesky"``), the point round also sums the Gram matrix of the active
  rows: each partition keeps its own up to date by the rows that entered and left the active
  set, as the engine does (:func:`_gram`), and sends its lower triangle ((d+1)(d+2)/2
  doubles); the driver solves (lam I + A'A) delta = r^0 by Cholesky, and one round brings z
  and A'z to the new point and makes the trial round's work at beta_bar there; CGLS then
  only checks rule (13);
* one round per CGLS iteration: q = A p on the workers (kept), returning ||q||^2, z'q,
  ||z||^2 and A'q (a d-vector); the driver updates beta, r = r - gamma (A'q + lam D p) and
  ||z||^2 = ||z||^2 - 2 gamma z'q + gamma^2 ||q||^2 (the residual by recurrence: standard CG
  on the normal equations, where the kernel recomputes A'z in a second pass: one round per
  iteration instead of two; the worker applies z -= gamma q at the next round);
* one round for the trial point beta_bar (none when it came with the factorized step's round
  and CGLS took no iteration): its outputs, whether every index set holds (step 5) and the
  line search's breakpoints, kept on the workers;
* the exact line search (step 6) as :func:`solvers.distributed.breakpoint_root` rounds
  (none when the breakpoints are few: they come back with the trial round; usually one
  otherwise).

What the distributed driver does not do (each stated in ``extras``, never silently changing
the problem): the hinge loss's homotopy (refused), the row-space solve of ``linear_solver``
(``auto`` never chooses it here; ``dual_cg`` is refused), the ``gradient_bound`` rule, the
dual KKT continuation (refused when asked).  The defaults that shape the single machine's path are
kept: both of Appendix A's heuristics, the C path of a cold start at a large C, the forcing
term, ``preconditioning="auto"``'s rule and the duality-gap stop.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from solvers import config
from solvers.base import (
    Solution,
    Termination,
    WarmStart,
    replaced_keyword,
    warm_start_argument,
)
from solvers.core.gram import NormalEquations
from solvers.core.linalg import cholesky_solve, dot, gram_cost
from solvers.core.rows import BinaryRows
from solvers.core.sparse import rows_nnz
from solvers.distributed import (
    DistributedBinaryProblem,
    Partition,
    breakpoint_root,
    keep_breakpoints,
    reduce_sum,
)
from solvers.losses import Loss, get_loss
from solvers.losses.kernels import (
    clipped_loss_breakpoints,
    clipped_loss_sets,
    clipped_loss_sets_hold,
    margin_slacks,
)
from solvers.mfn.engine import (
    auto_preconditioning,
    converged_message,
    forcing_term,
    gap_round_epsilon,
    next_round,
    normal_equations_pay,
)
from solvers.mfn.params import MFNParams
from solvers.monitor import Monitor, Reporter
from solvers.termination import format_gap

_RISE_SLACK = 1e-12
_SET_TOL_PER_BAND = 1e-2

# -- worker side ---------------------------------------------------------------------------------


def _start(part: Partition, beta):
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
    return (float(square.sum()), int(n), int(terms.X.nnz) + n,
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


def _gram(part: Partition, active) -> np.ndarray:
    """sum_k c_k x~_k x~_k' over the partition's active rows (the normal equations' Gram
    matrix), its lower triangle packed (:func:`_lower`).  Kept on the partition by the single
    machine's upkeep (:class:`solvers.core.gram.NormalEquations`, as the engine keeps it):
    the rows that entered and left the active set since the last point are added and removed
    with the core's kernel (``gram_update``), and it is rebuilt when more rows changed than
    are active or the updates since the last rebuild outnumber the active rows."""
    st = part.state
    if st["normal"] is None:
        st["normal"] = NormalEquations(st["terms"], st["weight"])
    normal = st["normal"]
    normal.update(active)
    return normal.G[_lower(normal.G.shape[0])]


def _copy_bytes(terms: BinaryRows, entries: int, n_rows: int) -> int:
    """What :meth:`BinaryRows.compact` allocates for ``n_rows`` rows holding ``entries``
    stored entries: their column indices and values (none for unit values), the row
    pointers and the row numbers."""
    per_entry = terms.X.indices.itemsize + (0 if terms.unit_values else 8)
    return entries * per_entry + 16 * (n_rows + 1)


def _point(part: Partition, move, loss_name, precondition, gram, compact_max=1.0,
           memory_fraction=None):
    """Move the outputs (``move``: None, "accept" or the step delta), then step 3's data at
    the point: (g, ||z^0||^2, |I1|, |I2|, loss sum, alpha sum, conjugate sum, shift part,
    diag(A'A), (norm stats of the active rows, whether the rows were copied), the Gram
    matrix's lower triangle packed (:func:`_gram`) or None).

    The active rows are copied into compacted arrays (CGLS then streams over them only) when
    they hold at most ``compact_max`` of the partition's stored entries
    (``config.DISTRIBUTED_COMPACT_MAX_FRACTION``) and the copy fits in ``memory_fraction`` of
    the worker's memory limit with what the worker holds already
    (``config.DISTRIBUTED_COMPACT_MEMORY_FRACTION``, :meth:`Partition.memory_room`);
    otherwise CGLS runs over all the rows, the inactive ones weighted zero: no copy, more
    work."""
    st = part.state
    terms = st["terms"]
    if move == "accept":
        st["outputs"] = st["outputs_bar"]
    elif move is not None:
        st["outputs"] = st["outputs"] + move * (st["outputs_bar"] - st["outputs"])
    st.pop("outputs_bar", None)
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
    loss_sum = loss.sum(xi, cost)
    alpha = cost * loss.derivative(xi)
    conjugate = loss.conjugate_sum(alpha, cost)
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
    stats = (float(norms.sum()), float((norms * norms).sum()), not masked)
    return (g, float(dot(z, z)), int(active.size), int(saturated.size), float(loss_sum),
            float(alpha.sum()), float(conjugate), shift, diagonal, stats, G)


def _factor_step(part: Partition, delta, trial_point, trial_options):
    """Bring CGLS's z to beta_bar + delta (the factorized step): z -= sqrt(c) A~ delta;
    returns (A'z, ||z||^2, the :func:`_trial` round at ``trial_point``).  The trial is made
    here in advance: it is the trial round's whenever CGLS's check of rule (13) then takes no
    iteration (the usual case after an exact factorization), and is made again otherwise."""
    st = part.state
    terms = st["terms"]
    A, sqrt_c = st["A"], st["sqrt_c"]
    st["z"] = st["z"] - sqrt_c * terms.compact_forward(A, delta)
    st["q"] = None
    z = st["z"]
    return (terms.compact_adjoint(A, sqrt_c * z), float(dot(z, z)),
            _trial(part, trial_point, *trial_options))


def _final_loss_sum(part: Partition, beta):
    """The loss sum at beta from a fresh product (the solution's objective)."""
    terms = part.state["terms"]
    outputs = terms.outputs(beta)
    xi = np.empty_like(outputs)
    margin_slacks(terms.labels, outputs, xi)
    return float(part.state["problem"].loss_function.sum(xi, terms.cost))


def _cg(part: Partition, p, gamma):
    """One CGLS iteration's products on the partition: z -= gamma q (the last iteration's),
    q = A p; returns (||q||^2, z'q, ||z||^2, A'q)."""
    st = part.state
    terms = st["terms"]
    if gamma and st["q"] is not None:
        st["z"] -= gamma * st["q"]
    A, sqrt_c, z = st["A"], st["sqrt_c"], st["z"]
    q = sqrt_c * terms.compact_forward(A, p)
    st["q"] = q
    return float(dot(q, q)), float(dot(z, q)), float(dot(z, z)), \
        terms.compact_adjoint(A, sqrt_c * q)


def _trial(part: Partition, beta_bar, scale, kappa, lo, width, set_tol, quantiles, small):
    """The outputs at beta_bar (kept), whether the index sets hold within ``set_tol``, the
    ordinates of the line search's slope at 0 and 1 (loss part) and its breakpoints (kept),
    with the first round's summary of them."""
    st = part.state
    terms = st["terms"]
    outputs_bar = terms.outputs(beta_bar)
    st["outputs_bar"] = outputs_bar
    xi = st["xi"]
    xi_bar = np.empty_like(outputs_bar)
    margin_slacks(terms.labels, outputs_bar, xi_bar)
    holds = bool(clipped_loss_sets_hold(xi, xi_bar, lo, width, set_tol))
    l0, r0, bp, dl, dr = clipped_loss_breakpoints(xi, xi_bar, scale * terms.cost * kappa, lo,
                                                  width)
    return holds, float(l0), float(r0), keep_breakpoints(part, bp, dl, dr, quantiles, small)


# -- driver ------------------------------------------------------------------------------------


def _trial_point(beta_bar, point, extra_value):
    """Step 4's beta_bar from CGLS's solution of (23): the shift q added back, the bias 0
    when it is not a parameter."""
    beta_bar = beta_bar.copy()
    if point["shift"] is not None:
        beta_bar += point["shift"]
    if extra_value == 0.0:
        beta_bar[-1] = 0.0
    return beta_bar


class DistributedEngine:
    """Appendix A on a :class:`~solvers.distributed.DistributedBinaryProblem` (the module
    docstring lists the rounds)."""

    def __init__(self, problem: DistributedBinaryProblem, params: MFNParams,
                 reporter: Reporter):
        refuse(params, problem.loss_function)
        self.problem = problem
        self.group = problem.group
        self.params = params
        self.reporter = reporter
        self.loss = get_loss(problem.loss)
        self.target_C = self.C = problem.C
        self.n_params = problem.n_features + 1
        self.extra_value = problem.effective_bias_scale
        self.iterations = 0
        self.cg_iterations = 0
        self.factorizations = 0
        self.normal_equations = False
        self.runs: list[dict] = []
        self.last_gap = float("inf")
        self.pending = None  # how the workers' outputs move at the next point round

    @property
    def at_target(self) -> bool:
        return self.C == self.target_C

    # rounds
    def start(self, beta):
        sums = self.group.map(_start, beta)
        self.scale_sum = sum(r[0] for r in sums)
        self.n_terms = sum(r[1] for r in sums)
        nnz = sum(r[2] for r in sums)
        build = sum(r[3] for r in sums)
        n = self.n_params
        choice = self.params.linear_solver
        if choice == "cholesky":
            if n > config.MFN_CHOLESKY_MAX_PARAMS:
                raise ValueError(
                    f"linear_solver='cholesky' factorizes a dense {n} x {n} matrix; above "
                    f"{config.MFN_CHOLESKY_MAX_PARAMS} parameters use 'cgls' or 'auto'")
            self.normal_equations = True
        else:
            # the engine's rule on the partitions' sums: then each partition keeps the Gram
            # matrix of its active rows (_gram), one reduction of its lower triangle per
            # Newton iteration, and CGLS only checks (13)
            self.normal_equations = choice == "auto" and normal_equations_pay(n, nnz, build)

    def point(self, lam, factorize=True):
        """Step 3's data at the point (one round).  ``factorize``: with the normal equations,
        the Gram matrix of the active rows too (not for heuristic 1's capped first call,
        which runs preconditioned CGLS as the engine's does: the diagonal instead)."""
        loss = self.loss
        precondition = self.params.preconditioning != 0.0
        gram = self.normal_equations and factorize
        results = self.group.map(_point, self.pending, self.problem.loss,
                                 precondition and not gram, gram,
                                 float(config.DISTRIBUTED_COMPACT_MAX_FRACTION),
                                 config.DISTRIBUTED_COMPACT_MEMORY_FRACTION)
        self.pending = None
        g = np.zeros(self.n_params)
        shift = None
        diagonal = np.zeros(self.n_params) if precondition else None
        zz = loss_sum = alpha_sum = conjugate = 0.0
        n_active = n_saturated = 0
        norm_sum = norm_square = 0.0
        uncompacted = 0  # partitions whose CGLS passes over all their rows (memory, _point)
        packed = None
        for (g_k, zz_k, na, ns, ls, al, cj, sh, dg, st, G_k) in results:
            if G_k is not None:
                packed = G_k.copy() if packed is None else packed + G_k
            g += g_k
            zz += zz_k
            n_active += na
            n_saturated += ns
            loss_sum += ls
            alpha_sum += al
            conjugate += cj
            if sh is not None:
                shift = sh.copy() if shift is None else shift + sh
            if dg is not None:
                diagonal += dg
            norm_sum += st[0]
            norm_square += st[1]
            uncompacted += not st[2]
        if shift is not None:
            shift *= loss.width / lam
        G = None
        if packed is not None:  # the lower triangle: what the Cholesky factorization reads
            G = np.zeros((self.n_params, self.n_params))
            G[_lower(self.n_params)] = packed
        return {"g": g, "zz": zz, "active": n_active, "saturated": n_saturated,
                "loss_sum": loss_sum, "alpha_sum": alpha_sum, "conjugate": conjugate,
                "shift": shift, "diagonal": diagonal, "norm_sum": norm_sum,
                "norm_square": norm_square, "gram": G, "uncompacted": uncompacted}

    def _preconditioning(self, point, lam) -> np.ndarray | None:
        """M^{-1} of the diagonal preconditioner, or None (the engine's "auto" rule)."""
        choice = self.params.preconditioning
        if choice == "auto":
            n = point["active"]
            mean = point["norm_sum"] / n if n else 0.0
            std = np.sqrt(max(point["norm_square"] / n - mean * mean, 0.0)) if n else 0.0
            choice = auto_preconditioning(n, self.n_params, mean, std)
        if not choice:
            return None
        diagonal = lam + choice * point["diagonal"]
        return np.where(diagonal > 0.0, 1.0 / diagonal, 1.0)

    def cgls(self, s, zz, beta_bar, lam, eps, max_iter, m_inv, forcing):
        """CGLS from the warm start (module docstring): ``s`` = A'z and ``zz`` = ||z||^2 at
        ``beta_bar`` (updated in place); returns (iterations, optimal)."""
        r = s - lam * beta_bar
        rr = dot(r, r)
        if rr <= (eps * np.sqrt(zz)) ** 2 or rr == 0.0:
            return 0, True
        forced = forcing * forcing * rr
        m = np.ones(self.n_params) if m_inv is None else m_inv
        p = m * r
        phi1 = dot(r, p)
        phi2 = dot(p, p)
        gamma_prev = 0.0
        for iteration in range(1, max_iter + 1):
            results = self.group.map(_cg, p, gamma_prev)
            qq = zq = zz_now = 0.0
            Atq = np.zeros(self.n_params)
            for qq_k, zq_k, zz_k, a_k in results:
                qq += qq_k
                zq += zq_k
                zz_now += zz_k
                Atq += a_k
            denominator = qq + lam * phi2
            if denominator <= 0.0:
                return iteration - 1, False
            gamma = phi1 / denominator
            beta_bar += gamma * p
            r -= gamma * (Atq + lam * p)
            zz = zz_now - 2.0 * gamma * zq + gamma * gamma * qq
            gamma_prev = gamma
            rr = dot(r, r)
            self.cg_iterations += 1
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

    def objective(self, beta, loss_sum_target) -> float:
        """The objective at this stage's C from the loss sum at the target costs."""
        return self.problem.regularizer(beta) + loss_sum_target * (self.C / self.target_C)

    def run(self, state, epsilon, first_round=None):
        """Steps 2-8 of Appendix A from ``state`` = [beta, crude] (updated)."""
        p = self.params
        loss = self.loss
        lam = 1.0 / (self.C * loss.kappa)
        set_tol = min(p.set_tol, _SET_TOL_PER_BAND * loss.width)
        if first_round is None:
            first_round = state["crude"]
        final_eps = self._gap_round_epsilon(epsilon)
        need_second = first_round and p.first_round_epsilon is not None \
            and p.first_round_epsilon > final_eps
        eps = p.first_round_epsilon if need_second else final_eps
        self.last_gap = float("inf")
        first_call = crude_run = state["crude"]
        state["crude"] = False
        beta = state["beta"]
        point = self.point(lam, factorize=not (first_call and
                                               p.initial_cgls_iter is not None))
        F_previous = self.objective(beta, point["loss_sum"])
        newton = cg_total = 0
        scale = self.C / self.target_C
        small = max(config.DISTRIBUTED_GATHER_BREAKPOINTS // max(len(self.group), 1), 1)
        trial_options = (scale, loss.kappa, loss.xi_lo, loss.width, set_tol,
                         config.DISTRIBUTED_PIVOTS, small)
        while True:
            beta_bar = beta.copy()
            if point["shift"] is not None:
                beta_bar -= point["shift"]
            cap = p.max_cgls_iter
            heuristic_1 = first_call and p.initial_cgls_iter is not None
            if heuristic_1:
                cap = p.initial_cgls_iter
            first_call = False
            s_start, zz_start = point["g"], point["zz"]
            solved = False
            made = None  # the trial round, when made with the factorized step's
            if self.normal_equations and not heuristic_1:
                # (lam I + A'A) delta = r^0 by Cholesky on the driver (the engine's
                # factorized step), then z and A'z at the new point in one round, with the
                # trial round at beta_bar as it is if CGLS's check takes no iteration
                M = point["gram"].copy()
                M[np.diag_indices_from(M)] += lam
                delta_bar = cholesky_solve(M, point["g"] - lam * beta_bar)
                if delta_bar is not None:
                    beta_bar += delta_bar
                    results = self.group.map(_factor_step, delta_bar,
                                             _trial_point(beta_bar, point, self.extra_value),
                                             trial_options)
                    s_start, zz_start = reduce_sum([r[:2] for r in results])
                    made = [r[2] for r in results]
                    self.factorizations += 1
                    solved = True
            forcing = self._forcing(point, eps, crude_run, newton, heuristic_1 or solved)
            m_inv = None if solved else self._preconditioning(point, lam)
            cg_iters, optimal = self.cgls(s_start, zz_start, beta_bar, lam, eps, cap, m_inv,
                                          forcing)
            beta_bar = _trial_point(beta_bar, point, self.extra_value)
            if cg_iters == 0 and not solved:
                beta_bar = beta.copy()  # no CGLS step: the trial point is the point itself
            cg_total += cg_iters
            newton += 1
            self.iterations += 1
            if made is not None and cg_iters == 0:
                results = made  # CGLS did not move beta_bar: the trial made in advance
            else:
                results = self.group.map(_trial, beta_bar, *trial_options)
            holds = all(h for h, _, _, _ in results)
            step_info = (point["active"], point["saturated"], cg_iters)
            if optimal and holds:
                beta[:] = beta_bar
                self.pending = "accept"
                point = self.point(lam)
                F = self.objective(beta, point["loss_sum"])
                if self._report(beta, point, lam, F, step_info, 1.0, eps):
                    return self._finish(Termination.STOPPED, self.reporter.stop_message, eps,
                                        newton, cg_total)
                if self._gap_met():
                    return self._gap_finish(eps, newton, cg_total)
                next_eps = next_round(eps, epsilon, final_eps, need_second)
                if next_eps is not None:
                    eps, need_second, F_previous = next_eps, False, F
                    continue
                return self._finish(Termination.CONVERGED, converged_message(eps, set_tol),
                                    eps, newton, cg_total)
            direction = beta_bar - beta
            loss_l0 = sum(l for _, l, _, _ in results)
            loss_r0 = sum(r for _, _, r, _ in results)
            l0 = dot(beta, direction) + loss_l0
            r0 = dot(beta_bar, direction) + loss_r0
            delta = breakpoint_root(self.group, [s for _, _, _, s in results], l0, r0,
                                    jumps=False, lines=[(l, r) for _, l, r, _ in results])
            if not np.isfinite(delta):
                return self._finish(Termination.FAILED, (
                    f"the line search found no finite step at Newton iteration {newton} (the "
                    f"least-squares problem is singular in floating point at lambda "
                    f"{lam:.3g}); the last point is kept"), eps, newton, cg_total)
            new_beta = beta + delta * direction
            self.pending = float(delta)
            point = self.point(lam)
            F = self.objective(new_beta, point["loss_sum"])
            if not F <= F_previous * (1.0 + _RISE_SLACK) + 1e-300:
                return self._finish(Termination.FAILED, (
                    f"objective rose from {F_previous:.17g} to {F:.17g} at Newton iteration "
                    f"{newton} (Appendix A step 7 error exit; step {delta:.3g}, lambda "
                    f"{lam:.3g})"), eps, newton, cg_total)
            beta[:] = new_beta
            state["loss_sum"] = point["loss_sum"]
            if self._report(beta, point, lam, F, step_info, delta, eps):
                return self._finish(Termination.STOPPED, self.reporter.stop_message, eps,
                                    newton, cg_total)
            if self._gap_met():
                return self._gap_finish(eps, newton, cg_total)
            if newton >= p.max_iter:
                return self._finish(Termination.MAX_ITER, f"itermax={p.max_iter} Newton "
                                    "iterations reached", eps, newton, cg_total)
            F_previous = F

    def _forcing(self, point, eps, crude_run, newton, exempt) -> float:
        final_eps = self._gap_round_epsilon(self.params.epsilon)
        gap_stop = self.params.tol is not None and self.at_target
        return forcing_term(self.params, eps, final_eps, point["active"], self.n_params,
                            self.at_target, crude_run, newton, exempt,
                            self.last_gap if gap_stop else None)

    def _gap_round_epsilon(self, epsilon: float) -> float:
        return gap_round_epsilon(self.params, epsilon, self.at_target)

    def _gap_met(self) -> bool:
        tol = self.params.tol
        return tol is not None and self.at_target and self.last_gap <= tol

    def _gap_finish(self, eps, newton, cg_total):
        return self._finish(Termination.CONVERGED, (
            f"converged: certified relative duality gap {format_gap(self.last_gap)} <= "
            f"tol={self.params.tol:g} (rule (13) at eps={eps:g})"), eps, newton, cg_total)

    def _finish(self, status, message, eps, newton, cg_total):
        self.runs.append({"C": self.C, "epsilon": eps, "newton_iterations": newton,
                          "cg_iterations": cg_total, "status": status})
        return status, message

    def _report(self, beta, point, lam, F, step_info, delta, eps) -> bool:
        """The record of a Newton iteration: the objective at the C asked for and the
        relative duality gap at alpha_i = C_i L'(xi_i) (the engine's record)."""
        elapsed = self.reporter.clock()
        primal = self.problem.regularizer(beta) + point["loss_sum"]
        g = point["g"] if point["shift"] is None else point["g"] + lam * point["shift"]
        w_alpha = (self.loss.kappa * self.target_C) * g
        dual = point["alpha_sum"] - self.problem.regularizer(w_alpha) - point["conjugate"]
        gap = (primal - dual) / max(abs(primal), 1e-300)
        self.last_gap = gap
        n_active, n_saturated, cg_iters = step_info
        extras = {"active": int(n_active), "cg_iterations": int(cg_iters),
                  "step": float(delta), "epsilon": float(eps), "distributed": True}
        if n_saturated:
            extras["saturated"] = int(n_saturated)
        if point["uncompacted"]:
            extras["uncompacted_partitions"] = int(point["uncompacted"])
        if not self.at_target:
            extras["path_C"] = float(self.C)
        return self.reporter(self.iterations, primal, gap, elapsed=elapsed, **extras)


def refuse(params: MFNParams, loss: Loss) -> None:
    """What the distributed driver does not run, refused with the reason."""
    if not loss.clipped:
        raise ValueError(f"mfn on distributed data: the {loss.name} loss's homotopy (section "
                         f"6) is not distributed; use cutting_plane (ocas) for the hinge")
    if params.linear_solver == "dual_cg":
        raise ValueError("mfn on distributed data: linear_solver='dual_cg' (CG in the active "
                         "rows' space) is not distributed; use 'cgls', 'cholesky' or 'auto'")
    if params.cgls_rule != "residual":
        raise ValueError("mfn on distributed data: cgls_rule='gradient_bound' is not "
                         "distributed; use 'residual' (rule (13))")
    if params.dual_kkt_tol is not None:
        raise ValueError("mfn on distributed data: dual_kkt_tol is not distributed")


def solve(problem: DistributedBinaryProblem, params: MFNParams, monitor: Monitor | None = None,
          start: WarmStart | None = None, *, resume: np.ndarray | None = None) -> Solution:
    """mfn on a distributed binary problem, from beta = 0 (a crude start: both heuristics,
    and the C path when C is large, as the single machine).

    ``start.beta`` (the rest of the :class:`~solvers.base.WarmStart` is ignored): a nearby
    problem's solution or the last iterate of a solve that lost a worker
    (``problem.checkpoint`` of its problem, a WarmStart; ``solvers.train`` passes it).  The
    solve then starts from it at the target C and the final epsilon, as the single machine's
    ``run`` does: a warm start, so the cold start's heuristics (the C path, the first round's
    loose epsilon and CGLS cap) are not repeated.  Its optimum is the same (the problem is
    strictly convex and Appendix A converges finitely to rule (13)); the path to it differs
    from the uninterrupted solve's.  ``resume``: the deprecated spelling of
    ``start=WarmStart(beta=...)``, kept for one release."""
    reporter = Reporter(monitor, "relative_duality_gap")
    start = replaced_keyword(warm_start_argument(start), "resume", resume, "beta")
    engine = DistributedEngine(problem, params, reporter)
    warm = start is not None and start.beta is not None
    beta = np.array(start.beta, dtype=np.float64) if warm else np.zeros(engine.n_params)
    # updated in place: always the last accepted iterate
    problem.checkpoint = WarmStart(beta=beta)
    engine.start(beta)
    state = {"beta": beta, "crude": not warm}
    staged = False
    status, message = Termination.CONVERGED, ""
    if params.c_path_start is not None and engine.n_terms and not warm:
        scale = engine.scale_sum / engine.n_terms
        stages = []
        if scale > 0.0:
            lowest = params.c_path_start / scale
            stage = engine.target_C / 10.0
            while stage >= lowest:
                stages.append(stage)
                stage /= 10.0
        stage_eps = params.first_round_epsilon or params.epsilon
        for C in stages[::-1]:
            engine.C = C
            status, message = engine.run(state, max(stage_eps, params.epsilon))
            if status == Termination.STOPPED:
                break
        engine.C = engine.target_C
        staged = bool(stages)
    if status != Termination.STOPPED:
        status, message = engine.run(state, params.epsilon,
                                     first_round=True if staged else None)
    loss_sum = float(sum(engine.group.map(_final_loss_sum, state["beta"])))
    objective = problem.regularizer(state["beta"]) + loss_sum
    extras = {"cg_iterations": engine.cg_iterations, "runs": engine.runs,
              "linear_solver": "cholesky" if engine.normal_equations else "cgls",
              "factorizations": engine.factorizations, "distributed": True,
              **problem.communication_totals()}
    return Solution(state["beta"].copy(), objective, Termination(status), message,
                    engine.iterations, extras)
