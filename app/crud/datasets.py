"""Datasets: list, get, lookup by content, create (file then row), delete (with what uses
them)."""

from __future__ import annotations

from pathlib import PurePosixPath

from sqlalchemy import delete as delete_rows
from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.core.config import Settings
from app.core.principals import Principal
from app.crud.pages import owned, page, visible
from app.db.models import Dataset, DatasetKind, Job, JobStatus, TrainedModel, utcnow
from app.db.session import Sessions
from app.errors import Conflict
from app.quotas import check_dataset_bytes
from app.shards import shards_digest
from app.storage import DatasetStorage, archive_bytes, dataset_digest


def list_page(session: Session, principal: Principal, offset: int,
              limit: int) -> tuple[list[Dataset], int]:
    """The datasets ``principal`` sees, newest first."""
    return page(session, visible(select(Dataset), Dataset, principal),
                (Dataset.created_at.desc(), Dataset.id), offset, limit)


def get(session: Session, dataset_id, principal: Principal, field: str | None = None) -> Dataset:
    """The dataset, if ``principal`` sees it (:func:`~app.crud.pages.owned`)."""
    return owned(session, Dataset, dataset_id, "dataset", principal, field)


def delete(session: Session, files: DatasetStorage, dataset_id, cascade: bool,
           principal: Principal) -> list:
    """Delete a dataset (row and file; :class:`NotFound` if there is none for
    ``principal``), and with ``cascade`` the finished jobs and the models that use it
    (:func:`delete_with_uses`).  Returns the ids of the models deleted (for the model
    cache)."""
    with files.lock:
        dataset = get(session, dataset_id, principal)
        return delete_with_uses(session, files, dataset, cascade)


def store(sessions: Sessions, files: DatasetStorage, dataset, name: str,
          upload_bytes: int, owner: str, settings: Settings) -> tuple[Dataset, bool]:
    """``owner``'s dataset row for these arrays: the existing one, or a new one (file written
    first unless another owner's row stored the same arrays, then the row; a file this call
    wrote is removed again if the row cannot be written).  A new one past the owner's dataset
    quota is refused (:func:`app.quotas.check_dataset_bytes`), nothing written.  Returns (row,
    whether it was created)."""
    digest = dataset_digest(dataset)
    with files.lock:
        with sessions.read() as session:
            existing = session.scalar(select(Dataset).where(Dataset.sha256 == digest,
                                                            Dataset.owner == owner))
            if existing is not None:
                return existing, False
            check_dataset_bytes(session, owner, archive_bytes(dataset), settings)
        stored_bytes, written = files.save(dataset, digest)
        stats = dataset.stats()
        summary = label_summary(dataset)
        row = Dataset(
            name=name, sha256=digest, n_samples=stats.n_samples,
            n_features=stats.n_features, nnz=stats.nnz, density=stats.density,
            class_counts=(stats.class_counts if summary["distinct"] <= settings.max_classes
                          else None),
            label_summary=summary, has_qid=dataset.qid is not None,
            has_sample_weight=dataset.sample_weight is not None, upload_bytes=upload_bytes,
            stored_bytes=stored_bytes, owner=owner,
        )
        try:
            with sessions.write() as session:
                session.add(row)
                session.commit()
        except BaseException:
            if written:
                files.delete(digest)
            raise
        return row, True


def label_summary(dataset) -> dict:
    """What a dataset's labels are, whatever the task they serve: ``distinct`` values,
    ``integers`` (all of them whole numbers: classes or ranks may be meant), and for numeric
    labels their ``min``, ``max`` and ``mean`` (null for text labels).  A dataset of more
    distinct labels than ``SVMSVC_MAX_CLASSES`` is stored all the same, its ``class_counts``
    null: its labels are real values (a regression's), not classes."""
    import numpy as np

    labels = np.asarray(dataset.labels)
    summary = {"distinct": int(dataset.classes.shape[0]), "integers": False, "min": None,
               "max": None, "mean": None}
    if labels.dtype.kind in "iuf" and labels.size:
        values = labels.astype(np.float64)
        summary.update(integers=bool(np.all(values == np.round(values))),
                       min=float(values.min()), max=float(values.max()),
                       mean=float(values.mean()))
    return summary


def register_sharded(sessions: Sessions, shards: list[str], name: str | None,
                     n_features: int | None, zero_based: bool,
                     owner: str) -> tuple[Dataset, bool]:
    """``owner``'s sharded dataset of these (checked) shards read this way: the existing row,
    or a new one without statistics (a job fills them when it reads the shards on the
    cluster).  Returns (row, whether it was created)."""
    digest = shards_digest(shards, n_features, zero_based)
    with sessions.write() as session:
        existing = session.scalar(select(Dataset).where(Dataset.sha256 == digest,
                                                        Dataset.owner == owner))
        if existing is not None:
            return existing, False
        row = Dataset(
            name=name or PurePosixPath(shards[0].rstrip("/")).name or shards[0],
            sha256=digest, kind=DatasetKind.sharded,
            source={"shards": shards, "n_features": n_features, "zero_based": zero_based},
            n_features=n_features, has_qid=False, has_sample_weight=False, upload_bytes=0,
            stored_bytes=0, owner=owner)
        session.add(row)
        try:
            session.commit()
        except IntegrityError:  # the same registration, concurrently: its row answers
            session.rollback()
            return session.scalar(select(Dataset).where(Dataset.sha256 == digest,
                                                        Dataset.owner == owner)), False
        return row, True


def stored_digests(session: Session) -> set[str]:
    """The content digests of every dataset with a row (what the store may keep)."""
    return set(session.scalars(select(Dataset.sha256)))


def record_scan(session: Session, dataset_id, stats: dict) -> None:
    """Write what a job's read of a sharded dataset's shards found (its statistics, the
    time); the latest read is what the row says."""
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        return
    for key in ("n_samples", "n_features", "nnz", "density", "class_counts",
                "has_sample_weight"):
        setattr(dataset, key, stats[key])
    dataset.scanned_at = utcnow()
    session.commit()


def delete_with_uses(session: Session, files: DatasetStorage, dataset: Dataset,
                     cascade: bool) -> list:
    """Delete a dataset (row and file), and with ``cascade`` the finished jobs (a prediction
    job's result file too) and the models that use it; 409 while queued or running jobs use
    it, or other uses without ``cascade``.  Returns the ids of the models deleted (for the
    model cache).  The caller holds ``files.lock``."""
    uses = or_(Job.dataset_id == dataset.id, Job.validation_dataset_id == dataset.id)
    active = session.scalar(select(func.count()).select_from(Job).where(
        uses, Job.status.in_([JobStatus.queued, JobStatus.running])))
    if active:
        raise Conflict(f"dataset {dataset.id} is used by {active} queued or running job(s); "
                       f"cancel them first")
    job_ids = list(session.scalars(select(Job.id).where(uses)))
    results = [result["name"] for result in session.scalars(select(Job.result).where(uses))
               if result]  # prediction jobs' files
    model_ids = list(session.scalars(select(TrainedModel.id).where(
        or_(TrainedModel.dataset_id == dataset.id, TrainedModel.job_id.in_(job_ids)))))
    if (job_ids or model_ids) and not cascade:
        raise Conflict(f"dataset {dataset.id} is used by {len(job_ids)} job(s) and "
                       f"{len(model_ids)} model(s); delete with cascade=true to remove them "
                       f"too")
    if model_ids:
        session.execute(delete_rows(TrainedModel).where(TrainedModel.id.in_(model_ids)))
    if job_ids:
        session.execute(delete_rows(Job).where(Job.id.in_(job_ids)))
    digest, stored = dataset.sha256, dataset.kind == DatasetKind.uploaded
    session.delete(dataset)
    session.commit()
    # the arrays are stored once by content: other owners' rows of the same content keep them
    # (a sharded dataset has none: its shards are not the service's)
    if stored and not session.scalar(select(func.count()).select_from(Dataset)
                          .where(Dataset.sha256 == digest)):
        files.delete(digest)
    for name in results:
        files.delete_result(name)
    return model_ids
