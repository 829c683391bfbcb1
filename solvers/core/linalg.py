"""Iterative linear algebra shared by the solvers.

* :func:`cgls` -- CGLS for the regularized, weighted least-squares problem over a subset of
  rows, with the warm start of Frommer & Maass (1999, Algorithm 3) and the relative stopping
  rule (13) of Keerthi & DeCoste (2005).  It never forms X'X: each iteration costs one product
  with X and one with X' over the selected rows (Keerthi & DeCoste, section 4.3).
* :func:`cg_dual_compact` -- the same problem (one row per term) solved in the space of its
  rows, (A A' + lam I) u = b with beta = A'u, by CG with the row-Jacobi preconditioner: the
  smaller system when the rows are fewer than the parameters, and one whose diagonal evens
  out rows of very unequal norms.
* :func:`gram_update` -- the Gram matrix sum_k w_k x~_k x~_k' of the same least-squares rows,
  kept up to date as rows enter and leave (a direct solve of the normal equations (12) when
  there are few features: Keerthi & DeCoste, section 4.3, "factorization methods").
* :func:`conjugate_gradient` -- preconditioned CG for a symmetric positive definite operator
  given as a function (the interior-point and LS-SVM solvers build their operators from the
  sparse kernels).

The problem :func:`cgls` solves, with x~_i = (x_i, s) the row extended by the bias column of
value ``s = bias_scale`` and D = diag(1, ..., 1, reg_bias)::

    minimize_beta   lam/2 * beta' D beta  +  1/2 * sum_k c_k (x~_{rows[k]} . beta - t_k)^2

``sqrt_c`` holds sqrt(c_k).  With ``s = 0`` the last coordinate of beta is inert (no bias).

More generally (the ordinal regression of Keerthi & DeCoste, section 7, eq. (26)), beta may
carry several extra coordinates ("thresholds") after the n_features weights, and one selected
row may appear in several least-squares rows, each with its own extra column: least-squares
row k of selected row j is (x_{rows[j]}, s e_{pair_col[k]}) for pair_ptr[j] <= k <
pair_ptr[j + 1].  The product with such an operator still touches each selected row of X once:
x_i . w is computed once and shared by the row's pairs, and the pairs' residuals are summed
before x_i is scattered into X'z.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange
from scipy.linalg.lapack import dpotrf, dpotrs
from threadpoolctl import ThreadpoolController

from solvers import config
from solvers.core.sparse import (
    CACHE_LINE_DOUBLES,
    CompactRows,
    _u,  # unsigned indices: no wraparound test in the hot loops
    compact_row_axpy,
    compact_row_dot,
    padded_width,
    thread_count,
)
from solvers.termination import Termination

_NO_PAIRS = np.empty(0, np.int64)
_NO_VECTOR = np.empty(0)


def cgls(X, rows, sqrt_c, t, beta, *, bias_scale, lam, reg_bias=1.0, eps=1e-6,
         max_iter=5000, parallel=False, pair_ptr=None, pair_col=None,
         precondition=0.0, rho=None, unit_values=False) -> tuple[int, bool]:
    """CGLS from the warm start ``beta`` (updated in place) over the rows ``rows`` of ``X``.

    Copies the rows into a :class:`~solvers.core.sparse.CompactRows` (one pass) and runs
    :func:`cgls_compact` on it; see there for the problem and the options.  ``parallel``
    splits the rows into one block per Numba thread.  Returns ``(iterations, optimal)``.
    """
    n_blocks = numba.get_num_threads() if parallel else 1
    A = CompactRows(X, rows, n_blocks=n_blocks, unit_values=unit_values)
    return cgls_compact(A, sqrt_c, t, beta, bias_scale=bias_scale, lam=lam, reg_bias=reg_bias,
                        eps=eps, max_iter=max_iter, pair_ptr=pair_ptr, pair_col=pair_col,
                        precondition=precondition, rho=rho)


def cgls_compact(A: CompactRows, sqrt_c, t, beta, *, bias_scale, lam, reg_bias=1.0, eps=1e-6,
                 max_iter=5000, pair_ptr=None, pair_col=None, precondition=0.0, rho=None,
                 residual=None, gradient=None, forcing=0.0) -> tuple[int, bool]:
    """CGLS on compacted rows ``A`` from the warm start ``beta`` (updated in place).

    Keerthi & DeCoste, Appendix A steps 3-4: z = t - X beta, r = X'z - lam beta, p = r; each
    iteration q = X p, gamma = ||r||^2 / (||q||^2 + lam ||p||^2_D), beta += gamma p,
    z -= gamma q, r = X'z - lam D beta; stop when ||r||^2 <= eps^2 ||z||^2 (rule (13)) or after
    ``max_iter`` iterations.  ``t`` holds the targets of the rows.  When rule (13) already
    holds at the warm start no iteration is made.

    Warm start (the paper's footnote 7: "z^0 and r^0 are already available in view of the
    computations in step 2"): a caller that has them passes ``residual`` = z^0 =
    sqrt(c) (t - A~ beta) (one entry per least-squares row; overwritten with the final z) and
    ``gradient`` = r^0 = A'z^0 - lam D beta, and the products of pass 0 are skipped (``t`` is
    then not read and may be None).

    ``pair_ptr``/``pair_col`` (int64, optional) describe several least-squares rows per
    selected row (see the module docstring): then ``sqrt_c`` and ``t`` have one entry per pair,
    beta has ``n_features + n_extra`` entries and D = diag(1, ..., 1, reg_bias, ..., reg_bias).

    ``rho`` switches to the rule Keerthi & DeCoste derive (13) from,
    ``||r|| <= eps (rho ||z|| + lam ||beta||)`` with rho = ||X~|| (the norm of the whole data
    matrix, which bounds that of the selected rows): ||r|| <= ||X~|| ||z|| + lam ||beta||
    makes it a relative test of the gradient against its own parts.  (13) is this rule with
    rho = 1 and without the lam ||beta|| term, conservative for normalized data.

    ``precondition`` = alpha > 0 preconditions the iteration with the diagonal
    M = lam D + alpha diag(A'A) (A: the rows sqrt(c_k) x~_k) -- CGLS on the column-scaled
    problem (Bjorck 1996, section 7.4), i.e. CG on the normal equations with M^{-1}, the
    mixture LIBLINEAR's truncated Newton uses (Hsia, Chiang & Lin 2018, alpha = 0.01, in the
    scale of this problem).  It changes the search directions only: the iterates converge to
    the same solution and rule (13) is still checked on the unpreconditioned gradient r.  It
    costs one more pass over the selected rows (for diag(A'A)).

    ``forcing`` = eta in (0, 1) also stops the iteration once ||r|| <= eta ||r^0|| (r^0 the
    gradient at the warm start): the forcing term of an inexact Newton method (Dembo,
    Eisenstat & Steihaug 1982), for callers that do not need the least-squares solution to
    rule (13)'s accuracy.  Such a stop returns ``optimal`` = False unless the rule holds too.

    The whole iteration runs in one compiled kernel (no Python and no BLAS call per
    iteration), with ``A``'s blocks on as many Numba threads.

    Returns ``(iterations, optimal)`` where ``optimal`` says the stopping rule was met.
    """
    n_features = A.n_features
    n_rows = A.n_rows
    if pair_ptr is None:
        if beta.shape[0] != n_features + 1 or sqrt_c.shape[0] != n_rows:
            raise ValueError("beta needs n_features + 1 entries and sqrt_c one per row")
        pair_ptr = pair_col = _NO_PAIRS
    else:
        pair_ptr = np.ascontiguousarray(pair_ptr, dtype=np.int64)
        pair_col = np.ascontiguousarray(pair_col, dtype=np.int64)
        if pair_ptr.shape[0] != n_rows + 1 or pair_col.shape[0] != sqrt_c.shape[0]:
            raise ValueError("pair_ptr needs one entry per row plus one, pair_col one per pair")
        if pair_col.shape[0] and pair_col.max() >= beta.shape[0] - n_features:
            raise ValueError("pair_col addresses an extra coordinate beta does not have")
    n_terms = sqrt_c.shape[0]
    warm = residual is not None
    if warm:
        if gradient is None or residual.shape != (n_terms,) \
                or gradient.shape != beta.shape:
            raise ValueError("a warm start needs residual (one entry per least-squares row) "
                             "and gradient (one per coordinate of beta)")
        z = residual
        r0 = np.ascontiguousarray(gradient, dtype=np.float64)
        targets = _NO_VECTOR
    else:
        z = np.empty(n_terms)
        r0 = _NO_VECTOR
        targets = np.ascontiguousarray(t, dtype=np.float64)
    n_threads = A.n_blocks
    with thread_count(n_threads):
        iterations, optimal = _cgls_kernel(
            *A.arrays(), pair_ptr, pair_col, float(bias_scale),
            np.ascontiguousarray(sqrt_c, dtype=np.float64), targets, beta, n_features,
            float(lam), float(reg_bias), float(eps), int(max_iter), float(precondition),
            1.0 if rho is None else float(rho), 0.0 if rho is None else float(lam),
            n_threads > 1 and n_features >= config.CGLS_PARALLEL_MIN_FEATURES,
            warm, z, r0, padded_width(n_features), float(forcing))
    return int(iterations), bool(optimal)


@njit(cache=True, inline="always")
def _pairs_of(pair_ptr, paired, j):
    """Unsigned (first, last) of the least-squares rows of selected row ``j``."""
    if paired:
        return _u(pair_ptr[j]), _u(pair_ptr[j + 1])
    return _u(j), _u(j + 1)


@njit(cache=True, inline="always")
def _gradient_entry(f, step, beta, gamma, p, buffers, lam, r, m_inv):
    """beta_f += gamma p_f (when ``step``); r_f = (A'z)_f - lam beta_f from the per-block
    buffers; returns the terms of ||beta||^2, ||r||^2 and r' M^{-1} r."""
    if step:
        beta[f] += gamma * p[f]
    g = 0.0
    for b in range(buffers.shape[0]):
        g += buffers[b, f]
    value = g - lam * beta[f]
    r[f] = value
    return beta[f] * beta[f], value * value, m_inv[f] * value * value


@njit(cache=True, inline="always")
def _direction_entry(f, m_inv, r, omega, p):
    """p_f = (M^{-1} r)_f + omega p_f; returns p_f^2."""
    value = m_inv[f] * r[f] + omega * p[f]
    p[f] = value
    return value * value


@njit(cache=True, inline="always")
def _forward(indptr, indices, data, unit, blocks, pair_ptr, pair_col, paired, extra_value,
             sqrt_c, d, v, q, partial):
    """q = A v per least-squares row, block by block; returns ||q||^2."""
    n_blocks = blocks.shape[0] - 1
    for b in prange(n_blocks):
        s = 0.0
        for j in range(blocks[b], blocks[b + 1]):
            u = compact_row_dot(indptr, indices, data, unit, j, v)
            first, last = _pairs_of(pair_ptr, paired, j)
            for k in range(first, last):
                col = pair_col[k] if paired else 0
                value = sqrt_c[k] * (u + extra_value * v[d + col])
                q[k] = value
                s += value * value
        partial[b * _LINE] = s
    total = 0.0
    for b in range(n_blocks):
        total += partial[b * _LINE]
    return total


@njit(cache=True, inline="always")
def _adjoint(indptr, indices, data, unit, blocks, pair_ptr, pair_col, paired, extra_value,
             sqrt_c, z, step, gamma, q, targets, buffers, extra_buffers, partial):
    """z -= gamma q (``step``; z = sqrt(c) t - q when ``targets`` are given instead), then
    A'z into one buffer per block; returns ||z||^2."""
    n_blocks = blocks.shape[0] - 1
    use_targets = targets.shape[0] > 0
    for b in prange(n_blocks):
        acc = buffers[b]
        acc[:] = 0.0
        extra_acc = extra_buffers[b]
        extra_acc[:] = 0.0
        zz = 0.0
        for j in range(blocks[b], blocks[b + 1]):
            first, last = _pairs_of(pair_ptr, paired, j)
            zeta = 0.0
            for k in range(first, last):
                if use_targets:
                    zk = sqrt_c[k] * targets[k] - q[k]
                    z[k] = zk
                elif step:
                    zk = z[k] - gamma * q[k]
                    z[k] = zk
                else:
                    zk = z[k]
                zz += zk * zk
                scaled = sqrt_c[k] * zk
                zeta += scaled
                extra_acc[pair_col[k] if paired else 0] += extra_value * scaled
            if zeta != 0.0:
                compact_row_axpy(indptr, indices, data, unit, j, zeta, acc)
        partial[b * _LINE] = zz
    total = 0.0
    for b in range(n_blocks):
        total += partial[b * _LINE]
    return total


# per-block partial sums are kept one cache line apart
_LINE = CACHE_LINE_DOUBLES


@njit(cache=True, nogil=True, parallel=True)
def _cgls_kernel(indptr, indices, data, unit, blocks, pair_ptr, pair_col, extra_value, sqrt_c,
                 targets, beta, n_features, lam, reg_extra, eps, max_iter, mix, rho,
                 beta_weight, parallel_features, warm, z, r0, width, forcing):
    """The CGLS iteration of :func:`cgls_compact`.

    Each iteration makes one product with the operator A (rows sqrt(c_k) x~_k) and one with A',
    both block by block (one block per thread), the second accumulating X'z into a buffer per
    block (rows ``width`` apart, whole cache lines), summed afterwards.  The z update and
    ||z||^2 are fused into the A' pass, the beta update, r and ||r||^2 into the buffer sum.
    Pass 0 computes the warm start's z and r (or, ``warm``, takes them as given).  With
    ``mix`` > 0, m_inv holds the inverse diagonal preconditioner and phi1 = r' M^{-1} r drives
    the CG coefficients while ||r||^2 decides the stopping rule
    ||r|| <= eps (rho ||z|| + beta_weight ||beta||) (rule (13): rho = 1, beta_weight = 0),
    or, with ``forcing`` > 0, ||r|| <= forcing ||r^0|| (returned as not optimal).
    The two loops over the features are parallel only with ``parallel_features``.
    """
    d = n_features
    n_extra = beta.shape[0] - d
    n_blocks = blocks.shape[0] - 1
    paired = pair_ptr.shape[0] > 0
    q = np.empty(sqrt_c.shape[0])
    r = np.empty(beta.shape[0])
    p = beta.copy()  # pass 0 multiplies the warm start itself
    buffers = np.empty((n_blocks, width))
    extra_buffers = np.empty((n_blocks, n_extra + _LINE))
    partial = np.empty(n_blocks * _LINE)
    m_inv = np.ones(beta.shape[0])
    if mix > 0.0:
        # diag(A'A) per block: sum_k c_k x_kf^2 and, per extra column, sum_k c_k s^2
        for b in prange(n_blocks):
            acc = buffers[b]
            acc[:] = 0.0
            extra_acc = extra_buffers[b]
            extra_acc[:] = 0.0
            for j in range(blocks[b], blocks[b + 1]):
                first, last = _pairs_of(pair_ptr, paired, j)
                weight = 0.0
                for k in range(first, last):
                    ck = sqrt_c[k] * sqrt_c[k]
                    weight += ck
                    extra_acc[pair_col[k] if paired else 0] += ck * extra_value * extra_value
                if unit:
                    for k in range(_u(indptr[j]), _u(indptr[j + 1])):
                        acc[_u(indices[k])] += weight
                else:
                    for k in range(_u(indptr[j]), _u(indptr[j + 1])):
                        acc[_u(indices[k])] += weight * data[k] * data[k]
        for f in prange(d):
            g = 0.0
            for b in range(n_blocks):
                g += buffers[b, f]
            m_inv[f] = 1.0 / (lam + mix * g)
        for c in range(n_extra):
            g = 0.0
            for b in range(n_blocks):
                g += extra_buffers[b, c]
            diagonal = lam * reg_extra + mix * g
            m_inv[d + c] = 1.0 / diagonal if diagonal > 0.0 else 1.0
    phi1 = 0.0  # r' M^{-1} r (||r||^2 without preconditioning)
    phi2 = 0.0  # ||p||_D^2
    gamma = 0.0
    forced = 0.0  # forcing^2 ||r^0||^2
    for iteration in range(max_iter + 1):
        step = iteration > 0
        if warm and not step:
            # pass 0 from the caller's z^0 and r^0 (footnote 7)
            phi4 = 0.0
            for k in range(z.shape[0]):
                phi4 += z[k] * z[k]
            rr = 0.0
            rmr = 0.0
            bb = 0.0
            for f in range(beta.shape[0]):
                r[f] = r0[f]
                bb += beta[f] * beta[f]
                rr += r0[f] * r0[f]
                rmr += m_inv[f] * r0[f] * r0[f]
        else:
            # q = A p and phi3 = ||q||^2
            phi3 = _forward(indptr, indices, data, unit, blocks, pair_ptr, pair_col, paired,
                            extra_value, sqrt_c, d, p, q, partial)
            if step:
                denominator = phi3 + lam * phi2
                if denominator <= 0.0:
                    return iteration - 1, False
                gamma = phi1 / denominator
            # z = sqrt(c) t - A beta (pass 0) or z -= gamma q; phi4 = ||z||^2; A'z per block
            phi4 = _adjoint(indptr, indices, data, unit, blocks, pair_ptr, pair_col, paired,
                            extra_value, sqrt_c, z, step, gamma, q,
                            targets if not step else targets[:0], buffers, extra_buffers,
                            partial)
            # beta += gamma p; r = A'z - lam D beta; ||beta||^2, ||r||^2 and r' M^{-1} r
            rr = 0.0
            rmr = 0.0
            bb = 0.0
            if parallel_features:
                for f in prange(d):
                    b2, r2, rm2 = _gradient_entry(f, step, beta, gamma, p, buffers, lam, r,
                                                  m_inv)
                    bb += b2
                    rr += r2
                    rmr += rm2
            else:
                for f in range(d):
                    b2, r2, rm2 = _gradient_entry(f, step, beta, gamma, p, buffers, lam, r,
                                                  m_inv)
                    bb += b2
                    rr += r2
                    rmr += rm2
            for c in range(n_extra):
                if step:
                    beta[d + c] += gamma * p[d + c]
                bb += beta[d + c] * beta[d + c]
                g = 0.0
                for b in range(n_blocks):
                    g += extra_buffers[b, c]
                value = g - lam * reg_extra * beta[d + c]
                r[d + c] = value
                rr += value * value
                rmr += m_inv[d + c] * value * value
        # the stopping rule, then the next direction p = M^{-1} r + omega p
        bound = eps * (rho * np.sqrt(phi4) + beta_weight * np.sqrt(bb))
        if rr <= bound * bound or rr == 0.0:
            return iteration, True
        if not step:
            forced = forcing * forcing * rr
        elif rr <= forced:
            return iteration, False
        if iteration == max_iter:
            break
        omega = rmr / phi1 if step else 0.0
        phi1 = rmr
        phi2 = 0.0
        if parallel_features:
            for f in prange(d):
                phi2 += _direction_entry(f, m_inv, r, omega, p)
        else:
            for f in range(d):
                phi2 += _direction_entry(f, m_inv, r, omega, p)
        for c in range(n_extra):
            value = m_inv[d + c] * r[d + c] + omega * p[d + c]
            p[d + c] = value
            phi2 += reg_extra * value * value
    return max_iter, False


# -- one CGLS iteration's products in recurrence form (partitioned rows) --------------------------


def cgls_recurrence_products(A: CompactRows, sqrt_c, z, q, gamma: float, p, *,
                             bias_scale: float) -> tuple[float, float, float, np.ndarray,
                                                         np.ndarray]:
    """The products one CGLS iteration needs from rows that hold a share of the problem
    (a partition of :mod:`solvers.distributed`), in the recurrence form the driver runs:
    z -= gamma q (the last iteration's q; none when ``q`` is None or gamma is 0), q = A p,
    and ||q||^2, z'q, ||z||^2 and A'q, where A holds the rows a_k = sqrt(c_k) x~_k
    (x~_k = (x_k, s), s = ``bias_scale``).  The driver sums the shares and updates
    r -= gamma (A'q + lam D p) itself (:func:`cgls_compact` recomputes A'z instead).

    One pass over the rows: q_k = a_k . p depends on row k alone, so row k is scattered into
    A'q right after its dot product, while it is in cache; :func:`cgls_compact`'s iteration
    needs two passes (A'z waits for gamma, which needs the whole ||q||^2).  Each q_k and z_k
    is the two-pass form's bit for bit (A.matvec, then the scaling); the three sums are
    accumulated row by row, block by block.

    Returns (||q||^2, z'q, ||z||^2, A'q, q); ``z`` is updated in place, ``q`` overwritten
    (or made)."""
    n_rows = A.n_rows
    d = A.n_features
    step = q is not None and gamma != 0.0
    if q is None:
        q = np.empty(n_rows)
    n_blocks = A.n_blocks
    width = padded_width(d)
    buffers = np.empty((n_blocks, width))
    partial = np.zeros(n_blocks * _LINE)
    out = np.empty(d + 1)
    with thread_count(n_blocks):
        _recurrence_kernel(*A.arrays(), float(bias_scale),
                           np.ascontiguousarray(sqrt_c, dtype=np.float64), z, q, step,
                           float(gamma), np.ascontiguousarray(p, dtype=np.float64), d,
                           buffers, partial, out)
    totals = partial.reshape(n_blocks, _LINE).sum(axis=0)
    return float(totals[0]), float(totals[1]), float(totals[2]), out, q


@njit(cache=True, nogil=True, parallel=True)
def _recurrence_kernel(indptr, indices, data, unit, blocks, extra_value, sqrt_c, z, q, step,
                       gamma, p, d, buffers, partial, out):
    """:func:`cgls_recurrence_products`: per block, z_k -= gamma q_k, q_k = sqrt(c_k)
    (x_k . p + s p_d), the sums of q_k^2, z_k q_k, z_k^2 and of sqrt(c_k) q_k (the bias
    column's coefficient) into ``partial`` (a cache line a block), and x_k scaled by
    sqrt(c_k) q_k into the block's buffer; then A'q from the buffers."""
    n_blocks = blocks.shape[0] - 1
    intercept = extra_value * p[d]
    for b in prange(n_blocks):
        acc = buffers[b]
        acc[:] = 0.0
        qq = 0.0
        zq = 0.0
        zz = 0.0
        coefficients = 0.0
        for j in range(blocks[b], blocks[b + 1]):
            zj = z[j]
            if step:
                zj = zj - gamma * q[j]
                z[j] = zj
            u = sqrt_c[j] * (compact_row_dot(indptr, indices, data, unit, j, p) + intercept)
            q[j] = u
            qq += u * u
            zq += zj * u
            zz += zj * zj
            coefficient = sqrt_c[j] * u
            coefficients += coefficient
            if coefficient != 0.0:
                compact_row_axpy(indptr, indices, data, unit, j, coefficient, acc)
        partial[b * _LINE] = qq
        partial[b * _LINE + 1] = zq
        partial[b * _LINE + 2] = zz
        partial[b * _LINE + 3] = coefficients
    for f in prange(d):
        total = 0.0
        for b in range(n_blocks):
            total += buffers[b, f]
        out[f] = total
    coefficients = 0.0
    for b in range(n_blocks):
        coefficients += partial[b * _LINE + 3]
    out[d] = extra_value * coefficients


# -- the same least-squares problem in the space of its rows ------------------------------------


def cg_dual_compact(A: CompactRows, sqrt_c, beta, *, bias_scale, lam, eps=1e-6, max_iter=5000,
                    residual, gradient, forcing=0.0) -> tuple[int, bool]:
    """:func:`cgls_compact`'s problem (one least-squares row per selected row, D = I) solved in
    the space of the rows, from the same warm start; ``beta`` is overwritten with the result.

    With A the rows a_k = sqrt(c_k) x~_k and b their targets, the solution of
    min lam/2 ||beta||^2 + 1/2 ||A beta - b||^2 is beta = A'u with (A A' + lam I) u = b
    (u = z / lam at the solution, z = b - A beta).  When the rows are fewer than the
    parameters this system is the smaller one, and its diagonal c_k ||x~_k||^2 + lam is
    available: CG on it with that row-Jacobi preconditioner, which evens out rows of very
    unequal norms (raw word counts) where the column-diagonal preconditioner of
    :func:`cgls_compact` does not help.

    The warm start is the caller's (``residual`` z^0 = b - A beta^0, overwritten with the final
    z; ``gradient`` r^0 = A'z^0 - lam beta^0): u^0 = z^0 / lam, the row-space point the current
    primal point implies, for which A'u^0 = (r^0 + lam beta^0) / lam needs no product and the
    residual of the row system is s^0 = b - (A A' + lam I) u^0 = A (beta^0 - A'u^0), one
    product.  Each iteration makes one product with A' (of the direction and, in the same
    pass, of s) and one with A.  The stopping rule is :func:`cgls_compact`'s, on the primal
    quantities of beta = A'u: r = A'z - lam beta = A's and z = s + lam u, so rule (13)
    ||r|| <= eps ||z|| is checked exactly at every iterate.  ``forcing`` = eta in (0, 1) also
    stops it once ||r|| <= eta ||r^0||, as in :func:`cgls_compact` (not optimal unless the rule
    holds too).

    Returns ``(iterations, optimal)``."""
    n_features = A.n_features
    n_rows = A.n_rows
    if beta.shape[0] != n_features + 1 or sqrt_c.shape[0] != n_rows:
        raise ValueError("beta needs n_features + 1 entries and sqrt_c one per row")
    if residual.shape != (n_rows,) or gradient.shape != beta.shape:
        raise ValueError("the warm start needs residual (one entry per row) and gradient (one "
                         "per coordinate of beta)")
    if not lam > 0.0:
        raise ValueError("the row-space form needs lam > 0")
    n_threads = A.n_blocks
    with thread_count(n_threads):
        iterations, optimal = _cg_dual_kernel(
            *A.arrays(), float(bias_scale), np.ascontiguousarray(sqrt_c, dtype=np.float64),
            beta, n_features, float(lam), float(eps), int(max_iter), residual,
            np.ascontiguousarray(gradient, dtype=np.float64),
            n_threads > 1 and n_features >= config.CGLS_PARALLEL_MIN_FEATURES,
            padded_width(n_features), float(forcing))
    return int(iterations), bool(optimal)


@njit(cache=True, inline="always")
def _two_adjoints(indptr, indices, data, unit, blocks, extra_value, sqrt_c, p, s, buffers,
                  extra_buffers):
    """A'p into ``buffers[2 b]`` and A's into ``buffers[2 b + 1]`` for each block b, in one
    pass over the rows (their bias-column parts into ``extra_buffers[b, 0:2]``)."""
    n_blocks = blocks.shape[0] - 1
    for b in prange(n_blocks):
        acc_p = buffers[2 * b]
        acc_s = buffers[2 * b + 1]
        acc_p[:] = 0.0
        acc_s[:] = 0.0
        ep = 0.0
        es = 0.0
        for j in range(blocks[b], blocks[b + 1]):
            cp = sqrt_c[j] * p[j]
            cs = sqrt_c[j] * s[j]
            ep += cp
            es += cs
            if unit:
                for k in range(_u(indptr[j]), _u(indptr[j + 1])):
                    f = _u(indices[k])
                    acc_p[f] += cp
                    acc_s[f] += cs
            else:
                for k in range(_u(indptr[j]), _u(indptr[j + 1])):
                    f = _u(indices[k])
                    acc_p[f] += data[k] * cp
                    acc_s[f] += data[k] * cs
        extra_buffers[b, 0] = extra_value * ep
        extra_buffers[b, 1] = extra_value * es


@njit(cache=True, inline="always")
def _sum_two(f, buffers, n_blocks, w):
    """w_f = (A'p)_f from the blocks' buffers; returns (A's)_f^2."""
    gp = 0.0
    gs = 0.0
    for b in range(n_blocks):
        gp += buffers[2 * b, f]
        gs += buffers[2 * b + 1, f]
    w[f] = gp
    return gs * gs


@njit(cache=True, nogil=True, parallel=True)
def _cg_dual_kernel(indptr, indices, data, unit, blocks, extra_value, sqrt_c, beta, n_features,
                    lam, eps, max_iter, z, r0, parallel_features, width, forcing):
    """The iteration of :func:`cg_dual_compact`: preconditioned CG on (A A' + lam I) u = b,
    keeping v = A'u (beta) up to date from the products A'p the iteration makes anyway."""
    d = n_features
    m = sqrt_c.shape[0]
    n_blocks = blocks.shape[0] - 1
    no_pairs = np.empty(0, np.int64)
    u = np.empty(m)
    s = np.empty(m)
    q = np.empty(m)
    p = np.empty(m)
    diag_inv = np.empty(m)
    w = np.empty(d + 1)
    v = np.empty(d + 1)
    delta = np.empty(d + 1)
    buffers = np.empty((2 * n_blocks, width))
    extra_buffers = np.empty((n_blocks, _LINE))
    partial = np.empty(n_blocks * _LINE)
    # rule (13) already met at the warm start beta^0 itself: no iteration, beta unchanged
    # (as in CGLS; A'u^0 below is another point, which a loose eps could also accept)
    zz = 0.0
    for j in range(m):
        zz += z[j] * z[j]
    rr = 0.0
    for f in range(d + 1):
        rr += r0[f] * r0[f]
    if rr <= eps * eps * zz or rr == 0.0:
        return 0, True
    forced = forcing * forcing * rr  # the forcing term's bound on ||r||^2
    # u^0 = z^0 / lam; v = A'u^0 = (r^0 + lam beta^0) / lam; s^0 = A (beta^0 - v)
    for f in range(d + 1):
        v[f] = (r0[f] + lam * beta[f]) / lam
        delta[f] = beta[f] - v[f]
    _forward(indptr, indices, data, unit, blocks, no_pairs, no_pairs, False, extra_value,
             sqrt_c, d, delta, s, partial)
    for j in prange(m):
        u[j] = z[j] / lam
        # the row-Jacobi preconditioner: 1 / (c_j ||x~_j||^2 + lam)
        norm = extra_value * extra_value
        if unit:
            norm += indptr[j + 1] - indptr[j]
        else:
            for k in range(_u(indptr[j]), _u(indptr[j + 1])):
                norm += data[k] * data[k]
        diag_inv[j] = 1.0 / (sqrt_c[j] * sqrt_c[j] * norm + lam)
    rz = 0.0
    for j in range(m):
        p[j] = diag_inv[j] * s[j]
        rz += s[j] * p[j]
    iteration = 0
    optimal = False
    while True:
        # w = A'p and A's in one pass; rule (13) on r = A's, z = s + lam u
        _two_adjoints(indptr, indices, data, unit, blocks, extra_value, sqrt_c, p, s, buffers,
                      extra_buffers)
        rr = 0.0
        if parallel_features:
            for f in prange(d):
                rr += _sum_two(f, buffers, n_blocks, w)
        else:
            for f in range(d):
                rr += _sum_two(f, buffers, n_blocks, w)
        ep = 0.0
        es = 0.0
        for b in range(n_blocks):
            ep += extra_buffers[b, 0]
            es += extra_buffers[b, 1]
        w[d] = ep
        rr += es * es
        zz = 0.0
        for j in range(m):
            zj = s[j] + lam * u[j]
            zz += zj * zj
        if rr <= eps * eps * zz or rr == 0.0:
            optimal = True
            break
        if iteration == max_iter or rr <= forced:
            break
        # q = (A A' + lam I) p, the step, then the next direction
        _forward(indptr, indices, data, unit, blocks, no_pairs, no_pairs, False, extra_value,
                 sqrt_c, d, w, q, partial)
        pq = 0.0
        for j in range(m):
            q[j] += lam * p[j]
            pq += p[j] * q[j]
        if not pq > 0.0:
            break
        alpha = rz / pq
        iteration += 1
        if parallel_features:
            for f in prange(d + 1):
                v[f] += alpha * w[f]
        else:
            for f in range(d + 1):
                v[f] += alpha * w[f]
        rz_next = 0.0
        for j in range(m):
            u[j] += alpha * p[j]
            s[j] -= alpha * q[j]
            rz_next += diag_inv[j] * s[j] * s[j]
        omega = rz_next / rz
        rz = rz_next
        for j in range(m):
            p[j] = diag_inv[j] * s[j] + omega * p[j]
    for f in range(d + 1):
        beta[f] = v[f]
    for j in range(m):
        z[j] = s[j] + lam * u[j]
    return iteration, optimal


# -- the Gram matrix of weighted least-squares rows --------------------------------------------


def gram_update(X, rows, weights, G, *, extra_value=0.0, pair_ptr=None, pair_col=None,
                parallel: bool = False) -> None:
    """G += sum_k w_k x~_k x~_k' over the least-squares rows k, lower triangle only.

    The rows are those of :func:`cgls`: x~_k = (x_{rows[k]}, s) with s = ``extra_value`` (one
    extra coordinate, the bias), or with ``pair_ptr``/``pair_col`` several rows
    (x_{rows[j]}, s e_{pair_col[k]}) per selected row j, one weight per pair.  ``G`` is a
    C-contiguous (n_features + n_extra)^2 array; only its lower triangle (row >= column) is
    read and written, so a caller mirrors it before a factorization.  Negative weights remove
    rows added before: an active set's Gram matrix is kept up to date by the rows that entered
    and left it.  Each selected row costs about L(L+1)/2 multiply-adds for L stored entries
    (its pairs share them, :func:`gram_cost`); ``parallel`` splits the rows into one block of
    equal cost per Numba thread, each accumulating into its own n^2 buffer.  ``X`` must be in
    canonical form (sorted, unique column indices in every row): a repeated column would be
    counted as a product of its parts, not as the square of their sum.
    """
    if not X.has_canonical_format:
        raise ValueError("X must be canonical CSR (sorted, unique indices): see as_csr")
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    n_features = X.shape[1]
    if pair_ptr is None:
        if weights.shape[0] != rows.shape[0]:
            raise ValueError("weights needs one entry per row")
        pair_ptr = pair_col = _NO_PAIRS
    else:
        pair_ptr = np.ascontiguousarray(pair_ptr, dtype=np.int64)
        pair_col = np.ascontiguousarray(pair_col, dtype=np.int64)
        if pair_ptr.shape[0] != rows.shape[0] + 1 or pair_col.shape[0] != weights.shape[0]:
            raise ValueError("pair_ptr needs one entry per row plus one, pair_col one per pair")
    n = G.shape[0]
    if G.shape != (n, n) or n <= n_features or not G.flags.c_contiguous:
        raise ValueError("G must be a square C-contiguous array past the features")
    if rows.shape[0] == 0:
        return
    lengths = (X.indptr[rows + 1] - X.indptr[rows]).astype(np.int64)
    cost = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths * (lengths + 1) // 2 + _GRAM_ROW_COST, out=cost[1:])
    n_threads = numba.get_num_threads() if parallel else 1
    n_blocks = max(1, min(n_threads, rows.shape[0]))
    cuts = np.searchsorted(cost, cost[-1] * np.arange(1, n_blocks) / n_blocks)
    blocks = np.concatenate(([0], cuts, [rows.shape[0]])).astype(np.int64)
    buffers = np.empty((n_blocks - 1, n, n))
    with thread_count(n_blocks):
        _gram_kernel(X.indptr, X.indices, X.data, rows, pair_ptr, pair_col, weights,
                     float(extra_value), n_features, blocks, G, buffers)


# a selected row costs about as much as this many multiply-adds beyond its entries' products
_GRAM_ROW_COST = 8


def cholesky_solve(M: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """x with M x = rhs for a symmetric positive definite M of which only the lower triangle
    is read (M may be overwritten by its factor), or None when the factorization fails or the
    solution is not finite.

    LAPACK's potrf/potrs are called directly (scipy's cho_factor/cho_solve wrappers cost more
    than the factorization itself at n ~ 100: 72 against 54 microseconds at n = 113, the copy
    of M included), and from n = 256 on under a one-thread BLAS limit: OpenBLAS then threads
    the factorization, and its worker threads, left spinning after the call, take the core the
    Numba kernels around it need (mfn on w8a at C = 100, n = 301, 21 factorizations: 124 ms
    a solve unlimited, 80 ms with this limit, 71 ms with BLAS held to one thread throughout;
    at n = 113, mushrooms, the limit gains nothing).
    """
    if M.shape[0] >= _CHOLESKY_ONE_THREAD_FROM:
        with _blas_controller().limit(limits=1, user_api="blas"):
            return _potrf_potrs(M, rhs)
    return _potrf_potrs(M, rhs)


_CHOLESKY_ONE_THREAD_FROM = 256


def cholesky_factor(M: np.ndarray) -> np.ndarray | None:
    """The Cholesky factor of a symmetric positive definite M (only its lower triangle is
    read; M is overwritten), for several solves with one factorization
    (:func:`cholesky_factor_solve`); None when the factorization fails.  The interior-point
    method solves its predictor and corrector systems with one factor.  Same LAPACK calls
    and one-thread BLAS limit as :func:`cholesky_solve`."""
    if M.shape[0] >= _CHOLESKY_ONE_THREAD_FROM:
        with _blas_controller().limit(limits=1, user_api="blas"):
            factor, info = dpotrf(M.T, lower=0, clean=0, overwrite_a=1)
    else:
        factor, info = dpotrf(M.T, lower=0, clean=0, overwrite_a=1)
    return factor if info == 0 else None


def cholesky_factor_solve(factor: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    """x with M x = rhs from :func:`cholesky_factor` (M); None if x is not finite."""
    if factor.shape[0] >= _CHOLESKY_ONE_THREAD_FROM:
        with _blas_controller().limit(limits=1, user_api="blas"):
            x, info = dpotrs(factor, rhs, lower=0)
    else:
        x, info = dpotrs(factor, rhs, lower=0)
    if info != 0 or not np.all(np.isfinite(x)):
        return None
    return x


def _potrf_potrs(M, rhs):
    # M.T is Fortran-ordered when M is C-ordered (no copy) and its upper triangle is M's lower
    factor, info = dpotrf(M.T, lower=0, clean=0, overwrite_a=1)
    if info != 0:
        return None
    x, info = dpotrs(factor, rhs, lower=0)
    if info != 0 or not np.all(np.isfinite(x)):
        return None
    return x


def single_threaded_blas():
    """A context in which BLAS runs on the calling thread only: a solver whose Numba kernels
    take every core wraps its run in it, so that NumPy's BLAS calls between them (dot
    products, small factorizations) leave no worker threads spinning on the cores the next
    parallel kernel needs (measured: the interior-point method's per-iteration duality gap
    on letter, 15,000 rows, 37 ms with BLAS threads free, 5 ms without)."""
    return _blas_controller().limit(limits=1, user_api="blas")


@functools.cache
def _blas_controller() -> ThreadpoolController:
    """The BLAS libraries loaded in this process, found once (a lookup costs ~0.3 ms; a limit
    on a known controller ~0.01 ms)."""
    return ThreadpoolController()


@njit(cache=True, nogil=True)
def gram_cost(indptr, rows):
    """Multiply-adds of :func:`gram_update` over ``rows``: sum of L(L+1)/2, L stored entries."""
    total = 0
    for k in range(rows.shape[0]):
        length = indptr[rows[k] + 1] - indptr[rows[k]]
        total += length * (length + 1) // 2
    return total


@njit(cache=True, inline="always")
def _gram_row(indptr, indices, data, i, pair_ptr, pair_col, paired, j, weights, extra_value,
              d, acc):
    """acc += sum over row j's pairs k of w_k x~_k x~_k' (lower triangle)."""
    first, last = _pairs_of(pair_ptr, paired, j)
    start, end = _u(indptr[i]), _u(indptr[i + 1])
    total = 0.0
    for k in range(first, last):
        w = weights[k]
        total += w
        extra = d + (pair_col[k] if paired else 0)
        a = extra_value * w
        acc[extra, extra] += extra_value * a
        if a != 0.0:
            for p in range(start, end):
                acc[extra, _u(indices[p])] += a * data[p]
    if total == 0.0:
        return
    for p in range(start, end):
        fp = _u(indices[p])
        vp = total * data[p]
        for q in range(p, end):
            fq = _u(indices[q])
            if fp >= fq:
                acc[fp, fq] += vp * data[q]
            else:
                acc[fq, fp] += vp * data[q]


@njit(cache=True, nogil=True, parallel=True)
def _gram_kernel(indptr, indices, data, rows, pair_ptr, pair_col, weights, extra_value, d,
                 blocks, G, buffers):
    """Block 0 accumulates into G, block b > 0 into buffers[b - 1]; then G += buffers."""
    paired = pair_ptr.shape[0] > 0
    n = G.shape[0]
    for b in prange(blocks.shape[0] - 1):
        if b == 0:
            acc = G
        else:
            acc = buffers[b - 1]
            for r in range(n):
                for c in range(r + 1):
                    acc[r, c] = 0.0
        for j in range(blocks[b], blocks[b + 1]):
            _gram_row(indptr, indices, data, rows[j], pair_ptr, pair_col, paired, j, weights,
                      extra_value, d, acc)
    for r in prange(n):
        for b in range(buffers.shape[0]):
            for c in range(r + 1):
                G[r, c] += buffers[b, r, c]


_CG_MESSAGES = {
    Termination.CONVERGED: "converged: residual norm within tolerance",
    Termination.MAX_ITER: "stopped: iteration limit reached",
    Termination.NUMERICAL_ERROR: "breakdown: operator not positive definite along a search "
                                 "direction",
    Termination.STOPPED: "stopped: the callback asked to stop",
}


@dataclass(frozen=True)
class CGResult:
    """Outcome of :func:`conjugate_gradient`.

    ``status``: ``converged`` (``||r|| <= max(rtol ||b||, atol)``), ``max_iter``,
    ``numerical_error`` (breakdown: the operator is not positive definite along a search
    direction) or ``stopped`` (the callback asked to stop).
    """

    x: np.ndarray
    iterations: int
    residual_norm: float
    status: Termination

    @property
    def converged(self) -> bool:
        return self.status == Termination.CONVERGED

    @property
    def message(self) -> str:
        return _CG_MESSAGES[self.status]


def _norm(v: np.ndarray) -> float:
    """||v|| for a 1-d float64 array: what ``np.linalg.norm`` computes for one (sqrt of
    ``v.dot(v)``), bit for bit, without its dispatch (5 us a call; a small problem's truncated
    Newton step called it a dozen times for less arithmetic than that, issue 47)."""
    return math.sqrt(v.dot(v))


def conjugate_gradient(apply_A, b, x0=None, *, precondition=None, rtol=1e-8, atol=0.0,
                       max_iter=None, callback=None, quadratic_tol=None,
                       inner=None) -> CGResult:
    """Preconditioned conjugate gradients for A x = b, A symmetric positive definite.

    ``apply_A(v)`` returns A v; ``precondition(r)`` returns M^{-1} r for a symmetric positive
    definite M (identity when None).  Stops when ``||b - A x|| <= max(rtol ||b||, atol)``.
    ``callback(k, x, residual_norm)`` is called after every iteration; when it returns True the
    iteration stops with status ``stopped`` (x is then the iterate the callback saw).

    ``quadratic_tol`` (a truncated Newton step, from x0 = 0): also stop, ``converged``, once
    k (q_k - q_{k-1}) >= quadratic_tol q_k for the quadratic model q(x) = 1/2 x'Ax - b'x at
    iterate k -- Nash & Sofer's rule (Oper. Res. Lett. 9, 1990), LIBLINEAR's ``newton.cpp``
    ``pcg``: the last step's decrease, times k, is within that fraction of the whole decrease.
    q is kept without products: each step lowers it by alpha_k (r'z)_k / 2.  A step that
    raised q (round-off) stops too.

    ``inner(u, v)``: the inner product of the iteration's r'z and p'Ap (None: NumPy's ``@``,
    a BLAS call; newton passes the core's serial :func:`dot`, the one its compiled loop
    uses, so that both compute the same iterates).
    """
    b = np.asarray(b, dtype=np.float64)
    n = b.shape[0]
    if max_iter is None:
        max_iter = 10 * n
    x = np.zeros(n) if x0 is None else np.array(x0, dtype=np.float64)
    r = b - apply_A(x) if x0 is not None else b.copy()
    threshold = max(rtol * _norm(b), atol)
    residual_norm = _norm(r)
    if residual_norm <= threshold:
        return CGResult(x, 0, residual_norm, Termination.CONVERGED)
    if inner is None:
        def inner(u, v):
            return u @ v
    z = precondition(r) if precondition is not None else r
    p = z.copy()
    rz = float(inner(r, z))
    q = 0.0
    for k in range(1, max_iter + 1):
        Ap = apply_A(p)
        curvature = float(inner(p, Ap))
        if curvature <= 0.0:
            return CGResult(x, k - 1, residual_norm, Termination.NUMERICAL_ERROR)
        alpha = rz / curvature
        x += alpha * p
        r -= alpha * Ap
        residual_norm = _norm(r)
        if callback is not None and callback(k, x, residual_norm):
            return CGResult(x, k, residual_norm, Termination.STOPPED)
        if residual_norm <= threshold:
            return CGResult(x, k, residual_norm, Termination.CONVERGED)
        if quadratic_tol is not None:
            decrease = -0.5 * alpha * rz  # q_k - q_{k-1}
            q += decrease
            if decrease > 0.0 or k * decrease >= quadratic_tol * q:
                return CGResult(x, k, residual_norm, Termination.CONVERGED)
        z = precondition(r) if precondition is not None else r
        rz_new = float(inner(r, z))
        p = z + (rz_new / rz) * p
        rz = rz_new
    return CGResult(x, max_iter, residual_norm, Termination.MAX_ITER)


class TrackedOperator:
    """v -> project(M v) for :func:`conjugate_gradient` that also keeps M x for the current
    iterate x without extra products: CG moves x along the vector it multiplied last,
    x_k = x_{k-1} + alpha p, so M x_k = M x_{k-1} + alpha M p (an objective in terms of M x
    is then free at every iteration).  ``advance(x)`` is called with each new iterate;
    ``start(x0)`` before a CG from x0, whose first product (the residual's, M x0) it keeps."""

    def __init__(self, product, project, n: int):
        self.product = product
        self.project = project
        self.x = np.zeros(n)
        self.Mx = np.zeros(n)
        self.iterations = 0
        self._p = None
        self._Mp = None
        self._starting = False

    def start(self, x0) -> None:
        self.x = np.array(x0, dtype=np.float64)
        self._starting = True

    def __call__(self, p):
        self._p = p
        self._Mp = self.product(p)
        if self._starting:  # the product of the start itself: M x0
            self.Mx = self._Mp.copy()
            self._starting = False
        return self.project(self._Mp)

    def advance(self, x) -> None:
        pp = float(self._p @ self._p)
        if pp > 0.0:
            self.Mx += (float((x - self.x) @ self._p) / pp) * self._Mp
        self.x = x.copy()
        self.iterations += 1


def monitored_conjugate_gradient(operator: TrackedOperator, rhs, *, rtol: float,
                                 max_iter: int, on_iteration, precondition=None,
                                 x0=None) -> CGResult:
    """CG from 0 (or ``x0``) on a :class:`TrackedOperator`, with a say for the caller at every
    iteration.

    Contract: ``on_iteration(k, x, Mx, relative_residual) -> bool`` is called after iteration
    k with the iterate, M x (kept by the operator, no product) and ||r|| / ||rhs||; returning
    True stops the iteration at once with status ``stopped`` and that iterate (a solver reports
    a record there and asks its monitor).  Otherwise the result is :func:`conjugate_gradient`'s.
    """
    rhs_norm = max(float(np.linalg.norm(rhs)), 1e-300)

    def callback(k, x, residual_norm):
        operator.advance(x)
        return on_iteration(k, operator.x, operator.Mx, residual_norm / rhs_norm)

    if x0 is not None:
        operator.start(x0)
    return conjugate_gradient(operator, rhs, x0, precondition=precondition, rtol=rtol,
                              max_iter=max_iter, callback=callback)


@njit(cache=True, nogil=True)
def dot(a, b):
    """a . b for 1-d float64 arrays, on the calling thread.

    Solvers use it instead of ``a @ b`` in their per-iteration bookkeeping: NumPy hands long
    dot products to a multi-threaded BLAS whose spinning threads compete with Numba's for
    the cores.
    """
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@njit(cache=True, nogil=True)
def _pairwise_block(a, lo, n):
    """NumPy's pairwise sum of a[lo:lo + n] for n <= 128 (no split)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    end = n - n % 8
    while i < end:
        k = lo + i
        r0 += a[k]
        r1 += a[k + 1]
        r2 += a[k + 2]
        r3 += a[k + 3]
        r4 += a[k + 4]
        r5 += a[k + 5]
        r6 += a[k + 6]
        r7 += a[k + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def pairwise_sum(a):
    """sum_i a_i for a 1-d float64 array as NumPy's ``a.sum()`` computes it, bit for bit
    (its pairwise summation: 8 accumulators on blocks of up to 128 entries, a longer range
    split in two halves, the first a multiple of 8, summed left + right), on the calling
    thread: a compiled loop that must reproduce a NumPy driver's sums
    (``solvers.newton.compiled``) calls this rather than a sequential loop.  The halving is
    walked with an explicit stack (a recursive function does not survive Numba's cache)."""
    n = a.shape[0]
    if n <= 128:
        return _pairwise_block(a, 0, n)
    los = np.empty(64, np.int64)
    sizes = np.empty(64, np.int64)
    phase = np.zeros(64, np.int64)
    partial = np.empty(64)
    top = 0
    done = 0
    los[0] = 0
    sizes[0] = n
    while top >= 0:
        lo = los[top]
        m = sizes[top]
        if m <= 128:
            partial[done] = _pairwise_block(a, lo, m)
            done += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if phase[top] == 0:  # the left half first
            phase[top] = 1
            top += 1
            los[top], sizes[top], phase[top] = lo, half, 0
        elif phase[top] == 1:  # then the right one
            phase[top] = 2
            top += 1
            los[top], sizes[top], phase[top] = lo + half, m - half, 0
        else:  # both done: left + right
            done -= 1
            partial[done - 1] = partial[done - 1] + partial[done]
            top -= 1
    return partial[0]
