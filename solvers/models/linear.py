"""Linear models (binary, and one-vs-rest with one weight row per class)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from solvers.core.sparse import csr_matmat, csr_matvec, matmat_serial, matvec_serial
from solvers.data.dataset import label_key
from solvers.losses import get_loss
from solvers.models import onnx_export
from solvers.models.base import (
    Model,
    ModelFormatError,
    as_feature_matrix,
    model_classes,
    register_model_kind,
)
from solvers.models.regression import LIBLINEAR_REGRESSION_TYPES, RegressionModel

#: LIBLINEAR's logistic models, whose ``predict -b 1`` gives P(label | x) = 1 / (1 +
#: exp(-f(x))), normalized over the classes of a one-vs-rest model (its
#: ``check_probability_model``): read back with those probabilities
LIBLINEAR_PROBABILITY_TYPES = ("L2R_LR", "L2R_LR_DUAL", "L1R_LR")

LIBLINEAR_BLOCK_ROWS = 65536
"""Weight rows of a LIBLINEAR model file formatted at a time
(:meth:`LinearModel.iter_liblinear`): a block of a binary model is about 1.5 MB of text."""


@register_model_kind
class LinearModel(Model):
    """A linear classifier: one weight row per binary problem.

    Binary: ``coef_`` has shape (1, n_features) and scores x . coef_[0] + intercept_[0]
    favour ``classes_[1]`` when positive.  More classes: one-vs-rest, one row per class,
    prediction by the largest score.
    """

    kind = "linear"

    def __init__(self, coef, intercept, classes, metadata: dict[str, Any] | None = None):
        coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
        intercept = np.atleast_1d(np.asarray(intercept, dtype=np.float64))
        classes = model_classes(classes)
        expected_rows = 1 if classes.shape[0] == 2 else classes.shape[0]
        if classes.shape[0] < 2:
            raise ValueError("a model needs at least two classes")
        if coef.shape[0] != expected_rows or intercept.shape != (expected_rows,):
            raise ValueError(
                f"{classes.shape[0]} classes need {expected_rows} weight rows and intercepts, "
                f"got coef {coef.shape} and intercept {intercept.shape}"
            )
        super().__init__(classes, coef.shape[1], metadata)
        self.coef_ = np.ascontiguousarray(coef)
        self.intercept_ = intercept

    def decision_function(self, X, *, parallel: bool = False) -> np.ndarray:
        X = as_feature_matrix(X, self.n_features_in_)
        if self.coef_.shape[0] == 1:
            return csr_matvec(X, self.coef_[0], self.intercept_[0], parallel=parallel)
        return csr_matmat(X, self.coef_, self.intercept_, parallel=parallel)

    def decision_example(self, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The decision value(s) of one example given as its column ``indices`` (int32,
        sorted, each below ``n_features_in_``) and ``values``: the row
        ``decision_function`` gives for it (shape (1,) binary, (1, classes) one-vs-rest), by
        the same serial kernels, without building a matrix (whose checks cost more than the
        product for one example: the service's per-request prediction)."""
        indptr = np.array([0, indices.shape[0]], dtype=np.int32)
        if self.coef_.shape[0] == 1:
            out = np.empty(1)
            matvec_serial(indptr, indices, values, self.coef_[0], float(self.intercept_[0]), out)
        else:
            out = np.empty((1, self.coef_.shape[0]))
            matmat_serial(indptr, indices, values, self.coef_, self.intercept_, out)
        return out

    def _onnx_outputs(self, graph, X):
        values = onnx_export.affine(graph, X, self.coef_, self.intercept_)
        return onnx_export.classifier_outputs(graph, values, self.coef_.shape[0],
                                              self.classes_, self.metadata.get("platt"))

    def _fields(self):
        return {}, {"coef": self.coef_, "intercept": self.intercept_}

    @classmethod
    def _from_fields(cls, fields, arrays):
        return cls(arrays["coef"], arrays["intercept"], arrays["classes"])

    # -- LIBLINEAR -------------------------------------------------------------------------
    @classmethod
    def from_liblinear(cls, text: str) -> LinearModel | RegressionModel:
        """A LIBLINEAR model file (``train -s 0..7``, binary and one-vs-rest, ``-s 4``; also
        what :meth:`to_liblinear` writes) as a linear model: the same decision values and
        labels as LIBLINEAR's ``predict``.  A regression type (``-s 11/12/13``) gives a
        :class:`~solvers.models.regression.RegressionModel`; one-class models are refused."""
        lines = text.splitlines()
        header: dict[str, str] = {}
        for number, line in enumerate(lines):
            if line.strip() == "w":
                body = lines[number + 1:]
                break
            key, _, value = line.partition(" ")
            header[key] = value.strip()
        else:
            raise ModelFormatError("not a LIBLINEAR model: no 'w' line")
        if header.get("solver_type") in LIBLINEAR_REGRESSION_TYPES:
            return RegressionModel.from_liblinear(header, body)
        try:
            solver_type = header["solver_type"]
            nr_class = int(header["nr_class"])
            nr_feature = int(header["nr_feature"])
            bias = float(header["bias"])
            labels = [float(v) for v in header["label"].split()]
        except (KeyError, ValueError) as exc:
            raise ModelFormatError(f"not a LIBLINEAR model: bad header ({exc})") from None
        if "SVR" in solver_type or "ONECLASS" in solver_type:
            raise ModelFormatError(f"a LIBLINEAR {solver_type} model is not read here (the "
                                   f"regression types are {', '.join(LIBLINEAR_REGRESSION_TYPES)})")
        columns = 1 if nr_class == 2 else nr_class
        rows = nr_feature + (1 if bias >= 0 else 0)
        try:
            w = np.array([[float(v) for v in line.split()] for line in body[:rows]])
        except ValueError as exc:
            raise ModelFormatError(f"not a LIBLINEAR model: bad weights ({exc})") from None
        if w.shape != (rows, columns) or len(labels) != nr_class:
            raise ModelFormatError(f"not a LIBLINEAR model: {rows} rows of {columns} weights "
                                   f"and {nr_class} labels expected")
        coef = w[:nr_feature].T
        intercept = w[nr_feature] * bias if bias >= 0 else np.zeros(columns)
        values = np.asarray(labels)
        classes = values.astype(np.int64) if np.all(values == np.round(values)) else values
        order = np.argsort(values)
        if nr_class == 2:
            sign = 1.0 if order[1] == 0 else -1.0  # LIBLINEAR: label[0] is the positive class
            coef, intercept = sign * coef, sign * intercept
        else:
            coef, intercept = coef[order], intercept[order]
        model = cls(coef, intercept, classes[order])
        model.metadata = {"source": "liblinear", "solver_type": solver_type}
        if solver_type in LIBLINEAR_PROBABILITY_TYPES:  # predict -b 1's 1 / (1 + exp(-f))
            model.metadata["platt"] = [[-1.0, 0.0]] * coef.shape[0]
        return model

    def liblinear_solver_type(self) -> str:
        """The ``solver_type`` of its LIBLINEAR model file: a LIBLINEAR file's own, else the
        training loss's (``Loss.liblinear_solver_type``)."""
        params = self.metadata.get("params", {})
        return self.metadata.get("solver_type") or get_loss(
            params.get("loss", "squared_hinge"), params.get("p", 2.0)).liblinear_solver_type

    def liblinear_keeps_probabilities(self) -> bool:
        """Whether its LIBLINEAR model file keeps its probabilities: those of a logistic model
        (one sigmoid 1 / (1 + exp(-f)) per score column, normalized), which LIBLINEAR's
        ``predict -b 1`` and :meth:`from_liblinear` give a file of a logistic solver type."""
        platt = self.metadata.get("platt")
        return (platt is not None and "pairwise_platt" not in self.metadata
                and all(list(row) == [-1.0, 0.0] for row in platt)
                and self.liblinear_solver_type() in LIBLINEAR_PROBABILITY_TYPES)

    def to_liblinear(self, bias_scale: float | None = None) -> str:
        """The model in LIBLINEAR's model-file format (``predict`` reads it).

        LIBLINEAR stores the intercept as the weight of a constant feature of value ``bias``;
        ``bias_scale`` chooses that value (default: the training ``bias_scale`` from the
        metadata, or 1).  A model without intercept is written with ``bias -1``.  The text is
        :meth:`iter_liblinear`'s pieces joined.
        """
        return "".join(self.iter_liblinear(bias_scale))

    def iter_liblinear(self, bias_scale: float | None = None,
                       block_rows: int | None = None) -> Iterator[str]:
        """:meth:`to_liblinear`'s text in pieces: the header, then the weight rows (one line
        a feature, then the bias's) ``block_rows`` lines at a time (default
        :data:`LIBLINEAR_BLOCK_ROWS`), so that a writer of a wide model (a download, a file)
        holds one block's text, never the whole file's (16.8 million features: 0.5 GB of
        text)."""
        block_rows = max(1, block_rows or LIBLINEAR_BLOCK_ROWS)
        if bias_scale is None:
            bias_scale = float(self.metadata.get("params", {}).get("bias_scale", 1.0))
        has_bias = bool(np.any(self.intercept_ != 0.0)) or (
            self.metadata.get("params", {}).get("bias", "regularized") != "none"
        )
        solver_type = self.liblinear_solver_type()
        # LIBLINEAR's label order puts the positive class first for binary problems.
        order = [1, 0] if self.n_classes == 2 else list(range(self.n_classes))
        labels = " ".join(label_key(self.classes_[i]) for i in order)
        yield "\n".join([
            f"solver_type {solver_type}",
            f"nr_class {self.n_classes}",
            f"label {labels}",
            f"nr_feature {self.n_features_in_}",
            f"bias {bias_scale!r}" if has_bias else "bias -1",
            "w",
        ]) + "\n"
        weights = self.coef_.T  # (n_features, n_rows)
        n_features = weights.shape[0]
        rows = n_features + (1 if has_bias else 0)
        for start in range(0, rows, block_rows):
            stop = min(rows, start + block_rows)
            block = weights[start:min(stop, n_features)]
            if stop > n_features:  # the bias's row closes the last block
                block = np.vstack([block, self.intercept_[None, :] / bias_scale])
            # repr of each weight (the shortest text that reads back the same float64):
            # tolist() gives Python floats at once, not a NumPy scalar per weight; one column
            # (a binary model) is joined whole, without a list per row
            if block.shape[1] == 1:
                yield " \n".join(map(repr, block[:, 0].tolist())) + " \n"
            else:
                yield "".join(" ".join(map(repr, row)) + " \n" for row in block.tolist())

