"""SVM-ALM: the augmented-Lagrangian primal solver of Nie, Huang, Wang & Huang (ICML 2014).

Problem (4) of the paper, in ``docs/design.md``'s convention (the same C; C_i = C *
sample_weight_i)::

    minimize  1/2 (||w||^2 + r b^2) + sum_i C_i max(0, 1 - y_i (w.x_i + s b))^p,   1 <= p <= 2

with ``loss="lp"`` and ``p`` (``hinge`` is p = 1, ``squared_hinge`` p = 2).  The paper's bias is
free (r = 0, s = 1; ``bias="free"``, the default); ``regularized`` (r = 1, s = ``bias_scale``,
LIBLINEAR's ``-B s``) and ``none`` (b = 0) run the same iteration on x~_i = (x_i, s).

The split (5): e_i = y_i - x~_i.beta, so the loss is C_i (y_i e_i)_+^p; the augmented
Lagrangian (7)-(8) with multipliers lambda and penalty mu.  One outer iteration:

1. e-step (10): e_i = argmin C_i (y_i e_i)_+^p + mu/2 (e_i - t_i)^2, t_i = y_i - x~_i.beta -
   lambda_i / mu.  Solved in the slack u_i = y_i e_i (y_i^2 = 1): u_i = prox of (C_i/mu) L at
   y_i t_i, the loss layer's proximal operator (closed forms (12) for p = 1 and (13) for p = 2,
   a safeguarded Newton on (11) for 1 < p < 2; the paper bisects).  **Misprint fixed**: (11)
   as printed, p gamma (y_i e_i)^(p-1) + e_i - t_i = 0, drops the factor y_i of the
   derivative of (y_i e_i)^p; in u it is p gamma u^(p-1) + u - y_i t_i = 0, which is what
   (12)-(13) solve.
2. (w, b)-step (14): min 1/(2 mu) ||beta||_D^2 + 1/2 ||X~ beta - z||^2, z = y - e - lambda/mu
   (D = diag(1, .., 1, r): the free bias is not regularized; (14) is the paper's G divided by
   two).  ``variant="exact"`` (Algorithm 1) solves it exactly, ``w_solver``:

   * ``"cholesky"``: (X~'X~ + D / mu) beta = X~'z by a Cholesky factor.  The paper leaves the
     solver of (14) open ("many standard libraries such as ... LSQR", and notes LSQR costs
     O(n d^2), "as costly as computing matrix inverse"); with mu fixed (the default) the
     Gram matrix X~'X~ (sum of L^2/2 per row of L entries: linear in n) is formed and
     factorized once per solve, and a step costs two sparse products, X~'z and X~ beta.
     mu changes (``rho`` > 1, residual balancing, ``mu_rule``) refactorize (n^3 / 3).  The
     two products and the pass of steps 3 and 1 below are one sweep over the rows
     (:func:`solvers.alm.kernels.fused_outputs_and_pass`: per row, the new output x~_i.beta,
     the multiplier and e-step, and the row's share z_i x~_i of the next X~'z), except
     with residual balancing, which picks the next mu from this step's residuals before the
     pass.  Binary data (a9a, w8a, mushrooms) goes through the indices-only row kernels.
     The one sweep is 10-30% faster than three, and the factorized step some twenty times
     cheaper than CGLS's on a9a (bench/history/measurements.json, alm-one-sweep and
     alm-factorized-step).
   * ``"cgls"``: the core's CGLS (``cgls_compact`` with reg_bias = r) warm-started from the
     previous beta, to the relative rule ||grad|| <= eps ||residual|| with eps = min(``cgls_tol``
     = 1e-3, ``cgls_gap_factor`` = 1 x the current relative gap) (the paper says LSQR, the same
     Krylov method as CGLS): an inexact inner solve with its tolerance tied to the outer
     gap.  The tightening is needed: with a fixed eps the warm start soon meets the rule, CGLS
     makes no iteration, w stops and the gap stalls (measured: w8a, C = 0.01, at 1.7e-8;
     ijcnn1, C = 1, at 2.9e-6).  Factor 1 against 0.1: ijcnn1, C = 1, the same 103 outer
     iterations with 1003 instead of 1306 CG iterations; w8a, C = 0.01, 1.3e-8 instead of
     3.3e-6 above the optimum after 60 s.
   * ``"auto"`` (default): cholesky where the factorization and the Gram matrix each cost at
     most 40 passes over the stored entries and there are at most 2048 parameters
     (``config.ALM_AUTO_CHOLESKY_*``, mfn's rule): a9a, w8a, ijcnn1 and the small sets; cgls
     on text (news20, the synthetic problem).

   ``variant="inexact"`` (Algorithm 2): one steepest-descent step with the exact step length,
   gradient (16) and step (18); it costs two sparse products, not the paper's three: X~ beta
   at the new point is the old outputs minus step times X~ g, which (18)'s denominator needs
   anyway.
3. multiplier step (9): lambda += mu (X~ beta + e - y).

Steps 3 and 1 of the next iteration are one pass over the examples
(:func:`solvers.alm.kernels.multiplier_and_e_step`, on the Numba threads for large n; fused
with the products for the factorized step, above); the sparse products go through the core's
row kernels (``CompactRows``, one block per thread).

The penalty mu.  The paper gives no start and no growth rule, caps mu at 1e5 and its
theorems need mu -> infinity.  Here mu_1 = ``mu0`` (default C 5^-(p - 1): C / 5 for the
squared hinge, C for the hinge) and mu_{k+1} = min(``rho``
mu_k, ``mu_max``) (default rho = 1: fixed mu, i.e. ADMM, which converges for any fixed mu
with the exact step), or ``residual_balancing`` (Boyd et al. 2011, 3.4.1: primal residual
||X~ beta + e - y||, dual residual mu ||X~ (beta_k - beta_{k-1})||).  Measured on 2026-11-23
(2 shared cores; ``bench/history/notebook.md``, section ALM):

* growing mu to the paper's cap stalls: ijcnn1, C = 1, exact, rho = 1.5 from mu = 1 reaches
  mu = 1e5 in 30 iterations and then sits 8.7% above the optimum (relative gap ~20) for 500
  iterations: with mu huge the e-step pins e to the current residual and lambda moves by
  tiny steps;
* with fixed mu the iteration count depends on mu / C, hardly on C (ijcnn1 and a9a take the
  same iterations at C = 1 and 100 for every mu / C).  Exact steps, squared hinge, free bias,
  iterations to an objective 1e-3 above the optimum at C = 0.01 / 1 / 100 for mu / C = 0.1,
  0.2, 0.3, 0.5, 1: ijcnn1 18/6/6, 10/7/7, 8/8/8, 7/9/9, 9/18/18; a9a 13/16/16, 6/15/15,
  6/6/6, 7/7/7, 10/11/11; w8a 32/30/32, 17/42/49, 18/70/85, 27/131/156, 60/274/-.  The small
  sets prefer a larger mu (iterations to a 1e-6 gap at C = 1, mu / C = 0.1, 0.2, 0.3, 0.5,
  1: heart 90, 46, 33, 25, 20; australian 98, 50, 35, 31, 21; breast-cancer 120, 90, 79, 69,
  119; svmguide1 324, 193, 167, 420, 919).  mu0 = C / 5 is the compromise: at most 1.6x the
  best fixed choice on the three large sets at 1e-3, 3x on the small ones.  No data-scaled
  rule beat it: residual balancing on relative residuals (Wohlberg 2017) was tried (mixed:
  w8a 42 -> 29 iterations to 1e-3 at C = 1, ijcnn1 7 -> 21) and not kept; the optimum seems
  to follow the share of examples at the loss's kink or flat part (w8a, 97% one class,
  wants the smallest mu), which is not known before the solve.
* the hinge wants a larger mu: iterations to a 1e-5 gap, C = 0.1 / 1, mu / C = 0.2, 0.5, 1,
  2: heart 545/340, 250/451, 190/462, 204/645; australian 4640/2187, 1888/945, 1060/647,
  625/600; diabetes 436/610, 332/355, 280/375, 200/665.  So mu0 = C there (the earlier
  default, also measured best on australian against 0.1, 0.3, 3 and 10 C: 2158 iterations to
  a 1e-7 gap against 18643, 6298, 4236, 6102).  p = 1.5 sits between (heart, australian,
  diabetes at C = 0.1 / 1, mu / C = 0.2, 0.5, 1, 2: 58/100, 26/35, 30/45, 30/50; 75/70, 40/50,
  25/40, 25/45; 68/75, 37/40, 30/25, 20/35), hence the geometric interpolation in p
  (0.45 C at p = 1.5).
* residual balancing (unnormalized, as Boyd et al. write it) moves mu the wrong way when C is
  far from 1 (ijcnn1, C = 0.01: 265 iterations against 42; C = 100: 1.6e-3 above the optimum
  after 60 s): an option, not the default.
* why w8a wants a smaller mu.  Near the solution the rows where the loss is flat (margin
  above 1) have lambda_i = 0 and e_i = y_i - x~_i.beta after every iteration, so in the next
  (w, b)-step their targets are the previous outputs: they add (mu / 2) ||X~_I (beta -
  beta_k)||^2 to (14), a proximal term that holds beta back, and it grows with mu and with
  the share of X~ in the flat rows.  On w8a (97% one class) the active rows (margin below 1)
  are 21% of the rows at C = 1 but hold only 7% of sum_i ||x~_i||^2 (many short rows among
  them); on ijcnn1 and a9a 44% and 61% of the rows and 42% and 61% of it; mushrooms at C = 1:
  6% and 6%.  The best fixed mu / C at 1e-3 (iterations of the squared hinge, exact, free
  bias; 2026-11-23) follows that share roughly: w8a 0.1 (30 iterations at C = 1 against 42
  at 0.2), mushrooms <= 0.05 (154 against 653 at 0.2), a9a 0.3-0.5, the small sets with 70-99%
  active rows 0.5-1; but not closely (svmguide1: 12% of ||X~||^2 active, best 0.2;
  australian at C = 100: 67%, best 0.05-0.1).  The share is not known before the solve: at
  w = 0 every row is active.
* ``mu_rule="active"`` (the default for the exact squared hinge, ``mu_rule="auto"``): at
  iterations 10, 20, 40 and 80, mu is lowered to 1.5 C times the active rows' share of
  ||X~||_F^2 (at least 0.01 C) when that is below mu / 1.5; a refactorization each time, at
  most 4.  Only lowered and only from iteration 10: with checks from iteration 3 and raises
  allowed, the rule cost iterations where the early active set misleads (svmguide1 18 -> 39
  iterations to 1e-3, ijcnn1 at C = 1 7 -> 18; heart, australian and a9a gained).  As
  adopted, iterations to 1e-2 / 1e-3 / 1e-6 (fixed C / 5 -> rule): w8a C = 1 19/42/953 ->
  19/41/560, C = 100 21/49/1265 -> 21/45/734, mushrooms C = 1 237/653/2178 -> 134/353/1160;
  identical on ijcnn1, a9a, svmguide1, breast-cancer, australian and heart at C in {0.01, 1,
  100} and on w8a and mushrooms at C = 0.01 (mu is not lowered there).  So it helps the tail
  where few rows are active, not the first digits: on w8a the iterations to 1e-2 and 1e-3
  come before the active set is known well enough to act on.

Over-relaxation (``relaxation``, alpha; not in the paper).  With mu fixed, Algorithm 1 is
ADMM on the split (5), and ADMM's over-relaxation (Eckstein & Bertsekas 1992; Boyd et al.
2011, 3.4.3) applies as it is: the (w, b)-step (14) and the multiplier step (9) use e^ =
alpha e + (1 - alpha)(y - X~ beta_k) in place of the e-step's e (beta_k the step's start).
Stationarity of (14) still gives w = -X lambda and, for the free bias, 1'lambda = 0, so the
certificate below is unchanged.  It adds a term per example to the pass, which did not change
the time per iteration measurably (one thread, 300 iterations, medians of 5, two rounds,
before -> after: w8a exact 1.12-1.16 -> 1.14-1.15 ms, a9a 0.67-0.68 -> 0.68-0.70 ms; the
inexact variant, whose pass is separate, w8a 1.26-1.28 -> 1.26-1.27 ms).  Default alpha = 1.8 for
the exact variant, 1 for the inexact one.  Measured 2026-11-25 (one
thread, free bias, the defaults otherwise), iterations to an objective 1e-2 / 1e-3 / 1e-6
above the optimum and to the certified gap (1e-6; 1e-5 for the hinge), alpha = 1 -> 1.8:

* squared hinge, C = 0.01 / 1 / 100: w8a 11/17/59, 95 -> 6/10/30, 45; 19/41/560, 915 ->
  9/20/226, 420; 21/45/734, 2135 -> 10/23/319, 1045.  a9a at C = 1: 4/15/47, 95 -> 4/9/31, 75.
  mushrooms at C = 1: 134/353/1160, 3340 -> 37/73/338, 835.  ijcnn1 loses a little at 1e-3
  (C = 1: 5/7/38, 79 -> 5/9/35, 65).  1.5 and 1.6 sit between (1.6 is better on mushrooms
  at C = 100: 9905 iterations to the gap against 19565 at 1.8 and 50000+ at 1).
* the small sets (heart, australian, breast-cancer, diabetes, svmguide1 at C = 0.01 / 1 /
  100): fewer iterations to the gap in 13 of 15 cases, more on heart (55 -> 65) and
  diabetes (25 -> 40) at C = 100.
* the hinge (mu0 = C; the small sets at C = 0.1 / 1, a9a, ijcnn1, w8a at C = 0.01 / 1):
  fewer iterations to the gap in 11 of 13 cases (a9a at C = 1: 1410 -> 910, ijcnn1 1605 ->
  940), more on heart (462 -> 500) and svmguide1 (10695 -> 15495) at C = 1; w8a at C = 1
  reached the gap in neither run's 20 s (iterations to the 1e-3 objective: 1132 -> 504).
  p = 1.5 on heart, australian, diabetes, breast-cancer at C = 0.1 / 1: fewer in 7 of 8.
* the inexact variant loses with it (w8a at C = 0.01: 122 -> 280 iterations to the gap;
  a9a at C = 0.01: 601 -> 1630): its single gradient step is not the exact minimization that
  the relaxation's theory assumes, so it keeps alpha = 1.

Stopping.  The default is a certificate: at the (w, b)-step's optimum w = -X lambda and, for
the free bias, 1'lambda = 0, so alpha = -y lambda is a dual point of ``solvers.problems``
(clipped to the loss's dual range, then balanced by :meth:`BinaryProblem.balance` for the
free bias), scaled by the theta >= 0 that maximizes D(theta alpha) (closed form for p = 1, 2;
scaling keeps it feasible and costs three sums: :func:`solvers.alm.solver.scaled_dual_value`);
``tol`` bounds (P - D) / P, which bounds the relative suboptimality.  A dual point costs one
product X'(alpha y) and the balancing sort, as much as the exact step itself, so it is
evaluated at the first and every ``gap_every``-th (5) iteration; every other iteration's gap
is P(beta_k) - D_best, the best dual value so far, which bounds P(beta_k) - P* just as well
(any dual value is below P*).  Measured before (a9a, C = 1, inexact, cProfile): the
certificate took 16 of 25 ms per iteration (product 8, argsort 4, a Python loop over the
breakpoints 3.5; that loop is now vectorized in the problem layer).  The multipliers lag the
primal iterate: the certified gap reaches a tolerance some iterations after the objective
does (a9a, C = 1, mu = 0.3 C: the objective is within 1e-3 at iteration 6, the gap below
1e-2 at 16).
``stop_rule="paper"`` is section 4's: ||grad obj|| <=
``grad_tol`` ||grad obj(start)|| (LIBLINEAR's relative form, which the paper says it is
compatible with; a subgradient for p = 1) or a relative objective change below 1e-4; the
paper's 100-iteration limit is ``max_iter=100`` (the default, 20000, lets the gap rule reach
``tol``).  Records carry the objective, the relative gap, the primal and dual residuals, mu
and (exact) the CGLS iterations of the step (0 when the Cholesky factor solves it).

Start: w = 0, b = 0, lambda = 0.  ``cold_start="one"`` is Algorithms 1-2's w = 1, which the
paper does not justify (the all-ones w has nothing to do with the data's scale or sign) and
which measured no better (relative gap 1e-6, C = 1, with mu = C and CGLS steps, the defaults
then; iterations w = 0 / w = 1): squared hinge
heart 20 / 38, australian 21 / 35, ijcnn1 72 / 73; hinge heart 736 / 679, australian 1647 /
3031; a9a after 30 s: 50 / 39 (squared hinge) and 40 / 31 (hinge) iterations, neither done.
Zero is the default: it is the natural cold start and never worse by much.  A warm start
(``start=WarmStart(beta=...)``, ``solvers.base.WarmStart``) takes lambda = -y alpha, alpha the
balanced KKT map of that point, or the given dual point (``WarmStart(dual=alpha)``); the
spec's ``run`` reads it the same way, so cross-validation's C paths start each C from the last
one's solution.
Multi-class: one-vs-rest through ``solvers.multiclass``.

Verified (``tests/test_alm.py``, ``tests/test_alm_large.py``; 1e-6 relative on the objective):
squared hinge with the free bias against LIBLINEAR ``-s 2 -B 1 -R`` on heart, australian,
breast-cancer, diabetes (both variants), ijcnn1, a9a and w8a at C = 0.01, 1, 100 (exact)
and the inexact cases that finish in seconds; mushrooms (binary values) with mu_rule; hinge
and p =
1.5 with the free bias against Clarabel; the regularized and no-bias modes against LIBLINEAR
``-s 2`` and Clarabel (``-s 3`` stops 2e-4 to 1e-3 above the hinge optimum there; alm ends
below it); every logged gap bounds the true suboptimality.  Where it is slow: ADMM's rate
depends on the conditioning of X~ and on mu; on w8a at C = 1 and 100 the exact variant
needs 1790 and 2730 iterations to a 1e-8 gap (with mu_rule; with mu fixed at C / 5 it was
5.5e-6 and 1.7e-5 above the optimum after ~500), the inexact variant slower still
(``tests/test_alm_large.py`` lists the cases).  svmguide1 (unscaled features up to ~1e3),
squared hinge, C = 1, where the unscaled certificate sat at a relative gap of 1.9e-2 for
20000 iterations with mu = C, now certifies 1e-6 in 193 iterations at mu = C / 5 (919 at
mu = C): the stall was mostly the certificate's (``bench/history/notebook.md``, ALM).
"""

from __future__ import annotations

from solvers.alm.kernels import multiplier_and_e_step
from solvers.alm.kernels import warm_up as _warm_kernels
from solvers.alm.params import ALMParams
from solvers.alm.solver import run, solve
from solvers.base import SolverSpec


def warm_up() -> None:
    """Compile the fused multiplier / e-step pass for the three loss codes."""
    _warm_kernels()


def dense_system(params: ALMParams, n_samples: int, n_features: int) -> tuple[str, int] | None:
    """The spec's ``dense_system``: ``w_solver="cholesky"`` (exact variant) factorizes X~'X~ +
    D / mu, (n_features + 1)^2; "auto" does so only where that is cheap (at most
    ``config.ALM_AUTO_CHOLESKY_MAX_PARAMS`` parameters)."""
    if params.variant != "exact" or params.w_solver != "cholesky":
        return None
    return ("the (w, b)-step's normal equations of w_solver='cholesky' (a dense "
            "(n_features + 1)^2 matrix)", n_features + 1)


SPECS = (
    SolverSpec(
        name="alm",
        params_model=ALMParams,
        run=run,
        description="SVM-ALM: augmented Lagrangian on e = y - X'w - b for the Lp-loss SVM "
                    "(1 <= p <= 2), free bias natively; exact (CGLS) or inexact "
                    "(one steepest-descent step) (w, b)-step.",
        reference="F. Nie, Y. Huang, X. Wang and H. Huang, New primal SVM solver with linear "
                  "computational cost for big data classifications, ICML 2014.",
        warm_up=warm_up,
        # a C path's next point from the last one (beta, lambda from its KKT map): a 5-fold,
        # 11-C search took a third to a half of the time of every point cold
        # (bench/history/measurements.json, alm-warm-start)
        warm_start=True,
        dense_system=dense_system,
        auto_candidates=((("variant", "exact"),), (("variant", "inexact"),)),
    ),
)

__all__ = ["SPECS", "ALMParams", "dense_system", "multiplier_and_e_step", "run", "solve",
           "warm_up"]
