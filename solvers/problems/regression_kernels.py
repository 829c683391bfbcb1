""":class:`~solvers.problems.RegressionProblem`'s objective and dual as Numba functions, for a
driver compiled whole (a small problem's dual coordinate descent with its gap checks,
``solvers.dual_cd.compiled``): the same formulas, by the same core and loss kernels, as the
problem's ``objective_from_residuals`` and ``dual_objective``, callable from a ``@njit`` loop.

The residual loss is two terms of its margin loss (``Loss.margin_loss``, ``code``: the hinge
for the L1 loss, the squared hinge for the L2 loss): L(r) = l(r - eps) + l(-r - eps), and
C_i L*(b_i / C_i) = eps |b_i| + C_i l*(|b_i| / C_i) (``docs/design.md`` section 2.2).  ``r``
is the bias's regularization (1 regularized, 0 none), ``s`` the bias column's value.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.core.linalg import dot, pairwise_sum
from solvers.core.sparse import row_dot
from solvers.losses import kernels as loss_kernels
from solvers.problems.binary_kernels import regularizer


@njit(cache=True, nogil=True)
def objective(indptr, indices, data, y, cost, code, p, s, r, epsilon, beta):
    """P(beta) = 1/2 ||beta||_r^2 + sum_i C_i (l(r_i - eps) + l(-r_i - eps)), r_i = y_i -
    x~_i . beta, in one pass (the two sums kept apart as ``ResidualLoss.sum`` adds them)."""
    d = beta.shape[0] - 1
    intercept = s * beta[d]
    upper = 0.0
    lower = 0.0
    for i in range(y.shape[0]):
        residual = y[i] - (row_dot(indptr, indices, data, i, beta) + intercept)
        upper += cost[i] * loss_kernels.value(code, p, residual - epsilon)
        lower += cost[i] * loss_kernels.value(code, p, -residual - epsilon)
    return regularizer(beta, r) + (upper + lower)


@njit(cache=True, nogil=True)
def dual_objective(y, b, beta_b, cost, code, p, r, epsilon, scratch):
    """D(b) = y'b - sum_i C_i L*(b_i / C_i) - 1/2 ||w(b)||_r^2 with ``beta_b`` = w(b) (the
    caller's); -inf outside the box.  ``scratch``: n entries (|b|)."""
    for i in range(b.shape[0]):
        scratch[i] = abs(b[i])
    tail = loss_kernels.conjugate_sum(code, p, scratch, cost)
    if not np.isfinite(tail):
        return -np.inf
    # eps ||b||_1 as NumPy sums it (``ResidualLoss.conjugate_sum``), y'b as the core's dot
    return dot(y, b) - (epsilon * pairwise_sum(scratch) + tail) - regularizer(beta_b, r)
