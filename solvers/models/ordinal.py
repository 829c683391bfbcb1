"""Ordinal regression models: one score w.x and p - 1 thresholds cutting it into p ranks.

The ranks are the model's ``classes_`` in ascending order (the labels the model was trained
on, e.g. 1..5 stars).  Score s = w . x falls into bin k (0-based) when k thresholds lie below
it: theta_k < s <= theta_{k+1} with theta_0 = -inf and theta_p = +inf (Chu & Keerthi's
thresholds, Keerthi & DeCoste section 7).  Counting the thresholds below the score keeps the
prediction well defined even if a (non-optimal) model has thresholds out of order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.core.sparse import csr_matvec
from solvers.models import onnx_export
from solvers.models.base import Model, as_feature_matrix, model_classes, register_model_kind


@register_model_kind
class OrdinalModel(Model):
    """A linear ordinal regression model.

    ``coef_`` (n_features,) gives the score ``decision_function(X) = X coef_`` (shape (n,));
    ``thresholds_`` (p - 1,) cut it into the p ranks ``classes_``; ``predict`` returns the
    label of the bin containing the score.
    """

    kind = "ordinal"
    task = "ordinal"

    def __init__(self, coef, thresholds, classes, metadata: dict[str, Any] | None = None):
        coef = np.asarray(coef, dtype=np.float64)
        thresholds = np.asarray(thresholds, dtype=np.float64)
        classes = model_classes(classes)
        if coef.ndim != 1:
            raise ValueError(f"coef must be one weight vector, got shape {coef.shape}")
        if classes.ndim != 1 or classes.shape[0] < 2:
            raise ValueError("an ordinal model needs at least two ranks")
        if np.any(np.diff(classes) <= 0):
            raise ValueError("classes must be sorted ascending and distinct")
        if thresholds.shape != (classes.shape[0] - 1,):
            raise ValueError(
                f"{classes.shape[0]} ranks need {classes.shape[0] - 1} thresholds, got "
                f"{thresholds.shape}"
            )
        if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(thresholds))):
            raise ValueError("coef and thresholds must be finite")
        super().__init__(classes, coef.shape[0], metadata)
        self.coef_ = np.ascontiguousarray(coef)
        self.thresholds_ = thresholds

    def decision_function(self, X, *, parallel: bool = False) -> np.ndarray:
        """The scores w . x, shape (n,)."""
        X = as_feature_matrix(X, self.n_features_in_)
        return csr_matvec(X, self.coef_, parallel=parallel)

    def predict_rank(self, X, *, parallel: bool = False) -> np.ndarray:
        """0-based bin of each score: the number of thresholds strictly below it."""
        return self._ranks(self.decision_function(X, parallel=parallel))

    def _ranks(self, scores: np.ndarray) -> np.ndarray:
        return np.sum(scores[:, None] > self.thresholds_[None, :], axis=1)

    def labels_from_scores(self, scores: np.ndarray) -> np.ndarray:
        return self.classes_[self._ranks(scores)]

    def _onnx_outputs(self, graph, X):
        return onnx_export.ordinal_outputs(graph, X, self.coef_, self.thresholds_,
                                           self.classes_)

    def _fields(self):
        return {}, {"coef": self.coef_, "thresholds": self.thresholds_}

    @classmethod
    def _from_fields(cls, fields, arrays):
        return cls(arrays["coef"], arrays["thresholds"], arrays["classes"])
