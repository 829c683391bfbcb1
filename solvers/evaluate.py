"""Classification and regression metrics, defined once: the service's evaluation, cross-validation's
``scoring=``, the CLI's ``predict`` report and the scikit-learn estimator use them.

:func:`evaluate` scores a model on a labelled dataset and returns one JSON-able dict:

- ``accuracy``; ``balanced_accuracy`` (the mean recall over the labels the data have);
- per class ``precision``, ``recall``, ``f1`` and their macro means (``precision_macro``,
  ``recall_macro``, ``f1_macro``: over the labels the data have or the model predicts, a
  zero where a ratio is 0/0, as scikit-learn's ``zero_division=0``);
- ``confusion_matrix`` (row i, column j: examples of ``labels[i]`` predicted as ``labels[j]``;
  ``labels``: the model's classes in order, then any label only the data have);
- ``roc_auc`` from the decision values: binary, the probability that a positive example
  (``classes_[1]``) outscores a negative one, ties counted half; multi-class, the macro mean of
  each class's one-vs-rest AUC on its own column of scores (None where a class has no
  examples or all examples are of it); ``average_precision`` (binary): sum over thresholds of
  (R_n - R_{n-1}) P_n, as scikit-learn computes it;
- ``roc_curve`` (binary): the ROC curve's points ``fpr``, ``tpr`` and ``thresholds`` (the
  first threshold, +infinity, as None), those of ``sklearn.metrics.roc_curve`` (with its
  ``drop_intermediate``), at most :data:`ROC_POINTS` of them (:func:`roc_curve`);
- ``log_loss`` for a model with probabilities (``probability=True``): the mean of
  -log p(true label), each p clipped to [eps, 1 - eps] as scikit-learn does (None without
  probabilities, or where the data have a label the model does not know).

A regression model (``model.task == "regression"``) is scored by :func:`regression_scores`
instead: ``mean_squared_error``, ``mean_absolute_error``, ``r2`` (1 - SSE / SST, scikit-learn's
coefficient of determination) and ``squared_correlation`` (LIBSVM's and LIBLINEAR's
"Squared correlation coefficient", (n sum pt - sum p sum t)^2 / ((n sum pp - (sum p)^2)
(n sum tt - (sum t)^2))).  A one-class model (``model.task == "one_class"``) is scored by
:func:`one_class_scores`: the fraction of rows it calls outliers and, given labels of two
values, the AUC of its decision values for the inliers (the larger label).

The functions below take arrays, so they serve any caller that has labels and scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.data.dataset import label_value


def average_ranks(values: np.ndarray) -> np.ndarray:
    """The 1-based ranks of ``values``, ties sharing their average rank (scipy.stats'
    ``rankdata`` with its default method; importing scipy.stats took half of the library's
    import time, which every service process pays at start)."""
    values = np.asarray(values)
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    first = np.concatenate(([True], ordered[1:] != ordered[:-1]))  # a run of ties starts
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], values.size)
    ranks = np.empty(values.size)
    ranks[order] = ((starts + 1 + ends) / 2.0)[np.cumsum(first) - 1]
    return ranks


#: the names cross-validation's ``scoring=`` accepts (higher is better for each)
SCORES = ("accuracy", "balanced_accuracy", "f1_macro", "precision_macro", "recall_macro",
          "roc_auc", "average_precision")


def _comparable(*arrays):
    """Label arrays of one kind: ints against floats compare as floats (a model written
    before labels kept their type)."""
    kinds = {np.asarray(a).dtype.kind for a in arrays}
    if "U" in kinds or len(kinds) == 1:
        return [np.asarray(a) for a in arrays]
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def confusion(truth, predicted, classes) -> tuple[np.ndarray, np.ndarray]:
    """(labels, matrix): ``classes`` in order, then labels only ``truth`` has; matrix[i, j]
    counts examples of labels[i] predicted as labels[j]."""
    truth, predicted, classes = _comparable(truth, predicted, classes)
    unseen = np.setdiff1d(np.unique(truth), classes)
    labels = np.concatenate([classes, unseen])
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    true_index = order[np.searchsorted(sorted_labels, truth)]
    predicted_index = order[np.searchsorted(sorted_labels, predicted)]
    matrix = np.zeros((labels.size, labels.size), dtype=np.int64)
    np.add.at(matrix, (true_index, predicted_index), 1)
    return labels, matrix


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b, out=np.zeros(a.shape), where=b > 0)


def binary_roc_auc(positive: np.ndarray, scores: np.ndarray) -> float | None:
    """The area under the ROC curve of ``scores`` for the boolean ``positive``: the
    Mann-Whitney statistic with average ranks for ties (None without both kinds)."""
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(np.count_nonzero(positive))
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = average_ranks(scores)  # a tie counts half
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def average_precision(positive: np.ndarray, scores: np.ndarray) -> float | None:
    """Average precision of ``scores`` for the boolean ``positive``: sum_n (R_n - R_{n-1}) P_n
    over the distinct thresholds, highest first (None without positives)."""
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(np.count_nonzero(positive))
    if n_pos == 0:
        return None
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    s, hits = np.asarray(scores, dtype=np.float64)[order], positive[order]
    ends = np.r_[np.flatnonzero(np.diff(s) != 0), s.size - 1]  # last index of each threshold
    tp = np.cumsum(hits)[ends]
    fp = (ends + 1) - tp
    precision = tp / (tp + fp)
    recall = tp / n_pos
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


#: the most points :func:`roc_curve` returns (enough for a plot; a JSON answer stays small)
ROC_POINTS = 200


def roc_curve(positive: np.ndarray, scores: np.ndarray, max_points: int | None = ROC_POINTS
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(fpr, tpr, thresholds) of ``scores`` for the boolean ``positive``, as
    ``sklearn.metrics.roc_curve`` computes them: one point per distinct threshold, highest
    first, after a first point (0, 0) at threshold +infinity; the points inside a straight
    run (collinear with their neighbours) dropped, as its ``drop_intermediate=True``.  Past
    ``max_points`` (None: no cap), points evenly spaced along the curve's order are kept,
    the first and the last always: every point returned is one of scikit-learn's.  None
    without both kinds of examples."""
    positive = np.asarray(positive, dtype=bool)
    n_pos = int(np.count_nonzero(positive))
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="mergesort")
    s, hits = s[order], positive[order]
    ends = np.r_[np.flatnonzero(np.diff(s) != 0), s.size - 1]
    tps = np.cumsum(hits)[ends].astype(np.float64)
    fps = (ends + 1) - tps
    thresholds = s[ends]
    if tps.size > 2:  # scikit-learn's drop_intermediate: keep the corners
        keep = np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]
        tps, fps, thresholds = tps[keep], fps[keep], thresholds[keep]
    tps, fps = np.r_[0.0, tps], np.r_[0.0, fps]
    thresholds = np.r_[np.inf, thresholds]
    fpr, tpr = fps / n_neg, tps / n_pos
    if max_points is not None and fpr.size > max_points:
        kept = np.unique(np.rint(np.linspace(0, fpr.size - 1, max_points)).astype(np.int64))
        fpr, tpr, thresholds = fpr[kept], tpr[kept], thresholds[kept]
    return fpr, tpr, thresholds


def log_loss(truth_index: np.ndarray, proba: np.ndarray) -> float:
    """Mean -log p of each row's true class (``truth_index`` into ``proba``'s columns), the
    probabilities clipped to [eps, 1 - eps] (eps of float64), as scikit-learn's log_loss."""
    eps = np.finfo(np.float64).eps
    p = np.clip(np.asarray(proba, dtype=np.float64), eps, 1.0 - eps)
    p = p / p.sum(axis=1, keepdims=True)  # scikit-learn renormalizes the clipped rows
    return float(-np.mean(np.log(p[np.arange(p.shape[0]), truth_index])))


def _index_in(classes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The position in ``classes`` (in any order) of each of ``values`` (all in it)."""
    order = np.argsort(classes, kind="stable")
    return order[np.searchsorted(classes[order], values)]


def scores_from(truth, predicted, decision, classes, proba=None, *,
                curve: bool = True) -> dict[str, Any]:
    """Every metric of the module docstring from labels, predictions and decision values
    (shape (n,) for two classes, (n, k) otherwise; None to skip the ranking metrics) and, for
    the log loss, class probabilities (n, k) in ``classes``' order (or None).  ``curve=False``
    leaves out the ROC curve's points (a score needs its area only)."""
    classes = np.asarray(classes)
    labels, matrix = confusion(truth, predicted, classes)
    n = int(matrix.sum())
    true_counts, predicted_counts = matrix.sum(axis=1), matrix.sum(axis=0)
    tp = np.diag(matrix).astype(np.float64)
    precision = _ratio(tp, predicted_counts.astype(np.float64))
    recall = _ratio(tp, true_counts.astype(np.float64))
    f1 = _ratio(2.0 * tp, (true_counts + predicted_counts).astype(np.float64))
    present = (true_counts > 0) | (predicted_counts > 0)  # scikit-learn's label set
    in_data = true_counts > 0
    result: dict[str, Any] = {
        "n_samples": n,
        "accuracy": float(tp.sum() / n) if n else 0.0,
        "balanced_accuracy": float(recall[in_data].mean()) if in_data.any() else 0.0,
        "precision_macro": float(precision[present].mean()) if present.any() else 0.0,
        "recall_macro": float(recall[present].mean()) if present.any() else 0.0,
        "f1_macro": float(f1[present].mean()) if present.any() else 0.0,
        "labels": [label_value(v) for v in labels],
        "confusion_matrix": matrix.tolist(),
        "per_class": [{"label": label_value(v), "true_count": int(true_counts[k]),
                       "predicted_count": int(predicted_counts[k]), "correct": int(tp[k]),
                       "precision": float(precision[k]), "recall": float(recall[k]),
                       "f1": float(f1[k])} for k, v in enumerate(labels)],
        "roc_auc": None,
        "average_precision": None,
        "roc_curve": None,
        "log_loss": None,
    }
    truth_c, classes_c = _comparable(truth, classes)
    if proba is not None and np.isin(truth_c, classes_c).all() and truth_c.size:
        result["log_loss"] = log_loss(_index_in(classes_c, truth_c), proba)
    if decision is not None:
        decision = np.asarray(decision, dtype=np.float64)
        if decision.ndim == 1:
            positive = truth_c == classes_c[1]
            result["roc_auc"] = binary_roc_auc(positive, decision)
            result["average_precision"] = average_precision(positive, decision)
            points = roc_curve(positive, decision) if curve else None
            if points is not None:
                fpr, tpr, thresholds = points
                result["roc_curve"] = {
                    "fpr": fpr.tolist(), "tpr": tpr.tolist(),
                    "thresholds": [None if np.isinf(t) else float(t) for t in thresholds]}
        else:
            aucs = [binary_roc_auc(truth_c == c, decision[:, k])
                    for k, c in enumerate(classes_c)]
            aucs = [a for a in aucs if a is not None]
            result["roc_auc"] = float(np.mean(aucs)) if aucs else None
    return result


def regression_scores(truth, predicted) -> dict[str, Any]:
    """The regression metrics of the module docstring from real labels and predicted values
    (``r2`` and ``squared_correlation`` None where they divide by zero: constant labels or
    predictions)."""
    t = np.asarray(truth, dtype=np.float64)
    p = np.asarray(predicted, dtype=np.float64)
    if t.shape != p.shape:
        raise ValueError(f"{t.shape[0]} labels and {p.shape[0]} predictions: one each per row")
    n = t.shape[0]
    result: dict[str, Any] = {"n_samples": int(n), "mean_squared_error": None,
                              "mean_absolute_error": None, "r2": None,
                              "squared_correlation": None}
    if n == 0:
        return result
    residual = t - p
    result["mean_squared_error"] = float(np.mean(residual * residual))
    result["mean_absolute_error"] = float(np.mean(np.abs(residual)))
    total = float(np.sum((t - t.mean()) ** 2))
    if total > 0.0:
        result["r2"] = 1.0 - float(np.sum(residual * residual)) / total
    # LIBLINEAR's predict.c, in its sums
    sp_, st, spp, stt, spt = p.sum(), t.sum(), p @ p, t @ t, p @ t
    denominator = (n * spp - sp_ * sp_) * (n * stt - st * st)
    if denominator > 0.0:
        result["squared_correlation"] = float((n * spt - sp_ * st) ** 2 / denominator)
    return result


def one_class_scores(labels, decision) -> dict[str, Any]:
    """A one-class model's metrics from its decision values (w.phi(x) - rho; negative: an
    outlier, predicted -1): ``outlier_fraction``, the share predicted outliers (nu bounds it
    from above on the training rows: Schölkopf et al. 2001, Proposition 4), and, when the
    labels tell two kinds of rows apart, ``roc_auc``: how well the decision values rank the
    inliers above the others, the inliers being the rows of the larger label (+1 in LIBSVM's
    convention, 1 of 0/1 labels; None for labels of one value or of more than two, and for
    text labels)."""
    d = np.asarray(decision, dtype=np.float64)
    labels = np.asarray(labels)
    result: dict[str, Any] = {"n_samples": int(d.shape[0]), "outlier_fraction": None,
                              "roc_auc": None, "inlier_label": None}
    if d.shape[0] == 0:
        return result
    result["outlier_fraction"] = float(np.mean(d <= 0.0))  # svm_predict: +1 where d > 0
    values = np.unique(labels)
    if values.shape[0] == 2 and labels.dtype.kind in "iuf":
        inlier = values[1]
        result["inlier_label"] = label_value(inlier)
        result["roc_auc"] = binary_roc_auc(labels == inlier, d)
    return result


def evaluate(model, dataset, *, parallel: bool = False) -> dict[str, Any]:
    """Every metric of the module docstring for ``model`` on the labelled ``dataset`` (the
    rows scored once; a regression model's are :func:`regression_scores`, a one-class
    model's :func:`one_class_scores`)."""
    if getattr(model, "task", None) == "regression":
        return regression_scores(dataset.y, model.predict(dataset.X, parallel=parallel))
    if getattr(model, "task", None) == "one_class":
        return one_class_scores(dataset.labels,
                                model.decision_function(dataset.X, parallel=parallel))
    decision, proba = model.scores_and_probabilities(dataset.X, parallel=parallel)
    predicted = model.labels_from_scores(decision)
    if getattr(model, "kind", None) == "ordinal":
        decision = None  # one score, p ranks: not one-vs-rest scores
    return scores_from(dataset.labels, predicted, decision, model.classes_, proba)


def score(name: str, truth, predicted, decision, classes) -> float:
    """One of :data:`SCORES` (cross-validation's ``scoring=``); NaN where it is undefined
    (an AUC on a fold with one class)."""
    if name not in SCORES:
        raise ValueError(f"unknown scoring {name!r}; expected one of {', '.join(SCORES)}")
    if name == "accuracy":
        truth, predicted = _comparable(truth, predicted)
        return float(np.mean(truth == predicted))
    value = scores_from(truth, predicted, decision if name in ("roc_auc", "average_precision")
                        else None, classes, curve=False)[name]
    return float("nan") if value is None else float(value)
