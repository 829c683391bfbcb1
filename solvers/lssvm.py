"""The least-squares SVM family: Suykens' LS-SVM, Fung & Mangasarian's proximal SVM and the
relaxed LS-SVM of Joshi, Jayadeva, Ramakrishnan & Chandra ("Fast algorithms for least squares
SVMs"; equation numbers below are theirs), with linear, RBF and polynomial kernels.

Conventions
-----------
Labels y_i = +-1, per-example cost C_i = C * sample_weight_i, phi the kernel's feature map.
Every problem is written as in ``design.md`` (1/2 ||w||^2 + bias term + C sum loss(m_i),
m_i = y_i f(x_i)); the papers write C_J/2 q'q (Joshi) or gamma/2 e'e (Suykens), so
**Suykens' gamma = Joshi's C = 2 C** (per example 2 C_i).  All three keep the least-squares loss
(1 - m)^2 except SesquiSMO (below).

``lssvm`` -- Suykens & Vandewalle, (5)-(7), free bias::

    minimize 1/2 ||w||^2 + C sum_i (1 - y_i (w.phi(x_i) + b))^2

  Kernel form: f(x) = sum_j beta_j k(x_j, x) + b with beta_j = y_j alpha_j, and (7) -- read
  with K as the label-scaled Omega_ij = y_i y_j k(x_i, x_j), as in Suykens & Vandewalle --
  is equivalent to (K + Lambda) beta + b e = y, e'beta = 0, Lambda = diag(1 / (2 C_i)).
  * linear kernel: the primal least-squares problem by CGLS (:func:`solvers.core.cgls`, never
    forming X'X), in rounds of decreasing tolerance eps = 0.1, 0.01, ..., ``tol`` (rule (13)
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

``relaxed_lssvm`` -- Joshi et al. (13)-(21), bias weighted by A (``design.md``'s regularized
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

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.linalg
from numba import njit
from pydantic import Field, model_validator

from solvers import config
from solvers.core.kernels import Kernel, KernelCache, cache_row, kernel_matrix
from solvers.core.linalg import cgls, conjugate_gradient
from solvers.core.sparse import csr_rmatvec, use_parallel
from solvers.models import KernelModel, LinearModel
from solvers.monitor import IterationRecord, Monitor, NullMonitor, Stopwatch
from solvers.problem import BinaryProblem
from solvers.registry import Solution, SolverParams, SolverSpec, register
from solvers.train import Fit, fit_linear_one_vs_rest, run_binary_subproblems

KernelName = Literal["linear", "rbf", "polynomial"]
Method = Literal["auto", "direct", "iterative"]


# -- parameters --------------------------------------------------------------------------------


class KernelSolverParams(SolverParams):
    """Kernel and cache parameters shared by the LS-SVM family."""

    loss: Literal["least_squares"] = "least_squares"
    kernel: KernelName = Field(
        "rbf", description="Kernel: linear x.z, rbf exp(-gamma ||x-z||^2), polynomial "
                           "(gamma x.z + coef0)^degree.")
    gamma: float = Field(1.0, gt=0, description="Kernel gamma (rbf, polynomial); Joshi et al. "
                                                "use 1 in all experiments.")
    degree: int = Field(3, ge=1, description="Polynomial kernel degree.")
    coef0: float = Field(0.0, description="Polynomial kernel constant term.")
    cache_mb: float = Field(config.KERNEL_CACHE_MB, gt=0,
                            description="Memory of the kernel-row cache in MiB (at least one "
                                        "row is kept).")

    def kernel_function(self) -> Kernel:
        return Kernel(self.kernel, self.gamma, self.degree, self.coef0)


class _SystemParams(KernelSolverParams):
    method: Method = Field(
        "auto",
        description="direct: dense factorization of the kernel system; iterative: conjugate "
                    "gradients (CGLS on the primal for the linear kernel, a kernel operator "
                    "through the row cache otherwise); auto: iterative for the linear kernel, "
                    "direct up to a size threshold otherwise.")
    tol: float = Field(1e-6, gt=0, lt=1,
                       description="iterative: relative residual at which CG stops (for the "
                                   "linear kernel, CGLS rule (13) ||X'z - lambda beta|| <= "
                                   "tol ||z||).")
    max_iter: int = Field(10000, ge=1, description="iterative: conjugate-gradient iterations.")


class LSSVMParams(_SystemParams):
    """Parameters of ``lssvm`` (Suykens' gamma = 2 C)."""

    solver: Literal["lssvm"] = "lssvm"
    bias: Literal["free"] = Field("free", description="The LS-SVM bias is free (unregularized).")


class ProximalSVMParams(_SystemParams):
    """Parameters of ``proximal_svm`` (Fung & Mangasarian's nu = 2 C)."""

    solver: Literal["proximal_svm"] = "proximal_svm"
    bias: Literal["regularized"] = Field(
        "regularized", description="The proximal SVM regularizes the bias: 1/2 b~^2 with "
                                   "intercept bias_scale * b~.")


class RelaxedLSSVMParams(KernelSolverParams):
    """Parameters of ``relaxed_lssvm`` (Joshi's C = 2 C; ``A`` weighs the bias)."""

    solver: Literal["relaxed_lssvm"] = "relaxed_lssvm"
    loss: Literal["least_squares", "squared_hinge"] = Field(
        "least_squares",
        description="least_squares for variant 2smo (equality constraints (6)); "
                    "squared_hinge for sesquismo (inequality constraints (33) make the error "
                    "max(0, 1 - m)); follows the variant when not given.")
    bias: Literal["regularized"] = Field(
        "regularized", description="The bias enters as A/2 b^2 (13) (design.md's regularized "
                                   "bias with bias_scale = 1/sqrt(A)); set A, not bias_scale.")
    variant: Literal["2smo", "sesquismo"] = Field(
        "2smo", description="2smo: equality constraints, multipliers free; sesquismo: "
                            "inequality constraints (32)-(35), multipliers >= 0.")
    A: float = Field(1e4, gt=0, description="Weight of A/2 b^2 in (13); Joshi et al. chose "
                                            "1e4. With sumt, the starting value.")
    tol: float = Field(1e-3, gt=0,
                       description="Stop when the largest KKT violation of (18) (or (34)-(35))"
                                   ", in units of the margin, is at most tol.")
    max_iter: int = Field(1000, ge=1, description="Epochs of n multiplier updates each (over "
                                                  "all SUMT rounds).")
    sumt: bool = Field(False, description="Section VI: drive A towards 0 over rounds to "
                                          "recover the classical (free-bias) problem.")
    sumt_factor: float = Field(0.1, gt=0, lt=1,
                               description="rho in A <- rho A between SUMT rounds (the paper "
                                           "illustrates 0.9; each round costs more as A "
                                           "shrinks, so fewer, larger steps are cheaper).")
    sumt_tol: float = Field(1e-6, gt=0,
                            description="SUMT stops when |lambda'y| <= sumt_tol * "
                                        "sum |lambda_i|.")
    sumt_max_rounds: int = Field(100, ge=1, description="Largest number of SUMT rounds.")

    @model_validator(mode="before")
    @classmethod
    def _loss_follows_variant(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("variant") == "sesquismo" and "loss" not in data:
            data = {**data, "loss": "squared_hinge"}
        return data

    @model_validator(mode="after")
    def _check_consistency(self):
        expected = "squared_hinge" if self.variant == "sesquismo" else "least_squares"
        if self.loss != expected:
            raise ValueError(f"variant {self.variant!r} solves loss {expected!r}, not "
                             f"{self.loss!r}")
        if self.bias_scale != 1.0:
            raise ValueError("relaxed_lssvm weighs the bias by A (A = 1/bias_scale^2): set A "
                             "instead of bias_scale")
        return self


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelSolution:
    """One binary kernel problem solved: f(x) = sum_j coef_j k(x_j, x) + intercept over the
    training rows x_j (coef_j = y_j alpha_j)."""

    coef: np.ndarray
    intercept: float
    objective: float
    status: str
    message: str
    iterations: int
    extras: dict[str, Any] = field(default_factory=dict)


class _StopRequested(Exception):
    """Raised from a CG callback when the monitor asks to stop."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _Reporter:
    """Sends records to the monitor and remembers a stop request."""

    def __init__(self, monitor: Monitor, measure: str):
        self.monitor = monitor
        self.measure = measure
        self.clock = Stopwatch()
        self.stop_reason: str | None = None

    def __call__(self, iteration: int, objective: float, optimality: float, **extras) -> bool:
        """Report; True when the monitor asks to stop."""
        extras["optimality_measure"] = self.measure
        self.monitor.report(IterationRecord(iteration, self.clock(), float(objective),
                                            float(optimality), extras))
        self.stop_reason = self.monitor.stop_reason()
        return self.stop_reason is not None


def _primal_objective(norm2: float, cost, margins, loss="least_squares") -> float:
    """1/2 norm2 + sum_i C_i loss(m_i): norm2 is ||w||^2 plus the solver's bias term."""
    slack = 1.0 - margins
    if loss == "squared_hinge":
        slack = np.maximum(slack, 0.0)
    return 0.5 * norm2 + float(cost @ np.square(slack))


# -- linear kernel: the primal problem by CGLS ---------------------------------------------------


def _eps_schedule(tol: float) -> list[float]:
    """0.1, 0.01, ... down to ``tol`` (the last round at exactly ``tol``)."""
    schedule = []
    eps = 0.1
    while eps > tol * (1.0 + 1e-12):
        schedule.append(eps)
        eps /= 10.0
    schedule.append(tol)
    return schedule


def run_linear(problem: BinaryProblem, params: _SystemParams,
               monitor: Monitor | None = None) -> Solution:
    """The linear-kernel problem of ``lssvm`` (free bias) or ``proximal_svm`` (regularized
    bias) in the primal, by CGLS warm-started across tolerance rounds (never forming X'X);
    the registry's ``run`` for linear binary problems.

    In CGLS's scaling the objective is divided by 2C: lambda = 1/(2C), row weights c_i.
    """
    if problem.loss != "least_squares":
        raise ValueError(f"{params.solver} solves the least_squares loss, not {problem.loss!r}")
    if problem.bias != params.bias:
        raise ValueError(f"{params.solver} solves the {params.bias!r} bias mode, not "
                         f"{problem.bias!r}")
    if params.kernel != "linear":
        raise ValueError("the primal solver handles the linear kernel only; other kernels "
                         "train through solvers.train")
    report = _Reporter(monitor or NullMonitor(), "relative_gradient_norm")
    X = problem.X
    weights = problem.cost / problem.C
    sqrt_c = np.sqrt(weights)
    rows = np.arange(problem.n_samples, dtype=np.int64)
    parallel = use_parallel(X.nnz, problem.n_features)
    beta = problem.zeros()
    grad0 = max(float(np.linalg.norm(problem.gradient(beta))), 1e-300)
    used = 0
    status, message = "max_iter", f"max_iter={params.max_iter} CGLS iterations reached"
    for round_number, eps in enumerate(_eps_schedule(params.tol), start=1):
        iterations, optimal = cgls(X, rows, sqrt_c, problem.y, beta,
                                   bias_scale=problem.effective_bias_scale,
                                   lam=1.0 / (2.0 * problem.C),
                                   reg_bias=problem.bias_regularization, eps=eps,
                                   max_iter=params.max_iter - used, parallel=parallel)
        used += iterations
        gradient_norm = float(np.linalg.norm(problem.gradient(beta)))
        if report(round_number, problem.objective(beta), gradient_norm / grad0,
                  cg_iterations=int(iterations), epsilon=float(eps)):
            status, message = "stopped", f"stopped: {report.stop_reason}"
            break
        if not optimal:
            break
        if eps == params.tol:
            status, message = "converged", (
                f"converged: CGLS rule (13) met at eps={eps:g} after {used} iterations")
    return Solution(beta, problem.objective(beta), status, message, used,
                    {"cg_iterations": used, "method": "cgls"})


# -- conjugate gradients with a kernel operator -------------------------------------------------


class _TrackedOperator:
    """v -> project(M v) for :func:`conjugate_gradient`, keeping M x for the current iterate
    without extra products: CG moves x along the vector it multiplied last,
    x_k = x_{k-1} + alpha p, so M x_k = M x_{k-1} + alpha M p (the objective needs M x)."""

    def __init__(self, product, project, n: int):
        self.product = product
        self.project = project
        self.x = np.zeros(n)
        self.Mx = np.zeros(n)
        self.iterations = 0
        self._p = None
        self._Mp = None

    def __call__(self, p):
        self._p = p
        self._Mp = self.product(p)
        return self.project(self._Mp)

    def advance(self, x) -> None:
        pp = float(self._p @ self._p)
        if pp > 0.0:
            self.Mx += (float((x - self.x) @ self._p) / pp) * self._Mp
        self.x = x.copy()
        self.iterations += 1


def _run_cg(operator: _TrackedOperator, rhs, params: _SystemParams, report: _Reporter,
            objective_of, precondition=None) -> tuple[np.ndarray, str, str]:
    """CG from 0 on the tracked operator, one record per iteration with the objective
    ``objective_of(x, Mx)`` and the relative residual.  Returns (x, status, message)."""
    rhs_norm = max(float(np.linalg.norm(rhs)), 1e-300)

    def callback(k, x, residual_norm):
        operator.advance(x)
        if report(k, objective_of(operator.x, operator.Mx), residual_norm / rhs_norm):
            raise _StopRequested(report.stop_reason)

    try:
        result = conjugate_gradient(operator, rhs, precondition=precondition, rtol=params.tol,
                                    max_iter=params.max_iter, callback=callback)
    except _StopRequested as stop:
        return operator.x.copy(), "stopped", f"stopped: {stop.reason}"
    status = {0: "converged", 1: "max_iter", 2: "failed"}[result.status]
    return result.x, status, f"{result.message} after {result.iterations} CG iterations"


# -- lssvm --------------------------------------------------------------------------------------


def _factorize(build):
    """Factorize the symmetric matrix ``build()`` in place: Cholesky, or LU (on a rebuilt
    copy) when it is not positive definite -- an indefinite kernel such as the polynomial one
    with coef0 < 0 can still give a nonsingular system."""
    M = build()
    if not np.all(np.isfinite(M)):
        raise ValueError("the kernel system holds non-finite values (kernel overflow?)")
    try:
        return "cholesky", scipy.linalg.cho_factor(M, lower=True, overwrite_a=True,
                                                   check_finite=False)
    except np.linalg.LinAlgError:
        return "lu", scipy.linalg.lu_factor(build(), overwrite_a=True, check_finite=False)


def _solve_factored(factorization, factor, rhs):
    if factorization == "cholesky":
        return scipy.linalg.cho_solve(factor, rhs, check_finite=False)
    return scipy.linalg.lu_solve(factor, rhs, check_finite=False)


class _LSSVMDirect:
    """(K + Lambda) factorized once for every binary problem on the same rows; Suykens et al.'s
    two systems (K + Lambda)[u, v] = [y, e], b = e'u / e'v, beta = u - b v solve (7)."""

    def __init__(self, X, kernel: Kernel, cost):
        self.K = kernel_matrix(X, X, kernel)
        self.lam_diag = 1.0 / (2.0 * cost)
        self.factorization, self.factor = _factorize(self._matrix)
        self.v = _solve_factored(self.factorization, self.factor, np.ones(X.shape[0]))

    def _matrix(self):
        M = self.K.copy()
        M[np.diag_indices_from(M)] += self.lam_diag
        return M

    def solve(self, y, cost, params, monitor: Monitor) -> KernelSolution:
        report = _Reporter(monitor, "relative_residual")
        u = _solve_factored(self.factorization, self.factor, y)
        b = float(u.sum() / self.v.sum())
        beta = u - b * self.v
        Kbeta = self.K @ beta
        residual = np.append(Kbeta + self.lam_diag * beta + b - y, beta.sum())
        relative = float(np.linalg.norm(residual) / np.linalg.norm(y))
        objective = _primal_objective(float(beta @ Kbeta), cost, y * (Kbeta + b))
        status, message = "converged", f"solved (7) by {self.factorization} factorization"
        if report(1, objective, relative):
            status, message = "stopped", f"stopped: {report.stop_reason}"
        return KernelSolution(beta, b, objective, status, message, 1,
                              {"method": "direct", "factorization": self.factorization,
                               "relative_residual": relative})


class _LSSVMIterative:
    """Projected CG on P (K + Lambda) P beta = P y, P = I - ee'/n, through the row cache."""

    def __init__(self, X, kernel: Kernel, cost, cache_mb: float):
        self.cache = KernelCache(X, kernel, cache_mb)
        self.lam_diag = 1.0 / (2.0 * cost)
        self.jacobi = self.cache.diagonal + self.lam_diag

    def _product(self, v):
        return self.cache.matvec(v) + self.lam_diag * v

    def _objective(self, y, cost, beta, Mbeta) -> tuple[float, float]:
        """(objective, b) at beta with b = mean(y - (K + Lambda) beta), exact at the solution
        of (K + Lambda) beta + b e = y."""
        b = float(np.mean(y - Mbeta))
        Kbeta = Mbeta - self.lam_diag * beta
        return _primal_objective(float(beta @ Kbeta), cost, y * (Kbeta + b)), b

    def solve(self, y, cost, params: _SystemParams, monitor: Monitor) -> KernelSolution:
        report = _Reporter(monitor, "relative_residual")

        def project(v):
            return v - v.mean()

        jacobi = self.jacobi
        operator = _TrackedOperator(self._product, project, y.shape[0])
        beta, status, message = _run_cg(
            operator, project(y), params, report,
            lambda x, Mx: self._objective(y, cost, x, Mx)[0],
            precondition=lambda r: project(r / jacobi))
        Mbeta = self._product(beta)
        objective, b = self._objective(y, cost, beta, Mbeta)
        relative = float(np.linalg.norm(np.append(Mbeta + b - y, beta.sum()))
                         / np.linalg.norm(y))
        extras = {"method": "iterative", "cg_iterations": operator.iterations,
                  "relative_residual": relative, **self.cache.stats()}
        return KernelSolution(beta, b, objective, status, message, operator.iterations, extras)


# -- proximal_svm -------------------------------------------------------------------------------


def _proximal_objective(z, Gz, s2, cost, y) -> float:
    """(9) at z: 1/2 (||u||^2 + b~^2) + C sum (1 - m)^2 with ||u||^2 = z'Gz, b~ = s e'z and
    f = G z + s^2 e'z."""
    total = float(z.sum())
    return _primal_objective(float(z @ Gz) + s2 * total * total, cost,
                                    y * (Gz + s2 * total))


class _ProximalDirect:
    """(12) as (G + s^2 ee' + Lambda) z = y, factorized once for every binary problem."""

    def __init__(self, X, kernel: Kernel, cost, bias_scale: float):
        self.K = kernel_matrix(X, X, kernel)
        self.linear = kernel.name == "linear"
        self.s2 = bias_scale * bias_scale
        self.lam_diag = 1.0 / (2.0 * cost)
        self.factorization, self.factor = _factorize(self._matrix)

    def _matrix(self):
        M = self.K.copy() if self.linear else self.K @ self.K
        M += self.s2
        M[np.diag_indices_from(M)] += self.lam_diag
        return M

    def _G(self, z):
        return self.K @ z if self.linear else self.K @ (self.K @ z)

    def solve(self, y, cost, params, monitor: Monitor) -> KernelSolution:
        report = _Reporter(monitor, "relative_residual")
        z = _solve_factored(self.factorization, self.factor, y)
        Gz = self._G(z)
        residual = Gz + self.s2 * z.sum() + self.lam_diag * z - y
        relative = float(np.linalg.norm(residual) / np.linalg.norm(y))
        objective = _proximal_objective(z, Gz, self.s2, cost, y)
        coef = z if self.linear else self.K @ z
        status, message = "converged", f"solved (12) by {self.factorization} factorization"
        if report(1, objective, relative):
            status, message = "stopped", f"stopped: {report.stop_reason}"
        return KernelSolution(coef, self.s2 * float(z.sum()), objective, status, message, 1,
                              {"method": "direct", "factorization": self.factorization,
                               "relative_residual": relative})


class _ProximalIterative:
    """CG on (K K + s^2 ee' + Lambda) z = y, two products with K per iteration."""

    def __init__(self, X, kernel: Kernel, cost, bias_scale: float, cache_mb: float):
        self.cache = KernelCache(X, kernel, cache_mb)
        self.s2 = bias_scale * bias_scale
        self.lam_diag = 1.0 / (2.0 * cost)

    def _product(self, z):
        return self.cache.matvec(self.cache.matvec(z)) + self.s2 * z.sum() + self.lam_diag * z

    def _Gz(self, z, Mz):
        return Mz - self.s2 * z.sum() - self.lam_diag * z

    def solve(self, y, cost, params: _SystemParams, monitor: Monitor) -> KernelSolution:
        report = _Reporter(monitor, "relative_residual")
        operator = _TrackedOperator(self._product, lambda v: v, y.shape[0])
        z, status, message = _run_cg(
            operator, y, params, report,
            lambda x, Mx: _proximal_objective(x, self._Gz(x, Mx), self.s2, cost, y))
        Mz = self._product(z)
        objective = _proximal_objective(z, self._Gz(z, Mz), self.s2, cost, y)
        relative = float(np.linalg.norm(Mz - y) / np.linalg.norm(y))
        coef = self.cache.matvec(z)
        extras = {"method": "iterative", "cg_iterations": operator.iterations,
                  "relative_residual": relative, **self.cache.stats()}
        return KernelSolution(coef, self.s2 * float(z.sum()), objective, status, message,
                              operator.iterations, extras)


# -- relaxed_lssvm: 2SMO and SesquiSMO -----------------------------------------------------------


@njit(cache=True, inline="always")
def _violation(g, lam, nonneg):
    """KKT violation of one multiplier: |g| for (18); for (34)-(35), max(0, -g) at 0."""
    if nonneg and lam <= 0.0:
        return -g if g < 0.0 else 0.0
    return abs(g)


@njit(cache=True)
def max_violation(g, lam, nonneg):
    """(index, value) of the largest KKT violation."""
    best = 0
    worst = -1.0
    for j in range(g.shape[0]):
        v = _violation(g[j], lam[j], nonneg)
        if v > worst:
            worst = v
            best = j
    return best, worst


@njit(cache=True)
def smo_updates(rows, columns, kernel, store, y, inv_cj, inv_a, q_diag, nonneg, lam, g, tol,
                budget):
    """At most ``budget`` updates of the most violating multiplier (2SMO / SesquiSMO).

    g = Q lambda - e is kept up to date: after lambda_k moves by delta,
    g_j += y_j y_k (K_jk + 1/A) delta (+ delta / C_J,k for j = k), with row k from the cache;
    the same pass finds the next multiplier.  Returns (updates, largest violation).
    """
    slots = store[0]
    n = lam.shape[0]
    k, worst = max_violation(g, lam, nonneg)
    updates = 0
    while updates < budget and worst > tol:
        new = lam[k] - g[k] / q_diag[k]  # (31), exact minimization of (20) along lambda_k
        if nonneg and new < 0.0:
            new = 0.0  # SesquiSMO: lambda_k >= 0
        delta = new - lam[k]
        lam[k] = new
        g[k] += delta * inv_cj[k]
        row = slots[cache_row(rows, columns, kernel, store, k)]
        step = y[k] * delta
        worst = -1.0
        for j in range(n):
            gj = g[j] + y[j] * step * (row[j] + inv_a)
            g[j] = gj
            v = _violation(gj, lam[j], nonneg)
            if v > worst:
                worst = v
                k = j
        updates += 1
    return updates, worst


@dataclass
class _SMOState:
    """Multipliers, the gradient g = Q lambda - e of (20) and the work done so far."""

    lam: np.ndarray
    g: np.ndarray
    epochs: int = 0
    updates: int = 0
    worst: float = np.inf


@njit(cache=True)
def exact_gradient(rows, columns, kernel, store, y, inv_cj, inv_a, lam, g):
    """g = Q lambda - e from scratch: y_i ((K (y lambda))_i + y'lambda / A) + lambda_i / C_J,i
    - 1, where K (y lambda) sums the kernel rows of the nonzero multipliers only (K is
    symmetric), fetched through the cache."""
    slots = store[0]
    n = lam.shape[0]
    acc = np.zeros(n)
    balance = 0.0
    for j in range(n):
        if lam[j] != 0.0:
            coef = y[j] * lam[j]
            balance += coef
            row = slots[cache_row(rows, columns, kernel, store, j)]
            for i in range(n):
                acc[i] += coef * row[i]
    for i in range(n):
        g[i] = y[i] * (acc[i] + inv_a * balance) + inv_cj[i] * lam[i] - 1.0


class _RelaxedSMO:
    """2SMO / SesquiSMO (and the SUMT loop) on the rows of X, one cache for every class."""

    def __init__(self, X, kernel: Kernel, cost, cache_mb: float):
        self.cache = KernelCache(X, kernel, cache_mb)

    @staticmethod
    def _summary(state: _SMOState, y, cost, inv_cj, loss, A) -> tuple[float, dict]:
        """Primal objective of (13) (or (32)) and the extras of a record.  With
        m_i = y_i f(x_i) = g_i + 1 - lambda_i / C_J,i, ||w||^2 + A b^2 = sum lambda_i m_i
        (from (15), (16), (19)); the dual (20) is 1/2 (e'lambda - lambda'g)."""
        lam, g = state.lam, state.g
        m = g + 1.0 - lam * inv_cj
        primal = _primal_objective(float(lam @ m), cost, m, loss)
        dual = 0.5 * (float(lam.sum()) - float(lam @ g))
        return primal, {"dual_objective": dual, "duality_gap": primal - dual,
                        "updates": state.updates, "n_support": int(np.count_nonzero(lam)),
                        "A": A, "lambda_y": float(lam @ y)}

    def _converge(self, state: _SMOState, y, cost, inv_cj, A, params: RelaxedLSSVMParams,
                  report: _Reporter, sumt_round: int | None) -> tuple[str, str] | None:
        """Epochs of n updates on the relaxed problem at this A until the KKT conditions hold
        on a freshly computed gradient; None when they do, else (status, message)."""
        cache = self.cache
        nonneg = params.variant == "sesquismo"
        inv_a = 1.0 / A
        q_diag = cache.diagonal + inv_a + inv_cj  # the cached Q_kk
        while True:
            if state.epochs >= params.max_iter:
                return "max_iter", (f"max_iter={params.max_iter} epochs reached with KKT "
                                    f"violation {state.worst:.3g} (A={A:g})")
            done, state.worst = smo_updates(cache.rows, cache.columns, cache.kernel_params,
                                            cache.store, y, inv_cj, inv_a, q_diag, nonneg,
                                            state.lam, state.g, params.tol, y.shape[0])
            state.updates += done
            state.epochs += 1
            if state.worst <= params.tol:
                exact_gradient(cache.rows, cache.columns, cache.kernel_params, cache.store, y,
                               inv_cj, inv_a, state.lam, state.g)
                state.worst = max_violation(state.g, state.lam, nonneg)[1]
            primal, extras = self._summary(state, y, cost, inv_cj, params.loss, A)
            if sumt_round is not None:
                extras["sumt_round"] = sumt_round
            if report(state.epochs, primal, state.worst, **extras):
                return "stopped", f"stopped: {report.stop_reason}"
            if state.worst <= params.tol:
                return None

    def solve(self, y, cost, params: RelaxedLSSVMParams, monitor: Monitor) -> KernelSolution:
        n = y.shape[0]
        inv_cj = 1.0 / (2.0 * cost)
        state = _SMOState(np.zeros(n), -np.ones(n))
        if params.variant == "2smo" and self.cache.capacity == n:
            self.cache.fill()
        report = _Reporter(monitor, "kkt_violation")
        A = params.A
        rounds: list[dict] = []
        while True:
            outcome = self._converge(state, y, cost, inv_cj, A, params, report,
                                     len(rounds) + 1 if params.sumt else None)
            if outcome is not None:
                status, message = outcome
                break
            balance = float(state.lam @ y)
            scale = float(np.abs(state.lam).sum())
            rounds.append({"round": len(rounds) + 1, "A": A, "lambda_y": balance,
                           "relative_lambda_y": abs(balance) / max(scale, 1e-300),
                           "epochs": state.epochs, "updates": state.updates})
            if not params.sumt:
                status, message = "converged", (
                    f"converged: largest KKT violation {state.worst:.3g} <= "
                    f"tol={params.tol:g} after {state.updates} updates")
                break
            if abs(balance) <= params.sumt_tol * scale:
                status, message = "converged", (
                    f"SUMT converged: |lambda'y| = {abs(balance):.3g} <= sumt_tol * "
                    f"sum|lambda| after {len(rounds)} rounds (A={A:g})")
                break
            if len(rounds) >= params.sumt_max_rounds:
                status, message = "max_iter", (
                    f"SUMT stopped after {len(rounds)} rounds with |lambda'y| = "
                    f"{abs(balance):.3g} (A={A:g})")
                break
            # (42): the next problem's Q differs by (1/A_new - 1/A) y y'; warm start
            A_new = params.sumt_factor * A
            state.g += (1.0 / A_new - 1.0 / A) * y * balance
            A = A_new
        primal, extras = self._summary(state, y, cost, inv_cj, params.loss, A)
        extras.update({"kkt_violation": float(state.worst), "epochs": state.epochs,
                       **self.cache.stats()})
        if params.sumt:
            extras["sumt"] = rounds
        return KernelSolution(y * state.lam, float(state.lam @ y) / A, primal, status, message,
                              state.epochs, extras)


# -- training: kernel paths and the model ----------------------------------------------------


def _kernel_costs(dataset, C: float) -> np.ndarray:
    weights = dataset.sample_weight
    if weights is None:
        return np.full(dataset.n_samples, float(C))
    if np.any(weights <= 0):
        raise ValueError("the kernel LS-SVM solvers need positive sample weights (a zero weight "
                         "makes 1/C_i infinite); drop those examples first")
    return float(C) * weights


def _resolve_method(params, n: int) -> str:
    if params.method != "auto":
        return params.method
    if params.kernel == "linear":
        return "iterative"
    limit = config.LSSVM_DIRECT_MAX_ROWS if params.solver == "lssvm" else \
        config.PROXIMAL_DIRECT_MAX_ROWS
    return "direct" if n <= limit else "iterative"


def _build_system(params, X, kernel: Kernel, cost):
    if params.solver == "relaxed_lssvm":
        return _RelaxedSMO(X, kernel, cost, params.cache_mb)
    method = _resolve_method(params, X.shape[0])
    if params.solver == "lssvm":
        if method == "direct":
            return _LSSVMDirect(X, kernel, cost)
        return _LSSVMIterative(X, kernel, cost, params.cache_mb)
    if method == "direct":
        return _ProximalDirect(X, kernel, cost, params.bias_scale)
    return _ProximalIterative(X, kernel, cost, params.bias_scale, params.cache_mb)


def fit_kernel(dataset, spec: SolverSpec, params: KernelSolverParams, monitor: Monitor) -> Fit:
    """Classification with the solver's kernel problem, one-vs-rest for more classes.

    The kernel matrix, its factorization or its row cache is built once and shared by the
    binary problems.  A KernelModel keeps the rows with a nonzero coefficient in some class;
    with the linear kernel the weights w = sum_j coef_j x_j make a LinearModel instead.
    """
    if params.solver != "relaxed_lssvm" and params.kernel == "linear" and \
            _resolve_method(params, dataset.n_samples) == "iterative":
        return fit_linear_one_vs_rest(dataset, spec, params, monitor)
    X = dataset.X
    kernel = params.kernel_function()
    cost = _kernel_costs(dataset, params.C)
    system = _build_system(params, X, kernel, cost)

    def solve_one(y, sub_monitor):
        solution = system.solve(y, cost, params, sub_monitor)
        return solution, (solution.coef, solution.intercept)

    results = run_binary_subproblems(dataset, spec, params, monitor, solve_one)
    classes = dataset.classes
    n_rows = 1 if classes.shape[0] == 2 else classes.shape[0]
    coef = np.zeros((n_rows, dataset.n_samples))
    intercept = np.zeros(n_rows)
    for k, (_, (c, b)) in enumerate(results):
        coef[k], intercept[k] = c, b
    if kernel.name == "linear":
        weights = np.vstack([csr_rmatvec(X, row) for row in coef])
        model = LinearModel(weights, intercept, classes)
    else:
        keep = np.flatnonzero(np.any(coef != 0.0, axis=0))
        model = KernelModel(X[keep], coef[:, keep], intercept, classes, kernel)
    return Fit(model, [summary for summary, _ in results])


_SUYKENS = ("J. A. K. Suykens and J. Vandewalle, Least squares support vector machine "
            "classifiers, Neural Processing Letters 9 (1999) 293-300")

register(SolverSpec(
    name="lssvm",
    params_model=LSSVMParams,
    run=run_linear,
    description="Classical LS-SVM (free bias): CGLS on the primal for the linear kernel; a "
                "direct or projected-CG solve of the kernel system (7) otherwise.",
    reference=_SUYKENS + "; S. Joshi et al., Fast algorithms for least squares SVMs, eq. (7).",
    fit_handlers={"classification": fit_kernel},
))

register(SolverSpec(
    name="proximal_svm",
    params_model=ProximalSVMParams,
    run=run_linear,
    description="Proximal SVM (regularized bias): CGLS on the primal for the linear kernel; "
                "the kernel system (12) directly or by CG otherwise.",
    reference="G. Fung and O. L. Mangasarian, Proximal support vector machine classifiers, "
              "KDD 2001, 77-86; S. Joshi et al., Fast algorithms for least squares SVMs, "
              "eqs. (9)-(12).",
    fit_handlers={"classification": fit_kernel},
))

register(SolverSpec(
    name="relaxed_lssvm",
    params_model=RelaxedLSSVMParams,
    run=None,
    description="Relaxed LS-SVM (bias weighted by A) by 2SMO or SesquiSMO with a kernel-row "
                "cache; optional SUMT loop driving A to 0 (the classical LS-SVM).",
    reference="S. Joshi, Jayadeva, G. Ramakrishnan and S. Chandra, Fast algorithms for least "
              "squares SVMs, eqs. (13)-(35) and section VI.",
    fit_handlers={"classification": fit_kernel},
))
