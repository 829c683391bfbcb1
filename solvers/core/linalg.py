"""Iterative linear algebra shared by the solvers.

* :func:`cgls` -- CGLS for the regularized, weighted least-squares problem over a subset of
  rows, with the warm start of Frommer & Maass (1999, Algorithm 3) and the relative stopping
  rule (13) of Keerthi & DeCoste (2005).  It never forms X'X: each iteration costs one product
  with X and one with X' over the selected rows (Keerthi & DeCoste, section 4.3).
* :func:`conjugate_gradient` -- preconditioned CG for a symmetric positive definite operator
  given as a function (the interior-point and LS-SVM solvers build their operators from the
  sparse kernels).

The problem :func:`cgls` solves, with x~_i = (x_i, s) the row extended by the bias column of
value ``s = bias_scale`` and D = diag(1, ..., 1, reg_bias)::

    minimize_beta   lam/2 * beta' D beta  +  1/2 * sum_k c_k (x~_{rows[k]} . beta - t_k)^2

``sqrt_c`` holds sqrt(c_k).  With ``s = 0`` the last coordinate of beta is inert (no bias).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from solvers.core.sparse import (
    matvec_rows_parallel,
    matvec_rows_serial,
    rmatvec_rows_parallel,
    rmatvec_rows_serial,
)


class _RowSubsetOperator:
    """x -> sqrt_c * (X~_rows x) and z -> X~_rows' (sqrt_c * z), x~_i = (x_i, bias_scale)."""

    def __init__(self, X, rows, sqrt_c, bias_scale, parallel):
        self.arrays = (X.indptr, X.indices, X.data)
        self.rows = rows
        self.sqrt_c = sqrt_c
        self.bias_scale = bias_scale
        self.n_features = X.shape[1]
        self._matvec = matvec_rows_parallel if parallel else matvec_rows_serial
        self._rmatvec = rmatvec_rows_parallel if parallel else rmatvec_rows_serial

    def apply(self, v, out):
        d = self.n_features
        self._matvec(*self.arrays, self.rows, v[:d], self.bias_scale * v[d], out)
        out *= self.sqrt_c

    def apply_transpose(self, z, out):
        scaled = self.sqrt_c * z
        self._rmatvec(*self.arrays, self.rows, scaled, out[:-1])
        out[-1] = self.bias_scale * scaled.sum()


def cgls(X, rows, sqrt_c, t, beta, *, bias_scale, lam, reg_bias=1.0, eps=1e-6,
         max_iter=5000, parallel=False) -> tuple[int, bool]:
    """CGLS from the warm start ``beta`` (updated in place).

    Keerthi & DeCoste, Appendix A steps 3-4: z = t - X beta, r = X'z - lam beta, p = r; each
    iteration q = X p, gamma = ||r||^2 / (||q||^2 + lam ||p||^2_D), beta += gamma p,
    z -= gamma q, r = X'z - lam D beta; stop when ||r||^2 <= eps^2 ||z||^2 (rule (13)) or after
    ``max_iter`` iterations.  ``rows`` (int64) selects the rows, ``t`` their targets.

    Returns ``(iterations, optimal)`` where ``optimal`` says rule (13) was met.
    """
    op = _RowSubsetOperator(X, rows, sqrt_c, bias_scale, parallel)
    D = np.ones(beta.shape[0])
    D[-1] = reg_bias
    z = np.empty(rows.shape[0])
    op.apply(beta, z)
    np.subtract(sqrt_c * t, z, out=z)
    r = np.empty(beta.shape[0])
    op.apply_transpose(z, r)
    r -= lam * D * beta
    phi1 = float(r @ r)
    phi4 = float(z @ z)
    if phi1 <= eps * eps * phi4 or phi1 == 0.0:
        return 0, True
    p = r.copy()
    q = np.empty(rows.shape[0])
    for iteration in range(1, max_iter + 1):
        op.apply(p, q)
        denominator = float(q @ q) + lam * float(p @ (D * p))
        if denominator <= 0.0:
            return iteration - 1, False
        gamma = phi1 / denominator
        beta += gamma * p
        z -= gamma * q
        phi4 = float(z @ z)
        op.apply_transpose(z, r)
        r -= lam * D * beta
        phi1_old = phi1
        phi1 = float(r @ r)
        if phi1 <= eps * eps * phi4:
            return iteration, True
        p *= phi1 / phi1_old
        p += r
    return max_iter, False


@dataclass(frozen=True)
class CGResult:
    """Outcome of :func:`conjugate_gradient`.

    ``status``: 0 converged (``||r|| <= max(rtol ||b||, atol)``), 1 iteration limit,
    2 breakdown (the operator is not positive definite along a search direction).
    """

    x: np.ndarray
    iterations: int
    residual_norm: float
    status: int

    MESSAGES = {
        0: "converged: residual norm within tolerance",
        1: "stopped: iteration limit reached",
        2: "breakdown: operator not positive definite along a search direction",
    }

    @property
    def converged(self) -> bool:
        return self.status == 0

    @property
    def message(self) -> str:
        return self.MESSAGES[self.status]


def conjugate_gradient(apply_A, b, x0=None, *, precondition=None, rtol=1e-8, atol=0.0,
                       max_iter=None, callback=None) -> CGResult:
    """Preconditioned conjugate gradients for A x = b, A symmetric positive definite.

    ``apply_A(v)`` returns A v; ``precondition(r)`` returns M^{-1} r for a symmetric positive
    definite M (identity when None).  Stops when ``||b - A x|| <= max(rtol ||b||, atol)``.
    ``callback(k, x, residual_norm)`` is called after every iteration.
    """
    b = np.asarray(b, dtype=np.float64)
    n = b.shape[0]
    if max_iter is None:
        max_iter = 10 * n
    x = np.zeros(n) if x0 is None else np.array(x0, dtype=np.float64)
    r = b - apply_A(x) if x0 is not None else b.copy()
    threshold = max(rtol * float(np.linalg.norm(b)), atol)
    residual_norm = float(np.linalg.norm(r))
    if residual_norm <= threshold:
        return CGResult(x, 0, residual_norm, 0)
    z = precondition(r) if precondition is not None else r
    p = z.copy()
    rz = float(r @ z)
    for k in range(1, max_iter + 1):
        Ap = apply_A(p)
        curvature = float(p @ Ap)
        if curvature <= 0.0:
            return CGResult(x, k - 1, residual_norm, 2)
        alpha = rz / curvature
        x += alpha * p
        r -= alpha * Ap
        residual_norm = float(np.linalg.norm(r))
        if callback is not None:
            callback(k, x, residual_norm)
        if residual_norm <= threshold:
            return CGResult(x, k, residual_norm, 0)
        z = precondition(r) if precondition is not None else r
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    return CGResult(x, max_iter, residual_norm, 1)
