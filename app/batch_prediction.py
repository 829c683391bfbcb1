"""Batch prediction jobs: a stored model scores a whole stored (or sharded) dataset on the
executors, chunk by chunk, into a stored result (``POST /jobs/predict``).

The job body (:func:`run_prediction_job`, called by :func:`app.jobs.worker.run_job` for a job
of kind ``predict``) never holds the dataset nor the result whole:

* an uploaded dataset is read ``SVMSVC_PREDICTION_CHUNK_ROWS`` rows at a time straight from its
  stored file (:func:`app.storage.iter_row_chunks`: the ``.npz`` members are plain byte
  ranges, read with ranged reads, also from an object store);
* a sharded dataset's shards are read one after the other, each in blocks of
  :data:`SHARD_BLOCK_BYTES` of text cut at a line end and parsed by the library's SVMlight
  parser (a shard is a local path inside ``SVMSVC_SHARD_ROOTS`` or a URL, as for training);
* each chunk is scored with the parallel kernels (``model.scores_and_probabilities``, the
  predict route's call) and appended to the result file, which the store writes under a
  temporary name and renames when complete (``predictions/<job id>.csv`` or ``.parquet``).

Progress is a log record per chunk (``extras``: ``rows_done``, ``rows_total``) through the
training jobs' :class:`~app.jobs.monitor.DatabaseMonitor`, so cancel, the time limit, the
lease and the fencing by attempt are the same; the job row carries ``rows_done`` /
``rows_total``.  Features as the predict route takes them: a dataset narrower than the model
is padded with zero columns, a wider one refused (at admission for an uploaded dataset, at the
first index past the model's features for a sharded one).

Columns, in this order: ``row`` (0-based position in the dataset), ``label``, the decision
values as the predict route's ``decision_values`` (``decision_value`` when there is one,
else ``decision_value_0`` ...), then ``probability_<label>`` per class in ``classes_`` order
for a model trained with ``probability=true``; a one-class model's last column is
``outlier`` (True where the label is -1), a regression model's result is ``row`` and
``value`` (the predicted real value: its label and decision value).  CSV writes floats with
Python's ``repr`` (they read back bit for bit); Parquet (``format=parquet``, the optional
``pyarrow`` dependency: ``pip install 'svmsvc[parquet]'``) writes one row group per chunk, typed and
compressed, which pandas, Spark, DuckDB and Arrow read directly.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select

from app.db.models import JobStatus, TrainedModel
from app.db.session import Sessions
from app.errors import InvalidJob
from app.jobs.monitor import DatabaseMonitor, StopCause
from app.jobs.state import describe_exception, finish_job
from app.storage import DatasetStorage, iter_row_chunks, result_name

logger = logging.getLogger("svmsvc.worker")

FORMATS = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
"""The result formats and their media types."""

SHARD_BLOCK_BYTES = 16 * 2**20
"""Text of a shard parsed at a time (a block ends at a line end)."""


def check_format(fmt: str) -> None:
    """Refuse a format the service cannot write (Parquet without pyarrow installed)."""
    if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise InvalidJob("format: parquet needs pyarrow, which this service does not have "
                         "installed (pip install 'svmsvc[parquet]'); ask for format=csv")


def check_width(dataset_features: int | None, model_features: int) -> None:
    """A dataset wider than the model is another feature space (the predict route refuses an
    index past the model's features): refused before the job is queued."""
    if dataset_features is not None and dataset_features > model_features:
        raise InvalidJob(f"dataset_id: the dataset has {dataset_features} features, the model "
                         f"{model_features}: it belongs to another feature space")


def result_columns(model) -> list[str]:
    """The result's columns for ``model`` (see the module docstring)."""
    import scipy.sparse as sp

    from solvers.data.dataset import label_value

    # one empty row scored: how many decision values the model gives, and whether it has
    # probabilities (the same call as every chunk's)
    raw, chances = model.scores_and_probabilities(sp.csr_matrix((1, model.n_features_in_)),
                                                  parallel=False)
    width = int(np.asarray(raw).reshape(1, -1).shape[1])
    if model.task == "regression":  # the value is the label and the decision value
        return ["row", "value"]
    scores = (["decision_value"] if width == 1 else
              [f"decision_value_{j}" for j in range(width)])
    columns = ["row", "label", *scores]
    if model.task == "one_class":
        columns.append("outlier")
    if chances is not None:
        columns += [f"probability_{label_value(label)}" for label in model.classes_]
    return columns


@dataclass
class Chunk:
    """Scored rows: the first row's position, labels, decision values, probabilities."""

    start: int
    labels: list
    scores: np.ndarray
    probabilities: np.ndarray | None
    #: a one-class model's outlier flags (label -1), None for other models
    outliers: list | None = None


def score(model, start: int, X) -> Chunk:
    """One chunk scored with the parallel kernels (labels from the same scores): a
    regression's values as its labels (and no decision-value column: they are the same
    numbers), a one-class model's outlier flags beside its scores."""
    from solvers.data.dataset import label_value

    raw, chances = model.scores_and_probabilities(X, parallel=True)
    predicted = model.labels_from_scores(raw)
    labels = [label_value(label) for label in predicted]
    if model.task == "regression":
        return Chunk(start, labels, np.empty((X.shape[0], 0)), None)
    scores = np.asarray(raw, dtype=np.float64).reshape(X.shape[0], -1)
    outliers = (np.asarray(predicted) == -1).tolist() if model.task == "one_class" else None
    return Chunk(start, labels, scores, None if chances is None else np.asarray(chances),
                 outliers)


class CsvResult:
    """Chunks appended as CSV lines (a header first): each chunk's text built in memory by
    the ``csv`` module and written to the file in one piece (one encode and one write a
    chunk, not one a row)."""

    def __init__(self, file, columns: list[str]):
        self._file = file
        self._file.write(self._text([columns]))

    @staticmethod
    def _text(rows) -> bytes:
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        return text.getvalue().encode()

    def write(self, chunk: Chunk) -> None:
        rows = np.arange(chunk.start, chunk.start + len(chunk.labels)).tolist()
        parts = [rows, chunk.labels, *chunk.scores.T.tolist()]
        if chunk.probabilities is not None:
            parts += chunk.probabilities.T.tolist()
        if chunk.outliers is not None:
            parts.append(chunk.outliers)
        self._file.write(self._text(zip(*parts, strict=True)))

    def close(self) -> None:
        """Nothing buffered here (the store closes the file)."""


class ParquetResult:
    """Chunks appended as Parquet row groups."""

    def __init__(self, file, columns: list[str]):
        self._file = file
        self._columns = columns
        self._writer = None

    def write(self, chunk: Chunk) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrays = [pa.array(np.arange(chunk.start, chunk.start + len(chunk.labels),
                                     dtype=np.int64)),
                  pa.array(chunk.labels)]
        arrays += [pa.array(column) for column in chunk.scores.T]
        if chunk.probabilities is not None:
            arrays += [pa.array(column) for column in chunk.probabilities.T]
        if chunk.outliers is not None:
            arrays.append(pa.array(chunk.outliers, type=pa.bool_()))
        table = pa.Table.from_arrays(arrays, names=self._columns)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._file, table.schema, compression="zstd")
        self._writer.write_table(table)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


WRITERS = {"csv": CsvResult, "parquet": ParquetResult}


@dataclass(frozen=True)
class PredictionSpec:
    """What the job body reads about a prediction job."""

    job_id: uuid.UUID
    attempt: int
    model_id: uuid.UUID | None
    dataset_digest: str
    dataset_source: dict | None  # a sharded dataset's shards
    rows_total: int | None
    format: str
    time_limit_s: float | None


def uploaded_chunks(store: DatasetStorage, digest: str, rows: int,
                    n_features: int) -> Iterator[tuple[int, int | None, object]]:
    """``(first row, rows in all, CSR chunk)`` of an uploaded dataset, read from its file."""
    with closing(store.open_dataset(digest)) as file:
        yield from iter_row_chunks(file, rows, n_features)


def sharded_chunks(source: dict, n_features: int, rows_total: int | None,
                   block_bytes: int = SHARD_BLOCK_BYTES) -> Iterator[tuple[int, int | None,
                                                                             object]]:
    """``(first row, rows in all or None, CSR chunk)`` of a sharded dataset: each shard read
    in blocks of text cut at line ends, each block parsed for the model's features."""
    import solvers
    from solvers import SVMLightFormatError

    start = 0
    for index, shard in enumerate(source["shards"]):
        with _open_shard(shard) as stream:
            pending = b""
            while True:
                piece = stream.read(block_bytes)
                text = pending + piece
                if piece:
                    cut = text.rfind(b"\n") + 1
                    text, pending = text[:cut], text[cut:]
                if text.strip():
                    parser = solvers.SVMLightStreamParser(
                        n_features=n_features, zero_based=bool(source.get("zero_based")),
                        decompress=None)
                    try:
                        parser.feed(text)
                        X = parser.finish().X
                    except SVMLightFormatError as exc:
                        if exc.description == "no data lines":
                            X = None
                        else:
                            raise ValueError(f"shards[{index}] ({shard}), in the block from "
                                             f"row {start}: {exc}") from None
                    if X is not None and X.shape[0]:
                        yield start, rows_total, X
                        start += X.shape[0]
                if not piece:
                    break


def _open_shard(shard: str):
    """A shard's text stream (decompressed by its suffix), local or remote, through fsspec
    (the ``dask`` extra, which sharded datasets need anyway)."""
    import fsspec

    text = str(shard)
    return fsspec.open(text.removeprefix("file://"), "rb", compression="infer").open()


class _Progress:
    """A chunk's record for the monitor (the fields of ``solvers.monitor.IterationRecord``)."""

    def __init__(self, iteration: int, elapsed: float, rows_done: int, rows_total: int | None):
        self.iteration = iteration
        self.elapsed = elapsed
        self.objective = None
        self.optimality = None
        self.extras = {"rows_done": rows_done, "rows_total": rows_total, "stage": "predict"}


def run_prediction_job(sessions: Sessions, store: DatasetStorage, spec: PredictionSpec,
                       parent_alive: Callable[[], bool], chunk_rows: int) -> str | None:
    """Run one attempt of a prediction job to its end; returns the final status written
    (None when the attempt lost the job)."""
    import solvers

    job_id, attempt = spec.job_id, spec.attempt
    monitor = DatabaseMonitor(sessions, job_id, attempt, spec.time_limit_s, parent_alive)

    def finish(status: JobStatus, **fields) -> str | None:
        with sessions.write() as session:
            written = finish_job(session, job_id, attempt, status, **fields)
        logger.info("prediction job %s attempt %d: %s", job_id, attempt,
                    status if written else "lost")
        return str(status) if written else None

    name = result_name(job_id, "parquet" if spec.format == "parquet" else "csv")
    started = time.monotonic()
    try:
        with sessions.read() as session:
            artifact = None if spec.model_id is None else session.scalar(
                select(TrainedModel.artifact).where(TrainedModel.id == spec.model_id))
        if artifact is None:
            return finish(JobStatus.failed, error=f"model {spec.model_id} was deleted before "
                                                  f"the job ran")
        model = solvers.load_model(artifact)
        del artifact
        width = int(model.n_features_in_)
        chunks = (uploaded_chunks(store, spec.dataset_digest, chunk_rows, width)
                  if spec.dataset_source is None else
                  sharded_chunks(spec.dataset_source, width, spec.rows_total))
        columns = result_columns(model)
        rows_done, total = 0, spec.rows_total
        with store.write_result(name) as file:
            writer = WRITERS[spec.format](file, columns)
            for number, (first, total, X) in enumerate(chunks, start=1):
                writer.write(score(model, first, X))
                rows_done = first + X.shape[0]
                monitor.report(_Progress(number, time.monotonic() - started, rows_done,
                                         total))
                if monitor.stop_reason() is not None:
                    raise _Stopped
            writer.close()
            monitor.flush()
            if not monitor.writable:
                raise _Stopped
        result = {"format": spec.format, "name": name, "rows": rows_done,
                  "columns": columns, "bytes": _size(store, name),
                  "seconds": time.monotonic() - started}
        written = finish(JobStatus.succeeded, message=f"{rows_done} rows predicted",
                         result=result, rows_done=rows_done, rows_total=rows_done)
        if written is None:
            store.delete_result(name)
        return written
    except _Stopped:  # the partial result was removed by the store
        monitor.flush()
        if not monitor.writable:
            return None
        if monitor.stop_cause is StopCause.time_limit:
            return finish(JobStatus.failed, error=f"time limit of {spec.time_limit_s:g} s "
                                                  f"reached after {rows_done} rows")
        return finish(JobStatus.cancelled,
                      message=f"cancelled by request after {rows_done} rows")
    except Exception as exc:  # anything fails the job, never the worker
        logger.exception("prediction job %s attempt %d failed", job_id, attempt)
        if not monitor.writable:
            return None
        return finish(JobStatus.failed, error=describe_exception(exc))


class _Stopped(Exception):
    """The monitor asked to stop (cancel, time limit, the job lost)."""


def _size(store: DatasetStorage, name: str) -> int:
    with closing(store.open_result(name)) as file:
        return int(file.seek(0, io.SEEK_END))


def result_media_type(fmt: str) -> str:
    """The media type of a result format."""
    return FORMATS[fmt]

