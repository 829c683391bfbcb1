"""dual_cd on linear support vector regression: Ho & Lin's dual coordinate descent (JMLR 2012,
Algorithm 4; LIBLINEAR's ``solve_l2r_l1l2_svr``, ``-s 13`` L1 loss, ``-s 12`` L2 loss).

The problem is :class:`solvers.problems.RegressionProblem` (LIBLINEAR's objective and C):
minimize 1/2 ||w~||^2 + sum_i C_i L(y_i - w~ . x~_i), L = max(0, |r| - eps) or its square.
Ho & Lin's dual (their eq. (4) with beta, here b)::

    minimize f(b) = 1/2 b' (Q + diag(lam)) b - y'b + eps ||b||_1,  -U_i <= b_i <= U_i

with Q_ij = x~_i . x~_j, U_i = C_i and lam_i = 0 (L1), U_i = inf and lam_i = 1/(2 C_i) (L2):
-D(b) of the problem layer, the box and lam from the loss layer (the residual loss's dual
bounds and ``dual_quadratic``: C_i l*(v / C_i) = v^2 / (4 C_i) is 1/2 lam_i v^2).  The loop is
:func:`solvers.dual_cd.kernels.svr_epochs` (random permutations, Algorithm 4's one-variable
Newton step on the non-smooth eps |b_i|, LIBLINEAR's shrinking and relative stop).

Stopping: the certified relative duality gap (``tol``, every solver's rule), checked as the
classification driver checks it (after a pass's worth of steps, then whenever the descent ran
``gap_check_work`` times as long as the last check); ``eps`` (LIBLINEAR's -e, 0.1 for these
types) is then only the first threshold of LIBLINEAR's rule Gnorm1 <= eps Gnorm1_init, divided
by 10 each time the full set meets it with the gap above ``tol``.  ``stop_rule=
"projected_gradient"`` stops on LIBLINEAR's rule itself (uncertified).  The L2 loss switches
to mfn's primal Newton method at ``newton_switch_iter`` (LIBLINEAR's -s 12 -> -s 11).  The L1
loss, for which LIBLINEAR has no switch (its -s 13 stops at 1000 iterations with a warning,
on mg at C = 10 and bodyfat at C = 1 and 10 3.7e-5 .. 3.6e-4 above the optimum, as this
loop alone did), follows each stretch of coordinate descent with Newton steps on the dual's
face (:func:`face_newton_step`, ``face_newton``): those end the run at round-off within a
few outer iterations there.

The solution is the w of lowest objective among the gap checks (P(w(b)) is not monotone along
the dual descent), certified against D at the last b.

Warm starts: ``WarmStart(dual=b)`` clipped into the box, or ``WarmStart(beta=...)`` through the
KKT map b_i = C_i L'(r_i) (:meth:`RegressionProblem.dual_from_primal`), w recomputed from b.
"""

from __future__ import annotations

import numpy as np

from solvers.base import Fit, Solution, SubproblemResult, WarmStart, warm_start_argument
from solvers.core.sparse import csr_matvec, row_norms_squared
from solvers.dual_cd.compiled import (
    ACTIVE,
    CONVERGED,
    DUAL,
    EPOCHS,
    EPS,
    FACE_NEWTON,
    GAP,
    MAX_ITER,
    PRIMAL,
    RELATIVE,
    WORK,
    compiled_applies,
    max_records,
    svr_loop,
)
from solvers.dual_cd.kernels import svr_epochs
from solvers.dual_cd.params import DUAL_CD_SOLVES, DualCDParams
from solvers.dual_cd.solver import (
    NewtonMethod,
    _generator,
    _verdict,
    descend_with_gap_checks,
    newton_switch_at,
)
from solvers.models.regression import RegressionModel
from solvers.monitor import Continued, Monitor, NullMonitor, Reporter, Stopwatch
from solvers.problems import RegressionProblem
from solvers.termination import Termination


def _certificate(problem: RegressionProblem, b: np.ndarray, beta: np.ndarray
                 ) -> tuple[float, float, float]:
    """(P(w), D(b), relative gap): one pass over the data for the residuals."""
    w, intercept = problem.split(beta)
    primal = problem.objective_from_residuals(beta, problem.y - csr_matvec(problem.X, w,
                                                                           intercept))
    dual = problem.dual_objective(b, beta_b=beta)
    return primal, dual, (primal - dual) / max(abs(primal), 1e-300)


#: The face Newton step (:func:`face_newton_step`) forms the free rows densely: it runs when
#: the free set times the columns (with the bias's) is at most this many entries.
FACE_NEWTON_MAX_ENTRIES = 4_000_000
#: Singular values of the free rows below this fraction of the largest count as zero (the
#: step is the minimum-norm one on the face's range).
FACE_NEWTON_RCOND = 1e-10
#: Armijo's fraction of the decrease the gradient predicts along the projected step.
ARMIJO = 1e-4
#: At most this many times the working set loses the coordinates its direction pushes out.
FACE_NEWTON_ROUNDS = 20
#: At most this many face steps follow a stretch of coordinate descent; they stop once one
#: decreases f by at most this fraction of the first one's.
FACE_NEWTON_STEPS = 50
FACE_NEWTON_RETURNS = 1e-3


def _face_direction(dense: np.ndarray, gradient: np.ndarray, bound: np.ndarray):
    """The direction on the working set (its rows ``dense``, with the bias column, and its
    gradient), or None when there is no descent: the minimum-norm Newton step on the range
    of Q_WW = X~_W X~_W' (thin SVD X~_W = U S V', p = -U S^-2 U' g) and, on its null space
    where f is linear, the steepest descent scaled so that t = 1 moves its largest entry
    across the box (the search halves it)."""
    U, S, _ = np.linalg.svd(dense, full_matrices=False)
    keep = S > FACE_NEWTON_RCOND * S[0] if S.size and S[0] > 0 else np.zeros(0, dtype=bool)
    if not keep.any():
        return None
    U, S = U[:, keep], S[keep]
    projected = U.T @ gradient
    direction = -(U @ (projected / S**2))
    null = gradient - U @ projected
    largest = np.abs(null).max()
    if largest > FACE_NEWTON_RCOND * np.abs(gradient).max():
        direction -= null * (bound.max() / largest)
    if gradient @ direction >= 0.0:
        return None
    return direction


def face_newton_step(X, y: np.ndarray, s: float, epsilon: float, upper: np.ndarray,
                     b: np.ndarray, beta: np.ndarray) -> tuple[int, float]:
    """One projected Newton step of the L1-loss dual on the working set coordinate descent
    has found; updates ``b`` and ``beta`` (w = sum_i b_i x~_i, kept) in place and returns the
    stored entries touched and the decrease of f (0: no step).

    Why.  With the L1 loss (lam = 0) f(b) = 1/2 ||X~'b||^2 - y'b + eps ||b||_1 has the
    Hessian Q = X~ X~' of rank at most d + 1 on n >> d variables: on sets of few features
    at large C (mg at C = 10, bodyfat at C = 1 and 10: d = 6, 14) coordinate descent moves
    along strongly correlated coordinates by ever smaller steps and ended at its iteration
    cap 3.7e-5 .. 3.6e-4 above the optimum (LIBLINEAR's -s 13, which has no switch, stops
    there with a warning).  LIBLINEAR hands the squared losses to a primal Newton method
    (-s 1 -> -s 2, -s 12 -> -s 11); the L1 loss has no primal Hessian, but on a face of the
    dual -- each b_i on a side sigma_i of 0, inside its box -- f is a quadratic plus the
    linear eps sigma'b: a Newton step there is exact, and Bertsekas' projected Newton
    method ("Projected Newton methods for optimization problems with simple constraints",
    SIAM J. Control Optim. 20, 1982) moves along it projected onto the face.

    The step.  The working set W: the free b_i (sigma_i their sign) and the b_i at 0 or a
    bound whose gradient points into the box (the coordinate steps' violators, sigma_i the
    side they would move to).  g_W = X~_W w - y_W + eps sigma_W (Ho & Lin's eq. (26)
    gradient plus the kink's side), the thin SVD X~_W = U S V' (|W| x (d + 1): O(|W| d^2),
    no |W| x |W| matrix), and the direction p = -U S^-2 U' g (Newton on the range of Q_WW)
    plus, on its null space where f is linear, the steepest descent scaled so that t = 1
    moves its largest entry across the box (:func:`_face_direction`).  A coordinate at 0 or
    its bound that p pushes out of its face leaves W and p is computed again (Bertsekas'
    rule: the Newton system only on the coordinates that can move).  Then the arc b(t) =
    P(b + t p), P clipping each coordinate into [0, U_i] on its side, t = 1, 1/2, ...
    until Armijo's decrease.  Coordinate descent resumes from the new point, and the
    certified gap decides the stop as before."""
    d1 = beta.shape[0]
    w, intercept = beta[:-1], s * beta[-1]
    smooth = csr_matvec(X, w, intercept) - y  # (X~ w - y)_i: Q b - y
    gp, gn = smooth + epsilon, smooth - epsilon
    at_zero, at_upper, at_lower = b == 0.0, b >= upper, b <= -upper
    free = ~(at_zero | at_upper | at_lower)
    # the working set: the free b_i and those at 0 or a bound whose gradient points into the
    # box (the coordinate steps' violators); sigma_i the side each lives on
    up = (at_zero & (gp < 0.0)) | (at_upper & (gp > 0.0))
    down = (at_zero & (gn > 0.0)) | (at_lower & (gn < 0.0))
    working = np.flatnonzero(free | up | down)
    if working.size == 0 or working.size * d1 > FACE_NEWTON_MAX_ENTRIES:
        return X.nnz, 0.0
    sign = np.where(free[working], np.sign(b[working]),
                    np.where(up[working], 1.0, -1.0))
    # the direction on the working set; a coordinate at 0 or its bound that the direction
    # would push out of the box leaves the set and the direction is computed again
    # (Bertsekas' rule: the Newton system only on the coordinates that can move)
    rows = X[working]
    dense = np.empty((working.size, d1))
    dense[:, :-1] = rows.toarray()
    dense[:, -1] = s
    gradient = smooth[working] + epsilon * sign
    charged = X.nnz + rows.nnz  # the residuals' pass and the rows' copy
    for _ in range(FACE_NEWTON_ROUNDS):
        # an SVD of the |W| x (d + 1) rows: |W| (d + 1)^2 operations, charged as entries
        charged += dense.size * d1
        direction = _face_direction(dense, gradient, upper[working])
        if direction is None:
            return charged, 0.0
        z = sign * b[working]
        stuck = ((z <= 0.0) & (sign * direction < 0.0)) | \
            ((z >= upper[working]) & (sign * direction > 0.0))
        if not stuck.any():
            break
        keep = ~stuck
        working, sign, dense, gradient = working[keep], sign[keep], dense[keep], gradient[keep]
        if working.size == 0:
            return charged, 0.0
    else:
        return charged, 0.0
    free = working
    current = b[free]
    bound = upper[free]
    # the projected search (Bertsekas' arc b(t) = P(b + t p), P clipping into the box and
    # to 0 on the side of the sign): t = 1, 1/2, ... until Armijo's decrease; f's change is
    # 1/2 (||w + X~_F' delta||^2 - ||w||^2) - y_F' delta + eps (||b_F + delta||_1 - ||b_F||_1)
    norm = beta @ beta
    t = 1.0
    for _ in range(30):
        # each coordinate stays on its side sigma_i of 0 (its eps |b_i| kink), in the box
        moved = sign * np.clip(sign * (current + t * direction), 0.0, bound)
        delta = moved - current
        shift = dense.T @ delta
        change = (0.5 * ((beta + shift) @ (beta + shift) - norm) - y[free] @ delta
                  + epsilon * (np.abs(moved).sum() - np.abs(current).sum()))
        if change <= ARMIJO * (gradient @ delta) and change < 0.0:
            b[free] = moved
            beta += shift
            return charged, -change
        t *= 0.5
        charged += dense.size
    return charged, 0.0


def solve_regression(problem: RegressionProblem, params: DualCDParams | None = None,
                     monitor: Monitor | None = None, start: WarmStart | None = None,
                     newton: NewtonMethod | None = None, *,
                     driver: str | None = None) -> Solution:
    """Solve ``problem`` (either residual loss; regularized bias or none) by Ho & Lin's dual
    coordinate descent from b = 0 or from ``start`` (the module docstring); returns the
    solution, ``extras["dual"]`` the final b.  ``newton``: the primal Newton method an L2-loss
    run hands w to at ``newton_switch_iter`` without a stop (LIBLINEAR's -s 12 -> -s 11;
    the registered spec's is mfn's; None: no switch).  ``driver``: "compiled" (the descent
    and its checks as one Numba loop, :mod:`solvers.dual_cd.compiled`, on the work clock) or
    "python"; None: compiled on a small problem (``compiled_applies``)."""
    DUAL_CD_SOLVES.require("regression", problem.loss, problem.bias, solver="dual_cd")
    params = params or DualCDParams(C=problem.C, task="regression", loss=problem.loss,
                                    epsilon=problem.epsilon, bias=problem.bias,
                                    bias_scale=problem.bias_scale)
    start = warm_start_argument(start)
    reporter = Reporter(monitor, "relative_duality_gap")
    X = problem.X
    n = problem.n_samples
    s = problem.effective_bias_scale
    lower, upper = problem.dual_bounds()
    if start is not None and start.dual is not None:
        b = np.clip(np.asarray(start.dual, dtype=np.float64), lower, upper)
    elif start is not None and start.beta is not None:
        b = np.clip(problem.dual_from_primal(np.asarray(start.beta, dtype=np.float64)),
                    lower, upper)
    else:
        b = np.zeros(n)
    beta = problem.primal_from_dual(b)
    quadratic = problem.loss_function.dual_quadratic  # k: C_i l*(v / C_i) = k v^2 / C_i
    lam = np.ascontiguousarray(2.0 * quadratic / problem.cost) if quadratic else np.zeros(n)
    qd = np.empty(n)
    row_norms_squared(X.indptr, X.indices, X.data, qd)
    qd += s * s
    index = np.arange(n, dtype=np.int64)
    istate = np.array([n], dtype=np.int64)
    fstate = np.array([np.inf, -1.0])
    rng = _generator(params.permutation_seed)
    switch_at = newton_switch_at(params, problem) if newton is not None else None
    limit = params.max_iter if switch_at is None else switch_at
    upper = np.ascontiguousarray(upper)
    # the L1 loss: a Newton step on the face after each stretch of coordinate descent
    # (face_newton_step); the squared loss has the primal Newton switch instead
    # from newton_switch_iter on, as the squared losses switch there (coordinate descent
    # alone certifies the easy problems first, in cheaper steps)
    face_newton = (problem.loss_function.piecewise_linear and params.face_newton
                   and params.stop_rule == "gap" and params.newton_switch_iter is not None)

    ran_total = [0]
    best = {"primal": np.inf, "beta": beta.copy()}
    pending = []  # the compiled loop's last sweep, before its face Newton steps
    resume = None
    if driver is None:
        driver = "compiled" if compiled_applies(X.nnz, params.max_iter,
                                                params.gap_check_work) else "python"
    if driver == "compiled":
        state = (b, beta, index, istate, fstate, rng)
        outcome = _run_compiled(problem, params, reporter, state, qd, lam, upper, limit,
                                params.newton_switch_iter if face_newton else 0)
        if outcome[0] == "face_newton":
            _, resume, ran_total[0], sweep, best["primal"], best["beta"] = outcome
            pending.append(sweep)
        else:
            status, message, epochs, eps, total_work, checks, primal, best["beta"] = outcome
            beta = best["beta"]
            return _finish(problem, params, monitor, reporter, status, message, epochs, eps,
                           total_work, checks, primal, beta, b, istate, newton, "compiled")

    def descend(max_epochs, eps, budget):
        if pending:  # the compiled loop's sweep (its epochs already counted in ran_total)
            ran, met, relative, work = pending.pop()
        else:
            ran, met, relative, work = svr_epochs(
                X.indptr, X.indices, X.data, problem.y, s, qd, lam, upper, problem.epsilon,
                b, beta, index, istate, fstate, rng, max_epochs, eps, budget,
                params.shrinking)
            ran_total[0] += ran
        if face_newton and ran_total[0] >= params.newton_switch_iter:
            # face steps while they pay: until one decreases f by at most
            # FACE_NEWTON_RETURNS of the first's (at most FACE_NEWTON_STEPS)
            spent, first = 0, None
            for _ in range(FACE_NEWTON_STEPS):
                step_work, decrease = face_newton_step(X, problem.y, s, problem.epsilon,
                                                       upper, b, beta)
                spent += step_work
                first = decrease if first is None else first
                if decrease <= FACE_NEWTON_RETURNS * first:
                    break
            work += spent
        record = {"relative_violation": float(relative), "active_size": int(istate[0])}
        return ran, met, f"Gnorm1 {relative:.3g} of its first pass's", work, record

    def certify():
        # P at the best w of the checks so far against D at the current b: a valid pair
        # (weak duality holds for any w and any b in the box), and P(w(b)) is not monotone
        # along the dual descent (the L1 loss's wanders by ~1e-5 relative near its optimum)
        primal, dual, _ = _certificate(problem, b, beta)
        if primal < best["primal"]:
            best["primal"], best["beta"][:] = primal, beta
        primal = best["primal"]
        return primal, dual, (primal - dual) / max(abs(primal), 1e-300)

    status, message, epochs, eps, total_work, checks, primal = descend_with_gap_checks(
        params, reporter, limit, max(X.nnz + n, 1), descend, certify, resume)
    return _finish(problem, params, monitor, reporter, status, message, epochs, eps,
                   total_work, checks, primal, best["beta"], b, istate, newton,
                   "python" if resume is None else "compiled, then python")


def _finish(problem: RegressionProblem, params: DualCDParams, monitor, reporter: Reporter,
            status, message, epochs: int, eps: float, total_work: int, checks: int,
            primal: float, beta: np.ndarray, b: np.ndarray, istate: np.ndarray,
            newton: NewtonMethod | None, driver: str) -> Solution:
    """The solution at the best point of the checks, certified against D(b) at w(b)
    recomputed from b (the w kept by the steps accumulates round-off); the L2 loss's Newton
    switch when the descent reached its limit without a verdict."""
    X = problem.X
    n = problem.n_samples
    exact_dual = problem.dual_objective(b)
    gap = (primal - exact_dual) / max(abs(primal), 1e-300)
    extras = {"epochs": epochs, "gap_checks": checks, "relative_duality_gap": float(gap),
              "active_size": int(istate[0]), "final_eps": eps,
              "work_passes": total_work / max(X.nnz + n, 1),
              "nnz_dual": int(np.count_nonzero(b)), "dual": b, "driver": driver}
    if status is None:
        return _switch_to_newton(problem, params, monitor, reporter, epochs, extras, beta,
                                 newton)
    return Solution(beta.copy(), float(primal), status, message, epochs, extras)


def _run_compiled(problem: RegressionProblem, params: DualCDParams, reporter: Reporter,
                  state: tuple, qd: np.ndarray, lam: np.ndarray, upper: np.ndarray,
                  limit: int, face_at: int):
    """The descent and its checks by :func:`~solvers.dual_cd.compiled.svr_loop` from
    ``state`` = (b, beta, index, istate, fstate, rng) (updated in place), its records then
    handed to the monitor as the Python loop reports them.  Returns ``descend_with_gap_
    checks``' outcome and the best point, (status, message, epochs, eps, entries, checks, P,
    best beta); or, when the loop reached the face Newton steps, ("face_newton", the
    ``resume`` state, epochs with the pending sweep's, that sweep, the best P and beta).  A
    stop asked at a record ends the run at that check's point (the loop run again from the
    start to it: it is deterministic)."""
    start = tuple(np.array(a, copy=True) for a in state)
    X = problem.X
    n = problem.n_samples
    pass_work = max(X.nnz + n, 1)
    gap_rule = params.stop_rule == "gap"
    margin = problem.loss_function.margin_loss
    records = np.empty((max_records(params.max_iter, params.gap_check_work), 8))

    def loop(arrays, max_checks):
        b, beta, index, istate, fstate, rng = arrays
        best_beta = beta.copy()
        result = svr_loop(X.indptr, X.indices, X.data, problem.y, problem.cost, margin.code,
                          margin.p, problem.effective_bias_scale,
                          1.0 if problem.bias == "regularized" else 0.0, problem.epsilon, qd,
                          lam, upper, b, beta, index, istate, fstate, rng, params.shrinking,
                          params.eps, gap_rule, params.tol, params.max_iter, limit, face_at,
                          pass_work, params.gap_check_work, max_checks, records, best_beta)
        return result, best_beta

    (code, epochs, checks, eps, total_work, best_primal, *sweep), best_beta = loop(
        state, records.shape[0])
    rows = records[:checks].copy()
    for k, row in enumerate(rows):
        last = k == len(rows) - 1 and code != FACE_NEWTON
        stop = reporter(int(row[EPOCHS]), row[PRIMAL], row[GAP],
                        dual_objective=float(row[DUAL]),
                        relative_violation=float(row[RELATIVE]), active_size=int(row[ACTIVE]),
                        eps=float(row[EPS]), work=int(row[WORK]))
        if stop and not (last and code in (CONVERGED, MAX_ITER)):
            # the state at this check: the loop again from the start, to it
            arrays = tuple(np.array(a, copy=True) for a in start)
            (_, epochs, checks, eps, total_work, best_primal, *_), best_beta = loop(arrays,
                                                                                    k + 1)
            for target, value in zip(state, arrays, strict=True):
                target[...] = value
            return (Termination.STOPPED, reporter.stop_message, epochs, eps, total_work,
                    checks, best_primal, best_beta)
    if code == FACE_NEWTON:
        budget = float(pass_work) if checks == 0 else \
            max(params.gap_check_work * pass_work, 1.0)
        ran, met, relative, work = sweep
        return ("face_newton", (eps, budget, epochs, total_work, checks), epochs + ran,
                (int(ran), bool(met), float(relative), int(work)), best_primal, best_beta)
    status = message = None
    if code in (CONVERGED, MAX_ITER):
        last = rows[-1]
        relative = float(last[RELATIVE])
        status, message = _verdict(params, epochs, float(last[GAP]), gap_rule,
                                   code == CONVERGED and not gap_rule,
                                   f"Gnorm1 {relative:.3g} of its first pass's <= "
                                   f"eps={params.eps:g}")
    return status, message, epochs, eps, total_work, checks, best_primal, best_beta


def _switch_to_newton(problem: RegressionProblem, params: DualCDParams, monitor, reporter,
                      epochs: int, extras: dict, beta: np.ndarray,
                      newton: NewtonMethod) -> Solution:
    """LIBLINEAR's train_one for ``-s 12``: dual CD that reaches its limit without the stop
    hands w to the primal Newton method (``-s 11``) from that point, here ``newton`` to the
    certified gap ``tol``; its records continue the run's (numbered after the epochs, tagged
    ``stage="newton"``), as the classification switch's (:mod:`solvers.dual_cd.solver`)."""
    continued = Continued(monitor if monitor is not None else NullMonitor(), epochs,
                          reporter.clock(), {"stage": "newton"})
    clock = Stopwatch()
    solution = newton(problem, beta.copy(), params.tol, continued)
    gap_at_switch = extras["relative_duality_gap"]
    extras = {**extras, "relative_duality_gap": float(problem.relative_duality_gap(
        solution.beta)), "dual": problem.dual_from_primal(solution.beta),
        "newton_switch": {"at_epoch": epochs, "gap_at_switch": gap_at_switch,
                          "newton_iterations": solution.iterations,
                          "seconds": clock(), "status": str(solution.status)}}
    message = (f"no stop after {epochs} outer iterations (newton_switch_iter; relative "
               f"duality gap {gap_at_switch:.3g}): switched to the Newton method from w, as "
               f"LIBLINEAR -s 12 switches to -s 11; {solution.message}")
    return Solution(solution.beta.copy(), float(solution.objective), solution.status,
                    message, epochs + solution.iterations, extras)


def fit_regression(dataset, spec, params: DualCDParams, monitor: Monitor,
                   newton: NewtonMethod | None = None) -> Fit:
    """``train`` handler of ``task="regression"``: the labels as real values, a
    :class:`~solvers.models.RegressionModel` (``newton``: as :func:`solve_regression`)."""
    problem = params.regression_problem(dataset.X, dataset.y, dataset.sample_weight)
    solution = solve_regression(problem, params, monitor, newton=newton)
    extras = {k: v for k, v in solution.extras.items() if k != "dual"}
    summary = SubproblemResult("regression", solution.objective, Termination(solution.status),
                               solution.message, solution.iterations, extras)
    return Fit(RegressionModel(*problem.split(solution.beta)), [summary])
