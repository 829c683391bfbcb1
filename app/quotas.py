"""Storage quotas per owner (issue 49): the bytes of datasets and of models one owner may keep.

An owner is a tenant as :mod:`app.core.principals` defines it (all its keys together; every
request of an open service is the one owner ``""``).  What counts:

* datasets: the ``stored_bytes`` of the owner's dataset rows (the arrays stored for them; a
  content another owner also stored counts for both, as it would cost each alone; a sharded
  dataset stores nothing: 0);
* models: the ``size_bytes`` of the owner's models (their archives in the database).

The quotas are ``SVMSVC_MAX_DATASET_BYTES_PER_OWNER`` and ``SVMSVC_MAX_MODEL_BYTES_PER_OWNER``
(0: no quota).  They are checked where bytes would be added, before anything is stored:

* an upload: before its body is read when the owner is already at its quota, and once it is
  parsed with the size of the arrays it would store (:func:`check_dataset_bytes`);
* a job's admission: with the size of its model estimated from its shape
  (:func:`app.jobs.admission.check_job`: a linear model's weights, 8 bytes each; a kernel
  model's bound, its dataset's stored arrays, of which its support vectors are a subset, and
  8 bytes a coefficient), otherwise (a sharded dataset not read yet) only that the owner is
  not at its quota already (:func:`check_model_bytes`).  The estimate is stored with the job
  (``reserved_model_bytes``) and counts against the quota while the job is queued or running
  (:func:`reserved_model_bytes`): without it, 100 jobs admitted at once each saw the models
  stored so far and together overshot the quota a hundredfold.  The reservation ends with
  the job (its model, if stored, counts instead);
* a model's write, in the worker: a trained model that would take the owner past its quota
  fails its job with the reason, nothing stored (:func:`model_quota_refusal`).

Each refusal is a :class:`~app.errors.StorageQuotaExceeded` (413) naming the setting.  A job's
admission reads the sums and writes its reservation under the owner's lock
(:func:`lock_owner`: SQLite's write sessions are serialized by ``BEGIN IMMEDIATE``, PostgreSQL
takes a transaction-scoped advisory lock per owner), so concurrent admissions cannot pass the
quota together.  The other checks read the sums and then write without a lock: two uploads of
one owner at the same moment may pass the dataset quota by one dataset each, and a trained
model whose archive is larger than its admitted estimate is checked again at its write.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from app.core.config import Settings
from app.db.models import Dataset, Job, JobStatus, TrainedModel
from app.errors import StorageQuotaExceeded, limit_exceeded, setting_variable

DATASET_QUOTA = "max_dataset_bytes_per_owner"
MODEL_QUOTA = "max_model_bytes_per_owner"


@dataclass(frozen=True)
class Stored:
    """How many rows of one kind an owner has, and their bytes."""

    count: int
    bytes: int


def stored(session: Session, owner: str, row_kind) -> Stored:
    """The owner's datasets (``Dataset``) or models (``TrainedModel``): count and bytes."""
    size = Dataset.stored_bytes if row_kind is Dataset else TrainedModel.size_bytes
    count, total = session.execute(
        select(func.count(), func.coalesce(func.sum(size), 0))
        .select_from(row_kind).where(row_kind.owner == owner)).one()
    return Stored(int(count), int(total))


def job_counts(session: Session, owner: str) -> dict[str, int]:
    """The owner's queued and running jobs."""
    rows = session.execute(
        select(Job.status, func.count()).where(
            Job.owner == owner, Job.status.in_([JobStatus.queued, JobStatus.running]))
        .group_by(Job.status)).all()
    counts = {JobStatus.queued.value: 0, JobStatus.running.value: 0}
    counts.update({str(status): int(count) for status, count in rows})
    return counts


def reserved_model_bytes(session: Session, owner: str) -> int:
    """The model bytes the owner's queued and running jobs reserved at their admission."""
    return int(session.scalar(
        select(func.coalesce(func.sum(Job.reserved_model_bytes), 0)).where(
            Job.owner == owner, Job.status.in_([JobStatus.queued, JobStatus.running]))))


def lock_owner(session: Session, owner: str) -> None:
    """Serialize the quota checks and writes of one owner until ``session``'s transaction
    ends: on PostgreSQL a transaction-scoped advisory lock keyed by the owner's CRC-32
    (another owner sharing the key only waits); SQLite's write transaction holds the
    database's write lock from its start already."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:space, :key)"),
                        {"space": 49, "key": zlib.crc32(owner.encode()) - 2**31})


def _check(used: int, adding: int, limit: int, what: str, setting: str,
           held: str = "stored") -> None:
    """:class:`StorageQuotaExceeded` when ``used`` + ``adding`` bytes pass ``limit`` (0: no
    quota), or when ``used`` is at it already."""
    if limit and (used >= limit or used + adding > limit):
        raise limit_exceeded(f"the owner's {what} ({used} bytes {held}) with this one's "
                             f"{adding} bytes", setting, limit, "bytes", actual=used + adding,
                             error=StorageQuotaExceeded)


def check_dataset_bytes(session: Session, owner: str, adding: int, settings: Settings) -> None:
    """Refuse a dataset of ``adding`` bytes (0: any dataset, the owner being at its quota)
    past the owner's dataset quota."""
    _check(stored(session, owner, Dataset).bytes, adding,
           settings.max_dataset_bytes_per_owner, "datasets", DATASET_QUOTA)


def check_model_bytes(session: Session, owner: str, adding: int | None,
                      settings: Settings) -> None:
    """Refuse a job whose model, of ``adding`` bytes when its shape tells (None: unknown
    before it is trained), would take the owner past its model quota: the models stored and
    the bytes its queued and running jobs reserved count.  Call it under
    :func:`lock_owner`, and store ``adding`` as the job's ``reserved_model_bytes`` in the same
    transaction."""
    used = stored(session, owner, TrainedModel).bytes
    reserved = reserved_model_bytes(session, owner)
    _check(used + reserved, adding or 0, settings.max_model_bytes_per_owner, "models",
           MODEL_QUOTA, held=f"stored, {reserved} of them reserved by its queued and running "
                             f"jobs" if reserved else "stored")


def model_quota_refusal(session: Session, job_id, size: int, limit: int | None) -> str | None:
    """Why the model of ``size`` bytes of job ``job_id`` may not be stored for its owner
    (None: it may), against the quota ``limit`` (None or 0: none)."""
    if not limit:
        return None
    owner = session.scalar(select(Job.owner).where(Job.id == job_id))
    used = stored(session, owner or "", TrainedModel).bytes
    if used + size <= limit:
        return None
    return (f"the trained model's archive takes {size} bytes, and its owner's models "
            f"{used} bytes already: more than the quota of {limit} bytes set by "
            f"{setting_variable(MODEL_QUOTA)}; it was not stored: delete models, or ask the "
            f"operator to raise the setting")


def usage(session: Session, owner: str, settings: Settings) -> dict:
    """The owner's usage against each limit (``GET /usage``); a limit of None: no quota."""
    datasets, models = stored(session, owner, Dataset), stored(session, owner, TrainedModel)
    jobs = job_counts(session, owner)
    return {
        "owner": owner,
        "datasets": {"count": datasets.count, "bytes": datasets.bytes,
                     "limit_bytes": settings.max_dataset_bytes_per_owner or None,
                     "setting": setting_variable(DATASET_QUOTA)},
        "models": {"count": models.count, "bytes": models.bytes,
                   "limit_bytes": settings.max_model_bytes_per_owner or None,
                   "setting": setting_variable(MODEL_QUOTA)},
        "jobs": {"queued": jobs["queued"], "running": jobs["running"],
                 "reserved_model_bytes": reserved_model_bytes(session, owner),
                 "limit_queued": settings.max_queued_jobs_per_key,
                 "setting": setting_variable("max_queued_jobs_per_key")},
    }
