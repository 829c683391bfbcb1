"""Predictions in the web process: parsing examples, a cache of loaded models, scoring.

The web process only ever calls the serial kernels (``parallel=False``): Numba's parallel
kernels belong to the worker processes, never to request threads.
"""

from __future__ import annotations

import math
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

_INDEX = re.compile(r"\d+")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


class ExampleFormatError(ValueError):
    """An example that is not ``index:value`` pairs; ``token`` is the offending one."""

    def __init__(self, message: str, token: str | None = None):
        super().__init__(message)
        self.token = token


def parse_features(text: str, n_features: int, *, zero_based: bool = False) -> sp.csr_matrix:
    """One example from SVMlight feature text (``"3:0.5 7:1"``) as a 1 x n_features row.

    Strict: every token is ``index:value`` with a decimal index (>= 1, or >= 0 when
    ``zero_based``) and a finite decimal value, each index at most once, in any order, and no
    index past the model's ``n_features`` (batch predictions refuse those too).
    """
    columns: dict[int, float] = {}
    for token in text.split():
        index_text, colon, value_text = token.partition(":")
        if not colon or not _INDEX.fullmatch(index_text) or not _NUMBER.fullmatch(value_text):
            raise ExampleFormatError(
                f"expected index:value with a decimal index and value, got {token!r}", token)
        index, value = int(index_text), float(value_text)
        if not math.isfinite(value):
            raise ExampleFormatError(f"value out of range in {token!r}", token)
        if index == 0 and not zero_based:
            raise ExampleFormatError(f"feature indices start at 1, got {token!r}", token)
        column = index if zero_based else index - 1
        if column in columns:
            raise ExampleFormatError(f"feature {index} given twice", token)
        if column >= n_features:
            raise ExampleFormatError(beyond_message(index, n_features, zero_based), token)
        columns[column] = value
    return rows_to_csr([columns], n_features)


def beyond_message(index: int, n_features: int, zero_based: bool) -> str:
    """Why a feature index past the model's features is refused."""
    largest = n_features - 1 if zero_based else n_features
    return (f"feature index {index} is beyond the model's {n_features} features (largest "
            f"index {largest})")


def rows_to_csr(rows: Sequence[dict[int, float]], n_features: int) -> sp.csr_matrix:
    """Rows of {column: value} (every column < ``n_features``) as a CSR matrix."""
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    for row in rows:
        for column in sorted(row):
            indices.append(column)
            data.append(row[column])
        indptr.append(len(indices))
    return sp.csr_matrix(
        (np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64),
         np.asarray(indptr, dtype=np.int64)),
        shape=(len(rows), n_features))


def label_unlabelled_lines(body: bytes) -> bytes:
    """SVMlight text whose lines may omit the label: give such lines the label 0.

    A line without label starts with a feature (its first token holds a ``:``).  Lines keep
    their numbers, so parse errors point at the line the client sent.
    """
    lines = body.split(b"\n")
    for number, line in enumerate(lines):
        stripped = line.lstrip(b" \t")
        first = stripped.split(None, 1)[0] if stripped.strip() else b""
        if b":" in first and not first.startswith(b"#"):
            lines[number] = b"0 " + stripped
    return b"\n".join(lines)


def predictions(model, X) -> list[dict[str, Any]]:
    """Label and decision values of each row of ``X`` (serial kernels)."""
    raw = model.decision_function(X, parallel=False)
    labels = model.labels_from_scores(raw)  # scored once, not again by predict()
    scores = np.asarray(raw, dtype=np.float64).reshape(X.shape[0], -1)
    return [
        {"label": float(label), "decision_values": [float(v) for v in row]}
        for label, row in zip(labels, scores, strict=True)
    ]


class ModelCache:
    """A thread-safe LRU cache of loaded models, keyed by model id, bounded in bytes.

    A model's size is the length of its stored archive (the arrays it holds once loaded).
    A model larger than the whole cache is loaded for the request and not kept.
    """

    def __init__(self, max_bytes: int):
        self._max_bytes = max_bytes
        self._models: OrderedDict[uuid.UUID, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size_bytes(self) -> int:
        """Bytes of the models held now."""
        return self._bytes

    def get(self, model_id: uuid.UUID, load_bytes: Callable[[], bytes]):
        """The model, loaded from ``load_bytes()`` unless cached."""
        with self._lock:
            entry = self._models.get(model_id)
            if entry is not None:
                self._models.move_to_end(model_id)
                return entry[0]
        import solvers

        artifact = load_bytes()
        model = solvers.load_model(artifact)
        size = len(artifact)
        if size > self._max_bytes:
            return model
        with self._lock:
            if model_id not in self._models:
                self._models[model_id] = (model, size)
                self._bytes += size
            self._models.move_to_end(model_id)
            while self._bytes > self._max_bytes:
                _, (_, evicted) = self._models.popitem(last=False)
                self._bytes -= evicted
        return model

    def discard(self, model_id: uuid.UUID) -> None:
        """Forget a model (it was deleted)."""
        with self._lock:
            entry = self._models.pop(model_id, None)
            if entry is not None:
                self._bytes -= entry[1]
