"""Kernel models: support vectors, their coefficients, a bias and the kernel (binary,
one-vs-rest and one-vs-one)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers.calibration import coupled_probabilities
from solvers.core.kernels import Kernel, column_operand, kernel_decision
from solvers.data.dataset import as_csr, label_key
from solvers.models import onnx_export
from solvers.models.base import (
    Model,
    ModelFormatError,
    as_feature_matrix,
    model_classes,
    register_model_kind,
)

LIBSVM_BLOCK_LINES = 4096
"""Support-vector lines of a LIBSVM model file formatted at a time
(:meth:`KernelModel.iter_libsvm`)."""

#: the svm_type a model of each task is written as when its training does not say
_DEFAULT_SVM_TYPE = {"classification": "c_svc", "one_class": "one_class",
                     "regression": "epsilon_svr"}


@register_model_kind
class KernelModel(Model):
    """A kernel classifier f_c(x) = sum_j coef_[c, j] k(sv_j, x) + intercept_[c].

    ``support_vectors_`` is a CSR matrix (one row per support vector, ``n_features_in_``
    columns); ``coef_`` has one row per binary problem (one for two classes, where a positive
    score favours ``classes_[1]``; one per class for one-vs-rest, prediction by the largest
    score) and one column per support vector.  The coefficients include the labels: for the
    LS-SVM family coef_j = y_j alpha_j.  ``kernel`` is a :class:`solvers.core.kernels.Kernel`.

    ``multiclass="ovo"`` (LIBSVM's one-vs-one, :mod:`solvers.smo`): one row per pair of
    classes (a, b), a < b, in LIBSVM's order (0,1), (0,2), ..., (1,2), ...; a positive value
    votes for a, otherwise for b.  :meth:`pairwise_decision` gives those values;
    :meth:`decision_function` gives per class the votes plus the summed confidences mapped into
    (-1/3, 1/3) (scikit-learn's ``decision_function_shape="ovr"``), so its largest entry is the
    class with most votes, and :meth:`labels_from_scores` breaks ties as LIBSVM does (the
    first class among those with most votes).

    Decision values are computed by the Numba kernels of :mod:`solvers.core.kernels`: the
    serial one by default (safe in request threads); ``parallel=True`` allows the parallel one,
    taken for batches large enough to pay for waking the threads (measured:
    ``config.KERNEL_DECISION_PARALLEL_MIN_ENTRIES``).
    """

    kind = "kernel"

    def __init__(self, support_vectors, coef, intercept, classes, kernel: Kernel,
                 metadata: dict[str, Any] | None = None, multiclass: str = "ovr"):
        support_vectors = as_csr(support_vectors)
        coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
        intercept = np.atleast_1d(np.asarray(intercept, dtype=np.float64))
        classes = model_classes(classes)
        if self.task == "classification" and classes.shape[0] < 2:
            raise ValueError("a model needs at least two classes")
        if multiclass not in ("ovr", "ovo"):
            raise ValueError(f"unknown multi-class strategy {multiclass!r}")
        k = classes.shape[0]
        expected_rows = 1 if k <= 2 else (k * (k - 1) // 2 if multiclass == "ovo" else k)
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
        super().__init__(classes, support_vectors.shape[1], metadata)
        self.support_vectors_ = support_vectors
        self.coef_ = np.ascontiguousarray(coef)
        self.intercept_ = intercept
        self.kernel = kernel
        self.multiclass = multiclass if classes.shape[0] > 2 else "ovr"
        self._columns = column_operand(support_vectors)

    @property
    def n_support(self) -> int:
        return self.support_vectors_.shape[0]

    def pairwise_decision(self, X, *, parallel: bool = False) -> np.ndarray:
        """The rows' values of every binary function (one column per row of ``coef_``);
        ``parallel=True`` lets threads compute them where the batch is large enough to pay
        for them (:func:`solvers.core.kernels.use_parallel_decision`)."""
        X = as_feature_matrix(X, self.n_features_in_)
        return kernel_decision(X, self.support_vectors_, self.kernel, self.coef_,
                               self.intercept_, parallel=None if parallel else False,
                               Z_columns=self._columns)

    def decision_function(self, X, *, parallel: bool = False) -> np.ndarray:
        return self._scores(self.pairwise_decision(X, parallel=parallel))

    def _scores(self, scores: np.ndarray) -> np.ndarray:
        """The decision values from the binary functions' values."""
        if self.coef_.shape[0] == 1:
            return scores[:, 0]
        if self.multiclass == "ovo":
            return self._ovo_scores(scores)
        return scores

    def _ovo_scores(self, pairwise: np.ndarray) -> np.ndarray:
        k = self.classes_.shape[0]
        votes = np.zeros((pairwise.shape[0], k))
        confidence = np.zeros((pairwise.shape[0], k))
        p = 0
        for a in range(k):
            for b in range(a + 1, k):
                d = pairwise[:, p]
                positive = d > 0
                votes[positive, a] += 1
                votes[~positive, b] += 1
                confidence[:, a] += d
                confidence[:, b] -= d
                p += 1
        return votes + confidence / (3.0 * (np.abs(confidence) + 1.0))

    def labels_from_scores(self, scores: np.ndarray) -> np.ndarray:
        if scores.ndim == 2 and self.multiclass == "ovo":
            return self.classes_[np.argmax(np.rint(scores), axis=1)]  # the votes; LIBSVM's ties
        return super().labels_from_scores(scores)

    def scores_and_probabilities(self, X, *,
                                 parallel: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """A one-vs-one model trained with probability=True (``pairwise_platt``) couples its
        pairs' sigmoids (Wu, Lin & Weng 2004, method 2:
        :func:`solvers.calibration.coupled_probabilities`) on the pairs' values its votes are
        counted from (the kernel rows computed once); others as every model."""
        pairs = self.metadata.get("pairwise_platt")
        if pairs is None:
            return super().scores_and_probabilities(X, parallel=parallel)
        pairwise = self.pairwise_decision(X, parallel=parallel)
        return self._scores(pairwise), coupled_probabilities(
            pairwise, np.asarray(pairs), self.classes_.shape[0])

    def _onnx_outputs(self, graph, X):
        """As :meth:`pairwise_decision`, :meth:`_scores`, :meth:`labels_from_scores` and
        :meth:`scores_and_probabilities`: the kernel rows against the support vectors, the
        binary functions' values, then one-vs-one's votes or the binary and one-vs-rest
        outputs of a linear model."""
        kernel = onnx_export.kernel_rows(graph, X, self.support_vectors_, self.kernel)
        pairwise = onnx_export.affine(graph, kernel, self.coef_, self.intercept_)
        if self.multiclass != "ovo":
            return onnx_export.classifier_outputs(graph, pairwise, self.coef_.shape[0],
                                                  self.classes_, self.metadata.get("platt"))
        k = self.n_classes
        votes, scores = onnx_export.ovo_votes_and_scores(graph, pairwise, k)
        pairs = self.metadata.get("pairwise_platt")
        probabilities = (
            onnx_export.coupled_probabilities(graph, pairwise, pairs, k) if pairs is not None
            else onnx_export.platt_probabilities(graph, scores, self.metadata.get("platt"),
                                                 binary=False))
        return onnx_export.GraphOutputs(onnx_export.argmax_labels(graph, votes, self.classes_),
                                        scores, k, probabilities)

    def describe(self) -> dict[str, Any]:
        description = super().describe()
        description.update(self.kernel.as_dict())
        description["n_support"] = self.n_support
        description["multiclass"] = self.multiclass
        return description

    # -- LIBSVM --------------------------------------------------------------------------------
    def svm_type(self) -> str:
        """The LIBSVM svm_type the model was trained as (its training parameters', or the
        model file's it was read from; c_svc for a classifier that says none)."""
        return (self.metadata.get("params") or {}).get(
            "svm_type", self.metadata.get("svm_type", _DEFAULT_SVM_TYPE[self.task]))

    def to_libsvm(self) -> str:
        """The model in LIBSVM's model-file format (``svm-predict`` reads it, as does
        :func:`from_libsvm`): :meth:`iter_libsvm`'s pieces joined."""
        return "".join(self.iter_libsvm())

    def iter_libsvm(self, block_lines: int | None = None) -> Iterator[str]:
        """:meth:`to_libsvm`'s text in pieces: the header, then the support vectors' lines
        ``block_lines`` at a time (default :data:`LIBSVM_BLOCK_LINES`; a download holds one
        block's text, not the file's)."""
        header, rows, columns = self._libsvm_parts()
        yield "\n".join(header + ["SV"]) + "\n"
        block_lines = max(1, block_lines or LIBSVM_BLOCK_LINES)
        sv = self.support_vectors_
        lines: list[str] = []
        for i in rows:
            start, end = sv.indptr[i], sv.indptr[i + 1]
            features = " ".join(f"{j + 1}:{v!r}" for j, v in
                                zip(sv.indices[start:end].tolist(),
                                    sv.data[start:end].tolist(), strict=True))
            values = " ".join(map(repr, columns[i].tolist()))
            lines.append(f"{values} {features} ".rstrip() + " \n")
            if len(lines) >= block_lines:
                yield "".join(lines)
                lines = []
        if lines:
            yield "".join(lines)

    def _libsvm_parts(self) -> tuple[list[str], Any, np.ndarray]:
        """(the header lines, the support vectors' order, their coefficient columns) of the
        LIBSVM file of a model trained by ``solvers.smo``: the classifiers (c_svc, nu_svc)
        binary or one-vs-one.

        LIBSVM groups the support vectors by class, in its label order, and gives each k - 1
        coefficients: for the pair (i, j), i < j, those of class i's vectors are in column
        j - 1, those of class j's in column i; the pair's function is sum coef k - rho, positive
        for i.  Here a pair (a, b) gives class a the label +1 (coef_ = alpha y), so a vector's
        class is the sign of its nonzero coefficients, and rho = -intercept.  A binary model
        is written with the labels (classes_[1], classes_[0]) (LIBSVM's first label is the
        positive side).
        """
        if self.metadata.get("solver") != "smo" or (self.n_classes > 2
                                                   and self.multiclass != "ovo"):
            raise ValueError("LIBSVM's model format holds the models smo trains: binary or "
                             "one-vs-one classifiers, one-class and regression models")
        k = self.n_classes
        coef = self.coef_
        pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
        if k == 2:
            order = [1, 0]  # LIBSVM's label order: the positive class first
            owner = np.where(coef[0] > 0, 0, 1)  # position in ``order``
            columns = coef.T  # (n_sv, 1)
        else:
            order = list(range(k))
            owner = np.full(self.n_support, -1)
            columns = np.zeros((self.n_support, k - 1))
            for p, (a, b) in enumerate(pairs):
                positive = coef[p] > 0
                negative = coef[p] < 0
                owner[positive] = a
                owner[negative] = b
            for p, (a, b) in enumerate(pairs):
                in_a = owner == a
                in_b = owner == b
                columns[in_a, b - 1] = coef[p, in_a]
                columns[in_b, a] = coef[p, in_b]
        if np.any(owner < 0):
            raise ValueError("a support vector without a nonzero coefficient")
        grouped = [np.flatnonzero(owner == c) for c in range(k)]
        header = self._libsvm_header() + [
            f"nr_class {k}",
            f"total_sv {self.n_support}",
            "rho " + " ".join(repr(float(r)) for r in -self.intercept_),
            "label " + " ".join(label_key(self.classes_[c]) for c in order),
            "nr_sv " + " ".join(str(len(g)) for g in grouped),
        ]
        return header, np.concatenate(grouped), columns

    @staticmethod
    def from_libsvm(text: str, n_features: int | None = None) -> KernelModel:
        """A LIBSVM model file as a model (:func:`from_libsvm`)."""
        return from_libsvm(text, n_features)

    def _libsvm_header(self) -> list[str]:
        """The lines every LIBSVM model file starts with: svm_type and the kernel."""
        kernel = self.kernel
        header = [f"svm_type {self.svm_type()}", f"kernel_type {kernel.name}"]
        if kernel.name == "polynomial":
            header.append(f"degree {int(kernel.degree)}")
        if kernel.name != "linear":
            header.append(f"gamma {float(kernel.gamma)!r}")
        if kernel.name in ("polynomial", "sigmoid"):
            header.append(f"coef0 {float(kernel.coef0)!r}")
        return header

    # -- serialization -----------------------------------------------------------------------
    def _fields(self):
        sv = self.support_vectors_
        fields = dict(self.kernel.as_dict())
        fields["n_features"] = int(sv.shape[1])
        fields["multiclass"] = self.multiclass
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
            support_vectors = sp.csr_matrix(
                (arrays["sv_data"], arrays["sv_indices"], indptr),
                shape=(indptr.shape[0] - 1, n_features))
            support_vectors.check_format(full_check=True)
            return cls._assembled(support_vectors, kernel, fields, arrays)
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelFormatError(f"inconsistent {cls.kind} model: {exc}") from None

    @classmethod
    def _assembled(cls, support_vectors, kernel: Kernel, fields, arrays) -> KernelModel:
        """The model of an archive's parts (:meth:`_from_fields`)."""
        return cls(support_vectors, arrays["coef"], arrays["intercept"], arrays["classes"],
                   kernel, multiclass=fields.get("multiclass", "ovr"))


class _SingleFunctionKernelModel(KernelModel):
    """One kernel expansion f(x) = sum_j coef_[0, j] k(sv_j, x) + intercept_[0] that is not a
    classifier between two labels (one-class, regression): LIBSVM's single-function models
    (``svm_predict_values`` for ONE_CLASS, EPSILON_SVR, NU_SVR); ``classes_`` are the kind's
    own."""

    classes: np.ndarray

    def __init__(self, support_vectors, coef, intercept, kernel: Kernel,
                 metadata: dict[str, Any] | None = None, classes=None, multiclass: str = "ovr"):
        super().__init__(support_vectors, np.reshape(np.asarray(coef, dtype=np.float64),
                                                      (1, -1)),
                         np.reshape(np.asarray(intercept, dtype=np.float64), (1,)),
                         self.classes, kernel, metadata)

    def decision_function(self, X, *, parallel: bool = False) -> np.ndarray:
        return self.pairwise_decision(X, parallel=parallel)[:, 0]

    def describe(self) -> dict[str, Any]:
        description = super().describe()
        description["task"] = self.task
        description.pop("multiclass", None)
        return description

    def _libsvm_parts(self) -> tuple[list[str], Any, np.ndarray]:
        """LIBSVM's model file of a one-class or regression model: nr_class 2, one rho, no
        labels, one coefficient per support vector (``svm_save_model``)."""
        if self.metadata.get("solver", "smo") != "smo":
            raise ValueError("LIBSVM's model format holds the models smo trains")
        header = self._libsvm_header() + [
            "nr_class 2", f"total_sv {self.n_support}", f"rho {float(-self.intercept_[0])!r}"]
        return header, range(self.n_support), self.coef_.T

    @classmethod
    def _assembled(cls, support_vectors, kernel: Kernel, fields, arrays) -> KernelModel:
        return cls(support_vectors, arrays["coef"], arrays["intercept"], kernel)

    def _onnx_score(self, graph, X) -> str:
        """The (N,) score f(x) as nodes of ``graph``."""
        values = onnx_export.affine(
            graph, onnx_export.kernel_rows(graph, X, self.support_vectors_, self.kernel),
            self.coef_, self.intercept_)
        return onnx_export.column(graph, values)


@register_model_kind
class OneClassKernelModel(_SingleFunctionKernelModel):
    """A one-class SVM (Schölkopf et al. 2001; ``smo`` with ``svm_type="one_class"``):
    ``decision_function`` is the signed score w.phi(x) - rho, ``predict`` +1 where it is
    positive (inside the estimated support) and -1 elsewhere, as LIBSVM's ``svm_predict``
    and scikit-learn's ``OneClassSVM``; ``classes_`` is [-1, 1]."""

    kind = "kernel_one_class"
    task = "one_class"
    classes = np.array([-1, 1])

    def _onnx_outputs(self, graph, X):
        scores = self._onnx_score(graph, X)
        return onnx_export.GraphOutputs(
            onnx_export.threshold_labels(graph, scores, self.classes_), scores, None)


@register_model_kind
class KernelRegressionModel(_SingleFunctionKernelModel):
    """A kernel regression model (``smo`` with ``svm_type="epsilon_svr"`` or ``"nu_svr"``):
    ``predict`` returns the real values f(x) = sum_j coef_j k(sv_j, x) + intercept (as
    ``decision_function``), coef_j = alpha_j - alpha*_j; ``classes_`` is empty (a regression
    has no classes)."""

    kind = "kernel_regression"
    task = "regression"
    classes = np.array([], dtype=np.float64)

    def predict(self, X, *, parallel: bool = False) -> np.ndarray:
        return self.decision_function(X, parallel=parallel)

    def labels_from_scores(self, scores: np.ndarray) -> np.ndarray:
        return scores

    def scores_and_probabilities(self, X, *, parallel: bool = False):
        return self.decision_function(X, parallel=parallel), None

    def _onnx_outputs(self, graph, X):
        scores = self._onnx_score(graph, X)
        return onnx_export.GraphOutputs(scores, scores, None)


def from_libsvm(text: str, n_features: int | None = None) -> KernelModel:
    """A LIBSVM model file (``svm_save_model``'s text, as :meth:`KernelModel.to_libsvm`
    writes it or ``svm-train`` does) as a model: a classifier (c_svc, nu_svc; binary or
    one-vs-one, the pairs mapped to this library's order of sorted classes), a one-class or a
    regression model.  LIBSVM's file does not record the number of features: ``n_features``
    (default the largest index among the support vectors).  Malformed text is a
    :class:`ModelFormatError` that says what is wrong."""
    lines = text.splitlines()
    header: dict[str, list[str]] = {}
    try:
        start = lines.index("SV") + 1
    except ValueError:
        raise ModelFormatError("not a LIBSVM model: no 'SV' line") from None
    for line in lines[:start - 1]:
        key, *values = line.split()
        header[key] = values
    try:
        svm_type = header["svm_type"][0]
        kernel_name = header["kernel_type"][0]
        if kernel_name not in ("linear", "rbf", "polynomial", "sigmoid"):
            raise ModelFormatError(f"LIBSVM kernel_type {kernel_name!r} is not one of this "
                                   "library's (linear, rbf, polynomial, sigmoid)")
        kernel = Kernel(kernel_name, float(header.get("gamma", ["1"])[0]),
                        int(header.get("degree", ["3"])[0]),
                        float(header.get("coef0", ["0"])[0]))
        nr_class = int(header["nr_class"][0])
        rho = np.array([float(v) for v in header["rho"]])
        single = svm_type in ("one_class", "epsilon_svr", "nu_svr")
        width = 1 if single else nr_class - 1
        coef_rows, indptr, indices, data = [], [0], [], []
        for line in lines[start:]:
            fields = line.split()
            if not fields:
                continue
            coef_rows.append([float(v) for v in fields[:width]])
            for item in fields[width:]:
                index, value = item.split(":")
                indices.append(int(index) - 1)
                data.append(float(value))
            indptr.append(len(indices))
    except (KeyError, IndexError, ValueError) as exc:
        raise ModelFormatError(f"malformed LIBSVM model: {exc}") from None
    columns = max(indices, default=-1) + 1 if n_features is None else int(n_features)
    if indices and max(indices) >= columns:
        raise ModelFormatError(f"a support vector has feature {max(indices) + 1}, more than "
                               f"n_features={columns}")
    support_vectors = sp.csr_matrix((data, indices, indptr), shape=(len(coef_rows), columns))
    coef = np.array(coef_rows, dtype=np.float64).reshape(len(coef_rows), width)
    metadata = {"solver": "smo", "svm_type": svm_type}
    if svm_type == "one_class":
        return OneClassKernelModel(support_vectors, coef[:, 0], -rho[0], kernel, metadata)
    if single:
        return KernelRegressionModel(support_vectors, coef[:, 0], -rho[0], kernel, metadata)
    if svm_type not in ("c_svc", "nu_svc"):
        raise ModelFormatError(f"unknown LIBSVM svm_type {svm_type!r}")
    try:
        labels = np.array([float(v) for v in header["label"]])
        counts = [int(v) for v in header["nr_sv"]]
    except (KeyError, ValueError) as exc:
        raise ModelFormatError(f"malformed LIBSVM classifier: {exc}") from None
    if len(labels) != nr_class or len(counts) != nr_class or sum(counts) != len(coef_rows):
        raise ModelFormatError("LIBSVM classifier: label, nr_sv and the SV lines disagree")
    starts = np.concatenate([[0], np.cumsum(counts)])
    classes = np.sort(labels)
    rank = np.searchsorted(classes, labels)  # LIBSVM's label position -> sorted position
    if nr_class == 2:
        # LIBSVM's function is positive for label[0]; ours for classes_[1]
        sign = 1.0 if rank[0] == 1 else -1.0
        model_coef, intercept = sign * coef.T, sign * -rho
    else:
        pairs = {(a, b): p for p, (a, b) in enumerate(
            (a, b) for a in range(nr_class) for b in range(a + 1, nr_class))}
        model_coef = np.zeros((len(pairs), len(coef_rows)))
        intercept = np.zeros(len(pairs))
        p = 0
        for i in range(nr_class):
            for j in range(i + 1, nr_class):
                in_i = slice(starts[i], starts[i + 1])
                in_j = slice(starts[j], starts[j + 1])
                a, b = rank[i], rank[j]
                sign = 1.0 if a < b else -1.0
                q = pairs[(min(a, b), max(a, b))]
                model_coef[q, in_i] = sign * coef[in_i, j - 1]
                model_coef[q, in_j] = sign * coef[in_j, i]
                intercept[q] = sign * -rho[p]
                p += 1
    classes = classes.astype(np.int64) if np.all(classes == np.round(classes)) else classes
    return KernelModel(support_vectors, model_coef, intercept, classes, kernel, metadata,
                       multiclass="ovo" if nr_class > 2 else "ovr")
