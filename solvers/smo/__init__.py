"""LIBSVM's problems by SMO with LIBSVM's heuristics (``smo``): C-SVC below, and with
``svm_type`` nu-SVC, one-class, epsilon-SVR and nu-SVR (after C-SVC's description).

Problem (``docs/design.md`` section 2, hinge loss, free bias, kernel feature map phi)::

    minimize 1/2 ||w||^2 + sum_i C_i max(0, 1 - y_i (w.phi(x_i) + b)),   C_i = C * weight_i

which is LIBSVM's C-SVC (``svm-train -s 0 -c C``, per-example weights as ``-W``) and
scikit-learn's ``SVC(C=C)``: the same C, no rescaling.  Its dual (Chang & Lin, LIBSVM, eq. (2);
Fan, Chen & Lin, JMLR 6 (2005), eq. (1))::

    minimize 1/2 alpha'Q alpha - e'alpha,  y'alpha = 0,  0 <= alpha_i <= C_i,
    Q_ij = y_i y_j k(x_i, x_j),  f(x) = sum_i alpha_i y_i k(x_i, x) + b,  b = -rho.

Kernels (LIBSVM's -t/-g/-r/-d): linear, rbf exp(-gamma ||x-z||^2), polynomial
(gamma x.z + coef0)^degree, sigmoid tanh(gamma x.z + coef0); ``gamma="scale"`` is
scikit-learn's 1 / (n_features Var(X)), ``"auto"`` LIBSVM's 1 / n_features.  The kernel rows are
the shared core's (:mod:`solvers.core.kernels`) through its LRU cache of ``cache_mb`` MiB.  The
cache keeps full rows of K in float64 (LIBSVM keeps float32 rows of the active part of Q: the
same budget holds half as many rows here, each exact to double precision).

Algorithm (:mod:`solvers.smo.engine`): SMO with working set selection WSS 2 of Fan, Chen & Lin
(section 3: j maximizes the second-order gain b^2/a; a_ij <= 0 replaced by tau = 1e-12 as
their section 4 does for non-positive-definite kernels, so the sigmoid kernel is handled), the exact
two-variable update clipped to the box, shrinking every min(l, 1000) iterations with one
unshrink (the gradient reconstructed from G_bar) the first time m - M <= 10 eps, LIBSVM's
``calculate_rho`` for the bias.  For a C-SVC of 10,000 rows or more (``working_set``,
:mod:`solvers.smo.blocks`) the pairs are chosen inside working sets of 512 variables
(ThunderSVM's scheme), whose kernel rows are computed as one block on every core; the stopping
rules below are checked on the whole gradient either way.

Stopping (``stop_rule``):
* ``"gap"`` (default): the project's certified rule, the relative duality gap (P - D)/P <=
  ``tol`` (``solvers.base.gap_tolerance_field``).  With G = Q alpha - e maintained, the margins
  are y_i f(x_i) = G_i + 1 + y_i b and ||w||^2 = sum alpha_i (G_i + 1), so P and D cost O(n) per
  check (``KernelProblem.csvc_objectives``); variables shrunk away get their gradient from
  G_bar and the free variables' (mostly cached) rows.  SMO runs to m - M <= max(``kkt_tol``,
  ``tol``) (a loose tol, 1e-2, does not do kkt_tol's 1e-3 work first), and if the gap is not
  yet certified the KKT tolerance is divided by 10 and SMO continues.  For C-SVC
  (``polish``, :mod:`solvers.smo.polish`) the first stage stops at m - M <= 1e-2 and the point
  is polished: the free variables' KKT system (a bordered kernel system) solved exactly by a
  Cholesky factorization, the violating bounded variables taken in over a few working sets,
  then certified; SMO resumes from a point that is not (under LIBSVM's rule too, from 10,000
  rows).  It is
  the default because every solver of the project that certifies its stop shares ``tol`` and
  its default (``auto``, the race and cross-validation compare solvers on it).
* ``"kkt"``: LIBSVM's rule, the maximal violating pair m(alpha) - M(alpha) <= ``kkt_tol``
  (``-e``, default 1e-3): what ``svm-train`` and ``SVC`` do, for like-for-like comparisons.

Multi-class: ``multiclass="ovo"`` (default, LIBSVM's one-vs-one with voting: k(k-1)/2
problems on two classes' rows each, every pair with its own cache) or ``"ovr"`` (k problems on
all rows, one cache).  Measured 2026-11-26 (RBF, gamma="scale", C = 1, kkt rule, loaded 2-core
VM): letter (5,000 training rows, 26 classes) ovo 2.4 s, 87.8% test accuracy, ovr 4.7 s, 84.7%;
dna (2,000 rows, 3 classes) ovo 0.50 s, 95.0%, ovr 0.43 s, 95.1%.  Hence ovo by default.
Records (one per chunk of max(n, 1000) SMO iterations): the primal objective at the current
bias, ``optimality`` = the maximal KKT violation m - M (``kkt_violation``), and in the extras
the dual objective, the duality gap and relative gap, the number of support vectors, the
active-set size, the current KKT tolerance and the cache hit rate.

The other svm_types (``svm_type``, LIBSVM's -s; :mod:`solvers.problems.libsvm` states each
problem, its primal and its dual in LIBSVM's scaling): ``nu_svc`` (-s 1, Chang & Lin,
"Training nu-support vector classifiers: theory and algorithms", Neural Computation 13 (2001)
2119-2147: ``nu`` in (0, 1], no C; bounds 1 and e'alpha = nu l in LIBSVM's scaling, solved with
``Solver_NU``'s working sets, then the classifier rescaled by 1/r, r the margin; one-vs-one for
more classes), ``one_class`` (-s 2, Schölkopf, Platt, Shawe-Taylor, Smola & Williamson,
"Estimating the support of a high-dimensional distribution", Neural Computation 13 (2001)
1443-1471: ``nu``; LIBSVM's starting point, the first floor(nu l) alphas at 1; ``task=
"one_class"``), ``epsilon_svr`` (-s 3: ``C``, ``epsilon`` = -p; 2l variables alpha, alpha*
sharing each row's cached kernel row) and ``nu_svr`` (-s 4, Chang & Lin, "Training
nu-support vector regression: theory and algorithms", Neural Computation 14 (2002)
1959-1977: ``C``, ``nu``; the tube epsilon = -r found with the bias).  Both SVRs pose
``task="regression"`` and the loss ``epsilon_insensitive``.  Every type stops on the same
certified gap or on LIBSVM's KKT rule (for the nus, the larger of the two signs' m - M).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers.base import SolverSpec
from solvers.core.kernels import Kernel, KernelCache, column_operand, row_operand, take_operands
from solvers.problems.libsvm import LibsvmProblem
from solvers.smo.engine import reconstruct_gradient, rho_of, smo_iterations, violation
from solvers.smo.fit import fit_csvc, fit_one_class, fit_one_vs_one, fit_regression
from solvers.smo.params import SMO_SOLVES, SMOParams
from solvers.smo.solver import CSVC, SMOSolver, full_gradient


def warm_up() -> None:
    """Compile the SMO engine on a few rows for every kernel (with and without shrinking),
    the working sets of many variables, polishing and the nu-formulation path."""
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0],
                                [0.5, 1.0, 0.0]]))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    targets = np.array([0.5, -1.0, 2.0, 0.0])
    for name in ("linear", "rbf", "polynomial", "sigmoid"):
        cache = KernelCache(X, Kernel(name, 0.5, 2, 0.1), 1.0, min_rows=2)
        for shrinking in (True, False):
            CSVC(cache).solve(y, np.ones(4), SMOParams(shrinking=shrinking), None)
    # working sets of many variables (solvers.smo.blocks): 40 rows, sets of 16
    Xb = sp.csr_matrix(np.random.default_rng(0).random((40, 3)))
    cache = KernelCache(Xb, Kernel("rbf", 0.5, 2, 0.1), 1.0, min_rows=2)
    CSVC(cache).solve(np.where(np.arange(40) % 2 == 0, 1.0, -1.0), np.ones(40),
                      SMOParams(working_set=16), None)
    # polishing (solvers.smo.polish) with a cache of 2 rows: the free variables' block
    # computed over their own rows, the gradient updated from rows loaded two at a time
    cache = KernelCache(Xb, Kernel("rbf", 0.5, 2, 0.1), 2 * 8 * 40 / 2**20, min_rows=2)
    CSVC(cache).solve(np.where(np.arange(40) % 2 == 0, 1.0, -1.0), np.full(40, 10.0),
                      SMOParams(polish=True, tol=1e-9), None)
    # one-vs-one's per-pair operands taken from the whole set's (take_operands), for both
    # index widths of the CSR arrays
    for width in (np.int32, np.int64):
        Xw = X.copy()  # set after construction: SciPy's constructor narrows them to int32
        Xw.indices, Xw.indptr = X.indices.astype(width), X.indptr.astype(width)
        take_operands(row_operand(Xw), column_operand(Xw), np.array([0, 2]))
    # the nu working sets and the nonzero starting point (initial_gradient)
    cache = KernelCache(X, Kernel("rbf", 0.5, 2, 0.1), 1.0, min_rows=2)
    SMOSolver(cache).solve(LibsvmProblem("nu_svr", targets, np.ones(4), nu=0.5),
                           SMOParams(svm_type="nu_svr"), None)


SPECS = (
    SolverSpec(
        name="smo",
        params_model=SMOParams,
        run=None,
        description="LIBSVM's svm_types by SMO with LIBSVM's heuristics (second-order "
                    "working set selection, shrinking, an LRU kernel-row cache): C-SVC "
                    "(hinge loss, free bias, kernels; one-vs-one or one-vs-rest for more "
                    "classes), nu-SVC, one-class, epsilon-SVR and nu-SVR (svm_type).",
        reference="R.-E. Fan, P.-H. Chen and C.-J. Lin, Working set selection using second "
                  "order information for training support vector machines, JMLR 6 (2005) "
                  "1889-1918 (WSS 2); C.-C. Chang and C.-J. Lin, LIBSVM: a library for "
                  "support vector machines, ACM TIST 2 (2011); C.-C. Chang and C.-J. Lin, "
                  "Training nu-support vector classifiers (2001) and regression (2002), "
                  "Neural Computation; B. Schölkopf et al., Estimating the support of a "
                  "high-dimensional distribution, Neural Computation 13 (2001).",
        fit_handlers={"binary": fit_csvc, "ovr": fit_csvc, "ovo": fit_one_vs_one,
                      "one_class": fit_one_class, "regression": fit_regression},
        warm_up=warm_up,
    ),
)

__all__ = ["CSVC", "SMO_SOLVES", "SPECS", "SMOParams", "SMOSolver", "fit_csvc",
           "fit_one_class", "fit_one_vs_one", "fit_regression",
           "full_gradient", "reconstruct_gradient", "rho_of", "smo_iterations", "violation",
           "warm_up"]
