"""The cutting-plane loop, written once for the binary hinge and Crammer-Singer problems."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from solvers import config
from solvers.base import Solution, Termination
from solvers.core.linalg import dot
from solvers.core.sparse import TimedChoice
from solvers.cutting_plane.params import CUTTING_PLANE_SOLVES, CuttingPlaneParams
from solvers.cutting_plane.qp import CutBuffer
from solvers.cutting_plane.search import GridSearch, Ray, ThreePointSearch
from solvers.monitor import Monitor, Reporter
from solvers.problems import BinaryProblem, CrammerSingerProblem
from solvers.termination import format_gap


class _Geometry:
    """What both problems share: the oracle's serial or parallel form, chosen by timing
    (:class:`solvers.core.sparse.TimedChoice`), one choice per kind of call (outputs computed
    or given, cut wanted or not: their costs differ), and one for the line search's
    Crammer-Singer envelopes."""

    def _init_choices(self):
        allowed = self.problem.oracle_parallel_allowed()
        self.choices = {key: TimedChoice(allowed) for key in
                        ((True, True), (True, False), (False, True), (False, False))}

    def serial_kernels(self) -> None:
        """Every timed kernel in its serial form (``kernel_form="serial"``)."""
        for choice in [*self.choices.values(), self.search_choice]:
            if choice is not None:
                choice.allowed = False

    def _run_oracle(self, point, outputs, want_cut):
        return self.choices[(outputs is None, want_cut)].run(
            lambda parallel: self.problem.risk_oracle(point, outputs, want_cut, parallel))

    @property
    def parallel_calls(self) -> int:
        """Oracle calls that ran in the parallel form."""
        return sum(c.parallel_calls for c in self.choices.values())

    def outputs(self, point):
        """The outputs at ``point`` (the line search's end w_t: no risk, no cut).  Here one
        oracle pass; on distributed data they are made on the workers with the next round."""
        return self.oracle(point, want_cut=False)[2]

    def cut_and_objective(self, point, outputs=None, best=None, best_outputs=None):
        """(R, cut, outputs) at ``point`` (``outputs`` given: only R and the cut) and the
        objective F at ``best`` from ``best_outputs`` (default: at ``point`` from the outputs
        the oracle made): the cut of an iteration and F(w_best) after it, which distributed
        data computes in one round (here the same two calls as before, in the same order)."""
        risk, cut, out = self.oracle(point, outputs)
        if best is None:
            best, best_outputs = point, out
        return risk, cut, out, self.objective(best, best_outputs)

    def on_ray(self, a, b, t: float):
        """a + t (b - a) of two points' outputs (the geometry says where outputs live: in
        this process here, on the workers for distributed data)."""
        return _on_ray(a, b, t)

    def ray(self, ob, ot, nb: float, B0: float, A0: float) -> Ray:
        """f(mu) on the ray from the outputs at w_best and w_t (:class:`Ray`)."""
        return Ray(self.kind, ob, ot, self.problem.cost, self.labels, nb, B0, A0,
                   self.search_choice)


class BinaryGeometry(_Geometry):
    """The binary hinge problem seen by the loop: parameters beta = (w, b), outputs the
    margins y_i x~_i . beta."""

    kind = "binary"

    def __init__(self, problem: BinaryProblem):
        CUTTING_PLANE_SOLVES.require_problem(problem, "cutting_plane")
        self.problem = problem
        self.shape = (problem.n_features + 1,)
        self.labels = None
        self._init_choices()
        self.search_choice = None

    def oracle(self, beta, outputs=None, want_cut=True):
        return self._run_oracle(beta, outputs, want_cut)

    def objective(self, beta, outputs) -> float:
        return self.problem.objective_from_margins(beta, outputs)


class CrammerSingerGeometry(_Geometry):
    """The Crammer-Singer problem seen by the loop: parameters W (n_classes, n_features + 1),
    outputs the scores w_m . x~_i."""

    kind = "crammer_singer"

    def __init__(self, problem: CrammerSingerProblem):
        self.problem = problem
        self.shape = (problem.n_classes, problem.n_features + 1)
        self.labels = problem.labels
        self._init_choices()
        n, k = problem.n_samples, problem.n_classes
        self.search_choice = TimedChoice(n * k * k >= config.KERNEL_PARALLEL_MIN_WORK)

    def oracle(self, W, outputs=None, want_cut=True):
        risk, cut, scores, _ = self._run_oracle(W, outputs, want_cut)
        return risk, cut, scores

    def objective(self, W, outputs) -> float:
        loss, _ = self.problem.violations_from_scores(outputs)
        return self.problem.regularizer(W) + dot(self.problem.cost, loss)


@njit(cache=True, nogil=True)
def _on_ray_kernel(a, b, t, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + t * (b[i] - a[i])


def _on_ray(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    """a + t (b - a) in one pass on the calling thread (points and outputs on the ray)."""
    out = np.empty_like(a)
    _on_ray_kernel(a.ravel(), b.ravel(), float(t), out.ravel())
    return out


@dataclass
class Timers:
    oracle: float = 0.0
    qp: float = 0.0
    line_search: float = 0.0
    extras: dict = field(default_factory=dict)


def _mu_search(params: CuttingPlaneParams):
    if params.method == "gca2":
        return GridSearch(params.grid_beta, params.grid_t1, params.grid_t2,
                          params.uncertainty_shrink, params.uncertainty_grow)
    if params.method == "tca":
        return ThreePointSearch(params.tca_gamma, params.uncertainty_shrink,
                                params.uncertainty_grow)
    return None


@dataclass
class PathCarry:
    """What a C path carries from one C to the next (:func:`solve_geometry`'s ``carry``):
    the cut buffer, the solution and the C they belong to.  Cuts of the risk at one C are,
    rescaled by C'/C, cuts of the risk at C' (:meth:`CutBuffer.rescale`), so the next point
    starts with the whole cutting-plane model built so far, not only from the last
    solution."""

    buffer: CutBuffer | None = None
    beta: np.ndarray | None = None
    C: float | None = None


def solve_geometry(geometry, params: CuttingPlaneParams, monitor: Monitor | None,
                   start: np.ndarray | None = None, carry: PathCarry | None = None) -> Solution:
    """Run the method of ``params`` on a binary or Crammer-Singer geometry (package
    docstring).  w_best starts at 0 (libocas), at ``start`` (the solution of a nearby
    problem), or, with a filled ``carry``, at the carried solution with the carried cuts
    rescaled to this C; ``carry`` is then left holding this run's cuts and solution.  It
    holds them during the run too (w_best and the buffer after every iteration): a run cut
    short by an error (distributed data: a lost worker) can be resumed from it."""
    reporter = Reporter(monitor, "relative_duality_gap")
    if params.kernel_form == "serial" and hasattr(geometry, "serial_kernels"):
        geometry.serial_kernels()
    C = geometry.problem.C
    shape = geometry.shape
    dim = int(np.prod(shape))
    if carry is not None and carry.buffer is not None:
        buffer = carry.buffer
        buffer.rescale(C / carry.C)
        start = carry.beta
    else:
        buffer = CutBuffer(dim, params.cut_buffer, params.max_inactive, params.qp_solver)
    counted = buffer.counters()  # a carried buffer's counts so far (this run reports its own)
    search = _mu_search(params)
    timers = Timers()

    # w_best = 0 and the first cut there (libocas starts the same way), or the given start
    wb = np.zeros(shape) if start is None else np.array(start, dtype=np.float64).reshape(shape)
    t0 = time.perf_counter()
    risk, cut, ob, Fb = geometry.cut_and_objective(wb)
    timers.oracle += time.perf_counter() - t0
    offset = risk - dot(cut.ravel(), wb.ravel())  # b = R(w_c) - a . w_c
    if carry is not None:
        carry.buffer, carry.beta, carry.C = buffer, wb, C
    lower = 0.0
    gap = np.inf
    status, message = Termination.MAX_ITER, f"{params.max_iter} iterations without reaching tol"
    iteration = 0
    mus = []
    for iteration in range(1, params.max_iter + 1):
        t0 = time.perf_counter()
        buffer.add(cut.ravel(), offset)
        qp_tol = params.qp_tol_ratio * max(params.tol, min(gap, 1.0))
        bound, qp_gap, qp_steps = buffer.solve(qp_tol, 0.0)
        wt = buffer.weights().reshape(shape)
        n_cuts, nnz_alpha = buffer.m, buffer.nnz_alpha
        buffer.prune()
        lower = max(lower, bound)
        t_qp = time.perf_counter() - t0

        if params.method == "cpa":
            t0 = time.perf_counter()
            risk, cut, ot, Ft = geometry.cut_and_objective(wt)
            t_oracle = time.perf_counter() - t0
            offset = risk - dot(cut.ravel(), wt.ravel())
            mu = 1.0 if Ft < Fb else 0.0  # CPA's point is w_t; w_best keeps the best seen
            if Ft < Fb:
                wb, ob, Fb = wt, ot, Ft
            t_search = 0.0
        else:
            t0 = time.perf_counter()
            ot = geometry.outputs(wt)
            t_oracle = time.perf_counter() - t0
            t0 = time.perf_counter()
            diff = wt - wb
            wb_flat, diff_flat = wb.ravel(), diff.ravel()
            ray = geometry.ray(ob, ot, dot(wb_flat, wb_flat), dot(wb_flat, diff_flat),
                               dot(diff_flat, diff_flat))
            if params.method == "ocas":
                mu = ray.exact()
            else:
                mu = search(ray)
            mu = max(mu, 0.0)  # the search is over mu >= 0 (f convex: exact)
            if iteration <= params.force_mu_iterations or \
                    (params.force_mu_when_zero and mu == 0.0):
                mu = params.forced_mu
            if search is not None:
                search.mu_prev = mu
            t_search = time.perf_counter() - t0
            # the cut at w_c = (1 - c) w_best_new + c w_t (libocas: mu_c = mu + 0.1 (1 - mu))
            mu_c = mu + params.cut_point * (1.0 - mu)
            # and F at the new w_best = w_best + mu (w_t - w_best), with the cut
            t0 = time.perf_counter()
            wc = _on_ray(wb, wt, mu_c)
            oc = geometry.on_ray(ob, ot, mu_c)
            wb = _on_ray(wb, wt, mu)
            ob = geometry.on_ray(ob, ot, mu)
            risk_c, cut, _, Fb = geometry.cut_and_objective(wc, oc, wb, ob)
            offset = risk_c - dot(cut.ravel(), wc.ravel())
            t_oracle += time.perf_counter() - t0
        mus.append(mu)
        if carry is not None:  # the point a resumed run starts from, with every cut so far
            carry.beta = wb
        timers.oracle += t_oracle
        timers.qp += t_qp
        timers.line_search += t_search
        gap = (Fb - lower) / max(abs(Fb), 1e-300)
        if reporter(iteration, Fb, gap, lower_bound=lower, relative_gap=gap, cuts=n_cuts,
                    nnz_alpha=nnz_alpha, mu=mu, qp_steps=qp_steps, qp_gap=qp_gap,
                    time_oracle=t_oracle, time_qp=t_qp, time_line_search=t_search):
            status, message = Termination.STOPPED, reporter.stop_message
            break
        # the stopping rule F(w_best) - F_t(w_t) <= tol |F(w_best)| (Arnosti prints it
        # inverted)
        if Fb - lower <= params.tol * abs(Fb):
            status, message = Termination.CONVERGED, \
                f"relative gap {format_gap(gap)} <= tol {params.tol:g}"
            break
    if carry is not None:
        carry.buffer, carry.beta, carry.C = buffer, wb, C
    extras = {
        "method": params.method,
        "lower_bound": lower,
        "relative_gap": gap,
        "cuts": buffer.m,
        **{name: count - counted[name] for name, count in buffer.counters().items()},
        "time_oracle": timers.oracle,
        "time_qp": timers.qp,
        "time_line_search": timers.line_search,
        "mu_zero_iterations": int(sum(1 for m in mus if m == 0.0)),
        "parallel_oracle_calls": geometry.parallel_calls,
    }
    return Solution(wb, Fb, status, message, iteration, extras)
