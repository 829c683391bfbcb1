"""The one pass over the examples of SVM-ALM: the multiplier step (9) of one iteration fused
with the e-step (10) of the next.

Per example, with o_i = x~_i . beta the outputs of the (w, b) just computed::

    lambda_i += mu_old (o_i - y_i + e_i)                       (9)   (when ``update``)
    u_i = prox_{(C_i / mu) L}(1 - y_i o_i - y_i lambda_i / mu)  (10)  in the slack u = y_i e_i
    e_i = y_i u_i,   z_i = y_i - e_i - lambda_i / mu           the targets of (14)

with mu = ``mu_new``.  The prox is the loss layer's (:func:`solvers.losses.kernels.prox_value`:
closed forms (12), (13) for p = 1, 2, a safeguarded Newton on (11) for 1 < p < 2).  Solving in
u = y_i e_i removes the y_i that eq. (11) as printed drops: d/de (y e)_+^p = p y (y e)_+^(p-1).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from solvers import config
from solvers.core.linalg import gram_cost, gram_update
from solvers.core.sparse import CompactRows, compact_row_axpy, compact_row_dot
from solvers.losses.kernels import by_loss, prox_value


@njit(cache=True, inline="always")
def _example(code, p, yi, o, previous, ei, li, ci, mu_old, inv_mu, relax, update):
    """One example of the pass, on scalars: o its new output, ``previous`` the output before
    the (w, b)-step, ei and li its e and lambda.  Returns (lambda, u, e, z, primal residual).

    With over-relaxation (``relax`` = alpha != 1) the step used e^ = alpha e + (1 - alpha)(y_i
    - previous) in place of e, so (9) adds mu (o - y_i + e^), and the next step's target is
    z_i = y_i - e^ - lambda_i / mu with e^ from the new e and o.  (Scalars in and out: the same
    body taking the nine arrays ran 15x slower; bench/history/measurements.json,
    alm-scalar-pass.)"""
    r = 0.0
    if update:
        r = o - yi + ei
        li += mu_old * (r + (1.0 - relax) * (yi - previous - ei))
    u = prox_value(code, p, 1.0 - yi * o - yi * li * inv_mu, ci * inv_mu)
    ei = yi * u
    return li, u, ei, yi - relax * ei - (1.0 - relax) * (yi - o) - li * inv_mu, r


@njit(cache=True, inline="always")
def _example_at(code, p, y, cost, outputs, previous, e, lam, z, mu_old, inv_mu, relax, update,
                i):
    """Example i of the pass over the arrays; returns its squared primal residual."""
    li, _, ei, zi, r = _example(code, p, y[i], outputs[i], previous[i], e[i], lam[i], cost[i],
                                mu_old, inv_mu, relax, update)
    lam[i] = li
    e[i] = ei
    z[i] = zi
    return r * r


@njit(cache=True, inline="always")
def _examples(code, p, args):
    """The pass over examples lo..hi - 1 (``args``: the arrays, the scalars and the range);
    returns the summed squared primal residuals."""
    y, cost, outputs, previous, e, lam, z, mu_old, inv_mu, relax, update, lo, hi = args
    residual = 0.0
    for i in range(lo, hi):
        residual += _example_at(code, p, y, cost, outputs, previous, e, lam, z, mu_old,
                                inv_mu, relax, update, i)
    return residual


# The loss code reaches _examples as a compile-time constant through the loss layer's table of
# specializations (``by_loss``), so the inlined prox is the loss's closed form alone.  The
# parallel forms call the blocks through a function that is not inlined (``by_loss``'s note).

@njit(cache=True, nogil=True)
def _examples_block(code, p, y, cost, outputs, previous, e, lam, z, mu_old, inv_mu, relax,
                    update, lo, hi):
    return by_loss(_examples, code, p, (y, cost, outputs, previous, e, lam, z, mu_old, inv_mu,
                                         relax, update, lo, hi))


@njit(cache=True, nogil=True)
def _pass_serial(code, p, y, cost, outputs, previous, e, lam, z, mu_old, mu_new, relax, update):
    return _examples_block(code, p, y, cost, outputs, previous, e, lam, z, mu_old,
                           1.0 / mu_new, relax, update, 0, y.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def _pass_parallel(code, p, y, cost, outputs, previous, e, lam, z, mu_old, mu_new, relax,
                   update, n_blocks):
    n = y.shape[0]
    n_blocks = min(n_blocks, max(n, 1))
    step = (n + n_blocks - 1) // n_blocks
    residuals = np.zeros(n_blocks)
    inv_mu = 1.0 / mu_new
    for b in prange(n_blocks):
        residuals[b] = _examples_block(code, p, y, cost, outputs, previous, e, lam, z, mu_old,
                                       inv_mu, relax, update, b * step,
                                       min(n, (b + 1) * step))
    return residuals.sum()


def multiplier_and_e_step(code, p, y, cost, outputs, e, lam, z, mu_old, mu_new, update,
                          previous=None, relax=1.0):
    """The pass of the module docstring, on the Numba threads when the examples are many
    (``config.PARALLEL_MIN_NNZ``: the threads' start-up costs more than a short pass).
    ``previous``: the outputs X~ beta before the (w, b)-step (needed with ``update`` when
    ``relax`` != 1)."""
    if previous is None:
        if update and relax != 1.0:
            raise ValueError("the relaxed multiplier step needs the previous outputs")
        previous = outputs
    args = (code, p, y, cost, outputs, previous, e, lam, z, float(mu_old), float(mu_new),
            float(relax), bool(update))
    threads = numba.get_num_threads()
    if y.shape[0] >= config.PARALLEL_MIN_NNZ and threads > 1:
        return _pass_parallel(*args, threads)
    return _pass_serial(*args)


# The factorized exact step in one pass over the rows.  Per row i, with beta the (w, b) just
# solved for: o_i = x~_i . beta (the outputs), the pass above (9)-(10) on o_i, and the row's
# share z_i x~_i of X~'z, the right-hand side of the next (w, b)-step.  Three sweeps (X~ beta,
# the pass, X~'z) become one that reads each row once.  stats[b] collects, per block b:
# ||o - o_old||^2 (the dual residual / mu), the squared primal residual, sum z (the bias entry
# of X~'z) and the count of rows where the loss is active (u_i > 0 after the e-step).

@njit(cache=True, inline="always")
def _fused_block(code, p, args):
    (indptr, indices, data, unit_values, blocks, b, w, intercept, y, cost, outputs, e, lam, z,
     mu_old, inv_mu, relax, acc, stats) = args
    acc[:] = 0.0
    diff = 0.0
    residual = 0.0
    zsum = 0.0
    active = 0.0
    for i in range(blocks[b], blocks[b + 1]):
        o = compact_row_dot(indptr, indices, data, unit_values, i, w) + intercept
        previous = outputs[i]
        d = o - previous
        diff += d * d
        outputs[i] = o
        li, u, ei, zi, r = _example(code, p, y[i], o, previous, e[i], lam[i], cost[i], mu_old,
                                    inv_mu, relax, True)
        lam[i] = li
        e[i] = ei
        z[i] = zi
        residual += r * r
        if u > 0.0:
            active += 1.0
        zsum += zi
        if zi != 0.0:
            compact_row_axpy(indptr, indices, data, unit_values, i, zi, acc)
    stats[b, 0] = diff
    stats[b, 1] = residual
    stats[b, 2] = zsum
    stats[b, 3] = active


@njit(cache=True, nogil=True)
def _fused_block_call(code, p, indptr, indices, data, unit_values, blocks, b, w, intercept, y,
                      cost, outputs, e, lam, z, mu_old, inv_mu, relax, acc, stats):
    by_loss(_fused_block, code, p,
            (indptr, indices, data, unit_values, blocks, b, w, intercept, y, cost, outputs, e,
             lam, z, mu_old, inv_mu, relax, acc, stats))


@njit(cache=True, parallel=True, nogil=True)
def _fused(code, p, indptr, indices, data, unit_values, blocks, w, intercept, y, cost, outputs,
           e, lam, z, mu_old, mu_new, relax, buffers, stats, rhs):
    inv_mu = 1.0 / mu_new
    for b in prange(blocks.shape[0] - 1):
        _fused_block_call(code, p, indptr, indices, data, unit_values, blocks, b, w, intercept,
                          y, cost, outputs, e, lam, z, mu_old, inv_mu, relax, buffers[b], stats)
    for f in range(rhs.shape[0]):
        s = 0.0
        for b in range(buffers.shape[0]):
            s += buffers[b, f]
        rhs[f] = s


def fused_outputs_and_pass(code, p, rows, w, intercept, y, cost, outputs, e, lam, z, mu_old,
                           mu_new, buffers, stats, rhs, relax=1.0):
    """The outputs X~ beta (w, ``intercept`` = s b), the pass (9)-(10) on them and X~'z (into
    ``rhs``, the weights' part) in one sweep over the rows of ``rows`` (a ``CompactRows``;
    ``buffers`` one accumulator per block).  Returns (||o - o_old||^2, ||primal residual||^2,
    sum z, the count of active rows)."""
    indptr, indices, data, unit_values, blocks = rows.arrays()
    _fused(code, p, indptr, indices, data, unit_values, blocks, w, float(intercept), y, cost,
           outputs, e, lam, z, float(mu_old), float(mu_new), float(relax), buffers, stats, rhs)
    totals = stats.sum(axis=0)
    return float(totals[0]), float(totals[1]), float(totals[2]), int(totals[3])


@njit(cache=True, nogil=True)
def row_squares(indptr, data, unit_values, extra):
    """||x_i||^2 + extra for every row of a CSR matrix (the row lengths for binary values)."""
    n = indptr.shape[0] - 1
    out = np.empty(n)
    for i in range(n):
        if unit_values:
            acc = float(indptr[i + 1] - indptr[i])
        else:
            acc = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                acc += data[k] * data[k]
        out[i] = acc + extra
    return out


def warm_up() -> None:
    """The fused pass for ALM's three losses (hinge, squared hinge, lp), and the Gram matrix and
    its cost (the factorized (w, b)-step) for both index widths of the data."""
    y = np.array([1.0, -1.0, 1.0])
    for code, p in ((0, 1.0), (1, 2.0), (2, 1.5)):
        for extra in ((), (2,)):
            kernel = _pass_parallel if extra else _pass_serial
            outputs = np.array([0.5, 0.2, -1.0])
            kernel(code, p, y, np.ones(3), outputs, outputs, np.zeros(3), np.zeros(3),
                   np.empty(3), 1.0, 2.0, 1.5, True, *extra)
    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]])
    for width in (np.int32, np.int64):
        X = sp.csr_matrix(dense)
        X.indices = X.indices.astype(width)
        X.indptr = X.indptr.astype(width)
        for unit in (False, True):
            row_squares(X.indptr, X.data, unit, 1.0)
            rows = CompactRows.all_rows(X, unit_values=unit)
            for code, p in ((0, 1.0), (1, 2.0), (2, 1.5)):
                fused_outputs_and_pass(code, p, rows, np.ones(3), 0.5, y, np.ones(3),
                                       np.zeros(3), np.zeros(3), np.zeros(3), np.empty(3),
                                       1.0, 2.0, np.zeros((1, 3)), np.zeros((1, 4)),
                                       np.empty(3))
        gram_cost(X.indptr, np.arange(3))
        for parallel in (False, True):
            gram_update(X, np.arange(3), np.ones(3), np.zeros((4, 4)), extra_value=1.0,
                        parallel=parallel)
