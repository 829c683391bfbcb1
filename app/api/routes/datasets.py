"""``/datasets``: upload (streamed, content-addressed), list, get, delete."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status
from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

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
    fetch,
)
from app.api.errors import Conflict, Unprocessable, over_limit, responses
from app.core.security import ADMIN, READ, TRAIN
from app.db.models import Dataset, Job, JobStatus, TrainedModel
from app.db.session import Sessions
from app.prediction import ModelCache
from app.schemas import DatasetPublic, DatasetsPublic
from app.storage import DatasetStore, dataset_digest
from app.uploads import UploadLimits, receive_svmlight_upload

router = APIRouter(prefix="/datasets", tags=["datasets"],
                   dependencies=[READ], responses=responses(401, 403, 503))

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
    n_features: Annotated[int | None, Query(
        ge=1, description="Widen the feature matrix to this many columns.")] = None,
    zero_based: Annotated[bool, Query(
        description="Feature indices in the file start at 0.")] = False,
) -> DatasetPublic:
    """Upload an SVMlight file (multipart field ``file``); parsed while it streams in.

    New content: 201 with ``Location``.  Content already stored (the same arrays, however
    they were spelled or compressed): 200 with the existing dataset.  A malformed file is a
    422 naming the line and the token; a file past a limit (decompressed bytes, rows, stored
    entries, features) is a 413 naming the setting; nothing is stored then.
    """
    if n_features is not None and n_features > settings.max_features:
        raise over_limit("n_features", "max_features", settings.max_features, "features",
                         actual=n_features, error=Unprocessable)
    upload = await receive_svmlight_upload(
        request, UploadLimits.from_settings(settings), n_features=n_features,
        zero_based=zero_based)
    dataset, created = await run_in_threadpool(
        _store_dataset, sessions, store, upload.dataset, _base_name(upload.filename),
        upload.size)
    if created:
        response.headers["Location"] = f"/datasets/{dataset.id}"
    else:
        response.status_code = status.HTTP_200_OK
    return dataset


def _base_name(filename: str) -> str:
    return filename.replace("\\", "/").rsplit("/", 1)[-1][:255] or "upload"


def _store_dataset(sessions: Sessions, store: DatasetStore, dataset, name: str,
                   upload_bytes: int) -> tuple[DatasetPublic, bool]:
    """The dataset row for these arrays: the existing one, or a new one (file written
    first, then the row).  Returns (dataset, whether it was created)."""
    digest = dataset_digest(dataset)
    with store.lock:
        with sessions.read() as session:
            existing = session.scalar(select(Dataset).where(Dataset.sha256 == digest))
            if existing is not None:
                return DatasetPublic.from_row(existing), False
        stored_bytes, written = store.save(dataset, digest)
        stats = dataset.stats()
        row = Dataset(
            name=name, sha256=digest, n_samples=stats.n_samples,
            n_features=stats.n_features, nnz=stats.nnz, density=stats.density,
            class_counts=stats.class_counts, has_qid=dataset.qid is not None,
            has_sample_weight=dataset.sample_weight is not None, upload_bytes=upload_bytes,
            stored_bytes=stored_bytes,
        )
        try:
            with sessions.write() as session:
                session.add(row)
                session.commit()
        except BaseException:
            if written:
                store.delete(digest)
            raise
        return DatasetPublic.from_row(row), True


@router.get("", name="list", response_model=DatasetsPublic, responses=responses(422))
def list_datasets(
    session: SessionDep,
    offset: OffsetQuery = 0,
    limit: LimitQuery = 100,
) -> DatasetsPublic:
    """Datasets, newest first."""
    count = session.scalar(select(func.count()).select_from(Dataset))
    rows = session.scalars(
        select(Dataset).order_by(Dataset.created_at.desc(), Dataset.id)
        .offset(offset).limit(limit))
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
    cascade: Annotated[bool, Query(
        description="Also delete the finished jobs (with their logs) and the models that "
                    "use the dataset.")] = False,
) -> None:
    """Delete a dataset and its stored arrays.

    Refused (409) while jobs or models use it, unless ``cascade``; jobs still queued or
    running always block it (cancel them first).
    """
    with store.lock:
        dataset = fetch(session, Dataset, dataset_id, "dataset")
        _delete_dataset(session, store, model_cache, dataset, cascade)


def _delete_dataset(session: Session, store: DatasetStore, model_cache: ModelCache,
                    dataset: Dataset, cascade: bool) -> None:
    uses = or_(Job.dataset_id == dataset.id, Job.validation_dataset_id == dataset.id)
    active = session.scalar(select(func.count()).select_from(Job).where(
        uses, Job.status.in_([JobStatus.queued, JobStatus.running])))
    if active:
        raise Conflict(f"dataset {dataset.id} is used by {active} queued or running job(s); "
                       f"cancel them first")
    job_ids = list(session.scalars(select(Job.id).where(uses)))
    model_ids = list(session.scalars(select(TrainedModel.id).where(
        or_(TrainedModel.dataset_id == dataset.id, TrainedModel.job_id.in_(job_ids)))))
    if (job_ids or model_ids) and not cascade:
        raise Conflict(f"dataset {dataset.id} is used by {len(job_ids)} job(s) and "
                       f"{len(model_ids)} model(s); delete with cascade=true to remove them "
                       f"too")
    if model_ids:
        session.execute(delete(TrainedModel).where(TrainedModel.id.in_(model_ids)))
    if job_ids:
        session.execute(delete(Job).where(Job.id.in_(job_ids)))
    digest = dataset.sha256
    session.delete(dataset)
    session.commit()
    store.delete(digest)
    for model_id in model_ids:
        model_cache.discard(model_id)
