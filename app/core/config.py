"""Service settings (pydantic-settings, environment prefix ``SVMSVC_``).

Every setting has an embedded default that needs nothing installed: the SQLite database,
the dataset files and the worker pool all live under ``data_dir`` (``./var``).  Setting
``SVMSVC_DATABASE_URL`` (for example ``postgresql+psycopg://user@host/db``) moves the
database to PostgreSQL; the datasets stay under ``data_dir`` unless ``SVMSVC_DATASETS_URL``
names a shared directory or an object store.  ``SVMSVC_EXECUTOR=dask`` runs the jobs on a Dask
cluster (``SVMSVC_DASK_SCHEDULER``) instead of local worker processes; it needs a database
every Dask worker reaches (PostgreSQL), and refuses SQLite unless ``SVMSVC_SINGLE_MACHINE``
says every process runs on this machine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def comma_separated(text: str) -> list[str]:
    """The entries of a comma-separated setting, stripped, the empty ones left out."""
    return [entry.strip() for entry in text.split(",") if entry.strip()]


class Settings(BaseSettings):
    """Everything an operator may configure; see ``docs/service.md`` for the table."""

    model_config = SettingsConfigDict(env_prefix="SVMSVC_", extra="ignore", frozen=True)

    data_dir: Path = Field(Path("var"), description="Datasets and the SQLite database.")
    database_url: str | None = Field(
        None, description="SQLAlchemy URL; default: SQLite file svmsvc.db in data_dir.")
    host: str = Field("127.0.0.1", description="Address `svmsvc serve` listens on.")
    port: int = Field(8000, ge=0, le=65535, description="Port `svmsvc serve` listens on.")
    workers: int = Field(2, ge=1, description="Worker processes that run training jobs.")
    web_processes: int = Field(
        1, ge=1, description="Web processes `svmsvc serve` runs on its one socket; one of them "
                             "also runs the dispatcher and the worker pool, the others serve "
                             "requests only (predictions scale with them).")
    threads_per_worker: int | None = Field(
        None, ge=1, description="Numba threads per worker; default: CPU cores // workers.")
    max_upload_bytes: int = Field(
        512 * 2**20, ge=1, description="Largest dataset upload, counted on the decompressed "
                                       "text as it streams (and on the bytes as sent).")
    max_upload_rows: int = Field(
        5_000_000, ge=1, description="Most examples (rows) in an uploaded dataset.")
    max_upload_nnz: int = Field(
        50_000_000, ge=1, description="Most stored entries (non-zero features) in an uploaded "
                                      "dataset.")
    upload_parse_threads: int = Field(
        1, ge=1, description="Worker threads parsing dataset uploads at once (the multipart "
                             "framing, decompression and SVMlight parsing, a megabyte at a "
                             "time); the other uploads' pieces wait their turn.  Each such "
                             "thread holds the GIL for part of its work, and the event loop "
                             "waits for it (issue 49).")
    upload_nice: int = Field(
        10, ge=0, le=19, description="CPU niceness the upload threads add to the process's "
                                     "(Linux): the event loop, which answers every request, "
                                     "gets a CPU ahead of them when it needs one (issue 49); "
                                     "0: the same priority.")
    max_features: int = Field(
        2**24, ge=1, description="Largest number of features (largest feature index) of a "
                                 "dataset; a model's weight vectors are this long.")
    max_classes: int = Field(
        1000, ge=2, description="Most classes a classification job may train on (a model has a "
                                "weight vector, an evaluation a confusion-matrix row, per "
                                "class); a dataset of more distinct labels is stored with its "
                                "class counts null: real values, for task=regression.")
    max_model_weights: int = Field(
        2**25, ge=1, description="Most weights of a linear model a job may train (weight "
                                 "vectors x (features + 1): one vector for two labels, one "
                                 "per class beyond); 2^25 weights take 256 MiB.")
    max_predict_bytes: int = Field(
        16 * 2**20, ge=1, description="Largest body of a batch prediction.")
    max_json_body_bytes: int = Field(
        2**20, ge=1, description="Largest body of any request but a dataset upload or a batch "
                                 "prediction (the JSON of jobs, sharded datasets, evaluations, "
                                 "pose): refused (413) before it is read or parsed.")
    max_list_bytes: int = Field(
        2**20, ge=1024, description="Largest page of a list answer (GET /jobs, /models, "
                                    "/datasets, /registry, a model's evaluations, the API "
                                    "keys), in bytes of its items' JSON: a page ends before "
                                    "the item that would pass it (the first item is always "
                                    "sent), and its `next` link asks for the rest.")
    body_read_timeout_s: float = Field(
        60.0, gt=0, description="Seconds a request body may go without a byte arriving (a "
                                "client stalled mid-upload); past them the request is a 408.")
    max_predict_rows: int = Field(
        100_000, ge=1, description="Most rows (examples) in a batch prediction: its answer "
                                   "grows with the rows (about 60 bytes each), not the body.")
    max_kernel_cache_mb: float = Field(
        1024.0, gt=0, description="Largest kernel-row cache (solver parameter cache_mb) a job "
                                  "may ask for, in MiB.")
    max_direct_rows: int = Field(
        10_000, ge=1, description="Largest dense direct solve (method=direct) a job may ask for: "
                                  "its n x n matrix takes 8 n^2 bytes (10,000: 800 MB).")
    max_factor_entries: int = Field(
        10**8, ge=1, description="Largest low-rank kernel factor (approximation: n_samples x "
                                 "rank) a job may ask for; the solver trains on it as a "
                                 "CSR matrix over the dense factor's own values, about 12 "
                                 "bytes an entry with its column indices (10^8: 1.2 GB).")
    max_attempts: int = Field(
        2, ge=1, description="Runs a job may start; a job interrupted by a restart is re-queued "
                             "while it has attempts left.")
    cancel_grace_s: float = Field(
        2.0, gt=0, description="Seconds a worker has to stop cooperatively after a cancel "
                               "request (or past a time limit) before it is killed.")
    job_time_limit_s: float = Field(
        3600.0, gt=0, description="Time limit of a job that asks for none (seconds): past it "
                                  "the job stops (status failed), so no job holds a worker "
                                  "without end.")
    max_job_time_limit_s: float = Field(
        86400.0, gt=0, description="Largest time limit a job may ask for (seconds); a request "
                                   "may lower its limit, not raise it past this.")
    max_tuning_fits: int = Field(
        1000, ge=1, description="Most fits a tuning job may ask for: folds x grid points (C "
                                "values x gamma values), plus the refit at the best point.")
    max_onnx_bytes: int = Field(
        64 * 2**20, ge=2**20, le=2**31 - 2**24,
        description="Largest ONNX download, in bytes of the graph's constants (a linear "
                    "model's weights, a kernel model's support vectors, dense): a model past "
                    "it is refused (422) before its graph is built; building and checking "
                    "the graph holds about six times this in the web process at its peak.")
    model_cache_bytes: int = Field(
        256 * 2**20, ge=2**20, description="Bytes of models kept loaded in the web process "
                                           "for predictions (the sizes of their archives); "
                                           "also the largest model a job may store.")
    log_level: str = Field("info", description="Logging level of the service.")
    access_log: bool = Field(
        True, description="Log a line per HTTP request (uvicorn's access log); the requests "
                          "are counted in /metrics either way.")
    orphan_grace_s: float = Field(
        3600.0, ge=0, description="Temporary upload files and stored dataset files without a "
                                  "database row older than this are removed (at start-up and "
                                  "every orphan_sweep_interval_s).")
    orphan_sweep_interval_s: float = Field(
        600.0, gt=0, description="Seconds between two sweeps of orphaned files while the "
                                 "service runs.")
    lease_s: float = Field(
        30.0, gt=0, description="A running job's lease: renewed by its service and worker "
                                "(every third of it); a job whose lease is older is taken back "
                                "(re-queued or failed) by any service on the database.")
    api_keys: str | None = Field(
        None, description="API keys as comma-separated scope:owner:key or scope:key entries "
                          "(scopes read, train, admin; a key of its own is its own owner); "
                          "none configured: the service is open.")
    api_keys_file: Path | None = Field(
        None, description="File of API keys, one entry a line: scope:owner:key or "
                          "scope:key, the key or sha256:<its hex digest>.")
    api_key_cache_s: float = Field(
        1.0, ge=0, le=60, description="How long a web process keeps its snapshot of the keys "
                                      "created through /api/v1/api-keys before reading the "
                                      "table again: a revoked key is refused by every process "
                                      "within this time (0: read at every request).")
    metrics_public: bool = Field(
        False, description="Serve /metrics without an API key even when keys are configured.")
    allow_open: bool = Field(
        False, description="Let `svmsvc serve` listen on a non-loopback address without API "
                           "keys (an explicit opt-out of authentication).")
    cors_origins: str = Field(
        "", description="Origins allowed to call the API from a browser (CORS), comma-separated "
                        "(e.g. https://ui.example.org); empty: no CORS headers.")
    max_queued_jobs_per_key: int = Field(
        100, ge=1, description="Jobs one owner (all its API keys together) may have queued at "
                               "once (all requests share one quota when the service is open).")
    max_dataset_bytes_per_owner: int = Field(
        16 * 2**30, ge=0, description="Bytes of stored datasets one owner may keep (the sum of "
                                      "their stored_bytes); an upload past it is a 413; 0: no "
                                      "quota.")
    max_model_bytes_per_owner: int = Field(
        4 * 2**30, ge=0, description="Bytes of models one owner may keep (the sum of their "
                                     "archives' size_bytes): a job whose model would pass it "
                                     "is refused (413) where the model's size is known at "
                                     "admission, or fails when its model is written; 0: no "
                                     "quota.")
    worker_warm_up_timeout_s: float = Field(
        600.0, gt=0, description="Seconds a worker process may take from its start to ready "
                                 "(imports and the Numba warm-up); one still not ready is "
                                 "deemed hung, killed and replaced.")
    max_log_streams: int = Field(
        256, ge=1, description="Live log streams open at once in the service; more is a 503 "
                               "with Retry-After.")
    max_log_streams_per_key: int = Field(
        32, ge=1, description="Live log streams one owner (or, without keys, one client "
                              "address) may hold open at once; more is a 429 with "
                              "Retry-After.")

    datasets_url: str | None = Field(
        None, description="Where the dataset files live: a directory path (e.g. a shared mount, "
                          "/mnt/svmsvc/datasets) or an fsspec URL (s3://bucket/prefix, "
                          "file:///...); default: the directory datasets in data_dir.")
    executor: Literal["local", "dask"] = Field(
        "local", description="Where jobs run: local worker processes, or a Dask cluster.")
    dask_scheduler: str | None = Field(
        None, description="Address of the Dask scheduler (e.g. tcp://127.0.0.1:8786); "
                          "needed with executor=dask.")
    dask_threads_per_job: int | None = Field(
        None, ge=1, description="Numba threads a job uses on a Dask worker, requested as the "
                                "worker resource `threads` (start workers with --resources "
                                "threads=N); default: threads_per_worker, else 1.")
    single_machine: bool = Field(
        False, description="Every process (service, Dask scheduler and workers) runs on this "
                           "one machine: lets the Dask executor use SQLite and the local "
                           "dataset directory.")

    shard_roots: str = Field(
        "", description="Directories (absolute, comma-separated) whose files a sharded "
                        "dataset may name as local shards (paths every Dask worker sees); "
                        "empty: no local shards.")
    shard_schemes: str = Field(
        "s3,gs,gcs,abfs,az", description="URL schemes a sharded dataset may name as shards "
                                         "(fsspec, read by the Dask workers with their "
                                         "credentials), comma-separated; empty: none.")
    shard_restarts: int = Field(
        2, ge=0, description="Times a job on a sharded dataset resumes after losing a Dask "
                             "worker that held partitions (they are read again from their "
                             "shards onto the workers left); 0: the first loss fails the job.")

    prediction_chunk_rows: int = Field(
        50_000, ge=1, description="Rows a batch prediction job reads, scores and writes at a "
                                  "time: the worker holds one chunk's rows and answers, never "
                                  "the whole result.")
    webhook_allowed_hosts: str = Field(
        "", description="Hosts a job's callback_url may name, comma-separated: host names, IP "
                        "addresses or networks (10.0.0.0/8); every address the host resolves "
                        "to must be public or inside a listed address or network (loopback "
                        "and private ranges only when listed). Empty: no webhooks.")
    webhook_max_attempts: int = Field(
        5, ge=1, description="Deliveries of a job's event tried before it is given up (the "
                             "receiver answers no 2xx, or cannot be reached).")
    webhook_backoff_s: float = Field(
        2.0, gt=0, description="Seconds before the second delivery of an event; each next "
                               "waits twice as long (exponential backoff), at most "
                               "webhook_backoff_max_s.")
    webhook_backoff_max_s: float = Field(
        600.0, gt=0, description="Longest wait between two deliveries of an event (seconds).")
    webhook_timeout_s: float = Field(
        10.0, gt=0, description="Seconds a webhook receiver has to answer one delivery.")

    @model_validator(mode="after")
    def _default_time_limit_within_cap(self) -> Settings:
        if self.job_time_limit_s > self.max_job_time_limit_s:
            raise ValueError(f"SVMSVC_JOB_TIME_LIMIT_S ({self.job_time_limit_s:g}) exceeds "
                             f"SVMSVC_MAX_JOB_TIME_LIMIT_S ({self.max_job_time_limit_s:g}): "
                             f"the default time limit of a job must be one a job may ask for")
        return self

    @model_validator(mode="after")
    def _cluster_needs_shared_database(self) -> Settings:
        if self.executor != "dask":
            return self
        if not self.dask_scheduler:
            raise ValueError("SVMSVC_EXECUTOR=dask needs SVMSVC_DASK_SCHEDULER, the scheduler's "
                             "address (e.g. tcp://127.0.0.1:8786)")
        if self.sqlalchemy_url.startswith("sqlite") and not self.single_machine:
            raise ValueError(
                "SVMSVC_EXECUTOR=dask cannot use SQLite: Dask workers on other machines cannot "
                "reach its file.  Set SVMSVC_DATABASE_URL to PostgreSQL "
                "(postgresql+psycopg://user:password@host/db), or set SVMSVC_SINGLE_MACHINE=true "
                "if the scheduler and every worker run on this machine")
        return self

    @property
    def job_threads(self) -> int:
        """Numba threads of one job on a Dask worker (its ``threads`` resource)."""
        return self.dask_threads_per_job or self.threads_per_worker or 1

    @property
    def dataset_location(self) -> str:
        """Where the dataset files live, as :func:`app.storage.open_store` takes it: an
        absolute directory path or an fsspec URL."""
        if self.datasets_url:
            return self.datasets_url
        return str(self.datasets_dir.resolve())

    @property
    def shard_root_list(self) -> list[Path]:
        """The directories local shards may be in, resolved (symbolic links followed)."""
        return [Path(root).resolve() for root in comma_separated(self.shard_roots)]

    @property
    def shard_scheme_list(self) -> list[str]:
        """The URL schemes allowed for shards, lower case."""
        return [scheme.lower() for scheme in comma_separated(self.shard_schemes)]

    @property
    def webhook_allowed_host_list(self) -> list[str]:
        """The entries of ``webhook_allowed_hosts``, lower case."""
        return [entry.lower() for entry in comma_separated(self.webhook_allowed_hosts)]

    @property
    def cors_origin_list(self) -> list[str]:
        """The CORS origins, parsed."""
        return comma_separated(self.cors_origins)

    @property
    def sqlalchemy_url(self) -> str:
        """The database URL in effect."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir.resolve() / 'svmsvc.db'}"

    @property
    def datasets_dir(self) -> Path:
        """Where the dataset files live."""
        return self.data_dir / "datasets"

    @property
    def worker_threads(self) -> int:
        """Numba threads each worker process gets."""
        if self.threads_per_worker is not None:
            return self.threads_per_worker
        return max(1, (os.cpu_count() or 1) // self.workers)
