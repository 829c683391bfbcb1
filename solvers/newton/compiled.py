"""newton's loop compiled whole, for small problems (issue 47).

On a set LIBLINEAR solves in 0.1 ms (heart: 270 rows, 13 features) the Python driver of
:mod:`solvers.newton.solver` spent about 200 us a Newton iteration at load 12-15, some 15
NumPy and Numba calls each of a few microseconds of dispatch for under a microsecond of
arithmetic.  :func:`newton_loop` is the same method -- the same iterates, CG, line search,
certificates and stops, step by step (``solver.solve``'s docstring and the package's) -- as
one Numba function over the problem layer's compiled evaluations
(:mod:`solvers.problems.binary_kernels`: the core's serial products, the loss layer's
formulas and conjugate sums), so a small problem pays the dispatch once.

It differs from the Python driver only in the order of a few sums (NumPy's pairwise sums and
BLAS dot products against Numba's loops): the objectives agree to round-off, not bit for bit
(``tests/test_newton_compiled.py``: 1e-12 relative, the same iteration counts and statuses).

Its records: the loop fills one row per Newton iterate (what the Python driver reports) and
the driver hands them to the monitor after the loop, each as it would have been reported (the
same iteration numbers, objectives, gaps and extras; timed when handed over).  A monitor that
asks to stop at a record gets the point of that record, the loop run again to that iteration
(it is deterministic), with status ``stopped``: what the Python driver returns when asked
there.  The free bias (its balancing shift sorts) and the losses without a compiled conjugate
(lp) keep the Python driver; so do problems from the parallel kernels' size on
(:func:`compiled_applies`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers import config
from solvers.core.linalg import dot
from solvers.problems import BinaryProblem
from solvers.problems import binary_kernels as bk

#: The record's columns (one row per reported iterate).
ITERATION, OBJECTIVE, GAP, DUAL, GRADIENT_NORM, CG_ITERATIONS, STEP_SIZE, TRIALS = range(8)
#: Status codes of the loop
RUNNING, CONVERGED_GAP, CONVERGED_GRADIENT, MAX_ITER, LINE_SEARCH_FAILED = range(5)


@njit(cache=True, nogil=True)
def _pcg(indptr, indices, data, s, r, no_bias, weights, g, M, quadratic_tol, max_cg, x,
         res, z, p, Ap):
    """PCG from 0 on H x = -g with M^-1 (``conjugate_gradient`` with ``rtol=0`` and
    ``quadratic_tol``: Nash & Sofer's rule), the step in ``x``; returns the iterations."""
    n = g.shape[0]
    for j in range(n):
        x[j] = 0.0
        res[j] = -g[j]
    residual_norm = math.sqrt(dot(res, res))
    if residual_norm <= 0.0:
        return 0
    for j in range(n):
        z[j] = res[j] / M[j]
        p[j] = z[j]
    rz = dot(res, z)
    q = 0.0
    for k in range(1, max_cg + 1):
        bk.hessian_product(indptr, indices, data, s, r, no_bias, weights, p, Ap)
        curvature = dot(p, Ap)
        if curvature <= 0.0:
            return k - 1
        alpha = rz / curvature
        for j in range(n):
            x[j] += alpha * p[j]
            res[j] -= alpha * Ap[j]
        residual_norm = math.sqrt(dot(res, res))
        if residual_norm <= 0.0:
            return k
        decrease = -0.5 * alpha * rz
        q += decrease
        if decrease > 0.0 or k * decrease >= quadratic_tol * q:
            return k
        for j in range(n):
            z[j] = res[j] / M[j]
        rz_new = dot(res, z)
        ratio = rz_new / rz
        for j in range(n):
            p[j] = z[j] + ratio * p[j]
        rz = rz_new
    return max_cg


@njit(cache=True, nogil=True)
def _write_record(row, iteration, objective, gap, dual, g_norm, cg_iterations, step_size,
                  trials):
    """One row of the loop's records (the columns the Python driver's record carries)."""
    row[ITERATION] = iteration
    row[OBJECTIVE] = objective
    row[GAP] = gap
    row[DUAL] = dual
    row[GRADIENT_NORM] = g_norm
    row[CG_ITERATIONS] = cg_iterations
    row[STEP_SIZE] = step_size
    row[TRIALS] = trials


@njit(cache=True, nogil=True)
def newton_loop(indptr, indices, data, squared, y, cost, code, p, s, r, no_bias, beta,
                gap_rule, tol, gradient_bound, max_iter, cg_tol, preconditioning, max_cg,
                armijo_eta, max_line_search, records):
    """The truncated Newton method of :func:`solvers.newton.solver.solve` from ``beta``
    (updated in place to the returned point), stopped as it stops: the certified gap
    (``gap_rule``) or LIBLINEAR's gradient rule (``gradient_bound``), ``max_iter``, or a
    failed line search.  ``records``: at least max_iter + 1 rows of the columns above.
    Returns (status, Newton iterations, records written, CG iterations, P, D, gap)."""
    n = y.shape[0]
    d1 = beta.shape[0]
    outs = np.empty(n)
    xi = np.empty(n)
    alpha = np.empty(n)
    scratch = np.empty(n)
    image = np.empty(d1)
    gradient = np.empty(d1)
    weights = np.empty(n)
    M = np.empty(d1)
    step = np.empty(d1)
    res = np.empty(d1)
    z = np.empty(d1)
    pv = np.empty(d1)
    Ap = np.empty(d1)
    direction = np.empty(n)
    trial_beta = np.empty(d1)
    trial_outs = np.empty(n)
    trial_xi = np.empty(n)

    bk.outputs(indptr, indices, data, s, beta, outs)
    objective = bk.objective_at(y, cost, code, p, r, beta, outs, xi)
    bk.first_order(indptr, indices, data, y, cost, code, p, s, r, no_bias, beta, xi, alpha,
                   image, gradient, scratch)
    dual = bk.dual_objective(code, p, r, alpha, image, cost)
    gap = (objective - dual) / max(abs(objective), 1e-300)
    iteration = 0
    cg_total = 0
    written = 0
    last_cg = -1.0
    last_step = 0.0
    last_trials = 0.0
    status = RUNNING
    while True:
        g_norm = math.sqrt(dot(gradient, gradient))
        if gap_rule and gap <= tol:
            status = CONVERGED_GAP
        elif not gap_rule and g_norm <= gradient_bound:
            status = CONVERGED_GRADIENT
        elif iteration >= max_iter:
            status = MAX_ITER
        if iteration > 0 or status != RUNNING:
            _write_record(records[written], iteration, objective, gap, dual, g_norm, last_cg,
                          last_step, last_trials)
            written += 1
        if status != RUNNING:
            break
        # the Newton step (solver._newton_step)
        bk.curvatures(xi, cost, code, p, weights)
        if preconditioning > 0.0:
            bk.hessian_diagonal(indptr, indices, squared, s, r, no_bias, weights, M)
            for j in range(d1):
                M[j] = (1.0 - preconditioning) + preconditioning * M[j]
        else:
            for j in range(d1):
                M[j] = 1.0
        g_norm_m = 0.0
        for j in range(d1):
            g_norm_m += gradient[j] * (gradient[j] / M[j])
        g_norm_m = math.sqrt(max(g_norm_m, 0.0))
        cg_iterations = _pcg(indptr, indices, data, s, r, no_bias, weights, gradient, M,
                             min(cg_tol, math.sqrt(g_norm_m)), max_cg, step, res, z, pv, Ap)
        if no_bias:
            step[d1 - 1] = 0.0
        cg_total += cg_iterations
        iteration += 1
        # the backtracking line search (solver._line_search)
        bk.outputs(indptr, indices, data, s, step, direction)
        slope = dot(gradient, step)
        a = 1.0
        accepted = False
        trials = 0
        value = 0.0
        for trial in range(1, max_line_search + 1):
            trials = trial
            for j in range(d1):
                trial_beta[j] = beta[j] + a * step[j]
            for i in range(n):
                trial_outs[i] = outs[i] + a * direction[i]
            value = bk.objective_at(y, cost, code, p, r, trial_beta, trial_outs, trial_xi)
            if value - objective <= armijo_eta * a * slope:
                accepted = True
                break
            a *= 0.5
        if not accepted:
            status = LINE_SEARCH_FAILED
            # the Python driver's record of a failed line search has no trials: -1
            _write_record(records[written], iteration, objective, gap, dual, g_norm,
                          cg_iterations, 0.0, -1.0)
            written += 1
            break
        beta[:] = trial_beta
        outs[:] = trial_outs
        xi[:] = trial_xi
        objective = value
        bk.first_order(indptr, indices, data, y, cost, code, p, s, r, no_bias, beta, xi,
                       alpha, image, gradient, scratch)
        dual = bk.dual_objective(code, p, r, alpha, image, cost)
        gap = (objective - dual) / max(abs(objective), 1e-300)
        last_cg = cg_iterations
        last_step = a
        last_trials = trials
    return status, iteration, written, cg_total, objective, dual, gap


#: Rows of the records' table the compiled loop allocates at most (max_iter + 1); a run that
#: may need more (a ``max_iter`` above it) keeps the Python driver.
MAX_RECORDS = 100_000


def compiled_applies(problem: BinaryProblem, max_iter: int) -> bool:
    """Whether newton runs :func:`newton_loop` on ``problem``: a loss with a compiled
    conjugate (``losses.kernels.conjugate_sum``: not lp), a bias that is not free, and a
    problem whose products the Python driver would run serially anyway (stored entries under
    ``config.PARALLEL_MIN_NNZ``: the same arithmetic, less dispatch), ``max_iter`` within
    :data:`MAX_RECORDS`."""
    return (problem.loss_function.code is not None and not problem.loss_function.has_exponent
            and problem.bias != "free" and problem.X.nnz < config.NEWTON_COMPILED_MAX_NNZ
            and max_iter < MAX_RECORDS)


