"""L2-SVM-MFN: the modified finite Newton method of Keerthi & DeCoste (JMLR 6, 2005).

Problem (``docs/design.md``), t_i = +-1, x~_i = (x_i, s) with s = ``bias_scale`` (s = 0 and b = 0
for ``bias="none"``), C_i = C * sample_weight_i::

    minimize_beta   1/2 ||beta||^2 + sum_i C_i loss(t_i x~_i . beta)            beta = (w, b)

The paper writes it as f(beta) = lambda/2 ||beta||^2 + sum_i c_i L(xi_i), xi_i = 1 - t_i y_i,
L(xi) = xi^2 / 2 for xi > 0 (eqs. (2), (19)-(20)).  ``docs/design.md``'s squared hinge has no 1/2,
so our objective is f scaled by 2C: **lambda = 1/(2C)** (the paper's lambda = 1/C for its own
C/2 sum xi^2), and c_i is the sample weight.  The bias is regularized like a weight (the
paper's b^2/2 term, LIBLINEAR's ``-B s``; section 2's gamma-scaled bias is ``bias_scale``
= 1/gamma), or absent.  A free (unregularized) bias is refused.

One engine serves every loss the paper treats, all with a derivative of the form
loss'(xi) = kappa * clip(xi - xi_lo, 0, width); CGLS works on the problem divided by kappa C,
so lambda = 1/(kappa C):

* ``squared_hinge``: the L2-SVM of sections 2-4 and Appendix A (kappa = 2, width = inf);
* ``modified_huber``: section 6, eqs. (21)-(23).  ``docs/design.md``'s loss is twice Keerthi's L_h
  (kappa = 2, width = 2), so again lambda = 1/(2C).  Three index sets I0, I1, I2; CGLS solves
  the least-squares problem (23), shifted by q = (2/lambda) sum_{I2} c_i t_i x~_i; the line
  search watches examples move between the three sets;
* ``hinge``: section 6's homotopy.  The L1 loss is replaced by tau/2 L_h(xi/tau + 1) (kappa =
  1/(2 tau), xi_lo = -tau, width = 2 tau, lambda = 2 tau / C), which is 0 below -tau, equals
  xi above tau and exceeds the hinge by at most tau/4.  tau_j = 2^-j, j = 0, 1, ...; each
  problem is seeded with the previous solution (Appendix A's ini = 1) and solved to the final
  eps.  The paper leaves the stopping rule open ("several details need to be worked out"); ours
  is a certificate: alpha_i = C_i h'_tau(xi_i) lies in the hinge dual's box [0, C_i], so
  P_hinge(beta) - D_hinge(alpha) bounds the distance to the hinge optimum, and the homotopy
  stops once it is at most ``tol`` (every solver's certified relative gap; default 1e-6, until
  2026-11-26 a hinge-only 1e-4) relative to P_hinge.  Measured against an interior-point solve of
  the hinge dual (certified to ~1e-12, bench/references.py), the same with either
  ``linear_solver``: with the default the objective ends 8.6e-6 to 8.8e-5 above the optimum on
  four small UCI sets (C = 0.1, 1, 10; tau = 2^-6..2^-10) and 2.3e-5 / 3.1e-5 on a9a (C = 0.1 /
  1, tau = 2^-6), always inside the certified gap; ``tol=1e-6`` gives 5.9e-7 / 6.2e-7 on a9a
  (tau = 2^-11 /
  2^-12).  LIBLINEAR -s 3 at eps 1e-10 ends 5.7e-6 / 1.2e-4 above the optimum on a9a.  Small
  tau makes the least-squares problems ill-conditioned (lambda halves with tau): with CGLS the
  iterations per round grow (a9a at C = 1: 4,800 CG iterations in all for tau down to 2^-6,
  19,875 down to 2^-12) -- slower, not stalled, but a reason to stop on the gap rather than on
  a fixed small tau; a factorization costs the same whatever tau (a9a at C = 1: 0.17 s to
  tau = 2^-6 and 0.22 s to 2^-12 with the default step 3, 0.28 s and 0.45 s with CGLS).

Each Newton iteration (Appendix A): CGLS on the active rows only, warm-started at the current
point (Frommer & Maass) and stopped by the relative rule (13) ``||r|| <= eps ||z||``; the full
outputs y(beta_bar); step 5's optimality checks with tol = 1e-8 (at most 1% of a finite
quadratic band, which matters only for the homotopy's tau below 2^-26); otherwise the exact line
search over the breakpoints (eqs. (14)-(18); the crossing the sorted sweep of step 6 finds is
located by selection, in expected O(m) instead of O(m log m)).  Heuristic 1: after a crude
start (ini = 0) the first CGLS call stops after 10 iterations.  Heuristic 2: a first round at
eps = 1e-2, a second at the requested eps = 1e-6.  ``max_iter`` = itermax = 50 Newton
iterations per run of Appendix A (both rounds of heuristic 2 together); an objective that
rises ends the run with status ``failed`` (step 7's error exit), as does a line search that
finds no finite step (the least-squares problem singular in floating point).

What is not in Appendix A, and why.  Appendix A as written is ``linear_solver="cgls",
preconditioning=0, c_path_start=None, newton_forcing=None``; the defaults add five things,
each measured in
``bench/history/notebook.md`` (section MFN) against LIBLINEAR in the same run.

* Step 3 by factorization (``linear_solver``, default "auto").  Section 4.3 names two ways to
  solve the least-squares problem (11)/(12), "factorization methods" and CG, and prefers CGLS
  for large sparse data; its Table 2 finds factorization slightly faster on dense data with
  few features.  With ``linear_solver="cholesky"`` the Gram matrix G = sum_{i in I} c_i x~_i
  x~_i' of the active terms is kept up to date as terms enter and leave I (about L^2 / 2
  multiply-adds per changed term of L stored entries; rebuilt when more terms changed than
  remain), the normal equations (lambda I + G) delta = r^0 at CGLS's warm start are solved by
  Cholesky, and CGLS starts from beta + delta: it checks rule (13) there (two products over
  the active rows) and iterates only if round-off left the rule unmet.  Heuristic 1's 10 CGLS
  iterations on the first call, heuristic 2's rounds, step 5's checks and the exact line
  search are Appendix A's.  "auto" factorizes when the Cholesky factorization (n^3 / 3) and a
  Gram matrix of all rows each cost at most 40 passes over the stored entries
  (``solvers/config.py``): a9a, w8a, ijcnn1 and mushrooms (23-301 parameters), not news20
  (62,062) or the synthetic text problem (100,001).  It replaces the 400-3800 CG iterations
  CGLS needs on w8a and a9a at C >= 1: time to a 1e-6 gap on w8a at C = 100, 0.069 s
  against 0.110 s (CGLS with the other defaults) and 0.339 s (Appendix A as written).
* CGLS's diagonal preconditioner (``preconditioning``, default "auto"): M = lambda I + alpha
  diag(X_I'X_I), alpha = 0.01 (the mix of LIBLINEAR's Newton solver).  It changes the CG
  directions, not the iterates' limit or rule (13).  On the synthetic problem it takes a solve
  from 5.9 s to 0.76 s (to a 1e-6 gap; 120 CG iterations in all), and it cuts the CG iterations
  of the first Newton step 2.8-5.4x on a9a and w8a at C >= 1 and on the synthetic problem's
  subsets (little at C = 0.01: a9a 31 against 34, w8a 33 against 26).  It is left off where it
  was measured to cost: when the active rows are fewer than the parameters and their norms vary
  (news20 as word counts: 904 against 2065 iterations at the first Newton step at C = 1;
  coefficient of variation of c_i ||x~_i||^2 above 0.5, ``solvers/config.py``), and when CGLS
  only checks a factorized step (its diagonal would cost a pass for nothing).
* A C path for a cold start at a large C when step 3 runs CGLS (``c_path_start`` = 10): for
  C > 10 c_path_start / mean_i c_i ||x~_i||^2, first C / 10^J, ..., C / 10 (the smallest at or
  above c_path_start / mean c_i ||x~_i||^2) at the first round's eps = 1e-2, each seeded with
  the last, then C seeded with that -- the beta-seeding of section 4.1 used as a continuation
  -- with heuristic 2's two rounds again (the seed from C / 10 is still crude for C).  From
  zero, Appendix A at such a C spends its Newton iterations shrinking the active set with
  short steps: on news20 made binary (mean ||x~||^2 = 484) it reaches a 1e-6 gap at C = 1 in
  1.36 s instead of 3.20 s, and at C = 100 in 17.7 s, where Appendix A from zero is still
  2.9e-3 above the optimum after 120 s.  The factorized step goes straight to C: exact Newton
  steps do not creep that way, and the stages cost more than they save (a9a, w8a, ijcnn1,
  mushrooms at C = 100, every one of them).

* Step 3 in the active rows' space (``linear_solver="dual_cg"``; "auto" without a
  factorization takes it per Newton step).  The least-squares problem min lambda/2 ||beta||^2
  + 1/2 ||A beta - b||^2 over the active rows (a_k = sqrt(c_k) x~_k) has the solution
  beta = A'u with (A A' + lambda I) u = b; section 4.3's CGLS works with A'A.  When the active
  rows are fewer than the parameters the row system is the smaller one, and its diagonal
  c_k ||x~_k||^2 + lambda is at hand: CG with that row-Jacobi preconditioner evens out rows of
  very unequal norms (raw word counts), where CGLS's column preconditioner does not help.  It
  starts from the same point (u^0 = z^0 / lambda, the row-space point the current beta
  implies: A'u^0 comes from CGLS's r^0 without a product) and stops on the same rule (13),
  checked exactly at each iterate (r = A's and z = s + lambda u for the row residual s; A's
  comes with A'p in one pass over the rows).  "auto" takes it in rounds with eps <= 1e-4
  (heuristic 2's second round) when the active rows are fewer than the parameters and lambda
  is at most 0.03 times the median c_i ||x~_i||^2 of the active rows (``solvers/config.py``),
  never for heuristic 1's capped call or ordinal pairs.  On news20 made binary at C = 1, at
  the final active set from zero to eps = 1e-6: 196 CG iterations against CGLS's 817, at the
  same cost per iteration.  In every round it took news20 at C = 1 from 3,768 CG iterations
  to 2,414-2,499, but at C = 100 to 123 Newton iterations with a run ending on itermax (a
  loose solve from u^0 lands far from beta when lambda is small), hence the tight rounds
  only; at C = 0.01 (lambda = 50) it took more iterations at
  every step (767 against 586), so "auto" keeps CGLS there.

* Inexact Newton steps far from the solution (``newton_forcing``, default 0.5).  Rule (13)
  with eps = 1e-2 still asks CGLS for hundreds of iterations per Newton step on news20's word
  counts (312 and 350 at the C path's stage C = 0.1), for a point that only seeds the next
  round.  In the C path's stages and in heuristic 2's first round after a crude start, CGLS
  also stops once ||r|| <= 0.5 ||r^0||, r^0 the gradient at the current point (the forcing
  term of inexact Newton methods, Dembo, Eisenstat & Steihaug 1982); beta_bar - beta is
  still a descent direction (CGLS from beta lowers the quadratic that agrees with f at beta),
  the exact line search is Appendix A's, and step 5 still ends a round only where rule (13)
  holds at its eps with stable index sets.  Not in the final round (eps = 1e-6: the steps
  that certify the optimum are the paper's), nor in the first round after a seed from a
  smaller C (measured on news20 at C = 1: tiny steps and more CG work, and with a forcing of
  0.3 or more the run ended on itermax), nor after half of itermax Newton iterations of a
  run, and only on fewer active rows than parameters (text; on the synthetic problem's
  225,000 active rows of 100,001 parameters a preconditioned solve is 10-50 CG iterations,
  and the forcing's 3 extra Newton iterations cost what it saved).  news20 made binary: CG
  work (iterations times stored entries of the active rows) 7.1e8 -> 3.4e8 at C = 1, 2.1e8
  -> 7.4e7 at C = 0.01, 2.7e9 -> 2.4e9 at C = 100; more Newton iterations (25 -> 40, 12 ->
  28, 74 -> 144), each a few ms.  Where step 3 is factorized nothing changes (heuristic 1's
  capped call is exempt).

``cgls_rule="gradient_bound"`` (off by default) stops CGLS by the rule (13) is derived from
in section 4.3, ||r|| <= eps (||X~|| ||z|| + lambda ||beta||): up to 2.3x fewer CG iterations
when the active rows are fewer than the features (news20), final relative gaps ~1e-7 instead
of ~1e-12.

Extensions:

* beta-seeding (section 4.1): :func:`seed_from_weights` rescales a weight guess by eqs.
  (8)-(9); :func:`solve_path` solves a list of C values, each started from the previous
  solution with ini = 1 (Table 1);
* a stop at a certified gap (``tol``, every solver's rule; ``tol=None`` is Appendix A's finite
  termination alone): the run ends at the first Newton iterate whose relative duality gap,
  recorded at every iteration anyway, is within it, and its last round runs rule (13) at
  min(1e-4, tol / 10) (or eps if larger) instead of eps (a round at eps follows should that
  one end by Appendix A's test above the gap).  Each Newton step at the asked C ties its
  CG's stop to the gap at its starting point (an inexact Newton step, :func:`solvers.mfn.
  engine.gap_forcing`): besides rule (13) it stops once ||r|| <= eta ||r^0||, eta =
  min(newton_forcing, 0.5 sqrt(tol / gap)), the loosest step whose next gap (about eta^2
  times this one on a settled active set) is aimed at tol / 4, so the last step does not
  solve past the tolerance.  Measured on news20 made binary at C = 1: 1,750 -> 1,604 CG
  iterations at tol 1e-3 (35 Newton iterations both), 1,750 -> 1,510 at 1e-2 (35 -> 36); the
  factorized step 3 (a9a, w8a) is exact and unchanged.  The forcing of Dembo, Eisenstat &
  Steihaug tied to the gap itself, eta = min(eta_max, sqrt(gap)), was tried and is not
  used: loose steps far from the optimum (the gap is above 1 for most of news20's run)
  alternated with near-exact ones of step length 1e-3 (the active set after a loose step is
  far off), and the run ended on itermax with eta_max = 0.5 and took 47 Newton iterations
  instead of 35 with 0.1.  Cross-validation sets ``tol`` from its fit_gap
  (``solvers.model_selection``): a fold's score needs predictions, not 1e-10 optima;
* dual recovery and the maximum dual KKT violation (section 4.7, :func:`dual_kkt_violation`);
  with ``dual_kkt_tol`` the solution is continued with eps / 10, eps / 100, ... until
  the violation is within it (section 5's protocol: ``epsilon=1e-3, dual_kkt_tol=1e-3``);
* ordinal regression (section 7, :class:`solvers.problems.OrdinalProblem`,
  :func:`solve_ordinal`, ``task="ordinal"``);
* multi-class: one-vs-rest over the binary solver (``solvers.multiclass``);
* L2-loss support vector regression (``task="regression"``, the squared epsilon-insensitive
  loss as two squared-hinge terms per example, :mod:`solvers.mfn.regression`).

Ordinal regression (eqs. (25)-(26)), labels mapped to ranks 1..p, p - 1 thresholds
theta_s = s * b_s (s = ``bias_scale``), C_i = C * sample_weight_i::

    minimize  1/2 (||w||^2 + ||b||^2)
              + sum_i C_i ( sum_{s < rank_i} max(0, 1 - (w.x_i - theta_s))^2
                            + sum_{s >= rank_i} max(0, 1 + (w.x_i - theta_s))^2 )

which is eq. (25) scaled by 2C (lambda = 1/(2C), beta = (w, b_1..b_{p-1}) regularized as a
whole, as in the paper).  Each (example, threshold) pair is a squared-hinge term with label
sigma_is = +1 (s < rank_i) or -1 and least-squares row (x_i, -s e_s): the same engine runs
on these pairs.  For the CGLS of (26) the shared core takes "paired rows" (each active
example once, with the threshold column of each of its active pairs) instead of an augmented
CSR matrix built every Newton iteration: no copy of X, and each product touches x_i once
however many of its pairs are active (x_i . w is shared by the pairs, their residuals are
summed before x_i is scattered into X'z).  The exact line search handles at most m (p - 1)
breakpoints with the same kernels as the binary problem.  Along the ray the thresholds move
too, so a pair's breakpoint is where the linear function sigma_is (y_i(delta) -
theta_s(delta)) crosses 1 (the paper writes it with theta_s held at the current point).
"""


from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from solvers.base import SolverSpec
from solvers.core.gram import NormalEquations
from solvers.core.linesearch import piecewise_linear_root
from solvers.core.rows import BinaryRows, OrdinalRows
from solvers.losses.kernels import (
    clipped_loss_breakpoints,
    clipped_loss_sets,
    clipped_loss_sets_hold,
    clipped_loss_sum,
    margin_slacks,
)
from solvers.mfn.binary import (
    binary_terms,
    dual_kkt_violation,
    run,
    seed_from_weights,
    solve,
    solve_distributed,
    solve_path,
    spec_path,
)
from solvers.mfn.continuation import c_path_stages
from solvers.mfn.engine import MFNState
from solvers.mfn.ordinal import fit_ordinal, fit_ordinal_path, solve_ordinal
from solvers.mfn.params import MFNParams
from solvers.mfn.regression import fit_regression, solve_regression


def warm_up() -> None:
    """Compile what mfn calls beyond the shared core: the clipped-loss kernels of its sets,
    sums and line search, and the Gram upkeep of its factorized step 3 (binary rows and
    ordinal pairs), on a few rows."""
    X = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]]))
    xi0 = np.array([1.0, -0.5, 2.5])
    xi1 = np.array([-1.0, 0.5, 1.5])
    for width in (np.inf, 2.0):
        l0, r0, bp, dl, dr = clipped_loss_breakpoints(xi0, xi1, np.ones(3), 0.0, width)
        piecewise_linear_root(l0 - 1.0, r0 + 1.0, bp, dl, dr)
        clipped_loss_sets(xi0, 0.0, width)
        clipped_loss_sum(xi0, np.ones(3), 0.0, width)
        clipped_loss_sets_hold(xi0, xi1, 0.0, width, 1e-8)
    margin_slacks(np.ones(3), xi0, np.empty(3))
    for terms in (BinaryRows(X, np.array([1.0, -1.0, 1.0]), np.ones(3), 1.0),
                  OrdinalRows(X, np.array([1, 2, 3]), 3, np.ones(3), 1.0)):
        active = np.arange(terms.labels.shape[0])
        NormalEquations(terms, np.ones(active.shape[0])).solve(active, 1.0,
                                                                np.ones(terms.n_params))


def dense_system(params: MFNParams, n_samples: int, n_features: int) -> tuple[str, int] | None:
    """The spec's ``dense_system``: ``linear_solver="cholesky"`` factorizes the normal
    equations of the active terms, (n_features + 1)^2 (ordinal: + thresholds), per run; "auto"
    does so only where that is cheap (at most ``MFN_AUTO_CHOLESKY_MAX_PARAMS`` parameters)."""
    if params.linear_solver != "cholesky":
        return None
    return ("the normal equations of linear_solver='cholesky' (a dense (n_features + 1)^2 "
            "matrix)", n_features + 1)


SPECS = (
    SolverSpec(
        name="mfn",
        params_model=MFNParams,
        run=run,
        description="Modified finite Newton method (L2-SVM-MFN): CGLS on the active set with "
                    "exact line search; modified Huber, hinge by a Huber homotopy, ordinal "
                    "regression.",
        reference="S. S. Keerthi and D. DeCoste, A modified finite Newton method for fast "
                  "solution of large scale linear SVMs, JMLR 6 (2005) 341-361.",
        fit_handlers={"ordinal": fit_ordinal, "regression": fit_regression},
        path_handlers={"ordinal": fit_ordinal_path},
        warm_up=warm_up,
        warm_start=True,
        path=spec_path,
        dense_system=dense_system,
        distributed=solve_distributed,
        auto_candidates=((),),
    ),
)

__all__ = [
    "SPECS",
    "MFNParams",
    "MFNState",
    "binary_terms",
    "c_path_stages",
    "dual_kkt_violation",
    "fit_ordinal",
    "fit_ordinal_path",
    "fit_regression",
    "run",
    "seed_from_weights",
    "solve",
    "solve_ordinal",
    "solve_path",
    "solve_regression",
    "warm_up",
]
