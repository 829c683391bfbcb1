"""``/models``: list, get, delete, download, predict (one example or a batch), evaluate.

Predictions run in the web process with the serial kernels, on models kept in a small LRU
cache; a model's bytes are read from the database only when it is not cached.
"""

from __future__ import annotations

import enum
import uuid
from typing import Annotated

import numpy as np
import scipy.sparse as sp
from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import PlainTextResponse
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from app.api import API_PREFIX
from app.api.deps import (
    LimitQuery,
    ModelCacheDep,
    ModelDep,
    OffsetQuery,
    SessionDep,
    SessionsDep,
    SettingsDep,
    StoreDep,
    WriteSessionDep,
    fetch,
)
from app.api.errors import responses
from app.core.security import ADMIN, READ
from app.crud import models as crud_models
from app.db.models import Dataset, TrainedModel
from app.db.session import Sessions
from app.errors import (
    Conflict,
    ContentTooLarge,
    InvalidRequest,
    MalformedInput,
    NotFound,
    UnreadableBody,
    limit_exceeded,
)
from app.evaluation import evaluate
from app.prediction import (
    ExampleFormatError,
    ModelCache,
    NotPlainRows,
    beyond_message,
    json_rows_to_csr,
    label_unlabelled_lines,
    parse_columns,
    predict_linear_one,
    predictions,
    predictions_json,
    rows_to_csr,
)
from app.schemas import (
    EvaluateRequest,
    EvaluationPublic,
    ModelPublic,
    ModelsPublic,
    PredictBatchRequest,
    PredictionPublic,
    PredictionsPublic,
)

router = APIRouter(prefix=f"{API_PREFIX}/models", tags=["models"],
                   dependencies=[READ], responses=responses(401, 403, 503))


class DownloadFormat(enum.StrEnum):
    """npz: the library's model archive; liblinear: LIBLINEAR's model file (linear only)."""

    npz = "npz"
    liblinear = "liblinear"


SVMLIGHT_BODY_TYPES = ("text/plain", "application/octet-stream", "")
ZeroBased = Annotated[bool, Query(description="Feature indices start at 0.")]


def _load(cache: ModelCache, sessions: Sessions, model_id: uuid.UUID):
    """The model object (from the cache, or its bytes from the database)."""

    def read_artifact() -> bytes:
        artifact = crud_models.artifact(sessions, model_id)
        if artifact is None:
            raise NotFound(f"model {model_id} not found")
        return artifact

    return cache.get(model_id, read_artifact)


@router.get("", name="list", response_model=ModelsPublic, responses=responses(422))
def list_models(
    session: SessionDep,
    dataset_id: uuid.UUID | None = None,
    solver: str | None = None,
    offset: OffsetQuery = 0,
    limit: LimitQuery = 100,
) -> ModelsPublic:
    """Models, newest first, optionally only those of one dataset or solver."""
    rows, count = crud_models.list_page(session, dataset_id, solver, offset, limit)
    return ModelsPublic(data=[ModelPublic.from_row(row) for row in rows], count=count)


@router.get("/{model_id}", name="get", response_model=ModelPublic,
            responses=responses(404, 422))
def get_model(model: ModelDep) -> ModelPublic:
    """One model: solver, parameters, classes, objective, training statistics."""
    return ModelPublic.from_row(model)


@router.delete("/{model_id}", name="delete", status_code=status.HTTP_204_NO_CONTENT,
               dependencies=[ADMIN],
               responses=responses(404, 422))
def delete_model(model_id: uuid.UUID, session: WriteSessionDep, cache: ModelCacheDep) -> None:
    """Delete a model (its job stays, without a model)."""
    model = fetch(session, TrainedModel, model_id, "model")
    session.delete(model)
    session.commit()
    cache.discard(model.id)


@router.get(
    "/{model_id}/download",
    name="download",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {"schema": {
                         "type": "string", "format": "binary"}},
                                 "text/plain": {"schema": {"type": "string"}}},
                     "description": "npz: the model archive; liblinear: LIBLINEAR's "
                                    "model-file text"},
               **responses(404, 409, 422)},
)
def download_model(
    model: ModelDep,
    cache: ModelCacheDep,
    sessions: SessionsDep,
    format: DownloadFormat = DownloadFormat.npz,
) -> Response:
    """The model as an ``.npz`` archive (read back with ``solvers.load_model``), or in
    LIBLINEAR's model-file format (linear models only)."""
    if format is DownloadFormat.npz:
        return Response(
            model.artifact, media_type="application/octet-stream",
            headers={"Content-Disposition": f'attachment; filename="model-{model.id}.npz"'})
    loaded = _load(cache, sessions, model.id)
    to_liblinear = getattr(loaded, "to_liblinear", None)
    if to_liblinear is None:
        raise Conflict(f"{model.kind} models have no LIBLINEAR form; download format=npz")
    return PlainTextResponse(
        to_liblinear(),
        headers={"Content-Disposition": f'attachment; filename="model-{model.id}.txt"'})


@router.get("/{model_id}/predict", name="predict", response_model=PredictionPublic,
            responses=responses(404, 422))
async def predict_one(
    model_id: uuid.UUID,
    request: Request,
    x: Annotated[str, Query(description="One example as SVMlight features, e.g. "
                                        "'3:0.5 7:1' (space-separated index:value).")],
    zero_based: ZeroBased = False,
) -> PredictionPublic:
    """Label and decision value(s) of one example given in the query string."""
    # The hot path of the service: a cached linear model is scored on the event loop (tens
    # of microseconds, bounded by the query string's length) and its JSON written directly;
    # a model not cached is read in the thread pool, other models are scored there.
    state = request.app.state
    model = state.model_cache.peek(model_id)
    if model is None:
        model = await run_in_threadpool(_load, state.model_cache, state.sessions, model_id)
    try:
        columns = parse_columns(x, model.n_features_in_, zero_based=zero_based)
    except ExampleFormatError as exc:
        raise MalformedInput(f"x: {exc}", token=exc.token) from None
    body = predict_linear_one(model, columns)
    if body is not None:
        return Response(body, media_type="application/json")
    X = rows_to_csr([columns], model.n_features_in_)
    result = await run_in_threadpool(predictions, model, X)
    return PredictionPublic(**result[0])


@router.post(
    "/{model_id}/predict",
    name="predict-batch",
    response_model=PredictionsPublic,
    responses=responses(400, 404, 413, 422),
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/PredictBatchRequest"}},
        "application/octet-stream": {"schema": {
            "type": "string", "format": "binary",
            "description": "SVMlight lines (uncompressed); the label of each line is optional "
                           "and ignored. Also accepted as text/plain."}},
    }}},
)
async def predict_batch(
    model_id: uuid.UUID,
    request: Request,
    cache: ModelCacheDep,
    sessions: SessionsDep,
    settings: SettingsDep,
    zero_based: ZeroBased = False,
) -> PredictionsPublic:
    """Predict a batch: SVMlight text (``text/plain`` or ``application/octet-stream``; labels
    optional) or JSON rows (``application/json``: ``{"rows": [{"3": 0.5, "7": 1.0}, ...]}``).

    The body may not exceed ``SVMSVC_MAX_PREDICT_BYTES`` (413); it is parsed and scored in a
    worker thread, never on the event loop.
    """
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json" and content_type not in SVMLIGHT_BODY_TYPES:
        raise InvalidRequest(f"send SVMlight lines as text/plain or application/octet-stream, "
                            f"or JSON rows as application/json, not {content_type}")
    limit = settings.max_predict_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise limit_exceeded("the body", "max_predict_bytes", limit, "bytes",
                             error=ContentTooLarge)
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise limit_exceeded("the body", "max_predict_bytes", limit, "bytes",
                             error=ContentTooLarge)
    except ClientDisconnect:
        raise UnreadableBody("the request body was cut off before its end") from None
    return await run_in_threadpool(_predict_batch, cache, sessions, model_id, bytes(body),
                                   content_type == "application/json", zero_based)


def _json_rows(body: bytes) -> list[dict[int, float]]:
    try:
        return PredictBatchRequest.model_validate_json(body).rows
    except ValidationError as exc:
        raise InvalidRequest("; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False))) from None


def _predict_batch(cache: ModelCache, sessions: Sessions, model_id: uuid.UUID, body: bytes,
                   is_json: bool, zero_based: bool) -> Response | PredictionsPublic:
    """Predict the JSON rows of ``body``, or its SVMlight lines."""
    import solvers

    model = _load(cache, sessions, model_id)
    n_features = model.n_features_in_
    if is_json:
        X = _json_rows_matrix(body, n_features, zero_based)
    else:
        parser = solvers.SVMLightStreamParser(n_features=n_features, zero_based=zero_based,
                                              decompress=None)
        parser.feed(label_unlabelled_lines(body))
        X = parser.finish().X
    del body
    encoded = predictions_json(model, X)
    if encoded is not None:
        return Response(encoded, media_type="application/json")
    results = predictions(model, X)
    return PredictionsPublic(data=[PredictionPublic(**r) for r in results], count=len(results))


def _json_rows_matrix(body: bytes, n_features: int, zero_based: bool):
    """The JSON rows as a CSR matrix: read straight into arrays when they are plain rows,
    else validated by the request model (which names what is wrong); 422 for an index that
    the model cannot take, naming the first row that has one."""
    offset = 0 if zero_based else 1
    try:
        indptr, sent, data, row_of = json_rows_to_csr(body, n_features, zero_based=zero_based)
    except NotPlainRows:
        rows = _json_rows(body)  # 422 with the request model's message, or the rows
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


@router.post("/{model_id}/evaluate", name="evaluate", response_model=EvaluationPublic,
             responses=responses(400, 404, 422))
def evaluate_model(
    model_id: uuid.UUID,
    body: EvaluateRequest,
    cache: ModelCacheDep,
    sessions: SessionsDep,
    store: StoreDep,
) -> EvaluationPublic:
    """Accuracy, per-class counts and the confusion matrix of the model on a dataset.

    A dataset with more features than the model (another feature space) is a 422.
    """
    model = _load(cache, sessions, model_id)
    missing = InvalidRequest(f"dataset_id: dataset {body.dataset_id} not found")
    with sessions.read() as session:
        dataset = session.get(Dataset, body.dataset_id)
        if dataset is None:
            raise missing
        digest = dataset.sha256
        n_features = dataset.n_features
    if n_features > model.n_features_in_:
        raise InvalidRequest(f"dataset_id: the dataset has {n_features} features, the model "
                            f"{model.n_features_in_}: it belongs to another feature space")
    try:
        data = store.load(digest)
    except FileNotFoundError:  # deleted meanwhile
        raise missing from None
    return EvaluationPublic(dataset_id=body.dataset_id,
                            **evaluate(model, data, parallel=False))
