"""Feature scaling: a step of ``train`` that every family shares (``scale=``).

Linear SVMs are not scale-invariant: a feature of values in the thousands beside binary ones
stretches the problem (its Hessian, its dual's diagonal) and the methods slow down by orders
of magnitude (the raw australian set: OCAS 138 s, the interior-point method 0.13 s).  The
usual remedy is to rescale the columns before training:

* ``maxabs``: x_ij / max_i |x_ij|, every column into [-1, 1]; zeros stay zeros, so sparse data
  stay sparse (scikit-learn's MaxAbsScaler, LIBSVM's ``svm-scale -l -1 -u 1`` for data
  symmetric about 0);
* ``standard``: (x_ij - mu_j) / sigma_j with the column's mean and standard deviation over all
  rows (implicit zeros included); the centering fills the matrix, so it is applied only to data
  stored dense (every entry present); sparse data are divided by sigma_j alone (scikit-learn's
  ``StandardScaler(with_mean=False)``), and the result says so.

A column with no spread (all zeros, or constant under ``standard``) keeps its values.

The scaler is fitted on the training data and is part of the model: a linear model trained
on scaled data, w_s . x_s + b_s with x_s = (x - mu) * s, is the linear model w = w_s * s,
b = b_s - w_s . (mu * s) on the raw data, so linear and ordinal models fold it into their
weights and predict (and export to LIBLINEAR's format) on raw inputs with no extra step.  The
regularizer and the bias are the scaled problem's (the model is the solution of the scaled
problem, written in raw coordinates); the model's metadata records the scaler.

Without a scaler, ``train`` warns when the columns' scales (max_i |x_ij| over columns with an
entry) span more than :data:`SPREAD_WARNING_DECADES` decades, naming the option.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers.core.sparse import column_max_abs as sparse_column_max_abs
from solvers.core.sparse import row_norms_squared
from solvers.data.dataset import Dataset, as_csr
from solvers.models import KernelModel, LinearModel, OrdinalModel, RegressionModel

SCALES = ("none", "maxabs", "standard")

#: ``train`` warns when max_j / min_j of the columns' max |x_ij| exceeds 10^this.
SPREAD_WARNING_DECADES = 3.0


def column_max_abs(X) -> np.ndarray:
    """max_i |x_ij| per column (0 for a column without entries).  ``X`` a matrix, or a
    :class:`~solvers.data.Dataset`, whose columns' maxima are computed once and kept
    (read-only)."""
    if isinstance(X, Dataset):
        return X.column_max_abs()
    X = as_csr(X)
    out = np.zeros(X.shape[1])
    sparse_column_max_abs(X.indices, X.data, out)
    return out


def decades(values: np.ndarray) -> float:
    """log10 of max / min over the positive ``values`` (0 with fewer than two)."""
    present = values[values > 0]
    if present.size < 2:
        return 0.0
    return math.log10(float(present.max()) / float(present.min()))


def column_scale_decades(X) -> float:
    """How many decades the columns' scales (max_i |x_ij|, columns with an entry) span (kept
    by a :class:`~solvers.data.Dataset`)."""
    if isinstance(X, Dataset):
        return X.fact("column_scale_decades", lambda: decades(X.column_max_abs()))
    return decades(column_max_abs(X))


def row_norm_decades(X) -> float:
    """How many decades the rows' Euclidean norms (rows with an entry) span (``X`` a matrix
    or a :class:`~solvers.data.Dataset`, whose squared norms are kept)."""
    if isinstance(X, Dataset):
        return X.fact("row_norm_decades", lambda: 0.5 * decades(X.row_norms_squared()))
    X = as_csr(X)
    squared = np.empty(X.shape[0])
    row_norms_squared(X.indptr, X.indices, X.data, squared)
    return 0.5 * decades(squared)


def scale_spread_warning(X) -> str | None:
    """A warning when the columns' scales span more than ``SPREAD_WARNING_DECADES`` decades
    (None otherwise); ``X`` a matrix or a :class:`~solvers.data.Dataset`."""
    spread = column_scale_decades(X)
    if spread <= SPREAD_WARNING_DECADES:
        return None
    scales = column_max_abs(X)
    present = scales[scales > 0]
    low, high = float(present.min()), float(present.max())
    return (f"the features' scales span {spread:.1f} decades (max |x_j| from {low:.3g} to "
            f"{high:.3g}): most solvers slow down on such data; scale='maxabs' (or "
            f"'standard') rescales the columns and keeps the model on raw inputs")


@dataclass
class FeatureScaler:
    """x_s = (x - offset) * factor, column by column (``offset`` None: no centering)."""

    method: str
    factor: np.ndarray
    offset: np.ndarray | None = None

    @classmethod
    def fit(cls, X, method: str) -> FeatureScaler:
        if method not in SCALES or method == "none":
            raise ValueError(f"unknown scaling {method!r}; expected one of "
                             f"{', '.join(s for s in SCALES if s != 'none')}")
        X = as_csr(X)
        n = X.shape[0]
        if method == "maxabs":
            spread = column_max_abs(X)
            offset = None
        else:
            total = np.asarray(X.sum(axis=0)).ravel()
            squares = np.asarray(X.multiply(X).sum(axis=0)).ravel()
            mean = total / max(n, 1)
            variance = np.maximum(squares / max(n, 1) - mean * mean, 0.0)
            spread = np.sqrt(variance)
            dense = X.nnz == X.shape[0] * X.shape[1]
            offset = np.where(spread > 0, mean, 0.0) if dense else None
        factor = np.where(spread > 0, 1.0 / np.where(spread > 0, spread, 1.0), 1.0)
        return cls(method, factor, offset)

    @property
    def centered(self) -> bool:
        return self.offset is not None

    def transform(self, X) -> sp.csr_matrix:
        """The scaled copy of ``X`` (CSR; dense-stored when centered)."""
        X = as_csr(X)
        if self.offset is not None:
            dense = (X.toarray() - self.offset[None, :]) * self.factor[None, :]
            return sp.csr_matrix(dense)
        scaled = X.copy()
        scaled.data = scaled.data * self.factor[scaled.indices]
        return scaled

    def transform_dataset(self, dataset: Dataset) -> Dataset:
        return dataset.with_X(self.transform(dataset.X), n_features=dataset.n_features)

    def fold(self, coef: np.ndarray, intercept: np.ndarray | float) -> tuple[np.ndarray, Any]:
        """Weights and intercepts on raw inputs of a linear model trained on scaled ones:
        w = w_s * factor, b = b_s - w_s . (offset * factor).  ``coef`` is (d,) or (k, d)."""
        coef = np.asarray(coef, dtype=np.float64)
        raw = coef * self.factor
        if self.offset is None:
            return raw, intercept
        return raw, intercept - raw @ self.offset

    def describe(self) -> dict[str, Any]:
        """What the model's metadata records (a linear model has the scaler folded into its
        weights; the vectors themselves are not repeated there)."""
        return {"method": self.method, "centered": self.centered}

    def scaled_model(self, model):
        """``model`` (trained on scaled inputs) on raw inputs: a linear, regression or ordinal
        model with the scaler folded into its weights, or a linear-kernel expansion with it
        folded into its support vectors."""
        if isinstance(model, LinearModel):
            coef, intercept = self.fold(model.coef_, model.intercept_)
            raw = LinearModel(coef, intercept, model.classes_, model.metadata)
        elif isinstance(model, OrdinalModel):
            coef, shift = self.fold(model.coef_, 0.0)
            # s_scaled = w_s . x_s = w . x + shift: a bin's threshold moves by -shift
            raw = OrdinalModel(coef, model.thresholds_ - shift, model.classes_, model.metadata)
        elif isinstance(model, RegressionModel):
            coef, intercept = self.fold(model.coef_, model.intercept_)
            raw = RegressionModel(coef, intercept, model.metadata)
        elif isinstance(model, KernelModel) and type(model) is KernelModel \
                and model.kernel.name == "linear":
            raw = self._scaled_linear_kernel_model(model)
        else:
            raise TypeError(f"scaling does not apply to a {type(model).__name__}")
        raw.metadata["scaling"] = self.describe()
        return raw

    def _scaled_linear_kernel_model(self, model: KernelModel) -> KernelModel:
        """A linear-kernel expansion trained on scaled inputs (smo's one-vs-one, where no
        single weight vector holds all pairs), on raw inputs.  With s(x) = (x - offset) *
        factor, each term s(x_j) . s(x) = v_j . x - v_j . offset for v_j = s(x_j) * factor,
        so the model keeps its support vectors' structure (LIBSVM's per-class groups) with
        v_j in place of s(x_j), and each function's intercept moves by -sum_j coef_j v_j .
        offset: the same function, exactly."""
        vectors = as_csr(model.support_vectors_).copy()
        vectors.data = vectors.data * self.factor[vectors.indices]
        intercept = model.intercept_
        if self.offset is not None:
            intercept = intercept - model.coef_ @ np.asarray(vectors @ self.offset).ravel()
        return KernelModel(vectors, model.coef_, intercept, model.classes_, model.kernel,
                           model.metadata, multiclass=model.multiclass)


__all__ = ["SCALES", "SPREAD_WARNING_DECADES", "FeatureScaler", "column_max_abs",
           "scale_spread_warning"]
