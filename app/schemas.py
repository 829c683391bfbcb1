"""Request and response schemas of the API (``XPublic`` / ``XsPublic{data, count}`` families).

The solver parameters of ``POST /jobs`` are a discriminated union (on ``solver``) of every
parameter model in the solver registry, built here from the registry, so the OpenAPI spec and
generated clients stay typed as solvers are added.
"""

from __future__ import annotations

import functools
import operator
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    FiniteFloat,
    NonNegativeInt,
    computed_field,
)

import solvers
from app.crud.registry import SLUG_PATTERN
from app.db.models import (
    AliasEvent,
    Dataset,
    Job,
    JobKind,
    JobLogEntry,
    JobStatus,
    ModelAlias,
    ModelVersion,
    RegisteredModel,
    TrainedModel,
    WebhookDelivery,
)
from app.jobs.state import progress_stage
from app.problem import key_fields
from app.tags import KEY_PATTERN, MAX_KEY_LENGTH, MAX_TAGS, MAX_VALUE_LENGTH, check_count
from solvers.base import C_RANGE, MIN_RELATIVE_TOL
from solvers.evaluate import SCORES
from solvers.model_selection import REGRESSION_SCORES

TagKey = Annotated[str, Field(min_length=1, max_length=MAX_KEY_LENGTH, pattern=KEY_PATTERN)]
TagValue = Annotated[str, Field(max_length=MAX_VALUE_LENGTH)]
Tags = Annotated[dict[TagKey, TagValue], AfterValidator(check_count), Field(
    description=f"Labels to group and find runs by (filter lists with ?tag=key:value): at most "
                f"{MAX_TAGS}, keys of 1-{MAX_KEY_LENGTH} letters, digits and _ . - /, values "
                f"of at most {MAX_VALUE_LENGTH} characters.")]
StoredTags = Annotated[dict[str, str], BeforeValidator(lambda tags: tags or {})]
"""Tags as stored (null for rows older than tags: none)."""


class TagsPatch(BaseModel):
    """A change of a job's or model's tags: merged into them (a null value removes the
    tag)."""

    model_config = ConfigDict(extra="forbid")

    tags: Annotated[dict[TagKey, TagValue | None], AfterValidator(check_count)] = Field(
        description="Tags to set (a string) or remove (null); the others stay.")


def _solver_params_union():
    models = [spec.params_model for spec in solvers.list_solvers()]
    return Annotated[functools.reduce(operator.or_, models), Field(discriminator="solver")]


SolverParamsUnion = _solver_params_union()


class RowView(BaseModel):
    """The public view of a database row: the row's attributes of the same names."""

    @classmethod
    def from_row(cls, row: Dataset | TrainedModel | JobLogEntry) -> Self:
        return cls.model_validate(row, from_attributes=True)


# -- errors ---------------------------------------------------------------------------------


class FieldError(BaseModel):
    """One problem with a request field."""

    loc: list[str | int] = Field(description="Where: 'body', 'query', 'path', then field names.")
    message: str
    type: str


class Problem(BaseModel):
    """The body of every error response (4xx and 5xx): an RFC 9457 problem, sent as
    ``application/problem+json``, with this service's extension members."""

    type: str = Field(
        "about:blank",
        description="The problem type: urn:svmsvc:problem:<slug> (docs/service.md lists them), "
                    "or about:blank when the status says it all (unknown path, wrong method).")
    title: str = Field(description="A short summary of the problem type; the same for every "
                                   "occurrence of the type.")
    status: int = Field(description="The HTTP status code.")
    detail: str = Field(description="What went wrong in this occurrence, for people.")
    instance: str | None = Field(None, description="The path of the request that failed.")
    line: int | None = Field(None, description="SVMlight input: 1-based line of the error.")
    token: str | None = Field(None, description="The offending token, when there is one.")
    errors: list[FieldError] | None = Field(None, description="Request validation problems.")
    setting: str | None = Field(
        None, description="The setting (environment variable) whose limit the request "
                          "exceeds, e.g. SVMSVC_MAX_UPLOAD_BYTES.")


# -- datasets -------------------------------------------------------------------------------


class DatasetUpload(BaseModel):
    """The multipart body of ``POST /datasets`` (documentation only: the body is streamed)."""

    file: bytes = Field(description="SVMlight / LIBSVM text, optionally gzip, bzip2 or xz "
                                    "compressed.")


MAX_SHARDS = 10_000
"""Most shards one sharded dataset may name."""

MAX_SHARDS_PAGE = 1000
"""Most shards one answer names (``GET /datasets/{id}``'s ``shard_limit``)."""


class DatasetShardedCreate(BaseModel):
    """A dataset registered from SVMlight shards that the Dask workers parse where they are
    (nothing is uploaded; the API process does not read them)."""

    model_config = ConfigDict(extra="forbid")

    shards: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(
        min_length=1, max_length=MAX_SHARDS,
        description="The shards, in order: absolute local paths every Dask worker sees "
                    "(inside a directory of SVMSVC_SHARD_ROOTS; file:// URLs alike) or URLs "
                    "of a scheme in SVMSVC_SHARD_SCHEMES (s3://bucket/part-0.svm).")
    name: str | None = Field(None, max_length=255,
                             description="A name; default: the first shard's file name.")
    n_features: int | None = Field(
        None, ge=1, description="The width of the feature matrix (default: the largest "
                                "feature index over the shards).")
    zero_based: bool = Field(False, description="Feature indices in the shards start at 0.")


class LabelSummary(BaseModel):
    """A dataset's labels in numbers: what tells classes or ranks from real values."""

    distinct: int = Field(description="Distinct label values.")
    integers: bool = Field(description="Every label is a whole number (classes or ranks may "
                                       "be meant; real values otherwise: task=regression).")
    min: float | None = Field(None, description="Smallest label (null for text labels).")
    max: float | None = Field(None, description="Largest label (null for text labels).")
    mean: float | None = Field(None, description="Mean label (null for text labels).")


class DatasetPublic(RowView):
    """A stored dataset and its statistics."""

    id: uuid.UUID
    name: str = Field(description="File name of the first upload of this content.")
    sha256: str = Field(description="SHA-256 of the canonical arrays (the content address); "
                                    "a sharded dataset: of its shard list and options.")
    kind: Literal["uploaded", "sharded"] = Field(
        "uploaded", description="uploaded: arrays stored by the service; sharded: SVMlight "
                                "shards read by the Dask workers where they are.")
    shards: list[str] | None = Field(
        None, description="A sharded dataset's shards, in order: in GET /datasets/{id} the page "
                          "shard_offset, shard_limit (at most 1000 a page), in a registration's "
                          "answer the first 1000; null in a list of datasets (n_shards says "
                          "how many), and for an uploaded dataset.")
    n_shards: int | None = Field(None, description="How many shards (null when uploaded).")
    zero_based: bool | None = Field(None, description="A sharded dataset: feature indices "
                                                      "start at 0.")
    scanned_at: datetime | None = Field(
        None, description="A sharded dataset: when a job last read its shards on the cluster "
                          "(its statistics are theirs; all null before).")
    n_samples: int | None
    n_features: int | None
    nnz: int | None
    density: float | None
    class_counts: dict[str, int] | None = Field(
        description="Examples per label (labels as text); null when the dataset has more "
                    "distinct labels than SVMSVC_MAX_CLASSES (real values, a regression's: "
                    "label_summary describes them).")
    label_summary: LabelSummary | None = Field(
        None, description="What the labels are, whatever the task (null for a sharded "
                          "dataset, and for one stored before this field).")
    has_qid: bool
    has_sample_weight: bool
    upload_bytes: int = Field(description="Bytes of the first upload, as sent (0: sharded).")
    stored_bytes: int = Field(description="Bytes of the stored arrays (0: sharded).")
    created_at: datetime

    @classmethod
    def from_row(cls, row: Dataset, shard_offset: int = 0,
                 shard_limit: int | None = MAX_SHARDS_PAGE) -> DatasetPublic:
        """The public view of a database row: a sharded dataset's shards from
        ``shard_offset``, at most ``shard_limit`` (None: none, the view of a list, whose
        bytes then do not grow with the shards: a registration may name 10,000 of 4 kB)."""
        public = cls.model_validate(row, from_attributes=True)
        if row.source is not None:
            shards = row.source["shards"]
            if shard_limit is not None:
                public.shards = list(shards[shard_offset:shard_offset + shard_limit])
            public.n_shards = len(shards)
            public.zero_based = bool(row.source.get("zero_based", False))
        return public


NextPage = Annotated[str | None, Field(
    description="The next page (this request with `offset` past this page's items; a path "
                "and query), or null on the last page.  A page ends at `limit` items or "
                "before the item that would take its items' JSON past SVMSVC_MAX_LIST_BYTES, "
                "whichever comes first (app.api.pages).")]
"""The ``next`` link of a list answer's page."""


class DatasetsPublic(BaseModel):
    """A page of datasets, newest first."""

    data: list[DatasetPublic]
    count: int = Field(description="Datasets in all (not only this page).")
    next: NextPage = None


# -- jobs -----------------------------------------------------------------------------------


class TuningSpec(BaseModel):
    """Cross-validation over a grid (``solvers.model_selection.cross_validate``): stratified,
    seeded folds (a regression's seeded, not stratified); every fold solves the C grid from
    small to large, warm-started where the solver can; kernel solvers also search ``gamma``,
    a regression its tube width ``epsilon``, smo's nu-SVC and nu-SVR their ``nu``.  The job
    then refits the solver on all the data at the best point (highest mean ``scoring``,
    accuracy by default; ordinal: lowest mean absolute rank error; regression: lowest mean
    squared error, or highest R^2), and that is the job's model.  A one-class SVM is not
    tuned (422): its rows have no labels to score held-out predictions by."""

    model_config = ConfigDict(extra="forbid")

    C: list[Annotated[float, Field(ge=C_RANGE[0], le=C_RANGE[1])]] = Field(
        default_factory=lambda: [2.0 ** k for k in range(-5, 6)], min_length=1, max_length=50,
        description="The grid of C (default 2^-5 .. 2^5; each within 1e-12 .. 1e12, as "
                    "the solvers' C).")
    gamma: list[Annotated[float, Field(gt=0)]] | None = Field(
        None, min_length=1, max_length=20,
        description="The grid of the kernel's gamma (kernel solvers only).")
    epsilon: list[Annotated[float, Field(ge=0, le=1e6)]] | None = Field(
        None, min_length=1, max_length=20,
        description="The grid of a regression's tube width epsilon (LIBLINEAR's -p; mfn's "
                    "insensitivity): task='regression' only, not smo's nu_svr (its nu sets "
                    "the tube).")
    nu: list[Annotated[float, Field(gt=0, le=1)]] | None = Field(
        None, min_length=1, max_length=20,
        description="The grid of nu (0 < nu <= 1): smo with svm_type 'nu_svc' or 'nu_svr' "
                    "only.")
    folds: int = Field(5, ge=2, le=20, description="Number of folds.")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="Seed of the stratified folds.")
    fit_gap: float | None = Field(
        1e-3, ge=MIN_RELATIVE_TOL, lt=1,
        description="Every fold's fit stops at this certified relative duality gap, through "
                    "the solver's tol (every solver that certifies a gap has it; the "
                    "least-squares family does not); null: each fit runs to the solver's own "
                    "stopping rule as the params say. The refit uses the params as given.")
    scoring: Literal[SCORES + REGRESSION_SCORES] = Field(  # type: ignore[valid-type]
        "accuracy",
        description="The fold score the best point optimizes (solvers.evaluate.SCORES, "
                    "higher is better): accuracy, balanced_accuracy, f1_macro, "
                    "precision_macro, recall_macro, roc_auc (binary, or the mean one-vs-rest "
                    "AUC), average_precision (two labels only). Ordinal regression is scored "
                    "by the mean absolute rank error only. A regression (task='regression') "
                    "by mean_squared_error (lowest best; what the default, accuracy, means "
                    "for it) or r2 (highest best).")


CallbackUrl = Annotated[str | None, Field(
    min_length=1, max_length=2048,
    description="POST the job's end here as a signed JSON event (docs/service.md, Webhooks): "
                "an http(s) URL whose host SVMSVC_WEBHOOK_ALLOWED_HOSTS lists (422 otherwise). "
                "Deliveries: GET /jobs/{id}/deliveries.")]
"""A job's webhook (either kind)."""


class JobCreate(BaseModel):
    """A job to queue: the dataset, the solver and its parameters; with ``tuning``, a tuning
    job that cross-validates over a grid (the grid's C and gamma override those of
    ``params``) and refits at the best point."""

    model_config = ConfigDict(extra="forbid")

    dataset_id: uuid.UUID
    params: SolverParamsUnion = Field(  # type: ignore[valid-type]
        description="The solver (``solver``) and its parameters; see GET /solvers.")
    time_limit_s: float | None = Field(
        None, gt=0, description="Stop the job (status failed) after this many seconds: at most "
                                "SVMSVC_MAX_JOB_TIME_LIMIT_S (422 past it); null: "
                                "SVMSVC_JOB_TIME_LIMIT_S.")
    validation_dataset_id: uuid.UUID | None = Field(
        None, description="Evaluate the model on this dataset when training succeeds.")
    tuning: TuningSpec | None = Field(
        None, description="Make this a tuning job: cross-validation over a grid, then the "
                          "model refitted at the best point. Its log holds one record per "
                          "(fold, grid point): the fold's score as the optimality.")
    keep_last_good: bool = Field(
        False, description="When the solver fails but keeps its last good point (mfn does), "
                           "store that point as the model: the job then succeeds with "
                           "solver_status 'failed' and a message saying so. Default: the job "
                           "fails without a model.")
    tags: Tags = Field(default_factory=dict)
    model_name: str | None = Field(
        None, pattern=SLUG_PATTERN,
        description="Register the model as the next version (1, 2, 3 ...) of this named model "
                    "of the caller's owner when the job succeeds (GET /registry/{name}); a "
                    "slug: 1-64 lowercase letters, digits, '_' and '-'.")
    callback_url: CallbackUrl = None


class PredictionJobCreate(BaseModel):
    """A batch prediction job: the model scores every row of a stored (or sharded) dataset
    into a result file, downloadable when the job succeeds (GET /jobs/{id}/predictions)."""

    model_config = ConfigDict(extra="forbid")

    model_id: uuid.UUID = Field(description="The model that predicts (the caller's).")
    dataset_id: uuid.UUID = Field(
        description="The rows to predict (their labels are ignored); at most the model's "
                    "features (a narrower dataset is padded with zero columns).")
    format: Literal["csv", "parquet"] = Field(
        "csv", description="The result's format: csv, or parquet when the service has pyarrow "
                           "(422 otherwise).")
    time_limit_s: float | None = Field(
        None, gt=0, description="Stop the job (status failed) after this many seconds: at most "
                                "SVMSVC_MAX_JOB_TIME_LIMIT_S; null: SVMSVC_JOB_TIME_LIMIT_S.")
    callback_url: CallbackUrl = None


class CrossValidationRow(BaseModel):
    C: float
    gamma: float | None
    epsilon: float | None = Field(None, description="The tube width (an epsilon grid).")
    nu: float | None = Field(None, description="nu (a nu grid).")
    mean: float = Field(description="Mean fold score (the tuning's scoring, the mean "
                                    "absolute rank error, or a regression's mean squared "
                                    "error).")
    std: float
    fold_scores: list[float]
    objective: float = Field(description="Mean training objective over the folds.")
    seconds: float = Field(description="Training time summed over the folds.")


class CrossValidationPublic(BaseModel):
    """A tuning job's result: the table and the best point."""

    metric: str = Field(description="The tuning's scoring (higher is better: accuracy, "
                                    "balanced_accuracy, f1_macro, ..., r2) or "
                                    "mean_absolute_rank_error (ordinal regression) or "
                                    "mean_squared_error (regression): lower is better.")
    folds: int
    warm_start: bool = Field(description="Whether each fold's C path was warm-started.")
    fit_gap: float | None = Field(
        None, description="The certified relative duality gap every fit stopped at (null: "
                          "each fit ran to the solver's own rule).")
    fit_gap_parameter: str | None = Field(
        None, description="The solver parameter that set fit_gap (tol; null without fit_gap).")
    parallel_folds: int = Field(
        1, description="How many folds were fitted at once (each in its own thread).")
    best_C: float | None
    best_gamma: float | None
    best_epsilon: float | None = None
    best_nu: float | None = None
    status: str
    message: str
    table: list[CrossValidationRow]


class JobProgress(BaseModel):
    """The latest iteration record of a running or finished job."""

    iteration: int
    elapsed: float | None
    objective: float | None
    optimality: float | None
    stage: str | None = Field(
        None, description="Where the latest record stands: a one-vs-rest job's 'class 3 of "
                          "26 (label C)', a one-vs-one job's 'pair 4 of 45 (3-7)', a tuning "
                          "job's 'C 3 of 11, fold 2 of 5' then 'refit at the best point' "
                          "(null for one binary problem).")


class PredictionResultPublic(BaseModel):
    """A batch prediction job's stored result."""

    format: Literal["csv", "parquet"]
    rows: int = Field(description="Rows predicted (one line or record each).")
    bytes: int = Field(description="Size of the result file.")
    columns: list[str] = Field(
        description="row, label, the decision values (decision_value, or decision_value_0 "
                    "...), then probability_<label> per class for a model with probabilities; "
                    "a one-class model's: row, label, decision_value, outlier; a regression "
                    "model's: row, value.")
    seconds: float = Field(description="Time the worker took to read, score and write.")
    download: str = Field(description="Where to download it (a streamed response).")


def shown_params(solver: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` without the fields that did nothing for what they trained
    (:meth:`solvers.base.SolverParams.shown`: a linear solver's low-rank fields without an
    approximation, a kernel's unused constants, ...), for the pages people read."""
    from solvers.registry import get_solver

    try:
        return get_solver(params.get("solver", solver)).params_model.shown(params)
    except ValueError:  # a solver this version no longer has: everything, unfiltered
        return dict(params)


class JobPublic(BaseModel):
    """A job: ``queued -> running -> succeeded | failed | cancelled``; ``kind`` says whether it
    trains a model or predicts a dataset with one (a batch prediction job)."""

    id: uuid.UUID
    kind: JobKind = Field(JobKind.train, description="train, or predict (a batch prediction "
                                                     "job: model_id is the model it uses).")
    dataset_id: uuid.UUID
    validation_dataset_id: uuid.UUID | None
    solver: str
    params: dict[str, Any] = Field(description="The validated parameters, defaults included.")
    time_limit_s: float | None
    status: JobStatus
    attempts: int = Field(description="Runs started; a restart may re-queue a running job.")
    cancel_requested: bool
    progress: JobProgress | None
    solver_status: str | None = Field(
        None, description="converged | max_iter | failed | stopped, once the solver returned.")
    message: str | None = Field(None, description="The solver's message, or why it stopped.")
    error: str | None = Field(None, description="Why the job failed.")
    model_id: uuid.UUID | None = Field(
        description="A training job's model once it succeeded; a prediction job's model.")
    rows_done: int | None = Field(None, description="A prediction job's rows predicted so far.")
    rows_total: int | None = Field(
        None, description="A prediction job's rows in all (null for a sharded dataset not read "
                          "yet).")
    result: PredictionResultPublic | None = Field(
        None, description="A prediction job's result, once it succeeded.")
    callback_url: str | None = Field(None, description="Where the job's end is POSTed.")
    tuning: TuningSpec | None = Field(None, description="A tuning job's grid and folds.")
    cross_validation: CrossValidationPublic | None = Field(
        None, description="A tuning job's table, once it ran.")
    problem_key: str | None = Field(
        None, description="The problem the job solves, normalized: dataset, task, multiclass "
                          "strategy, loss (p for lp), C, bias mode (bias_scale when "
                          "regularized), kernel and its parameters; jobs with equal keys "
                          "solve the same problem whatever their solver (filter GET /jobs by "
                          "it). None for a tuning job.")
    problem: dict[str, Any] | None = Field(
        None, description="The fields of problem_key (dataset, task, multiclass, loss, C, "
                          "bias, ...).")
    keep_last_good: bool = Field(
        False, description="Whether a failed solver's last good point is kept as the model.")
    tags: dict[str, str] = Field(default_factory=dict, description="The job's tags (its model "
                                                                    "gets them when stored).")
    model_name: str | None = Field(
        None, description="The registered model the job's model becomes a version of.")
    model_version: int | None = Field(
        None, description="The version its model became (once the job succeeded).")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @computed_field(description="The parameters that do something for this job: params "
                                "without the low-rank path's fields on a linear solver, a "
                                "kernel's unused constants, ... (SolverParams.shown).")
    @property
    def shown_params(self) -> dict[str, Any]:
        return shown_params(self.solver, self.params)

    @classmethod
    def from_row(cls, job: Job) -> JobPublic:
        """The public view of a database row."""
        progress = None
        if job.iteration is not None:
            progress = JobProgress(iteration=job.iteration, elapsed=job.elapsed,
                                   objective=job.objective, optimality=job.optimality,
                                   stage=job.progress_stage)
        predicts = job.kind == JobKind.predict
        result = None
        if job.result is not None:
            result = PredictionResultPublic(
                **{key: job.result[key] for key in ("format", "rows", "bytes", "columns",
                                                    "seconds")},
                download=f"/api/v1/jobs/{job.id}/predictions")
        return cls(
            id=job.id, kind=JobKind(job.kind), dataset_id=job.dataset_id,
            rows_done=job.rows_done, rows_total=job.rows_total, result=result,
            callback_url=job.callback_url,
            validation_dataset_id=job.validation_dataset_id, solver=job.solver,
            params=job.params, time_limit_s=job.time_limit_s, status=JobStatus(job.status),
            attempts=job.attempts, cancel_requested=job.cancel_requested_at is not None,
            progress=progress, solver_status=job.solver_status, message=job.message,
            error=job.error,
            model_id=(job.predict_model_id if predicts else
                      job.model.id if job.model is not None else None),
            tuning=job.tuning, cross_validation=_cross_validation(job.cross_validation),
            problem_key=job.problem_key,
            problem=None if job.problem_key is None else key_fields(job.problem_key),
            keep_last_good=bool(job.keep_last_good), tags=job.tags or {},
            model_name=job.model_name,
            model_version=(job.model.version.version
                           if job.model is not None and job.model.version is not None
                           else None),
            created_at=job.created_at, started_at=job.started_at, finished_at=job.finished_at,
        )


def _cross_validation(stored: dict[str, Any] | None) -> CrossValidationPublic | None:
    if stored is None:
        return None
    best = stored.get("best_C")
    return CrossValidationPublic(
        metric=stored["metric"], folds=stored["folds"], warm_start=stored["warm_start"],
        fit_gap=stored.get("fit_gap"), fit_gap_parameter=stored.get("fit_gap_parameter"),
        parallel_folds=stored.get("parallel_folds", 1),
        best_C=best if best is not None and best == best else None,  # NaN: nothing finished
        best_gamma=stored.get("best_gamma"), best_epsilon=stored.get("best_epsilon"),
        best_nu=stored.get("best_nu"), status=stored["status"],
        message=stored["message"], table=stored["table"])


class WebhookDeliveryPublic(RowView):
    """One attempt to deliver a job's event."""

    attempt: int
    sent_at: datetime
    status_code: int | None = Field(description="What the receiver answered (null: nothing).")
    error: str | None = Field(description="Why the attempt failed (null: delivered).")
    duration_s: float

    @classmethod
    def from_row(cls, row: WebhookDelivery) -> WebhookDeliveryPublic:
        return cls.model_validate(row, from_attributes=True)


class WebhookDeliveriesPublic(BaseModel):
    """A job's webhook: its event (once the job ended) and every delivery attempt."""

    job_id: uuid.UUID
    callback_url: str | None
    state: Literal["waiting", "pending", "delivered", "failed"] | None = Field(
        description="null: no callback_url; waiting: the job has not ended (or its event is "
                    "being written); pending: to be (re)tried; delivered: a 2xx came back; "
                    "failed: SVMSVC_WEBHOOK_MAX_ATTEMPTS used up.")
    attempts: int
    next_attempt_at: datetime | None = Field(description="When a pending event is tried next.")
    event: dict[str, Any] | None = Field(description="The JSON body POSTed (signed each time).")
    data: list[WebhookDeliveryPublic] = Field(description="The attempts, oldest first.")
    count: int


class WebhookSecretPublic(BaseModel):
    """The owner's webhook signing secret."""

    secret: str = Field(description="The HMAC-SHA256 key of X-Svmsvc-Signature.")
    created_at: datetime
    header: str = Field("X-Svmsvc-Signature", description="The header that carries the "
                                                          "signature.")
    scheme: str = Field(
        "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, '<t>.' + raw body)>",
        description="How the header is built: recompute v1 over the raw body and compare in "
                    "constant time; refuse a t far from now (replays).")


class JobsPublic(BaseModel):
    """A page of jobs, newest first."""

    data: list[JobPublic]
    count: int = Field(description="Jobs matching the filter in all (not only this page).")
    next: NextPage = None


class LogRecordPublic(RowView):
    """One solver iteration: numbered consecutively across one-vs-rest subproblems."""

    iteration: int
    elapsed: float = Field(description="Seconds since the attempt's started_at when the record "
                                       "reached the service: the clock of the job's elapsed "
                                       "time (finished_at - started_at), one across its "
                                       "subproblems, folds and refit; the solver's own in "
                                       "extras.solver_elapsed.")
    objective: float | None = Field(description="Primal objective (docs/design.md section 2.1).")
    optimality: float | None = Field(description="The solver's own optimality measure.")
    extras: dict[str, Any]
    stage: str | None = Field(
        None, description="Where the record stands in its job, in words (a job's "
                          "progress.stage at this record): 'class 3 of 26 (label 3)', 'C 2 of "
                          "3, fold 1 of 5', 'refit at the best point'; null for a single "
                          "binary problem.")

    @classmethod
    def from_row(cls, row: JobLogEntry) -> LogRecordPublic:
        """The public view of a database row, with its stage in words."""
        record = super().from_row(row)
        record.stage = progress_stage(row.extras or {})
        return record


class JobLogPublic(BaseModel):
    """A page of a job's convergence log, oldest record first."""

    data: list[LogRecordPublic]
    count: int = Field(description="Records stored for the job in all.")
    has_more: bool = Field(description="Whether records follow this page "
                                       "(ask again with after = the last iteration).")


class JobLogSeries(BaseModel):
    """One job of a multi-job log fetch: the job and its (down-sampled) log."""

    job: JobPublic
    data: list[LogRecordPublic] = Field(description="The records, oldest first.")
    count: int = Field(description="Records stored for the job in all.")
    best_objective: float | None = Field(
        description="The lowest objective in the job's whole log (kept by the down-sampling).")


class JobLogsPublic(BaseModel):
    """Several jobs' logs, for laying their convergence over each other."""

    data: list[JobLogSeries] = Field(description="In the order the jobs were asked for.")
    count: int
    best_objective: float | None = Field(
        description="The lowest objective any of the jobs reached: the reference of the "
                    "relative gap (f - best) / |best| when they share a problem.")
    same_problem: bool = Field(
        description="Whether every job has the same (non-null) problem key.")


# -- models ---------------------------------------------------------------------------------


class ClassCounts(BaseModel):
    """How one label fared in an evaluation."""

    label: int | float | str
    true_count: int = Field(description="Examples with this label.")
    predicted_count: int = Field(description="Examples predicted as this label.")
    correct: int = Field(description="Examples with this label predicted correctly.")
    precision: float | None = Field(None, description="correct / predicted_count (0 if none).")
    recall: float | None = Field(None, description="correct / true_count (0 if none).")
    f1: float | None = Field(None, description="2 correct / (true_count + predicted_count).")


class RocCurve(BaseModel):
    """Points of a binary model's ROC curve, those of ``sklearn.metrics.roc_curve``, at most
    200 (evenly spaced along the curve past that, the first and last kept)."""

    fpr: list[float] = Field(description="False positive rate at each threshold.")
    tpr: list[float] = Field(description="True positive rate at each threshold.")
    thresholds: list[float | None] = Field(
        description="Decision-value thresholds, decreasing; the first (+infinity, no example "
                    "positive) is null.")


class PredictedVsTrue(BaseModel):
    """A regression's predictions beside the labels, for plots (at most 500 rows, evenly
    spaced over the dataset)."""

    true: list[float]
    predicted: list[float]


class DecisionHistogram(BaseModel):
    """A one-class model's decision values counted in equal bins."""

    edges: list[float] = Field(description="The bins' edges (one more than counts).")
    counts: list[int]
    by_label: dict[str, list[int]] | None = Field(
        None, description="The counts of each label's rows, when the labels have two values.")


class EvaluationPublic(BaseModel):
    """A model's predictions on a dataset against its labels: a classifier's accuracy, ROC
    and confusion matrix; a regression's errors (task 'regression'); a one-class model's
    outlier fraction (task 'one_class').  The fields of another task are null."""

    dataset_id: uuid.UUID
    task: Literal["classification", "ordinal", "regression", "one_class"] = Field(
        "classification", description="The model's task: which fields below it has.")
    n_samples: int
    accuracy: float | None = Field(None, description="Classifiers: the share of examples "
                                                     "labelled right.")
    mean_squared_error: float | None = Field(
        None, description="Regression: the mean of (y - f(x))^2 (LIBSVM's 'Mean squared "
                          "error').")
    mean_absolute_error: float | None = Field(None, description="Regression: mean |y - f(x)|.")
    r2: float | None = Field(
        None, description="Regression: 1 - SSE/SST, scikit-learn's coefficient of "
                          "determination (null for constant labels).")
    squared_correlation: float | None = Field(
        None, description="Regression: the squared correlation of predictions and labels "
                          "(LIBSVM's 'Squared correlation coefficient').")
    predicted_vs_true: PredictedVsTrue | None = Field(
        None, description="Regression: (true, predicted) pairs for the residual plots.")
    outlier_fraction: float | None = Field(
        None, description="One-class: the share of examples predicted outliers (decision "
                          "value <= 0).")
    inlier_label: int | float | str | None = Field(
        None, description="One-class with labels of two values: the label taken as the "
                          "inliers' (the larger) for roc_auc.")
    decision_histogram: DecisionHistogram | None = Field(
        None, description="One-class: the distribution of the decision values.")
    balanced_accuracy: float | None = Field(
        None, description="Mean recall over the labels the dataset has.")
    precision_macro: float | None = None
    recall_macro: float | None = None
    f1_macro: float | None = Field(
        None, description="Mean F1 over the labels the dataset has or the model predicts.")
    roc_auc: float | None = Field(
        None, description="From the decision values: binary, or the mean one-vs-rest AUC "
                          "of a multi-class model; one-class: the inliers (inlier_label) "
                          "ranked above the others (null where undefined).")
    average_precision: float | None = Field(None, description="Binary models only.")
    roc_curve: RocCurve | None = Field(
        None, description="Binary models: the ROC curve from the decision values (null "
                          "otherwise, or without both labels in the dataset).")
    log_loss: float | None = Field(
        None, description="Models trained with probability=true: the mean -log of the "
                          "probability of each example's label (null otherwise, or when the "
                          "dataset has a label the model does not know).")
    labels: list[int | float | str] | None = Field(
        None, description="Classifiers: the model's classes in order, then labels only the "
                          "dataset has.")
    confusion_matrix: list[list[int]] | None = Field(
        None, description="Classifiers: row i, column j: examples of labels[i] predicted as "
                          "labels[j].")
    per_class: list[ClassCounts] | None = None


class StoredEvaluationPublic(EvaluationPublic):
    """An evaluation kept by ``POST /models/{id}/evaluate``: the metrics, with the model
    (its id: a model never changes), the dataset, when and by whom."""

    id: uuid.UUID
    model_id: uuid.UUID
    dataset_id: uuid.UUID = Field(description="The dataset's id (kept after it is deleted).")
    dataset_name: str
    created_at: datetime = Field(description="When the evaluation was made.")
    created_by: str = Field(description="The owner of the key that asked for it ('' on a "
                                        "service without keys).")

    @classmethod
    def from_row(cls, row) -> StoredEvaluationPublic:
        return cls(**{**row.metrics, "id": row.id, "model_id": row.model_id,
                      "dataset_id": row.dataset_ref, "dataset_name": row.dataset_name,
                      "created_at": row.created_at, "created_by": row.created_by})


class StoredEvaluationsPublic(BaseModel):
    """A model's stored evaluations, newest first."""

    data: list[StoredEvaluationPublic]
    count: int
    next: NextPage = None


class SubproblemPublic(BaseModel):
    """One binary problem of a training run (one class against the rest, or the only one)."""

    label: str = Field(description="The class against the rest (or the positive class).")
    objective: float | None
    status: str
    message: str
    iterations: int


class ModelPublic(RowView):
    """A trained model: what produced it and how training went."""

    id: uuid.UUID
    job_id: uuid.UUID | None
    dataset_id: uuid.UUID
    solver: str
    params: dict[str, Any]
    kind: str = Field(description="Model kind (linear, kernel, ...).")
    classes: list[int | float | str] = Field(
        description="The labels in their own type: integers stay integers (an SVMlight "
                    "file's 14 is 14, not 14.0).")
    n_features: int
    objective: float | None
    solver_status: str
    message: str
    iterations: int
    training_seconds: float
    training_data: dict[str, Any] = Field(description="Statistics of the training dataset.")
    subproblems: list[SubproblemPublic]
    validation: EvaluationPublic | None
    details: dict[str, Any] | None = Field(
        None, description="What the model's own metadata says beyond the fields above: "
                          "'approximation' (the low-rank path's method, kernel, gamma, rank "
                          "and landmarks), 'scaling', 'auto' (what auto chose and why), "
                          "'warnings', the probability sigmoids ('platt', 'pairwise_platt'); "
                          "null when there is nothing (or for a model older than this field).")
    size_bytes: int
    tags: StoredTags = Field(default_factory=dict,
                             description="Its job's tags when it was stored, then its own.")
    model_name: str | None = Field(None, description="The registered model it is a version "
                                                     "of (null: not registered).")
    model_version: int | None = Field(None, description="Its version number there.")
    created_at: datetime

    @classmethod
    def from_row(cls, row: TrainedModel) -> Self:
        public = cls.model_validate(row, from_attributes=True)
        if row.version is not None:
            public.model_name, public.model_version = row.version.name, row.version.version
        return public

    @computed_field(description="What the model predicts: classification (a label of "
                                "classes), ordinal (a rank), regression (a real value: "
                                "'value' of a prediction) or one_class (+1 inside the "
                                "estimated support, -1 an outlier: 'outlier').")
    @property
    def task(self) -> Literal["classification", "ordinal", "regression", "one_class"]:
        from solvers.models.base import task_of_kind

        return task_of_kind(self.kind)

    @computed_field(description="The parameters that did something for this model: params "
                                "without the low-rank path's fields on a linear model, a "
                                "kernel's unused constants, ... (SolverParams.shown).")
    @property
    def shown_params(self) -> dict[str, Any]:
        return shown_params(self.solver, self.params)


class ModelsPublic(BaseModel):
    """A page of models, newest first."""

    data: list[ModelPublic]
    count: int
    next: NextPage = None


class PredictionPublic(BaseModel):
    """The prediction for one example."""

    label: int | float | str = Field(
        description="The predicted label: a class, a rank, a regression's real value (as "
                    "'value'), a one-class model's +1 (inside the support) or -1 (outlier).")
    decision_values: list[float] = Field(
        description="One score for a binary model (positive favours classes[1]), one per "
                    "class otherwise; a regression model's value f(x); a one-class model's "
                    "signed score w.phi(x) - rho (negative: an outlier).")
    value: float | None = Field(
        None, description="Regression models (task 'regression'): the predicted real value.")
    outlier: bool | None = Field(
        None, description="One-class models (task 'one_class'): whether the example lies "
                          "outside the estimated support (label -1).")
    probabilities: list[float] | None = Field(
        None, description="Class probabilities, in the order of `classes`: present when "
                          "the model was trained with probability=true (Platt sigmoids "
                          "fitted on out-of-fold decision values).")
    classes: list[int | float | str] | None = Field(
        None, description="The labels `probabilities` are of, in their order (the model's "
                          "classes): present with them.")


class PredictionsPublic(BaseModel):
    """Predictions for a batch, in the order of the examples."""

    data: list[PredictionPublic]
    count: int
    classes: list[int | float | str] | None = Field(
        None, description="The labels each row's `probabilities` are of, in their order (the "
                          "model's classes): present when the rows have probabilities.")


def _feature_index(key: Any) -> int:
    """A JSON row's key, strictly: decimal digits (no sign, space or underscore, which
    Python's int() would take) naming an index below 2^63."""
    if not (isinstance(key, str) and key.isascii() and key.isdigit()):
        raise ValueError(f"a feature index is decimal digits, not {str(key)[:20]!r}")
    if len(key) > 18 and int(key) >= 2 ** 63:
        raise ValueError(f"feature index {key[:30]} is out of range")
    return int(key)


FeatureIndex = Annotated[NonNegativeInt, BeforeValidator(_feature_index)]
"""A batch row's key: a feature index written as decimal digits."""
FeatureValue = Annotated[FiniteFloat, Field(strict=True)]
"""A batch row's value: a finite JSON number (true, "1" and the like are refused)."""


class PredictBatchRequest(BaseModel):
    """Examples as JSON: one object per example mapping feature index to value."""

    model_config = ConfigDict(extra="forbid")

    rows: list[dict[FeatureIndex, FeatureValue]] = Field(
        min_length=1, examples=[[{"3": 0.5, "7": 1.0}, {"1": -0.25}]],
        description="At least one example.",
        json_schema_extra={"items": {  # the keys are feature indices: say so in the spec
            "type": "object", "propertyNames": {"pattern": "^[0-9]+$"},
            "additionalProperties": {"type": "number"}}})


class EvaluateRequest(BaseModel):
    """The labelled dataset to evaluate a model on."""

    model_config = ConfigDict(extra="forbid")

    dataset_id: uuid.UUID


# -- solvers --------------------------------------------------------------------------------


class SolverCombination(BaseModel):
    """One (task, loss, bias) combination a solver solves."""

    task: str = Field(description="binary, ovr (one-vs-rest), crammer_singer, ovo (one-vs-one) "
                                  "or ordinal.")
    loss: str
    bias: str


class SolverPublic(BaseModel):
    """A registered solver: what it solves and the parameters it takes."""

    name: str
    description: str
    reference: str
    losses: list[str]
    bias_modes: list[str]
    tasks: list[str] = Field(description="The tasks it solves: binary, ovr (one-vs-rest), "
                                         "crammer_singer, ovo (one-vs-one), ordinal.")
    solves: list[SolverCombination] = Field(
        description="Every (task, loss, bias) combination it solves (its declaration: the "
                    "parameters refuse the others, saying why).")
    warm_start_tasks: list[str] = Field(
        default_factory=list,
        description="Tasks whose C paths (cross-validation, tuning jobs) share work along C "
                    "(each C from the last solution, or one kernel matrix for every C); the "
                    "other tasks solve each C cold.")
    params_schema: dict[str, Any] = Field(description="JSON schema of the parameters.")


class SolversPublic(BaseModel):
    """Every registered solver."""

    data: list[SolverPublic]
    count: int


class PoseRequest(BaseModel):
    """A problem (the fields of a job's ``problem``) to pose to every solver."""

    model_config = ConfigDict(extra="forbid")

    problem: dict[str, Any] = Field(
        description="task, multiclass, loss (p for lp), C, bias (bias_scale when regularized) "
                    "and a kernel's fields: a job's `problem`.")
    tol: float | None = Field(
        None, gt=0, lt=1,
        description="The certified relative duality gap every solver that has one stops at "
                    "(null: each solver's default, the same for all).")


class PosedSolver(BaseModel):
    """A solver's parameters for the posed problem, or why it does not solve it."""

    solver: str
    params: dict[str, Any] | None = Field(
        None, description="Parameters that pose the problem (POST them as a job's params).")
    reason: str | None = Field(None, description="Why the solver does not solve it.")


class PosedSolvers(BaseModel):
    """Every solver (but auto) with the parameters that pose one problem."""

    data: list[PosedSolver]
    count: int


# -- health ---------------------------------------------------------------------------------


class WorkerPublic(BaseModel):
    """One worker process of the pool."""

    index: int
    pid: int | None
    alive: bool
    ready: bool = Field(description="Started, with the kernels every solver shares compiled: "
                                    "it takes jobs.  Each solver's own kernels follow while "
                                    "it is idle, or when a job asks for them.")
    job_id: uuid.UUID | None = Field(
        description="The job it runs; shown to an admin key only (or on a service without "
                    "keys): null for other callers, as the job belongs to a tenant.")
    solvers_compiled: list[str] = Field(
        default_factory=list,
        description="The solvers whose own kernels it has compiled (or loaded from the cache), "
                    "in that order: a job of another solver compiles its kernels first, "
                    "saying so in its message (auto: the candidate it runs first only).")
    state: str | None = Field(
        None, description="What a worker not yet ready is doing: 'warming up kernels: k of n "
                          "(step)' (the first start on a machine compiles them, later ones "
                          "load them from the cache), or waiting for another process that "
                          "compiles them; of a ready worker, \"compiling solver NAME's kernels "
                          "while idle\" (it takes no job until that solver is done).")


class HealthPublic(BaseModel):
    """Liveness: the process answers."""

    status: str


class ReadinessPublic(BaseModel):
    """Readiness: the database answers and the pool can run jobs."""

    status: str = Field(description="ready or unavailable")
    database: bool
    dispatcher: bool
    workers: list[WorkerPublic]
    solvers_ready: list[str] = Field(
        default_factory=list,
        description="The solvers whose own kernels a ready worker has compiled: their jobs "
                    "start computing at once; the others' first job compiles them first "
                    "(seconds to minutes on a cold cache), saying so in its message.")
    message: str | None = Field(
        None, description="Why the service is not ready yet, in words (e.g. the workers' "
                          "warm-up progress).")


# -- API keys -------------------------------------------------------------------------------


class ApiKeyCreate(BaseModel):
    """A key to create: its name, scope and tenant, and optionally when it expires."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=255,
                      description="A label for people (whose key, what for).")
    scope: Literal["read", "train", "admin"] = Field(
        description="read (GETs, predictions), train (uploads, jobs) or admin (deletions, "
                    "keys).")
    owner: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$",
        description="The tenant the key acts for (1-64 letters, digits and _ . @ -, as in "
                    "SVMSVC_API_KEYS' scope:owner:key); null: the key is an owner of its own.")
    expires_at: datetime | None = Field(
        None, description="When the key stops working (with its time zone; in the future); "
                          "null: never.")


class ApiKeyPublic(BaseModel):
    """A key created through the API, without its secret."""

    id: uuid.UUID
    name: str
    scope: str
    owner: str = Field(description="The tenant it acts for ('key:...' for a key of its own).")
    created_by: str = Field(description="The owner of the admin key that created it.")
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    active: bool = Field(description="Neither revoked nor expired.")


class ApiKeyCreated(ApiKeyPublic):
    """A created key, with its secret: shown this once, never again."""

    secret: str = Field(description="The key to send (X-API-Key or Authorization: Bearer); "
                                    "only its SHA-256 digest is stored.")


class ApiKeysPublic(BaseModel):
    """The keys created through the API, newest first."""

    data: list[ApiKeyPublic]
    count: int
    next: NextPage = None
# -- registry -------------------------------------------------------------------------------


class AliasMove(BaseModel):
    """Where to point an alias."""

    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1, le=2**31 - 1, description="The version the alias points at.")


class AliasEventPublic(BaseModel):
    """One move of an alias: from_version null when it was created, to_version null when it
    was deleted."""

    from_version: int | None
    to_version: int | None
    moved_by: str = Field(description="The owner of the key that moved it.")
    moved_at: datetime

    @classmethod
    def from_row(cls, row: AliasEvent) -> AliasEventPublic:
        return cls.model_validate(row, from_attributes=True)


class AliasPublic(BaseModel):
    """An alias of a registered model, the version it points at and its history (newest
    move first)."""

    alias: str
    version: int | None = Field(description="null: the alias was deleted (its history stays).")
    model_id: uuid.UUID | None
    updated_by: str | None
    updated_at: datetime | None
    history: list[AliasEventPublic]

    @classmethod
    def from_row(cls, row: ModelAlias, events: list[AliasEvent]) -> AliasPublic:
        return cls(alias=row.alias, version=row.version, model_id=row.model_id,
                   updated_by=row.updated_by, updated_at=row.updated_at,
                   history=[AliasEventPublic.from_row(event) for event in events])

    @classmethod
    def deleted(cls, alias: str, events: list[AliasEvent]) -> AliasPublic:
        return cls(alias=alias, version=None, model_id=None, updated_by=None, updated_at=None,
                   history=[AliasEventPublic.from_row(event) for event in events])


class ModelVersionPublic(BaseModel):
    """A version of a registered model: the model, and what made it."""

    name: str
    version: int
    model_id: uuid.UUID
    job_id: uuid.UUID | None
    dataset_id: uuid.UUID
    solver: str
    params: dict[str, Any]
    metrics: dict[str, Any] = Field(
        description="objective, solver_status, iterations, training_seconds and, when the job "
                    "had a validation dataset, validation (accuracy, f1_macro, roc_auc ...).")
    created_by: str = Field(description="The owner of the key that queued the job.")
    created_at: datetime
    aliases: list[str] = Field(default_factory=list,
                               description="The aliases that point at this version.")

    @classmethod
    def from_row(cls, row: ModelVersion, aliases: list[str] | None = None) -> ModelVersionPublic:
        public = cls.model_validate(row, from_attributes=True)
        public.aliases = aliases or []
        return public


class RegisteredModelSummary(BaseModel):
    """A registered model in the list: its name, latest version and aliases."""

    name: str
    latest_version: int = Field(description="The number the newest version took.")
    versions: int = Field(description="How many versions it has (deleted ones not counted).")
    aliases: dict[str, int] = Field(description="alias: version.")
    created_at: datetime
    updated_at: datetime


class RegisteredModelsPublic(BaseModel):
    """A page of the caller's registered models, by name."""

    data: list[RegisteredModelSummary]
    count: int
    next: NextPage = None


class RegisteredModelPublic(BaseModel):
    """A registered model: its versions (newest first) and its aliases with their history."""

    name: str
    latest_version: int
    created_at: datetime
    updated_at: datetime
    versions: list[ModelVersionPublic]
    aliases: list[AliasPublic]

    @classmethod
    def from_rows(cls, row: RegisteredModel, versions: list[ModelVersion],
                  aliases: list[tuple[ModelAlias, list[AliasEvent]]],
                  deleted: dict[str, list[AliasEvent]]) -> RegisteredModelPublic:
        pointing: dict[int, list[str]] = {}
        for alias, _ in aliases:
            pointing.setdefault(alias.version, []).append(alias.alias)
        return cls(
            name=row.name, latest_version=row.latest_version, created_at=row.created_at,
            updated_at=row.updated_at,
            versions=[ModelVersionPublic.from_row(v, pointing.get(v.version))
                      for v in versions],
            aliases=[AliasPublic.from_row(alias, events) for alias, events in aliases]
            + [AliasPublic.deleted(alias, events) for alias, events in sorted(deleted.items())])
# -- usage ----------------------------------------------------------------------------------


class StoredUsage(BaseModel):
    """An owner's stored rows of one kind against its storage quota."""

    count: int = Field(description="How many.")
    bytes: int = Field(description="Their bytes (datasets: stored_bytes; models: size_bytes).")
    limit_bytes: int | None = Field(description="The owner's quota (null: none).")
    setting: str = Field(description="The setting of the quota.")


class JobsUsage(BaseModel):
    """An owner's jobs in flight against its queue quota."""

    queued: int
    running: int
    reserved_model_bytes: int = Field(
        description="The model bytes the queued and running jobs reserved at admission (an "
                    "estimate from each model's shape), counted against the model quota.")
    limit_queued: int = Field(description="Most jobs the owner may have queued at once.")
    setting: str = Field(description="The setting of the queue quota.")


class UsagePublic(BaseModel):
    """What one owner stores and runs, against each limit (``GET /usage``)."""

    owner: str = Field(description="The owner (empty: the open service's one owner).")
    datasets: StoredUsage
    models: StoredUsage
    jobs: JobsUsage
