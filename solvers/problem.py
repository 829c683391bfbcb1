"""The problems every solver solves, defined once (see ``design.md`` section 2).

Binary labels y_i in {-1, +1}, margin m_i = y_i (w . x_i + b); every linear binary problem is::

    minimize   1/2 (||w||^2 + r b^2)  +  sum_i C_i loss(m_i)          C_i = C * sample_weight_i

The bias enters as the coefficient ``b`` of a constant feature of value ``bias_scale`` (so the
intercept is ``bias_scale * b``): ``regularized`` has r = 1 (LIBLINEAR's ``-B bias_scale``),
``free`` has r = 0, ``none`` fixes b = 0.  Parameters are stored as one vector
``beta = (w, b)`` of length n_features + 1; its last entry stays 0 in mode ``none``.

Losses, with xi = 1 - m:

=================  ==========================================  ==============================
loss               loss(m)                                     dual variable range (per C_i)
=================  ==========================================  ==============================
hinge              max(0, xi)                                  0 <= alpha <= C_i
squared_hinge      max(0, xi)^2                                alpha >= 0
lp                 max(0, xi)^p, 1 <= p <= 2                   alpha >= 0 (<= C_i when p = 1)
modified_huber     max(0, xi)^2 if m >= -1 else -4 m           0 <= alpha <= 4 C_i
least_squares      xi^2                                        alpha free
=================  ==========================================  ==============================

The dual used for certificates is D(alpha) = sum_i alpha_i - 1/2 ||w(alpha)||^2 - 1/2 b(alpha)^2
- sum_i C_i loss*(alpha_i / C_i) with w(alpha) = sum alpha_i y_i x_i and, for the regularized
bias, b(alpha) = bias_scale sum alpha_i y_i; the free bias instead requires sum alpha_i y_i = 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from solvers.core.sparse import csr_matvec, csr_rmatvec
from solvers.data.dataset import as_csr

LOSSES = ("hinge", "squared_hinge", "lp", "modified_huber", "least_squares")
BIAS_MODES = ("regularized", "free", "none")


def loss_value(loss: str, margins: np.ndarray, p: float = 2.0) -> np.ndarray:
    """loss(m) elementwise (the table above)."""
    xi = 1.0 - margins
    if loss == "hinge":
        return np.maximum(xi, 0.0)
    if loss == "squared_hinge":
        return np.square(np.maximum(xi, 0.0))
    if loss == "lp":
        return np.maximum(xi, 0.0) ** p
    if loss == "modified_huber":
        return np.where(margins >= -1.0, np.square(np.maximum(xi, 0.0)), -4.0 * margins)
    if loss == "least_squares":
        return np.square(xi)
    raise ValueError(f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")


def loss_slack_derivative(loss: str, margins: np.ndarray, p: float = 2.0) -> np.ndarray:
    """d loss / d xi at xi = 1 - m (for hinge, the subgradient 1 where xi > 0, else 0)."""
    xi = 1.0 - margins
    if loss == "hinge":
        return (xi > 0.0).astype(np.float64)
    if loss == "squared_hinge":
        return 2.0 * np.maximum(xi, 0.0)
    if loss == "lp":
        if p == 1.0:
            return (xi > 0.0).astype(np.float64)
        return p * np.maximum(xi, 0.0) ** (p - 1.0)
    if loss == "modified_huber":
        return np.where(margins >= -1.0, 2.0 * np.maximum(xi, 0.0), 4.0)
    if loss == "least_squares":
        return 2.0 * xi
    raise ValueError(f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")


def _loss_conjugate_term(loss: str, alpha: np.ndarray, cost: np.ndarray, p: float) -> float:
    """sum_i C_i loss*(alpha_i / C_i), where loss*(v) = sup_xi (v xi - loss(xi)); +inf when
    alpha leaves the loss's dual domain."""
    tol = 1e-12 * max(1.0, float(np.max(cost, initial=0.0)))
    if loss == "hinge" or (loss == "lp" and p == 1.0):
        if np.any(alpha < -tol) or np.any(alpha > cost + tol):
            return np.inf
        return 0.0
    if loss in ("squared_hinge", "modified_huber"):
        upper = np.inf if loss == "squared_hinge" else 4.0 * cost
        if np.any(alpha < -tol) or np.any(alpha > upper + tol):
            return np.inf
        return float(np.sum(np.square(alpha) / (4.0 * cost)))
    if loss == "least_squares":
        return float(np.sum(np.square(alpha) / (4.0 * cost)))
    if loss == "lp":
        if np.any(alpha < -tol):
            return np.inf
        a = np.maximum(alpha, 0.0)
        return float(np.sum(cost * (p - 1.0) * (a / (p * cost)) ** (p / (p - 1.0))))
    raise ValueError(f"unknown loss {loss!r}")


@dataclass
class BinaryProblem:
    """A linear binary problem of the form above.

    Parameters
    ----------
    X : sparse or dense (n_samples, n_features); kept as canonical float64 CSR (sorted,
        duplicate entries summed: a copy only when it is not already), which the row kernels
        of the core rely on
    y : array of +1/-1
    C : regularization weight (> 0)
    loss, bias, bias_scale, p : see the module docstring
    sample_weight : optional per-example cost factors
    """

    X: sp.csr_matrix
    y: np.ndarray
    C: float = 1.0
    loss: str = "squared_hinge"
    bias: str = "regularized"
    bias_scale: float = 1.0
    p: float = 2.0
    sample_weight: np.ndarray | None = None
    cost: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}; expected one of {', '.join(LOSSES)}")
        if self.bias not in BIAS_MODES:
            raise ValueError(
                f"unknown bias mode {self.bias!r}; expected one of {', '.join(BIAS_MODES)}"
            )
        if not self.C > 0:
            raise ValueError("C must be positive")
        if not 1.0 <= self.p <= 2.0:
            raise ValueError("p must lie in [1, 2]")
        self.X = as_csr(self.X)
        y = np.asarray(self.y, dtype=np.float64)
        if y.shape != (self.X.shape[0],):
            raise ValueError("y must have one label per row of X")
        if not np.all(np.abs(y) == 1.0):
            raise ValueError("binary problem labels must be +1 or -1")
        self.y = y
        if self.bias == "regularized" and not self.bias_scale > 0:
            raise ValueError("bias_scale must be positive")
        weight = np.ones(y.shape[0]) if self.sample_weight is None else self.sample_weight
        self.cost = self.C * np.asarray(weight, dtype=np.float64)

    # -- shape and parameter layout --------------------------------------------------------
    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def effective_bias_scale(self) -> float:
        """Value of the constant feature (0 when there is no bias)."""
        if self.bias == "none":
            return 0.0
        return self.bias_scale if self.bias == "regularized" else 1.0

    @property
    def bias_regularization(self) -> float:
        """r in 1/2 (||w||^2 + r b^2)."""
        return 1.0 if self.bias == "regularized" else 0.0

    def zeros(self) -> np.ndarray:
        return np.zeros(self.n_features + 1)

    def split(self, beta: np.ndarray) -> tuple[np.ndarray, float]:
        """(w, intercept) of a parameter vector."""
        return beta[:-1], self.effective_bias_scale * float(beta[-1])

    # -- evaluations -------------------------------------------------------------------------
    def outputs(self, beta: np.ndarray) -> np.ndarray:
        """w . x_i + intercept for every example."""
        w, intercept = self.split(beta)
        return csr_matvec(self.X, w, intercept)

    def margins(self, beta: np.ndarray) -> np.ndarray:
        return self.y * self.outputs(beta)

    def regularizer(self, beta: np.ndarray) -> float:
        w = beta[:-1]
        return 0.5 * (float(w @ w) + self.bias_regularization * float(beta[-1]) ** 2)

    def objective_from_margins(self, beta: np.ndarray, margins: np.ndarray) -> float:
        losses = loss_value(self.loss, margins, self.p)
        return self.regularizer(beta) + float(self.cost @ losses)

    def objective(self, beta: np.ndarray) -> float:
        """The primal objective of ``design.md``."""
        return self.objective_from_margins(beta, self.margins(beta))

    def gradient(self, beta: np.ndarray) -> np.ndarray:
        """Gradient (for hinge and lp with p = 1, a subgradient) of the objective."""
        margins = self.margins(beta)
        coef = -self.cost * loss_slack_derivative(self.loss, margins, self.p) * self.y
        grad = np.empty_like(beta)
        grad[:-1] = beta[:-1] + csr_rmatvec(self.X, coef)
        grad[-1] = (
            self.bias_regularization * beta[-1] + self.effective_bias_scale * coef.sum()
        )
        if self.bias == "none":
            grad[-1] = 0.0
        return grad

    # -- duality ---------------------------------------------------------------------------
    def dual_from_primal(self, beta: np.ndarray) -> np.ndarray:
        """alpha_i = C_i loss'(xi_i): optimal alpha when beta is optimal (the KKT map)."""
        return self.cost * loss_slack_derivative(self.loss, self.margins(beta), self.p)

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """beta(alpha) = (sum alpha_i y_i x_i, bias_scale sum alpha_i y_i) for the regularized
        bias (the free bias is not determined by alpha and is returned as 0)."""
        ay = alpha * self.y
        beta = np.empty(self.n_features + 1)
        beta[:-1] = csr_rmatvec(self.X, ay)
        beta[-1] = self.effective_bias_scale * ay.sum() if self.bias == "regularized" else 0.0
        return beta

    def dual_objective(self, alpha: np.ndarray) -> float:
        """D(alpha); -inf outside the dual domain (including sum alpha_i y_i != 0 for the free
        bias, up to a relative 1e-9)."""
        alpha = np.asarray(alpha, dtype=np.float64)
        conj = _loss_conjugate_term(self.loss, alpha, self.cost, self.p)
        if not np.isfinite(conj):
            return -np.inf
        if self.bias == "free":
            balance = float(alpha @ self.y)
            if abs(balance) > 1e-9 * max(1.0, float(np.abs(alpha).sum())):
                return -np.inf
        beta = self.primal_from_dual(alpha)
        return float(alpha.sum()) - self.regularizer(beta) - conj

    def duality_gap(self, beta: np.ndarray, alpha: np.ndarray | None = None) -> float:
        """P(beta) - D(alpha) with alpha from the KKT map by default (+inf when that alpha is
        not dual feasible, as for the free bias away from the optimum)."""
        if alpha is None:
            alpha = self.dual_from_primal(beta)
        return self.objective(beta) - self.dual_objective(alpha)
