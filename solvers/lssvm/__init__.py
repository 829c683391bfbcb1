"""The least-squares SVM family: Suykens' LS-SVM, Fung & Mangasarian's proximal SVM and the
relaxed LS-SVM of Joshi, Jayadeva, Ramakrishnan & Chandra ("Fast algorithms for least squares
SVMs"; equation numbers below are theirs), with linear, RBF and polynomial kernels.

Conventions
-----------
Labels y_i = +-1, per-example cost C_i = C * sample_weight_i, phi the kernel's feature map.
Every problem is written as in ``docs/design.md`` (1/2 ||w||^2 + bias term + C sum loss(m_i),
m_i = y_i f(x_i)); the papers write C_J/2 q'q (Joshi) or gamma/2 e'e (Suykens), so
**Suykens' gamma = Joshi's C = 2 C** (per example 2 C_i).  All three keep the least-squares loss
(1 - m)^2 except SesquiSMO (below).

``lssvm`` -- Suykens & Vandewalle, (5)-(7), free bias::

    minimize 1/2 ||w||^2 + C sum_i (1 - y_i (w.phi(x_i) + b))^2

  Kernel form: f(x) = sum_j beta_j k(x_j, x) + b with beta_j = y_j alpha_j, and (7) -- read
  with K as the label-scaled Omega_ij = y_i y_j k(x_i, x_j), as in Suykens & Vandewalle --
  is equivalent to (K + Lambda) beta + b e = y, e'beta = 0, Lambda = diag(1 / (2 C_i)).
  * linear kernel: the primal least-squares problem by CGLS (:func:`solvers.core.cgls`, never
    forming X'X), in rounds of decreasing tolerance eps = 0.1, 0.01, ..., ``cg_tol`` (rule (13)
    of Keerthi & DeCoste: ||X'z - lambda beta|| <= eps ||z||), one monitor record per round;
  * ``direct``: one Cholesky factorization of K + Lambda and the two solves of Suykens et al.
    (1999): (K + Lambda) [u, v] = [y, e], b = e'u / e'v, beta = u - b v;
  * ``iterative``: conjugate gradients on the null space of e'beta = 0 (projected CG with a
    Jacobi preconditioner): P (K + Lambda) P beta = P y, P = I - ee'/n, one kernel product per
    iteration through the kernel-row cache; then b = mean(y - (K + Lambda) beta).

``proximal_svm`` -- Fung & Mangasarian, (9)-(12), regularized bias (constant feature of value
s = ``bias_scale``; s = 1 is the paper)::

    linear:  minimize 1/2 (||w||^2 + b~^2) + C sum_i (1 - y_i (w.x_i + s b~))^2
    kernel:  minimize 1/2 (||u||^2 + b~^2) + C sum_i (1 - y_i (sum_j u_j k(x_j, x_i) + s b~))^2

  The kernel problem is the linear one on the empirical kernel map x -> (k(x_1, x), ...,
  k(x_n, x)), which is what (10)-(12) state (their w is D u).  (12) is solved as
  (G + s^2 ee' + Lambda) z = y with v = D z, G = K K' (the kernel matrix times itself; X X' for
  the linear kernel), giving u = K z, w = X'z and b~ = s e'z -- one factorization serves every
  one-vs-rest class because the matrix does not depend on the labels.
  * linear kernel: CGLS on the primal problem as for ``lssvm`` (``direct``: (12) densely);
  * ``direct``: Cholesky of G + s^2 ee' + Lambda;
  * ``iterative``: CG on the same matrix, two kernel products per iteration.

``relaxed_lssvm`` -- Joshi et al. (13)-(21), bias weighted by A (``docs/design.md``'s regularized
bias with bias_scale = 1/sqrt(A))::

    minimize 1/2 ||w||^2 + A/2 b^2 + C sum_i (1 - y_i (w.phi(x_i) + b))^2         (13), (6)

  Dual (20): minimize 1/2 lambda'Q lambda - e'lambda.  Derived from (14)-(19),
  Q_ij = y_i y_j (K_ij + 1/A) + delta_ij / C_J,i with C_J,i = 2 C_i; as printed, (21) drops the
  y_i y_j factor on 1/A.  f(x) = sum_k lambda_k y_k (k(x_k, x) + 1/A) (19), b = lambda'y / A
  (16).
  * ``variant="2smo"``: greedy coordinate descent on (20): pick the multiplier that violates
    (18) most, |g_k| with g = Q lambda - e = m + lambda / C_J - 1, and minimize exactly along
    it: lambda_k += (1 - lambda_k / C_J,k - y_k f(x_k)) / (K_kk + 1/A + 1/C_J,k).  This is
    (31) with the numerator read as the violation of (18): (28) leaves out the lambda_k / C
    that Q_kk carries beyond K_kk + 1/A, and (31) as printed would converge to y_k f(x_k) = 1
    (the hard-margin interpolant), not to (18).
  * ``variant="sesquismo"``: the inequality constraints (33) make the multipliers
    non-negative, and the same step is clipped at 0; a multiplier violates (34)-(35) by
    max(0, -g_k) at 0 and by |g_k| when positive.  (33) is not redundant, as the paper
    suggests: the error q_i = max(0, 1 - m_i), so this variant solves the squared-hinge
    problem 1/2 ||w||^2 + A/2 b^2 + C sum max(0, 1 - m_i)^2 (an L2-SVM), and its solution has
    fewer support vectors (Table 1 shows it on several datasets).
  * ``sumt=True``: section VI.  (42) is (20) with alpha_p = 1/(2A), so driving A -> 0 solves
    the classical LS-SVM dual (39)-(41): rounds with A <- rho A, each warm-started from the
    last (the gradient moves by (1/A_new - 1/A_old) y (y'lambda), no kernel product), until
    |lambda'y| <= ``sumt_tol`` * sum |lambda_i|; lambda'y is reported per round.
  The SMO inner loop runs in Numba, fed by the kernel-row cache (LRU, ``cache_mb``) and the
  cached Q_kk (the paper caches K_ii); when every row fits, 2SMO computes them up front in
  parallel (its multipliers are all nonzero at the solution in general, so every row is
  needed).  Convergence is checked again on a gradient recomputed from scratch, so rounding
  drift cannot fake it.  With the linear kernel the same algorithms run on linear kernel
  rows.

Practical size
--------------
The kernel path through the row cache (``fit_kernel``'s iterative systems, 2SMO and
SesquiSMO; a direct solve builds the dense matrix once, without it) is practical while the
n x n kernel matrix fits the row cache: n <=
sqrt(``cache_mb`` MiB / 8 bytes), **5,792 rows at the default 256 MiB** (8,192 at 512 MiB).
Beyond it every CG iteration or SMO epoch recomputes most kernel rows: measured on ijcnn1
(RBF, gamma = 1, C = 1, default cache, 2-core VM under load from other jobs, 2026-11-26),
``lssvm`` took 4.5 s on 5,000 rows and 249 s on 10,000, ``relaxed_lssvm`` 1.2 s and 73 s.
A larger job fails at once with :class:`~solvers.base.InvalidParametersError` naming the
limit (:func:`solvers.lssvm.fit.check_kernel_size`), and points to
``approximation="nystrom"`` (or ``"icf"``) with a ``rank``: the kernel is then factored as
G G' (``solvers.approximation``) and the family solves its linear problem on G (the primal
CGLS for ``lssvm`` and ``proximal_svm``), or to a larger ``cache_mb``.  The linear kernel's
primal CGLS has no such limit.

Methods and models
------------------
``method="auto"`` is CGLS for the linear kernel and, for the others, the dense factorization up
to ``config.LSSVM_DIRECT_MAX_ROWS`` (``PROXIMAL_DIRECT_MAX_ROWS``) rows, CG beyond.  Multi-class
problems are one-vs-rest; the kernel matrix, its factorization or the row cache is built once
for all classes.  Kernels other than linear give a :class:`~solvers.models.KernelModel` (the
rows with a nonzero coefficient, coef_j = y_j alpha_j, the bias); the linear kernel gives a
:class:`~solvers.models.LinearModel` with w = sum_j coef_j x_j.

Objectives and optimality
-------------------------
Every record carries the primal objective of the solver's own problem above, evaluated in
kernel form (1/2 ||w||^2 = 1/2 beta'K beta, or 1/2 sum lambda_i m_i + ... for the relaxed
problem), and an optimality measure named in ``extras["optimality_measure"]``: the relative
gradient norm ||grad P|| / ||grad P(0)|| (linear CGLS paths), the relative residual of the
solved system (direct and CG), or the largest KKT violation (SMO; the dual objective and the
duality gap are in the extras).  Kernel solvers refuse zero sample weights (1/C_i would be
infinite): drop those examples first.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers.base import SolverSpec
from solvers.core.kernels import Kernel, KernelCache, kernel_decision, kernel_matrix
from solvers.lssvm.fit import dense_system, fit_kernel, fit_kernel_path
from solvers.lssvm.params import (
    KernelSolverParams,
    LSSVMParams,
    ProximalSVMParams,
    RelaxedLSSVMParams,
    SystemParams,
)
from solvers.lssvm.primal import run_linear
from solvers.lssvm.smo import exact_gradient, max_violation, smo_updates


def warm_up() -> None:
    """Compile what the family calls beyond the shared core: kernel rows and matrices of each
    kernel (serial and parallel), the row cache, the kernel decision function and the SMO
    loops, on a few rows."""
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]]))
    y = np.array([1.0, -1.0, 1.0])
    for name in ("linear", "rbf", "polynomial"):
        kernel = Kernel(name, 0.5, 2, 1.0)
        for parallel in (False, True):
            kernel_matrix(X, X, kernel, parallel=parallel)
            kernel_decision(X, X, kernel, np.ones((1, 3)), np.zeros(1), parallel=parallel)
        for parallel in (False, True):
            cache = KernelCache(X, kernel, 1.0, parallel=parallel)
            cache.matvec(np.ones(3))
            cache.fill()
        lam = np.zeros(3)
        g = -np.ones(3)
        inv_cj = np.ones(3)
        q_diag = cache.diagonal + 1.0 + inv_cj
        for nonneg in (False, True):
            smo_updates(cache.rows, cache.columns, cache.kernel_params, cache.store, y, inv_cj,
                        1.0, q_diag, nonneg, lam, g, 1e-3, 3)
            max_violation(g, lam, nonneg)
        exact_gradient(cache.rows, cache.columns, cache.kernel_params, cache.store, y, inv_cj,
                       1.0, lam, g)


_SUYKENS = ("J. A. K. Suykens and J. Vandewalle, Least squares support vector machine "
            "classifiers, Neural Processing Letters 9 (1999) 293-300")

_KERNEL_FAMILY = {
    "fit_handlers": {"binary": fit_kernel, "ovr": fit_kernel},
    "path_handlers": {"binary": fit_kernel_path, "ovr": fit_kernel_path},
    "warm_up": warm_up,
    "dense_system": dense_system,
}
"""What the three solvers of the family share: the kernel fit and its C path (binary and
one-vs-rest), one warm-up and the dense system of their kernel problems."""

SPECS = (
    SolverSpec(
        name="lssvm",
        params_model=LSSVMParams,
        run=run_linear,
        warm_start=True,
        auto_candidates=((("kernel", "linear"),),),
        description="Classical LS-SVM (free bias): CGLS on the primal for the linear kernel; a "
                    "direct or projected-CG solve of the kernel system (7) otherwise.",
        reference=_SUYKENS + "; S. Joshi et al., Fast algorithms for least squares SVMs, "
                             "eq. (7).",
        **_KERNEL_FAMILY,
    ),
    SolverSpec(
        name="proximal_svm",
        params_model=ProximalSVMParams,
        run=run_linear,
        warm_start=True,
        auto_candidates=((("kernel", "linear"),),),
        description="Proximal SVM (regularized bias): CGLS on the primal for the linear "
                    "kernel; the kernel system (12) directly or by CG otherwise.",
        reference="G. Fung and O. L. Mangasarian, Proximal support vector machine classifiers, "
                  "KDD 2001, 77-86; S. Joshi et al., Fast algorithms for least squares SVMs, "
                  "eqs. (9)-(12).",
        **_KERNEL_FAMILY,
    ),
    SolverSpec(
        name="relaxed_lssvm",
        params_model=RelaxedLSSVMParams,
        run=None,
        description="Relaxed LS-SVM (bias weighted by A) by 2SMO or SesquiSMO with a kernel-row "
                    "cache; optional SUMT loop driving A to 0 (the classical LS-SVM).",
        reference="S. Joshi, Jayadeva, G. Ramakrishnan and S. Chandra, Fast algorithms for "
                  "least squares SVMs, eqs. (13)-(35) and section VI.",
        **_KERNEL_FAMILY,
    ),
)

__all__ = [
    "SPECS",
    "KernelSolverParams",
    "LSSVMParams",
    "ProximalSVMParams",
    "RelaxedLSSVMParams",
    "SystemParams",
    "fit_kernel",
    "fit_kernel_path",
    "run_linear",
    "warm_up",
]
