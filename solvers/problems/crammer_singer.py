"""The multi-class problem of Crammer & Singer (``docs/design.md``; LIBLINEAR ``-s 4``)::

    minimize  1/2 sum_m ||w_m||^2 + sum_i C_i max_m ( [m != y_i] + (w_m - w_{y_i}) . x~_i )

over one weight row per class, x~_i = (x_i, s) with the bias column of value s for the
regularized bias (``none``: no column).  The term of m = y_i is 0, so each loss is >= 0.

Dual (Keerthi et al. 2008, LIBLINEAR's form), one alpha_i^m per example and class::

    D(alpha) = -1/2 sum_m ||w_m(alpha)||^2 - sum_i sum_m e_i^m alpha_i^m,
    w_m(alpha) = sum_i alpha_i^m x~_i,   e_i^m = [m != y_i],
    sum_m alpha_i^m = 0,   alpha_i^m <= C_i [m = y_i]

The risk's subgradient at W picks per example the maximizing class k_i: a cut -C_i x~_i on row
y_i and +C_i x~_i on row k_i when k_i != y_i; the same choice gives a feasible dual point
(alpha_i^{y_i} = C_i, alpha_i^{k_i} = -C_i), hence a duality gap at any W.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from solvers.core.linalg import dot
from solvers.core.sparse import csr_matmat, csr_rmatvec, use_parallel
from solvers.data.dataset import RowMatrix, as_csr
from solvers.problems.oracles import crammer_singer_oracle, crammer_singer_violations


@dataclass
class CrammerSingerProblem(RowMatrix):
    """``labels`` are class indices 0..n_classes-1; parameters W have shape (n_classes,
    n_features + 1), the last column the bias coefficient (0 for ``bias="none"``)."""

    X: sp.csr_matrix
    labels: np.ndarray
    n_classes: int
    C: float = 1.0
    bias: str = "regularized"
    bias_scale: float = 1.0
    sample_weight: np.ndarray | None = None
    cost: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if self.bias not in ("regularized", "none"):
            raise ValueError("the Crammer-Singer problem has a regularized bias or none")
        if not self.C > 0:
            raise ValueError("C must be positive")
        self.X = as_csr(self.X)
        labels = np.asarray(self.labels)
        if labels.shape != (self.X.shape[0],) or self.n_classes < 2 or labels.min() < 0 \
                or labels.max() >= self.n_classes:
            raise ValueError("labels must be class indices 0..n_classes-1, one per row")
        self.labels = labels.astype(np.int64)
        weight = np.ones(labels.shape[0]) if self.sample_weight is None else self.sample_weight
        self.cost = self.C * np.asarray(weight, dtype=np.float64)

    @property
    def effective_bias_scale(self) -> float:
        return self.bias_scale if self.bias == "regularized" else 0.0

    def zeros(self) -> np.ndarray:
        return np.zeros((self.n_classes, self.n_features + 1))

    def scores(self, W: np.ndarray) -> np.ndarray:
        """w_m . x~_i, shape (n_samples, n_classes)."""
        return csr_matmat(self.X, W[:, :-1], self.effective_bias_scale * W[:, -1])

    def _violations(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(loss_i, k_i): the largest [m != y_i] + (w_m - w_{y_i}) . x~_i and its class."""
        return self.violations_from_scores(self.scores(W))

    def violations_from_scores(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(loss_i, k_i) of :meth:`_violations` from the scores (one parallel pass)."""
        loss = np.empty(self.n_samples)
        k = np.empty(self.n_samples, dtype=np.int64)
        crammer_singer_violations(np.ascontiguousarray(S), self.labels, loss, k)
        return loss, k

    def risk_oracle(self, W: np.ndarray, scores: np.ndarray | None = None,
                    want_cut: bool = True, parallel: bool | None = None):
        """(R(W), G, scores, k) in one pass over the rows
        (:func:`solvers.problems.oracles.crammer_singer_oracle`): the risk, the cut of
        :meth:`risk_subgradient`, the scores w_m . x~_i and the maximizing classes; with
        ``scores`` given (the scores at W, e.g. interpolated) they are not recomputed.
        ``parallel``: the kernel's form; None chooses by :meth:`oracle_parallel_allowed`."""
        if parallel is None:
            parallel = self.oracle_parallel_allowed()
        return crammer_singer_oracle(
            self.X, self.labels, self.cost, self.effective_bias_scale, W, scores, want_cut,
            parallel)

    def oracle_parallel_allowed(self) -> bool:
        """Whether the parallel oracle may pay (:func:`solvers.core.sparse.use_parallel`)."""
        return use_parallel(self.X.nnz, self.n_classes * (self.n_features + 1))

    def regularizer(self, W: np.ndarray) -> float:
        return 0.5 * float(np.sum(W * W))

    def risk(self, W: np.ndarray) -> float:
        return dot(self.cost, self._violations(W)[0])

    def objective(self, W: np.ndarray) -> float:
        return self.regularizer(W) + self.risk(W)

    def dual_from_primal(self, W: np.ndarray) -> np.ndarray:
        """The dual point of the maximizing classes (the module docstring), (n, n_classes)."""
        loss, k = self._violations(W)
        alpha = np.zeros((self.n_samples, self.n_classes))
        rows = np.flatnonzero(k != self.labels)
        alpha[rows, self.labels[rows]] = self.cost[rows]
        alpha[rows, k[rows]] = -self.cost[rows]
        return alpha

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        W = np.empty((self.n_classes, self.n_features + 1))
        for m in range(self.n_classes):
            W[m, :-1] = csr_rmatvec(self.X, alpha[:, m])
            W[m, -1] = self.effective_bias_scale * float(alpha[:, m].sum())
        return W

    def risk_subgradient(self, W: np.ndarray) -> tuple[float, np.ndarray]:
        """(R(W), G) with R(V) >= R(W) + <G, V - W> for every V: G = -W(alpha) of the
        maximizing classes."""
        loss, _ = self._violations(W)
        return dot(self.cost, loss), -self.primal_from_dual(self.dual_from_primal(W))

    def dual_objective(self, alpha: np.ndarray) -> float:
        """D(alpha); -inf when alpha is not dual feasible (to a relative 1e-9)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        scale = max(1.0, float(np.max(self.cost)))
        upper = np.zeros_like(alpha)
        upper[np.arange(self.n_samples), self.labels] = self.cost
        if np.any(alpha > upper + 1e-12 * scale) or \
                np.any(np.abs(alpha.sum(axis=1)) > 1e-9 * scale):
            return -np.inf
        W = self.primal_from_dual(alpha)
        e_alpha = float(alpha.sum()) - float(alpha[np.arange(self.n_samples), self.labels].sum())
        return -self.regularizer(W) - e_alpha

    def duality_gap(self, W: np.ndarray, alpha: np.ndarray | None = None) -> float:
        if alpha is None:
            alpha = self.dual_from_primal(W)
        return self.objective(W) - self.dual_objective(alpha)
