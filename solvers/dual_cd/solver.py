"""The driver of dual coordinate descent: state, warm starts, the certified gap, the C path
(the package docstring states the problem, the mapping and the heuristics)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solvers.base import (
    Fit,
    Solution,
    SubproblemResult,
    WarmStart,
    replaced_keyword,
    warm_start_argument,
)
from solvers.core.sparse import csr_matvec
from solvers.dual_cd.kernels import crammer_singer_epochs, dcd_epochs, lr_dual_epochs
from solvers.dual_cd.params import DUAL_CD_SOLVES, DualCDParams
from solvers.models import LinearModel
from solvers.monitor import Continued, Monitor, NullMonitor, Reporter, Stopwatch
from solvers.problems import BinaryProblem, CrammerSingerProblem
from solvers.termination import Termination, format_gap

#: ``newton(problem, start, tol, monitor) -> Solution``: a primal Newton method on the binary
#: problem from the point ``start`` = (w, b), stopped at the certified gap ``tol``, what a
#: squared-hinge run switches to at ``newton_switch_iter`` (LIBLINEAR's -s 1 -> -s 2).  The
#: registry gives dual_cd mfn's (families do not import each other).
NewtonMethod = Callable[[BinaryProblem, np.ndarray, float, Monitor], Solution]


@dataclass
class DualState:
    """A dual point and its primal image: ``alpha`` in the box, ``beta`` = (w, b) =
    sum_i alpha_i y_i x~_i (the invariant every coordinate step keeps); for the logistic
    loss's entropy dual also ``complement`` = C_i - alpha_i, kept beside alpha (None until
    that method starts: :func:`_entropy_descent`)."""

    alpha: np.ndarray
    beta: np.ndarray
    complement: np.ndarray | None = None


def _generator(seed: int) -> np.ndarray:
    """The state of the kernels' xorshift generator from a seed (never 0)."""
    return np.array([(seed * 0x9E3779B97F4A7C15 + 1) % 2**64 or 1], dtype=np.uint64)


#: ``descend(limit, eps, budget) -> (epochs, full set met eps, spread, work, active size)``: at
#: most ``limit`` outer iterations of one of the coordinate-descent kernels from the state it
#: holds, stopping at its own rule with ``eps`` or once ``budget`` stored entries were touched
Descent = Callable[[int, float, float], tuple[int, bool, float, int, int]]


def _qp_descent(problem: BinaryProblem, params: DualCDParams, state: DualState) -> Descent:
    """Hsieh et al.'s steps on a QP dual (the hinge, the squared hinge): the box [0, U_i] and
    D_ii = 2 k / C_i from the loss layer (:meth:`BinaryProblem.dual_qp`), Algorithm 3's
    shrinking state kept between calls."""
    qp = problem.dual_qp()
    X = problem.X
    n = problem.n_samples
    index = np.arange(n, dtype=np.int64)
    istate = np.array([n], dtype=np.int64)
    fstate = np.array([np.inf, -np.inf])
    rng = _generator(params.permutation_seed)
    qd = qp.diagonal()

    def descend(limit: int, eps: float, budget: float):
        ran, met, spread, work = dcd_epochs(
            X.indptr, X.indices, X.data, problem.y, problem.effective_bias_scale, qd,
            qp.diagonal_shift, qp.upper, state.alpha, state.beta, index, istate, fstate, rng,
            limit, eps, budget, params.shrinking, 1.0)
        return ran, bool(met), spread, work, int(istate[0])

    descend.rule = "projected-gradient spread"
    return descend


def entropy_interior(problem: BinaryProblem, state: DualState) -> None:
    """Make ``state`` a point of the logistic dual's open box 0 < alpha_i < C_i with its
    complement C_i - alpha_i: alpha clipped into [f_i, C_i - f_i], f_i = min(1e-3 C_i, 1e-8)
    (LIBLINEAR's starting alpha_i, so a cold start, alpha = 0, starts where ``-s 7`` does),
    w recomputed when that moved alpha (an example of zero cost keeps alpha_i = 0: the kernel
    skips it).  A complement already kept is left as it is."""
    if state.complement is not None:
        return
    cost = problem.cost
    floor = np.minimum(1e-3 * cost, 1e-8)
    alpha = np.clip(state.alpha, floor, cost - floor)
    if not np.array_equal(alpha, state.alpha):
        state.alpha[:] = alpha
        state.beta[:] = problem.primal_from_dual(alpha)
    state.complement = cost - state.alpha


def _entropy_descent(problem: BinaryProblem, params: DualCDParams,
                     state: DualState) -> Descent:
    """Yu, Huang & Lin's steps on the logistic loss's entropy dual
    (:func:`solvers.dual_cd.kernels.lr_dual_epochs`), from the interior point
    :func:`entropy_interior` makes of the state; the inner tolerance's schedule (from 1e-2)
    kept between calls."""
    entropy_interior(problem, state)
    X = problem.X
    s = problem.effective_bias_scale
    xTx = np.asarray(X.multiply(X).sum(axis=1)).ravel() + s * s
    index = np.arange(problem.n_samples, dtype=np.int64)
    fstate = np.array([1e-2, 0.0])
    rng = _generator(params.permutation_seed)

    def descend(limit: int, eps: float, budget: float):
        fstate[1] = min(1e-8, eps)  # LIBLINEAR's innereps_min
        ran, met, gmax, work = lr_dual_epochs(
            X.indptr, X.indices, X.data, problem.y, s, xTx, problem.cost, state.alpha,
            state.complement, state.beta, index, fstate, rng, limit, eps, budget)
        return ran, bool(met), gmax, work, problem.n_samples

    descend.rule = "largest sub-problem derivative |g'(alpha_i)|"
    return descend


def dual_start(problem: BinaryProblem, alpha: np.ndarray) -> DualState:
    """The state at the dual point ``alpha`` clipped into the box [0, U_i] (any alpha in the
    box is feasible: no equality constraint), with w recomputed as sum alpha_i y_i x~_i."""
    lower, upper = problem.dual_bounds()
    alpha = np.clip(np.asarray(alpha, dtype=np.float64), lower, upper)
    return DualState(alpha, problem.primal_from_dual(alpha))


def primal_start(problem: BinaryProblem, beta: np.ndarray) -> DualState:
    """The state from a primal point ``beta`` = (w, b): alpha_i = C_i L'(1 - m_i(beta)), the
    loss's (sub)gradient at the margins (the KKT map, ``BinaryProblem.dual_from_primal``),
    clipped into the box, then w recomputed from alpha (the coordinate steps need w = sum
    alpha_i y_i x~_i, which the given w need not satisfy).  Sound for the squared hinge: the
    map is continuous (alpha_i = 2 C_i max(0, 1 - m_i)) and exact at the optimum, so a start
    near the optimum gives a dual point near the dual optimum.  For the hinge the map gives
    alpha_i in {0, C_i}: right for the examples off the margin (0 beyond it, C_i inside), a
    guess for those on it (whose optimal alpha_i lies anywhere in [0, C_i]); the descent
    corrects them from there.  On a9a the start saved about half the outer iterations for the
    squared hinge and 7% for the hinge (the guesses on the margin cost part of what the start
    saves; bench/history/measurements.json, dual-cd-warm-start)."""
    beta = np.asarray(beta, dtype=np.float64)
    if problem.bias == "none":
        beta = beta.copy()
        beta[-1] = 0.0
    return dual_start(problem, problem.dual_from_primal(beta))


def _certificate(problem: BinaryProblem, state: DualState) -> tuple[float, float, float]:
    """(P(w), D(alpha), relative gap) at the state: one pass over the data for the margins."""
    w, intercept = problem.split(state.beta)
    slacks = 1.0 - problem.y * csr_matvec(problem.X, w, intercept)
    primal = problem.objective_from_slacks(state.beta, slacks)
    dual = problem.dual_objective(state.alpha, beta_alpha=state.beta)
    return primal, dual, (primal - dual) / max(abs(primal), 1e-300)


def solve_state(problem: BinaryProblem, params: DualCDParams, monitor: Monitor | None,
                state: DualState, clock: Stopwatch | None = None,
                newton: NewtonMethod | None = None) -> tuple[Solution, DualState]:
    """Run dual coordinate descent from ``state`` (updated in place); returns the solution and
    the final state (a C path carries it to the next point).  ``newton``: the Newton method a
    squared-hinge run switches to at ``newton_switch_iter`` (None: no switch)."""
    DUAL_CD_SOLVES.require_problem(problem, "dual_cd")
    reporter = Reporter(monitor, "relative_duality_gap", clock)
    X = problem.X
    n = problem.n_samples
    # the dual's kind is the loss's declaration: a QP (dual_quadratic), else the declared
    # logistic loss's entropy dual
    if problem.loss_function.dual_quadratic is not None:
        descend = _qp_descent(problem, params, state)
    else:
        descend = _entropy_descent(problem, params, state)
    alpha, beta = state.alpha, state.beta
    switch_at = newton_switch_at(params, problem) if newton is not None else None
    limit = params.max_iter if switch_at is None else switch_at

    active = [n]  # the working set's size after the last call (Algorithm 3's shrinking)

    def steps(max_epochs, eps, budget):
        ran, met, measure, work, active[0] = descend(max_epochs, eps, budget)
        record = {"projected_gradient_spread": float(measure), "active_size": active[0]}
        return ran, met, f"{descend.rule} {measure:.3g}", work, record

    status, message, epochs, eps, total_work, checks, primal = descend_with_gap_checks(
        params, reporter, limit, max(X.nnz + n, 1), steps,
        lambda: _certificate(problem, state))
    # the certificate without the round-off w accumulated over the steps: D(alpha) at w
    # recomputed from alpha (one pass), against P at the returned w
    exact_dual = problem.dual_objective(alpha)
    gap = (primal - exact_dual) / max(abs(primal), 1e-300)
    extras = {"epochs": epochs, "gap_checks": checks, "relative_duality_gap": float(gap),
              "active_size": active[0], "final_eps": eps,
              "work_passes": total_work / max(X.nnz + n, 1),
              "nnz_alpha": int(np.count_nonzero(alpha))}
    solution = Solution(beta.copy(), float(primal), status, message, epochs, extras)
    if status is None:
        solution = _switch_to_newton(problem, params, monitor, state, solution, reporter,
                                     newton)
    return solution, state


def descend_with_gap_checks(params, reporter: Reporter, limit: int, pass_work: int, descend,
                            certify, resume: tuple | None = None) -> tuple:
    """The outer loop every dual_cd driver shares (binary and regression): ``descend(
    max_epochs, eps, budget) -> (epochs run, whether LIBLINEAR's rule held on the full set,
    that rule's measure as text, stored entries touched, the record's extras)`` runs the
    Numba epochs until ``budget`` entries were touched (the first check after ``pass_work``,
    a pass's worth; then ``gap_check_work`` times as long as a check takes), ``certify() ->
    (P, D, relative gap)`` checks, and a record follows each check.  Ends on the verdict
    (:func:`_verdict`: ``tol``, or LIBLINEAR's rule with ``stop_rule="projected_gradient"``,
    then ``max_iter``), on the monitor's stop, or at ``limit`` epochs (the Newton switch's,
    below max_iter: status None).  With the gap rule, a full set that meets eps with the gap
    above ``tol`` divides eps by 10 (a continuation).  ``resume`` = (eps, budget, epochs,
    entries touched, checks): go on from there (a compiled loop's state, ``dual_cd.
    compiled``).  Returns (status, message, epochs, the last eps, entries touched, checks, the
    last P)."""
    gap_rule = params.stop_rule == "gap"
    eps = params.eps
    budget = pass_work
    check_seconds = np.inf
    epochs = total_work = checks = 0
    if resume is not None:
        eps, budget, epochs, total_work, checks = resume
    status = message = None
    while True:
        started = time.perf_counter()
        ran, met, measure, work, record = descend(limit - epochs, eps,
                                                  budget if gap_rule else np.inf)
        epochs += ran
        total_work += work
        descent_seconds = time.perf_counter() - started
        elapsed = reporter.clock()
        primal, dual, gap = certify()
        # a check's cost: the fastest one so far (a check the scheduler interrupted on a busy
        # machine would otherwise space the next ones far apart)
        check_seconds = min(check_seconds, time.perf_counter() - started - descent_seconds)
        checks += 1
        budget = _next_budget(params, check_seconds, work, descent_seconds, pass_work)
        status, message = _verdict(params, epochs, gap, gap_rule, bool(met),
                                   f"{measure} <= eps={params.eps:g}")
        stop = reporter(epochs, primal, gap, elapsed=elapsed, dual_objective=dual, **record,
                        eps=eps, work=int(work))
        if status is not None:
            break
        if stop:
            status, message = Termination.STOPPED, reporter.stop_message
            break
        if epochs >= limit:  # the Newton switch's limit, below max_iter
            break
        if met:
            # the full set meets eps but the gap is above tol: a finer eps (continuation)
            eps = eps / 10.0
    return status, message, epochs, eps, total_work, checks, primal


def newton_switch_at(params: DualCDParams, problem: BinaryProblem) -> int | None:
    """The outer iteration at which an uncertified run hands w to its Newton method
    (``newton_switch_iter``), or None: no switch (the L1 losses -- piecewise linear, no
    Newton method: LIBLINEAR's -s 3 and -s 13 only warn --, None, or max_iter first).  The
    others switch: the squared hinge (LIBLINEAR -s 1 -> -s 2), the squared epsilon-insensitive
    loss (-s 12 -> -s 11) and the logistic loss; ``problem`` is binary or a regression."""
    at = params.newton_switch_iter
    if problem.loss_function.piecewise_linear or at is None or at >= params.max_iter:
        return None
    return at


def _switch_to_newton(problem: BinaryProblem, params: DualCDParams, monitor: Monitor | None,
                      state: DualState, reached: Solution, reporter: Reporter,
                      newton_method: NewtonMethod) -> Solution:
    """LIBLINEAR's train_one for ``-s 1``: dual CD that reaches its limit without the stop
    hands its w to the primal Newton method (``-s 2``) from that point.  Here
    ``newton_method`` (the registry's: mfn warm started as beta-seeding does, ini = 1) from
    ``state.beta``, to the certified gap ``tol``; its records continue the run's (numbered
    after the epochs, timed from the run's start, tagged ``stage="newton"``), and the state
    moves to its point (the KKT map's alpha, w recomputed: what a C path carries on)."""
    epochs = reached.iterations
    continued = Continued(monitor if monitor is not None else NullMonitor(), epochs,
                          reporter.clock(), {"stage": "newton"})
    clock = Stopwatch()
    newton = newton_method(problem, state.beta.copy(), params.tol, continued)
    switched = primal_start(problem, newton.beta)
    state.alpha[:] = switched.alpha
    state.beta[:] = switched.beta
    state.complement = None  # the entropy dual's next start moves alpha inside its box
    gap = problem.relative_duality_gap(newton.beta)
    extras = {**reached.extras, "relative_duality_gap": float(gap),
              "newton_switch": {"at_epoch": epochs,
                                "gap_at_switch": reached.extras["relative_duality_gap"],
                                "newton_iterations": newton.iterations,
                                "cg_iterations": newton.extras["cg_iterations"],
                                "seconds": clock(), "status": str(newton.status)}}
    message = (f"no stop after {epochs} outer iterations (newton_switch_iter; relative "
               f"duality gap {reached.extras['relative_duality_gap']:.3g}): switched to the "
               f"Newton method from w, as LIBLINEAR -s 1 switches to -s 2 (and -s 7 to -s 0); "
               f"{newton.message}")
    return Solution(newton.beta.copy(), float(newton.objective), newton.status, message,
                    epochs + newton.iterations, extras)


def solve(problem: BinaryProblem, params: DualCDParams | None = None,
          monitor: Monitor | None = None, start: WarmStart | None = None, *,
          alpha: np.ndarray | None = None, newton: NewtonMethod | None = None) -> Solution:
    """Solve the binary ``problem`` (hinge or squared hinge; regularized bias or none) from
    alpha = 0 or from the :class:`~solvers.base.WarmStart` ``start``: its dual point
    ``start.dual`` (clipped into the box), else its primal point ``start.beta`` = (w, b)
    (:func:`primal_start`); its ``state`` and ``model`` are ignored.  ``alpha``: the
    deprecated spelling of ``start=WarmStart(dual=alpha)``, kept for one release.
    ``newton``: the Newton method to switch to (:func:`solve_state`)."""
    DUAL_CD_SOLVES.require_problem(problem, "dual_cd")
    params = params or DualCDParams(C=problem.C, loss=problem.loss, bias=problem.bias,
                                    bias_scale=problem.bias_scale)
    start = replaced_keyword(warm_start_argument(start), "alpha", alpha, "dual")
    if start is not None and start.dual is not None:
        state = dual_start(problem, start.dual)
    elif start is not None and start.beta is not None:
        state = primal_start(problem, start.beta)
    else:
        state = DualState(np.zeros(problem.n_samples), problem.zeros())
    return solve_state(problem, params, monitor, state, newton=newton)[0]


def run(problem: BinaryProblem, params: DualCDParams, monitor: Monitor,
        start: WarmStart | None = None, newton: NewtonMethod | None = None) -> Solution:
    """The spec's entry point (binary problems; one-vs-rest through the multiclass layer);
    ``start``: a :class:`~solvers.base.WarmStart` (a primal point: another C's solution,
    another solver's point), read as :func:`solve` reads it; ``newton``: the Newton method to
    switch to (the registered spec's is mfn's)."""
    return solve(problem, params, monitor, start=warm_start_argument(start), newton=newton)


def solve_path(problem: BinaryProblem, Cs, params: DualCDParams | None = None,
               monitor: Monitor | None = None, newton: NewtonMethod | None = None
               ) -> list[Solution]:
    """Solve for each C in ``Cs`` in order, each from the last point's alpha scaled by C_new /
    C_old: the box [0, C_i] (hinge) scales with C, so bounded alphas stay at the bound and the
    rest keep their place in the box, and w = sum alpha_i y_i x~_i scales by the same factor
    (no pass over the data).  Each solution carries ``extras["seconds"]``; a stop asked by the
    monitor ends the path."""
    params = params or DualCDParams(C=problem.C, loss=problem.loss, bias=problem.bias,
                                    bias_scale=problem.bias_scale)
    state = None
    last_C = None
    solutions = []
    for C in Cs:
        clock = Stopwatch()
        sub = problem.with_C(float(C))
        if state is None:
            state = DualState(np.zeros(sub.n_samples), sub.zeros())
        else:
            ratio = float(C) / last_C
            state.alpha *= ratio
            state.beta *= ratio
            if state.complement is not None:  # C_i - alpha_i scales alike
                state.complement *= ratio
        solution, state = solve_state(sub, params.model_copy(update={"C": float(C)}),
                                      monitor, state, clock, newton)
        solution.extras["seconds"] = clock()
        solutions.append(solution)
        last_C = float(C)
        if solution.status == Termination.STOPPED:
            break
    return solutions



# -- Crammer-Singer: the sequential dual method --------------------------------------------


def crammer_singer_problem(dataset, params: DualCDParams) -> CrammerSingerProblem:
    """The Crammer-Singer problem ``params`` pose on ``dataset`` (labels as class indices)."""
    labels = np.searchsorted(dataset.classes, dataset.y)
    return CrammerSingerProblem(dataset.X, labels, dataset.classes.shape[0], C=params.C,
                                bias=params.bias, bias_scale=params.bias_scale,
                                sample_weight=dataset.sample_weight)


def solve_crammer_singer(problem: CrammerSingerProblem, params: DualCDParams | None = None,
                         monitor: Monitor | None = None, start: WarmStart | None = None, *,
                         alpha: np.ndarray | None = None) -> tuple[Solution, np.ndarray]:
    """Solve a Crammer-Singer problem by the sequential dual method from alpha = 0 or from
    the feasible dual point ``start.dual`` (a :class:`~solvers.base.WarmStart`; shape (n,
    n_classes); its ``beta``, ``state`` and ``model`` are ignored: W is recomputed from
    alpha); returns the solution (``beta`` is W, shape (n_classes, n_features + 1)) and the
    final alpha.  Records every gap check: P(W), the relative gap (P(W) - D(alpha)) / P(W)
    (:class:`CrammerSingerProblem`).  ``alpha``: the deprecated spelling of
    ``start=WarmStart(dual=alpha)``, kept for one release."""
    params = params or DualCDParams(C=problem.C, loss="hinge", bias=problem.bias,
                                    multiclass="crammer_singer")
    start = replaced_keyword(warm_start_argument(start), "alpha", alpha, "dual")
    alpha = None if start is None else start.dual
    reporter = Reporter(monitor, "relative_duality_gap")
    X = problem.X
    n, k = problem.n_samples, problem.n_classes
    s = problem.effective_bias_scale
    sqnorm = np.asarray(X.multiply(X).sum(axis=1)).ravel() + s * s
    alpha = np.zeros((n, k)) if alpha is None else np.array(alpha, dtype=np.float64)
    W = problem.zeros() if not alpha.any() else problem.primal_from_dual(alpha)
    W = np.ascontiguousarray(W)
    index = np.arange(n, dtype=np.int64)
    # the shrinking's state (crammer_singer_epochs): every example and class active at first
    class_order = np.tile(np.arange(k, dtype=np.int64), (n, 1))
    n_active_classes = np.full(n, k, dtype=np.int64)
    y_position = np.asarray(problem.labels, dtype=np.int64).copy()
    istate = np.array([n, 0], dtype=np.int64)
    gap_rule = params.stop_rule == "gap"
    eps = params.eps if not gap_rule else 0.0
    fstate = np.array([max(10.0 * eps, 1.0)])  # LIBLINEAR's first eps_shrink
    rng = _generator(params.permutation_seed)
    budget = k * max(X.nnz + n, 1)  # the first check after one pass's worth of steps
    check_seconds = np.inf
    rows = np.arange(n)
    epochs = checks = 0
    status = message = None
    while True:
        started = time.perf_counter()
        ran, met, violation, work = crammer_singer_epochs(
            X.indptr, X.indices, X.data, problem.labels, s, problem.cost, sqnorm, alpha, W,
            index, class_order, n_active_classes, y_position, istate, fstate,
            params.shrinking, rng, params.max_iter - epochs, eps,
            budget if gap_rule else np.inf)
        epochs += ran
        descent_seconds = time.perf_counter() - started
        elapsed = reporter.clock()
        primal = problem.objective(W)
        dual = -problem.regularizer(W) - (float(alpha.sum()) - float(alpha[rows,
                                                                           problem.labels].sum()))
        gap = (primal - dual) / max(abs(primal), 1e-300)
        check_seconds = min(check_seconds, time.perf_counter() - started - descent_seconds)
        budget = _next_budget(params, check_seconds, work, descent_seconds, k * (X.nnz + n))
        checks += 1
        status, message = _verdict(params, epochs, gap, gap_rule, met,
                                   f"largest violation {violation:.3g} < eps={params.eps:g}")
        stop = reporter(epochs, primal, gap, elapsed=elapsed, dual_objective=dual,
                        max_violation=float(violation), work=int(work))
        if status is not None:
            break
        if stop:
            status, message = Termination.STOPPED, reporter.stop_message
            break
    gap = (primal - problem.dual_objective(alpha)) / max(abs(primal), 1e-300)
    extras = {"epochs": epochs, "gap_checks": checks, "relative_duality_gap": float(gap)}
    return Solution(W.copy(), float(primal), status, message, epochs, extras), alpha


def fit_crammer_singer(dataset, spec, params: DualCDParams, monitor: Monitor) -> Fit:
    """``train`` handler of task ``crammer_singer``."""
    problem = crammer_singer_problem(dataset, params)
    solution, _ = solve_crammer_singer(problem, params, monitor)
    summary = SubproblemResult("crammer_singer", solution.objective,
                               Termination(solution.status), solution.message,
                               solution.iterations, solution.extras)
    W = solution.beta
    model = LinearModel(W[:, :-1], problem.effective_bias_scale * W[:, -1], dataset.classes)
    return Fit(model, [summary])


def _next_budget(params, check_seconds: float, work: float, descent_seconds: float,
                 check_entries: float) -> float:
    """Stored entries to descend through before the next gap check: ``gap_check_work``
    times as long as a check takes, at the rate the descent just had; with
    ``gap_check_clock="work"``, ``gap_check_work`` times a check's ``check_entries`` (no
    clock read: the run is reproducible)."""
    if params.gap_check_clock == "work":
        return max(params.gap_check_work * check_entries, 1.0)
    rate = work / max(descent_seconds, 1e-9)
    return max(params.gap_check_work * check_seconds * rate, 1.0)


def _verdict(params, epochs: int, gap: float, gap_rule: bool, own_met: bool,
             own_rule: str) -> tuple[Termination | None, str | None]:
    """(status, message) after a check, or (None, None) to go on: the certified gap (``tol``)
    or, with ``stop_rule`` LIBLINEAR's, its rule (``own_rule`` says it when met), then
    ``max_iter``."""
    if gap_rule and gap <= params.tol:
        return Termination.CONVERGED, (f"converged: relative duality gap {format_gap(gap)} <= "
                                       f"tol={params.tol:g}")
    if not gap_rule and own_met:
        return Termination.CONVERGED, f"converged: {own_rule} (LIBLINEAR's rule)"
    if epochs >= params.max_iter:
        return Termination.MAX_ITER, (f"max_iter={params.max_iter} outer iterations reached "
                                      f"(relative duality gap {format_gap(gap)})")
    return None, None
