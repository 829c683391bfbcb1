"""Probability outputs: Platt scaling on out-of-fold decision values.

P(y = classes_[1] | x) = 1 / (1 + exp(A f(x) + B)), (A, B) fitted by maximum likelihood with
Platt's regularized targets t_+ = (N_+ + 1)/(N_+ + 2), t_- = 1/(N_- + 2), by the Newton
method with backtracking line search of Lin, Lin & Weng (2007), "A note on Platt's
probabilistic outputs for support vector machines" (their Algorithm 1: the objective
evaluated without overflow on either sign of A f + B, the Hessian shifted by sigma = 1e-12).
The decision values are out-of-fold (k stratified folds, as LIBSVM's ``-b 1``), so the sigmoid
is fitted on values the models did not train on.  Several classes: one sigmoid per
one-vs-rest column, the probabilities normalized to sum to 1; a one-vs-one model (smo's
default) instead fits one sigmoid per pair of classes, on that pair's examples, and couples
the pairwise probabilities into class probabilities by Wu, Lin & Weng (2004), method 2, as
LIBSVM's ``multiclass_probability`` (:func:`couple`; why by default: ``solvers.train.
OVO_COUPLING``, measured on dna).
"""

from __future__ import annotations

import numpy as np


def _objective(f: np.ndarray, t: np.ndarray, A: float, B: float) -> float:
    z = f * A + B
    positive = z >= 0
    return float(np.sum(np.where(positive, t * z + np.log1p(np.exp(-np.abs(z))),
                                 (t - 1.0) * z + np.log1p(np.exp(-np.abs(z))))))


def fit_sigmoid(decision: np.ndarray, positive: np.ndarray, max_iter: int = 100,
                min_step: float = 1e-10, sigma: float = 1e-12, eps: float = 1e-5
                ) -> tuple[float, float]:
    """(A, B) of Platt's sigmoid for decision values ``decision`` and the boolean labels
    ``positive`` (Lin, Lin & Weng 2007, Algorithm 1)."""
    f = np.asarray(decision, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    n_pos = float(np.count_nonzero(positive))
    n_neg = float(positive.size) - n_pos
    t = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    A, B = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))
    value = _objective(f, t, A, B)
    for _ in range(max_iter):
        z = f * A + B
        e = np.exp(-np.abs(z))
        p = np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))  # 1/(1 + exp(z))
        q = 1.0 - p
        d2 = p * q
        h11 = sigma + float(np.dot(f * f, d2))
        h22 = sigma + float(np.sum(d2))
        h21 = float(np.dot(f, d2))
        d1 = t - p
        g1, g2 = float(np.dot(f, d1)), float(np.sum(d1))
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            new_A, new_B = A + step * dA, B + step * dB
            new_value = _objective(f, t, new_A, new_B)
            if new_value < value + 1e-4 * step * gd:
                A, B, value = new_A, new_B, new_value
                break
            step /= 2.0
        else:
            break  # the line search failed: (A, B) is as good as it gets
    return A, B


def sigmoid(decision: np.ndarray, A: float, B: float) -> np.ndarray:
    """1 / (1 + exp(A f + B)) without overflow."""
    z = np.asarray(decision, dtype=np.float64) * A + B
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))


def fit_platt(decision: np.ndarray, truth_index: np.ndarray, n_classes: int) -> np.ndarray:
    """The (A, B) rows of a model's sigmoids: one for a binary model (``decision`` (n,),
    positive = class 1), one per class otherwise (``decision`` (n, k))."""
    if decision.ndim == 1:
        return np.array([fit_sigmoid(decision, truth_index == 1)])
    return np.array([fit_sigmoid(decision[:, k], truth_index == k) for k in range(n_classes)])


def probabilities(decision: np.ndarray, platt: np.ndarray) -> np.ndarray:
    """(n, k) class probabilities from decision values and the model's sigmoids."""
    if decision.ndim == 1:
        p = sigmoid(decision, *platt[0])
        return np.column_stack([1.0 - p, p])
    p = np.column_stack([sigmoid(decision[:, k], *platt[k]) for k in range(platt.shape[0])])
    return p / p.sum(axis=1, keepdims=True)


# -- one-vs-one models: pairwise coupling ---------------------------------------------------


def pair_index(k: int) -> list[tuple[int, int]]:
    """The pairs (a, b), a < b, of ``k`` classes in LIBSVM's order (a one-vs-one model's
    rows)."""
    return [(a, b) for a in range(k) for b in range(a + 1, k)]


def fit_pairwise_platt(pairwise: np.ndarray, truth_index: np.ndarray, n_classes: int
                       ) -> np.ndarray:
    """One sigmoid per pair (a, b) of a one-vs-one model, fitted (:func:`fit_sigmoid`) on the
    out-of-fold values of that pair's function on the examples of a and b only, positive =
    a (a positive value votes for a), as LIBSVM's ``svm_binary_svc_probability`` per pair."""
    rows = []
    for p, (a, b) in enumerate(pair_index(n_classes)):
        mine = (truth_index == a) | (truth_index == b)
        rows.append(fit_sigmoid(pairwise[mine, p], truth_index[mine] == a))
    return np.array(rows)


#: LIBSVM's bound on a pairwise probability (``min_prob`` in ``svm_predict_probability``):
#: r_ab in [1e-7, 1 - 1e-7], so the coupling's matrix stays positive definite.
MIN_PAIRWISE_PROBABILITY = 1e-7


def pairwise_probabilities(pairwise: np.ndarray, platt: np.ndarray, n_classes: int
                           ) -> np.ndarray:
    """(n, k, k) matrices r with r[:, a, b] = P(a | a or b, x) from the pairs' sigmoids (a < b;
    r[:, b, a] = 1 - r[:, a, b]; the diagonal 0), each clipped as LIBSVM clips it."""
    n = pairwise.shape[0]
    r = np.zeros((n, n_classes, n_classes))
    for p, (a, b) in enumerate(pair_index(n_classes)):
        value = np.clip(sigmoid(pairwise[:, p], *platt[p]), MIN_PAIRWISE_PROBABILITY,
                        1.0 - MIN_PAIRWISE_PROBABILITY)
        r[:, a, b] = value
        r[:, b, a] = 1.0 - value
    return r


def couple(r: np.ndarray, eps: float | None = None, max_iter: int | None = None
           ) -> np.ndarray:
    """Class probabilities from pairwise ones by Wu, Lin & Weng (2004), "Probability estimates
    for multi-class classification by pairwise coupling", method 2: the p minimizing
    sum_a sum_{b != a} (r_ba p_a - r_ab p_b)^2 subject to sum p = 1, i.e. min p^T Q p with
    Q_aa = sum_{b != a} r_ba^2 and Q_ab = -r_ba r_ab, solved by their fixed-point iteration
    exactly as LIBSVM's ``multiclass_probability`` (one coordinate at a time, renormalized;
    stop when max_a |(Q p)_a - p^T Q p| < eps, default 0.005 / k; at most max(100, k)
    sweeps), for every row of ``r`` ((n, k, k) or one (k, k)) at once."""
    single = r.ndim == 2
    r = np.asarray(r, dtype=np.float64)
    if single:
        r = r[None]
    n, k, _ = r.shape
    eps = 0.005 / k if eps is None else eps
    max_iter = max(100, k) if max_iter is None else max_iter
    rt = np.swapaxes(r, 1, 2)  # rt[:, a, b] = r_ba
    Q = -rt * r  # off the diagonal: -r_ba r_ab
    Q[:, np.arange(k), np.arange(k)] = (rt ** 2).sum(axis=2) - (
        rt[:, np.arange(k), np.arange(k)] ** 2)  # sum over b != a of r_ba^2
    p = np.full((n, k), 1.0 / k)
    active = np.ones(n, dtype=bool)
    for _ in range(max_iter):
        Qp = np.einsum("nab,nb->na", Q, p)
        pQp = np.einsum("na,na->n", p, Qp)
        active &= np.max(np.abs(Qp - pQp[:, None]), axis=1) >= eps
        if not active.any():
            break
        for t in range(k):  # LIBSVM's sweep, only on the rows not yet converged
            rows = active
            diag = Q[rows, t, t]
            diff = (-Qp[rows, t] + pQp[rows]) / diag
            p[rows, t] += diff
            pQp[rows] = (pQp[rows] + diff * (diff * diag + 2.0 * Qp[rows, t])) / (
                1.0 + diff) / (1.0 + diff)
            Qp[rows] = (Qp[rows] + diff[:, None] * Q[rows, t, :]) / (1.0 + diff[:, None])
            p[rows] /= (1.0 + diff[:, None])
    return p[0] if single else p


def coupled_probabilities(pairwise: np.ndarray, platt: np.ndarray, n_classes: int
                          ) -> np.ndarray:
    """(n, k) class probabilities of a one-vs-one model: its pairs' sigmoids
    (:func:`pairwise_probabilities`) coupled by :func:`couple`."""
    return couple(pairwise_probabilities(pairwise, platt, n_classes))
