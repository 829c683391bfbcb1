"""The cutting-plane loop on a distributed dataset: the same engine
(:func:`solvers.cutting_plane.engine.solve_geometry`), a geometry whose outputs stay on the
workers.

Per iteration (``ocas``): the reduced QP on the driver (the cuts are d-vectors it holds); one
round that makes the margins at w_t and the line search's breakpoints on the ray (kept on the
workers; when they are few, at most ``DISTRIBUTED_GATHER_BREAKPOINTS`` over all partitions,
they come back and the driver finds the root with no further round); otherwise usually one
round of :func:`solvers.distributed.breakpoint_root`'s selection; one round that moves the
margins to the cut point and to the new w_best, takes the cut there (a d-vector from each
partition) and the loss sum at w_best (F(w_best)).  2 or 3 rounds (6 before 2026-11-27).
``cpa``: one round (the cut, the margins and F at w_t).  ``gca2`` and ``tca`` evaluate f(mu)
by a round each (the margins at w_t ride with the first).

The engine asks the geometry for what it computes where the outputs live (``outputs``,
``on_ray``, ``ray``, ``cut_and_objective``); their single-machine forms are the calls the
engine made itself before, in the same order.
"""

from __future__ import annotations

import numpy as np

from solvers import config
from solvers.cutting_plane.params import CUTTING_PLANE_SOLVES, CuttingPlaneParams
from solvers.cutting_plane.search import hinge_ray_breakpoints, hinge_ray_values
from solvers.distributed import DistributedBinaryProblem, Partition, reduce_sum


def _ray_values(part: Partition, mb, mt, mus):
    problem = part.state["problem"]
    vectors = part.state["vectors"]
    out = np.empty(mus.shape[0])
    hinge_ray_values(vectors[mb], vectors[mt], problem.cost, mus, out)
    return out


class DistributedRay:
    """f(mu) on the ray w_b + mu (w_t - w_b) from the margins on the workers (the
    :class:`~solvers.cutting_plane.search.Ray` of distributed data)."""

    def __init__(self, problem: DistributedBinaryProblem, ob, ot, nb, B0, A0,
                 window: float | None = None, mus: list | None = None):
        self.problem, self.ob, self.ot = problem, ob, ot
        self.nb, self.B0, self.A0 = nb, B0, A0
        self.evaluations = 0
        self.window = window
        self.mus = [] if mus is None else mus  # the exact searches' mu, the geometry's list

    def values(self, mus) -> np.ndarray:
        mus = np.ascontiguousarray(np.atleast_1d(np.asarray(mus, dtype=np.float64)))
        p = self.problem
        out = reduce_sum(p.round(_ray_values, self.ob.name, self.ot.name, mus))
        self.evaluations += mus.shape[0]
        return 0.5 * (self.nb + 2.0 * self.B0 * mus + self.A0 * mus * mus) + out

    def __call__(self, mu: float) -> float:
        return float(self.values(mu)[0])

    def exact(self) -> float:
        """mu by :meth:`DistributedBinaryProblem.hinge_ray_exact`, its window the
        geometry's (twice the last mu, at least ``DISTRIBUTED_OCAS_WINDOW``)."""
        mu = self.problem.hinge_ray_exact(hinge_ray_breakpoints, self.ob, self.ot, self.B0,
                                          self.A0, self.window)
        self.mus.append(mu)
        return mu


class DistributedBinaryGeometry:
    """The binary hinge problem on distributed data, as the loop sees it (the interface of
    :class:`~solvers.cutting_plane.engine.BinaryGeometry`)."""

    kind = "binary"
    labels = None
    search_choice = None
    parallel_calls = 0

    def __init__(self, problem: DistributedBinaryProblem):
        CUTTING_PLANE_SOLVES.require_problem(problem, "cutting_plane")
        self.problem = problem
        self.shape = (problem.n_features + 1,)
        self.mus: list[float] = []

    def oracle(self, beta, outputs=None, want_cut=True):
        return self.problem.risk_oracle(beta, outputs, want_cut)

    def objective(self, beta, outputs) -> float:
        return self.problem.objective_from_margins(beta, outputs)

    def outputs(self, point):
        return self.problem.margins(point)  # made with the line search's first round

    def cut_and_objective(self, point, outputs=None, best=None, best_outputs=None):
        """The cut at ``point`` and F(w_best) in one round (the engine's two calls)."""
        if best is None:
            best = point
        return self.problem.risk_oracle_and_objective(point, outputs, True, best,
                                                      best_outputs)

    def on_ray(self, a, b, t: float):
        return self.problem.on_ray(a, b, t)

    def ray(self, ob, ot, nb, B0, A0) -> DistributedRay:
        return DistributedRay(self.problem, ob, ot, nb, B0, A0, self._window(), self.mus)

    def _window(self) -> float | None:
        """The exact search's window: ``DISTRIBUTED_OCAS_WINDOW``, or twice the last mu when
        larger (mu moves slowly between iterations)."""
        first = config.DISTRIBUTED_OCAS_WINDOW
        if first is None or not self.mus:
            return first
        return max(first, 2.0 * self.mus[-1])


def distributed_geometry(problem: DistributedBinaryProblem, params: CuttingPlaneParams
                         ) -> DistributedBinaryGeometry:
    """The geometry of ``problem`` (refuses Crammer-Singer: its scores are n x k on the
    workers, not done yet)."""
    if params.multiclass == "crammer_singer":
        raise ValueError("cutting_plane on distributed data: Crammer-Singer is not "
                         "distributed (yet); use multiclass='ovr'")
    return DistributedBinaryGeometry(problem)
