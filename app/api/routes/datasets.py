"""``/datasets``: upload (streamed, content-addressed), list, get, delete."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query, Request, Response, status
from starlette.concurrency import run_in_threadpool

from app.api import API_PREFIX
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
from app.api.routes import resource_router
from app.core.security import ADMIN, TRAIN, PrincipalDep
from app.crud import datasets as crud_datasets
from app.errors import LimitExceeded, limit_exceeded
from app.schemas import DatasetPublic, DatasetsPublic
from app.uploads import UploadLimits, receive_svmlight_upload

router = resource_router("datasets")

UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {
    "schema": {"$ref": "#/components/schemas/DatasetUpload"}}}}}


@router.post(
    "",
    name="upload",
    status_code=status.HTTP_201_CREATED,
    response_model=DatasetPublic,
    dependencies=[TRAIN],
    responses={200: {"model": DatasetPublic, "description": "The same content exists: "
                                                            "that dataset"},
               **responses(400, 413, 422)},
    openapi_extra=UPLOAD_BODY,
)
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
    bytes, rows, stored entries, features) is a 413 naming the setting; nothing is stored
    then.
    """
    if n_features is not None and n_features > settings.max_features:
        raise limit_exceeded("n_features", "max_features", settings.max_features, "features",
                             actual=n_features, error=LimitExceeded)
    upload = await receive_svmlight_upload(
        request, UploadLimits.from_settings(settings), n_features=n_features,
        zero_based=zero_based)
    dataset, created = await run_in_threadpool(
        crud_datasets.store, sessions, store, upload.dataset, upload.name, upload.size,
        principal.owner)
    if created:
        response.headers["Location"] = f"{API_PREFIX}/datasets/{dataset.id}"
    else:
        response.status_code = status.HTTP_200_OK
    return DatasetPublic.from_row(dataset)


@router.get("", name="list", response_model=DatasetsPublic, responses=responses(422))
def list_datasets(
    session: SessionDep,
    principal: PrincipalDep,
    offset: OffsetQuery = 0,
    limit: LimitQuery = 100,
) -> DatasetsPublic:
    """The caller's datasets (an admin's: all), newest first."""
    rows, count = crud_datasets.list_page(session, principal, offset, limit)
    return DatasetsPublic(data=[DatasetPublic.from_row(r) for r in rows], count=count)


@router.get("/{dataset_id}", name="get", response_model=DatasetPublic,
            responses=responses(404, 422))
def get_dataset(dataset: DatasetDep) -> DatasetPublic:
    """One dataset and its statistics."""
    return DatasetPublic.from_row(dataset)


@router.delete("/{dataset_id}", name="delete", status_code=status.HTTP_204_NO_CONTENT,
               dependencies=[ADMIN],
               responses=responses(404, 409, 422))
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
