"""Cutting-plane methods for the hinge loss: Joachims' CPA (SVMperf), Franc & Sonnenburg's
OCAS, and Arnosti's GCA2 and TCA (N. Arnosti, "Reducing training time for linear SVMs", 2010).

Problems (``docs/design.md``), C_i = C * sample_weight_i, x~_i = (x_i, s) with s = ``bias_scale``
(bias ``regularized``, libocas' constant coordinate X0) or without the column (``none``)::

    binary          F(w) = 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i w . x~_i)
    Crammer-Singer  F(W) = 1/2 sum_m ||w_m||^2
                           + sum_i C_i max_m ([m != y_i] + (w_m - w_{y_i}) . x~_i)

(:class:`solvers.problems.BinaryProblem`, :class:`solvers.problems.CrammerSingerProblem`; the
0/1 delta is libocas' and LIBLINEAR ``-s 4``'s).  A free bias is refused: with an unregularized
bias the first reduced problems are unbounded.

Parameter mapping.  The papers (Joachims 2006 eq. (3); Franc & Sonnenburg 2008, 2009; Arnosti
eqs. (1), (3), (5)) write 1/2 ||w||^2 + (C_s / n) sum xi_i: **C_s = C n**.  The libocas code
Arnosti ran writes 1/2 ||w||^2 + C sum xi_i: that C is ours.  SVMperf's ``-c`` is c_perf with
**C = c_perf * 100 / n** (``docs/design.md`` section 2.6).  libocas' ``TolRel`` is ``tol``, its
``BufSize`` ``cut_buffer``, its ``MU`` = 0.1 ``cut_point``; its dual variables are C times
ours (:mod:`solvers.cutting_plane.qp`).

One iteration (libocas' ``svm_ocas_solver`` / ``msvm_ocas_solver`` loop):

1. add the newest cut R(v) >= a . v + b to the buffer, one row of the Gram matrix;
2. solve the reduced dual over the simplex with slack, warm-started: by a few SMO steps and then
   a primal active-set method (``qp_solver="active_set"``, our choice) or by libocas' pairwise
   SMO alone (``qp_solver="smo"``; :mod:`solvers.cutting_plane.qp`); its value F_t(w_t) is a
   certified lower bound on the optimum (its alpha is a dual feasible point of the full problem
   with that value), so F(w_best) - F_t(w_t) is a duality gap; prune cuts inactive for
   ``max_inactive`` solves;
3. one pass over the data: the outputs at w_t (:mod:`solvers.problems.oracles`);
4. choose mu >= 0 and move w_best <- w_best + mu (w_t - w_best), its outputs alike
   (interpolated, as libocas does):
   * ``cpa`` (Joachims' algorithm, SVMperf): no search; the new cut is taken at w_t and
     w_best keeps the best point seen (reported objective = min_t F(w_t));
   * ``ocas``: the exact line search over the jumps of the slope (Franc & Sonnenburg 2008
     section 3.2; :mod:`solvers.cutting_plane.search`);
   * ``gca2`` / ``tca``: Arnosti's Algorithms 2 and 3 on f(mu) evaluated from the stored
     outputs in O(n) (O(nk)), never touching the data; defaults beta = 0.2, gamma = 0.02,
     g(x, y) = (x / y)^2, h(x) = x / 2 (the paper's); t1 = beta^2, t2 = beta and the factors
     1/2 and 2 on the uncertainty are our choices (the paper gives none).  As in the paper
     the approximate mu is taken whatever f(mu) is, so F(w_best) may rise for an iteration
     (section V credits such non-greedy moves for escaping the mu = 0 trap);
5. one pass over the data: the cut at w_c = (1 - c) w_best + c w_t, c = mu + 0.1 (1 - mu)
   (libocas' MU, a detail Arnosti omits; the cut point's outputs interpolated, so the pass
   only accumulates the subgradient);
6. stop when F(w_best) - F_t(w_t) <= tol |F(w_best)|.

Each iteration reports F(w_best) (``docs/design.md``'s objective, from the outputs by the problem
layer) and the relative gap (F(w_best) - F_t(w_t)) / |F(w_best)| as ``relative_duality_gap``,
with extras ``lower_bound`` (F_t(w_t)), ``cuts``, ``nnz_alpha``, ``mu``, ``qp_steps`` (active-
set iterations plus SMO steps), ``qp_gap`` and the seconds of the iteration in the oracle, the
QP and the line search (``time_oracle``, ``time_qp``, ``time_line_search``; the solution's
extras sum them). Measured against LIBLINEAR, Clarabel and ``mfn``, and Arnosti's experiments:
``bench/history/notebook.md``.

C paths (:func:`solve_path`, the spec's ``path``, which cross-validation uses).  The risk is
linear in C (R = sum_i C sample_weight_i loss_i), so every cut of R at one C is, scaled by
C'/C, a cut of R at C' (:meth:`CutBuffer.rescale`; H by the square, alpha stays feasible).
Each point of a path starts at the last solution with the whole buffer of cuts carried over,
a model of the risk that is already accurate around it: one a9a fold's 11-point grid
(2^-5 .. 2^5, OCAS, tol 1e-3) took 123 iterations in all against 1110 from cold starts and 513
from the last point alone (``bench/history/notebook.md``, Cross-validation, "Hinge").  This is the
cutting-plane form of warm starting that neither libocas nor SVMperf offers.  A warm start
(``start=WarmStart(...)``, ``solvers.base.WarmStart``) carries the cuts as its ``state`` (a
:class:`PathCarry`, as a path or a distributed solve's checkpoint leaves it); a lone start
point (``WarmStart(beta=...)``, the spec's ``warm_start``) keeps w_best but no cuts.

Arnosti section V's fix of the mu = 0 trap is an option: ``force_mu_iterations`` (mu = 0.02
in the first 5 iterations on Poker) and ``force_mu_when_zero`` (mu = 0.02 whenever the search
returns 0, Covtype at C = 100).  A forced mu may raise F(w_best) for that iteration (then
w_best is not the best point seen); the certificate is unaffected.

Misprints and gaps fixed (each noted where it is implemented):

* the stopping ratio: Arnosti prints 1 - F_t(w_t^b) / F(w_t) < eps; the rule is
  F(w_best) - F_t(w_t) <= tol |F(w_best)| (libocas);
* TCA's right shift: printed high <- 2 low - mid (which inverts the window), here
  high <- 2 mid - low (:class:`~solvers.cutting_plane.search.ThreePointSearch`);
* GCA2's refining windows start at mu1 - beta/2 and mu2 - beta^2/2 and can miss
  [mu1 - beta, mu1 - beta/2]: they start at mu1 - beta and mu2 - beta^2
  (:class:`~solvers.cutting_plane.search.GridSearch`);
* mu is clamped to mu >= 0, the domain of OCAS's search (libocas: ``t = max(t, 0)``).  GCA2
  and TCA may evaluate f below 0 as printed (pass 1 starts at mu_prev - 1, TCA's window is
  centred on mu_prev) and their result is clamped, exact for a convex f; a TCA window clamped
  at 0 instead never searched again once mu_prev = 0 and the uncertainty was gamma (measured:
  mu = 0 on 9994 of 10000 iterations on a9a at C = 1).  mu > 1 is allowed, as in OCAS (argmin
  over mu >= 0).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

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
from solvers.core.linesearch import piecewise_linear_root_jumps
from solvers.cutting_plane.distributed import distributed_geometry
from solvers.cutting_plane.engine import (
    BinaryGeometry,
    CrammerSingerGeometry,
    PathCarry,
    solve_geometry,
)
from solvers.cutting_plane.params import CuttingPlaneParams
from solvers.cutting_plane.qp import CutBuffer, simplex_active_set, simplex_smo
from solvers.cutting_plane.search import (
    GridSearch,
    Ray,
    ThreePointSearch,
    crammer_singer_ray_breakpoints,
    hinge_ray_breakpoints,
)
from solvers.data.dataset import Dataset
from solvers.models import LinearModel
from solvers.monitor import Monitor, Stopwatch
from solvers.multiclass import timed_path
from solvers.problems import BinaryProblem, CrammerSingerProblem


def solve(problem: BinaryProblem, params: CuttingPlaneParams | None = None,
          monitor: Monitor | None = None, start: WarmStart | None = None) -> Solution:
    """Solve a binary hinge problem (regularized bias or none), from w = 0 or from the
    :class:`~solvers.base.WarmStart` ``start``: its ``state`` (a :class:`PathCarry`: the
    carried solution and every cut, rescaled to this C, and left holding this run's), else its
    ``beta`` = (w, b) of a nearby problem (its cut is the first); its ``dual`` and ``model``
    are ignored (the reduced QP's dual lives on the cuts)."""
    params = params or CuttingPlaneParams(C=problem.C, bias=problem.bias)
    beta, carry = _start_and_carry(warm_start_argument(start))
    return solve_geometry(BinaryGeometry(problem), params, monitor, start=beta, carry=carry)


def _start_and_carry(start: WarmStart | None) -> tuple[np.ndarray | None, PathCarry | None]:
    """:func:`solve_geometry`'s ``start`` and ``carry`` from a warm start."""
    if start is None:
        return None, None
    return start.beta, start.state


def solve_path(problem: BinaryProblem, Cs, params: CuttingPlaneParams | None = None,
               monitor: Monitor | None = None) -> list[Solution]:
    """Solve for each C in ``Cs`` (in the given order), each from the last solution with
    every cut kept so far, rescaled to the new C (:class:`PathCarry`): the cutting-plane model
    of the risk does not depend on C but for a factor, so a point of the path starts with a
    model that is already accurate around the last solution.  Each solution carries
    ``extras["seconds"]``; a stop asked by the monitor ends the path."""
    params = params or CuttingPlaneParams(C=problem.C, bias=problem.bias)
    carry = PathCarry()
    solutions = []
    for C in Cs:
        clock = Stopwatch()
        solution = solve_geometry(BinaryGeometry(problem.with_C(C)),
                                  params.model_copy(update={"C": float(C)}), monitor,
                                  carry=carry)
        solution.extras["seconds"] = clock()
        solutions.append(solution)
        if solution.status == Termination.STOPPED:
            break
    return solutions


def solve_crammer_singer(problem: CrammerSingerProblem, params: CuttingPlaneParams | None = None,
                         monitor: Monitor | None = None) -> Solution:
    """Solve a Crammer-Singer problem; ``Solution.beta`` is W (n_classes, n_features + 1)."""
    params = params or CuttingPlaneParams(C=problem.C, bias=problem.bias)
    return solve_geometry(CrammerSingerGeometry(problem), params, monitor)


def run(problem: BinaryProblem, params: CuttingPlaneParams, monitor: Monitor,
        start: WarmStart | None = None) -> Solution:
    """The spec's entry point (binary problems; one-vs-rest through the multiclass layer);
    ``start``: a :class:`~solvers.base.WarmStart` (the solution of a nearby problem, the same
    data at another C), read as :func:`solve` reads it."""
    return solve(problem, params, monitor, start=warm_start_argument(start))


def run_distributed(problem, params: CuttingPlaneParams, monitor: Monitor,
                    start: WarmStart | None = None, *,
                    resume: PathCarry | None = None) -> Solution:
    """The spec's solve on distributed data: the same loop on a geometry whose margins stay
    on the workers (:mod:`solvers.cutting_plane.distributed`).

    ``problem.checkpoint`` is kept current (a :class:`~solvers.base.WarmStart` whose
    ``state`` is a :class:`PathCarry`: w_best and the cut buffer, both on the driver).
    ``start``: that of a solve that lost a worker (``solvers.train`` passes it): the loop
    resumes at its w_best with every cut it had (one round recomputes the margins at w_best
    on the partitions read again).  The cutting-plane model is kept, so the bound is not
    lost; the path from there differs from the uninterrupted solve's (a cut at w_best again,
    the lower bound taken afresh from the reduced QP, the first iterations' forced mu
    again).  A ``start`` without a ``state`` starts at its ``beta`` with no cuts, as
    :func:`solve`.  ``resume`` (a :class:`PathCarry`): the deprecated spelling of
    ``start=WarmStart(state=...)``, kept for one release."""
    start = replaced_keyword(warm_start_argument(start), "resume", resume, "state")
    beta, carry = _start_and_carry(start)
    carry = carry if carry is not None else PathCarry()
    problem.checkpoint = WarmStart(state=carry)
    solution = solve_geometry(distributed_geometry(problem, params), params, monitor,
                              start=beta, carry=carry)
    solution.extras.update(problem.communication_totals())
    return solution


def _crammer_singer_problem(dataset: Dataset, params: CuttingPlaneParams) -> CrammerSingerProblem:
    labels = np.searchsorted(dataset.classes, dataset.y)
    return CrammerSingerProblem(dataset.X, labels, dataset.classes.shape[0], C=params.C,
                                bias=params.bias, bias_scale=params.bias_scale,
                                sample_weight=dataset.sample_weight)


def _crammer_singer_model(dataset: Dataset, problem: CrammerSingerProblem,
                          W: np.ndarray) -> LinearModel:
    return LinearModel(W[:, :-1], problem.effective_bias_scale * W[:, -1], dataset.classes)


def fit_crammer_singer(dataset: Dataset, spec: SolverSpec, params: CuttingPlaneParams,
                       monitor: Monitor) -> Fit:
    """``train`` handler of task ``crammer_singer``."""
    problem = _crammer_singer_problem(dataset, params)
    solution = solve_crammer_singer(problem, params, monitor)
    summary = SubproblemResult("crammer_singer", solution.objective,
                               Termination(solution.status), solution.message,
                               solution.iterations, solution.extras)
    return Fit(_crammer_singer_model(dataset, problem, solution.beta), [summary])


def fit_crammer_singer_path(dataset: Dataset, spec: SolverSpec,
                            points: list[CuttingPlaneParams]) -> list[tuple[LinearModel, float,
                                                                            float]]:
    """Path handler of task ``crammer_singer``: the Crammer-Singer problem at each
    point's C in order, each from the last solution with the cuts carried over and rescaled
    (:class:`PathCarry`; the multi-class risk is linear in C too).  Returns (model, objective,
    seconds) per point."""
    problem = _crammer_singer_problem(dataset, points[0])
    carry = PathCarry()

    def fit_point(params):
        sub = dataclasses.replace(problem, C=float(params.C))
        solution = solve_geometry(CrammerSingerGeometry(sub), params, None, carry=carry)
        return _crammer_singer_model(dataset, sub, solution.beta), solution.objective

    return timed_path(points, fit_point)


def warm_up() -> None:
    """Compile the family's kernels (oracles, SMO, active set, Gram upkeep, ray searches) on
    a few rows."""
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0],
                                [0.0, 1.0, 1.0]]))
    params = CuttingPlaneParams(C=1.0, max_iter=3)
    for method in ("ocas", "gca2"):
        p = params.model_copy(update={"method": method})
        solve(BinaryProblem(X, np.array([1.0, -1.0, 1.0, -1.0]), C=1.0, loss="hinge"), p)
        solve_crammer_singer(CrammerSingerProblem(X, np.array([0, 1, 2, 1]), 3), p)
    piecewise_linear_root_jumps(-1.0, 1.0, np.array([0.5]), np.array([1.0]), np.array([1.0]))
    # the active-set QP runs only once the SMO's budget is spent: compile it directly
    H = np.array([[2.0, 1.0], [1.0, 2.0]])
    simplex_active_set(H, np.array([1.0, 0.5]), np.zeros(2), 2, 1e-12, 0.0, 10, 10)
    # the cut buffer's compaction runs only once a cut has been inactive for max_inactive
    # solves
    buffer = CutBuffer(2, max_inactive=1)
    buffer.add(np.array([1.0, 0.0]), 1.0)
    buffer.add(np.array([0.0, -1.0]), -5.0)
    buffer.solve(1e-6)
    buffer.prune()


SPECS = (
    SolverSpec(
        name="cutting_plane",
        params_model=CuttingPlaneParams,
        run=run,
        description="Cutting-plane methods for the hinge loss (binary and Crammer-Singer): "
                    "Joachims' CPA, OCAS (exact line search), Arnosti's GCA2 and TCA "
                    "(approximate searches); a reduced QP by SMO over the cuts.",
        reference="T. Joachims, Training linear SVMs in linear time, KDD 2006; V. Franc and S. "
                  "Sonnenburg, Optimized cutting plane algorithm for large-scale risk "
                  "minimization, JMLR 10 (2009); N. Arnosti, Reducing training time for "
                  "linear SVMs, 2010.",
        fit_handlers={"crammer_singer": fit_crammer_singer},
        path_handlers={"crammer_singer": fit_crammer_singer_path},
        warm_up=warm_up,
        warm_start=True,
        path=solve_path,
        distributed=run_distributed,
        auto_candidates=tuple((("method", m),) for m in ("ocas", "cpa", "gca2", "tca")),
        auto_fixed=(("kernel_form", "serial"),),
    ),
)

__all__ = [
    "SPECS",
    "CutBuffer",
    "CuttingPlaneParams",
    "GridSearch",
    "PathCarry",
    "Ray",
    "ThreePointSearch",
    "crammer_singer_ray_breakpoints",
    "fit_crammer_singer",
    "fit_crammer_singer_path",
    "hinge_ray_breakpoints",
    "run",
    "simplex_smo",
    "solve",
    "solve_crammer_singer",
    "solve_path",
    "warm_up",
]
