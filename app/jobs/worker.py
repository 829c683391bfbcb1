"""The worker process: a long-lived, spawned process that runs one training job at a time.

:func:`worker_main` sets the process's Numba thread count *before* the solver library is
imported, compiles (or loads) the kernels once, then serves the dispatcher over a pipe::

    dispatcher -> worker   ("run", job_id, attempt)  |  None (stop)
    worker -> dispatcher   ("progress", done, total, what)  |  ("ready", pid)
                           |  ("warming", solver)  |  ("compiled", solver)  |  ("idle",)
                           |  ("training", job_id)  |  ("done", job_id, final status or None)

Ready on the shared layers, each solver's own kernels later.  A worker says "ready" once the
layers every solver runs on are compiled (``solvers.warmup.worker_steps``: core for int32
indices, losses, problem layer, prediction; the web process compiles the parser meanwhile,
each step under its own lock).
Each solver's own kernels (its spec's warm-up hook; ALM's alone took about three minutes of a
cold six-minute warm-up on this 2-core machine under load) are compiled while the worker is
idle, one solver at a time, only when no other process holds the machine's compile lock, with
"warming" / "idle" around each so that the dispatcher gives it no job meanwhile, and
"compiled" when one is (``/readyz`` lists them); a job whose solver is not compiled yet
compiles it first (not ``auto``'s: it compiles what it calls, lazily), saying so
in the job's progress, and its time limit starts when training does ("training").  On a
warm cache all of it loads in seconds.
With one Numba thread the parallel forms of the shared kernels are not compiled at start: no
solver runs them below two threads (``solvers.core.sparse.use_parallel``).  Measured cold, in
CPU seconds of one process (2026-11-27, load 10-14): core 72 (serial forms, both index
widths), parser 21, ALM's own 91.

For each job it loads the dataset arrays, runs ``solvers.train`` with a
:class:`~app.jobs.monitor.DatabaseMonitor`, and writes the outcome itself: the model and the
``succeeded`` state in one transaction, or ``failed`` / ``cancelled`` with the reason.
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from app.crud.datasets import record_scan
from app.db.models import Dataset, DatasetKind, Job, JobKind, JobStatus, TrainedModel
from app.db.session import Sessions, create_db_engine
from app.evaluation import evaluate
from app.jobs.monitor import DatabaseMonitor, StopCause, jsonable
from app.jobs.state import describe_exception, finish_job, set_running_message
from app.quotas import model_quota_refusal
from app.storage import DatasetStorage, open_store

logger = logging.getLogger("svmsvc.worker")


HANG_WARM_UP_VARIABLE = "SVMSVC_TESTING_HANG_WARM_UP"
"""A testing hook: when this environment variable names a file, a worker starting while the
file exists waits, before its warm-up, until the file is removed (so the tests can make a
worker that hangs while warming up).  Not a setting: never set it in production."""


@dataclass(frozen=True)
class WorkerConfig:
    """What a worker process needs (picklable: it crosses the spawn boundary)."""

    index: int
    database_url: str
    datasets: str  # where the dataset files live (app.storage.open_store)
    threads: int
    log_level: str
    max_model_bytes: int | None = None  # SVMSVC_MODEL_CACHE_BYTES: larger models are refused
    chunk_rows: int | None = None  # SVMSVC_PREDICTION_CHUNK_ROWS (prediction jobs)
    owner_model_bytes: int | None = None  # SVMSVC_MAX_MODEL_BYTES_PER_OWNER (app.quotas)


def worker_main(config: WorkerConfig, connection) -> None:
    """Entry point of a spawned worker process."""
    os.environ["NUMBA_NUM_THREADS"] = str(config.threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the service stops its workers itself
    exit_with_parent(multiprocessing.parent_process())
    logging.basicConfig(
        level=config.log_level.upper(),
        format=f"%(asctime)s worker-{config.index}[%(process)d] %(levelname)s %(message)s")

    hang = os.environ.get(HANG_WARM_UP_VARIABLE)
    while hang and os.path.exists(hang):  # the testing hook: a worker hung in its warm-up
        time.sleep(0.1)

    from solvers.warmup import warm_up, worker_steps

    def progress(done: int, total: int, what: str) -> None:
        # heard by the pool's watchdog (a worker that reports is not hung) and by /readyz
        connection.send(("progress", done, total, what))

    seconds = warm_up(progress=progress, steps=worker_steps(parallel=config.threads > 1))
    logger.info("ready (%d Numba threads, shared kernels warmed up in %.1f s)", config.threads,
                seconds)
    engine = create_db_engine(config.database_url, pool_size=1)
    sessions = Sessions(engine)
    store = open_store(config.datasets)
    parent = multiprocessing.parent_process()
    solvers_left = SolverWarmUp()
    try:
        connection.send(("ready", os.getpid()))
        while True:
            if solvers_left.pending and not connection.poll(IDLE_WARM_UP_POLL_S):
                solvers_left.compile_one_while_idle(connection)
                continue
            message = connection.recv()
            if message is None:
                break
            _, job_id, attempt = message
            status = run_job(sessions, store, uuid.UUID(job_id), attempt, parent.is_alive,
                             config.max_model_bytes,
                             prepare=lambda spec: solvers_left.prepare_job(spec, sessions,
                                                                           connection),
                             chunk_rows=config.chunk_rows,
                             owner_model_bytes=config.owner_model_bytes)
            connection.send(("done", job_id, status))
    except (EOFError, OSError):
        pass  # the service went away: nothing left to report to
    finally:
        engine.dispose()


#: A worker's exit status when its service went away (it ended without a word)
EXIT_ORPHANED = 3


def exit_with_parent(parent) -> None:
    """End this worker as soon as the process that spawned it ends, whatever the worker is
    doing (issue 49: after a kill -9 of the service, a worker compiling its kernels for a job,
    or in a long step that reports no iteration, computed on for minutes, invisible and
    beyond cancel or time limit).  A daemon thread waits on the parent's sentinel (no
    polling) and exits the process at once: the attempt's lease, no longer renewed, gives the
    job back to the queue, so nothing is lost; the monitor's own check between iterations
    (``StopCause.orphaned``) stays for the stops it can make cleanly."""
    if parent is None:  # not a spawned worker (called in a test's own process)
        return

    def watch() -> None:
        parent.join()  # returns when the parent's end of the sentinel pipe closes
        logger.warning("the service (pid %s) is gone: worker exiting", parent.pid)
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, name="svmsvc-parent-watch", daemon=True).start()


#: How long an idle worker with solvers left to compile listens for a job before it tries
#: the next solver (seconds); it also waits this long when another process holds the lock.
IDLE_WARM_UP_POLL_S = 1.0


#: The lock of compiling solvers' kernels while idle: one worker of the machine at a time.
BACKGROUND_LOCK = "solvers while idle"


class SolverWarmUp:
    """The solvers whose own kernels this worker has not compiled (or loaded) yet."""

    def __init__(self):
        from solvers.warmup import solver_steps

        self.pending = solver_steps()

    def compile_one_while_idle(self, connection) -> None:
        """Compile the first solver's kernels that no other process is compiling (its lock
        free), unless a job has come in; "warming" keeps the dispatcher from choosing this
        worker meanwhile (a job sent just before it waits for the one solver).  One process
        of the machine at a time does this (the ``BACKGROUND_LOCK``): the other workers stay
        free for jobs, which compile what they need themselves (on a cold machine ALM's
        kernels alone take a minute and a half; with every worker compiling while idle, the
        first job waited in the queue that long).  When every solver left is another
        process's, nothing: the next poll tries again."""
        from solvers.warmup import compile_lock_if_free

        with compile_lock_if_free(BACKGROUND_LOCK) as ours:
            if not ours:
                return
            for name in list(self.pending):
                with compile_lock_if_free(f"solver {name}") as acquired:
                    if not acquired:
                        continue
                    connection.send(("warming", name))
                    try:
                        if not connection.poll(0):
                            started = time.perf_counter()
                            self.pending.pop(name)()
                            connection.send(("compiled", name))
                            logger.info("solver %s's kernels ready (%.1f s, while idle)", name,
                                        time.perf_counter() - started)
                    finally:
                        connection.send(("idle",))
                    return

    def prepare_job(self, spec: JobSpec, sessions: Sessions, connection) -> None:
        """Before a job trains: compile its solver's own kernels if they are not yet, saying
        so in the job's message, then tell the dispatcher that training starts (the time
        limit counts from there).  Not for ``auto``: its job compiles what it calls as it
        calls it (Numba compiles lazily), within the job's time.  Measured cold, in CPU
        seconds of one process (2026-12-07, load 16-24, after the worker's shared steps):
        the whole a9a ``auto`` job at its defaults, compiling lazily what mfn (the
        candidate it ran) called, 1.2, where a hook compiles every variant of its solver
        (ALM's 91 alone); compiling every candidate's hooks first made the first a9a job
        wait 154 s (issue 48)."""
        from solvers.warmup import compile_lock

        names = [name for name in self.pending if name == spec.solver]
        if names:
            message = (f"compiling the kernels of {', '.join(names)} "
                       f"(the first job on this machine)")
            with sessions.write() as session:
                set_running_message(session, spec.job_id, spec.attempt, message)
            for name in names:
                started = time.perf_counter()
                with compile_lock(len(names), what=f"solver {name}"):
                    self.pending.pop(name)()
                connection.send(("compiled", name))
                logger.info("solver %s's kernels ready (%.1f s, for job %s)", name,
                            time.perf_counter() - started, spec.job_id)
            with sessions.write() as session:
                set_running_message(session, spec.job_id, spec.attempt, None)
        connection.send(("training", str(spec.job_id)))


@dataclass(frozen=True)
class JobSpec:
    """What a worker reads about a job before running it."""

    job_id: uuid.UUID
    attempt: int
    solver: str
    params: dict
    time_limit_s: float | None
    dataset_id: uuid.UUID
    dataset_digest: str
    validation_dataset_id: uuid.UUID | None
    validation_digest: str | None
    tuning: dict | None = None
    keep_last_good: bool = False
    dataset_source: dict | None = None  # a sharded dataset's shards (app.shards)
    started_at: datetime | None = None  # the attempt's start: the origin of its records' time


def load_job_spec(session: Session, job_id: uuid.UUID, attempt: int) -> JobSpec | None:
    """The job, if this attempt still owns it."""
    job = session.get(Job, job_id)
    if job is None or job.status != JobStatus.running or job.attempts != attempt:
        return None
    validation = None
    if job.validation_dataset_id is not None:
        validation = session.get(Dataset, job.validation_dataset_id)
    dataset = session.get(Dataset, job.dataset_id)
    return JobSpec(
        job_id=job.id, attempt=attempt, solver=job.solver, params=job.params,
        time_limit_s=job.time_limit_s, dataset_id=job.dataset_id,
        dataset_digest=dataset.sha256,
        dataset_source=dataset.source if dataset.kind == DatasetKind.sharded else None,
        validation_dataset_id=job.validation_dataset_id,
        validation_digest=None if validation is None else validation.sha256,
        tuning=job.tuning,
        keep_last_good=bool(job.keep_last_good),
        started_at=job.started_at,
    )


DEFAULT_CHUNK_ROWS = 50_000
"""Rows of a prediction job's chunk when the executor does not say (the setting's default)."""


def load_prediction_spec(session: Session, job_id: uuid.UUID, attempt: int):
    """A prediction job's :class:`~app.batch_prediction.PredictionSpec`, if this attempt
    still owns it and it is one (None otherwise)."""
    from app.batch_prediction import PredictionSpec

    job = session.get(Job, job_id)
    if (job is None or job.kind != JobKind.predict or job.status != JobStatus.running
            or job.attempts != attempt):
        return None
    dataset = session.get(Dataset, job.dataset_id)
    return PredictionSpec(
        job_id=job.id, attempt=attempt, model_id=job.predict_model_id,
        dataset_digest=dataset.sha256,
        dataset_source=dataset.source if dataset.kind == DatasetKind.sharded else None,
        rows_total=dataset.n_samples, format=job.params.get("format", "csv"),
        time_limit_s=job.time_limit_s)


def run_job(sessions: Sessions, store: DatasetStorage, job_id: uuid.UUID,
            attempt: int, parent_alive, max_model_bytes: int | None = None,
            prepare: Callable[[JobSpec], None] | None = None,
            sharded: Callable[[dict], AbstractContextManager] | None = None,
            chunk_rows: int | None = None,
            owner_model_bytes: int | None = None) -> str | None:
    """Run one attempt of a job to its end; returns the final status written (None when
    the attempt lost the job and wrote nothing).  A trained model whose archive exceeds
    ``max_model_bytes`` (the web process's model cache) fails the job, saying so: served, it
    would be read from the database and loaded again for every prediction.  So does one that
    would take its owner's models past ``owner_model_bytes`` (the owner's model quota,
    :mod:`app.quotas`): nothing is stored.

    A job on a sharded dataset trains on the rows its shards hold on a Dask cluster:
    ``sharded(source)`` (the Dask executor's, :func:`app.jobs.executors.dask.sharded_dataset`)
    is a context that reads them on the workers and releases them after; the statistics it
    found are written on the dataset's row.  Without it (a local worker) such a job fails,
    saying what it needs.

    A prediction job (kind ``predict``) runs :func:`app.batch_prediction.run_prediction_job`
    instead, ``chunk_rows`` rows at a time (its shards, if any, read by this process)."""
    with sessions.read() as session:
        prediction = load_prediction_spec(session, job_id, attempt)
        spec = None if prediction is not None else load_job_spec(session, job_id, attempt)
    if prediction is not None:
        from app.batch_prediction import run_prediction_job

        return run_prediction_job(sessions, store, prediction, parent_alive,
                                  chunk_rows or DEFAULT_CHUNK_ROWS)
    if spec is None:
        return None
    if spec.dataset_source is None:
        return _run_job(sessions, store, spec, parent_alive, max_model_bytes, prepare,
                        lambda: store.load(spec.dataset_digest), owner_model_bytes)
    with contextlib.ExitStack() as stack:
        def read_shards():
            if sharded is None:
                raise ValueError(f"dataset {spec.dataset_id} is sharded: its jobs run on a "
                                 f"Dask cluster (SVMSVC_EXECUTOR=dask), not on a local "
                                 f"worker")
            count = len(spec.dataset_source["shards"])
            with sessions.write() as session:
                # the attempt's "running on Dask worker ..." stays at the front (where its
                # task runs: the worker to look at), what it does follows
                started = session.get(Job, spec.job_id).message or ""
                where = f"{started}: " if started.startswith("running on") else ""
                set_running_message(session, spec.job_id, spec.attempt,
                                    f"{where}reading {count} shard(s) on the Dask cluster")
            dataset = stack.enter_context(sharded(spec.dataset_source))
            with sessions.write() as session:
                stats = distributed_stats(dataset)
                record_scan(session, spec.dataset_id, stats)
                validation = None if spec.validation_dataset_id is None else \
                    session.get(Dataset, spec.validation_dataset_id)
                if validation is not None and validation.n_features > dataset.n_features:
                    # admission could not know the width before this read: refused now,
                    # before training, rather than after it, with the model lost
                    raise ValueError(f"validation_dataset_id: the validation dataset has "
                                     f"{validation.n_features} features, the training "
                                     f"dataset {dataset.n_features}: another feature space")
                set_running_message(session, spec.job_id, spec.attempt, (
                    f"{where}training data-parallel: {dataset.n_samples} rows in "
                    f"{dataset.n_partitions} partitions on {stats['workers']} Dask "
                    f"worker(s)"))
            return dataset

        return _run_job(sessions, store, spec, parent_alive, max_model_bytes, prepare,
                        read_shards, owner_model_bytes)


def distributed_stats(dataset) -> dict:
    """A :class:`~solvers.distributed.DistributedDataset`'s statistics in the form of a
    dataset row's (and a model's ``training_data``)."""
    from solvers.data.dataset import label_key

    cells = dataset.n_samples * dataset.n_features
    return {"n_samples": dataset.n_samples, "n_features": dataset.n_features,
            "nnz": dataset.nnz, "density": dataset.nnz / cells if cells else 0.0,
            "class_counts": {label_key(label): int(count) for label, count in
                             zip(dataset.class_labels, dataset.class_counts, strict=True)},
            "has_sample_weight": bool(dataset.weighted),
            "partitions": list(dataset.partition_sizes),
            "workers": len(set(dataset.partitions.workers))}


def _run_job(sessions: Sessions, store: DatasetStorage, spec: JobSpec, parent_alive,
             max_model_bytes: int | None, prepare: Callable[[JobSpec], None] | None,
             load: Callable[[], object], owner_model_bytes: int | None = None) -> str | None:
    """:func:`run_job` once the job is read; ``load()`` gives its training data."""
    import solvers

    job_id, attempt = spec.job_id, spec.attempt
    if prepare is not None:
        prepare(spec)  # the worker's: compile its solver's kernels if they are not yet
    monitor = DatabaseMonitor(sessions, job_id, attempt, spec.time_limit_s, parent_alive,
                              started_at=spec.started_at)
    logger.info("job %s attempt %d: %s on dataset %s", job_id, attempt, spec.solver,
                spec.dataset_id)

    def finish(status: JobStatus, **fields) -> str | None:
        with sessions.write() as session:
            written = finish_job(session, job_id, attempt, status, **fields)
        logger.info("job %s attempt %d: %s", job_id, attempt, status if written else "lost")
        return str(status) if written else None

    try:
        dataset = load()
        cross_validation = None
        if spec.tuning is None:
            result = solvers.train(dataset, solver=spec.solver, params=spec.params,
                                   monitor=monitor)
        else:
            result, cross_validation = tune(dataset, spec, monitor)
            if result is None:  # stopped before the refit
                monitor.flush()
                if not monitor.writable:
                    return None
                if monitor.stop_cause is StopCause.time_limit:
                    return finish(JobStatus.failed, solver_status="stopped",
                                  error=f"time limit of {spec.time_limit_s:g} s reached",
                                  message=cross_validation["message"],
                                  cross_validation=cross_validation)
                return finish(JobStatus.cancelled, solver_status="stopped",
                              message="cancelled by request during the cross-validation",
                              cross_validation=cross_validation)
        monitor.flush()
        if not monitor.writable:
            return None
        if result.status == "stopped":
            if monitor.stop_cause is StopCause.time_limit:
                return finish(JobStatus.failed, solver_status=result.status,
                              error=f"time limit of {spec.time_limit_s:g} s reached",
                              message=result.message)
            factorization = next((s.extras["factorization"] for s in result.subproblems
                                  if "factorization" in s.extras), None)
            if factorization is not None:  # stopped before the solver started
                return finish(JobStatus.cancelled, solver_status=result.status, message=(
                    f"cancelled by request while factorizing the kernel: "
                    f"{factorization['step']} {factorization['done']} of "
                    f"{factorization['total']}"))
            return finish(JobStatus.cancelled, solver_status=result.status,
                          message=f"cancelled by request after {result.iterations} iterations")
        message = result.message
        if result.status == "failed":
            if not (spec.keep_last_good and keeps_last_good(result)):
                return finish(JobStatus.failed, solver_status=result.status,
                              error=result.message, message=result.message)
            message = (f"the solver failed; its last good point is the model "
                       f"(keep_last_good): {result.message}")
            logger.warning("job %s attempt %d: the solver failed; keeping its last good point "
                           "as asked", job_id, attempt)
        if result.warnings:
            message = f"{message} (warning: {'; '.join(result.warnings)})"
        validation = None
        if spec.validation_digest is not None:
            validation = evaluate(result.model, store.load(spec.validation_digest),
                                  parallel=True)
            validation["dataset_id"] = str(spec.validation_dataset_id)
        row = trained_model_row(spec, result, dataset, validation)
        if max_model_bytes is not None and row.size_bytes > max_model_bytes:
            return finish(JobStatus.failed, solver_status=result.status, error=(
                f"the trained model's archive takes {row.size_bytes} bytes, more than the "
                f"limit of {max_model_bytes} bytes set by SVMSVC_MODEL_CACHE_BYTES (the "
                f"prediction cache, which a model must fit to be served without a reload per "
                f"request); it was not stored: raise the setting, or train a smaller model "
                f"(fewer support vectors: a smaller C; a linear or low-rank kernel model)"))
        with sessions.read() as session:
            refusal = model_quota_refusal(session, spec.job_id, row.size_bytes,
                                          owner_model_bytes)
        if refusal is not None:
            return finish(JobStatus.failed, solver_status=result.status, error=refusal,
                          message=message, cross_validation=cross_validation)
        return finish(JobStatus.succeeded, solver_status=result.status,
                      message=message, model=row, cross_validation=cross_validation)
    except Exception as exc:  # anything a solver raises fails its job, never the worker
        logger.exception("job %s attempt %d failed", job_id, attempt)
        if not monitor.writable:
            return None
        return finish(JobStatus.failed, error=describe_exception(exc))


def keeps_last_good(result) -> bool:
    """Whether a failed run returned a point worth storing: a model and a finite objective
    (the library's ``failed`` means "broke down; the last good point is returned")."""
    try:
        objective = float(result.objective)
    except (TypeError, ValueError):
        return False
    return result.model is not None and math.isfinite(objective)


def tune(dataset, spec: JobSpec, monitor) -> tuple[object | None, dict]:
    """A tuning job's body: the cross-validation (one log record per fit, through the job's
    monitor: cancel and time limit apply), then the refit at the best point, whose records
    follow in the same log.  Returns (the refit's TrainResult or None when stopped, the table
    as JSON)."""
    import solvers
    from solvers.model_selection import CV_FIT_GAP, cross_validate
    from solvers.monitor import Continued, Stopwatch

    params = {key: value for key, value in spec.params.items() if key != "solver"}
    for grid in ("C", "gamma"):
        params.pop(grid, None)
    tuning = spec.tuning
    clock = Stopwatch()  # the job's time: the refit's records go on from the search's
    result = cross_validate(dataset, spec.solver, C=tuning["C"], gamma=tuning.get("gamma"),
                            epsilon_grid=tuning.get("epsilon"), nu_grid=tuning.get("nu"),
                            folds=tuning["folds"], seed=tuning["seed"], monitor=monitor,
                            fit_gap=tuning.get("fit_gap", CV_FIT_GAP),
                            scoring=tuning.get("scoring", "accuracy"), **params)
    summary = jsonable(result.summary())
    if result.status == "stopped":
        return None, summary
    refit = solvers.train(dataset, solver=spec.solver, params={**params, **result.best_params},
                          # the refit's records follow the search's in the job's log,
                          # numbered and timed on from them, tagged stage: refit
                          monitor=Continued(monitor,
                                            sum(len(r.fold_scores) for r in result.scores),
                                            clock(), {"stage": "refit"}))
    return refit, summary


def trained_model_row(spec: JobSpec, result, dataset, validation: dict | None) -> TrainedModel:
    """The database row of a training result (the model's ``.npz`` bytes included)."""
    from solvers.data.dataset import label_value
    from solvers.distributed import DistributedDataset

    model = result.model
    artifact = model.to_bytes()
    return TrainedModel(
        job_id=spec.job_id,
        dataset_id=spec.dataset_id,
        solver=result.params.solver,  # the solver that ran (auto's choice for "auto")
        params=result.params.model_dump(mode="json"),
        kind=model.kind,
        classes=[label_value(label) for label in model.classes_],
        n_features=int(model.n_features_in_),
        objective=jsonable(float(result.objective)),
        solver_status=result.status,
        message=result.message,
        iterations=int(result.iterations),
        training_seconds=float(result.elapsed),
        training_data=({key: value for key, value in distributed_stats(dataset).items()
                        if key != "has_sample_weight"}
                       if isinstance(dataset, DistributedDataset) else
                       dataset.stats().as_dict()),
        subproblems=[
            {"label": s.label, "objective": jsonable(float(s.objective)), "status": s.status,
             "message": s.message, "iterations": int(s.iterations)}
            for s in result.subproblems
        ],
        validation=validation,
        details=model_details(model.metadata),
        size_bytes=len(artifact),
        artifact=artifact,
    )


#: what a model's metadata holds that the models table has columns for already
_METADATA_IN_COLUMNS = ("solver", "params", "objective", "status", "training_seconds",
                        "training_data")


def model_details(metadata: dict) -> dict | None:
    """A model's metadata beyond the table's columns, as JSON (``TrainedModel.details``):
    the low-rank approximation, the scaling, auto's choice, the warnings, the probability
    sigmoids; None when it has none."""
    details = {key: value for key, value in metadata.items() if key not in _METADATA_IN_COLUMNS}
    return jsonable(details) if details else None
