"""The kernel systems of ``lssvm`` and ``proximal_svm``: one dense factorization, or conjugate
gradients through the kernel-row cache, built once for every one-vs-rest class."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from solvers.base import Termination
from solvers.core.kernels import Kernel, KernelCache, kernel_matrix
from solvers.core.linalg import (
    TrackedOperator,
    monitored_conjugate_gradient,
    single_threaded_blas,
)
from solvers.lssvm.params import SystemParams
from solvers.monitor import Monitor, Reporter
from solvers.problems import KernelProblem, KernelSolution


class KernelWork:
    """What the systems build from the rows and the kernel alone, built on first use and kept
    for as long as the caller keeps this: the dense kernel matrix K, its square K K (the
    proximal SVM's G for a nonlinear kernel) and the kernel-row cache.  Only C changes along a
    C path (the diagonal Lambda), so cross-validation's path builds these once per fold and
    gamma instead of once per C, and starts each C's CG from the last C's solution."""

    def __init__(self, X, kernel: Kernel, cache_mb: float):
        self.X = X
        self.kernel = kernel
        self.cache_mb = cache_mb
        self._matrix = self._square = self._cache = None
        #: the iterative systems' last unknown per binary subproblem (in one-vs-rest order),
        #: which the next C's CG starts from
        self.starts: dict[int, np.ndarray] = {}

    @property
    def matrix(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = kernel_matrix(self.X, self.X, self.kernel)
        return self._matrix

    @property
    def square(self) -> np.ndarray:
        if self._square is None:
            self._square = self.matrix @ self.matrix
        return self._square

    @property
    def cache(self) -> KernelCache:
        if self._cache is None:
            self._cache = KernelCache(self.X, self.kernel, self.cache_mb)
        return self._cache


def _run_cg(operator: TrackedOperator, rhs, params: SystemParams, report: Reporter,
            objective_of, precondition=None, x0=None) -> tuple[np.ndarray, Termination, str]:
    """CG from 0 (or ``x0``) on the tracked operator, one record per iteration with the
    objective ``objective_of(x, Mx)`` and the relative residual.  Returns (x, status,
    message)."""
    result = monitored_conjugate_gradient(
        operator, rhs, rtol=params.cg_tol, max_iter=params.max_iter, precondition=precondition,
        on_iteration=lambda k, x, Mx, relative: report(k, objective_of(x, Mx), relative),
        x0=x0)
    if result.status == Termination.STOPPED:
        return result.x, result.status, report.stop_message
    return result.x, result.status, f"{result.message} after {result.iterations} CG iterations"


def _factorize(build):
    """Factorize the symmetric matrix ``build()`` in place: Cholesky, or LU (on a rebuilt
    copy) when it is not positive definite -- an indefinite kernel such as the polynomial one
    with coef0 < 0 can still give a nonsingular system.

    On one BLAS thread, as the solves below: OpenBLAS's threaded potrf of a 3,000 x 3,000
    matrix took 3.5-7.7 s against 0.42-0.60 s on one thread with the two cores shared (load
    6, 2026-12-08; the same pathology as Nystrom's eigendecomposition,
    :func:`solvers.core.lowrank._nystrom_map`); lssvm direct on svmguide1 (3,089 rows, RBF)
    0.52-0.53 s a run against 2.4-4.1 s with the threaded calls (second and third runs)."""
    M = build()
    if not np.all(np.isfinite(M)):
        raise ValueError("the kernel system holds non-finite values (kernel overflow?)")
    with single_threaded_blas():
        try:
            return "cholesky", scipy.linalg.cho_factor(M, lower=True, overwrite_a=True,
                                                       check_finite=False)
        except np.linalg.LinAlgError:
            return "lu", scipy.linalg.lu_factor(build(), overwrite_a=True, check_finite=False)


def _solve_factored(factorization, factor, rhs):
    with single_threaded_blas():
        if factorization == "cholesky":
            return scipy.linalg.cho_solve(factor, rhs, check_finite=False)
        return scipy.linalg.lu_solve(factor, rhs, check_finite=False)


class LSSVMDirect:
    """(K + Lambda) factorized once for every binary problem on the same rows; Suykens et al.'s
    two systems (K + Lambda)[u, v] = [y, e], b = e'u / e'v, beta = u - b v solve (7)."""

    def __init__(self, work: KernelWork, cost):
        self.K = work.matrix
        self.lam_diag = 1.0 / (2.0 * cost)
        self.factorization, self.factor = _factorize(self._matrix)
        self.v = _solve_factored(self.factorization, self.factor, np.ones(self.K.shape[0]))

    def _matrix(self):
        M = self.K.copy()
        M[np.diag_indices_from(M)] += self.lam_diag
        return M

    def solve(self, y, cost, params, monitor: Monitor, start=None) -> KernelSolution:
        """(7) by the factorization (``start`` is not needed)."""
        report = Reporter(monitor, "relative_residual")
        u = _solve_factored(self.factorization, self.factor, y)
        b = float(u.sum() / self.v.sum())
        beta = u - b * self.v
        Kbeta = self.K @ beta
        residual = np.append(Kbeta + self.lam_diag * beta + b - y, beta.sum())
        relative = float(np.linalg.norm(residual) / np.linalg.norm(y))
        objective = KernelProblem(y, cost).objective(float(beta @ Kbeta), Kbeta + b)
        status = Termination.CONVERGED
        message = f"solved (7) by {self.factorization} factorization"
        if report(1, objective, relative):
            status, message = Termination.STOPPED, report.stop_message
        return KernelSolution(beta, b, objective, status, message, 1,
                              {"method": "direct", "factorization": self.factorization,
                               "relative_residual": relative})


class LSSVMIterative:
    """Projected CG on P (K + Lambda) P beta = P y, P = I - ee'/n, through the row cache."""

    def __init__(self, work: KernelWork, cost):
        self.cache = work.cache
        self.lam_diag = 1.0 / (2.0 * cost)
        self.jacobi = self.cache.diagonal + self.lam_diag

    def _product(self, v):
        return self.cache.matvec(v) + self.lam_diag * v

    def _objective(self, problem: KernelProblem, beta, Mbeta) -> tuple[float, float]:
        """(objective, b) at beta with b = mean(y - (K + Lambda) beta), exact at the solution
        of (K + Lambda) beta + b e = y."""
        b = float(np.mean(problem.y - Mbeta))
        Kbeta = Mbeta - self.lam_diag * beta
        return problem.objective(float(beta @ Kbeta), Kbeta + b), b

    def solve(self, y, cost, params: SystemParams, monitor: Monitor,
              start=None) -> KernelSolution:
        """(7) by projected CG from 0, or from ``start`` (projected; a C path's last beta)."""
        report = Reporter(monitor, "relative_residual")

        def project(v):
            return v - v.mean()

        jacobi = self.jacobi
        problem = KernelProblem(y, cost)
        operator = TrackedOperator(self._product, project, y.shape[0])
        beta, status, message = _run_cg(
            operator, project(y), params, report,
            lambda x, Mx: self._objective(problem, x, Mx)[0],
            precondition=lambda r: project(r / jacobi),
            x0=None if start is None else project(start))
        Mbeta = self._product(beta)
        objective, b = self._objective(problem, beta, Mbeta)
        relative = float(np.linalg.norm(np.append(Mbeta + b - y, beta.sum()))
                         / np.linalg.norm(y))
        extras = {"method": "iterative", "cg_iterations": operator.iterations,
                  "relative_residual": relative, **self.cache.stats()}
        return KernelSolution(beta, b, objective, status, message, operator.iterations, extras,
                              beta)


# -- proximal_svm -------------------------------------------------------------------------------


def _proximal_objective(problem: KernelProblem, z, Gz, s2) -> float:
    """(9) at z: 1/2 (||u||^2 + b~^2) + C sum (1 - m)^2 with ||u||^2 = z'Gz, b~ = s e'z and
    f = G z + s^2 e'z."""
    total = float(z.sum())
    return problem.objective(float(z @ Gz) + s2 * total * total, Gz + s2 * total)


class ProximalDirect:
    """(12) as (G + s^2 ee' + Lambda) z = y, factorized once for every binary problem."""

    def __init__(self, work: KernelWork, cost, bias_scale: float):
        self.work = work
        self.K = work.matrix
        self.linear = work.kernel.name == "linear"
        self.s2 = bias_scale * bias_scale
        self.lam_diag = 1.0 / (2.0 * cost)
        self.factorization, self.factor = _factorize(self._matrix)

    def _matrix(self):
        M = (self.K if self.linear else self.work.square).copy()
        M += self.s2
        M[np.diag_indices_from(M)] += self.lam_diag
        return M

    def _G(self, z):
        return self.K @ z if self.linear else self.work.square @ z  # K K, formed for (12)

    def solve(self, y, cost, params, monitor: Monitor, start=None) -> KernelSolution:
        """(12) by the factorization (``start`` is not needed)."""
        report = Reporter(monitor, "relative_residual")
        z = _solve_factored(self.factorization, self.factor, y)
        Gz = self._G(z)
        residual = Gz + self.s2 * z.sum() + self.lam_diag * z - y
        relative = float(np.linalg.norm(residual) / np.linalg.norm(y))
        objective = _proximal_objective(KernelProblem(y, cost), z, Gz, self.s2)
        coef = z if self.linear else self.K @ z
        status = Termination.CONVERGED
        message = f"solved (12) by {self.factorization} factorization"
        if report(1, objective, relative):
            status, message = Termination.STOPPED, report.stop_message
        return KernelSolution(coef, self.s2 * float(z.sum()), objective, status, message, 1,
                              {"method": "direct", "factorization": self.factorization,
                               "relative_residual": relative})


class ProximalIterative:
    """CG on (K K + s^2 ee' + Lambda) z = y, two products with K per iteration."""

    def __init__(self, work: KernelWork, cost, bias_scale: float):
        self.cache = work.cache
        self.s2 = bias_scale * bias_scale
        self.lam_diag = 1.0 / (2.0 * cost)

    def _product(self, z):
        return self.cache.matvec(self.cache.matvec(z)) + self.s2 * z.sum() + self.lam_diag * z

    def _Gz(self, z, Mz):
        return Mz - self.s2 * z.sum() - self.lam_diag * z

    def solve(self, y, cost, params: SystemParams, monitor: Monitor,
              start=None) -> KernelSolution:
        """(12) by CG from 0, or from ``start`` (a C path's last z)."""
        report = Reporter(monitor, "relative_residual")
        problem = KernelProblem(y, cost)
        operator = TrackedOperator(self._product, lambda v: v, y.shape[0])
        z, status, message = _run_cg(
            operator, y, params, report,
            lambda x, Mx: _proximal_objective(problem, x, self._Gz(x, Mx), self.s2), x0=start)
        Mz = self._product(z)
        objective = _proximal_objective(problem, z, self._Gz(z, Mz), self.s2)
        relative = float(np.linalg.norm(Mz - y) / np.linalg.norm(y))
        coef = self.cache.matvec(z)
        extras = {"method": "iterative", "cg_iterations": operator.iterations,
                  "relative_residual": relative, **self.cache.stats()}
        return KernelSolution(coef, self.s2 * float(z.sum()), objective, status, message,
                              operator.iterations, extras, z)
