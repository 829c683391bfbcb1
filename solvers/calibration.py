"""Probability outputs: Platt scaling on out-of-fold decision values.

P(y = classes_[1] | x) = 1 / (1 + exp(A f(x) + B)), (A, B) fitted by maximum likelihood with
Platt's regularized targets t_+ = (N_+ + 1)/(N_+ + 2), t_- = 1/(N_- + 2), by the Newton
method with backtracking line search of Lin, Lin & Weng (2007), "A note on Platt's
probabilistic outputs for support vector machines" (their Algorithm 1: the objective
evaluated without overflow on either sign of A f + B, the Hessian shifted by sigma = 1e-12).
The decision values are out-of-fold (k stratified folds, as LIBSVM's ``-b 1``), so the sigmoid
is fitted on values the models did not train on.  Several classes: one sigmoid per
one-vs-rest column, the probabilities normalized to sum to 1.
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
