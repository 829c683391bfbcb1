"""Linear support vector regression (``docs/design.md`` section 2.1's problem with a residual
loss; Ho & Lin, "Large-scale linear support vector regression", JMLR 13 (2012), eqs. (2)-(4);
LIBLINEAR ``-s 11/12/13`` with ``-p epsilon``).

Real labels y_i, output f(x) = w . x + b, residual r_i = y_i - f(x_i), C_i = C * weight_i::

    minimize   P(beta) = 1/2 (||w||^2 + r b^2)  +  sum_i C_i L(r_i)

with L the epsilon-insensitive loss max(0, |r| - eps) or its square (:mod:`solvers.losses.
residual`), the bias the coefficient b of a constant feature of value ``bias_scale``
(``regularized``: r = 1, LIBLINEAR's ``-B``; ``none``: b = 0).  LIBLINEAR's objective and C
exactly (its ``l2r_l2_svr_fun`` and ``solve_l2r_l1l2_svr``), so objectives compare as they are.

Dual (Ho & Lin eq. (4) negated, one signed variable b_i per example, w(b) = sum_i b_i x~_i)::

    D(b) = sum_i (y_i b_i - eps |b_i| - C_i l*(|b_i| / C_i)) - 1/2 ||w(b)||^2

on -U_i <= b_i <= U_i (U_i = C_i, l* = 0 for the L1 loss; U_i = inf, C_i l*(v/C_i) =
v^2/(4 C_i) for the L2 loss, Ho & Lin's lambda_i = 1/(2 C_i)).  P(beta) - D(b) >= 0 for every b
in the box, and the KKT map b_i = C_i L'(r_i) gives the optimal b at the optimal beta: the
certified relative duality gap (P - D)/P of every regression solver comes from here.

The same problem as 2n margin terms (:meth:`RegressionProblem.terms`): example i gives the
terms (x~_i, label +1, target y_i - eps) and (x~_i, label -1, target -y_i - eps), slacks
xi = target - label * x~_i . beta, each with the margin loss of L (the hinge or the squared
hinge); a dual point of the terms (alpha+, alpha-) is b = alpha+ - alpha-.  Solvers that run on
margin terms (mfn's engine) solve it in that form; :class:`RegressionTerms` evaluates the
objective and the dual from the terms' slacks and multipliers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from solvers.core.linalg import dot
from solvers.core.sparse import csr_matvec, csr_rmatvec
from solvers.data.dataset import RowMatrix, as_csr
from solvers.losses import DEFAULT_EPSILON, Loss, get_loss, is_residual

REGRESSION_BIAS_MODES = ("regularized", "none")


@dataclass
class RegressionProblem(RowMatrix):
    """A linear regression problem of the form above.

    Parameters
    ----------
    X : sparse or dense (n_samples, n_features), kept as canonical float64 CSR
    y : real labels (finite)
    C : regularization weight (> 0)
    loss : "epsilon_insensitive" (L1) or "squared_epsilon_insensitive" (L2)
    epsilon : the tube's half width (>= 0; LIBLINEAR's -p, default 0.1)
    bias, bias_scale : "regularized" (a constant feature of value ``bias_scale``, LIBLINEAR's
        -B) or "none"
    sample_weight : optional per-example cost factors (C_i = C * weight_i)
    """

    X: sp.csr_matrix
    y: np.ndarray
    C: float = 1.0
    loss: str = "squared_epsilon_insensitive"
    epsilon: float = DEFAULT_EPSILON
    bias: str = "regularized"
    bias_scale: float = 1.0
    sample_weight: np.ndarray | None = None
    cost: np.ndarray = field(init=False, repr=False)
    loss_function: Loss = field(init=False, repr=False)

    def __post_init__(self):
        if not is_residual(self.loss):
            raise ValueError(f"loss {self.loss!r} is not a regression loss: a regression "
                             f"problem takes 'epsilon_insensitive' or "
                             f"'squared_epsilon_insensitive' (a margin loss needs +-1 labels)")
        if self.bias not in REGRESSION_BIAS_MODES:
            raise ValueError(f"bias {self.bias!r}: a regression problem has a regularized "
                             f"bias (LIBLINEAR's -B) or none; a free bias adds sum_i b_i = 0 "
                             f"to the dual, which no regression solver here keeps")
        if not self.C > 0:
            raise ValueError("C must be positive")
        if self.bias == "regularized" and not self.bias_scale > 0:
            raise ValueError("bias_scale must be positive")
        self.loss_function = get_loss(self.loss, epsilon=self.epsilon)
        self.epsilon = self.loss_function.epsilon
        self.X = as_csr(self.X)
        y = np.asarray(self.y, dtype=np.float64)
        if y.shape != (self.X.shape[0],):
            raise ValueError("y must have one label per row of X")
        if not np.all(np.isfinite(y)):
            raise ValueError("regression labels must be finite numbers")
        self.y = y
        weight = np.ones(y.shape[0]) if self.sample_weight is None else self.sample_weight
        self.cost = self.C * np.asarray(weight, dtype=np.float64)

    # -- layout (as BinaryProblem's: beta = (w, b), the intercept bias_scale * b) ------------
    @property
    def effective_bias_scale(self) -> float:
        return self.bias_scale if self.bias == "regularized" else 0.0

    def zeros(self) -> np.ndarray:
        return np.zeros(self.n_features + 1)

    def split(self, beta: np.ndarray) -> tuple[np.ndarray, float]:
        """(w, intercept) of a parameter vector."""
        return beta[:-1], self.effective_bias_scale * float(beta[-1])

    def with_C(self, C: float) -> RegressionProblem:
        return RegressionProblem(self.X, self.y, C=float(C), loss=self.loss,
                                 epsilon=self.epsilon, bias=self.bias,
                                 bias_scale=self.bias_scale, sample_weight=self.sample_weight)

    # -- primal ------------------------------------------------------------------------------
    def outputs(self, beta: np.ndarray) -> np.ndarray:
        w, intercept = self.split(beta)
        return csr_matvec(self.X, w, intercept)

    def residuals(self, beta: np.ndarray) -> np.ndarray:
        """r_i = y_i - f(x_i)."""
        return self.y - self.outputs(beta)

    def regularizer(self, beta: np.ndarray) -> float:
        w = beta[:-1]
        r = 1.0 if self.bias == "regularized" else 0.0
        b = float(beta[-1])  # b * b, correctly rounded (libm's pow(b, 2) is within an ulp)
        return 0.5 * (dot(w, w) + r * (b * b))

    def objective_from_residuals(self, beta: np.ndarray, residuals: np.ndarray) -> float:
        return self.regularizer(beta) + self.loss_function.sum(residuals, self.cost)

    def objective(self, beta: np.ndarray) -> float:
        """P(beta), LIBLINEAR's objective."""
        return self.objective_from_residuals(beta, self.residuals(beta))

    def gradient(self, beta: np.ndarray) -> np.ndarray:
        """The gradient (a subgradient for the L1 loss) of P."""
        coef = -self.cost * self.loss_function.derivative(self.residuals(beta))
        out = self.primal_from_dual(coef)
        out[:-1] += beta[:-1]
        if self.bias == "regularized":
            out[-1] += beta[-1]
        return out

    # -- dual --------------------------------------------------------------------------------
    def dual_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) of each b_i: [-C_i, C_i] (L1) or unbounded (L2)."""
        loss = self.loss_function
        return loss.dual_lower(self.cost), loss.dual_upper(self.cost)

    def dual_from_primal(self, beta: np.ndarray) -> np.ndarray:
        """b_i = C_i L'(r_i), the KKT map (optimal b at the optimal beta)."""
        return self.cost * self.loss_function.derivative(self.residuals(beta))

    def primal_from_dual(self, b: np.ndarray) -> np.ndarray:
        """w(b) = sum_i b_i x~_i as a parameter vector (bias entry 0 without a bias)."""
        out = np.empty(self.n_features + 1)
        out[:-1] = csr_rmatvec(self.X, np.ascontiguousarray(b, dtype=np.float64))
        out[-1] = self.effective_bias_scale * float(np.sum(b))
        return out

    def dual_objective(self, b: np.ndarray, beta_b: np.ndarray | None = None) -> float:
        """D(b); -inf outside the box.  ``beta_b`` = :meth:`primal_from_dual` (b) when the
        caller has it."""
        b = np.asarray(b, dtype=np.float64)
        conj = self.loss_function.conjugate_sum(b, self.cost)
        if not np.isfinite(conj):
            return -np.inf
        if beta_b is None:
            beta_b = self.primal_from_dual(b)
        return dot(self.y, b) - conj - self.regularizer(beta_b)

    def duality_gap(self, beta: np.ndarray, b: np.ndarray | None = None) -> float:
        """P(beta) - D(b), b from the KKT map by default: an upper bound on P(beta) - P*."""
        if b is None:
            b = self.dual_from_primal(beta)
        return self.objective(beta) - self.dual_objective(b)

    def relative_duality_gap(self, beta: np.ndarray, b: np.ndarray | None = None) -> float:
        return self.objective_and_gap(beta, b)[1]

    def objective_and_gap(self, beta: np.ndarray, b: np.ndarray | None = None
                          ) -> tuple[float, float]:
        """(P(beta), the relative duality gap at beta), b from the KKT map by default: what
        :meth:`objective` and :meth:`relative_duality_gap` give, the same numbers, from one
        residual pass where they took four (a small set's solve ends with them, issue 47)."""
        residuals = self.residuals(beta)
        primal = self.objective_from_residuals(beta, residuals)
        if b is None:
            b = self.cost * self.loss_function.derivative(residuals)
        return primal, (primal - self.dual_objective(b)) / max(abs(primal), 1e-300)

    # -- the 2n margin terms -----------------------------------------------------------------
    def term_labels(self) -> np.ndarray:
        """+1, -1 for each example, terms 2i and 2i + 1."""
        return np.tile(np.array([1.0, -1.0]), self.n_samples)

    def term_targets(self) -> np.ndarray:
        """y_i - eps and -y_i - eps, terms 2i and 2i + 1 (the margin problem's 1)."""
        targets = np.empty(2 * self.n_samples)
        targets[0::2] = self.y - self.epsilon
        targets[1::2] = -self.y - self.epsilon
        return targets

    def terms(self, order: np.ndarray | None = None) -> RegressionTerms:
        """The problem as its 2n margin terms, in the examples' ``order`` (a permutation the
        solver keeps its rows in; None: as given)."""
        return RegressionTerms(self, order)


class RegressionTerms:
    """The objective and the dual of a :class:`RegressionProblem` evaluated from its margin
    terms (the module docstring): slacks xi_k = target_k - label_k x~_k . beta, multipliers
    alpha_k >= 0 of the margin loss, terms in the order of the examples ``order`` (terms 2j,
    2j + 1 belong to example order[j]).  What an engine that runs on margin terms reads
    (``C``, ``objective_from_slacks``, ``dual_objective``), as it reads an ordinal problem."""

    def __init__(self, problem: RegressionProblem, order: np.ndarray | None = None):
        self.problem = problem
        self.C = problem.C
        self.loss_function = problem.loss_function.margin_loss
        examples = np.arange(problem.n_samples) if order is None else order
        self.targets = problem.term_targets().reshape(-1, 2)[examples].ravel()
        self.cost = np.repeat(problem.cost[examples], 2)

    def objective_from_slacks(self, beta: np.ndarray, xi: np.ndarray,
                              cost: np.ndarray | None = None, loss: Loss | None = None) -> float:
        """P(beta) from the terms' slacks (``cost``: the terms' costs at another C along a
        path; ``loss``: a margin loss in place of the problem's)."""
        cost = self.cost if cost is None else cost
        loss = self.loss_function if loss is None else loss
        return self.problem.regularizer(beta) + loss.sum(xi, cost)

    def dual_objective(self, alpha: np.ndarray, beta_alpha: np.ndarray,
                       cost: np.ndarray | None = None) -> float:
        """D at the terms' multipliers alpha >= 0 (b_i = alpha_2j - alpha_2j+1): sum_k
        alpha_k target_k - sum_k C_k l*(alpha_k / C_k) - 1/2 ||beta(alpha)||^2, with
        ``beta_alpha`` = sum_k alpha_k label_k x~_k (= w(b)).  It is D(b) whenever at most
        one of each pair is nonzero (the KKT map's), and a lower bound on it otherwise."""
        cost = self.cost if cost is None else cost
        conj = self.loss_function.conjugate_sum(alpha, cost)
        if not np.isfinite(conj):
            return -np.inf
        return dot(self.targets, alpha) - conj - self.problem.regularizer(beta_alpha)
