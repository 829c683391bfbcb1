"""Linear regression models: f(x) = w . x + b, predicted as real values (support vector
regression, ``task="regression"``).

``predict`` is ``decision_function``: the value itself (no labels; ``classes_`` is empty).  The
model writes and reads LIBLINEAR's model file of its regression types (``solver_type``
L2R_L2LOSS_SVR, L2R_L2LOSS_SVR_DUAL or L2R_L1LOSS_SVR_DUAL, ``nr_class 2`` and no ``label``
line, one weight column: LIBLINEAR's ``predict`` returns w . x there) and exports to ONNX
(:func:`solvers.models.onnx_export.regression_outputs`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from solvers.core.sparse import csr_matvec, matvec_serial
from solvers.losses import get_loss
from solvers.models import onnx_export
from solvers.models.base import Model, ModelFormatError, as_feature_matrix, register_model_kind

#: LIBLINEAR's regression solver types (``-s 11``, ``-s 12``, ``-s 13``)
LIBLINEAR_REGRESSION_TYPES = ("L2R_L2LOSS_SVR", "L2R_L2LOSS_SVR_DUAL", "L2R_L1LOSS_SVR_DUAL")


@register_model_kind
class RegressionModel(Model):
    """A linear regression model: ``coef_`` (n_features,), ``intercept_`` (a float);
    ``predict(X) = decision_function(X) = X coef_ + intercept_``."""

    kind = "linear_regression"
    task = "regression"

    def __init__(self, coef, intercept: float = 0.0, metadata: dict[str, Any] | None = None):
        coef = np.asarray(coef, dtype=np.float64)
        if coef.ndim != 1:
            raise ValueError(f"coef must be one weight vector, got shape {coef.shape}")
        intercept = float(intercept)
        if not (np.all(np.isfinite(coef)) and np.isfinite(intercept)):
            raise ValueError("coef and intercept must be finite")
        super().__init__(np.empty(0, dtype=np.float64), coef.shape[0], metadata)
        self.coef_ = np.ascontiguousarray(coef)
        self.intercept_ = intercept

    def decision_function(self, X, *, parallel: bool = False) -> np.ndarray:
        """The predicted values w . x + b, shape (n,)."""
        X = as_feature_matrix(X, self.n_features_in_)
        return csr_matvec(X, self.coef_, self.intercept_, parallel=parallel)

    def labels_from_scores(self, scores: np.ndarray) -> np.ndarray:
        """A regression model predicts its decision values."""
        return np.asarray(scores, dtype=np.float64)

    def decision_example(self, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The value of one example given as its sorted column ``indices`` (int32, each below
        ``n_features_in_``) and ``values``, shape (1,), without building a matrix."""
        indptr = np.array([0, indices.shape[0]], dtype=np.int32)
        out = np.empty(1)
        matvec_serial(indptr, indices, values, self.coef_, self.intercept_, out)
        return out

    def scores_and_probabilities(self, X, *, parallel: bool = False):
        return self.decision_function(X, parallel=parallel), None

    def _onnx_outputs(self, graph, X):
        return onnx_export.regression_outputs(graph, X, self.coef_, self.intercept_)

    def _fields(self):
        return {"intercept": self.intercept_}, {"coef": self.coef_}

    @classmethod
    def _from_fields(cls, fields, arrays):
        return cls(arrays["coef"], fields["intercept"])

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "task": self.task}

    # -- LIBLINEAR -------------------------------------------------------------------------
    def iter_liblinear(self, bias_scale: float | None = None) -> Iterator[str]:
        """:meth:`to_liblinear`'s text in pieces, as ``LinearModel.iter_liblinear`` gives its
        own (the service streams a download from them): the header, then the weights, one
        column of them."""
        text = self.to_liblinear(bias_scale)
        split = text.index("w\n") + 2
        yield text[:split]
        yield text[split:]

    def to_liblinear(self, bias_scale: float | None = None) -> str:
        """The model as LIBLINEAR writes a regression model (``predict`` reads it and returns
        the same values): the solver type of the training loss (L2R_L2LOSS_SVR when it came
        from a primal method, mfn), the intercept as the weight of a constant feature of value
        ``bias_scale`` (default: the training one, or 1), ``bias -1`` without one."""
        params = self.metadata.get("params", {})
        if bias_scale is None:
            bias_scale = float(params.get("bias_scale", 1.0))
        has_bias = self.intercept_ != 0.0 or params.get("bias", "regularized") != "none"
        solver_type = self.metadata.get("liblinear_solver_type")
        if solver_type not in LIBLINEAR_REGRESSION_TYPES:
            solver_type = get_loss(params.get("loss", "squared_epsilon_insensitive")) \
                .liblinear_solver_type
            if params.get("solver") == "mfn":
                solver_type = "L2R_L2LOSS_SVR"  # -s 11, LIBLINEAR's primal Newton method
        lines = [f"solver_type {solver_type}", "nr_class 2",
                 f"nr_feature {self.n_features_in_}",
                 f"bias {bias_scale!r}" if has_bias else "bias -1", "w"]
        weights = list(self.coef_)
        if has_bias:
            weights.append(self.intercept_ / bias_scale)
        lines.extend(f"{float(v)!r} " for v in weights)
        return "\n".join(lines) + "\n"

    @classmethod
    def from_liblinear(cls, header: dict[str, str], body: list[str]) -> RegressionModel:
        """The regression model of a LIBLINEAR model file, its header (key -> value) and the
        lines after ``w`` (``LinearModel.from_liblinear`` reads the header and hands a
        regression type here)."""
        solver_type = header["solver_type"]
        try:
            nr_feature = int(header["nr_feature"])
            bias = float(header["bias"])
        except (KeyError, ValueError) as exc:
            raise ModelFormatError(f"not a LIBLINEAR model: bad header ({exc})") from None
        rows = nr_feature + (1 if bias >= 0 else 0)
        try:
            w = np.array([float(line.split()[0]) for line in body[:rows]])
        except (ValueError, IndexError) as exc:
            raise ModelFormatError(f"not a LIBLINEAR model: bad weights ({exc})") from None
        if w.shape != (rows,):
            raise ModelFormatError(f"not a LIBLINEAR model: {rows} weights expected")
        intercept = w[nr_feature] * bias if bias >= 0 else 0.0
        return cls(w[:nr_feature], intercept,
                   {"source": "liblinear", "liblinear_solver_type": solver_type})
