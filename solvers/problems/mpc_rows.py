"""The rows of Mehrotra's predictor-corrector method on the SVM QP, as its one loop sees
them (``docs/design.md`` section 3.9): a row-operator protocol with a local and a partitioned
implementation, as :mod:`solvers.problems.newton_rows` is mfn's.

Gertz & Griffin's MPC iteration (``solvers.interior_point.mpc``) keeps (w, beta) and asks
the rows for what needs the per-example part of the iterate (v, z, u, s) and the data, each
the answer of one evaluation over the rows (a *round* when the rows are partitioned; the
partitioned rows fuse several calls into one round and answer the later ones from it):

* :meth:`~MPCRows.cold`, :meth:`~MPCRows.start_step`, :meth:`~MPCRows.shift`: the default
  start's point, its affine step (the largest negativities after it) and its shift;
  :meth:`~MPCRows.warm`: a warm start's point near a (w, b);
* :meth:`~MPCRows.iterate`: the residual sums and the complementarity at (w, beta)
  (:class:`MPCPoint`); :meth:`~MPCRows.objective`, :meth:`~MPCRows.dual_objective`: the
  record's values there;
* :meth:`~MPCRows.prepare`: the normal equations (9a) at the point (Omega^-1, y_d, sigma,
  the linear solver's factor); :meth:`~MPCRows.predictor_products`,
  :meth:`~MPCRows.corrector_products`: the sums X~'(d q), d'q of (8) for each right-hand side;
* :meth:`~MPCRows.predictor`, :meth:`~MPCRows.corrector`: the back substitutions (10) given
  (dw, dbeta), the step bound and the blocking pair of Mehrotra's heuristic;
  :meth:`~MPCRows.mu_affine`, :meth:`~MPCRows.mu_step`: mu along the affine step and the
  step; :meth:`~MPCRows.step`: x += alpha dx.

What an implementation cannot do it declares (``capabilities``); the solver's parameters
refuse what needs it (:meth:`solvers.interior_point.params.InteriorPointParams.rows_refusal`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

#: what rows may offer beyond the protocol's core (``capabilities``)
MATRIX_FREE = "matrix_free"  # M of (11) applied by products over every row (PCG), rule (15)


@dataclass
class MPCPoint:
    """The sums over the rows at an iterate: X~'(d v), rho_beta = d'v (free bias; else 0),
    OOQP's duality gap, the complementarity v's + u'z (v's for the squared hinge) and the
    largest |r_z| and |r_s|.  The partitioned rows add what their round made with it (each
    partition's answer one of these, summed by :func:`~solvers.problems.newton_rows.combine`):
    the record's loss sum and dual shares, the Gram matrix's lower triangle, y_d and sigma
    (free bias), and the predictor's X~'(d q) and d'q."""

    adjoint_dv: np.ndarray
    rho: float
    gap: float
    complementarity: float
    r_z_max: float = field(metadata={"combine": "max"})
    r_s_max: float = field(metadata={"combine": "max"})
    loss_sum: float | None = None
    shares: Any = field(default=None, metadata={"combine": "list"})
    gram: np.ndarray | None = None
    y_d: np.ndarray | None = None
    sigma: float = 0.0
    adjoint_dq: np.ndarray | None = None
    dq: float = 0.0


class MPCRows(Protocol):
    """The rows the MPC loop runs over (module docstring).  ``linsys``: the linear solver of
    (9a) (its ``name``, ``iterations``, ``active_size``, ``gamma`` go to the records)."""

    n: int
    n_pairs: int
    dim: int
    bias: str
    free: bool
    dnorm: float
    linsys: Any
    capabilities: frozenset

    def cold(self, a: float, start: str) -> None: ...
    def warm(self, start: np.ndarray) -> tuple[np.ndarray, float]: ...
    def iterate(self, w: np.ndarray, beta: float, record: bool = True) -> MPCPoint: ...
    def objective(self, parameters: np.ndarray, point: MPCPoint) -> float: ...
    def dual_objective(self, point: MPCPoint, predictor) -> float: ...
    def prepare(self, point: MPCPoint, mu: float) -> tuple[np.ndarray, float]: ...
    def predictor_products(self, point: MPCPoint) -> tuple[np.ndarray, float]: ...
    def start_step(self, dw: np.ndarray, dbeta: float) -> tuple[float, float]: ...
    def shift(self, start: str, primal: float, dual: float) -> None: ...
    def predictor(self, dw: np.ndarray, dbeta: float) -> float: ...
    def mu_affine(self, alpha: float) -> float: ...
    def corrector_products(self, sigma_mu: float) -> tuple[np.ndarray, float]: ...
    def corrector(self, dw: np.ndarray, dbeta: float) -> tuple[float, tuple | None]: ...
    def mu_step(self, alpha: float) -> float: ...
    def step(self, alpha: float) -> None: ...
    def final_objective(self, parameters: np.ndarray) -> float: ...
    def unstarted(self) -> tuple[float, float]: ...
    def record_extras(self) -> dict: ...
