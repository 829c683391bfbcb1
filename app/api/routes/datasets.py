"""``/datasets``: upload (streamed, content-addressed), register shards (read by the Dask
workers where they are), list, get, delete."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query, Request, Response, status
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api import API_PREFIX
from app.api.bodies import receive_svmlight_upload
from app.api.deps import (
    DatasetDep,
    LimitQuery,
    ModelCacheDep,
    OffsetQuery,
    SessionDep,
    SessionsDep,
    SettingsDep,
    StoreDep,
    WriteSessionDep,
)
from app.api.errors import responses
from app.api.pages import bounded_page
from app.api.routes import item_delete, item_get, resource_router
from app.api.security import TRAIN, PrincipalDep
from app.crud import datasets as crud_datasets
from app.errors import LimitExceeded, limit_exceeded
from app.quotas import check_dataset_bytes
from app.schemas import (
    MAX_SHARDS,
    MAX_SHARDS_PAGE,
    DatasetPublic,
    DatasetShardedCreate,
    DatasetsPublic,
)
from app.shards import check_shards
from app.uploads import UploadLimits

router = resource_router("datasets")

UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {
    "schema": {"$ref": "#/components/schemas/DatasetUpload"}}}}}


def creates_dataset(path: str, name: str, existing: str, *errors: int, **options):
    """A ``POST`` that creates a dataset: 201 new, 200 with the dataset that already has what
    was sent (``existing`` says what), for the ``train`` scope."""
    return router.post(path, name=name, status_code=status.HTTP_201_CREATED,
                       response_model=DatasetPublic, dependencies=[TRAIN],
                       responses={200: {"model": DatasetPublic, "description": existing},
                                  **responses(*errors)}, **options)


def check_width(n_features: int | None, settings) -> None:
    """A 422 naming ``SVMSVC_MAX_FEATURES`` for an ``n_features`` past it."""
    if n_features is not None and n_features > settings.max_features:
        raise limit_exceeded("n_features", "max_features", settings.max_features, "features",
                             actual=n_features, error=LimitExceeded)


def check_owner_below_quota(sessions, owner: str, settings) -> None:
    """The 413 of an upload by an owner at its dataset quota, before its body is read."""
    with sessions.read() as session:
        check_dataset_bytes(session, owner, 0, settings)


def answer_created(response: Response, dataset, created: bool) -> DatasetPublic:
    """201 with ``Location`` for a new dataset, 200 for an existing one."""
    if created:
        response.headers["Location"] = f"{API_PREFIX}/datasets/{dataset.id}"
    else:
        response.status_code = status.HTTP_200_OK
    return DatasetPublic.from_row(dataset)


@creates_dataset("", "upload", "The same content exists: that dataset", 400, 413, 422,
                 openapi_extra=UPLOAD_BODY)
async def upload_dataset(
    request: Request,
    response: Response,
    settings: SettingsDep,
    sessions: SessionsDep,
    store: StoreDep,
    principal: PrincipalDep,
    n_features: Annotated[int | None, Query(
        ge=1, description="Widen the feature matrix to this many columns.")] = None,
    zero_based: Annotated[bool, Query(
        description="Feature indices in the file start at 0.")] = False,
) -> DatasetPublic:
    """Upload an SVMlight file (multipart field ``file``); parsed while it streams in.

    New content: 201 with ``Location``.  Content the caller's owner already stored (the same
    arrays, however they were spelled or compressed): 200 with the existing dataset.  A
    malformed file is a 422 naming the line and the token; a file past a limit (decompressed
    bytes, rows, stored entries, features) is a 413 naming the setting, as is one whose
    arrays would take the owner past ``SVMSVC_MAX_DATASET_BYTES_PER_OWNER`` (refused before
    the body is read when the owner is at its quota already); nothing is stored then.
    """
    check_width(n_features, settings)
    await run_in_threadpool(check_owner_below_quota, sessions, principal.owner, settings)
    threads = request.app.state.upload_threads
    upload = await receive_svmlight_upload(
        request, UploadLimits.from_settings(settings), n_features=n_features,
        zero_based=zero_based, threads=threads)
    dataset, created = await threads.run(
        crud_datasets.store, sessions, store, upload.dataset, upload.name, upload.size,
        principal.owner, settings)
    return answer_created(response, dataset, created)


@creates_dataset("/sharded", "register_sharded",
                 "The same shards, read the same way, exist: that dataset", 400, 422)
def register_sharded_dataset(
    body: DatasetShardedCreate,
    response: Response,
    settings: SettingsDep,
    sessions: SessionsDep,
    principal: PrincipalDep,
) -> DatasetPublic:
    """Register a dataset from SVMlight shards that the Dask workers parse where they are:
    nothing is uploaded, and this process does not read them.

    Each shard is an absolute local path every Dask worker sees, inside a directory of
    ``SVMSVC_SHARD_ROOTS`` (a ``file://`` URL alike), or a URL of a scheme in
    ``SVMSVC_SHARD_SCHEMES`` (``s3://bucket/part-0.svm``); anything else is a 422
    (``invalid-shard``) naming the shard and the setting.  The statistics (rows, features,
    labels) are null until a job reads the shards on the cluster (its jobs need
    ``SVMSVC_EXECUTOR=dask``).  New: 201 with ``Location``; the same shards read the same way
    already registered by the caller's owner: 200 with that dataset.
    """
    check_width(body.n_features, settings)
    shards = check_shards(body.shards, settings)
    dataset, created = crud_datasets.register_sharded(
        sessions, shards, body.name, body.n_features, body.zero_based, principal.owner)
    return answer_created(response, dataset, created)


@router.api_route("/sharded", methods=["GET", "PUT", "PATCH", "DELETE"],
                  include_in_schema=False)
def sharded_other_methods() -> None:
    """``sharded`` is this collection's registration, not a dataset's id: any other method is
    a 405 (with ``Allow: POST``), not a 422 for an id that is not a UUID from the item
    routes below, which the path would otherwise reach."""
    raise StarletteHTTPException(status.HTTP_405_METHOD_NOT_ALLOWED)


@router.get("", name="list", response_model=DatasetsPublic, responses=responses(422))
def list_datasets(
    request: Request,
    session: SessionDep,
    principal: PrincipalDep,
    offset: OffsetQuery = 0,
    limit: LimitQuery = 100,
) -> DatasetsPublic:
    """The caller's datasets (an admin's: all), newest first; a sharded dataset without its
    shards (``n_shards`` only: ``GET /datasets/{id}`` pages them); a page ends at ``limit``
    items or at ``SVMSVC_MAX_LIST_BYTES`` (``next`` links the rest)."""
    rows, count = crud_datasets.list_page(session, principal, offset, limit)
    return DatasetsPublic(**bounded_page(
        request, [DatasetPublic.from_row(r, shard_limit=None) for r in rows], count, offset))


@item_get(router, "/{dataset_id}", DatasetPublic)
def get_dataset(
    dataset: DatasetDep,
    shard_offset: Annotated[int, Query(
        ge=0, le=MAX_SHARDS, description="A sharded dataset: the first shard listed.")] = 0,
    shard_limit: Annotated[int, Query(
        ge=1, le=MAX_SHARDS_PAGE, description="A sharded dataset: most shards listed (n_shards "
                                              "says how many it has).")] = MAX_SHARDS_PAGE,
) -> DatasetPublic:
    """One dataset and its statistics; a sharded dataset's shards a page at a time."""
    return DatasetPublic.from_row(dataset, shard_offset, shard_limit)


@item_delete(router, "/{dataset_id}", 409)
def delete_dataset(
    dataset_id: uuid.UUID,
    session: WriteSessionDep,
    store: StoreDep,
    model_cache: ModelCacheDep,
    principal: PrincipalDep,
    cascade: Annotated[bool, Query(
        description="Also delete the finished jobs (with their logs) and the models that "
                    "use the dataset.")] = False,
) -> None:
    """Delete a dataset and its stored arrays.

    Refused (409) while jobs or models use it, unless ``cascade``; jobs still queued or
    running always block it (cancel them first).
    """
    for model_id in crud_datasets.delete(session, store, dataset_id, cascade, principal):
        model_cache.discard(model_id)
