"""The model interface, its safe serialization and the registry of model kinds.

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

from solvers.calibration import probabilities
from solvers.data.dataset import Dataset, as_csr, label_key
from solvers.models import onnx_export
from solvers.models.onnx_export import GraphOutputs, ModelExportError, OnnxGraph

FORMAT_NAME = "svmsvc-model"
FORMAT_VERSION = 1

_MODEL_KINDS: dict[str, type[Model]] = {}


class ModelFormatError(ValueError):
    """The bytes are not a model this library can read."""


def register_model_kind(cls):
    """Class decorator: make ``cls`` loadable by :func:`load_model` under ``cls.kind``."""
    _MODEL_KINDS[cls.kind] = cls
    return cls


def task_of_kind(kind: str) -> str:
    """What a model of ``kind`` predicts (its class's ``task``: classification, ordinal,
    regression or one_class), read without loading one; classification for a kind this
    version does not know."""
    cls = _MODEL_KINDS.get(kind)
    return cls.task if cls is not None else "classification"


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


def model_classes(classes) -> np.ndarray:
    """A model's ``classes_`` in the labels' own type: ints, floats or strings (an archive
    holds each without pickling; models written before labels kept their type hold floats,
    and predict floats)."""
    classes = np.asarray(classes)
    if classes.dtype.kind in "iub":
        return classes.astype(np.int64)
    if classes.dtype.kind in "USO":
        return classes.astype(str)
    return classes.astype(np.float64)


class Model(ABC):
    """A trained model: a classifier unless its ``task`` says otherwise (the ``params.task``
    it was trained for: ``solvers.base.TaskName``)."""

    kind: ClassVar[str]
    #: what it predicts: classification (labels of ``classes_``), ordinal (ranks), regression
    #: (real values) or one_class (+1 inside the estimated support, -1 outside)
    task: ClassVar[str] = "classification"

    classes_: np.ndarray
    n_features_in_: int
    metadata: dict[str, Any]

    def __init__(self, classes: np.ndarray, n_features: int,
                 metadata: dict[str, Any] | None = None):
        """What every model records: its classes (as :func:`model_classes` gives them), the
        number of features it was trained on, and its metadata (a copy)."""
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.metadata = dict(metadata or {})

    @abstractmethod
    def decision_function(self, X, *, parallel: bool = False) -> np.ndarray:
        """Scores: shape (n,) for binary models, (n, n_classes) otherwise.

        ``parallel=True`` uses the multi-threaded kernels (worker processes only: the web
        process must call the serial ones from request threads).
        """

    def predict(self, X, *, parallel: bool = False) -> np.ndarray:
        return self.labels_from_scores(self.decision_function(X, parallel=parallel))

    def labels_from_scores(self, scores: np.ndarray) -> np.ndarray:
        """The labels of rows whose ``decision_function`` is ``scores`` (so a caller that
        wants both scores the rows once)."""
        if scores.ndim == 1:
            return np.where(scores > 0, self.classes_[1], self.classes_[0])
        return self.classes_[np.argmax(scores, axis=1)]

    @property
    def calibrated(self) -> bool:
        """Whether the model has probabilities (trained with ``probability=True``)."""
        return "platt" in self.metadata or "pairwise_platt" in self.metadata

    def predict_proba(self, X, *, parallel: bool = False) -> np.ndarray:
        """(n, n_classes) probabilities from the sigmoids ``train(..., probability=True)``
        fitted (``solvers.calibration``), columns in ``classes_``'s order."""
        proba = self.scores_and_probabilities(X, parallel=parallel)[1]
        if proba is None:
            raise ValueError("this model has no probabilities: train it with "
                             "probability=True")
        return proba

    def scores_and_probabilities(self, X, *,
                                 parallel: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """(``decision_function(X)``, ``predict_proba(X)``, or None for a model without
        probabilities), the rows scored once: for callers that report both."""
        decision = self.decision_function(X, parallel=parallel)
        platt = self.metadata.get("platt")
        return decision, None if platt is None else probabilities(decision, np.asarray(platt))

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

    # -- ONNX ----------------------------------------------------------------------------------
    def to_onnx(self, max_constant_bytes: int | None = None) -> bytes:
        """The model as an ONNX file (:mod:`solvers.models.onnx_export`, which needs the
        ``onnx`` package): input ``X``, dense float64 rows of ``n_features_in_`` features
        (:meth:`onnx_input`); outputs ``label``, ``scores`` and, for a model trained with
        ``probability=True``, ``probabilities``: what ``predict``, ``decision_function`` and
        ``predict_proba`` give.  A kind without an ONNX form raises
        :class:`~solvers.models.onnx_export.ModelExportError` saying why;
        ``max_constant_bytes`` bounds the graph's constants (weights, support vectors; the
        file's size, give or take its few kB of nodes), a graph past it raising
        :class:`~solvers.models.onnx_export.ConstantsTooLarge` before it is built."""
        graph = OnnxGraph(max_constant_bytes=max_constant_bytes or onnx_export.MAX_CONSTANT_BYTES)
        return onnx_export.serialize(graph, self, self._onnx_outputs(graph, onnx_export.INPUT))

    def _onnx_outputs(self, graph: OnnxGraph, X: str) -> GraphOutputs:
        """The kind's prediction of the rows ``X`` as nodes of ``graph``."""
        raise ModelExportError(f"a {self.kind} model has no ONNX form")

    def onnx_input(self, X) -> np.ndarray:
        """The rows ``X`` (CSR, dense or a Dataset) as the ONNX graph's input: dense float64
        with ``n_features_in_`` columns (:func:`as_feature_matrix`'s rule)."""
        return as_feature_matrix(X, self.n_features_in_).toarray().astype(np.float64,
                                                                           copy=False)

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
    """Read a model written by :meth:`Model.to_bytes` / :meth:`Model.save`, a LIBLINEAR
    model file (text starting ``solver_type``: ``LinearModel.from_liblinear``) or a LIBSVM one
    (text starting ``svm_type``: ``KernelModel.from_libsvm``).  Anything
    else is a :class:`ModelFormatError` that says what the file is not."""
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as f:
            source = f.read()
    elif not isinstance(source, bytes | bytearray | memoryview):
        source = source.read()
    source = bytes(source)
    for start, library, read in ((b"solver_type ", "LIBLINEAR",
                                  lambda text: _MODEL_KINDS["linear"].from_liblinear(text)),
                                 (b"svm_type ", "LIBSVM",
                                  lambda text: _MODEL_KINDS["kernel"].from_libsvm(text))):
        if source.startswith(start):
            try:
                text = source.decode("ascii")
            except UnicodeDecodeError:
                raise ModelFormatError(f"not a {library} model: not ASCII text") from None
            return read(text)
    if not source.startswith(b"PK"):
        raise ModelFormatError("not a model archive (nor a LIBLINEAR or LIBSVM model file)")
    source = io.BytesIO(source)
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
