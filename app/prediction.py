"""Predictions in the web process: parsing examples and batches, a cache of loaded models,
scoring, and the JSON of the answers.

The web process only ever calls the serial kernels (``parallel=False``): Numba's parallel
kernels belong to the worker processes, never to request threads.  The routes validate the
request, call :func:`predict_json_batch` or feed a :class:`PredictionLines` (in worker
threads) or the single-example functions, and send the bytes these return.
"""

from __future__ import annotations

import json
import math
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from pydantic import ValidationError

from app.core.principals import Principal
from app.crud import models as crud_models
from app.errors import ContentTooLarge, InvalidRequest, MalformedInput, NotFound, limit_exceeded

_INDEX = re.compile(r"\d+")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


class ExampleFormatError(ValueError):
    """An example that is not ``index:value`` pairs; ``token`` is the offending one."""

    def __init__(self, message: str, token: str | None = None):
        super().__init__(message)
        self.token = token


def parse_columns(text: str, n_features: int, *, zero_based: bool = False) -> dict[int, float]:
    """One example from SVMlight feature text (``"3:0.5 7:1"``) as {column: value}.

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
    return columns


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


class NotPlainRows(ValueError):
    """A JSON body that :func:`json_rows_to_csr` does not take (anything but plain rows of
    digit keys and finite numbers): the caller validates it the slow way, which names the
    error."""


_NOT_PLAIN = NotPlainRows()


def _reject_constant(name: str):
    raise _NOT_PLAIN


def json_rows_to_csr(body: bytes, n_features: int, *, zero_based: bool = False):
    """The rows of a batch-prediction body ``{"rows": [{"3": 0.5, ...}, ...]}`` as the arrays
    ``(indptr, indices as sent, values, row of each entry)``, read straight into arrays.

    Each row object is turned into array entries as soon as the JSON decoder has read it, so
    no list of 60,000 dicts (or of validated models) is ever built: those small objects left
    the web process's small-object heap fragmented (idle memory crept up after every large
    JSON prediction).  Raises :class:`NotPlainRows` for anything but an object whose only key
    is ``rows``, a non-empty list of objects with decimal-digit keys (each at most once) and
    finite numeric values: the caller then validates it with the request model, for its
    messages.  Index bounds are not checked here.
    """
    from array import array

    indptr = array("q", [0])
    columns = array("q")
    values = array("d")
    row_marker = object()
    top: dict = {}

    def hook(pairs):
        if len(pairs) == 1 and pairs[0][0] == "rows" and not isinstance(pairs[0][1], dict):
            top["rows"] = pairs[0][1]
            return top
        start = len(columns)
        for key, value in pairs:
            if not (key.isdigit() and key.isascii()) or type(value) not in (float, int):
                raise _NOT_PLAIN
            columns.append(int(key))
            values.append(value)  # an int too large for a double raises OverflowError
        if len(columns) - start > 1 and len(set(columns[start:])) != len(columns) - start:
            raise _NOT_PLAIN  # a feature given twice: the request model's rule decides
        indptr.append(len(columns))
        return row_marker

    try:
        parsed = json.loads(body, object_pairs_hook=hook, parse_constant=_reject_constant)
    except (ValueError, OverflowError, RecursionError, TypeError):
        raise _NOT_PLAIN from None
    rows = top.get("rows")
    if (parsed is not top or not isinstance(rows, list) or not rows
            or len(rows) != len(indptr) - 1 or any(r is not row_marker for r in rows)):
        raise _NOT_PLAIN
    data = np.frombuffer(values, dtype=np.float64).copy()
    if not np.all(np.isfinite(data)):
        raise _NOT_PLAIN
    sent = np.frombuffer(columns, dtype=np.int64).copy()
    pointers = np.frombuffer(indptr, dtype=np.int64).copy()
    row_of = np.repeat(np.arange(len(rows), dtype=np.int64), np.diff(pointers))
    return pointers, sent, data, row_of


_COLON, _HASH, _NEWLINE = ord(":"), ord("#"), ord("\n")
_BLANK = np.zeros(256, dtype=bool)
_BLANK[list(b" \t\r\x0b\x0c")] = True  # whitespace within a line
_WHITESPACE = _BLANK.copy()
_WHITESPACE[_NEWLINE] = True
_NO_LABEL = np.frombuffer(b"0 ", dtype=np.uint8)


def _first_where(mask: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each position of ``at`` (sorted), the first position at or after it where
    ``mask`` holds (``len(mask)`` if none)."""
    positions = np.flatnonzero(mask)
    return np.append(positions, mask.shape[0])[np.searchsorted(positions, at)]


def label_unlabelled_lines(text: bytes) -> bytes:
    """SVMlight lines whose label may be missing, each such line given the label 0.

    A line without label starts (after blanks) with a feature: its first token holds a ``:``
    (and is no ``#`` comment).  Lines keep their numbers, so parse errors point at the line
    the client sent.  Vectorized: splitting 16 MB of newlines into Python lines took 25 s
    and 1.6 GB (issue 49); call it on pieces of a body (:class:`PredictionLines`), its
    arrays take some 30 bytes a byte of ``text``.
    """
    data = np.frombuffer(text, dtype=np.uint8)
    end = data.shape[0]
    if end == 0:
        return text
    starts = np.flatnonzero(data[:-1] == _NEWLINE)
    starts += 1
    starts = np.concatenate(([0], starts))
    heads = starts.copy()  # each line's first byte not blank: its first token
    indented = _BLANK[data[heads]]
    if indented.any():
        heads[indented] = np.minimum(_first_where(~_BLANK[data], heads[indented]), end - 1)
    first = data[heads]
    lines = np.flatnonzero((first != _HASH) & ~_WHITESPACE[first])  # neither blank nor comment
    tokens = heads[lines]
    with_colon = _first_where(data == _COLON, tokens) < _first_where(_WHITESPACE[data], tokens)
    unlabelled = lines[with_colon]
    at = starts[unlabelled]
    if at.shape[0] == 0:
        return text
    return np.insert(data, np.repeat(at, 2), np.tile(_NO_LABEL, at.shape[0])).tobytes()


class PredictionLines:
    """The SVMlight lines of a batch prediction (labels optional), parsed as they arrive:
    :meth:`feed` it the body in pieces of any size, then :meth:`finish` for the examples'
    matrix.  The rows are counted as they are parsed, by the library's stream parser
    (:class:`solvers.SVMLightStreamParser`, the uploads' too), which stops at the first row
    past ``max_rows`` (the 413 naming ``SVMSVC_MAX_PREDICT_ROWS``); a body is never held
    whole, nor split into Python lines."""

    def __init__(self, n_features: int, zero_based: bool, max_rows: int):
        import solvers

        self.max_rows = max_rows
        self._parser = solvers.SVMLightStreamParser(
            n_features=n_features, zero_based=zero_based, decompress=None, max_rows=max_rows)
        self._partial = bytearray()  # the start of a line whose end has not arrived

    def feed(self, piece: bytes) -> None:
        """Parse the lines ``piece`` completes."""
        start = len(self._partial)
        self._partial += piece
        end = self._partial.rfind(b"\n", start) + 1
        if end:
            lines = bytes(self._partial[:end])
            del self._partial[:end]
            self._parse(lines)

    def finish(self) -> sp.csr_matrix:
        """The examples, once the body has ended."""
        if self._partial:
            lines, self._partial = bytes(self._partial), bytearray()
            self._parse(lines)
        return self._capped(self._parser.finish).X

    def _parse(self, lines: bytes) -> None:
        self._capped(self._parser.feed, label_unlabelled_lines(lines))

    def _capped(self, step, *args):
        import solvers

        try:
            return step(*args)
        except solvers.SVMLightLimitError:  # rows: the only cap this parser has
            raise _too_many_rows(None, self.max_rows) from None


def predictions_json(model, X) -> bytes | None:
    """The JSON of :class:`app.schemas.PredictionsPublic` for the rows of ``X``, written
    directly (no dict and no response model per row); None if a score is not finite (let
    the response model say how it is sent)."""
    from solvers.data.dataset import label_value

    raw, chances = model.scores_and_probabilities(X, parallel=False)
    predicted = model.labels_from_scores(raw)
    labels = [json.dumps(label_value(v)) for v in predicted]
    scores = np.asarray(raw, dtype=np.float64).reshape(X.shape[0], -1)
    if not np.all(np.isfinite(scores)):
        return None
    extras = [json.dumps(task_fields(model, v))[1:-1] for v in predicted] \
        if model.task in TASK_FIELDS else None
    if extras is not None:
        parts = ",".join(
            f'{{"label":{label},"decision_values":[{",".join(map(repr, row))}],{extra}}}'
            for label, row, extra in zip(labels, scores.tolist(), extras, strict=True))
    elif chances is None:
        parts = ",".join(
            f'{{"label":{label},"decision_values":[{",".join(map(repr, row))}]}}'
            for label, row in zip(labels, scores.tolist(), strict=True))
    else:
        parts = ",".join(
            f'{{"label":{label},"decision_values":[{",".join(map(repr, row))}],'
            f'"probabilities":[{",".join(map(repr, p))}]}}'
            for label, row, p in zip(labels, scores.tolist(), chances.tolist(), strict=True))
    classes = "" if chances is None else f',"classes":{json.dumps(probability_classes(model))}'
    return f'{{"data":[{parts}],"count":{X.shape[0]}{classes}}}'.encode()


#: the tasks whose predictions say more than a label: a regression's real ``value`` (its
#: ``label`` too), a one-class model's ``outlier`` flag (label -1: outside the support)
TASK_FIELDS = ("regression", "one_class")


def task_fields(model, predicted) -> dict[str, Any]:
    """What a prediction of ``model`` says beside its label and decision values, for the
    label ``predicted``: ``{"value": v}`` (regression), ``{"outlier": bool}`` (one-class),
    nothing for a classifier."""
    if model.task == "regression":
        return {"value": float(predicted)}
    if model.task == "one_class":
        return {"outlier": bool(predicted == -1)}
    return {}


def probability_classes(model) -> list:
    """The labels of a calibrated model's probabilities, in their order (its classes), as
    JSON values."""
    from solvers.data.dataset import label_value

    return [label_value(c) for c in model.classes_]


def predictions(model, X) -> list[dict[str, Any]]:
    """Label and decision values of each row of ``X`` (serial kernels)."""
    from solvers.data.dataset import label_value

    raw, chances = model.scores_and_probabilities(X, parallel=False)
    labels = model.labels_from_scores(raw)  # scored once, not again by predict()
    scores = np.asarray(raw, dtype=np.float64).reshape(X.shape[0], -1)
    out = [
        {"label": label_value(label), "decision_values": [float(v) for v in row],
         **task_fields(model, label)}
        for label, row in zip(labels, scores, strict=True)
    ]
    if chances is not None:
        for entry, row in zip(out, chances.tolist(), strict=True):
            entry["probabilities"] = row
    return out


def predict_linear_one(model, columns: dict[int, float]) -> bytes | None:
    """The JSON of :class:`app.schemas.PredictionPublic` for one example of a linear model,
    scored by ``LinearModel.decision_example`` (the same serial kernels and arithmetic as
    ``decision_function``, without building a SciPy matrix, which cost more than the rest of
    a prediction; a linear regression model's value alike); None when ``model`` is not
    linear (use :func:`predictions`).

    Cheap enough for the event loop: its time is linear in the example's features, which the
    query string bounds.
    """
    from solvers.models.linear import LinearModel
    from solvers.models.regression import RegressionModel

    if type(model) not in (LinearModel, RegressionModel) or model.calibrated:
        return None  # the general path (it adds a calibrated model's probabilities)
    order = sorted(columns)
    raw = model.decision_example(np.array(order, dtype=np.int32),
                                 np.array([columns[c] for c in order], dtype=np.float64))
    from solvers.data.dataset import label_value

    predicted = model.labels_from_scores(raw)[0]
    values = raw.ravel().tolist()
    try:
        return json.dumps({"label": label_value(predicted), "decision_values": values,
                           **task_fields(model, predicted)}, allow_nan=False).encode()
    except ValueError:  # a non-finite score: let the response model say how it is sent
        return None


class ModelCache:
    """A thread-safe LRU cache of loaded models, keyed by model id, bounded in bytes.

    A model's size is the length of its stored archive (the arrays it holds once loaded).
    A model larger than the whole cache is loaded for the request and not kept.  Each entry
    keeps the model's owner, so that a cached model is answered to its owner only, as a
    stored one is (:func:`load_model`).
    """

    def __init__(self, max_bytes: int):
        self._max_bytes = max_bytes
        self._models: OrderedDict[uuid.UUID, tuple[Any, int, str]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size_bytes(self) -> int:
        """Bytes of the models held now."""
        return self._bytes

    def peek(self, model_id: uuid.UUID) -> tuple[Any, str] | None:
        """(model, owner) if the model is cached (marked as used), else None; never loads."""
        with self._lock:
            entry = self._models.get(model_id)
            if entry is None:
                return None
            self._models.move_to_end(model_id)
            return entry[0], entry[2]

    def get(self, model_id: uuid.UUID,
            load_bytes: Callable[[], tuple[bytes, str]]) -> tuple[Any, str]:
        """(model, owner), loaded from ``load_bytes()`` (the archive and the owner) unless
        cached."""
        found = self.peek(model_id)
        if found is not None:
            return found
        import solvers

        artifact, owner = load_bytes()
        model = solvers.load_model(artifact)
        size = len(artifact)
        if size > self._max_bytes:
            return model, owner
        with self._lock:
            if model_id not in self._models:
                self._models[model_id] = (model, size, owner)
                self._bytes += size
            self._models.move_to_end(model_id)
            while self._bytes > self._max_bytes:
                _, (_, evicted, _) = self._models.popitem(last=False)
                self._bytes -= evicted
        return model, owner

    def discard(self, model_id: uuid.UUID) -> None:
        """Forget a model (it was deleted)."""
        with self._lock:
            entry = self._models.pop(model_id, None)
            if entry is not None:
                self._bytes -= entry[1]


# -- the operations the routes call ----------------------------------------------------------

def load_model(cache: ModelCache, sessions, model_id: uuid.UUID, principal: Principal):
    """The model object, from the cache or from its archive in the database
    (:class:`NotFound` when there is no such model for ``principal``)."""

    def read_artifact() -> tuple[bytes, str]:
        found = crud_models.artifact(sessions, model_id, principal)
        if found is None:
            raise NotFound(f"model {model_id} not found")
        return found

    model, owner = cache.get(model_id, read_artifact)
    if not principal.may_see(owner):
        raise NotFound(f"model {model_id} not found")
    return model


def example_columns(model, x: str, zero_based: bool) -> dict[int, float]:
    """The example of ``GET /models/{id}/predict`` (``x``) for ``model``: :class:`MalformedInput`
    naming the token at fault."""
    try:
        return parse_columns(x, model.n_features_in_, zero_based=zero_based)
    except ExampleFormatError as exc:
        raise MalformedInput(f"x: {exc}", token=exc.token) from None


def example_json(model, columns: dict[int, float]) -> bytes:
    """The JSON of :class:`app.schemas.PredictionPublic` for one example of any model (serial
    kernels; call it off the event loop, :func:`predict_linear_one` is the fast path)."""
    # app.schemas imports the solver registry (and so Numba): not at module level, since a
    # spawned worker imports this module (through app.evaluation) before it sets its threads.
    from app.schemas import PredictionPublic

    result = predictions(model, rows_to_csr([columns], model.n_features_in_))[0]
    if "probabilities" in result:
        result["classes"] = probability_classes(model)
    return PredictionPublic(**result).model_dump_json(exclude_none=True).encode()


def _too_many_rows(rows: int | None, max_rows: int) -> ContentTooLarge:
    return limit_exceeded("the batch's rows", "max_predict_rows", max_rows, "rows",
                          actual=rows, error=ContentTooLarge)


def predict_json_batch(cache: ModelCache, sessions, model_id: uuid.UUID, principal: Principal,
                       body: bytes, zero_based: bool, max_rows: int | None = None) -> bytes:
    """The JSON of :class:`app.schemas.PredictionsPublic` for the JSON rows of ``body``
    (``{"rows": [...]}``), at most ``max_rows`` of them (the answer grows with the rows, not
    the bytes).  SVMlight lines are parsed as they arrive instead (:class:`PredictionLines`,
    then :func:`predictions_answer`)."""
    model = load_model(cache, sessions, model_id, principal)
    X = json_rows_matrix(body, model.n_features_in_, zero_based)
    if max_rows is not None and X.shape[0] > max_rows:
        raise _too_many_rows(X.shape[0], max_rows)
    del body
    return predictions_answer(model, X)


def predictions_answer(model, X) -> bytes:
    """The JSON of :class:`app.schemas.PredictionsPublic` for the rows of ``X``."""
    encoded = predictions_json(model, X)
    if encoded is not None:
        return encoded
    from app.schemas import PredictionPublic, PredictionsPublic

    results = predictions(model, X)
    classes = probability_classes(model) if results and "probabilities" in results[0] else None
    return PredictionsPublic(data=[PredictionPublic(**r) for r in results], count=len(results),
                             classes=classes).model_dump_json(exclude_none=True).encode()


def _validated_json_rows(body: bytes) -> list[dict[int, float]]:
    from app.schemas import PredictBatchRequest

    try:
        return PredictBatchRequest.model_validate_json(body).rows
    except ValidationError as exc:
        raise InvalidRequest("; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False))) from None


def json_rows_matrix(body: bytes, n_features: int, zero_based: bool) -> sp.csr_matrix:
    """The JSON rows as a CSR matrix: read straight into arrays when they are plain rows,
    else validated by the request model (which names what is wrong); :class:`InvalidRequest`
    for an index that the model cannot take, naming the first row that has one."""
    offset = 0 if zero_based else 1
    try:
        indptr, sent, data, row_of = json_rows_to_csr(body, n_features, zero_based=zero_based)
    except NotPlainRows:
        rows = _validated_json_rows(body)  # the request model's message, or the rows
        indptr = np.cumsum([0] + [len(row) for row in rows], dtype=np.int64)
        sent = np.fromiter((i for row in rows for i in row), dtype=np.int64,
                           count=int(indptr[-1]))
        data = np.fromiter((v for row in rows for v in row.values()), dtype=np.float64,
                           count=int(indptr[-1]))
        row_of = np.repeat(np.arange(len(rows), dtype=np.int64), np.diff(indptr))
        del rows
    bad = (sent - offset >= n_features) | ((sent == 0) if offset else False)
    if bad.any():
        number = int(row_of[np.argmax(bad)])
        in_row = sent[row_of == number]
        if offset and (in_row == 0).any():
            raise InvalidRequest(f"rows.{number}: feature indices start at 1")
        raise InvalidRequest(
            f"rows.{number}: {beyond_message(int(in_row.max()), n_features, zero_based)}")
    X = sp.csr_matrix((data, (sent - offset).astype(np.int32), indptr.astype(np.int32)),
                      shape=(len(indptr) - 1, n_features))
    X.sort_indices()
    return X
