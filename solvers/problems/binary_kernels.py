""":class:`~solvers.problems.BinaryProblem`'s evaluations as Numba functions, for a driver
compiled whole (a small problem's Newton loop, ``solvers.newton.compiled``): the same
quantities as the problem's methods, by the same core and loss kernels, callable from inside
a ``@njit`` loop where the methods (Python, a few microseconds of dispatch each) are not.

Each takes the CSR arrays, the labels y, the costs C_i, the loss's code and p, the bias
column's value s (``effective_bias_scale``: 0 without a bias) and the regularization of the
bias r (``bias_regularization``); ``no_bias`` holds the bias entry at 0 (``bias="none"``).
Sums over the examples are NumPy's pairwise ones (``core.linalg.pairwise_sum``) where the
methods take ``ndarray.sum``, so a compiled driver computes the methods' numbers bit for bit.
The free bias's balancing shift (a sort) has no form here: a driver compiled over these
functions leaves the free bias to its Python driver.  Serial: what they save is the dispatch
around small products, so they are for problems below the parallel kernels' threshold.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.core.linalg import dot, pairwise_sum
from solvers.core.sparse import matvec_serial, rmatvec_serial, weighted_gram_matvec
from solvers.losses import kernels as loss_kernels


@njit(cache=True, nogil=True)
def regularizer(beta, r):
    """1/2 (||w||^2 + r b^2) (:meth:`BinaryProblem.regularizer`)."""
    d = beta.shape[0] - 1
    return 0.5 * (dot(beta[:d], beta[:d]) + r * (beta[d] * beta[d]))


@njit(cache=True, nogil=True)
def outputs(indptr, indices, data, s, beta, out):
    """out = X~ beta: x_i . w + s b for every row (:meth:`BinaryProblem.outputs`)."""
    d = beta.shape[0] - 1
    matvec_serial(indptr, indices, data, beta[:d], s * beta[d], out)


@njit(cache=True, nogil=True)
def objective_at(y, cost, code, p, r, beta, outs, xi):
    """P(beta) from the outputs X~ beta, the slacks xi = 1 - y X~ beta written to ``xi``
    (:meth:`BinaryProblem.objective_from_slacks`)."""
    for i in range(xi.shape[0]):
        xi[i] = 1.0 - y[i] * outs[i]
    return regularizer(beta, r) + loss_kernels.loss_sum(code, p, xi, cost)


@njit(cache=True, nogil=True)
def first_order(indptr, indices, data, y, cost, code, p, s, r, no_bias, beta, xi, alpha,
                image, gradient, scratch):
    """The KKT map alpha_i = C_i L'(xi_i), its image beta(alpha) = sum_i alpha_i y_i x~_i
    (bias entry 0 unless regularized) and the gradient I_r beta - sum_i alpha_i y_i x~_i (bias
    entry 0 without a bias), in one pass over the rows (:meth:`BinaryProblem.first_order`;
    ``scratch``: n entries)."""
    n = xi.shape[0]
    d = beta.shape[0] - 1
    for i in range(n):
        alpha[i] = cost[i] * loss_kernels.derivative(code, p, xi[i])
        scratch[i] = alpha[i] * y[i]
    rmatvec_serial(indptr, indices, data, scratch, image[:d])
    image[d] = s * pairwise_sum(scratch)  # NumPy's sum, as the problem's _adjoint
    for j in range(d):
        gradient[j] = beta[j] - image[j]
    gradient[d] = r * beta[d] - image[d]
    if no_bias:
        gradient[d] = 0.0
    if r == 0.0:
        image[d] = 0.0


@njit(cache=True, nogil=True)
def dual_objective(code, p, r, alpha, image, cost):
    """D(alpha) = sum_i alpha_i - 1/2 ||beta(alpha)||_r^2 - sum_i C_i L*(alpha_i / C_i) from
    the image the gradient computed (:meth:`BinaryProblem.dual_objective` with
    ``beta_alpha``); -inf outside the dual's domain."""
    conjugate = loss_kernels.conjugate_sum(code, p, alpha, cost)
    if not np.isfinite(conjugate):
        return -np.inf
    return pairwise_sum(alpha) - regularizer(image, r) - conjugate


@njit(cache=True, nogil=True)
def curvatures(xi, cost, code, p, out):
    """d_i = C_i L''(xi_i), the Hessian's weights (:meth:`BinaryProblem.curvature`)."""
    for i in range(xi.shape[0]):
        out[i] = cost[i] * loss_kernels.curvature(code, p, xi[i])


@njit(cache=True, nogil=True)
def hessian_diagonal(indptr, indices, squared, s, r, no_bias, weights, out):
    """r_j + sum_i d_i x~_ij^2 (:meth:`BinaryProblem.hessian_diagonal`; ``squared``: X's
    values squared)."""
    d = out.shape[0] - 1
    rmatvec_serial(indptr, indices, squared, weights, out[:d])
    for j in range(d):
        out[j] += 1.0
    out[d] = r + s * s * pairwise_sum(weights)
    if no_bias:
        out[d] = 1.0


@njit(cache=True, nogil=True)
def hessian_product(indptr, indices, data, s, r, no_bias, weights, v, out):
    """(I_r + X~' diag(weights) X~) v in one pass (:meth:`BinaryProblem.hessian_product`)."""
    weighted_gram_matvec(indptr, indices, data, weights, v, s, out)
    d = out.shape[0] - 1
    for j in range(d):
        out[j] += v[j]
    out[d] += r * v[d]
    if no_bias:
        out[d] = 0.0
