"""mfn on L2-loss support vector regression (the problem is :class:`solvers.problems.
RegressionProblem` with the squared epsilon-insensitive loss; LIBLINEAR ``-s 11`` solves the
same primal by its trust-region Newton method, the anchor).

max(0, |r| - eps)^2 is two squared-hinge terms per example (:class:`solvers.losses.ResidualLoss`),
slacks (y_i - eps) - x~_i . beta with label +1 and (-y_i - eps) + x~_i . beta with label -1, so
the objective is piecewise quadratic as the L2-SVM's and Appendix A of Keerthi & DeCoste runs
on it unchanged: :class:`solvers.core.rows.RegressionRows` gives the engine the 2n terms (the
targets y -+ eps enter as a shift of the outputs, which CGLS's warm-started residual z^0 =
sqrt(c) t (xi - xi_lo) carries; the products stay those of the rows x~_i), the index sets
are the examples outside the tube, the least-squares problem of step 3 is over them with
targets y_i -+ eps, and the exact line search is eqs. (14)-(18) over the 2n breakpoints.  The
records' objective and certified gap are the regression problem's (the terms' multipliers
alpha+ - alpha- = b_i, :class:`solvers.problems.RegressionTerms`).  Every mfn setting
(linear_solver, preconditioning, the C path of a cold start at a large C, the gap tolerance)
applies as for the binary problem.
"""

from __future__ import annotations

import numpy as np

from solvers.base import Fit, Solution, SubproblemResult, Termination, WarmStart
from solvers.core.rows import RegressionRows
from solvers.mfn.continuation import solve_extras, solve_terms
from solvers.mfn.params import MFNParams
from solvers.models.regression import RegressionModel
from solvers.monitor import Monitor, Reporter
from solvers.problems import RegressionProblem


def solve_regression(problem: RegressionProblem, params: MFNParams | None = None,
                     monitor: Monitor | None = None, start: WarmStart | None = None
                     ) -> Solution:
    """Solve an L2-loss regression problem by Appendix A on its margin terms (the module
    docstring), from zero or from ``start.beta`` (then ini = 1: a nearby problem's
    solution)."""
    if problem.loss != "squared_epsilon_insensitive":
        raise ValueError(f"mfn solves the squared epsilon-insensitive loss (piecewise "
                         f"quadratic), not {problem.loss!r}")
    reporter = Reporter(monitor, "relative_duality_gap")
    params = params or MFNParams(C=problem.C, task="regression", epsilon=problem.epsilon,
                                 bias=problem.bias, bias_scale=problem.bias_scale)
    terms = RegressionRows(problem.X, problem.term_targets(), problem.cost,
                           problem.effective_bias_scale)
    view = problem.terms(terms.order)
    beta0 = None if start is None else start.beta
    state, status, message, engine = solve_terms(terms, view, view.loss_function, params,
                                                 reporter, beta0, beta0 is None)
    beta = state.beta
    extras = solve_extras(engine, state)
    objective, extras["relative_duality_gap"] = problem.objective_and_gap(beta)
    return Solution(beta.copy(), objective, Termination(status), message,
                    engine.count.iterations, extras)


def fit_regression(dataset, spec, params: MFNParams, monitor: Monitor) -> Fit:
    """``train`` handler of ``task="regression"``: the labels as real values, a
    :class:`~solvers.models.RegressionModel`."""
    problem = params.regression_problem(dataset.X, dataset.y, dataset.sample_weight)
    solution = solve_regression(problem, params, monitor)
    summary = SubproblemResult("regression", solution.objective, Termination(solution.status),
                               solution.message, solution.iterations, solution.extras)
    return Fit(RegressionModel(*problem.split(np.asarray(solution.beta))), [summary])
