"""Ordinal regression (Keerthi & DeCoste section 7, eqs. (25)-(26), in ``docs/design.md``'s scale).

Labels mapped to ranks 1..p, p - 1 thresholds theta_s = s * b_s (s = ``bias_scale``), C_i = C *
sample_weight_i::

    minimize  1/2 (||w||^2 + ||b||^2)
              + sum_i C_i ( sum_{s < rank_i} max(0, 1 - (w.x_i - theta_s))^2
                            + sum_{s >= rank_i} max(0, 1 + (w.x_i - theta_s))^2 )

Each (example, threshold) pair is a squared-hinge term with label sigma_is = +1 (s < rank_i) or
-1 and least-squares row (x_i, -s e_s) (:class:`solvers.core.rows.OrdinalRows`).  Its dual, over
one alpha per pair, is that of a binary squared-hinge problem on those rows:
D(alpha) = sum alpha - 1/2 ||beta(alpha)||^2 - sum alpha^2 / (4 C_i).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvers.core.linalg import dot
from solvers.core.rows import OrdinalRows
from solvers.data.dataset import as_csr
from solvers.losses import SQUARED_HINGE_LOSS, Loss


@dataclass
class OrdinalProblem:
    """Ordinal regression with p ranks and p - 1 thresholds (the module docstring).

    ``ranks`` are integers 1..n_levels; parameters are beta = (w, b_1..b_{p-1}) with
    thresholds theta_s = bias_scale * b_s.
    """

    X: sp.csr_matrix
    ranks: np.ndarray
    n_levels: int
    C: float = 1.0
    bias_scale: float = 1.0
    sample_weight: np.ndarray | None = None

    loss_function = SQUARED_HINGE_LOSS

    def __post_init__(self):
        self.X = as_csr(self.X)  # canonical: the Gram kernel needs sorted, unique indices
        ranks = np.asarray(self.ranks)
        if ranks.shape != (self.X.shape[0],):
            raise ValueError("ranks must have one entry per row")
        if self.n_levels < 2 or ranks.min() < 1 or ranks.max() > self.n_levels \
                or not np.all(ranks == np.round(ranks)):
            raise ValueError("ranks must be integers in 1..n_levels, n_levels >= 2")
        if not self.C > 0 or not self.bias_scale > 0:
            raise ValueError("C and bias_scale must be positive")
        self.ranks = ranks.astype(np.int64)

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def cost(self) -> np.ndarray:
        weight = np.ones(self.X.shape[0]) if self.sample_weight is None else self.sample_weight
        return self.C * np.asarray(weight, dtype=np.float64)

    def terms(self) -> OrdinalRows:
        return OrdinalRows(self.X, self.ranks, self.n_levels, self.cost, self.bias_scale)

    def split(self, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(w, thresholds) of a parameter vector."""
        d = self.n_features
        return beta[:d], self.bias_scale * beta[d:]

    @staticmethod
    def regularizer(beta: np.ndarray) -> float:
        return 0.5 * dot(beta, beta)

    def objective_from_slacks(self, beta: np.ndarray, xi: np.ndarray, cost: np.ndarray,
                              loss: Loss | None = None) -> float:
        """The objective from the pairs' slacks xi_k = 1 - sigma_k (row_k . beta) and their
        costs (in the order the caller keeps the pairs); ``loss`` replaces the squared hinge
        by a surrogate of the same regularizer."""
        loss = self.loss_function if loss is None else loss
        return self.regularizer(beta) + loss.sum(xi, cost)

    def objective(self, beta: np.ndarray) -> float:
        terms = self.terms()
        xi = 1.0 - terms.labels * terms.outputs(beta)
        return self.objective_from_slacks(beta, xi, terms.cost)

    def gradient(self, beta: np.ndarray) -> np.ndarray:
        terms = self.terms()
        xi = 1.0 - terms.labels * terms.outputs(beta)
        coefficients = -terms.cost * self.loss_function.derivative(xi) * terms.labels
        support = np.flatnonzero(coefficients)
        return beta + terms.adjoint(support, coefficients[support])

    def dual_objective(self, alpha: np.ndarray, beta_alpha: np.ndarray,
                       cost: np.ndarray) -> float:
        """D(alpha) over the pairs, given beta(alpha) = sum_k alpha_k sigma_k row_k."""
        conj = self.loss_function.conjugate_sum(alpha, cost)
        if not np.isfinite(conj):
            return -np.inf
        return float(alpha.sum()) - self.regularizer(beta_alpha) - conj
