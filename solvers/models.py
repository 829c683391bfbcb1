"""Trained models: prediction and safe serialization.

Every model follows scikit-learn's conventions: ``classes_`` sorted ascending (for a binary
problem ``classes_[1]`` is the positive class), ``decision_function`` and ``predict``.
Callers depend only on :class:`Model`; later model kinds (kernel, ordinal) register themselves
with :func:`register_model_kind` and load through the same :func:`load_model`.

Serialization is an ``.npz`` archive (NumPy's zip of ``.npy`` files, read back with
``allow_pickle=False``): the model's arrays plus ``header``, a UTF-8 JSON document holding the
format name and version, the model kind, scalar fields and free-form metadata (solver,
parameters, objective, training statistics).  Nothing is ever pickled.
"""

from __future__ import annotations

import io
import json
import os
from abc import ABC, abstractmethod
from typing import Any, BinaryIO, ClassVar

import numpy as np
import scipy.sparse as sp

from solvers.core.sparse import csr_matmat, csr_matvec
from solvers.data.dataset import Dataset, as_csr, label_key

FORMAT_NAME = "svmsvc-model"
FORMAT_VERSION = 1

_MODEL_KINDS: dict[str, type[Model]] = {}


class ModelFormatError(ValueError):
    """The bytes are not a model this library can read."""


def register_model_kind(cls):
    """Class decorator: make ``cls`` loadable by :func:`load_model` under ``cls.kind``."""
    _MODEL_KINDS[cls.kind] = cls
    return cls


def as_feature_matrix(X, n_features: int) -> sp.csr_matrix:
    """CSR matrix with exactly ``n_features`` columns: features the model never saw are
    dropped (LIBLINEAR does the same), missing trailing columns are zero."""
    if isinstance(X, Dataset):
        X = X.X
    X = as_csr(X)
    if X.shape[1] > n_features:
        X = X[:, :n_features]
    elif X.shape[1] < n_features:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    return X


class Model(ABC):
    """A trained classifier."""

    kind: ClassVar[str]

    classes_: np.ndarray
    n_features_in_: int
    metadata: dict[str, Any]

    @abstractmethod
    def decision_function(self, X, *, parallel: bool = False) -> np.ndarray:
        """Scores: shape (n,) for binary models, (n, n_classes) otherwise.

        ``parallel=True`` uses the multi-threaded kernels (worker processes only: the web
        process must call the serial ones from request threads).
        """

    def predict(self, X, *, parallel: bool = False) -> np.ndarray:
        scores = self.decision_function(X, parallel=parallel)
        if scores.ndim == 1:
            return np.where(scores > 0, self.classes_[1], self.classes_[0])
        return self.classes_[np.argmax(scores, axis=1)]

    # -- serialization -----------------------------------------------------------------------
    @abstractmethod
    def _fields(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(JSON-able scalar fields, arrays) that describe the model completely."""

    @classmethod
    @abstractmethod
    def _from_fields(cls, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> Model:
        """Inverse of :meth:`_fields`."""

    def to_bytes(self) -> bytes:
        fields, arrays = self._fields()
        header = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "kind": self.kind,
            "fields": fields,
            "metadata": self.metadata,
        }
        header_bytes = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez(buffer, header=header_bytes, classes=np.asarray(self.classes_), **arrays)
        return buffer.getvalue()

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    @property
    def n_classes(self) -> int:
        return len(self.classes_)

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary (kind, classes, feature count, metadata)."""
        return {
            "kind": self.kind,
            "classes": [label_key(c) for c in self.classes_],
            "n_features": self.n_features_in_,
            "metadata": self.metadata,
        }


def load_model(source: bytes | str | os.PathLike | BinaryIO) -> Model:
    """Read a model written by :meth:`Model.to_bytes` / :meth:`Model.save`."""
    if isinstance(source, bytes | bytearray | memoryview):
        source = io.BytesIO(bytes(source))
    try:
        with np.load(source, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError) as exc:
        raise ModelFormatError(f"not a model archive: {exc}") from None
    if "header" not in arrays or "classes" not in arrays:
        raise ModelFormatError("not a model archive: header or classes missing")
    try:
        header = json.loads(arrays.pop("header").tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"unreadable model header: {exc}") from None
    if header.get("format") != FORMAT_NAME:
        raise ModelFormatError("not a model archive written by this library")
    if header.get("version", 0) > FORMAT_VERSION:
        raise ModelFormatError(
            f"model format version {header['version']} is newer than this library "
            f"(reads up to {FORMAT_VERSION})"
        )
    cls = _MODEL_KINDS.get(header.get("kind"))
    if cls is None:
        raise ModelFormatError(f"unknown model kind {header.get('kind')!r}")
    model = cls._from_fields(header["fields"], arrays)
    model.metadata = header.get("metadata", {})
    return model


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
        classes = np.asarray(classes, dtype=np.float64)
        expected_rows = 1 if classes.shape[0] == 2 else classes.shape[0]
        if classes.shape[0] < 2:
            raise ValueError("a model needs at least two classes")
        if coef.shape[0] != expected_rows or intercept.shape != (expected_rows,):
            raise ValueError(
                f"{classes.shape[0]} classes need {expected_rows} weight rows and intercepts, "
                f"got coef {coef.shape} and intercept {intercept.shape}"
            )
        self.coef_ = np.ascontiguousarray(coef)
        self.intercept_ = intercept
        self.classes_ = classes
        self.n_features_in_ = coef.shape[1]
        self.metadata = dict(metadata or {})

    def decision_function(self, X, *, parallel: bool = False) -> np.ndarray:
        X = as_feature_matrix(X, self.n_features_in_)
        if self.coef_.shape[0] == 1:
            return csr_matvec(X, self.coef_[0], self.intercept_[0], parallel=parallel)
        return csr_matmat(X, self.coef_, self.intercept_, parallel=parallel)

    def _fields(self):
        return {}, {"coef": self.coef_, "intercept": self.intercept_}

    @classmethod
    def _from_fields(cls, fields, arrays):
        return cls(arrays["coef"], arrays["intercept"], arrays["classes"])

    # -- LIBLINEAR -------------------------------------------------------------------------
    def to_liblinear(self, bias_scale: float | None = None) -> str:
        """The model in LIBLINEAR's model-file format (``predict`` reads it).

        LIBLINEAR stores the intercept as the weight of a constant feature of value ``bias``;
        ``bias_scale`` chooses that value (default: the training ``bias_scale`` from the
        metadata, or 1).  A model without intercept is written with ``bias -1``.
        """
        if bias_scale is None:
            bias_scale = float(self.metadata.get("params", {}).get("bias_scale", 1.0))
        has_bias = bool(np.any(self.intercept_ != 0.0)) or (
            self.metadata.get("params", {}).get("bias", "regularized") != "none"
        )
        loss = self.metadata.get("params", {}).get("loss", "squared_hinge")
        solver_type = "L2R_L1LOSS_SVC_DUAL" if loss == "hinge" else "L2R_L2LOSS_SVC"
        # LIBLINEAR's label order puts the positive class first for binary problems.
        order = [1, 0] if self.n_classes == 2 else list(range(self.n_classes))
        labels = " ".join(label_key(self.classes_[i]) for i in order)
        lines = [
            f"solver_type {solver_type}",
            f"nr_class {self.n_classes}",
            f"label {labels}",
            f"nr_feature {self.n_features_in_}",
            f"bias {bias_scale!r}" if has_bias else "bias -1",
            "w",
        ]
        weights = self.coef_.T  # (n_features, n_rows)
        if has_bias:
            weights = np.vstack([weights, self.intercept_[None, :] / bias_scale])
        lines.extend(" ".join(repr(float(v)) for v in row) + " " for row in weights)
        return "\n".join(lines) + "\n"

