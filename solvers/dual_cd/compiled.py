"""dual_cd's support vector regression driver compiled whole, for small problems (issue 47).

Between its Numba sweeps the Python driver (``regression.solve_regression`` over
``solver.descend_with_gap_checks``) certifies the gap, keeps the best point, writes a record
and decides the next budget: on housing (506 rows) a check cost tens of microseconds of
Python and NumPy dispatch for a pass of some 7,000 stored entries, and ``auto`` runs dual_cd
with a check every ``gap_check_work`` passes' worth of descent (the work clock), so checks,
not descent, were most of its 2.4 ms at C = 1.  :func:`svr_loop` is the same loop in one
Numba function: the same sweeps (:func:`solvers.dual_cd.kernels.svr_epochs`), the same
certificate (the problem layer's compiled evaluations, ``solvers.problems.
regression_kernels``), the same best point, verdicts and eps continuation, on the work clock
(a check every ``gap_check_work`` passes' worth of descent: what ``auto`` runs; with the time
clock a compiled check costs about a pass, so the time clock's spacing is the work clock's).

What stays in Python: the records, handed to the monitor after the loop as the Python driver
reports them (a stop asked at a record returns that check's point: the loop run again to
it), the Newton switch of the L2 loss (mfn's method, at ``newton_switch_iter``), and the L1
loss's face Newton steps: the loop returns the state at the sweep that reaches
``newton_switch_iter`` and the Python driver goes on from there, the same steps in the same
order.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers import config
from solvers.dual_cd.kernels import svr_epochs
from solvers.problems import regression_kernels as rk

#: The record's columns (one row per gap check).
EPOCHS, PRIMAL, GAP, DUAL, RELATIVE, ACTIVE, EPS, WORK = range(8)
#: How the loop ended: a verdict (converged, max_iter), the epoch limit (the Newton switch's),
#: the checks asked for (a stop replayed), or a sweep that reached the face Newton steps
RUNNING, CONVERGED, MAX_ITER, LIMIT, CHECKS_DONE, FACE_NEWTON = range(6)


@njit(cache=True, nogil=True)
def svr_loop(indptr, indices, data, y, cost, code, p, s, r, epsilon, qd, lam, upper, b, beta,
             index, istate, fstate, rng, shrinking, eps, gap_rule, tol, max_iter, limit,
             face_at, pass_work, gap_check_work, max_checks, records, best_beta):
    """``descend_with_gap_checks`` over ``svr_epochs`` and the regression certificate, the
    work clock's budgets.  ``b``, ``beta``, the sweeps' state and ``best_beta`` (the lowest-P
    point of the checks) are updated in place.  Returns (status, epochs, checks, last eps,
    entries touched, best P, and the pending sweep's (epochs, met, relative Gnorm1, work)
    when it stopped for the face Newton steps (``face_at`` > 0: at the sweep whose epochs
    reach it, before its check))."""
    n = y.shape[0]
    scratch = np.empty(n)
    budget = float(pass_work)
    epochs = 0
    total_work = 0
    checks = 0
    best_primal = np.inf
    status = RUNNING
    while True:
        ran, met, relative, work = svr_epochs(
            indptr, indices, data, y, s, qd, lam, upper, epsilon, b, beta, index, istate,
            fstate, rng, limit - epochs, eps, budget if gap_rule else np.inf, shrinking)
        if face_at > 0 and epochs + ran >= face_at:
            return (FACE_NEWTON, epochs, checks, eps, total_work, best_primal, ran, met,
                    relative, work)
        epochs += ran
        total_work += work
        primal = rk.objective(indptr, indices, data, y, cost, code, p, s, r, epsilon, beta)
        if primal < best_primal:
            best_primal = primal
            best_beta[:] = beta
        primal = best_primal
        dual = rk.dual_objective(y, b, beta, cost, code, p, r, epsilon, scratch)
        gap = (primal - dual) / max(abs(primal), 1e-300)
        checks += 1
        budget = max(gap_check_work * pass_work, 1.0)
        if gap_rule and gap <= tol:
            status = CONVERGED
        elif not gap_rule and met:
            status = CONVERGED
        elif epochs >= max_iter:
            status = MAX_ITER
        row = records[checks - 1]
        row[EPOCHS] = epochs
        row[PRIMAL] = primal
        row[GAP] = gap
        row[DUAL] = dual
        row[RELATIVE] = relative
        row[ACTIVE] = istate[0]
        row[EPS] = eps
        row[WORK] = work
        if status != RUNNING:
            break
        if checks >= max_checks:
            status = CHECKS_DONE
            break
        if epochs >= limit:
            status = LIMIT
            break
        if met:
            eps = eps / 10.0
    return status, epochs, checks, eps, total_work, best_primal, 0, 0, 0.0, 0


def compiled_applies(nnz: int, max_iter: int, gap_check_work: float) -> bool:
    """Whether dual_cd's regression runs :func:`svr_loop`: a problem with fewer stored
    entries than ``config.DUAL_CD_COMPILED_MAX_NNZ`` (where the checks' Python, not the
    sweeps, was the run's cost) and a records table within :data:`MAX_RECORDS` rows."""
    return nnz < config.DUAL_CD_COMPILED_MAX_NNZ and max_records(max_iter, gap_check_work) \
        <= MAX_RECORDS


#: Rows of the records' table the loop allocates at most.
MAX_RECORDS = 200_000


def max_records(max_iter: int, gap_check_work: float) -> int:
    """Rows a run may write: a check follows at least one outer iteration (every call of
    ``svr_epochs`` runs one before it looks at its budget), so at most ``max_iter`` checks,
    and one to spare."""
    return int(max_iter) + 2
