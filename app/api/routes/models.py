"""``/models``: list, get, delete, download, predict (one example or a batch), evaluate.

Predictions run in the web process with the serial kernels (:mod:`app.prediction`), on models
kept in a small LRU cache; a model's bytes are read from the database only when it is not
cached.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterator
from typing import Annotated

from fastapi import Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from app.api.bodies import receive_body, receive_parsed_text
from app.api.deps import (
    LimitQuery,
    ModelCacheDep,
    ModelDep,
    OffsetQuery,
    SessionDep,
    SessionsDep,
    SettingsDep,
    StoreDep,
    TagQuery,
    WriteSessionDep,
)
from app.api.errors import responses
from app.api.pages import bounded_page
from app.api.routes import item_delete, item_get, resource_router
from app.api.security import TRAIN, PrincipalDep
from app.crud import evaluations as crud_evaluations
from app.crud import models as crud_models
from app.errors import Conflict, InvalidRequest, LimitExceeded, limit_exceeded
from app.evaluation import evaluate_on_dataset
from app.prediction import (
    PredictionLines,
    example_columns,
    example_json,
    load_model,
    predict_json_batch,
    predict_linear_one,
    predictions_answer,
)
from app.schemas import (
    EvaluateRequest,
    EvaluationPublic,
    ModelPublic,
    ModelsPublic,
    PredictionPublic,
    PredictionsPublic,
    StoredEvaluationPublic,
    StoredEvaluationsPublic,
    TagsPatch,
)
from app.tags import parse_filters
from solvers.models import ModelExportError
from solvers.models.onnx_export import ConstantsTooLarge

router = resource_router("models")


class DownloadFormat(enum.StrEnum):
    """npz: the library's model archive; liblinear: LIBLINEAR's model file (linear only);
    libsvm: LIBSVM's model file (C-SVC kernel models trained by smo); onnx: an ONNX graph
    (every model kind: ``Model.to_onnx``)."""

    npz = "npz"
    liblinear = "liblinear"
    libsvm = "libsvm"
    onnx = "onnx"


DOWNLOAD_SUFFIX = {DownloadFormat.npz: "npz", DownloadFormat.liblinear: "txt",
                   DownloadFormat.libsvm: "txt", DownloadFormat.onnx: "onnx"}
"""The file name suffix of a download in each format."""

SVMLIGHT_BODY_TYPES = ("text/plain", "application/octet-stream", "")
ZeroBased = Annotated[bool, Query(description="Feature indices start at 0.")]
JSON = "application/json"


@router.get("", name="list", response_model=ModelsPublic, responses=responses(422))
def list_models(
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
    dataset_id: uuid.UUID | None = None,
    solver: str | None = None,
    tag: TagQuery = None,
    offset: OffsetQuery = 0,
    limit: LimitQuery = 100,
) -> ModelsPublic:
    """The caller's models (an admin's: all), newest first, optionally only those of one
    dataset or solver, or with given tags; a page ends at ``limit`` items or at
    ``SVMSVC_MAX_LIST_BYTES`` (``next`` links the rest)."""
    rows, count = crud_models.list_page(session, principal, dataset_id, solver, offset, limit,
                                        parse_filters(tag))
    return ModelsPublic(**bounded_page(request, [ModelPublic.from_row(row) for row in rows],
                                       count, offset))


@item_get(router, "/{model_id}", ModelPublic)
def get_model(model: ModelDep) -> ModelPublic:
    """One model: solver, parameters, classes, objective, training statistics."""
    return ModelPublic.from_row(model)


@router.patch("/{model_id}", name="update", dependencies=[TRAIN], response_model=ModelPublic,
              responses=responses(400, 404, 422))
def update_model(model_id: uuid.UUID, body: TagsPatch, session: WriteSessionDep,
                 principal: PrincipalDep) -> ModelPublic:
    """Change a model's tags: ``{"tags": {"key": "value", "old": null}}`` sets ``key`` and
    removes ``old`` (the others stay)."""
    return ModelPublic.from_row(crud_models.set_tags(session, model_id, body.tags, principal))


@item_delete(router, "/{model_id}")
def delete_model(model_id: uuid.UUID, session: WriteSessionDep, cache: ModelCacheDep,
                 principal: PrincipalDep) -> None:
    """Delete a model (its job stays, without a model)."""
    crud_models.delete(session, model_id, principal)
    cache.discard(model_id)


@router.get(
    "/{model_id}/download",
    name="download",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {"schema": {
                         "type": "string", "format": "binary"}},
                                 "text/plain": {"schema": {"type": "string"}}},
                     "description": "npz: the model archive; liblinear: LIBLINEAR's "
                                    "model-file text; libsvm: LIBSVM's model-file text; "
                                    "onnx: the ONNX model (application/octet-stream)"},
               **responses(404, 409, 422)},
)
def download_model(
    model: ModelDep,
    cache: ModelCacheDep,
    sessions: SessionsDep,
    principal: PrincipalDep,
    settings: SettingsDep,
    format: DownloadFormat = DownloadFormat.npz,
) -> Response:
    """The model as an ``.npz`` archive (read back with ``solvers.load_model``), in
    LIBLINEAR's model-file format (linear models only), in LIBSVM's (C-SVC kernel models
    trained by smo: ``svm-predict`` reads it), or as an ONNX model (any ONNX runtime serves
    it: input ``X``, dense float64 rows; outputs ``label``, ``scores`` and, for a calibrated
    model, ``probabilities``).

    Streamed with bounded memory: the archive is read from the database a chunk at a time
    (never whole in this process), the text formats are written a block of weight rows or
    support vectors at a time; the ONNX graph is built whole (protobuf has no piecewise
    writer), its constants (weights, dense support vectors) at most ``SVMSVC_MAX_ONNX_BYTES``:
    a model past it is a 422 naming the setting, refused before its graph is built."""
    attachment = {"Content-Disposition": f'attachment; filename="model-{model.id}.'
                                         f'{DOWNLOAD_SUFFIX[format]}"'}
    if format is DownloadFormat.npz:
        return StreamingResponse(
            crud_models.artifact_chunks(sessions, model.id, model.size_bytes),
            media_type="application/octet-stream",
            headers={**attachment, "Content-Length": str(model.size_bytes)})
    loaded = load_model(cache, sessions, model.id, principal)
    if format is DownloadFormat.onnx:
        try:
            graph = loaded.to_onnx(max_constant_bytes=settings.max_onnx_bytes)
        except ConstantsTooLarge as exc:
            raise limit_exceeded("the model's ONNX graph (its constants: weights, dense support "
                                 "vectors)", "max_onnx_bytes", exc.limit, "bytes",
                                 actual=exc.needed, error=LimitExceeded) from None
        except ModelExportError as exc:
            raise Conflict(f"{exc}; download format=npz") from None
        return Response(graph, media_type="application/octet-stream", headers=attachment)
    if format is DownloadFormat.libsvm:
        pieces = getattr(loaded, "iter_libsvm", None)
        refusal = (f"this {model.kind} model has no LIBSVM form (C-SVC models trained by smo "
                   f"have); download format=npz")
    else:
        pieces = getattr(loaded, "iter_liblinear", None)
        refusal = f"{model.kind} models have no LIBLINEAR form; download format=npz"
    if pieces is None:
        raise Conflict(refusal)
    text = pieces()
    try:  # the header: a model without the form refuses it here, before any byte is sent
        header = next(text)
    except ValueError:
        raise Conflict(refusal) from None
    return StreamingResponse(encoded(header, text), media_type="text/plain; charset=utf-8",
                             headers=attachment)


def encoded(first: str, rest: Iterator[str]) -> Iterator[bytes]:
    """A model file's text pieces as UTF-8 bytes (iterated in the thread pool by
    ``StreamingResponse``: formatting a block does not hold the event loop)."""
    yield first.encode()
    for piece in rest:
        yield piece.encode()


PREDICT_BATCH_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": {"$ref": "#/components/schemas/PredictBatchRequest"}},
    "application/octet-stream": {"schema": {
        "type": "string", "format": "binary",
        "description": "SVMlight lines (uncompressed); the label of each line is optional "
                       "and ignored. Also accepted as text/plain."}},
}}}
"""The request body of a batch prediction (read by hand: the route streams it)."""

ExampleQuery = Annotated[str, Query(description="One example as SVMlight features, e.g. "
                                                "'3:0.5 7:1' (space-separated index:value).")]


@router.get("/{model_id}/predict", name="predict", response_model=PredictionPublic,
            responses=responses(404, 422))
async def predict_one(
    model_id: uuid.UUID,
    request: Request,
    principal: PrincipalDep,
    x: ExampleQuery,
    zero_based: ZeroBased = False,
) -> PredictionPublic:
    """Label and decision value(s) of one example given in the query string."""
    # The hot path of the service: a cached linear model is scored on the event loop (tens
    # of microseconds, bounded by the query string's length) and its JSON written directly;
    # a model not cached is read in the thread pool, other models are scored there.
    state = request.app.state
    cached = state.model_cache.peek(model_id)
    if cached is not None and principal.may_see(cached[1]):
        model = cached[0]
    else:  # loaded (or answered 404 as a model of another owner is) in the thread pool
        model = await run_in_threadpool(load_model, state.model_cache, state.sessions,
                                        model_id, principal)
    columns = example_columns(model, x, zero_based)
    body = predict_linear_one(model, columns)
    if body is None:
        body = await run_in_threadpool(example_json, model, columns)
    return Response(body, media_type=JSON)


@router.post(
    "/{model_id}/predict",
    name="predict-batch",
    response_model=PredictionsPublic,
    responses=responses(400, 404, 413, 422),
    openapi_extra=PREDICT_BATCH_BODY,
)
async def predict_many(
    model_id: uuid.UUID,
    request: Request,
    cache: ModelCacheDep,
    sessions: SessionsDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    zero_based: ZeroBased = False,
) -> PredictionsPublic:
    """Predict a batch: SVMlight text (``text/plain`` or ``application/octet-stream``; labels
    optional) or JSON rows (``application/json``: ``{"rows": [{"3": 0.5, "7": 1.0}, ...]}``).

    The body may not exceed ``SVMSVC_MAX_PREDICT_BYTES`` nor its rows
    ``SVMSVC_MAX_PREDICT_ROWS`` (413); it is parsed and scored in worker threads, never on
    the event loop, SVMlight lines as they arrive (past the rows' cap the rest of the body
    is not read).
    """
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != JSON and content_type not in SVMLIGHT_BODY_TYPES:
        raise InvalidRequest(f"send SVMlight lines as text/plain or application/octet-stream, "
                             f"or JSON rows as application/json, not {content_type}")
    if content_type == JSON:
        body = await receive_body(request, settings.max_predict_bytes, "max_predict_bytes")
        answer = await run_in_threadpool(predict_json_batch, cache, sessions, model_id,
                                         principal, body, zero_based, settings.max_predict_rows)
        return Response(answer, media_type=JSON)
    # SVMlight lines: parsed as they arrive, for the model's features (loaded first: its 404
    # comes before the body is read), the rows counted as they go
    model = await run_in_threadpool(load_model, cache, sessions, model_id, principal)
    lines = PredictionLines(model.n_features_in_, zero_based, settings.max_predict_rows)
    X = await receive_parsed_text(request, lines, settings.max_predict_bytes,
                                  "max_predict_bytes")
    answer = await run_in_threadpool(predictions_answer, model, X)
    return Response(answer, media_type=JSON)


@router.post("/{model_id}/evaluate", name="evaluate", response_model=StoredEvaluationPublic,
             responses=responses(400, 404, 422))
def evaluate_model(
    model_id: uuid.UUID,
    body: EvaluateRequest,
    cache: ModelCacheDep,
    sessions: SessionsDep,
    store: StoreDep,
    principal: PrincipalDep,
) -> EvaluationPublic:
    """The metrics of ``solvers.evaluate`` for the model on a dataset: accuracy, balanced
    accuracy, macro precision / recall / F1, ROC AUC, average precision and the ROC curve
    (binary), the log loss (models trained with probability=true), per-class counts and the
    confusion matrix: the same dict as ``solvers.evaluate(model, dataset)``.

    A dataset with more features than the model (another feature space) is a 422.  The
    evaluation is stored (GET /models/{id}/evaluations lists them) with the dataset, the time
    and the key's owner.
    """
    result = EvaluationPublic(**evaluate_on_dataset(cache, sessions, store, model_id,
                                                    body.dataset_id, principal))
    row = crud_evaluations.store(sessions, model_id, body.dataset_id,
                                 result.model_dump(mode="json"), principal)
    return StoredEvaluationPublic.from_row(row)


@router.get("/{model_id}/evaluations", name="evaluations",
            response_model=StoredEvaluationsPublic, responses=responses(404, 422))
def list_evaluations(request: Request, model: ModelDep, session: SessionDep,
                     offset: OffsetQuery = 0, limit: LimitQuery = 100) -> StoredEvaluationsPublic:
    """The model's stored evaluations (each POST /models/{id}/evaluate), newest first."""
    rows, count = crud_evaluations.list_page(session, model, offset, limit)
    return StoredEvaluationsPublic(**bounded_page(
        request, [StoredEvaluationPublic.from_row(row) for row in rows], count, offset))
