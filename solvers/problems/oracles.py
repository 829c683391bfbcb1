"""Risk oracles of the problems: the risk, its subgradient (a cutting plane) and the outputs at
a point, in one parallel pass over the rows (Numba ``prange`` over blocks of rows, one
accumulator per block).

This is the data-parallel half of the cutting-plane methods (Joachims 2006; Franc &
Sonnenburg 2008, 2009): a pure function of (data, point), so it can later run on shards of the
rows and be summed.  The problems' :meth:`risk_oracle` methods call these kernels; the loss
values and derivatives are the loss layer's (``solvers.losses.kernels``).

* binary (:func:`binary_oracle`): margins m_i = y_i (x_i . w + s b), slacks xi_i = 1 - m_i,
  R = sum_i C_i L(xi_i) and the cut a = -sum_i C_i L'(xi_i) y_i x~_i (x~_i = (x_i, s));
* Crammer-Singer (:func:`crammer_singer_oracle`): scores s_im = w_m . x~_i, per example the
  maximizing class k_i of [m != y_i] + s_im - s_iy_i (the first of equal maxima; the term of
  m = y_i is 0), R = sum_i C_i (that maximum) and the cut G with row k_i += C_i x~_i and row
  y_i -= C_i x~_i for every i with k_i != y_i.

Either kernel can take the outputs instead of computing them (``have_outputs``): the cut at a
point whose outputs the solver interpolated (OCAS's w_c) costs one pass for the cut alone.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from solvers.core.sparse import _row_axpy, _row_dot
from solvers.losses.kernels import _derivative, _value


def _blocks(n_rows: int, parallel: bool) -> int:
    return max(1, min(numba.get_num_threads() if parallel else 1, n_rows))


@njit(cache=True, inline="always")
def _binary_rows(indptr, indices, data, y, cost, code, p, s, w, b, have_outputs, margins,
                 want_cut, acc, lo, hi):
    d = w.shape[0]
    risk = 0.0
    for i in range(lo, hi):
        if have_outputs:
            m = margins[i]
        else:
            m = y[i] * (_row_dot(indptr, indices, data, i, w) + s * b)
            margins[i] = m
        xi = 1.0 - m
        risk += cost[i] * _value(code, p, xi)
        if want_cut:
            g = _derivative(code, p, xi)
            if g != 0.0:
                coef = -cost[i] * g * y[i]
                _row_axpy(indptr, indices, data, i, coef, acc)
                acc[d] += coef * s
    return risk


@njit(cache=True, nogil=True)
def binary_oracle_serial(indptr, indices, data, y, cost, code, p, s, w, b, have_outputs,
                         margins, want_cut, cut):
    """Fills ``margins`` (unless ``have_outputs``) and ``cut`` (length n_features + 1, the last
    entry the bias coefficient's; only if ``want_cut``); returns R."""
    if want_cut:
        cut[:] = 0.0
    return _binary_rows(indptr, indices, data, y, cost, code, p, s, w, b, have_outputs,
                        margins, want_cut, cut, 0, y.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def binary_oracle_parallel(indptr, indices, data, y, cost, code, p, s, w, b, have_outputs,
                           margins, want_cut, cut, n_blocks):
    """:func:`binary_oracle_serial` over ``n_blocks`` blocks of rows in parallel."""
    n = y.shape[0]
    d = w.shape[0]
    step = (n + n_blocks - 1) // n_blocks
    buffers = np.zeros((n_blocks, d + 1 if want_cut else 1))
    risks = np.zeros(n_blocks)
    for blk in prange(n_blocks):
        risks[blk] = _binary_rows(indptr, indices, data, y, cost, code, p, s, w, b,
                                  have_outputs, margins, want_cut, buffers[blk], blk * step,
                                  min(n, (blk + 1) * step))
    if want_cut:
        for j in prange(d + 1):
            total = 0.0
            for blk in range(n_blocks):
                total += buffers[blk, j]
            cut[j] = total
    return risks.sum()


@njit(cache=True, inline="always")
def _cs_row_max_ray(Sb, St, mu, i, yi):
    """(loss, k): max_m [m != y] + s_m - s_y (the term of m = y is 0) and its first argmax, at
    the scores s = Sb[i] + mu (St[i] - Sb[i]) (a point on a ray; mu = 0 reads Sb alone)."""
    n_classes = Sb.shape[1]
    if mu == 0.0:
        sy = Sb[i, yi]
    else:
        sy = Sb[i, yi] + mu * (St[i, yi] - Sb[i, yi])
    best = -np.inf
    k = 0
    for m in range(n_classes):
        if m == yi:
            v = 0.0
        elif mu == 0.0:
            v = 1.0 + Sb[i, m] - sy
        else:
            v = 1.0 + Sb[i, m] + mu * (St[i, m] - Sb[i, m]) - sy
        if v > best:
            best = v
            k = m
    return best, k


@njit(cache=True, inline="always")
def _cs_row_max(scores, i, yi):
    """(loss, k) of :func:`_cs_row_max_ray` at the scores themselves."""
    return _cs_row_max_ray(scores, scores, 0.0, i, yi)


@njit(cache=True, nogil=True)
def crammer_singer_risk_on_ray(Sb, St, labels, cost, mu):
    """sum_i C_i (Crammer-Singer loss of example i) at the scores Sb + mu (St - Sb), without
    forming them (the approximate line searches evaluate it at many mu)."""
    total = 0.0
    for i in range(Sb.shape[0]):
        v, _ = _cs_row_max_ray(Sb, St, mu, i, labels[i])
        total += cost[i] * v
    return total


@njit(cache=True, nogil=True)
def crammer_singer_violations(scores, labels, loss, k_out):
    """Per example the Crammer-Singer loss and its maximizing class (first of equal maxima)."""
    for i in range(scores.shape[0]):
        v, k = _cs_row_max(scores, i, labels[i])
        loss[i] = v
        k_out[i] = k


@njit(cache=True, inline="always")
def _cs_rows(indptr, indices, data, labels, cost, s, W, have_outputs, scores, k_out,
             want_cut, acc, lo, hi):
    d1, n_classes = W.shape
    d = d1 - 1
    risk = 0.0
    for i in range(lo, hi):
        if not have_outputs:
            # W is given transposed, (n_features + 1, n_classes): the k weights of a feature
            # are contiguous, one sweep over the row's entries serves every class
            for m in range(n_classes):
                scores[i, m] = s * W[d, m]
            for t in range(indptr[i], indptr[i + 1]):
                x = data[t]
                j = indices[t]
                for m in range(n_classes):
                    scores[i, m] += x * W[j, m]
        yi = labels[i]
        v, k = _cs_row_max(scores, i, yi)
        k_out[i] = k
        risk += cost[i] * v
        if want_cut and k != yi:
            c = cost[i]
            for t in range(indptr[i], indptr[i + 1]):
                j = indices[t]
                acc[k, j] += c * data[t]
                acc[yi, j] -= c * data[t]
            acc[k, d] += c * s
            acc[yi, d] -= c * s
    return risk


@njit(cache=True, nogil=True)
def crammer_singer_oracle_serial(indptr, indices, data, labels, cost, s, W, have_outputs,
                                 scores, k_out, want_cut, cut):
    """Fills ``scores`` (unless ``have_outputs``), ``k_out`` and ``cut`` (n_classes, n_features
    + 1; the last column the bias coefficients'; only if ``want_cut``) at the point whose
    TRANSPOSE ``W`` is given (n_features + 1, n_classes); returns R."""
    if want_cut:
        cut[:, :] = 0.0
    return _cs_rows(indptr, indices, data, labels, cost, s, W, have_outputs, scores, k_out,
                    want_cut, cut, 0, labels.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def crammer_singer_oracle_parallel(indptr, indices, data, labels, cost, s, W, have_outputs,
                                   scores, k_out, want_cut, cut, n_blocks):
    """:func:`crammer_singer_oracle_serial` over ``n_blocks`` blocks of rows in parallel."""
    n = labels.shape[0]
    d1, n_classes = W.shape
    step = (n + n_blocks - 1) // n_blocks
    buffers = np.zeros((n_blocks, n_classes, d1)) if want_cut else np.zeros((n_blocks, 1, 1))
    risks = np.zeros(n_blocks)
    for blk in prange(n_blocks):
        risks[blk] = _cs_rows(indptr, indices, data, labels, cost, s, W, have_outputs, scores,
                              k_out, want_cut, buffers[blk], blk * step,
                              min(n, (blk + 1) * step))
    if want_cut:
        for j in prange(d1):
            for m in range(n_classes):
                total = 0.0
                for blk in range(n_blocks):
                    total += buffers[blk, m, j]
                cut[m, j] = total
    return risks.sum()


def binary_oracle(X, y, cost, code, p, s, beta, margins=None, want_cut=True,
                  parallel=True):
    """(R, cut, margins) of a binary problem at beta = (w, b) (see the module docstring);
    ``margins`` given: taken as the margins at beta, not recomputed."""
    have = margins is not None
    if not have:
        margins = np.empty(y.shape[0])
    cut = np.empty(beta.shape[0]) if want_cut else np.empty(0)
    w = np.ascontiguousarray(beta[:-1])
    args = (X.indptr, X.indices, X.data, y, cost, code, float(p), float(s), w, float(beta[-1]),
            have, margins, want_cut, cut)
    if parallel and _blocks(y.shape[0], True) > 1:
        risk = binary_oracle_parallel(*args, _blocks(y.shape[0], True))
    else:
        risk = binary_oracle_serial(*args)
    return float(risk), (cut if want_cut else None), margins


def crammer_singer_oracle(X, labels, cost, s, W, scores=None, want_cut=True, parallel=True):
    """(R, cut G, scores, k) of the Crammer-Singer problem at W (see the module docstring)."""
    have = scores is not None
    n = labels.shape[0]
    if not have:
        scores = np.empty((n, W.shape[0]))
    k = np.empty(n, dtype=np.int64)
    cut = np.empty(W.shape) if want_cut else np.empty((0, 0))
    args = (X.indptr, X.indices, X.data, labels, cost, float(s), np.ascontiguousarray(W.T),
            have, scores, k, want_cut, cut)
    if parallel and _blocks(n, True) > 1:
        risk = crammer_singer_oracle_parallel(*args, _blocks(n, True))
    else:
        risk = crammer_singer_oracle_serial(*args)
    return float(risk), (cut if want_cut else None), scores, k
