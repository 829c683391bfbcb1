"""Kernel models: support vectors, their coefficients, a bias and the kernel (binary and
one-vs-rest)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers.core.kernels import Kernel, column_operand, kernel_decision
from solvers.data.dataset import as_csr
from solvers.models.base import (
    Model,
    ModelFormatError,
    as_feature_matrix,
    model_classes,
    register_model_kind,
)


@register_model_kind
class KernelModel(Model):
    """A kernel classifier f_c(x) = sum_j coef_[c, j] k(sv_j, x) + intercept_[c].

    ``support_vectors_`` is a CSR matrix (one row per support vector, ``n_features_in_``
    columns); ``coef_`` has one row per binary problem (one for two classes, where a positive
    score favours ``classes_[1]``; one per class for one-vs-rest, prediction by the largest
    score) and one column per support vector.  The coefficients include the labels: for the
    LS-SVM family coef_j = y_j alpha_j.  ``kernel`` is a :class:`solvers.core.kernels.Kernel`.

    Decision values are computed by the Numba kernels of :mod:`solvers.core.kernels`: the
    serial one by default (safe in request threads), the parallel one with ``parallel=True``.
    """

    kind = "kernel"

    def __init__(self, support_vectors, coef, intercept, classes, kernel: Kernel,
                 metadata: dict[str, Any] | None = None):
        support_vectors = as_csr(support_vectors)
        coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
        intercept = np.atleast_1d(np.asarray(intercept, dtype=np.float64))
        classes = model_classes(classes)
        if classes.shape[0] < 2:
            raise ValueError("a model needs at least two classes")
        expected_rows = 1 if classes.shape[0] == 2 else classes.shape[0]
        if coef.shape != (expected_rows, support_vectors.shape[0]) or \
                intercept.shape != (expected_rows,):
            raise ValueError(
                f"{classes.shape[0]} classes and {support_vectors.shape[0]} support vectors "
                f"need coef of shape ({expected_rows}, {support_vectors.shape[0]}) and "
                f"{expected_rows} intercepts, got coef {coef.shape} and intercept "
                f"{intercept.shape}"
            )
        if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(intercept))):
            raise ValueError("coefficients and intercepts must be finite")
        if not isinstance(kernel, Kernel):
            raise TypeError("kernel must be a solvers.core.kernels.Kernel")
        self.support_vectors_ = support_vectors
        self.coef_ = np.ascontiguousarray(coef)
        self.intercept_ = intercept
        self.classes_ = classes
        self.kernel = kernel
        self.n_features_in_ = support_vectors.shape[1]
        self.metadata = dict(metadata or {})
        self._columns = column_operand(support_vectors)

    @property
    def n_support(self) -> int:
        return self.support_vectors_.shape[0]

    def decision_function(self, X, *, parallel: bool = False) -> np.ndarray:
        X = as_feature_matrix(X, self.n_features_in_)
        scores = kernel_decision(X, self.support_vectors_, self.kernel, self.coef_,
                                 self.intercept_, parallel=parallel, Z_columns=self._columns)
        return scores[:, 0] if self.coef_.shape[0] == 1 else scores

    def describe(self) -> dict[str, Any]:
        description = super().describe()
        description.update(self.kernel.as_dict())
        description["n_support"] = self.n_support
        return description

    # -- serialization -----------------------------------------------------------------------
    def _fields(self):
        sv = self.support_vectors_
        fields = dict(self.kernel.as_dict())
        fields["n_features"] = int(sv.shape[1])
        arrays = {
            "sv_indptr": sv.indptr.astype(np.int64),
            "sv_indices": sv.indices.astype(np.int64),
            "sv_data": sv.data,
            "coef": self.coef_,
            "intercept": self.intercept_,
        }
        return fields, arrays

    @classmethod
    def _from_fields(cls, fields, arrays):
        try:
            kernel = Kernel(fields["kernel"], fields["gamma"], fields["degree"], fields["coef0"])
            n_features = int(fields["n_features"])
            indptr = arrays["sv_indptr"]
            n_sv = indptr.shape[0] - 1
            support_vectors = sp.csr_matrix(
                (arrays["sv_data"], arrays["sv_indices"], indptr), shape=(n_sv, n_features)
            )
            support_vectors.check_format(full_check=True)
            return cls(support_vectors, arrays["coef"], arrays["intercept"], arrays["classes"],
                       kernel)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"inconsistent kernel model: {exc}") from None
