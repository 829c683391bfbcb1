"""SQLAlchemy models: datasets, training jobs, their convergence logs and trained models.

The database is the source of truth for every job: the web process, the dispatcher and the
worker processes only ever move a job between states with conditional updates (see
``app.jobs.state``).  Timestamps are timezone-aware UTC on every backend.
"""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """A timezone-aware UTC timestamp, also on SQLite (which stores naive text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class JobStatus(enum.StrEnum):
    """The life of a training job: ``queued -> running -> succeeded | failed | cancelled``."""

    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def finished(self) -> bool:
        """Whether the state is final."""
        return self in FINISHED_STATES


FINISHED_STATES = frozenset({JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled})


class JobKind(enum.StrEnum):
    """What a job does: ``train`` a model, or ``predict`` a stored dataset with one."""

    train = "train"
    predict = "predict"


class Base(DeclarativeBase):
    """Declarative base: Python types to column types."""

    type_annotation_map = {
        datetime: UTCDateTime,
        dict[str, Any]: JSON,
        list[Any]: JSON,
    }


class DatasetKind(enum.StrEnum):
    """Where a dataset's rows are: ``uploaded`` (arrays stored by the service, by content
    hash) or ``sharded`` (SVMlight shards the Dask workers parse where they are; see
    :mod:`app.shards`)."""

    uploaded = "uploaded"
    sharded = "sharded"


class Dataset(Base):
    """An uploaded dataset, its arrays stored once under ``data_dir`` by content hash; or a
    sharded one, its ``source`` the shards (``{"shards": [...], "n_features", "zero_based"}``)
    and its ``sha256`` the digest of that source (:func:`app.shards.shards_digest`).  A sharded
    dataset's statistics are None until a job reads its shards on the cluster
    (``scanned_at``)."""

    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("owner", "sha256", name="uq_datasets_owner_sha256"),
                      Index("ix_datasets_owner_created_at", "owner", "created_at"))

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(255))
    sha256: Mapped[str] = mapped_column(String(64))
    owner: Mapped[str] = mapped_column(String(64), default="", server_default="")
    kind: Mapped[str] = mapped_column(String(16), default=DatasetKind.uploaded,
                                      server_default=DatasetKind.uploaded.value)
    source: Mapped[dict[str, Any] | None]
    scanned_at: Mapped[datetime | None]
    n_samples: Mapped[int | None] = mapped_column(BigInteger)
    n_features: Mapped[int | None] = mapped_column(BigInteger)
    nnz: Mapped[int | None] = mapped_column(BigInteger)
    density: Mapped[float | None] = mapped_column(Float)
    class_counts: Mapped[dict[str, Any] | None]
    #: the labels' distinct count, range, mean and whether all are integers
    #: (:func:`app.crud.datasets.label_summary`; null for rows older than it, and for a
    #: sharded dataset)
    label_summary: Mapped[dict[str, Any] | None]
    has_qid: Mapped[bool]
    has_sample_weight: Mapped[bool]
    upload_bytes: Mapped[int] = mapped_column(BigInteger)
    stored_bytes: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class Job(Base):
    """A training job.

    ``attempts`` counts the runs started (it fences writes: a worker only writes while the
    job is ``running`` with the attempt number it was given).  ``cancel_requested_at`` is
    set by a cancel request while the job runs; the worker's monitor polls it.  ``owner`` is
    the owner of the API key that queued the job (:mod:`app.core.principals`; ``""`` when
    the service was open): it sees the job, and its queue quota counts it.
    ``heartbeat_at`` is the lease of a running attempt, renewed by its worker.  A tuning job
    (``tuning`` set) cross-validates the solver over a grid, stores the table in
    ``cross_validation`` and the model refitted at the best point.  ``problem_key``
    (:mod:`app.problem`) groups the jobs that solve the same problem on the same dataset,
    whatever their solver.  ``keep_last_good``: when the solver fails but returns its last
    good point (mfn does), that point is stored as the model and the job succeeds, saying so.
    """

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_status_created_at", "status", "created_at"),
                      Index("ix_jobs_owner_status", "owner", "status"))

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    dataset_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("datasets.id", ondelete="RESTRICT"), index=True)
    validation_dataset_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("datasets.id", ondelete="RESTRICT"), index=True)
    solver: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]]
    time_limit_s: Mapped[float | None] = mapped_column(Float)
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.queued)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    cancel_requested_at: Mapped[datetime | None]
    iteration: Mapped[int | None] = mapped_column(Integer)
    elapsed: Mapped[float | None] = mapped_column(Float)
    objective: Mapped[float | None] = mapped_column(Float)
    optimality: Mapped[float | None] = mapped_column(Float)
    # where the latest record stands: "class 3 of 26", "C 3 of 11, fold 2 of 5", "refit"
    progress_stage: Mapped[str | None] = mapped_column(String(128))
    solver_status: Mapped[str | None] = mapped_column(String(16))
    message: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    owner: Mapped[str] = mapped_column(String(64), default="", server_default="")
    heartbeat_at: Mapped[datetime | None]  # renewed by the running attempt's worker
    tuning: Mapped[dict[str, Any] | None]  # a tuning job's grid and folds (None: training)
    cross_validation: Mapped[dict[str, Any] | None]  # a tuning job's table, once it ran
    # dataset + the problem the parameters pose (app.problem); None for a tuning job
    problem_key: Mapped[str | None] = mapped_column(String(512), index=True)
    keep_last_good: Mapped[bool] = mapped_column(Boolean, default=False,
                                                 server_default=false())
    #: the user's labels (``app.tags``): str -> str, bounded; null for jobs older than them
    tags: Mapped[dict[str, Any] | None]
    # the registered model its model becomes the next version of (None: not registered)
    model_name: Mapped[str | None] = mapped_column(String(64))
    # "train" (solves a problem, makes a model) or "predict" (a batch prediction job: scores
    # its dataset with ``predict_model_id`` into a stored result, app.batch_prediction)
    kind: Mapped[str] = mapped_column(String(16), default=JobKind.train,
                                      server_default=JobKind.train.value)
    predict_model_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("models.id", ondelete="SET NULL"), index=True)
    # a prediction job's result: {"format", "path", "bytes", "rows", "columns"} once written
    result: Mapped[dict[str, Any] | None]
    rows_done: Mapped[int | None] = mapped_column(BigInteger)  # a prediction job's progress
    rows_total: Mapped[int | None] = mapped_column(BigInteger)
    # the bytes of its model reserved against the owner's model quota at admission, from the
    # model's shape (app.quotas): counted while the job is queued or running; None: unknown
    reserved_model_bytes: Mapped[int | None] = mapped_column(BigInteger)
    # where the job's end is POSTed (app.webhooks); checked against the allowed hosts
    callback_url: Mapped[str | None] = mapped_column(String(2048))

    model: Mapped[TrainedModel | None] = relationship(
        back_populates="job", uselist=False, lazy="selectin",
        primaryjoin="Job.id == TrainedModel.job_id", foreign_keys="TrainedModel.job_id")


class JobLogEntry(Base):
    """One solver iteration of a job (the convergence log)."""

    __tablename__ = "job_log"

    job_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    iteration: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    elapsed: Mapped[float] = mapped_column(Float)
    objective: Mapped[float | None] = mapped_column(Float)
    optimality: Mapped[float | None] = mapped_column(Float)
    extras: Mapped[dict[str, Any]]


class TrainedModel(Base):
    """A model produced by a successful job; ``artifact`` holds its ``.npz`` bytes.

    The bytes live in the database (loaded only on demand) so that a job's model and its
    ``succeeded`` state are written in one transaction.  ``owner``: its job's.
    """

    __tablename__ = "models"
    __table_args__ = (Index("ix_models_owner_created_at", "owner", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    job_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL"), unique=True)
    dataset_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("datasets.id", ondelete="RESTRICT"), index=True)
    solver: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]]
    kind: Mapped[str] = mapped_column(String(32))
    classes: Mapped[list[Any]]
    n_features: Mapped[int] = mapped_column(BigInteger)
    objective: Mapped[float | None] = mapped_column(Float)
    solver_status: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    iterations: Mapped[int] = mapped_column(Integer)
    training_seconds: Mapped[float] = mapped_column(Float)
    training_data: Mapped[dict[str, Any]]
    subproblems: Mapped[list[Any]]
    validation: Mapped[dict[str, Any] | None]
    #: the model's metadata beyond the columns (``model_details``); null for older models
    details: Mapped[dict[str, Any] | None]
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    artifact: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    owner: Mapped[str] = mapped_column(String(64), default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    #: the user's labels: its job's when it was stored, then its own (``app.tags``)
    tags: Mapped[dict[str, Any] | None]

    job: Mapped[Job | None] = relationship(
        back_populates="model", primaryjoin="Job.id == TrainedModel.job_id",
        foreign_keys=[job_id])
    version: Mapped[ModelVersion | None] = relationship(  # deleted with the model
        back_populates="model", uselist=False, lazy="selectin", cascade="all, delete",
        passive_deletes=True)


class RegisteredModel(Base):
    """A named model of one owner (the registry, :mod:`app.crud.registry`): ``latest_version``
    is the number its last version took.  Its row is the lock of the name: registering a
    version increments the counter (an ``UPDATE``, which on PostgreSQL holds the row until the
    commit), and moving an alias or deleting a version locks it first, so the writers of one
    name take turns (on SQLite the write sessions' ``BEGIN IMMEDIATE`` already serializes
    them).  Numbers are never reused: a deleted version leaves its number behind."""

    __tablename__ = "registered_models"

    owner: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    latest_version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ModelVersion(Base):
    """Version ``version`` of a registered model: the model a successful job under that name
    produced, with what made it (job, dataset, solver, parameters, metrics, the owner whose
    key queued the job).  Deleting the model deletes the version; an alias pointing at the
    version forbids both (the foreign key of ``model_aliases`` restricts it)."""

    __tablename__ = "model_versions"
    __table_args__ = (
        ForeignKeyConstraint(["owner", "name"],
                             ["registered_models.owner", "registered_models.name"],
                             ondelete="CASCADE"),
    )

    owner: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    model_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), unique=True)
    job_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))
    dataset_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("datasets.id",
                                                             ondelete="RESTRICT"))
    solver: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]]
    metrics: Mapped[dict[str, Any]]
    created_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    model: Mapped[TrainedModel] = relationship(back_populates="version")


class ModelAlias(Base):
    """An alias (``production``, ``staging``, any slug) of a registered model: the version it
    points at, and that version's model id (copied here so that resolving ``name@alias`` to a
    model is one primary-key lookup on the predict path)."""

    __tablename__ = "model_aliases"
    __table_args__ = (
        ForeignKeyConstraint(["owner", "name", "version"],
                             ["model_versions.owner", "model_versions.name",
                              "model_versions.version"],
                             ondelete="RESTRICT", name="fk_model_aliases_version"),
    )

    owner: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    alias: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    model_id: Mapped[uuid.UUID] = mapped_column()
    updated_by: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class AliasEvent(Base):
    """One move of an alias: who, when, from which version to which (``from_version`` None:
    the alias was created; ``to_version`` None: it was deleted)."""

    __tablename__ = "model_alias_events"
    __table_args__ = (Index("ix_model_alias_events_name", "owner", "name", "alias", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(64))
    alias: Mapped[str] = mapped_column(String(64))
    from_version: Mapped[int | None] = mapped_column(Integer)
    to_version: Mapped[int | None] = mapped_column(Integer)
    moved_by: Mapped[str] = mapped_column(String(64))
    moved_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookSecret(Base):
    """An owner's webhook signing secret (``GET/POST /webhook-secret``): the key of the
    HMAC-SHA256 every event of its jobs carries (app.webhooks)."""

    __tablename__ = "webhook_secrets"

    owner: Mapped[str] = mapped_column(String(64), primary_key=True)
    secret: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookEvent(Base):
    """The end of a job that has a ``callback_url``: the event to deliver, written once by
    whichever web process sees the job finished first (the unique ``job_id``), and sent by
    the web processes' senders under a lease (``lease_until``) with retries
    (``next_attempt_at``) until it is ``delivered`` or ``failed`` (attempts used up)."""

    __tablename__ = "webhook_events"
    __table_args__ = (Index("ix_webhook_events_state_next", "state", "next_attempt_at"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    job_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), unique=True)
    owner: Mapped[str] = mapped_column(String(64), default="", server_default="")
    url: Mapped[str] = mapped_column(String(2048))
    payload: Mapped[dict[str, Any]]
    state: Mapped[str] = mapped_column(String(16), default="pending")  # delivered | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    lease_until: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookDelivery(Base):
    """One attempt to deliver a job's event: when, the HTTP status the receiver answered
    (None when none came back) and the error."""

    __tablename__ = "webhook_deliveries"

    event_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("webhook_events.id", ondelete="CASCADE"), primary_key=True)
    attempt: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    job_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    sent_at: Mapped[datetime] = mapped_column(default=utcnow)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    duration_s: Mapped[float] = mapped_column(Float)


class Evaluation(Base):
    """A stored ``POST /models/{id}/evaluate``: the model, the dataset, when and by whom
    (the owner of the key that asked), and the metrics (``EvaluationPublic``'s fields).
    ``owner`` is the model's (tenancy: whoever sees the model sees its evaluations).  The
    dataset may be deleted later: its id and name stay, the link goes (SET NULL)."""

    __tablename__ = "evaluations"
    __table_args__ = (Index("ix_evaluations_model_created_at", "model_id", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    model_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"))
    dataset_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("datasets.id", ondelete="SET NULL"), index=True)
    dataset_ref: Mapped[uuid.UUID]  # the dataset's id, kept after the dataset is deleted
    dataset_name: Mapped[str] = mapped_column(String(255))
    owner: Mapped[str] = mapped_column(String(64), default="", server_default="")
    created_by: Mapped[str] = mapped_column(String(64), default="", server_default="")
    metrics: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiKey(Base):
    """A key created through ``/api-keys`` (``app.core.keyring``): only its SHA-256 digest
    is stored; ``owner`` is the tenant it acts for (a name, or ``key:...`` for a key that is
    its own owner), ``scope`` read / train / admin.  Revoking sets ``revoked_at`` (the row
    stays: its id stays meaningful in listings, and a service that once had keys never
    becomes open by revoking them)."""

    __tablename__ = "api_keys"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(255))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    scope: Mapped[str] = mapped_column(String(8))
    owner: Mapped[str] = mapped_column(String(64))
    created_by: Mapped[str] = mapped_column(String(64), default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
