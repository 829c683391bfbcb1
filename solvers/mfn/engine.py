"""Appendix A of Keerthi & DeCoste on the least-squares terms of one problem (the package
docstring says what each step does and where the defaults depart from the paper): one loop,
over the rows of :mod:`solvers.problems.newton_rows` -- this process's terms
(:class:`~solvers.problems.newton_rows.LocalNewtonRows`) or a distributed dataset's
partitions (:class:`solvers.distributed.newton_rows.PartitionedNewtonRows`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from solvers import config
from solvers.base import Termination
from solvers.core.linalg import dot
from solvers.losses import ClippedLoss
from solvers.mfn.params import MFNParams
from solvers.monitor import Reporter
from solvers.problems.newton_rows import (
    ROW_SPACE,
    NewtonContext,
    NewtonPoint,
)
from solvers.termination import format_gap

# Relative slack on "the objective rose" (step 7): exact line search cannot increase f, but
# the objective is a sum of m terms evaluated in floating point.
_RISE_SLACK = 1e-12

_SET_TOL_PER_BAND = 1e-2  # step 5's tol is at most this fraction of a finite band's width


def next_round(eps: float, epsilon: float, final_eps: float, second_round: bool):
    """Step 8, once a round's CGLS rule holds and the index sets are stable: the eps of the
    next round -- the second round of heuristic 2 (``final_eps``), or the exact round
    (``epsilon``) after a loose or gap round that ended above it -- or None: converged."""
    if second_round or eps > epsilon:
        return final_eps if second_round else epsilon
    return None


def converged_message(eps: float, set_tol: float) -> str:
    return (f"converged: CGLS stopping rule met at eps={eps:g} and the index sets are stable "
            f"within tol={set_tol:g}")


@dataclass
class MFNState:
    """The current point: beta, the outputs y_k = x~_k . beta of every term (the local rows'
    array, updated in place; None where the rows keep them elsewhere: on a distributed
    dataset's workers), and whether it is a crude start (Appendix A's ini = 0)."""

    beta: np.ndarray
    outputs: np.ndarray | None
    crude: bool


@dataclass
class _Counters:
    iterations: int = 0  # Newton iterations over all runs (reported in the records)
    cg_iterations: int = 0
    factorizations: int = 0
    row_space_solves: int = 0  # step 3 solved in the active rows' space
    runs: list = field(default_factory=list)  # one dict per run of Appendix A


@dataclass(frozen=True)
class _Step3:
    """How step 3 went at one Newton iteration (for its record)."""

    n_active: int  # |I1|, the least-squares terms
    n_saturated: int  # |I2| (modified Huber and the hinge homotopy)
    cg_iterations: int
    factorized: bool  # solved by Cholesky (CGLS then only checked rule (13))
    row_space: bool  # solved by CG in the active rows' space (cg_dual_compact)


def normal_equations_pay(n_params: int, nnz: int, build: int) -> bool:
    """``linear_solver="auto"``'s rule: factorize the normal equations when the parameters
    are few and a factorization (n^3 / 3) and the Gram matrix's build (``build`` multiply-
    adds) each cost at most ``MFN_AUTO_CHOLESKY_PASSES`` passes over the ``nnz`` stored
    entries (bias column included)."""
    return n_params <= config.MFN_AUTO_CHOLESKY_MAX_PARAMS \
        and n_params ** 3 / 3.0 <= config.MFN_AUTO_CHOLESKY_PASSES * nnz \
        and build <= config.MFN_AUTO_CHOLESKY_PASSES * nnz


def auto_preconditioning(n_active: int, n_params: int, mean: float, std: float) -> float:
    """``preconditioning="auto"``'s alpha: LIBLINEAR's, unless the active least-squares rows
    are fewer than the parameters and their weighted squared norms (``mean``, ``std``) vary
    (see ``solvers/config.py``)."""
    if n_active < n_params:
        if not mean > 0.0 or std > config.MFN_PRECONDITION_MAX_CV * mean:
            return 0.0
    return config.MFN_AUTO_PRECONDITIONING


def gap_round_epsilon(params: MFNParams, epsilon: float, gap_stop: bool) -> float:
    """The eps of the last round: ``epsilon``, or with a gap tolerance (``gap_stop``: at the
    asked C, not the hinge homotopy's) the looser ``min(MFN_GAP_ROUND_EPSILON, tol / 10)``;
    step 3's relative error then sits well below the gap asked for."""
    tol = params.tol
    if tol is None or not gap_stop:
        return epsilon
    return max(epsilon, min(config.MFN_GAP_ROUND_EPSILON, 0.1 * tol))


def gap_forcing(gap: float, tol: float, eta_max: float) -> float:
    """The forcing term eta_k of a Newton step at the asked C under a gap tolerance ``tol``,
    from the certified relative duality gap ``gap`` at the current point: besides rule (13) at
    the round's eps, step 3's CG stops once ||r|| <= eta_k ||r^0|| (r^0 = -grad f at the
    point, up to a factor), with

        eta_k = min(eta_max, 0.5 sqrt(tol / gap)).

    An inexact Newton step (Dembo, Eisenstat & Steihaug, "Inexact Newton methods", SIAM J.
    Numer. Anal. 19 (1982)): on the active set of the next point the new gradient is the
    residual r, and the gap of the squared hinge (its dual point the KKT map of beta) vanishes
    like ||grad f||^2, so the next gap is about eta_k^2 gap; eta_k is the loosest forcing that
    still aims it at a quarter of ``tol``.  Far above ``tol`` it is tiny and rule (13) ends the
    solve (Keerthi & DeCoste, section 4.3: "an excessively accurate solution would lead to
    too much work while an inaccurate solution will not give good descent"); within a few
    factors of it the last step stops early instead of solving past the tolerance.  An
    unknown gap (inf) or a zero one gives 0: rule (13) alone.

    Not the forcing the theory suggests far from the optimum, eta_k = min(eta_max, sqrt(gap))
    (sqrt(gap) = O(||grad f||) keeps the local convergence quadratic): on news20 made binary
    at C = 1 its loose steps (the gap is above 1 for most of the run) left active sets from
    which the next, near-exact, step went 1e-3 of the way, and the run ended on itermax
    (eta_max = 0.5) or took 47 Newton iterations instead of 35 (eta_max = 0.1)."""
    if not gap < float("inf"):
        return 0.0
    gap = max(gap, 0.0)
    aim = 0.5 * math.sqrt(tol / gap) if gap > 0.0 else 0.0
    return min(eta_max, aim)


def forcing_term(params: MFNParams, eps: float, final_eps: float, n_active: int,
                 n_params: int, at_target: bool, crude_run: bool, newton: int,
                 exempt: bool, gap: float | None = None) -> float:
    """CGLS's forcing term (:meth:`Engine._forcing` says when it applies).  ``gap``: the
    certified gap at the current point when the run stops on a gap tolerance (at the asked C,
    not the hinge homotopy): then the gap-tied term of :func:`gap_forcing` instead."""
    eta = params.newton_forcing
    if eta is None or exempt:
        return 0.0
    if gap is not None:
        return gap_forcing(gap, params.tol, eta)
    if not eps > final_eps or n_active >= n_params:
        return 0.0
    if (at_target and not crude_run) or 2 * newton >= params.max_iter:
        return 0.0
    return eta


class Engine:
    """Appendix A over the rows of one problem (a
    :class:`~solvers.problems.newton_rows.NewtonRows`), for any loss of the clipped family.
    The rows evaluate everything per example (step 3's data, the trial point, the line
    search's breakpoints, the objective and dual values the records report); this loop holds
    beta, the parameter vectors and the scalars, and makes every decision."""

    def __init__(self, rows, C: float, params: MFNParams, reporter: Reporter,
                 homotopy: bool = False):
        self.rows = rows
        self.C = C
        self.target_C = C
        self.params = params
        self.reporter = reporter
        # report the objective and gap of the problem's loss, the homotopy's target (the
        # hinge), not of the smoothed loss a round runs on; ``tau`` is the round's
        self.homotopy = homotopy
        self.tau: float | None = None
        self.count = _Counters()
        self.normal_equations = False  # chosen by :meth:`start`
        self._point: tuple[tuple, NewtonPoint] | None = None  # step 3's data at the point
        self.last_gap = float("inf")  # the relative duality gap of the last record

    @property
    def at_target(self) -> bool:
        return self.C == self.target_C

    def start(self, beta: np.ndarray):
        """The rows' outputs at ``beta`` and ``linear_solver``'s choice: the normal equations
        factorized (few parameters) or CGLS alone."""
        started = self.rows.start(beta)
        choice = self.params.linear_solver
        n = self.rows.n_params
        if choice == "cholesky" and n > config.MFN_CHOLESKY_MAX_PARAMS:
            raise ValueError(
                f"linear_solver='cholesky' factorizes a dense {n} x {n} matrix; above "
                f"{config.MFN_CHOLESKY_MAX_PARAMS} parameters use 'cgls' or 'auto'")
        self.normal_equations = self.rows.choose_normal_equations(choice, normal_equations_pay)
        return started

    def retarget(self, problem, reporter: Reporter):
        """Solve the same terms at ``problem``'s C (the next point of a C path): the sorted
        rows, the Gram upkeep of the factorized step 3 and the data norm depend only on the
        example weights, so they carry over; the counters start again."""
        self.rows.retarget(problem)
        self.reporter = reporter
        self.C = self.target_C = problem.C
        self.count = _Counters()
        self._point = None

    def set_stage(self, C: float):
        """Solve for C instead of the problem's own C (a stage of the C path), or go back."""
        self.C = C
        self._point = None

    def context(self, loss: ClippedLoss) -> NewtonContext:
        return NewtonContext(loss, self.C, self.target_C, 1.0 / (self.C * loss.kappa),
                             self._set_tolerance(loss))

    def data_norm(self) -> float | None:
        """rho = ||X~|| of the 'gradient_bound' rule (None for rule (13))."""
        if self.params.cgls_rule == "residual":
            return None
        return self.rows.data_norm()

    # -- step 3's data ---------------------------------------------------------------------------
    def newton_point(self, context: NewtonContext, move=None, gram: bool = True
                     ) -> NewtonPoint:
        """Step 3's data at the current point, or at the outputs moved by ``move`` (the rows
        keep them as a candidate until committed).  ``gram``: the partitioned rows' Gram
        matrix with it (with the normal equations; not for heuristic 1's capped first call)."""
        key = (context.loss, self.C)
        if move is None and self._point is not None and self._point[0] == key:
            return self._point[1]
        point = self.rows.point(context, move, gram=self.normal_equations and gram,
                                diagonal=self.params.preconditioning != 0.0)
        self._point = (key, point)
        return point

    def _preconditioning(self, point: NewtonPoint, solved: bool) -> float:
        """alpha of CGLS's diagonal preconditioner for this call (``preconditioning``): "auto"
        takes LIBLINEAR's alpha unless CGLS only checks a factorized step, or the active
        least-squares rows are fewer than the parameters and their norms vary (see
        ``solvers/config.py``)."""
        choice = self.params.preconditioning
        if choice != "auto":
            return choice
        if solved:
            return 0.0
        mean = std = 0.0
        if point.n_active < self.rows.n_params:
            mean, std = self.rows.active_norm_stats(point)
        return auto_preconditioning(point.n_active, self.rows.n_params, mean, std)

    def _row_space(self, point: NewtonPoint, lam: float, capped: bool, eps: float) -> bool:
        """Whether step 3 runs CG in the active rows' space (:func:`cg_dual_compact`) rather
        than CGLS: always with ``linear_solver="dual_cg"``; with "auto" (when not factorized)
        in a round whose eps is at most ``MFN_ROW_SPACE_MAX_EPSILON`` (the solve is then close
        to exact, so the start u^0 = z^0 / lambda does not shape the step), when the active
        rows are fewer than the parameters and lambda is at most ``MFN_ROW_SPACE_MAX_LAMBDA``
        times the median c_i ||x~_i||^2 of the active rows (see ``solvers/config.py``).  Never
        for heuristic 1's capped first call, ordinal pairs, the 'gradient_bound' rule or rows
        that do not offer it."""
        choice = self.params.linear_solver
        if ROW_SPACE not in self.rows.capabilities or choice not in ("auto", "dual_cg") \
                or self.normal_equations or capped or self.params.cgls_rule != "residual" \
                or not point.n_active or self.rows.has_pairs(point):
            return False
        if choice == "dual_cg":
            return True
        if eps > config.MFN_ROW_SPACE_MAX_EPSILON or point.n_active >= self.rows.n_params:
            return False
        return self.rows.row_space_pays(point, lam)

    def _forcing(self, point: NewtonPoint, eps: float, crude_run: bool, newton: int,
                 exempt: bool) -> float:
        """CGLS's forcing term for the Newton iteration after ``newton`` of a run at ``eps``
        (0: rule (13) alone).  With a gap tolerance, at the asked C, every step's term is tied
        to the certified gap at the current point (:func:`gap_forcing`, at most
        ``newton_forcing``); heuristic 1's capped call and a factorized step's check keep
        rule (13).  Otherwise (``tol=None``, the C path's stages, the hinge homotopy)
        ``newton_forcing`` applies far from the solution only: in a
        stage of the C path (its result is only the next stage's seed) and in heuristic 2's
        first round after a crude start (ini = 0, ``crude_run``); never in a round at the
        final eps, in the first round after a seed from a smaller C (measured: news20 at C =
        1 then takes tiny steps and more CG work, and at forcing >= 0.3 ends on itermax), for
        heuristic 1's capped call or a factorized step's check.  It stops after half of
        itermax Newton iterations of a run, so a run that needs many ends with the paper's
        steps.  Only where the active rows are fewer than the parameters (text: rule (13)
        then takes hundreds of CG iterations per step); with more rows (the synthetic
        problem, preconditioned) a solve is 10-50 iterations and the forcing's extra Newton
        iterations, each a few passes over all rows, cost about what it saves."""
        # the final round: at epsilon, or a gap tolerance's looser round
        final_eps = self._gap_round_epsilon(self.params.epsilon)
        return forcing_term(self.params, eps, final_eps, point.n_active,
                            self.rows.n_params, self.at_target, crude_run, newton, exempt,
                            self.last_gap if self._gap_stop() else None)

    # -- one run of Appendix A -------------------------------------------------------------------
    def run(self, state: MFNState, loss: ClippedLoss, epsilon: float,
            first_round: bool | None = None) -> tuple[Termination, str]:
        """Steps 2-8 from ``state`` (updated in place).  Returns (status, message).
        ``first_round`` runs heuristic 2's first round (default: for a crude start)."""
        p = self.params
        rows = self.rows
        context = self.context(loss)
        lam = context.lam
        set_tol = context.set_tol
        # Step 1: ini = 0 (crude start) runs both heuristics; ini = 1 goes straight to eps.
        if first_round is None:
            first_round = state.crude
        # With a gap tolerance the last round runs at a looser eps (the gap, not rule (13),
        # ends it); should that round end by Appendix A's own test above the gap tolerance,
        # a further round at ``epsilon`` follows.
        final_eps = self._gap_round_epsilon(epsilon)
        need_second_round = first_round and p.first_round_epsilon is not None \
            and p.first_round_epsilon > final_eps
        eps = p.first_round_epsilon if need_second_round else final_eps
        self.last_gap = float("inf")
        first_call = crude_run = state.crude
        state.crude = False
        beta = state.beta
        # Step 3's data at the start (heuristic 1's capped first call runs preconditioned
        # CGLS, not the factorized step: no Gram matrix for it)
        point = self.newton_point(context, gram=not (first_call and
                                                     p.initial_cgls_iter is not None))
        F_previous = rows.objective(beta, point, context)
        if self._gap_stop():
            # the gap at the start, for the first step's forcing term
            self.last_gap = self._certified_gap(point, context, F_previous)
        newton = 0  # Appendix A's iter (step 2)
        cg_total = 0
        while True:
            # Step 3: the index sets at beta (I0: xi <= lo, I1: lo < xi < hi, I2: xi >= hi)
            # and the least-squares problem on I1.  With saturated terms CGLS solves (23) for
            # beta~ = beta - q, with targets t_i (1 - xi_lo) - x~_i . q (its warm-start
            # residual at beta - q is the one at beta).
            beta_bar = beta.copy()
            if point.shift is not None:
                beta_bar -= point.shift
            cg_cap = p.max_cgls_iter
            heuristic_1 = first_call and p.initial_cgls_iter is not None
            if heuristic_1:
                cg_cap = p.initial_cgls_iter
            first_call = False
            # Step 4: CGLS on the compacted active terms, warm-started at beta (Frommer &
            # Maass) from z^0 and r^0 (footnote 7), stopped by rule (13) (or the bound it
            # comes from, ``cgls_rule``).  With the normal equations factorized (few
            # features), CGLS starts from their solution instead and only checks rule (13).
            work = rows.step3_start(point, lam, beta_bar)
            solved = False
            if self.normal_equations and not heuristic_1:
                solved = rows.factorized_step(work, point, context, beta_bar)
                self.count.factorizations += solved
            row_space = not solved and self._row_space(point, lam, heuristic_1, eps)
            forcing = self._forcing(point, eps, crude_run, newton, solved or heuristic_1)
            optimal_at_start = False
            if row_space:
                start = beta_bar.copy()
                cg_iters, optimal = rows.row_space_solve(work, point, beta_bar, lam, eps,
                                                         cg_cap, forcing)
                self.count.row_space_solves += 1
                # no iteration: either beta itself met rule (13) (left unchanged) or the
                # row-space start A'u^0 did (beta_bar moved)
                optimal_at_start = cg_iters == 0 and np.array_equal(beta_bar, start)
            else:
                cg_iters, optimal = rows.cgls(work, point, beta_bar, lam, eps, cg_cap,
                                              self._preconditioning(point, solved), forcing,
                                              self.data_norm())
            at_point = cg_iters == 0 and not solved and (not row_space or optimal_at_start)
            if at_point:
                beta_bar = beta.copy()
            else:
                if point.shift is not None:
                    beta_bar += point.shift
                if rows.extra_value == 0.0:
                    beta_bar[-1] = 0.0
            self.count.cg_iterations += cg_iters
            cg_total += cg_iters
            newton += 1
            self.count.iterations += 1
            step3 = _Step3(point.n_active, point.n_saturated, cg_iters, solved, row_space)

            # Step 5: beta_bar is optimal if CGLS met (13) and no term changes set (within tol
            # in t_i y_i): (b) active terms keep xi >= -tol (and, with three sets, <= hi + tol),
            # (c) inactive ones keep xi <= tol, saturated ones xi >= hi - tol.
            trial = rows.trial(point, beta_bar, at_point, context)
            if optimal and trial.holds:
                point = self.newton_point(context, "accept")
                rows.commit()
                beta[:] = beta_bar
                F = rows.objective(beta, point, context)
                if self._report(beta, point, context, F, step3, 1.0, eps):
                    return self._finish(Termination.STOPPED, self.reporter.stop_message, loss,
                                        eps, newton, cg_total)
                if self._gap_met():
                    return self._gap_finish(loss, eps, newton, cg_total)
                # Step 8: the second round of heuristic 2 (or the exact round after a gap
                # round that ended above the gap tolerance), or the end.
                next_eps = next_round(eps, epsilon, final_eps, need_second_round)
                if next_eps is not None:
                    eps, need_second_round, F_previous = next_eps, False, F
                    continue
                return self._finish(Termination.CONVERGED, converged_message(eps, set_tol),
                                    loss, eps, newton, cg_total)

            # Step 6: exact line search on the ray beta -> beta_bar, eqs. (14)-(18): the
            # slope's ordinates at delta = 0 and 1 (eqs. (16)-(17), regularizer + loss) and
            # the breakpoints where terms change set.
            direction = beta_bar - beta
            delta = rows.line_root(point, trial, context, dot(beta, direction),
                                   dot(beta_bar, direction))

            # Step 7: move, recompute the index sets (next pass) and the objective.  A step
            # that would raise f (the error exit), or that is not finite (the least-squares
            # problem numerically singular, as at the homotopy's smallest tau), is not taken:
            # the state keeps the last good point.
            if not np.isfinite(delta):
                cause = (f"the least-squares problem is singular in floating point at lambda "
                         f"{lam:.3g}" if not np.isnan(delta) else
                         "the slope along the step is not finite: C or the data are out of "
                         "float64's sound range")
                return self._finish(Termination.FAILED, (
                    f"the line search found no finite step at Newton iteration {newton} "
                    f"({cause}); the last point is kept"), loss, eps, newton, cg_total)
            new_beta = beta + delta * direction
            point = self.newton_point(context, float(delta))
            F = rows.objective(new_beta, point, context)
            if not F <= F_previous * (1.0 + _RISE_SLACK) + 1e-300:
                rows.revert(beta)
                self._point = None
                return self._finish(Termination.FAILED, (
                    f"objective rose from {F_previous:.17g} to {F:.17g} at Newton iteration "
                    f"{newton} (Appendix A step 7 error exit; step {delta:.3g}, lambda "
                    f"{lam:.3g}); the last point is kept"), loss, eps, newton, cg_total)
            rows.commit()
            beta[:] = new_beta
            if self._report(beta, point, context, F, step3, delta, eps):
                return self._finish(Termination.STOPPED, self.reporter.stop_message, loss, eps,
                                    newton, cg_total)
            if self._gap_met():
                return self._gap_finish(loss, eps, newton, cg_total)
            if newton >= p.max_iter:
                return self._finish(Termination.MAX_ITER, f"itermax={p.max_iter} Newton iterations "
                                    "reached", loss, eps, newton, cg_total)
            F_previous = F

    def _gap_round_epsilon(self, epsilon: float) -> float:
        return gap_round_epsilon(self.params, epsilon, not self.homotopy and self.at_target)

    def _gap_stop(self) -> bool:
        """Whether the run stops on the certified gap (``tol``, at the asked C, not the hinge
        homotopy, whose rounds stop on their own gap)."""
        return self.params.tol is not None and not self.homotopy and self.at_target

    def _gap_met(self) -> bool:
        return self._gap_stop() and self.last_gap <= self.params.tol

    def _gap_finish(self, loss, eps, newton, cg_total):
        return self._finish(Termination.CONVERGED, (
            f"converged: certified relative duality gap {format_gap(self.last_gap)} <= "
            f"tol={self.params.tol:g} (rule (13) at eps={eps:g})"),
            loss, eps, newton, cg_total)

    def _set_tolerance(self, loss: ClippedLoss) -> float:
        """Step 5's tol.  It is absolute in t_i y_i; a quadratic band narrower than it (the
        hinge homotopy's 2 tau past tau = 2^-26) would let a term cross the whole band
        unnoticed, so it is capped at a fraction of a finite band's width."""
        return min(self.params.set_tol, _SET_TOL_PER_BAND * loss.width)

    def _finish(self, status, message, loss, eps, newton, cg_total):
        self.count.runs.append({"tau": self.tau if self.homotopy else None, "C": self.C,
                                "epsilon": eps, "set_tolerance": self._set_tolerance(loss),
                                "newton_iterations": newton, "cg_iterations": cg_total,
                                "status": status})
        return status, message

    def _certified_gap(self, point: NewtonPoint, context: NewtonContext,
                       primal: float) -> float:
        """The relative duality gap at the point (``primal``: the objective of the problem
        asked for there), its dual point alpha = C_i loss'(xi_i): w(alpha) from step 3's data
        at the point, g + lam q."""
        w_alpha = point.g if point.shift is None else point.g + context.lam * point.shift
        w_alpha = (context.loss.kappa * self.target_C) * w_alpha
        dual = self.rows.dual_objective(point, context, w_alpha)
        return (primal - dual) / max(abs(primal), 1e-300)

    def _report(self, beta, point: NewtonPoint, context: NewtonContext, F, step3: _Step3,
                delta, eps) -> bool:
        """One record per Newton iteration: the objective of ``docs/design.md``'s problem (for the
        homotopy, the hinge objective; on a stage of the C path, the objective at the C asked
        for) and the relative duality gap.  The record's time is when the iterate was ready."""
        elapsed = self.reporter.clock()
        if self.homotopy or not self.at_target:
            primal = self.rows.problem_objective(beta, point)
        else:
            primal = F
        gap = self._certified_gap(point, context, primal)
        self.last_gap = gap
        extras = {
            "active": int(step3.n_active),
            "cg_iterations": int(step3.cg_iterations),
            "factorized": step3.factorized,
            "row_space": step3.row_space,
            "step": float(delta),
            "epsilon": float(eps),
        }
        if step3.n_saturated:
            extras["saturated"] = int(step3.n_saturated)
        if not self.at_target:
            extras["path_C"] = float(self.C)
        if self.homotopy:
            extras["tau"] = float(self.tau)
            extras["smoothed_objective"] = float(F)
        extras.update(self.rows.record_extras(point))
        return self.reporter(self.count.iterations, primal, gap, elapsed=elapsed, **extras)
