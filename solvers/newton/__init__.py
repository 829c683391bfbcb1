"""A primal truncated Newton method for the twice-differentiable losses: LIBLINEAR's
``newton.cpp`` (``-s 0``, logistic regression; ``-s 2``, the L2-SVM), stopped on the certified
duality gap.

Problem (``docs/design.md`` section 2.1), C_i = C * sample_weight_i, x~_i = (x_i, s)::

    logistic        minimize 1/2 (||w||^2 + r b^2) + sum_i C_i log(1 + exp(-y_i w~ . x~_i))
    squared_hinge   minimize 1/2 (||w||^2 + r b^2) + sum_i C_i max(0, 1 - y_i w~ . x~_i)^2

LIBLINEAR's f(w) = 1/2 w'w + C sum_i log(1 + exp(-y_i w'x_i)) (Lin, Weng & Keerthi, "Trust
region Newton method for large-scale logistic regression", JMLR 9, 2008, eq. (1)) and its L2
loss: **the same C**, the bias as the appended feature of ``-B`` (``regularized``), none, or
for the logistic loss an unregularized one (``free``: LIBLINEAR 2.40's ``-R``).

The method (:func:`solvers.newton.solver.solve`), as LIBLINEAR's ``NEWTON::newton`` since
version 2.40 (which replaced the trust region of TRON by a line search: C.-Y. Hsia, W.-L.
Chiang and C.-J. Lin, "Preconditioned conjugate gradient methods in truncated Newton
frameworks for large-scale linear classification", ACML 2018, for the preconditioner, and
L. Galli and C.-J. Lin, "A study on truncated Newton methods for linear classification", IEEE
TNNLS 2021, for the line search against the trust region):

1. at w, the gradient g = I_r w - sum_i alpha_i y_i x~_i with alpha_i = C_i L'(xi_i) and the
   Hessian H = I_r + X~' D X~, D_ii = C_i L''(xi_i) (the logistic loss: C_i sigma(m_i)
   sigma(-m_i); the squared hinge's generalized Hessian: 2 C_i inside the margin, Mangasarian
   2002), applied as products (``BinaryProblem.hessian_product``: two passes), never formed;
2. the step s from PCG on H s = -g with the diagonal preconditioner M = (1 - a) I + a diag(H),
   a = 0.01 (``preconditioning``, Hsia et al.'s mixture), from s = 0, stopped by Nash & Sofer's
   rule on the quadratic model q(s) = g's + 1/2 s'Hs: once k (q_k - q_{k-1}) >= cgtol q_k with
   cgtol = min(eps_cg, sqrt(||g||_{M^-1})) (eps_cg = 0.1, 0.5 from a warm start: ``cg_tol``),
   at most max(n_features + 1, 5) steps -- ``solvers.core.linalg.conjugate_gradient``'s
   ``quadratic_tol``;
3. a backtracking line search from step size 1, halving until f(w + a s) - f(w) <= 0.01 a g's
   (at most 20 halvings; X~s computed once, so each trial costs O(n), not a pass).

Stopping: at every iterate the KKT map's alpha_i = C_i L'(xi_i) is a dual point (inside (0,
C_i) for the logistic loss, [0, inf) for the squared hinge; balanced by the problem layer's
exact shift for the free bias), and its D(alpha) comes from the image sum_i alpha_i y_i x~_i
the gradient computed anyway (``BinaryProblem.first_order``): the run stops once the relative
gap (P - D)/P is at most ``tol``, every family's rule.  ``stop_rule="gradient"`` is
LIBLINEAR's instead: ||g(w)|| <= eps max(min(#pos, #neg), 1)/n ||g(0)|| with ``eps`` its
``-e`` (0.01).  A line search without sufficient decrease ends the run as LIBLINEAR's does
(there with a warning, here ``numerical_error`` with the gap reached: round-off at that
accuracy).

Why this method and not mfn's: mfn's exact line search and its least-squares steps on an
active set rest on a loss whose derivative is piecewise linear (the clipped family); the
logistic loss has curvature on every example and no breakpoints, so its Newton system is H
itself and its line search a backtracking one, which is what LIBLINEAR runs for ``-s 0``.  And
this rather than TRON's trust region (``tron.cpp``, the method of LIBLINEAR before 2.40 and of
scikit-learn's ``liblinear`` solver): Galli & Lin found the line search as fast or faster on
their sets, and it is what the anchor of the tests and benchmarks (LIBLINEAR ``-s 0``) runs
now, so the two compare iteration by iteration.  The Hessian products and its diagonal are the
problem layer's, the CG the core's; nothing here is a private copy.

Warm starts (``start=WarmStart(beta=...)``): from that (w, b) (bias entry 0 for ``none``), with
eps_cg 0.5 as LIBLINEAR's ``init_sol``.  Multi-class: one-vs-rest through the multiclass
layer (LIBLINEAR's), each problem's costs weighted there.

Measured (a9a, C = 1, bias regularized, tol 1e-10, while the machine ran other work at load
5-7): see the README's ``newton`` section and ``tests/test_logistic.py`` for the anchors.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers.base import SolverSpec
from solvers.newton.params import NEWTON_SOLVES, NewtonParams
from solvers.newton.solver import run, solve
from solvers.problems import BinaryProblem


def warm_up() -> None:
    """Compile what newton calls beyond the shared core (its losses' curvature kernels, the
    problem layer's products) on a few rows."""
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0],
                                [0.0, 1.0, 1.0]]))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    for loss in NEWTON_SOLVES.losses:
        for driver in ("python", "compiled"):  # a small problem's loop compiled whole too
            solve(BinaryProblem(X, y, C=1.0, loss=loss),
                  NewtonParams(C=1.0, loss=loss, max_iter=2), driver=driver)


SPECS = (
    SolverSpec(
        name="newton",
        params_model=NewtonParams,
        run=run,
        description="Truncated Newton method (LIBLINEAR -s 0 / -s 2): preconditioned CG on the "
                    "Hessian's products, backtracking line search; logistic regression and "
                    "the L2-SVM, stopped on the certified gap.",
        reference="C.-J. Lin, R. C. Weng and S. S. Keerthi, Trust region Newton method for "
                  "large-scale logistic regression, JMLR 9 (2008); C.-Y. Hsia, W.-L. Chiang "
                  "and C.-J. Lin, Preconditioned conjugate gradient methods in truncated "
                  "Newton frameworks for large-scale linear classification, ACML 2018; L. "
                  "Galli and C.-J. Lin, A study on truncated Newton methods for linear "
                  "classification, IEEE TNNLS 2021.",
        warm_up=warm_up,
        warm_start=True,
        # auto: the primal method for the logistic loss (and the squared hinge), racing
        # dual_cd's -s 7 (which itself switches here after 300 outer iterations)
        auto_candidates=((),),
    ),
)

__all__ = ["NEWTON_SOLVES", "SPECS", "NewtonParams", "run", "solve", "warm_up"]
