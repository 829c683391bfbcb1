"""mfn on binary problems: the solve, beta-seeding (section 4.1) and the dual KKT check
(section 4.7)."""

from __future__ import annotations

import numpy as np

from solvers.base import (
    Solution,
    Termination,
    WarmStart,
    replaced_keyword,
    warm_start_argument,
)
from solvers.core.linalg import dot
from solvers.core.rows import BinaryRows
from solvers.core.sparse import csr_matvec, csr_rmatvec_rows
from solvers.distributed.newton_rows import PartitionedNewtonRows
from solvers.mfn.continuation import solve_extras, solve_rows, solve_terms
from solvers.mfn.params import MFN_SOLVES, MFNParams, dual_kkt_applies
from solvers.monitor import Monitor, Reporter, Stopwatch
from solvers.problems import BinaryProblem


def binary_terms(problem: BinaryProblem) -> BinaryRows:
    MFN_SOLVES.require_problem(problem, "mfn")
    return BinaryRows(problem.X, problem.y, problem.cost, problem.effective_bias_scale)


def solve(problem: BinaryProblem, params: MFNParams | None = None,
          monitor: Monitor | None = None, start: WarmStart | None = None,
          continuation: bool = False, *, beta0: np.ndarray | None = None,
          w_guess: np.ndarray | None = None,
          active_guess: np.ndarray | None = None) -> Solution:
    """Solve a binary ``problem`` with L2-SVM-MFN.

    Starting point (Appendix A, step 1): zero by default, or ``start.beta`` as given (the
    :class:`~solvers.base.WarmStart`'s ``dual``, ``state`` and ``model`` are ignored: the
    Newton steps are primal).  A start is crude (ini = 0: both heuristics) unless
    ``continuation=True`` marks it as the solution of a nearby problem (ini = 1: no
    heuristics, eps straight to its final value), the beta-seeding of a C path.  A weight
    guess w~ without a bias is rescaled by eqs. (8)-(9) first:
    ``start=WarmStart(beta=seed_from_weights(problem, w_guess, active_guess))``.

    ``beta0`` (the start's beta), ``w_guess`` and ``active_guess`` (the seeded start above)
    are the deprecated spellings, kept for one release.

    C, the loss and the bias mode are the problem's; ``params`` gives mfn's own settings.
    """
    reporter = Reporter(monitor, "relative_duality_gap")
    terms = binary_terms(problem)
    params = params or MFNParams(C=problem.C, loss=problem.loss, bias=problem.bias)
    start = warm_start_argument(start)
    start = replaced_keyword(start, "beta0", beta0, "beta")
    start = replaced_keyword(
        start, "w_guess", None if w_guess is None
        else seed_from_weights(problem, w_guess, active_guess), "beta",
        "start=WarmStart(beta=seed_from_weights(problem, w_guess, active_guess))")
    beta_start = None if start is None else start.beta
    dual_kkt = None
    if params.dual_kkt_tol is not None:
        def dual_kkt(state):
            return dual_kkt_violation(problem, state.beta,
                                      terms.outputs_in_input_order(state.outputs))[1]
    state, status, message, engine = solve_terms(
        terms, problem, problem.loss_function, params, reporter, beta_start, not continuation,
        dual_kkt)
    return _solution(problem, terms, engine, state, status, message, diagnostics=True)


def solve_distributed(problem, params: MFNParams, monitor: Monitor | None = None,
                      start: WarmStart | None = None, *,
                      resume: np.ndarray | None = None) -> Solution:
    """mfn on a :class:`~solvers.distributed.DistributedBinaryProblem`: the same loop
    (:func:`~solvers.mfn.continuation.solve_rows`) over the partitions' rows
    (:class:`~solvers.distributed.newton_rows.PartitionedNewtonRows`), from beta = 0 (a
    crude start: both heuristics, and the C path when C is large, as for local rows).

    ``start.beta`` (the rest of the :class:`~solvers.base.WarmStart` is ignored): a nearby
    problem's solution or the last iterate of a solve that lost a worker
    (``problem.checkpoint``, which the rows keep current; ``solvers.train`` passes it).  The
    solve then starts from it at the target C and the final epsilon (ini = 1): a warm start,
    so the cold start's heuristics are not repeated.  Its optimum is the same; the path to it
    differs from the uninterrupted solve's.  ``resume``: the deprecated spelling of
    ``start=WarmStart(beta=...)``, kept for one release."""
    reason = params.rows_refusal(problem.loss_function, PartitionedNewtonRows.capabilities)
    if reason is not None:
        raise ValueError(reason)
    reporter = Reporter(monitor, "relative_duality_gap")
    start = replaced_keyword(warm_start_argument(start), "resume", resume, "beta")
    warm = start is not None and start.beta is not None
    def checkpoint(beta):  # the loop's beta, updated in place: the last accepted iterate
        problem.checkpoint = WarmStart(beta=beta)

    rows = PartitionedNewtonRows(problem, checkpoint)
    state, status, message, engine = solve_rows(
        rows, problem.C, problem.loss_function, params, reporter,
        start.beta if warm else None, not warm)
    objective = problem.regularizer(state.beta) + rows.loss_sum(state.beta)
    extras = {**solve_extras(engine, state), "distributed": True,
              **problem.communication_totals()}
    return Solution(state.beta.copy(), objective, Termination(status), message,
                    engine.count.iterations, extras)


def _solution(problem: BinaryProblem, terms: BinaryRows, engine, state, status, message,
              diagnostics: bool) -> Solution:
    """The :class:`Solution` at the engine's state: the problem's objective, the run's
    extras and, with ``diagnostics`` (squared hinge: :func:`dual_kkt_applies`), section 4.7's
    dual KKT violation (two passes over the data)."""
    extras = solve_extras(engine, state)
    if diagnostics and dual_kkt_applies(problem.loss_function):
        extras["dual_kkt_violation"] = dual_kkt_violation(
            problem, state.beta, terms.outputs_in_input_order(state.outputs))[1]
    objective = engine.rows.problem_objective_from_slacks(
        state.beta, 1.0 - engine.rows.t * state.outputs)
    return Solution(state.beta.copy(), objective, Termination(status), message,
                    engine.count.iterations, extras)


def seed_from_weights(problem: BinaryProblem, w_guess: np.ndarray,
                      active: np.ndarray | None = None, refine: bool = True) -> np.ndarray:
    """beta_0 = (gamma w~, b_0) from a weight guess w~ (section 4.1, eqs. (8)-(9)).

    gamma and b_0 minimize lambda/2 (gamma^2 ||w~||^2 + b_0^2 / s^2) + 1/2 sum_{i in I}
    c_i (gamma w~.x_i + b_0 - t_i)^2 over the guessed active set I (all examples by default),
    lambda = 1/(2C), b_0 the intercept (the bias coefficient is b_0 / s; s = 1 gives the
    paper's formulas).  With ``refine`` the set is reset to I(beta_0) and (9) solved again
    (footnote 4; w~ . x_i is not recomputed).  Without a bias, b_0 = 0 and gamma solves the
    one-dimensional problem.
    """
    lam = 1.0 / (2.0 * problem.C)
    w_guess = np.asarray(w_guess, dtype=np.float64)
    if w_guess.shape != (problem.n_features,):
        raise ValueError(f"w_guess must have n_features = {problem.n_features} entries")
    scores = csr_matvec(problem.X, w_guess)  # w~ . x_i, computed once
    t = problem.y
    c = problem.cost / problem.C
    s = problem.effective_bias_scale
    idx = np.arange(problem.n_samples) if active is None else np.asarray(active, dtype=np.int64)
    ww = dot(w_guess, w_guess)
    beta = np.zeros(problem.n_features + 1)
    for _ in range(2 if refine else 1):
        u, ti, ci = scores[idx], t[idx], c[idx]
        p11 = lam * ww + float(np.sum(ci * u * u))
        q1 = float(np.sum(ci * ti * u))
        if s == 0.0:
            gamma, b0 = (q1 / p11 if p11 > 0 else 0.0), 0.0
        else:
            p22 = lam / (s * s) + float(ci.sum())
            p12 = float(np.sum(ci * u))
            q2 = float(np.sum(ci * ti))
            d = p11 * p22 - p12 * p12
            if d <= 0.0:  # w~ = 0 or an empty set: nothing to rescale
                return beta
            gamma = (p22 * q1 - p12 * q2) / d
            b0 = (p11 * q2 - p12 * q1) / d
        beta[:-1] = gamma * w_guess
        beta[-1] = b0 / s if s else 0.0
        idx = np.flatnonzero(t * (gamma * scores + b0) < 1.0)
    return beta


def dual_kkt_violation(problem: BinaryProblem, beta: np.ndarray,
                       outputs: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Section 4.7: dual variables recovered from ``beta`` and their maximum KKT violation.

    In the paper's scaling (lambda = 1/(2C), example weights c_i = C_i / C): alpha_i =
    -c_i t_i d_i / lambda on the active set I(beta) (d_i = y_i - t_i), 0 elsewhere;
    beta^ = sum alpha_i t_i x~_i, xi_i = lambda alpha_i / c_i, g_i = t_i y_i(beta^) + xi_i - 1;
    the violation is max(max_{alpha_i > 0} |g_i|, max_{alpha_i = 0} max(0, -g_i)).  These
    alpha_i = 2 C_i max(0, 1 - m_i) are also the dual variables of ``docs/design.md``'s scaling
    (``problem.dual_from_primal(beta)``), which are returned with the violation.
    ``outputs`` (x~_i . beta for every example) saves a product when the caller has them.

    The paper writes it for the squared hinge; any clipped loss without an upper bound on
    its multipliers (:func:`dual_kkt_applies`) has the same check with lambda = 1/(kappa C),
    the active set t_i y_i < 1 - xi_lo, alpha_i = c_i (xi_i - xi_lo) / lambda there, and
    xi_i = lambda alpha_i / c_i + xi_lo (the slack at which L'(xi) = alpha_i / C_i).
    """
    loss = problem.loss_function
    if not dual_kkt_applies(loss):
        raise ValueError("the dual KKT check of section 4.7 is for the squared hinge loss (a "
                         "clipped loss whose multipliers have no upper bound)")
    lam = 1.0 / (loss.kappa * problem.C)
    c = problem.cost / problem.C
    t = problem.y
    if outputs is None:
        outputs = problem.outputs(beta)
    active = t * outputs < 1.0 - loss.xi_lo
    alpha = np.where(active, c * (-t * (outputs - t) - loss.xi_lo) / lam, 0.0)
    rows = np.flatnonzero(alpha)
    beta_hat = np.empty(problem.n_features + 1)
    beta_hat[:-1] = csr_rmatvec_rows(problem.X, rows, (alpha * t)[rows])
    beta_hat[-1] = problem.effective_bias_scale * float((alpha * t)[rows].sum())
    xi = lam * alpha / np.where(c > 0, c, 1.0) + loss.xi_lo
    g = t * problem.outputs(beta_hat) + xi - 1.0
    positive = alpha > 0
    violation = max(
        float(np.max(np.abs(g[positive]), initial=0.0)),
        float(np.max(np.maximum(0.0, -g[~positive]), initial=0.0)),
    )
    return alpha, violation


def solve_path(problem: BinaryProblem, Cs, params: MFNParams | None = None,
               monitor: Monitor | None = None, seeding: bool = True,
               rescale: bool = False, diagnostics: bool = True) -> list[Solution]:
    """Solve for each C in ``Cs`` (in the given order) -- the C path of Table 1.

    With ``seeding`` (beta-seeding, section 4.1) each problem starts from the previous
    solution with ini = 1 (no heuristics; footnote 5): as it is (gamma = 1, the previous b,
    "this simple initialization also works quite well"), or with ``rescale`` rescaled by eqs.
    (8)-(9) on the previous active set.  Without it every problem starts from zero with both
    heuristics.  Seeded as it is (and without ``dual_kkt_tol``), the path shares one set
    of sorted rows, one Gram upkeep and one state between its points (:func:`run_path`).
    """
    params = params or MFNParams(loss=problem.loss, bias=problem.bias)
    if seeding and not rescale and problem.loss_function.clipped \
            and params.dual_kkt_tol is None:
        return run_path(problem, Cs, params, monitor, diagnostics)
    solutions = []
    previous = None
    for C in Cs:
        sub = problem.with_C(C)
        start = None
        if seeding and previous is not None:
            beta = previous.beta
            if rescale:
                margins = sub.margins(beta)
                beta = seed_from_weights(sub, beta[:-1], np.flatnonzero(margins < 1.0),
                                         refine=False)
            start = WarmStart(beta=beta)
        clock = Stopwatch()
        solution = solve(sub, params.model_copy(update={"C": float(C)}), monitor, start=start,
                         continuation=start is not None)
        solution.extras["seconds"] = clock()
        solutions.append(solution)
        previous = solution
    return solutions


def run_path(problem: BinaryProblem, Cs, params: MFNParams, monitor: Monitor | None = None,
             diagnostics: bool = True) -> list[Solution]:
    """The C path of :func:`solve_path` with beta-seeding (ini = 1 after the first point) on
    one engine: the rows sorted once, the Gram matrix of the active terms carried from one C
    to the next (it depends on the example weights, not on C), the state moved along.  Each
    point gives what ``solve(problem.with_C(C), start=WarmStart(beta=previous),
    continuation=True)`` gives;
    ``diagnostics=False`` leaves out section 4.7's dual KKT violation (two passes per point,
    which a cross-validation does not need).  The clipped losses (the squared hinge, the
    modified Huber loss): the hinge's homotopy restarts at tau = 1 for every C (use
    :func:`solve_path`'s loop)."""
    if not problem.loss_function.clipped:
        raise ValueError("run_path follows the clipped losses (the squared hinge, the modified "
                         "Huber loss), not a homotopy")
    solutions = []
    engine = state = terms = None
    for C in Cs:
        sub = problem.with_C(C)
        reporter = Reporter(monitor, "relative_duality_gap")
        if engine is None:
            terms = binary_terms(sub)
            state, status, message, engine = solve_terms(terms, sub, sub.loss_function, params,
                                                         reporter, None, True)
        else:
            engine.retarget(sub, reporter)
            status, message = engine.run(state, sub.loss_function, params.epsilon)
        seconds = reporter.clock()
        solution = _solution(sub, terms, engine, state, status, message, diagnostics)
        solution.extras["seconds"] = seconds
        solutions.append(solution)
        if status == Termination.STOPPED:
            break
    return solutions


def spec_path(problem: BinaryProblem, Cs, params: MFNParams) -> list[Solution]:
    """The spec's ``path``: :func:`solve_path` seeded, without the diagnostics."""
    return solve_path(problem, Cs, params, diagnostics=False)


def run(problem: BinaryProblem, params: MFNParams, monitor: Monitor,
        start: WarmStart | None = None) -> Solution:
    """The spec's entry point (binary problems; the multiclass layer does one-vs-rest).
    ``start.beta``, the solution of a nearby problem (the same data at another C), is taken as
    beta-seeding does (section 4.1: ini = 1, no heuristics)."""
    start = warm_start_argument(start)
    return solve(problem, params, monitor, start=start,
                 continuation=start is not None and start.beta is not None)
