"""What mfn runs around Appendix A: the C path of a cold start at a large C (beta-seeding as a
continuation, section 4.1), the homotopy of section 6 (the hinge, through the clipped losses
of its smoothing) and the dual KKT continuation of section 4.7."""

from __future__ import annotations

import numpy as np

from solvers.base import Termination
from solvers.losses import ClippedLoss, Loss
from solvers.mfn.engine import Engine, MFNState
from solvers.mfn.params import MFNParams
from solvers.monitor import Reporter
from solvers.problems.newton_rows import LocalNewtonRows
from solvers.termination import format_gap

# _drive_dual_kkt gives up once eps would fall below this.
_SMALLEST_EPSILON = 1e-15


def solve_terms(terms, problem, loss: Loss, params: MFNParams, reporter: Reporter,
                beta0: np.ndarray | None, crude: bool, dual_kkt=None):
    """Run Appendix A (and the homotopy or the dual KKT continuation) on ``terms`` of
    ``problem`` (a row operator of :mod:`solvers.core.rows`, in this process) with its
    ``loss``: :func:`solve_rows` on their :class:`LocalNewtonRows`."""
    return solve_rows(LocalNewtonRows(terms, problem, problem.C), problem.C, loss, params,
                      reporter, beta0, crude, dual_kkt)


def solve_rows(rows, C: float, loss: Loss, params: MFNParams, reporter: Reporter,
               beta0: np.ndarray | None, crude: bool, dual_kkt=None):
    """Run Appendix A (and the homotopy or the dual KKT continuation) over ``rows`` (a
    :class:`~solvers.problems.newton_rows.NewtonRows`: local terms or a distributed
    dataset's partitions) at ``C`` with ``loss``: a clipped loss directly, another (the hinge)
    through the clipped losses of its smoothing; returns (state, status, message, engine).
    The reporter's clock started when the caller did, before the terms were set up (the
    records' times include that work)."""
    homotopy = not loss.clipped
    engine = Engine(rows, C, params, reporter, homotopy=homotopy)
    beta = np.zeros(rows.n_params) if beta0 is None else np.array(beta0, dtype=np.float64)
    if beta.shape != (rows.n_params,):
        raise ValueError(f"the starting point must have {rows.n_params} entries")
    if rows.extra_value == 0.0:
        beta[-1] = 0.0
    engine.start(beta)
    state = MFNState(beta, rows.outputs_state(), crude)
    if homotopy:
        status, message = _homotopy(engine, state, params, loss)
    else:
        staged = False
        if crude and beta0 is None and not engine.normal_equations:
            status, message, staged = _run_c_path(engine, state, params, loss)
            if status == Termination.STOPPED:
                return state, status, message, engine
        # A seed from C / 10 is still a crude start for C: heuristic 2's first round again.
        status, message = engine.run(state, loss, params.epsilon,
                                     first_round=True if staged else None)
        if status == Termination.CONVERGED and dual_kkt is not None:
            status, message = _drive_dual_kkt(engine, state, params, loss, dual_kkt)
    return state, status, message, engine


def c_path_stages(C: float, terms, cost: np.ndarray, start: float | None) -> list[float]:
    """The stages C / 10^J, ..., C / 10 of a cold start's C path: J is the largest integer with
    C / 10^J >= start / mean_k c_k ||x~_k||^2 (c_k = C_k / C, the example weights).  Empty when
    ``start`` is None or C is below 10 times that bound."""
    if start is None:
        return []
    return c_path(C, float(np.mean(cost / C * terms.square_norms())), start)


def c_path(C: float, scale: float, start: float | None) -> list[float]:
    """:func:`c_path_stages` from ``scale`` = mean_k c_k ||x~_k||^2."""
    if start is None:
        return []
    if not scale > 0.0:
        return []
    lowest = start / scale
    stages = []
    stage = C / 10.0
    while stage >= lowest:
        stages.append(stage)
        stage /= 10.0
    return stages[::-1]


def _run_c_path(engine: Engine, state: MFNState, params: MFNParams,
                loss: ClippedLoss) -> tuple[Termination, str, bool]:
    """Beta-seeding from a smaller C (section 4.1, Table 1) for a cold start at a large C.

    Appendix A from zero at a C much larger than 1 / ||x~||^2 spends most of its Newton
    iterations shrinking the active set with short steps (news20 made binary at C = 100: 65
    iterations of the eps = 1e-2 round, over 50 = itermax).  Solved first at C / 10^J (where
    the cold start is cheap, with both heuristics), then at each C / 10^j seeded with the last
    (ini = 1, at the first round's eps: only a seed), the final run at C starts next to its
    optimum.  The records report the objective and the duality gap at the C asked for.

    Returns the last stage's (status, message) and whether there were stages at all.  A stage
    that ends short of its eps (itermax, or the objective's rise) still leaves its last point
    as the next seed, so the path goes on; each stage's status is in ``extras["runs"]``."""
    stage_eps = params.first_round_epsilon or params.epsilon
    status, message = Termination.CONVERGED, ""
    stages = c_path(engine.target_C, engine.rows.scale_mean(), params.c_path_start)
    for C in stages:
        engine.set_stage(C)
        status, message = engine.run(state, loss, max(stage_eps, params.epsilon))
        if status == Termination.STOPPED:
            break
    engine.set_stage(engine.target_C)
    return status, message, bool(stages)


def _drive_dual_kkt(engine: Engine, state: MFNState, params: MFNParams, loss: ClippedLoss,
                    violation_of) -> tuple[Termination, str]:
    """Section 4.7 / 5: continue with eps / 10, eps / 100, ... until the maximum dual KKT
    violation is within ``params.dual_kkt_tol``."""
    tau = params.dual_kkt_tol
    eps = params.epsilon
    for k in range(1, 100):
        violation = violation_of(state)
        if violation <= tau:
            return Termination.CONVERGED, (
                f"converged: maximum dual KKT violation {violation:.3g} <= {tau:g} "
                f"(eps={eps:g})"
            )
        if params.epsilon * 10.0 ** -k < _SMALLEST_EPSILON:
            break
        eps = params.epsilon * 10.0 ** -k
        status, message = engine.run(state, loss, eps)
        if status != Termination.CONVERGED:
            return status, message
    return Termination.MAX_ITER, (
        f"dual KKT violation {violation:.3g} still above {tau:g} at eps={eps:g}")


def _homotopy(engine: Engine, state: MFNState, params: MFNParams,
              target: Loss) -> tuple[Termination, str]:
    """Section 6: solve with the smoothing of ``target`` (the hinge's smoothed hinge) at
    tau_j = 2^-j, j = 0, 1, ..., each seeded with the last, until the duality gap of the
    problem (the target loss's) relative to its objective is at most ``tol``."""
    gap = np.inf
    for j in range(params.hinge_max_rounds + 1):
        tau = 2.0 ** (-j)
        loss = target.smoothing(tau)
        engine.tau = tau
        status, message = engine.run(state, loss, params.epsilon)
        if status != Termination.CONVERGED:
            return status, f"tau=2^-{j}: {message}"
        xi = 1.0 - engine.rows.t * state.outputs
        primal = engine.rows.problem_objective_from_slacks(state.beta, xi)
        gap = (primal - engine.rows.dual_from_slacks(xi, loss)) / max(abs(primal), 1e-300)
        if gap <= params.tol:
            return Termination.CONVERGED, (
                f"converged: {target.name} duality gap {format_gap(gap)} (relative) <= "
                f"{params.tol:g} after tau=2^-{j}"
            )
    return Termination.MAX_ITER, (
        f"{target.name} homotopy ended at tau=2^-{params.hinge_max_rounds} with relative gap "
        f"{format_gap(gap)}"
    )


def solve_extras(engine: Engine, state: MFNState) -> dict:
    extras = {"cg_iterations": engine.count.cg_iterations, "runs": engine.count.runs,
              "linear_solver": "cholesky" if engine.normal_equations else "cgls",
              "factorizations": engine.count.factorizations,
              "row_space_solves": engine.count.row_space_solves,
              # the last record's certified gap (inf: no record; Solution checks it)
              "relative_duality_gap": float(engine.last_gap)}
    if engine.homotopy:
        rows = engine.rows
        xi = 1.0 - rows.t * state.outputs
        loss = rows.problem.loss_function.smoothing(engine.count.runs[-1]["tau"])
        primal = rows.problem_objective_from_slacks(state.beta, xi)
        extras["tau"] = engine.count.runs[-1]["tau"]
        extras["hinge_relative_gap"] = \
            (primal - rows.dual_from_slacks(xi, loss)) / max(abs(primal), 1e-300)
    return extras
