"""The linear binary problem every solver solves, defined once (``docs/design.md`` section 2.1).

Binary labels y_i in {-1, +1}, margin m_i = y_i (w . x_i + b); every linear binary problem is::

    minimize   P(beta) = 1/2 (||w||^2 + r b^2)  +  sum_i C_i L(1 - m_i)     C_i = C * weight_i

The bias enters as the coefficient ``b`` of a constant feature of value ``bias_scale`` (so the
intercept is ``bias_scale * b``): ``regularized`` has r = 1 (LIBLINEAR's ``-B bias_scale``),
``free`` has r = 0 (the constant feature is 1), ``none`` fixes b = 0.  Parameters are one vector
``beta = (w, b)`` of length n_features + 1; its last entry stays 0 in mode ``none``.  The losses
and their conjugates are :mod:`solvers.losses`.

Dual (certificates)::

    D(alpha) = sum_i alpha_i - 1/2 ||beta(alpha)||_r^2 - sum_i C_i L*(alpha_i / C_i)

with beta(alpha) = (sum_i alpha_i y_i x_i, s sum_i alpha_i y_i) for the regularized bias (the
bias entry drops for ``none``), alpha_i in C_i times the loss's dual range, and, for the free
bias, the constraint sum_i alpha_i y_i = 0 instead of the bias entry.  P(beta) - D(alpha) >= 0
bounds the suboptimality of beta for any dual-feasible alpha.  The KKT map alpha_i = C_i
L'(xi_i) gives the optimal alpha at the optimum.  Away from it, with a free bias, that alpha
does not balance the classes: :meth:`BinaryProblem.balance` repairs it by the shift
alpha(s) = clip(alpha + s y, lower, upper), s the root of the non-decreasing, piecewise-linear
g(s) = y'alpha(s) (found exactly from its sorted breakpoints; it exists whenever both classes
are present and the dual range has room on each side).  At the optimum s = 0 and nothing moves,
so the gap is finite everywhere and zero at the optimum.

Also here, for the solver families that need them: a cache of the outputs of the last point
(objective, then gradient at the same point, as LIBLINEAR's ``l2r_l2_svc_fun`` does), the
empirical risk and its subgradient (a cutting plane, in ``docs/design.md``'s C scale), and the
dual as a QP in standard form with its KKT residuals, and for a primal Newton method on a
twice-differentiable loss (the logistic loss; the squared hinge's generalized Hessian) the
Hessian I_r + X~' diag(C_i L''(xi_i)) X~ as products and its diagonal (mfn and the interior
point solve their own systems in their Numba kernels, mfn's on its active rows, the interior
point's on its normal equations).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numba import njit

from solvers.core.linalg import dot
from solvers.core.sparse import (
    csr_matvec,
    csr_rmatvec,
    use_parallel,
    weighted_gram_matvec,
)
from solvers.data.dataset import RowMatrix, as_csr
from solvers.losses import Loss, canonical, get_loss, is_residual
from solvers.problems.oracles import binary_oracle

BIAS_MODES = ("regularized", "free", "none")


def loss_value(loss: str, margins: np.ndarray, p: float = 2.0) -> np.ndarray:
    """L(1 - m) elementwise (the loss table of :mod:`solvers.losses`)."""
    return get_loss(loss, p).margin_value(margins)


def balancing_shift(alpha: np.ndarray, y: np.ndarray, lower: np.ndarray,
                    upper: np.ndarray) -> float | None:
    """The s with sum_i y_i clip(alpha_i + s y_i, lower_i, upper_i) = 0, or None if there is
    none.

    Each term is constant outside an interval (a_i, b_i) of s and has slope y_i^2 = 1 inside
    it: a_i = lower_i - alpha_i, b_i = upper_i - alpha_i for y_i = +1 and a_i = alpha_i -
    upper_i, b_i = alpha_i - lower_i for y_i = -1.  So g(s) is continuous, non-decreasing and
    piecewise linear with slope #{i: a_i < s < b_i}; the root is found on the sorted breakpoints
    on the side of 0 where g changes sign, exactly (no iteration).
    """
    alpha, y, lower, upper = (np.ascontiguousarray(v, dtype=np.float64)
                              for v in (alpha, y, lower, upper))
    g0, direction, slope, events, changes = _balancing_events(alpha, y, lower, upper)
    if g0 == 0.0:
        return 0.0
    order = np.argsort(events)  # ties: zero-length segments, any order gives the root
    s, found = _balancing_walk(abs(g0), direction, slope, events, changes, order)
    return s if found else None


# The NumPy version these replace built ten temporaries of n entries, three times the cost of
# its sort on w8a (bench/history/measurements.json, binary-threshold-kernels); NumPy's sort
# stays (Numba's argsort took longer).

@njit(cache=True, nogil=True)
def _balancing_events(alpha, y, lower, upper, forced=0.0):
    """g(0), the walking direction, the slope at 0 and the breakpoints with their slope
    changes, in one pass.  ``forced`` (+1 or -1): walk that way whatever the sign of this
    g(0) (a partition's share of a distributed g, whose sign only the sum decides)."""
    n = alpha.shape[0]
    g0 = 0.0
    for i in range(n):
        g0 += y[i] * min(max(alpha[i], lower[i]), upper[i])
    direction = 1.0 if g0 < 0.0 else -1.0
    if forced != 0.0:
        direction = forced
    # walk s = direction * t, t >= 0; the term slopes in t are the same (+1 inside)
    events = np.empty(2 * n)
    changes = np.empty(2 * n)
    m = 0
    slope = 0.0
    if g0 == 0.0 and forced == 0.0:
        return g0, direction, slope, events[:0], changes[:0]
    for i in range(n):
        if y[i] > 0.0:
            a, b = lower[i] - alpha[i], upper[i] - alpha[i]
        else:
            a, b = alpha[i] - upper[i], alpha[i] - lower[i]
        if direction < 0.0:
            a, b = -b, -a
        if a <= 0.0 and b > 0.0:
            slope += 1.0
        if a > 0.0 and np.isfinite(a):
            events[m] = a
            changes[m] = 1.0
            m += 1
        if b > 0.0 and np.isfinite(b):
            events[m] = b
            changes[m] = -1.0
            m += 1
    return g0, direction, slope, events[:m], changes[:m]


@njit(cache=True, nogil=True)
def _balancing_walk(remaining, direction, slope, events, changes, order):
    """|g| falls at rate ``slope`` on each segment between consecutive breakpoints; the root
    lies on the first segment (of positive slope) whose end covers |g(0)|."""
    start = 0.0
    covered = 0.0
    for k in range(order.shape[0]):
        t = events[order[k]]
        segment = slope * (t - start)
        if slope > 0.0 and covered + segment >= remaining:
            return direction * (start + (remaining - covered) / slope), True
        covered += segment
        start = t
        slope += changes[order[k]]
    if slope > 0.0:  # unbounded terms (least squares): linear past the last event
        return direction * (start + (remaining - covered) / slope), True
    return 0.0, False


@dataclass
class BinaryProblem(RowMatrix):
    """A linear binary problem of the form above.

    Parameters
    ----------
    X : sparse or dense (n_samples, n_features); kept as canonical float64 CSR (sorted,
        duplicate entries summed: a copy only when it is not already), which the row kernels
        of the core rely on
    y : array of +1/-1
    C : regularization weight (> 0)
    loss, bias, bias_scale, p : see the module docstring (``p`` only for ``loss="lp"``)
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
    loss_function: Loss = field(init=False, repr=False)

    def __post_init__(self):
        if not 1.0 <= self.p <= 2.0:
            raise ValueError("p must lie in [1, 2]")
        # one name per loss: lp at p = 1 or 2 is the hinge or the squared hinge (raises for an
        # unknown loss)
        self.loss, self.p = canonical(self.loss, self.p)
        if is_residual(self.loss):
            raise ValueError(f"loss {self.loss!r} is a regression loss of the residual y - "
                             f"f(x): a binary problem takes a margin loss (a regression is a "
                             f"solvers.problems.RegressionProblem)")
        if self.bias not in BIAS_MODES:
            raise ValueError(
                f"unknown bias mode {self.bias!r}; expected one of {', '.join(BIAS_MODES)}"
            )
        if not self.C > 0:
            raise ValueError("C must be positive")
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
        self.loss_function = get_loss(self.loss, self.p)
        self._cache_beta: np.ndarray | None = None
        self._cache_outputs: np.ndarray | None = None
        self._squared: sp.csr_matrix | None = None

    # -- shape and parameter layout --------------------------------------------------------
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

    def join(self, w: np.ndarray, intercept: float) -> np.ndarray:
        """The parameter vector of weights ``w`` and an intercept (inverse of :meth:`split`;
        the intercept must be 0 without a bias)."""
        beta = np.empty(self.n_features + 1)
        beta[:-1] = w
        scale = self.effective_bias_scale
        if scale == 0.0:
            if intercept != 0.0:
                raise ValueError("a problem without a bias has no intercept")
            beta[-1] = 0.0
        else:
            beta[-1] = intercept / scale
        return beta

    def with_C(self, C: float) -> BinaryProblem:
        """The same problem at another C (the data is shared, not copied)."""
        return BinaryProblem(self.X, self.y, C=float(C), loss=self.loss, bias=self.bias,
                             bias_scale=self.bias_scale, p=self.p,
                             sample_weight=self.sample_weight)

    # -- evaluations -------------------------------------------------------------------------
    def outputs(self, beta: np.ndarray) -> np.ndarray:
        """w . x_i + intercept for every example (cached for the last point)."""
        if self._cache_beta is not None and np.array_equal(beta, self._cache_beta):
            return self._cache_outputs
        w, intercept = self.split(beta)
        outputs = csr_matvec(self.X, w, intercept)
        self._cache_beta = np.array(beta, dtype=np.float64)
        self._cache_outputs = outputs
        return outputs

    def margins(self, beta: np.ndarray) -> np.ndarray:
        return self.y * self.outputs(beta)

    def slacks(self, beta: np.ndarray) -> np.ndarray:
        """xi_i = 1 - m_i."""
        return 1.0 - self.margins(beta)

    def regularizer(self, beta: np.ndarray) -> float:
        w = beta[:-1]
        b = float(beta[-1])  # b * b, correctly rounded (libm's pow(b, 2) is within an ulp)
        return 0.5 * (dot(w, w) + self.bias_regularization * (b * b))

    def objective_from_slacks(self, beta: np.ndarray, xi: np.ndarray,
                              cost: np.ndarray | None = None, loss: Loss | None = None) -> float:
        """P(beta) from the slacks xi_i = 1 - m_i a solver already has (``cost`` permuted
        alike when the solver keeps the examples in another order, or scaled to another C
        along a path); ``loss`` evaluates a surrogate (a smoothed hinge) with the same
        regularizer."""
        cost = self.cost if cost is None else cost
        loss = self.loss_function if loss is None else loss
        return self.regularizer(beta) + loss.sum(xi, cost)

    def objective_from_margins(self, beta: np.ndarray, margins: np.ndarray) -> float:
        return self.objective_from_slacks(beta, 1.0 - margins)

    def objective(self, beta: np.ndarray) -> float:
        """The primal objective of ``docs/design.md``."""
        return self.objective_from_slacks(beta, self.slacks(beta))

    def risk(self, beta: np.ndarray) -> float:
        """The empirical risk R(beta) = sum_i C_i L(1 - m_i)."""
        return self.loss_function.sum(self.slacks(beta), self.cost)

    def _adjoint(self, coef: np.ndarray) -> np.ndarray:
        """sum_i coef_i x~_i as a parameter vector (bias entry 0 without a bias)."""
        out = np.empty(self.n_features + 1)
        out[:-1] = csr_rmatvec(self.X, coef)
        out[-1] = self.effective_bias_scale * float(coef.sum())
        return out

    def risk_subgradient(self, beta: np.ndarray) -> tuple[float, np.ndarray]:
        """(R(beta), a) with a = -sum_i C_i L'(xi_i) y_i x~_i a subgradient of R at beta: the
        cutting plane R(v) >= R(beta) + a'(v - beta) of the cutting-plane methods, in
        ``docs/design.md``'s C scale (Joachims' C_s / n = C)."""
        xi = self.slacks(beta)
        coef = -self.cost * self.loss_function.derivative(xi) * self.y
        return self.loss_function.sum(xi, self.cost), self._adjoint(coef)

    def _add_regularizer_term(self, out: np.ndarray, v: np.ndarray) -> np.ndarray:
        """out + I_r v, the bias entry held at 0 without a bias."""
        out[:-1] += v[:-1]
        out[-1] += self.bias_regularization * v[-1]
        if self.bias == "none":
            out[-1] = 0.0
        return out

    def risk_oracle(self, beta: np.ndarray, margins: np.ndarray | None = None,
                    want_cut: bool = True, parallel: bool | None = None
                    ) -> tuple[float, np.ndarray | None, np.ndarray]:
        """(R(beta), a, margins) in one pass over the rows
        (:func:`solvers.problems.oracles.binary_oracle`): the risk, the cut of
        :meth:`risk_subgradient` and the margins y_i (x~_i . beta); with ``margins`` given
        (the margins at beta, e.g. interpolated) only R and the cut are computed.
        ``parallel``: the kernel's form; None chooses by :meth:`oracle_parallel_allowed`."""
        s = self.effective_bias_scale
        if self.loss_function.code is None:
            raise ValueError(f"loss {self.loss!r} has no kernel code: the one-pass risk oracle "
                             f"runs the coded losses only")
        if parallel is None:
            parallel = self.oracle_parallel_allowed()
        return binary_oracle(self.X, self.y, self.cost, self.loss_function.code,
                             self.loss_function.p, s, beta, margins, want_cut, parallel)

    def oracle_parallel_allowed(self) -> bool:
        """Whether the parallel oracle may pay (:func:`solvers.core.sparse.use_parallel`)."""
        return use_parallel(self.X.nnz, self.n_features + 1)

    def gradient(self, beta: np.ndarray) -> np.ndarray:
        """Gradient (for hinge and lp with p = 1, a subgradient) of the objective."""
        _, grad = self.risk_subgradient(beta)
        return self._add_regularizer_term(grad, beta)

    def first_order(self, beta: np.ndarray, xi: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(alpha, beta(alpha), gradient) at ``beta`` from its slacks ``xi``, in one pass over
        the rows: the KKT map alpha_i = C_i L'(xi_i), its image beta(alpha) =
        :meth:`primal_from_dual` (alpha) and the gradient I_r beta - sum_i alpha_i y_i x~_i
        (:meth:`gradient`): a primal method's step and its certificate from one product."""
        alpha = self.cost * self.loss_function.derivative(xi)
        image = self._adjoint(alpha * self.y)
        gradient = self._add_regularizer_term(-image, beta)
        if self.bias != "regularized":
            image[-1] = 0.0
        return alpha, image, gradient

    # -- second order (a primal Newton method) ---------------------------------------------
    def curvature(self, xi: np.ndarray) -> np.ndarray:
        """d_i = C_i L''(xi_i) at the slacks ``xi``: the weights of the Hessian
        I_r + sum_i d_i x~_i x~_i' (the generalized one where L' has a kink)."""
        return self.cost * self.loss_function.curvature(xi)

    def hessian_product(self, curvature: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(I_r + X~' diag(curvature) X~) v: one pass over the rows
        (:func:`solvers.core.sparse.weighted_gram_matvec`; the bias entry held at 0 without a
        bias)."""
        X = self.X
        out = np.empty(self.n_features + 1)
        weighted_gram_matvec(X.indptr, X.indices, X.data, curvature,
                             np.ascontiguousarray(v, dtype=np.float64),
                             self.effective_bias_scale, out)
        return self._add_regularizer_term(out, v)

    def hessian_diagonal(self, curvature: np.ndarray) -> np.ndarray:
        """The diagonal of that Hessian: r_j + sum_i d_i x~_ij^2 (a preconditioner)."""
        out = np.empty(self.n_features + 1)
        out[:-1] = csr_rmatvec(self.squared(), curvature) + 1.0
        s = self.effective_bias_scale
        out[-1] = self.bias_regularization + s * s * float(curvature.sum())
        if self.bias == "none":
            out[-1] = 1.0
        return out

    def squared(self) -> sp.csr_matrix:
        """X with its entries squared (the Hessian diagonal's), kept for the next call: the
        canonical X's own structure, no scipy product (whose set-up costs a small set more
        than the products it serves)."""
        if self._squared is None:
            X = self.X
            self._squared = sp.csr_matrix((X.data * X.data, X.indices, X.indptr), shape=X.shape)
        return self._squared

    def squared_values(self) -> np.ndarray:
        """X's stored values squared (:meth:`squared`'s), without building a matrix (a
        compiled loop reads the values beside X's own indices)."""
        if self._squared is not None:
            return self._squared.data
        return self.X.data * self.X.data

    # -- duality ---------------------------------------------------------------------------
    def dual_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) of each alpha_i."""
        loss = self.loss_function
        return loss.dual_lower(self.cost), loss.dual_upper(self.cost)

    def dual_from_primal(self, beta: np.ndarray) -> np.ndarray:
        """alpha_i = C_i L'(xi_i): optimal alpha when beta is optimal (the KKT map)."""
        return self.cost * self.loss_function.derivative(self.slacks(beta))

    def balance(self, alpha: np.ndarray) -> np.ndarray:
        """alpha made dual feasible for the free bias (sum alpha_i y_i = 0) by the shift of the
        module docstring; other bias modes have no such constraint and get alpha back.  Raises
        ValueError when no shift balances it (one class only)."""
        if self.bias != "free":
            return alpha
        lower, upper = self.dual_bounds()
        s = balancing_shift(alpha, self.y, lower, upper)
        if s is None:
            raise ValueError("no dual point balances the classes (is only one class present?)")
        return np.clip(alpha + s * self.y, lower, upper)

    def primal_from_dual(self, alpha: np.ndarray) -> np.ndarray:
        """beta(alpha) = (sum alpha_i y_i x_i, bias_scale sum alpha_i y_i) for the regularized
        bias (the free bias is not determined by alpha and is returned as 0)."""
        beta = self._adjoint(alpha * self.y)
        if self.bias != "regularized":
            beta[-1] = 0.0
        return beta

    def dual_objective(self, alpha: np.ndarray, beta_alpha: np.ndarray | None = None,
                       cost: np.ndarray | None = None) -> float:
        """D(alpha); -inf outside the dual domain (including sum alpha_i y_i != 0 for the free
        bias, up to a relative 1e-9).  ``beta_alpha`` = :meth:`primal_from_dual` (alpha) and
        ``cost`` (permuted like alpha) when the caller has them."""
        alpha = np.asarray(alpha, dtype=np.float64)
        cost = self.cost if cost is None else cost
        conj = self.loss_function.conjugate_sum(alpha, cost)
        if not np.isfinite(conj):
            return -np.inf
        if self.bias == "free" and beta_alpha is None:
            balance = dot(alpha, self.y)
            if abs(balance) > 1e-9 * max(1.0, float(np.abs(alpha).sum())):
                return -np.inf
        if beta_alpha is None:
            beta_alpha = self.primal_from_dual(alpha)
        return float(alpha.sum()) - self.regularizer(beta_alpha) - conj

    def duality_gap(self, beta: np.ndarray, alpha: np.ndarray | None = None) -> float:
        """P(beta) - D(alpha), alpha from the KKT map by default and, for the free bias, made
        feasible by :meth:`balance`: finite at any beta, an upper bound on P(beta) - P*."""
        if alpha is None:
            alpha = self.dual_from_primal(beta)
        if self.bias == "free":
            alpha = self.balance(np.asarray(alpha, dtype=np.float64))
        return self.objective(beta) - self.dual_objective(alpha)

    def relative_duality_gap(self, beta: np.ndarray, alpha: np.ndarray | None = None) -> float:
        return self.duality_gap(beta, alpha) / max(abs(self.objective(beta)), 1e-300)

    def dual_qp(self) -> DualQP:
        """The dual as a QP in standard form (quadratic losses and the hinge)."""
        return DualQP(self)


class DualQP:
    """D as a QP in standard form::

        minimize  f(alpha) = 1/2 alpha' Q alpha - e' alpha
        subject to lower <= alpha <= upper,   y' alpha = 0 (free bias only)

    Q = Y X~_r X~_r' Y + diag(1 / (2 C_i)) (the diagonal only for the quadratic losses:
    squared hinge, modified Huber, least squares), with X~_r the rows with the bias column of
    value s for the regularized bias and without it otherwise; f(alpha) = -D(alpha).  Q is
    applied through X and y (two sparse products), never formed.
    """

    def __init__(self, problem: BinaryProblem):
        quadratic = problem.loss_function.dual_quadratic
        if quadratic is None:
            raise ValueError(f"the dual of loss {problem.loss!r} (p = {problem.p:g}) is not a "
                             f"QP")
        self.problem = problem
        self.lower, self.upper = problem.dual_bounds()
        # C_i L*(alpha_i / C_i) = k alpha_i^2 / C_i: 2 k / C_i on Q's diagonal (k = 0 for the
        # hinge, 1/4 for the quadratic losses)
        self.diagonal_shift = np.zeros(problem.n_samples) if quadratic == 0.0 else \
            2.0 * quadratic / problem.cost
        self.equality = problem.bias == "free"

    def matvec(self, v: np.ndarray) -> np.ndarray:
        p = self.problem
        beta = p._adjoint(v * p.y)
        if p.bias != "regularized":
            beta[-1] = 0.0
        w, intercept = p.split(beta)
        return p.y * csr_matvec(p.X, w, intercept) + self.diagonal_shift * v

    def diagonal(self) -> np.ndarray:
        p = self.problem
        norms = np.asarray(p.X.multiply(p.X).sum(axis=1)).ravel()
        if p.bias == "regularized":
            norms = norms + p.bias_scale ** 2
        return norms + self.diagonal_shift

    def objective(self, alpha: np.ndarray) -> float:
        return 0.5 * dot(alpha, self.matvec(alpha)) - float(alpha.sum())

    def gradient(self, alpha: np.ndarray) -> np.ndarray:
        return self.matvec(alpha) - 1.0

    def kkt_residuals(self, alpha: np.ndarray) -> dict[str, float]:
        """How far alpha is from optimal: ``bounds`` (largest bound violation),
        ``equality`` (|y'alpha|, free bias), ``projected_gradient`` (the largest violation of
        the optimality conditions, LIBSVM's m(alpha) - M(alpha) when there is an equality
        constraint; for box constraints alone the largest |g_i| at a free alpha_i or wrong-
        signed g_i at a bound)."""
        g = self.gradient(alpha)
        # an alpha within a relative 1e-8 of a bound is at it (interior-point iterates never
        # reach the bounds exactly)
        finite = np.concatenate((self.lower[np.isfinite(self.lower)],
                                 self.upper[np.isfinite(self.upper)]))
        tol = 1e-8 * max(1.0, float(np.max(np.abs(finite), initial=0.0)),
                         float(np.max(np.abs(alpha), initial=0.0)))
        at_lower = alpha <= self.lower + tol
        at_upper = alpha >= self.upper - tol
        bounds = float(max(np.max(self.lower - alpha, initial=0.0),
                           np.max(alpha - self.upper, initial=0.0), 0.0))
        if self.equality:
            y = self.problem.y
            # -y_i g_i over the indices that may move up in y_i alpha_i, and down
            score = -y * g
            can_up = np.where(y > 0, ~at_upper, ~at_lower)
            can_down = np.where(y > 0, ~at_lower, ~at_upper)
            top = float(np.max(score[can_up], initial=-np.inf))
            bottom = float(np.min(score[can_down], initial=np.inf))
            violation = max(top - bottom, 0.0) if np.isfinite(top - bottom) else 0.0
            return {"bounds": bounds, "equality": abs(dot(y, alpha)),
                    "projected_gradient": violation}
        violation = np.where(at_lower, np.maximum(-g, 0.0),
                             np.where(at_upper, np.maximum(g, 0.0), np.abs(g)))
        return {"bounds": bounds, "equality": 0.0,
                "projected_gradient": float(np.max(violation, initial=0.0))}
