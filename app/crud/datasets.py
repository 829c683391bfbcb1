"""Datasets: list, get, lookup by content, create (file then row), delete (with what uses
them)."""

from __future__ import annotations

from sqlalchemy import delete as delete_rows
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from app.core.principals import Principal
from app.crud.pages import owned, page, visible
from app.db.models import Dataset, Job, JobStatus, TrainedModel
from app.db.session import Sessions
from app.errors import Conflict
from app.storage import DatasetStorage, dataset_digest


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
          upload_bytes: int, owner: str) -> tuple[Dataset, bool]:
    """``owner``'s dataset row for these arrays: the existing one, or a new one (file written
    first unless another owner's row stored the same arrays, then the row; a file this call
    wrote is removed again if the row cannot be written).  Returns (row, whether it was
    created)."""
    digest = dataset_digest(dataset)
    with files.lock:
        with sessions.read() as session:
            existing = session.scalar(select(Dataset).where(Dataset.sha256 == digest,
                                                            Dataset.owner == owner))
            if existing is not None:
                return existing, False
        stored_bytes, written = files.save(dataset, digest)
        stats = dataset.stats()
        row = Dataset(
            name=name, sha256=digest, n_samples=stats.n_samples,
            n_features=stats.n_features, nnz=stats.nnz, density=stats.density,
            class_counts=stats.class_counts, has_qid=dataset.qid is not None,
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


def delete_with_uses(session: Session, files: DatasetStorage, dataset: Dataset,
                     cascade: bool) -> list:
    """Delete a dataset (row and file), and with ``cascade`` the finished jobs and the models
    that use it; 409 while queued or running jobs use it, or other uses without ``cascade``.
    Returns the ids of the models deleted (for the model cache).  The caller holds
    ``files.lock``."""
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
        session.execute(delete_rows(TrainedModel).where(TrainedModel.id.in_(model_ids)))
    if job_ids:
        session.execute(delete_rows(Job).where(Job.id.in_(job_ids)))
    digest = dataset.sha256
    session.delete(dataset)
    session.commit()
    # the arrays are stored once by content: other owners' rows of the same content keep them
    if not session.scalar(select(func.count()).select_from(Dataset)
                          .where(Dataset.sha256 == digest)):
        files.delete(digest)
    return model_ids
