"""mfn on ordinal regression (Keerthi & DeCoste section 7; the problem is
:class:`solvers.problems.OrdinalProblem`)."""

from __future__ import annotations

import numpy as np

from solvers.base import (
    Fit,
    Solution,
    SolverSpec,
    SubproblemResult,
    Termination,
    WarmStart,
    replaced_keyword,
    warm_start_argument,
)
from solvers.data.dataset import Dataset
from solvers.mfn.continuation import solve_extras, solve_terms
from solvers.mfn.params import MFNParams
from solvers.models.ordinal import OrdinalModel
from solvers.monitor import Monitor, Reporter
from solvers.multiclass import timed_path
from solvers.problems import OrdinalProblem


def solve_ordinal(problem: OrdinalProblem, params: MFNParams | None = None,
                  monitor: Monitor | None = None, start: WarmStart | None = None,
                  continuation: bool = False, *, beta0: np.ndarray | None = None) -> Solution:
    """Solve an ordinal regression problem with the section 7 extension of L2-SVM-MFN
    (Appendix A on the (example, threshold) pairs, heuristics included), from zero or from
    ``start.beta`` (w and the thresholds; the rest of the :class:`~solvers.base.WarmStart`
    is ignored), crude unless ``continuation`` marks it as a nearby problem's solution (as
    :func:`~solvers.mfn.binary.solve`).  ``beta0``: the deprecated spelling of
    ``start=WarmStart(beta=...)``, kept for one release."""
    reporter = Reporter(monitor, "relative_duality_gap")
    params = params or MFNParams(C=problem.C, task="ordinal")
    start = replaced_keyword(warm_start_argument(start), "beta0", beta0, "beta")
    terms = problem.terms()
    state, status, message, engine = solve_terms(
        terms, problem, problem.loss_function, params, reporter,
        None if start is None else start.beta, not continuation)
    objective = engine.rows.problem_objective_from_slacks(
        state.beta, 1.0 - terms.labels * state.outputs)
    return Solution(state.beta, objective, Termination(status), message,
                    engine.count.iterations, solve_extras(engine, state))


def _ordinal_problem(dataset: Dataset, params: MFNParams) -> OrdinalProblem:
    """The sorted distinct labels of ``dataset`` as ranks 1..p, at the parameters' C."""
    classes = dataset.classes
    if classes.shape[0] < 2:
        raise ValueError("ordinal regression needs at least two distinct labels")
    ranks = np.searchsorted(classes, dataset.y) + 1
    return OrdinalProblem(dataset.X, ranks, classes.shape[0], C=params.C,
                          bias_scale=params.bias_scale, sample_weight=dataset.sample_weight)


def _ordinal_model(dataset: Dataset, problem: OrdinalProblem, beta: np.ndarray) -> OrdinalModel:
    w, thresholds = problem.split(beta)
    return OrdinalModel(w, thresholds, dataset.classes)


def fit_ordinal(dataset: Dataset, spec: SolverSpec, params: MFNParams, monitor: Monitor) -> Fit:
    """``train`` handler of ``task="ordinal"``: the sorted distinct labels become ranks 1..p;
    the model predicts the original labels."""
    problem = _ordinal_problem(dataset, params)
    solution = solve_ordinal(problem, params, monitor)
    summary = SubproblemResult("ordinal", solution.objective, Termination(solution.status),
                               solution.message, solution.iterations, solution.extras)
    return Fit(_ordinal_model(dataset, problem, solution.beta), [summary])


def fit_ordinal_path(dataset: Dataset, spec: SolverSpec,
                     points: list[MFNParams]) -> list[tuple[OrdinalModel, float, float]]:
    """Path handler of ``task="ordinal"``: each point's C from the last solution by
    beta-seeding (section 4.1, ini = 1), as the binary C path.  Returns (model, objective,
    seconds) per point."""
    beta = None

    def fit_point(params):
        nonlocal beta
        problem = _ordinal_problem(dataset, params)
        solution = solve_ordinal(problem, params, None,
                                 start=None if beta is None else WarmStart(beta=beta),
                                 continuation=beta is not None)
        beta = solution.beta
        return _ordinal_model(dataset, problem, beta), solution.objective

    return timed_path(points, fit_point)
