"""L2-SVM-MFN: the modified finite Newton method of Keerthi & DeCoste (JMLR 6, 2005).

Problem (``design.md``), t_i = +-1, x~_i = (x_i, s) with s = ``bias_scale`` (s = 0 and b = 0
for ``bias="none"``), C_i = C * sample_weight_i::

    minimize_beta   1/2 ||beta||^2 + sum_i C_i loss(t_i x~_i . beta)            beta = (w, b)

The paper writes it as f(beta) = lambda/2 ||beta||^2 + sum_i c_i L(xi_i), xi_i = 1 - t_i y_i,
L(xi) = xi^2 / 2 for xi > 0 (eqs. (2), (19)-(20)).  ``design.md``'s squared hinge has no 1/2,
so our objective is f scaled by 2C: **lambda = 1/(2C)** (the paper's lambda = 1/C for its own
C/2 sum xi^2), and c_i is the sample weight.  The bias is regularized like a weight (the
paper's b^2/2 term, LIBLINEAR's ``-B s``; section 2's gamma-scaled bias is ``bias_scale``
= 1/gamma), or absent.  A free (unregularized) bias is refused.

One engine serves every loss the paper treats, all with a derivative of the form
loss'(xi) = kappa * clip(xi - xi_lo, 0, width); CGLS works on the problem divided by kappa C,
so lambda = 1/(kappa C):

* ``squared_hinge``: the L2-SVM of sections 2-4 and Appendix A (kappa = 2, width = inf);
* ``modified_huber``: section 6, eqs. (21)-(23).  ``design.md``'s loss is twice Keerthi's L_h
  (kappa = 2, width = 2), so again lambda = 1/(2C).  Three index sets I0, I1, I2; CGLS solves
  the least-squares problem (23), shifted by q = (2/lambda) sum_{I2} c_i t_i x~_i; the line
  search watches examples move between the three sets;
* ``hinge``: section 6's homotopy.  The L1 loss is replaced by tau/2 L_h(xi/tau + 1) (kappa =
  1/(2 tau), xi_lo = -tau, width = 2 tau, lambda = 2 tau / C), which is 0 below -tau, equals
  xi above tau and exceeds the hinge by at most tau/4.  tau_j = 2^-j, j = 0, 1, ...; each
  problem is seeded with the previous solution (Appendix A's ini = 1) and solved to the final
  eps.  The paper leaves the stopping rule open ("several details need to be worked out");
  ours is a certificate: alpha_i = C_i h'_tau(xi_i) lies in the hinge dual's box [0, C_i],
  so P_hinge(beta) - D_hinge(alpha) bounds the distance to the hinge optimum, and the
  homotopy stops once it is at most ``hinge_gap_tolerance`` (default 1e-4) relative to
  P_hinge.  Measured against an interior-point solve of the hinge dual (certified to ~1e-12,
  tests/reference.py), the same with either ``linear_solver``: with the default the objective
  ends 8.6e-6 to 8.8e-5 above the optimum on four small UCI sets (C = 0.1, 1, 10; tau =
  2^-6..2^-10) and 2.3e-5 / 3.1e-5 on a9a (C = 0.1 / 1, tau = 2^-6), always inside the
  certified gap; ``hinge_gap_tolerance=1e-6`` gives 5.9e-7 / 6.2e-7 on a9a (tau = 2^-11 /
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
preconditioning=0, c_path_start=None``; the defaults add three things, each measured in
``bench/README.md`` (section MFN) against LIBLINEAR in the same run.

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

``cgls_rule="gradient_bound"`` (off by default) stops CGLS by the rule (13) is derived from
in section 4.3, ||r|| <= eps (||X~|| ||z|| + lambda ||beta||): up to 2.3x fewer CG iterations
when the active rows are fewer than the features (news20), final relative gaps ~1e-7 instead
of ~1e-12.

Extensions:

* beta-seeding (section 4.1): :func:`seed_from_weights` rescales a weight guess by eqs.
  (8)-(9); :func:`solve_path` solves a list of C values, each started from the previous
  solution with ini = 1 (Table 1);
* dual recovery and the maximum dual KKT violation (section 4.7, :func:`dual_kkt_violation`);
  with ``dual_kkt_tolerance`` the solution is continued with eps / 10, eps / 100, ... until
  the violation is within it (section 5's protocol: ``epsilon=1e-3, dual_kkt_tolerance=1e-3``);
* ordinal regression (section 7, :class:`OrdinalProblem`, :func:`solve_ordinal`,
  ``task="ordinal"``);
* multi-class: one-vs-rest over the binary solver (``solvers.train``).

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

from dataclasses import dataclass, field
from typing import Annotated, Literal

import numba
import numpy as np
import scipy.sparse as sp
from pydantic import Field, model_validator

from solvers import config
from solvers.core.linalg import cgls_compact, cholesky_solve, dot, gram_cost, gram_update
from solvers.core.linesearch import (
    clipped_loss_breakpoints,
    clipped_loss_sets,
    clipped_loss_sets_hold,
    clipped_loss_sum,
    margin_slacks,
    piecewise_linear_root,
)
from solvers.core.sparse import (
    CompactRows,
    csr_matvec,
    csr_matvec_rows,
    csr_rmatvec_rows,
    length_order,
    row_norms_squared,
    rows_nnz,
    use_parallel,
)
from solvers.data.dataset import Dataset, as_csr
from solvers.models.ordinal import OrdinalModel
from solvers.monitor import IterationRecord, Monitor, NullMonitor, Stopwatch
from solvers.problem import BinaryProblem
from solvers.registry import Solution, SolverParams, SolverSpec, register
from solvers.train import Fit, SubproblemResult

# Relative slack on "the objective rose" (step 7): exact line search cannot increase f, but
# the objective is a sum of m terms evaluated in floating point.
_RISE_SLACK = 1e-12

# _drive_dual_kkt gives up once eps would fall below this.
_SMALLEST_EPSILON = 1e-15


class MFNParams(SolverParams):
    """Parameters of ``mfn``.  The defaults are the paper's (Appendix A) except for three
    measured departures, each explained in the module docstring: ``linear_solver="auto"``
    (step 3 by factorization when that is cheap), ``preconditioning="auto"`` and
    ``c_path_start`` (beta-seeding from a smaller C).  ``linear_solver="cgls",
    preconditioning=0, c_path_start=None`` is Appendix A as written."""

    solver: Literal["mfn"] = "mfn"
    task: Literal["classification", "ordinal"] = Field(
        "classification",
        description="classification (binary, one-vs-rest for more classes) or ordinal "
                    "regression over the sorted labels (section 7; squared hinge only).")
    loss: Literal["squared_hinge", "modified_huber", "hinge"] = "squared_hinge"
    bias: Literal["regularized", "none"] = "regularized"
    epsilon: float = Field(1e-6, gt=0, lt=1,
                           description="CGLS relative tolerance, rule (13), of the final round.")
    first_round_epsilon: float | None = Field(
        1e-2, gt=0, lt=1,
        description="Heuristic 2: tolerance of a first round from a crude start (None: off).")
    initial_cgls_iterations: int | None = Field(
        10, ge=1,
        description="Heuristic 1: CGLS iteration cap of the first call after a crude start "
                    "(None: off).")
    max_cgls_iterations: int = Field(5000, ge=1, description="cgitermax of every other call.")
    linear_solver: Literal["auto", "cgls", "cholesky"] = Field(
        "auto",
        description="How step 3's least-squares problem is solved: 'cgls' is Appendix A "
                    "(CGLS from the current point); 'cholesky' factorizes the normal "
                    "equations of the active terms (Gram matrix kept up to date as terms "
                    "enter and leave) and lets CGLS check rule (13) from that solution; "
                    "'auto' takes 'cholesky' when the dense factorization and the Gram "
                    "matrix cost fewer operations than a few dozen passes over the data "
                    "(few features), else 'cgls'.")
    cgls_rule: Literal["residual", "gradient_bound"] = Field(
        "residual",
        description="CGLS stopping rule: 'residual' is rule (13), ||r|| <= eps ||z||; "
                    "'gradient_bound' the rule (13) is derived from, ||r|| <= eps (||X|| ||z|| "
                    "+ lambda ||beta||) (section 4.3).")
    preconditioning: Annotated[float, Field(ge=0)] | Literal["auto"] = Field(
        "auto",
        description="alpha of CGLS's diagonal preconditioner M = lambda I + alpha diag(X_I'X_I) "
                    "(0: none, the paper's CGLS).  'auto': LIBLINEAR's alpha = 0.01, except "
                    "0 when the active least-squares rows are fewer than the parameters and "
                    "their norms vary (coefficient of variation of c_i ||x~_i||^2 above 0.5), "
                    "or when CGLS only checks a factorized step.")
    max_iter: int = Field(50, ge=1,
                          description="itermax: Newton iterations per run of Appendix A.")
    c_path_start: float | None = Field(
        10.0, gt=0,
        description="When step 3 runs CGLS, cold starts at a large C go through a C path "
                    "(beta-seeding, section 4.1): C / 10^J, ..., C / 10 at the first-round "
                    "eps, then C, with J the largest integer such that C / 10^J >= "
                    "c_path_start / mean_i c_i ||x~_i||^2 (None: Appendix A from zero at "
                    "every C).  The factorized step 3 always starts at C.")
    tol: float = Field(
        1e-8, ge=0,
        description="Step 5's tolerance on t_i y_i around the set boundaries (capped at 1% of "
                    "the quadratic band's width: modified Huber's 2, the hinge homotopy's "
                    "2 tau).")
    dual_kkt_tolerance: float | None = Field(
        None, gt=0,
        description="Section 4.7: continue with smaller eps until the maximum dual KKT "
                    "violation is at most this (None: no such requirement; squared hinge).")
    hinge_gap_tolerance: float = Field(
        1e-4, gt=0, lt=1,
        description="hinge only: stop the tau = 2^-j homotopy once the hinge duality gap "
                    "relative to the objective is at most this.")
    hinge_max_rounds: int = Field(30, ge=1, description="hinge only: largest j in tau = 2^-j.")

    @model_validator(mode="after")
    def _ordinal_problem(self):
        if self.task == "ordinal":
            if self.loss != "squared_hinge":
                raise ValueError("ordinal regression is solved for the squared hinge loss only")
            if self.bias != "regularized":
                raise ValueError("ordinal regression needs its thresholds: bias='regularized'")
        if self.dual_kkt_tolerance is not None and self.loss != "squared_hinge":
            raise ValueError("dual_kkt_tolerance (section 4.7) is for the squared hinge loss")
        return self


# -- losses ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClippedLoss:
    """loss(xi) with loss'(xi) = kappa * clip(xi - xi_lo, 0, width), in ``design.md``'s scale."""

    kappa: float
    xi_lo: float
    width: float

    def value(self, xi: np.ndarray) -> np.ndarray:
        u = np.clip(xi - self.xi_lo, 0.0, self.width)
        value = 0.5 * u * u
        if np.isfinite(self.width):
            value += self.width * np.maximum(xi - self.xi_lo - self.width, 0.0)
        return self.kappa * value

    def derivative(self, xi: np.ndarray) -> np.ndarray:
        return self.kappa * np.clip(xi - self.xi_lo, 0.0, self.width)

    def conjugate_sum(self, alpha: np.ndarray, cost: np.ndarray) -> float:
        """sum_i C_i loss*(alpha_i / C_i) for alpha_i = C_i loss'(xi_i) (in the domain):
        loss*(v) = v xi_lo + v^2 / (2 kappa)."""
        return float(np.sum(alpha * self.xi_lo + alpha * alpha / (2.0 * self.kappa * cost)))


SQUARED_HINGE = ClippedLoss(kappa=2.0, xi_lo=0.0, width=np.inf)
MODIFIED_HUBER = ClippedLoss(kappa=2.0, xi_lo=0.0, width=2.0)
_LOSSES = {"squared_hinge": SQUARED_HINGE, "modified_huber": MODIFIED_HUBER}


_SET_TOL_PER_BAND = 1e-2  # step 5's tol is at most this fraction of a finite band's width


def smoothed_hinge(tau: float) -> ClippedLoss:
    """tau/2 L_h(xi/tau + 1) of section 6: 0 below -tau, (xi + tau)^2 / (4 tau) on
    (-tau, tau), xi above; it exceeds the hinge by at most tau/4."""
    return ClippedLoss(kappa=1.0 / (2.0 * tau), xi_lo=-tau, width=2.0 * tau)


# -- the least-squares rows of a problem ------------------------------------------------------


class _Rows:
    """What the terms of every problem share: the data matrix with its rows in non-decreasing
    order of length (a copy, made once per solve, when they are not already), so that the
    compacted active rows CGLS streams over keep a predictable inner-loop length
    (:func:`solvers.core.sparse.length_order`; about 2x per stored entry on w8a).  The
    engine works in this order throughout; ``in_input_order`` maps per-example vectors back.
    """

    def __init__(self, X: sp.csr_matrix):
        self.order = length_order(X.indptr)
        self.X = X if self.order is None else X[self.order]
        self.unit_values = X.nnz > 0 and bool(np.all(X.data == 1.0))
        self.n_features = X.shape[1]
        n_blocks = numba.get_num_threads() if use_parallel(X.nnz, 0) else 1
        self.everything = CompactRows.all_rows(self.X, n_blocks=n_blocks,
                                               unit_values=self.unit_values)
        self._example_square_norms = None

    def example_square_norms(self) -> np.ndarray:
        """||x_i||^2 of every example (one pass over the data, made once: the C path's scale
        and preconditioning="auto" both read them)."""
        if self._example_square_norms is None:
            self._example_square_norms = np.empty(self.X.shape[0])
            row_norms_squared(self.X.indptr, self.X.indices, self.X.data,
                              self._example_square_norms)
        return self._example_square_norms

    def sorted_examples(self, values: np.ndarray) -> np.ndarray:
        return values if self.order is None else values[self.order]

    def in_input_order(self, values: np.ndarray) -> np.ndarray:
        if self.order is None:
            return values
        out = np.empty_like(values)
        out[self.order] = values
        return out

    def compact_rows(self, rows: np.ndarray) -> CompactRows:
        """The selected examples' rows as a :class:`CompactRows`, one block per thread when
        the products pay for it (all of them, sorted: the matrix itself, no copy)."""
        if rows.shape[0] == self.X.shape[0]:
            return self.everything
        nnz = rows_nnz(self.X.indptr, rows)
        n_blocks = numba.get_num_threads() if use_parallel(nnz, self.n_features) else 1
        return CompactRows(self.X, rows, n_blocks=n_blocks, unit_values=self.unit_values)


class _BinaryRows(_Rows):
    """A binary problem's terms: one per example, least-squares row x~_i = (x_i, s)."""

    def __init__(self, X: sp.csr_matrix, labels: np.ndarray, cost: np.ndarray, s: float):
        super().__init__(X)
        self.labels = self.sorted_examples(labels)
        self.cost = self.sorted_examples(cost)
        self.extra_value = s
        self.n_params = self.n_features + 1

    def outputs(self, beta: np.ndarray) -> np.ndarray:
        return self.everything.matvec(beta[:-1], self.extra_value * beta[-1])

    def outputs_in_input_order(self, outputs: np.ndarray) -> np.ndarray:
        return self.in_input_order(outputs)

    def structure(self, terms: np.ndarray):
        """(rows of X, pair_ptr, pair_col) of the least-squares rows ``terms``: one per row."""
        return terms, None, None

    def compact(self, terms: np.ndarray):
        """(A, pair_ptr, pair_col) of the least-squares rows ``terms`` for
        :func:`cgls_compact`."""
        return self.compact_rows(terms), None, None

    def compact_forward(self, A: CompactRows, v: np.ndarray, pair_ptr=None,
                        pair_col=None) -> np.ndarray:
        """x~_k . v over the compacted terms."""
        return A.matvec(v[:-1], self.extra_value * v[-1])

    def compact_adjoint(self, A: CompactRows, coefficients: np.ndarray, pair_ptr=None,
                        pair_col=None) -> np.ndarray:
        """sum_k coefficients_k x~_k over the compacted terms, as a parameter vector."""
        out = np.empty(self.n_params)
        out[:-1] = A.rmatvec(coefficients)
        out[-1] = self.extra_value * coefficients.sum()
        return out

    def square_norms(self) -> np.ndarray:
        """||x~_k||^2 of every term."""
        return self.example_square_norms() + self.extra_value ** 2

    def forward(self, terms: np.ndarray, v: np.ndarray) -> np.ndarray:
        return csr_matvec_rows(self.X, terms, v[:-1], self.extra_value * v[-1])

    def adjoint(self, terms: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        """sum_k coefficients_k x~_{terms[k]} as a parameter vector."""
        out = np.empty(self.n_params)
        out[:-1] = csr_rmatvec_rows(self.X, terms, coefficients)
        out[-1] = self.extra_value * coefficients.sum()
        return out


class _OrdinalRows(_Rows):
    """An ordinal problem's terms: pair k = i (p - 1) + c of example i and threshold c, least-
    squares row (x_i, -s e_c), label +1 when rank_i > c + 1, else -1 (section 7)."""

    def __init__(self, X: sp.csr_matrix, ranks: np.ndarray, n_levels: int, cost: np.ndarray,
                 s: float):
        super().__init__(X)
        ranks = self.sorted_examples(ranks)
        cost = self.sorted_examples(cost)
        self.n_thresholds = n_levels - 1
        columns = np.arange(self.n_thresholds)
        self.labels = np.where(columns[None, :] < ranks[:, None] - 1, 1.0, -1.0).ravel()
        self.cost = np.repeat(cost, self.n_thresholds)
        self.extra_value = -s
        self.n_params = self.n_features + self.n_thresholds

    def outputs(self, beta: np.ndarray) -> np.ndarray:
        d = self.n_features
        scores = self.everything.matvec(beta[:d])
        return (scores[:, None] + self.extra_value * beta[None, d:]).ravel()

    def outputs_in_input_order(self, outputs: np.ndarray) -> np.ndarray:
        return self.in_input_order(outputs.reshape(-1, self.n_thresholds)).ravel()

    def _examples(self, terms: np.ndarray):
        example = terms // self.n_thresholds
        rows, counts = np.unique(example, return_counts=True)
        return rows, counts

    def structure(self, terms: np.ndarray):
        """(examples, pair_ptr, pair_col) of the pairs ``terms`` (sorted, so they group by
        example)."""
        rows, counts = self._examples(terms)
        pair_ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=pair_ptr[1:])
        return rows, pair_ptr, terms % self.n_thresholds

    def compact(self, terms: np.ndarray):
        rows, pair_ptr, pair_col = self.structure(terms)
        return self.compact_rows(rows), pair_ptr, pair_col

    def compact_forward(self, A: CompactRows, v: np.ndarray, pair_ptr=None,
                        pair_col=None) -> np.ndarray:
        d = self.n_features
        scores = A.matvec(v[:d])
        return np.repeat(scores, np.diff(pair_ptr)) + self.extra_value * v[d + pair_col]

    def compact_adjoint(self, A: CompactRows, coefficients: np.ndarray, pair_ptr=None,
                        pair_col=None) -> np.ndarray:
        d = self.n_features
        per_example = np.add.reduceat(coefficients, pair_ptr[:-1]) \
            if coefficients.shape[0] else np.zeros(A.n_rows)
        out = np.empty(self.n_params)
        out[:d] = A.rmatvec(per_example)
        out[d:] = self.extra_value * np.bincount(pair_col, coefficients,
                                                 minlength=self.n_thresholds)
        return out

    def square_norms(self) -> np.ndarray:
        """||x~_k||^2 of every term: ||x_i||^2 + s^2 for each pair of example i."""
        return np.repeat(self.example_square_norms() + self.extra_value ** 2,
                         self.n_thresholds)

    def forward(self, terms: np.ndarray, v: np.ndarray) -> np.ndarray:
        d = self.n_features
        rows, counts = self._examples(terms)
        scores = csr_matvec_rows(self.X, rows, v[:d])
        return np.repeat(scores, counts) + self.extra_value * v[d + terms % self.n_thresholds]

    def adjoint(self, terms: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        d = self.n_features
        rows, counts = self._examples(terms)
        per_example = np.add.reduceat(coefficients, np.r_[0, np.cumsum(counts)[:-1]]) \
            if terms.shape[0] else coefficients
        out = np.empty(self.n_params)
        out[:d] = csr_rmatvec_rows(self.X, rows, per_example)
        out[d:] = self.extra_value * np.bincount(terms % self.n_thresholds, coefficients,
                                                 minlength=self.n_thresholds)
        return out


# -- Appendix A ---------------------------------------------------------------------------------


@dataclass
class MFNState:
    """The current point: beta, the outputs y_k = x~_k . beta of every term, and whether it is a
    crude start (Appendix A's ini = 0)."""

    beta: np.ndarray
    outputs: np.ndarray
    crude: bool


@dataclass
class _Counters:
    iterations: int = 0  # Newton iterations over all runs (reported in the records)
    cg_iterations: int = 0
    factorizations: int = 0
    runs: list = field(default_factory=list)  # one dict per run of Appendix A


@dataclass
class _NewtonPoint:
    """Step 3's data at the current point, computed once and shared with the point's record.

    The index sets (``active`` = I1, the least-squares terms; ``saturated`` = I2), the active
    terms compacted for CGLS (``A`` with the pair structure of ordinal terms), the CGLS warm
    start z^0 = sqrt(c_k) t_k (xi_k - xi_lo) on the active terms (``residual``; footnote 7: the
    outputs are known, no product is needed), g = sum_{I1} c_k t_k (xi_k - xi_lo) x~_k, and the
    shift q of eq. (23) (None without saturated terms).  From g come both CGLS's r^0 =
    g - lam (beta - q) and the dual point the record's duality gap needs, w(alpha) =
    kappa C (g + lam q): one pass over the active rows serves the two."""

    key: tuple  # (loss, C) the sets and the shift were computed for
    active: np.ndarray
    saturated: np.ndarray
    A: CompactRows
    pair_ptr: np.ndarray | None
    pair_col: np.ndarray | None
    residual: np.ndarray
    g: np.ndarray
    shift: np.ndarray | None


@dataclass(frozen=True)
class _Step3:
    """How step 3 went at one Newton iteration (for its record)."""

    n_active: int  # |I1|, the least-squares terms
    n_saturated: int  # |I2| (modified Huber and the hinge homotopy)
    cg_iterations: int
    factorized: bool  # solved by Cholesky (CGLS then only checked rule (13))


class _NormalEquations:
    """Step 3 by factorization (section 4.3: "factorization methods such as QR or SVD"), for
    problems with few parameters: the Gram matrix G = sum_{k in I} c_k x~_k x~_k' of the
    active terms is kept up to date as terms enter and leave I (at a cost of about L^2 / 2 per
    changed term with L stored entries; rebuilt from the active terms when more of them
    changed than remain, or when the updates since the last rebuild outnumber the active
    terms, which bounds the round-off they accumulate), and the normal equations (12),
    (lam I + G) delta = r^0, are solved by Cholesky.  G does not depend on lam, so it serves
    every stage of a C path and every tau of the hinge homotopy."""

    def __init__(self, terms, weight: np.ndarray):
        self.terms = terms
        self.weight = weight
        n = terms.n_params
        self.G = np.zeros((n, n))
        self.members = np.zeros(weight.shape[0], dtype=bool)
        self.updates = 0  # terms added or removed since G was last rebuilt

    def _add(self, terms: np.ndarray, weights: np.ndarray):
        rows, pair_ptr, pair_col = self.terms.structure(terms)
        cost = gram_cost(self.terms.X.indptr, rows)
        gram_update(self.terms.X, rows, weights, self.G, extra_value=self.terms.extra_value,
                    pair_ptr=pair_ptr, pair_col=pair_col,
                    parallel=use_parallel(cost, self.G.shape[0] ** 2))

    def update(self, active: np.ndarray):
        """Make G the Gram matrix of the terms ``active`` (sorted)."""
        mask = np.zeros_like(self.members)
        mask[active] = True
        entered = np.flatnonzero(mask & ~self.members)
        left = np.flatnonzero(self.members & ~mask)
        changed = entered.size + left.size
        if changed >= active.size or self.updates + changed > active.size:
            self.G[:] = 0.0
            self._add(active, self.weight[active])
            self.updates = 0
        elif changed:
            terms = np.concatenate((entered, left))
            weights = np.concatenate((self.weight[entered], -self.weight[left]))
            order = np.argsort(terms, kind="stable")
            self._add(terms[order], weights[order])
            self.updates += changed
        self.members = mask

    def solve(self, active: np.ndarray, lam: float, rhs: np.ndarray) -> np.ndarray | None:
        """delta with (lam I + G_active) delta = rhs, or None if the factorization fails."""
        self.update(active)
        M = self.G.copy()
        M[np.diag_indices_from(M)] += lam
        return cholesky_solve(M, rhs)


def _choose_normal_equations(params: MFNParams, terms, weight: np.ndarray):
    """The :class:`_NormalEquations` of ``linear_solver``, or None for CGLS alone."""
    choice = params.linear_solver
    if choice == "cgls":
        return None
    n = terms.n_params
    if choice == "cholesky":
        if n > config.MFN_CHOLESKY_MAX_PARAMS:
            raise ValueError(
                f"linear_solver='cholesky' factorizes a dense {n} x {n} matrix; above "
                f"{config.MFN_CHOLESKY_MAX_PARAMS} parameters use 'cgls' or 'auto'")
        return _NormalEquations(terms, weight)
    indptr = terms.X.indptr
    nnz = int(indptr[-1]) + terms.X.shape[0]  # with the bias column
    build = gram_cost(indptr, np.arange(terms.X.shape[0])) + terms.X.shape[0]
    cheap = n <= config.MFN_AUTO_CHOLESKY_MAX_PARAMS \
        and n ** 3 / 3.0 <= config.MFN_AUTO_CHOLESKY_PASSES * nnz \
        and build <= config.MFN_AUTO_CHOLESKY_PASSES * nnz
    return _NormalEquations(terms, weight) if cheap else None


class _Engine:
    """Appendix A on the terms of one problem, for any loss of the clipped family."""

    def __init__(self, terms, C: float, params: MFNParams, monitor: Monitor, clock: Stopwatch,
                 hinge: bool = False):
        self.terms = terms
        self.C = C
        self.target_C = C
        self.params = params
        self.monitor = monitor
        self.clock = clock
        self.hinge = hinge  # report the hinge objective and gap (the homotopy's target)
        self.t = terms.labels
        self.target_cost = terms.cost  # C_i of the problem asked for
        self.cost = terms.cost  # C_i of the problem being solved (a stage of the C path)
        self.weight = terms.cost / C  # c_i, the example weights (the same at every stage)
        self.sqrt_weight = np.sqrt(self.weight)
        self.count = _Counters()
        self.normal_equations = _choose_normal_equations(params, terms, self.weight)
        self._stop_message = ""
        self._rho = None
        self._point: _NewtonPoint | None = None  # step 3's data at the state's current point

    @property
    def at_target(self) -> bool:
        return self.cost is self.target_cost

    def set_stage(self, C: float):
        """Solve for C instead of the problem's own C (a stage of the C path), or go back."""
        same = C == self.target_C
        self.cost = self.target_cost if same else self.target_cost * (C / self.target_C)
        self.C = C
        self._point = None

    def data_norm(self) -> float | None:
        """rho = ||X~|| of the 'gradient_bound' rule (None for rule (13)): the largest singular
        value of the weighted matrix of all terms, by power iteration to 1% (computed once)."""
        if self.params.cgls_rule == "residual":
            return None
        if self._rho is None:
            everything = np.arange(self.t.shape[0])
            v = np.ones(self.terms.n_params)
            rho = 0.0
            for _ in range(100):
                v /= np.sqrt(dot(v, v))
                u = self.sqrt_weight * self.terms.forward(everything, v)
                v = self.terms.adjoint(everything, self.sqrt_weight * u)
                previous, rho = rho, np.sqrt(dot(u, u))
                if rho - previous <= 1e-2 * rho:
                    break
            self._rho = rho
        return self._rho

    # -- objective and certificates ------------------------------------------------------------
    def objective(self, beta: np.ndarray, xi: np.ndarray, loss: ClippedLoss,
                  cost: np.ndarray | None = None) -> float:
        cost = self.cost if cost is None else cost
        return 0.5 * dot(beta, beta) + loss.kappa * clipped_loss_sum(xi, cost, loss.xi_lo,
                                                                     loss.width)

    def hinge_objective(self, beta: np.ndarray, xi: np.ndarray) -> float:
        return 0.5 * dot(beta, beta) + float(np.sum(self.cost * np.maximum(xi, 0.0)))

    def dual_objective(self, xi: np.ndarray, loss: ClippedLoss,
                       cost: np.ndarray | None = None, w_alpha: np.ndarray | None = None) -> float:
        """D(alpha) at alpha_i = C_i loss'(xi_i): of the problem itself, or of the hinge problem
        (alpha is then in its box [0, C_i], and its conjugate term vanishes).  ``w_alpha`` =
        sum_i alpha_i t_i x~_i when the caller has it."""
        cost = self.cost if cost is None else cost
        alpha = cost * loss.derivative(xi)
        if w_alpha is None:
            support = np.flatnonzero(alpha)
            w_alpha = self.terms.adjoint(support, (alpha * self.t)[support])
        conjugate = 0.0 if self.hinge else loss.conjugate_sum(alpha, cost)
        return float(alpha.sum()) - 0.5 * dot(w_alpha, w_alpha) - conjugate

    # -- step 3's data ---------------------------------------------------------------------------
    def newton_point(self, xi: np.ndarray, loss: ClippedLoss, lam: float) -> _NewtonPoint:
        """The index sets at the current point (slacks ``xi``), the compacted active terms, the
        CGLS warm start and g (see :class:`_NewtonPoint`)."""
        key = (loss, self.C)
        if self._point is not None and self._point.key == key:
            return self._point
        lo = loss.xi_lo
        active, saturated = clipped_loss_sets(xi, lo, loss.width)
        A, pair_ptr, pair_col = self.terms.compact(active)
        sqrt_c = self.sqrt_weight[active]
        residual = sqrt_c * self.t[active] * (xi[active] - lo)
        g = self.terms.compact_adjoint(A, sqrt_c * residual, pair_ptr, pair_col)
        shift = None
        if saturated.size:
            # q = (width / lambda) sum_{I2} c_i t_i x~_i, eq. (23)
            shift = self.terms.adjoint(saturated, (self.weight * self.t)[saturated])
            shift *= loss.width / lam
        self._point = _NewtonPoint(key, active, saturated, A, pair_ptr, pair_col, residual, g,
                                   shift)
        return self._point

    def _preconditioning(self, point: _NewtonPoint, solved: bool) -> float:
        """alpha of CGLS's diagonal preconditioner for this call (``preconditioning``): "auto"
        takes LIBLINEAR's alpha unless CGLS only checks a factorized step, or the active
        least-squares rows are fewer than the parameters and their norms vary (see
        ``solvers/config.py``)."""
        choice = self.params.preconditioning
        if choice != "auto":
            return choice
        if solved:
            return 0.0
        if point.active.size < self.terms.n_params:
            norms = (self.weight * self.terms.square_norms())[point.active]
            mean = float(norms.mean()) if norms.size else 0.0
            if not mean > 0.0 or float(norms.std()) > config.MFN_PRECONDITION_MAX_CV * mean:
                return 0.0
        return config.MFN_AUTO_PRECONDITIONING

    def _factorized_step(self, point: _NewtonPoint, lam: float, beta_bar: np.ndarray,
                         residual: np.ndarray, gradient: np.ndarray) -> bool:
        """Solve (lam I + A'A) delta = r^0 (the normal equations (12) at the warm start) by
        Cholesky, move ``beta_bar`` by delta and bring CGLS's z and r (``residual``,
        ``gradient``, updated in place) to the new point: two products over the active terms.
        Returns False, changing nothing, when the factorization fails."""
        delta = self.normal_equations.solve(point.active, lam, gradient)
        if delta is None:
            return False
        sqrt_c = self.sqrt_weight[point.active]
        beta_bar += delta
        residual -= sqrt_c * self.terms.compact_forward(point.A, delta, point.pair_ptr,
                                                        point.pair_col)
        gradient[:] = self.terms.compact_adjoint(point.A, sqrt_c * residual, point.pair_ptr,
                                                 point.pair_col)
        gradient -= lam * beta_bar
        self.count.factorizations += 1
        return True

    # -- one run of Appendix A -------------------------------------------------------------------
    def run(self, state: MFNState, loss: ClippedLoss, epsilon: float,
            first_round: bool | None = None) -> tuple[str, str]:
        """Steps 2-8 from ``state`` (updated in place).  Returns (status, message).
        ``first_round`` runs heuristic 2's first round (default: for a crude start)."""
        p = self.params
        terms = self.terms
        lam = 1.0 / (self.C * loss.kappa)
        lo, width = loss.xi_lo, loss.width
        set_tol = self._set_tolerance(loss)
        # Step 1: ini = 0 (crude start) runs both heuristics; ini = 1 goes straight to eps.
        if first_round is None:
            first_round = state.crude
        need_second_round = first_round and p.first_round_epsilon is not None \
            and p.first_round_epsilon > epsilon
        eps = p.first_round_epsilon if need_second_round else epsilon
        first_call = state.crude
        state.crude = False
        beta, outputs = state.beta, state.outputs
        xi = np.empty_like(outputs)
        margin_slacks(self.t, outputs, xi)
        F_previous = self.objective(beta, xi, loss)
        newton = 0  # Appendix A's iter (step 2)
        cg_total = 0
        while True:
            # Step 3: the index sets at beta (I0: xi <= lo, I1: lo < xi < hi, I2: xi >= hi)
            # and the least-squares problem on I1.  With saturated terms CGLS solves (23) for
            # beta~ = beta - q, with targets t_i (1 - xi_lo) - x~_i . q (its warm-start
            # residual at beta - q is the one at beta).
            point = self.newton_point(xi, loss, lam)
            beta_bar = beta.copy()
            if point.shift is not None:
                beta_bar -= point.shift
            cg_cap = p.max_cgls_iterations
            heuristic_1 = first_call and p.initial_cgls_iterations is not None
            if heuristic_1:
                cg_cap = p.initial_cgls_iterations
            first_call = False
            # Step 4: CGLS on the compacted active terms, warm-started at beta (Frommer &
            # Maass) from z^0 and r^0 (footnote 7), stopped by rule (13) (or the bound it
            # comes from, ``cgls_rule``).  With the normal equations factorized (few
            # features), CGLS starts from their solution instead and only checks rule (13).
            residual = point.residual.copy()
            gradient = point.g - lam * beta_bar
            solved = False
            if self.normal_equations is not None and not heuristic_1:
                solved = self._factorized_step(point, lam, beta_bar, residual, gradient)
            cg_iters, optimal = cgls_compact(
                point.A, self.sqrt_weight[point.active], None, beta_bar,
                bias_scale=terms.extra_value, lam=lam, eps=eps, max_iter=cg_cap,
                pair_ptr=point.pair_ptr, pair_col=point.pair_col,
                precondition=self._preconditioning(point, solved), rho=self.data_norm(),
                residual=residual, gradient=gradient)
            if cg_iters == 0 and not solved:
                beta_bar = beta.copy()
                outputs_bar = outputs.copy()
            else:
                if point.shift is not None:
                    beta_bar += point.shift
                if terms.extra_value == 0.0:
                    beta_bar[-1] = 0.0
                outputs_bar = terms.outputs(beta_bar)
            self.count.cg_iterations += cg_iters
            cg_total += cg_iters
            newton += 1
            self.count.iterations += 1
            step3 = _Step3(point.active.size, point.saturated.size, cg_iters, solved)

            # Step 5: beta_bar is optimal if CGLS met (13) and no term changes set (within tol
            # in t_i y_i): (b) active terms keep xi >= -tol (and, with three sets, <= hi + tol),
            # (c) inactive ones keep xi <= tol, saturated ones xi >= hi - tol.
            xi_bar = np.empty_like(outputs)
            margin_slacks(self.t, outputs_bar, xi_bar)
            if optimal and clipped_loss_sets_hold(xi, xi_bar, lo, width, set_tol):
                beta[:] = beta_bar
                outputs[:] = outputs_bar
                xi = xi_bar
                self._point = None
                F = self.objective(beta, xi, loss)
                if self._report(beta, xi, loss, lam, F, step3, 1.0, eps):
                    return self._finish("stopped", self._stop_message, loss, eps, newton,
                                        cg_total)
                # Step 8: the second round of heuristic 2, or the end.
                if need_second_round:
                    need_second_round = False
                    eps = epsilon
                    F_previous = F
                    continue
                return self._finish("converged", (
                    f"converged: CGLS stopping rule met at eps={eps:g} and the index sets "
                    f"are stable within tol={set_tol:g}"), loss, eps, newton, cg_total)

            # Step 6: exact line search on the ray beta -> beta_bar, eqs. (14)-(18): the
            # slope's ordinates at delta = 0 and 1 (eqs. (16)-(17), regularizer + loss) and
            # the breakpoints where terms change set.
            direction = beta_bar - beta
            loss_l0, loss_r0, breakpoints, dl, dr = clipped_loss_breakpoints(
                xi, xi_bar, self.cost * loss.kappa, lo, width)
            l0 = dot(beta, direction) + loss_l0
            r0 = dot(beta_bar, direction) + loss_r0
            delta = piecewise_linear_root(l0, r0, breakpoints, dl, dr)

            # Step 7: move, recompute the index sets (next pass) and the objective.  A step
            # that would raise f (the error exit), or that is not finite (the least-squares
            # problem numerically singular, as at the homotopy's smallest tau), is not taken:
            # the state keeps the last good point.
            if not np.isfinite(delta):
                return self._finish("failed", (
                    f"the line search found no finite step at Newton iteration {newton} (the "
                    f"least-squares problem is singular in floating point at lambda "
                    f"{lam:.3g}); the last point is kept"), loss, eps, newton, cg_total)
            new_beta = beta + delta * direction
            new_outputs = outputs + delta * (outputs_bar - outputs)
            new_xi = np.empty_like(xi)
            margin_slacks(self.t, new_outputs, new_xi)
            F = self.objective(new_beta, new_xi, loss)
            if not F <= F_previous * (1.0 + _RISE_SLACK) + 1e-300:
                return self._finish("failed", (
                    f"objective rose from {F_previous:.17g} to {F:.17g} at Newton iteration "
                    f"{newton} (Appendix A step 7 error exit; step {delta:.3g}, lambda "
                    f"{lam:.3g}); the last point is kept"), loss, eps, newton, cg_total)
            beta[:] = new_beta
            outputs[:] = new_outputs
            xi = new_xi
            self._point = None
            if self._report(beta, xi, loss, lam, F, step3, delta, eps):
                return self._finish("stopped", self._stop_message, loss, eps, newton, cg_total)
            if newton >= p.max_iter:
                return self._finish("max_iter", f"itermax={p.max_iter} Newton iterations "
                                    "reached", loss, eps, newton, cg_total)
            F_previous = F

    def _set_tolerance(self, loss: ClippedLoss) -> float:
        """Step 5's tol.  It is absolute in t_i y_i; a quadratic band narrower than it (the
        hinge homotopy's 2 tau past tau = 2^-26) would let a term cross the whole band
        unnoticed, so it is capped at a fraction of a finite band's width."""
        return min(self.params.tol, _SET_TOL_PER_BAND * loss.width)

    def _finish(self, status, message, loss, eps, newton, cg_total):
        self.count.runs.append({"tau": -loss.xi_lo if self.hinge else None, "C": self.C,
                                "epsilon": eps, "set_tolerance": self._set_tolerance(loss),
                                "newton_iterations": newton, "cg_iterations": cg_total,
                                "status": status})
        return status, message

    def _report(self, beta, xi, loss, lam, F, step3: _Step3, delta, eps) -> bool:
        """One record per Newton iteration: the objective of ``design.md``'s problem (for the
        homotopy, the hinge objective; on a stage of the C path, the objective at the C asked
        for) and the relative duality gap.  The record's time is when the iterate was ready.
        The gap's dual point comes from step 3's data at the new point (computed here, used
        by the next Newton iteration)."""
        elapsed = self.clock()
        cost = self.target_cost
        if self.hinge:
            primal = self.hinge_objective(beta, xi)
        else:
            primal = F if self.at_target else self.objective(beta, xi, loss, cost)
        point = self.newton_point(xi, loss, lam)
        w_alpha = point.g if point.shift is None else point.g + lam * point.shift
        w_alpha = (loss.kappa * self.target_C) * w_alpha
        gap = (primal - self.dual_objective(xi, loss, cost, w_alpha)) / max(abs(primal), 1e-300)
        extras = {
            "optimality_measure": "relative_duality_gap",
            "active": int(step3.n_active),
            "cg_iterations": int(step3.cg_iterations),
            "factorized": step3.factorized,
            "step": float(delta),
            "epsilon": float(eps),
        }
        if step3.n_saturated:
            extras["saturated"] = int(step3.n_saturated)
        if not self.at_target:
            extras["path_C"] = float(self.C)
        if self.hinge:
            extras["tau"] = float(-loss.xi_lo)
            extras["smoothed_objective"] = float(F)
        self.monitor.report(IterationRecord(self.count.iterations, elapsed, primal, gap, extras))
        reason = self.monitor.stop_reason()
        if reason is not None:
            self._stop_message = f"stopped: {reason}"
            return True
        return False


def _solve_terms(terms, C: float, loss_name: str, params: MFNParams, monitor: Monitor,
                 beta0: np.ndarray | None, crude: bool, clock: Stopwatch, dual_kkt=None):
    """Run Appendix A (and the homotopy or the dual KKT continuation) on ``terms``; returns
    (state, status, message, engine).  ``clock`` started when the caller did, before the
    terms were set up (the records' times include that work)."""
    hinge = loss_name == "hinge"
    engine = _Engine(terms, C, params, monitor, clock, hinge=hinge)
    beta = np.zeros(terms.n_params) if beta0 is None else np.array(beta0, dtype=np.float64)
    if beta.shape != (terms.n_params,):
        raise ValueError(f"the starting point must have {terms.n_params} entries")
    if terms.extra_value == 0.0:
        beta[-1] = 0.0
    state = MFNState(beta, terms.outputs(beta), crude)
    if hinge:
        status, message = _hinge_homotopy(engine, state, params)
    else:
        loss = _LOSSES[loss_name]
        staged = False
        if crude and beta0 is None and engine.normal_equations is None:
            status, message, staged = _run_c_path(engine, state, params, loss)
            if status == "stopped":
                return state, status, message, engine
        # A seed from C / 10 is still a crude start for C: heuristic 2's first round again.
        status, message = engine.run(state, loss, params.epsilon,
                                     first_round=True if staged else None)
        if status == "converged" and dual_kkt is not None:
            status, message = _drive_dual_kkt(engine, state, params, loss, dual_kkt)
    return state, status, message, engine


def c_path_stages(C: float, terms, cost: np.ndarray, start: float | None) -> list[float]:
    """The stages C / 10^J, ..., C / 10 of a cold start's C path: J is the largest integer with
    C / 10^J >= start / mean_k c_k ||x~_k||^2 (c_k = C_k / C, the example weights).  Empty when
    ``start`` is None or C is below 10 times that bound."""
    if start is None:
        return []
    scale = float(np.mean(cost / C * terms.square_norms()))
    if not scale > 0.0:
        return []
    lowest = start / scale
    stages = []
    stage = C / 10.0
    while stage >= lowest:
        stages.append(stage)
        stage /= 10.0
    return stages[::-1]


def _run_c_path(engine: _Engine, state: MFNState, params: MFNParams,
                loss: ClippedLoss) -> tuple[str, str, bool]:
    """Beta-seeding from a smaller C (section 4.1, Table 1) for a cold start at a large C.

    Appendix A from zero at a C much larger than 1 / ||x~||^2 spends most of its Newton
    iterations shrinking the active set with short steps (news20 made binary at C = 100: 65
    iterations of the eps = 1e-2 round, over 50 = itermax).  Solved first at C / 10^J (where
    the cold start is cheap, with both heuristics), then at each C / 10^j seeded with the last
    (ini = 1, at the first round's eps: only a seed), the final run at C starts next to its
    optimum.  The records report the objective and the duality gap at the C asked for.

    Returns the last stage's (status, message) and whether there were stages at all.  A stage
    that ends short of its eps (itermax, or the objective's rise) still leaves its last point
    as the next seed, so the path goes on; each stage's status is in ``extras["runs"]``."""
    stage_eps = params.first_round_epsilon or params.epsilon
    status, message = "converged", ""
    stages = c_path_stages(engine.target_C, engine.terms, engine.target_cost,
                           params.c_path_start)
    for C in stages:
        engine.set_stage(C)
        status, message = engine.run(state, loss, max(stage_eps, params.epsilon))
        if status == "stopped":
            break
    engine.set_stage(engine.target_C)
    return status, message, bool(stages)


def _drive_dual_kkt(engine: _Engine, state: MFNState, params: MFNParams, loss: ClippedLoss,
                    violation_of) -> tuple[str, str]:
    """Section 4.7 / 5: continue with eps / 10, eps / 100, ... until the maximum dual KKT
    violation is within ``params.dual_kkt_tolerance``."""
    tau = params.dual_kkt_tolerance
    eps = params.epsilon
    for k in range(1, 100):
        violation = violation_of(state)
        if violation <= tau:
            return "converged", (
                f"converged: maximum dual KKT violation {violation:.3g} <= {tau:g} "
                f"(eps={eps:g})"
            )
        if params.epsilon * 10.0 ** -k < _SMALLEST_EPSILON:
            break
        eps = params.epsilon * 10.0 ** -k
        status, message = engine.run(state, loss, eps)
        if status != "converged":
            return status, message
    return "max_iter", f"dual KKT violation {violation:.3g} still above {tau:g} at eps={eps:g}"


def _hinge_homotopy(engine: _Engine, state: MFNState, params: MFNParams) -> tuple[str, str]:
    """Section 6: solve with tau_j = 2^-j, j = 0, 1, ..., each seeded with the last, until the
    hinge duality gap relative to the hinge objective is at most ``hinge_gap_tolerance``."""
    gap = np.inf
    for j in range(params.hinge_max_rounds + 1):
        tau = 2.0 ** (-j)
        loss = smoothed_hinge(tau)
        status, message = engine.run(state, loss, params.epsilon)
        if status != "converged":
            return status, f"tau=2^-{j}: {message}"
        xi = 1.0 - engine.t * state.outputs
        primal = engine.hinge_objective(state.beta, xi)
        gap = (primal - engine.dual_objective(xi, loss)) / max(abs(primal), 1e-300)
        if gap <= params.hinge_gap_tolerance:
            return "converged", (
                f"converged: hinge duality gap {gap:.3g} (relative) <= "
                f"{params.hinge_gap_tolerance:g} after tau=2^-{j}"
            )
    return "max_iter", (
        f"hinge homotopy ended at tau=2^-{params.hinge_max_rounds} with relative gap {gap:.3g}"
    )


def _extras(engine: _Engine, state: MFNState) -> dict:
    extras = {"cg_iterations": engine.count.cg_iterations, "runs": engine.count.runs,
              "linear_solver": "cgls" if engine.normal_equations is None else "cholesky",
              "factorizations": engine.count.factorizations}
    if engine.hinge:
        xi = 1.0 - engine.t * state.outputs
        loss = smoothed_hinge(engine.count.runs[-1]["tau"])
        primal = engine.hinge_objective(state.beta, xi)
        extras["tau"] = engine.count.runs[-1]["tau"]
        extras["hinge_relative_gap"] = \
            (primal - engine.dual_objective(xi, loss)) / max(abs(primal), 1e-300)
    return extras


# -- binary problems ----------------------------------------------------------------------------


def _binary_terms(problem: BinaryProblem) -> _BinaryRows:
    if problem.bias == "free":
        raise ValueError("mfn solves the regularized-bias and no-bias problems only")
    if problem.loss not in ("squared_hinge", "modified_huber", "hinge"):
        raise ValueError(f"mfn cannot solve loss {problem.loss!r}")
    return _BinaryRows(problem.X, problem.y, problem.cost, problem.effective_bias_scale)


def solve(problem: BinaryProblem, params: MFNParams | None = None,
          monitor: Monitor | None = None, beta0: np.ndarray | None = None,
          continuation: bool = False, w_guess: np.ndarray | None = None,
          active_guess: np.ndarray | None = None) -> Solution:
    """Solve a binary ``problem`` with L2-SVM-MFN.

    Starting point (Appendix A, step 1): zero by default; ``w_guess`` (optionally with a guessed
    active set ``active_guess``) is rescaled by eqs. (8)-(9) (:func:`seed_from_weights`); or
    ``beta0`` as given.  These are crude starts (ini = 0: both heuristics) unless
    ``continuation=True`` marks ``beta0`` as the solution of a nearby problem (ini = 1: no
    heuristics, eps straight to its final value), the beta-seeding of a C path.
    """
    clock = Stopwatch()
    terms = _binary_terms(problem)
    params = params or MFNParams(C=problem.C, loss=problem.loss, bias=problem.bias)
    monitor = monitor or NullMonitor()
    if w_guess is not None:
        if beta0 is not None:
            raise ValueError("give either beta0 or w_guess")
        beta0 = seed_from_weights(problem, w_guess, active_guess)
    dual_kkt = None
    if params.dual_kkt_tolerance is not None:
        def dual_kkt(state):
            return dual_kkt_violation(problem, state.beta,
                                      terms.outputs_in_input_order(state.outputs))[1]
    state, status, message, engine = _solve_terms(
        terms, problem.C, problem.loss, params, monitor, beta0, not continuation, clock,
        dual_kkt)
    extras = _extras(engine, state)
    if problem.loss == "squared_hinge":
        extras["dual_kkt_violation"] = dual_kkt_violation(
            problem, state.beta, terms.outputs_in_input_order(state.outputs))[1]
    xi = 1.0 - engine.t * state.outputs
    if problem.loss == "hinge":
        objective = engine.hinge_objective(state.beta, xi)
    else:
        objective = engine.objective(state.beta, xi, _LOSSES[problem.loss])
    return Solution(state.beta, objective, status, message, engine.count.iterations, extras)


def seed_from_weights(problem: BinaryProblem, w_guess: np.ndarray,
                      active: np.ndarray | None = None, refine: bool = True) -> np.ndarray:
    """beta_0 = (gamma w~, b_0) from a weight guess w~ (section 4.1, eqs. (8)-(9)).

    gamma and b_0 minimize lambda/2 (gamma^2 ||w~||^2 + b_0^2 / s^2) + 1/2 sum_{i in I}
    c_i (gamma w~.x_i + b_0 - t_i)^2 over the guessed active set I (all examples by default),
    lambda = 1/(2C), b_0 the intercept (the bias coefficient is b_0 / s; s = 1 gives the
    paper's formulas).  With ``refine`` the set is reset to I(beta_0) and (9) solved again
    (footnote 4; w~ . x_i is not recomputed).  Without a bias, b_0 = 0 and gamma solves the
    one-dimensional problem.
    """
    lam = 1.0 / (2.0 * problem.C)
    w_guess = np.asarray(w_guess, dtype=np.float64)
    if w_guess.shape != (problem.n_features,):
        raise ValueError(f"w_guess must have n_features = {problem.n_features} entries")
    scores = csr_matvec(problem.X, w_guess)  # w~ . x_i, computed once
    t = problem.y
    c = problem.cost / problem.C
    s = problem.effective_bias_scale
    idx = np.arange(problem.n_samples) if active is None else np.asarray(active, dtype=np.int64)
    ww = dot(w_guess, w_guess)
    beta = np.zeros(problem.n_features + 1)
    for _ in range(2 if refine else 1):
        u, ti, ci = scores[idx], t[idx], c[idx]
        p11 = lam * ww + float(np.sum(ci * u * u))
        q1 = float(np.sum(ci * ti * u))
        if s == 0.0:
            gamma, b0 = (q1 / p11 if p11 > 0 else 0.0), 0.0
        else:
            p22 = lam / (s * s) + float(ci.sum())
            p12 = float(np.sum(ci * u))
            q2 = float(np.sum(ci * ti))
            d = p11 * p22 - p12 * p12
            if d <= 0.0:  # w~ = 0 or an empty set: nothing to rescale
                return beta
            gamma = (p22 * q1 - p12 * q2) / d
            b0 = (p11 * q2 - p12 * q1) / d
        beta[:-1] = gamma * w_guess
        beta[-1] = b0 / s if s else 0.0
        idx = np.flatnonzero(t * (gamma * scores + b0) < 1.0)
    return beta


def dual_kkt_violation(problem: BinaryProblem, beta: np.ndarray,
                       outputs: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Section 4.7: dual variables recovered from ``beta`` and their maximum KKT violation.

    In the paper's scaling (lambda = 1/(2C), example weights c_i = C_i / C): alpha_i =
    -c_i t_i d_i / lambda on the active set I(beta) (d_i = y_i - t_i), 0 elsewhere;
    beta^ = sum alpha_i t_i x~_i, xi_i = lambda alpha_i / c_i, g_i = t_i y_i(beta^) + xi_i - 1;
    the violation is max(max_{alpha_i > 0} |g_i|, max_{alpha_i = 0} max(0, -g_i)).  These
    alpha_i = 2 C_i max(0, 1 - m_i) are also the dual variables of ``design.md``'s scaling
    (``problem.dual_from_primal(beta)``), which are returned with the violation.
    ``outputs`` (x~_i . beta for every example) saves a product when the caller has them.
    """
    if problem.loss != "squared_hinge":
        raise ValueError("the dual KKT check of section 4.7 is for the squared hinge loss")
    lam = 1.0 / (2.0 * problem.C)
    c = problem.cost / problem.C
    t = problem.y
    if outputs is None:
        outputs = problem.outputs(beta)
    active = t * outputs < 1.0
    alpha = np.where(active, -c * t * (outputs - t) / lam, 0.0)
    rows = np.flatnonzero(alpha)
    beta_hat = np.empty(problem.n_features + 1)
    beta_hat[:-1] = csr_rmatvec_rows(problem.X, rows, (alpha * t)[rows])
    beta_hat[-1] = problem.effective_bias_scale * float((alpha * t)[rows].sum())
    xi = lam * alpha / np.where(c > 0, c, 1.0)
    g = t * problem.outputs(beta_hat) + xi - 1.0
    positive = alpha > 0
    violation = max(
        float(np.max(np.abs(g[positive]), initial=0.0)),
        float(np.max(np.maximum(0.0, -g[~positive]), initial=0.0)),
    )
    return alpha, violation


def solve_path(problem: BinaryProblem, Cs, params: MFNParams | None = None,
               monitor: Monitor | None = None, seeding: bool = True,
               rescale: bool = False) -> list[Solution]:
    """Solve for each C in ``Cs`` (in the given order) -- the C path of Table 1.

    With ``seeding`` (beta-seeding, section 4.1) each problem starts from the previous
    solution with ini = 1 (no heuristics; footnote 5): as it is (gamma = 1, the previous b,
    "this simple initialization also works quite well"), or with ``rescale`` rescaled by eqs.
    (8)-(9) on the previous active set.  Without it every problem starts from zero with both
    heuristics.
    """
    params = params or MFNParams(loss=problem.loss, bias=problem.bias)
    solutions = []
    previous = None
    for C in Cs:
        sub = BinaryProblem(problem.X, problem.y, C=float(C), loss=problem.loss,
                            bias=problem.bias, bias_scale=problem.bias_scale,
                            sample_weight=problem.sample_weight)
        beta0 = None
        if seeding and previous is not None:
            beta0 = previous.beta
            if rescale:
                margins = sub.margins(beta0)
                beta0 = seed_from_weights(sub, beta0[:-1], np.flatnonzero(margins < 1.0),
                                          refine=False)
        solution = solve(sub, params.model_copy(update={"C": float(C)}), monitor, beta0=beta0,
                         continuation=beta0 is not None)
        solutions.append(solution)
        previous = solution
    return solutions


def run(problem: BinaryProblem, params: MFNParams, monitor: Monitor) -> Solution:
    """Registry entry point (binary problems; ``solvers.train`` does one-vs-rest)."""
    return solve(problem, params, monitor)


# -- ordinal regression (section 7) -------------------------------------------------------------


@dataclass
class OrdinalProblem:
    """Ordinal regression with p ranks and p - 1 thresholds (Keerthi & DeCoste eq. (25) in
    ``design.md``'s scale; see the module docstring).

    ``ranks`` are integers 1..n_levels; parameters are beta = (w, b_1..b_{p-1}) with
    thresholds theta_s = bias_scale * b_s.
    """

    X: sp.csr_matrix
    ranks: np.ndarray
    n_levels: int
    C: float = 1.0
    bias_scale: float = 1.0
    sample_weight: np.ndarray | None = None

    def __post_init__(self):
        self.X = as_csr(self.X)  # canonical: the Gram kernel needs sorted, unique indices
        ranks = np.asarray(self.ranks)
        if ranks.shape != (self.X.shape[0],):
            raise ValueError("ranks must have one entry per row")
        if self.n_levels < 2 or ranks.min() < 1 or ranks.max() > self.n_levels \
                or not np.all(ranks == np.round(ranks)):
            raise ValueError("ranks must be integers in 1..n_levels, n_levels >= 2")
        if not self.C > 0 or not self.bias_scale > 0:
            raise ValueError("C and bias_scale must be positive")
        self.ranks = ranks.astype(np.int64)

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def cost(self) -> np.ndarray:
        weight = np.ones(self.X.shape[0]) if self.sample_weight is None else self.sample_weight
        return self.C * np.asarray(weight, dtype=np.float64)

    def terms(self) -> _OrdinalRows:
        return _OrdinalRows(self.X, self.ranks, self.n_levels, self.cost, self.bias_scale)

    def split(self, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(w, thresholds) of a parameter vector."""
        d = self.n_features
        return beta[:d], self.bias_scale * beta[d:]

    def objective(self, beta: np.ndarray) -> float:
        terms = self.terms()
        xi = 1.0 - terms.labels * terms.outputs(beta)
        return 0.5 * dot(beta, beta) + float(np.sum(terms.cost * SQUARED_HINGE.value(xi)))

    def gradient(self, beta: np.ndarray) -> np.ndarray:
        terms = self.terms()
        xi = 1.0 - terms.labels * terms.outputs(beta)
        coefficients = -terms.cost * SQUARED_HINGE.derivative(xi) * terms.labels
        support = np.flatnonzero(coefficients)
        return beta + terms.adjoint(support, coefficients[support])


def solve_ordinal(problem: OrdinalProblem, params: MFNParams | None = None,
                  monitor: Monitor | None = None, beta0: np.ndarray | None = None,
                  continuation: bool = False) -> Solution:
    """Solve an ordinal regression problem with the section 7 extension of L2-SVM-MFN
    (Appendix A on the (example, threshold) pairs, heuristics included)."""
    clock = Stopwatch()
    params = params or MFNParams(C=problem.C, task="ordinal")
    terms = problem.terms()
    state, status, message, engine = _solve_terms(
        terms, problem.C, "squared_hinge", params, monitor or NullMonitor(), beta0,
        not continuation, clock)
    xi = 1.0 - terms.labels * state.outputs
    objective = engine.objective(state.beta, xi, SQUARED_HINGE)
    return Solution(state.beta, objective, status, message, engine.count.iterations,
                    _extras(engine, state))


def fit_ordinal(dataset: Dataset, spec: SolverSpec, params: MFNParams, monitor: Monitor) -> Fit:
    """``train`` handler of ``task="ordinal"``: the sorted distinct labels become ranks 1..p;
    the model predicts the original labels."""
    classes = dataset.classes
    if classes.shape[0] < 2:
        raise ValueError("ordinal regression needs at least two distinct labels")
    ranks = np.searchsorted(classes, dataset.y) + 1
    problem = OrdinalProblem(dataset.X, ranks, classes.shape[0], C=params.C,
                             bias_scale=params.bias_scale, sample_weight=dataset.sample_weight)
    solution = solve_ordinal(problem, params, monitor)
    w, thresholds = problem.split(solution.beta)
    model = OrdinalModel(w, thresholds, classes)
    summary = SubproblemResult("ordinal", solution.objective, solution.status, solution.message,
                               solution.iterations, solution.extras)
    return Fit(model, [summary])


register(SolverSpec(
    name="mfn",
    params_model=MFNParams,
    run=run,
    description="Modified finite Newton method (L2-SVM-MFN): CGLS on the active set with exact "
                "line search; modified Huber, hinge by a Huber homotopy, ordinal regression.",
    reference="S. S. Keerthi and D. DeCoste, A modified finite Newton method for fast solution "
              "of large scale linear SVMs, JMLR 6 (2005) 341-361.",
    tasks=("binary", "multiclass", "ordinal"),
    fit_handlers={"ordinal": fit_ordinal},
))
