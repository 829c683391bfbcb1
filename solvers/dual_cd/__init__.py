"""Dual coordinate descent for linear SVMs: C.-J. Hsieh, K.-W. Chang, C.-J. Lin, S. S. Keerthi
and S. Sundararajan, "A dual coordinate descent method for large-scale linear SVM", ICML 2008
(LIBLINEAR's ``solve_l2r_l1l2_svc``, ``-s 3`` and ``-s 1``); and for logistic regression
H.-F. Yu, F.-L. Huang and C.-J. Lin, "Dual coordinate descent methods for logistic regression
and maximum entropy models", Machine Learning 85 (2011) (LIBLINEAR's ``solve_l2r_lr_dual``,
``-s 7``; the section "Logistic regression" below).

Problem (``docs/design.md``), C_i = C * sample_weight_i, x~_i = (x_i, s) with s = ``bias_scale``
(bias ``regularized``, LIBLINEAR's ``-B s``) or x~_i = x_i (``none``)::

    hinge           minimize 1/2 ||w~||^2 + sum_i C_i max(0, 1 - y_i w~ . x~_i)
    squared_hinge   minimize 1/2 ||w~||^2 + sum_i C_i max(0, 1 - y_i w~ . x~_i)^2

The paper's (1) is 1/2 w'w + C sum_i xi(w; x_i, y_i) with xi = max(0, 1 - y w'x) (L1-SVM) or
max(0, 1 - y w'x)^2 (L2-SVM): **the same C** as ours and LIBLINEAR's for both losses (no 1/2
on the squared hinge in either), with a bias only as the appended feature (section 1: "we
do not consider the bias term ... one can augment each instance with an additional
dimension"), exactly our ``regularized`` mode; per-example C_i replace C (LIBLINEAR's class
weights ``-wi`` are C_i = C w_{y_i}).  The dual (4) is::

    minimize f(alpha) = 1/2 alpha' Qbar alpha - e' alpha   s.t.  0 <= alpha_i <= U_i,
    Qbar = Q + D,  Q_ij = y_i y_j x~_i . x~_j

with U_i = C_i, D_ii = 0 (hinge) and U_i = inf, D_ii = 1/(2 C_i) (squared hinge), which is
-D(alpha) of :class:`solvers.problems.BinaryProblem` (its conjugate term C_i L*(alpha_i/C_i) =
alpha_i^2 / (4 C_i) is 1/2 D_ii alpha_i^2); U and D come from the loss layer (the loss's dual
bounds and ``dual_quadratic``, :meth:`BinaryProblem.dual_qp`).  A free bias adds the
constraint sum_i y_i alpha_i = 0, which a one-variable step cannot keep: it is refused
(:data:`DUAL_CD_SOLVES`).

The method (:func:`solvers.dual_cd.kernels.dcd_epochs`):

* Algorithm 1: keep w = sum_i alpha_i y_i x~_i; for each i, G = y_i w . x~_i - 1 + D_ii
  alpha_i (eq. (10)), the projected gradient PG (eq. (8)); if PG != 0 (|PG| > 1e-12 as in
  LIBLINEAR), alpha_i <- min(max(alpha_i - G / Qbar_ii, 0), U_i) and w <- w + (alpha_i -
  alpha_i^old) y_i x~_i;
* section 3.1: a random permutation of the (active) examples every outer iteration
  (reproducible: ``permutation_seed``);
* Algorithm 3, shrinking (``shrinking``): M-bar, m-bar are the largest and smallest PG of the
  last pass (+inf / -inf when that pass had M-bar <= 0 / m-bar >= 0); an example with
  alpha_i = 0 and G > M-bar, or alpha_i = U_i and G < m-bar, leaves the active set (eq. (18));
  once the active set's PG spread M - m is at most eps, the whole set is checked once more
  (the bounds reset to +-inf) before stopping; the stop is the spread within eps on the full
  set -- ``stop_rule="projected_gradient"`` with ``eps`` (LIBLINEAR's ``-e``, 0.1 by
  default), an absolute, uncertified rule.

Stopping (``stop_rule="gap"``, the default, every solver's rule): one pass over the data
gives P(w) (the margins) and D(alpha) (from w, sum alpha_i and the conjugate term; no pass):
stop once (P - D)/P <= ``tol``.  The first check follows one pass's worth of coordinate
steps; each next one follows once the descent has run ``gap_check_work`` (2) times as long as
the last check took, so checks take at most about a third of the run: every outer iteration
while every example is active, every few once shrinking has made the passes cheap (a budget
in passes over the data instead made checks 30-45% of the run on a9a and w8a:
bench/history/measurements.json, dual-cd-gap-checks).
Each check is a record:
objective P(w), optimality the relative gap, extras the dual value, the PG spread of the last
pass, the active set's size and eps.  In this mode eps is only Algorithm 3's first threshold:
when the full set meets it with the gap still above tol, eps is divided by 10 and the descent
goes on.  The final gap is recomputed with w = sum alpha_i y_i x~_i formed afresh (the w kept
by the steps accumulates round-off).  ``max_iter`` counts outer iterations (LIBLINEAR's 1000).
The dual point is the descent's own alpha: a better one from w was tried (issue 52) on
news20 made binary, hinge, C = 1 -- the KKT map C_i L'(xi_i) clipped to the box, and one Jacobi
step of the coordinate update, each with an exact line search on D from alpha (one pass) --
and certified no smaller gap at any of 4-256 epochs (docs/design.md, 4.8), so none is made.

The Newton switch (squared hinge and logistic, ``newton_switch_iter`` = 300): LIBLINEAR's
``train_one`` runs ``-s 1`` for at most ``dual_solver_max_iter`` = 300 iterations and, when it
reaches them, hands its w to the primal Newton method (``-s 2``, "Switching to use -s 2", with
a tenth of the primal tolerance its eps gives); 2.50 does the same for ``-s 7`` ("Switching to
use -s 0"); for ``-s 3`` (the hinge) it only warns.  Here a run of a loss that is not piecewise
linear with no stop after ``newton_switch_iter`` outer iterations (and max_iter above that)
hands w to the Newton method it was given (``newton``; the registered spec's,
:func:`with_newton`, ``solvers.registry.primal_newton``: mfn's from that point with
beta-seeding's ini = 1 for the squared hinge, the newton family's for the logistic loss;
families do not import each other), which ends the run on the same certified gap ``tol``; called
without one (``dual_cd.solve`` directly) it does not switch.  The message and
``extras["newton_switch"]`` say so (the epoch, the
gap there, mfn's Newton and CG iterations and seconds), mfn's records follow the epochs' in
the same log (numbered on, timed from the run's start, ``stage="newton"``), and the state moves
to mfn's point (alpha by the KKT map, w from alpha) for a C path's next point.  On news20 made
binary at C = 1 dual CD alone ended at its 1000 iterations 0.9% above the optimum (gap 2.4e-2)
whatever tol; with the switch it stops certified (see the README's dual_cd section).

Logistic regression (``loss="logistic"``, :func:`solvers.dual_cd.kernels.lr_dual_epochs`):
the problem 1/2 ||w~||^2 + sum_i C_i log(1 + exp(-y_i w~ . x~_i)) is Yu et al.'s (1) with the
same C (LIBLINEAR's ``-s 0``/``-s 7``), the bias again the appended feature.  Its dual (their
(4)) is

    minimize 1/2 alpha'Q alpha + sum_i alpha_i log alpha_i + (C_i - alpha_i) log(C_i - alpha_i)
    subject to 0 <= alpha_i <= C_i,

-D(alpha) of the problem layer up to the constant sum_i C_i log C_i (the loss layer's
conjugate of the logistic loss, ``solvers.losses.Logistic``).  Not a QP, so the loss's
``dual_quadratic`` (None) sends it to its own steps: Algorithm 5, one coordinate at a time in
a random permutation, each sub-problem (their (30)) solved by their modified Newton method
on alpha_i or on C_i - alpha_i, whichever has its optimum in (0, C_i/2] (both are kept, so
neither loses its digits near 0), a step past 0 replaced by a tenth of the point (eta = 0.1),
at most 100 steps to an inner tolerance that starts at 1e-2 and falls tenfold after a pass of
at most n/10 Newton steps, down to min(1e-8, eps).  alpha starts (cold) at LIBLINEAR's
min(1e-3 C_i, 1e-8); a warm start's alpha is clipped into that interior
(:func:`~solvers.dual_cd.solver.entropy_interior`).  No shrinking, as in LIBLINEAR (the
optimal alpha_i are never at a bound).  The certified gap is the same check as for the
hinge: P(w) at w = sum_i alpha_i y_i x~_i against D(alpha); ``stop_rule=
"projected_gradient"`` is LIBLINEAR's rule here, max_i |g'(alpha_i)| < eps over a pass (the
records' ``projected_gradient_spread`` holds it).  After ``newton_switch_iter`` outer
iterations without the stop w goes to the newton family's truncated Newton method, as
LIBLINEAR 2.50's ``-s 7`` switches to ``-s 0`` (below): on svmguide1's raw features (rows of
norm up to 619) Algorithm 5 alone was still at a relative gap 0.6 after 300 outer iterations,
and so was a line-by-line Python transcription of ``solve_l2r_lr_dual``, while LIBLINEAR,
switching, ended at the optimum.  Measured (a9a, C = 1, bias regularized, tol 1e-10, while
the machine ran other work at load 5-7): 53 outer iterations, 4.8 s (Numba compiled),
objective 10529.311404477588 against LIBLINEAR -s 7's 10529.311404214899 at eps 1e-10 (2.1 s)
and -s 0's 10529.311404214992 (1.4 s): 2.5e-11 relative.

Warm starts (``start=WarmStart(...)``, ``solvers.base.WarmStart``):

* from a dual point alpha (``WarmStart(dual=alpha)``, taken before a ``beta``): clipped into
  the box (any point of the box is feasible), w recomputed from it;
* from a primal point beta = (w, b) (``WarmStart(beta=beta)``, the spec's warm start used by
  C paths of other families, auto's hand-overs and one-vs-rest starts): alpha_i = C_i L'(1 -
  m_i), the loss's derivative at beta's margins (the KKT map), clipped, and w recomputed
  from alpha, since the steps need w = sum alpha_i y_i x~_i.  Sound for the squared hinge (the
  map is continuous and exact at the optimum); for the hinge it gives alpha_i in {0, C_i},
  right off the margin and a guess on it (:func:`primal_start`);
* a C path (:func:`solve_path`, the spec's ``path``): each point from the last alpha scaled by
  C_new / C_old, which maps the box [0, C_i] onto the new one, and w scaled alike.

Regression (``task="regression"``, the epsilon-insensitive loss and its square): Ho & Lin's dual
coordinate descent for linear SVR (JMLR 2012, Algorithm 4; LIBLINEAR -s 13 / -s 12),
:mod:`solvers.dual_cd.regression`.

Multi-class: one-vs-rest through the shared multiclass layer, and ``multiclass=
"crammer_singer"``: the Crammer-Singer problem (``docs/design.md``, LIBLINEAR ``-s 4``'s, the same
C; :class:`solvers.problems.CrammerSingerProblem`) by the sequential dual method of S. S.
Keerthi, S. Sundararajan, K.-W. Chang, C.-J. Hsieh and C.-J. Lin, "A sequential dual method for
large scale multi-class linear SVMs", KDD 2008 (:func:`solve_crammer_singer`): one dual block
alpha_i (one entry per class, sum_m alpha_i^m = 0, alpha_i^m <= C_i [m = y_i]) at a time in a
random order, its sub-problem solved exactly by sorting (their section 3, LIBLINEAR's
``solve_sub_problem``).  With ``shrinking`` (the default), LIBLINEAR's shrinking of
``Solver_MCSVM_CS``: a class whose variable sits at its bound with a gradient below the
smallest free one leaves the example's sub-problem, an example with one class left leaves the
pass, and all come back when a pass's largest violation falls below a threshold that halves
each time (from max(10 eps, 1) down to eps).  Stops on the certified gap of the problem layer
(``tol``, computed on the whole W and alpha whatever is shrunk), or with
``stop_rule="projected_gradient"`` on LIBLINEAR's rule (the largest max_m G_m - min_{m:
alpha_i^m < bound} G_m of a pass below ``eps``, twice: once shrunk, once over everything).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
import scipy.sparse as sp

from solvers.base import SolverSpec
from solvers.dual_cd.cocoa import COCOA_SOLVES, run_distributed
from solvers.dual_cd.kernels import (
    crammer_singer_epochs,
    dcd_epochs,
    lr_dual_epochs,
    svr_epochs,
)
from solvers.dual_cd.params import DUAL_CD_SOLVES, DualCDParams
from solvers.dual_cd.regression import fit_regression, solve_regression
from solvers.dual_cd.solver import (
    DualState,
    NewtonMethod,
    crammer_singer_problem,
    dual_start,
    fit_crammer_singer,
    primal_start,
    run,
    solve,
    solve_crammer_singer,
    solve_path,
    solve_state,
)
from solvers.problems import BinaryProblem, CrammerSingerProblem, RegressionProblem


def warm_up() -> None:
    """Compile the coordinate-descent loop (both index widths of CSR) on a few rows."""
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0],
                                [0.0, 1.0, 1.0]]))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    for index_dtype in (np.int32, np.int64):
        Xi = X.copy()
        Xi.indices = Xi.indices.astype(index_dtype)
        Xi.indptr = Xi.indptr.astype(index_dtype)
        for loss in dict.fromkeys(c.loss for c in DUAL_CD_SOLVES.combinations
                                  if c.task == "binary"):
            problem = BinaryProblem(Xi, y, C=1.0, loss=loss)
            solve(problem, DualCDParams(C=1.0, loss=loss, max_iter=3))
        solve_crammer_singer(CrammerSingerProblem(Xi, np.array([0, 1, 2, 1]), 3),
                             DualCDParams(loss="hinge", multiclass="crammer_singer",
                                          max_iter=3))
        for loss in ("epsilon_insensitive", "squared_epsilon_insensitive"):
            for driver in ("python", "compiled"):  # a small problem's loop compiled whole
                solve_regression(RegressionProblem(Xi, np.array([0.5, -1.0, 2.0, 0.0]),
                                                   loss=loss),
                                 DualCDParams(task="regression", loss=loss, max_iter=3),
                                 driver=driver)


SPECS = (
    SolverSpec(
        name="dual_cd",
        params_model=DualCDParams,
        run=run,
        description="Dual coordinate descent (LIBLINEAR -s 1 / -s 3) for the hinge and "
                    "squared hinge losses, with random permutations and shrinking, for "
                    "logistic regression (LIBLINEAR -s 7, a modified Newton method per "
                    "coordinate), and for L2- and L1-loss support vector regression (Ho & "
                    "Lin, LIBLINEAR -s 12 / -s 13); a regularized bias or none.",
        reference="C.-J. Hsieh, K.-W. Chang, C.-J. Lin, S. S. Keerthi and S. Sundararajan, A "
                  "dual coordinate descent method for large-scale linear SVM, ICML 2008; "
                  "H.-F. Yu, F.-L. Huang and C.-J. Lin, Dual coordinate descent methods for "
                  "logistic regression and maximum entropy models, Machine Learning 85, "
                  "2011; C.-H. Ho and C.-J. Lin, Large-scale linear support vector "
                  "regression, JMLR 13, 2012.",
        fit_handlers={"crammer_singer": fit_crammer_singer, "regression": fit_regression},
        warm_up=warm_up,
        warm_start=True,
        path=solve_path,
        distributed=run_distributed,
        distributed_solves=COCOA_SOLVES,
        auto_candidates=((),),
        auto_fixed=(("gap_check_clock", "work"),),
    ),
)


def with_newton(newton: NewtonMethod) -> SolverSpec:
    """The dual_cd spec whose squared-hinge runs, C paths and L2-loss regressions switch to
    ``newton`` at ``newton_switch_iter`` (the registry passes mfn's Newton method: families
    do not import each other)."""
    spec = SPECS[0]
    handlers = {**spec.fit_handlers, "regression": partial(fit_regression, newton=newton)}
    return replace(spec, run=partial(run, newton=newton),
                   path=partial(solve_path, newton=newton), fit_handlers=handlers)


__all__ = [
    "DUAL_CD_SOLVES",
    "SPECS",
    "DualCDParams",
    "DualState",
    "NewtonMethod",
    "crammer_singer_epochs",
    "crammer_singer_problem",
    "dcd_epochs",
    "lr_dual_epochs",
    "dual_start",
    "fit_crammer_singer",
    "fit_regression",
    "primal_start",
    "run",
    "solve",
    "solve_crammer_singer",
    "solve_path",
    "solve_regression",
    "solve_state",
    "svr_epochs",
    "warm_up",
    "with_newton",
]
