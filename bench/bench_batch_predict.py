"""``python -m bench batch_predict``: a batch prediction job over a large dataset, its worker's
peak memory and its rows per second, beside the library's ``predict`` on the same data.

    python -m bench batch_predict [--rows 1000000] [--features 1000] [--per-row 10]
        [--chunk-rows 50000] [--out results.json]

A service (``svmsvc serve``, one worker with one Numba thread, SQLite in a temporary
directory, as :mod:`bench.bench_service` starts it) trains ``mfn`` (C = 1) on 20,000 rows of
a synthetic sparse problem (``--features`` columns, ``--per-row`` entries a row, labels the
sign of a random linear function), then predicts ``--rows`` rows of the same problem as a
batch prediction job (``POST /jobs/predict``, CSV, ``SVMSVC_PREDICTION_CHUNK_ROWS`` =
``--chunk-rows``).

Measured:

* the worker's memory: its peak resident set during the job (``VmHWM`` of
  ``/proc/<pid>/status``, reset through ``clear_refs`` just before the job is queued) less
  its resident set before (``VmRSS``), beside the bytes the dataset's CSR arrays take whole
  (what loading it would cost) and the result's size;
* the job's time (created to finished, as the service reports it, and the worker's own
  read-score-write seconds) and rows per second, beside the library's ``decision_function``
  plus ``labels_from_scores`` on the whole matrix in this process (parallel kernels, one
  thread: the worker's setting), best of 3;
* the library's time to score and write the same CSV text with the ``csv`` module (to
  memory), which is most of a job's work;
* the result, downloaded (streamed), checked equal to the library's labels and scores first.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from bench.bench_service import Server, wait_job
from bench.commands import Command, option, out


def synthetic(rows: int, features: int, per_row: int, seed: int, weights: np.ndarray,
              path: Path, block: int = 100_000) -> None:
    """SVMlight text of a random sparse problem written to ``path`` a block of rows at a
    time."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as file:
        for start in range(0, rows, block):
            n = min(block, rows - start)
            columns = np.sort(rng.integers(0, features, size=(n, per_row)), axis=1)
            keep = np.ones_like(columns, dtype=bool)
            keep[:, 1:] = columns[:, 1:] != columns[:, :-1]
            values = np.round(rng.normal(size=columns.shape), 4)
            margins = np.where(keep, values * weights[columns], 0.0).sum(axis=1)
            labels = np.where(margins > 0, 1, -1)
            for label, cols, vals, kept in zip(labels.tolist(), (columns + 1).tolist(),
                                                values.tolist(), keep.tolist(), strict=True):
                pairs = " ".join(f"{c}:{v}" for c, v, k in zip(cols, vals, kept, strict=True)
                                 if k)
                file.write(f"{label} {pairs}\n")


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


class RssSampler(threading.Thread):
    """The largest VmRSS seen every 20 ms (a check on VmHWM)."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, status_kib(self.pid, "VmRSS"))
            self.stop.wait(0.02)


def run_command(args) -> int:
    import solvers

    load_before = os.getloadavg()
    weights = np.random.default_rng(0).normal(size=args.features)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        train_path, big_path = root / "train.svm", root / "big.svm"
        started = time.perf_counter()
        synthetic(20_000, args.features, args.per_row, 1, weights, train_path)
        synthetic(args.rows, args.features, args.per_row, 2, weights, big_path)
        print(f"data written in {time.perf_counter() - started:.1f} s "
              f"({big_path.stat().st_size / 2**20:.0f} MiB of text)", file=sys.stderr)
        (root / "service").mkdir()
        server = Server(root / "service", workers=1, max_upload_bytes=8 * 2**30,
                        max_upload_nnz=10**9, prediction_chunk_rows=args.chunk_rows,
                        job_time_limit_s=86400)
        try:
            server.wait_ready()
            with server.client() as client:
                client.timeout = 3600.0
                def uploaded(path: Path) -> str:
                    with open(path, "rb") as file:
                        answer = client.post("/api/v1/datasets", files={"file": (path.name,
                                                                                  file)})
                    answer.raise_for_status()
                    return answer.json()["id"]

                train = uploaded(train_path)
                job = client.post("/api/v1/jobs", json={
                    "dataset_id": train, "params": {"solver": "mfn", "C": 1.0}}).json()
                job, _ = wait_job(client, job["id"], lambda j: j["status"] in (
                    "succeeded", "failed", "cancelled"), timeout=600)
                model_id = job["model_id"]
                model = solvers.load_model(
                    client.get(f"/api/v1/models/{model_id}/download").content)
                big = uploaded(big_path)
                worker = client.get("/readyz").json()["workers"][0]["pid"]
                Path(f"/proc/{worker}/clear_refs").write_text("5")  # VmHWM := VmRSS
                rss_before = status_kib(worker, "VmRSS")
                sampler = RssSampler(worker)
                sampler.start()
                created = client.post("/api/v1/jobs/predict", json={
                    "model_id": model_id, "dataset_id": big}).json()
                done, _ = wait_job(client, created["id"], lambda j: j["status"] in (
                    "succeeded", "failed", "cancelled"), timeout=7200, interval=0.2)
                sampler.stop.set()
                peak = status_kib(worker, "VmHWM")
                if done["status"] != "succeeded":
                    print(json.dumps(done, indent=2), file=sys.stderr)
                    return 1
                result_path = root / "result.csv"
                with client.stream("GET", done["result"]["download"]) as response, \
                        open(result_path, "wb") as file:
                    for piece in response.iter_bytes():
                        file.write(piece)
        finally:
            server.stop()
        data = solvers.read_svmlight(str(big_path), n_features=model.n_features_in_)
        X = data.X
        csr_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
        import numba

        numba.set_num_threads(1)  # the worker's (SVMSVC_THREADS_PER_WORKER=1)
        library_s = []
        for _ in range(3):
            start = time.perf_counter()
            scores = model.decision_function(X, parallel=True)
            labels = model.labels_from_scores(scores)
            library_s.append(time.perf_counter() - start)
        # the library scoring the same rows and writing the same CSV text (to memory): where
        # a job's time goes beside the scoring
        start = time.perf_counter()
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(["row", "label", "decision_value"])
        writer.writerows(zip(range(X.shape[0]), labels.tolist(), scores.tolist(), strict=True))
        library_csv_s = time.perf_counter() - start + min(library_s)
        del text
        with open(result_path, newline="") as file:
            reader = csv.reader(file)
            next(reader)
            got = np.array([(float(r[1]), float(r[2])) for r in reader])
        equal = bool(np.array_equal(got[:, 0], labels) and np.array_equal(got[:, 1], scores))
        job_s = (np.datetime64(done["finished_at"][:26]) -
                 np.datetime64(done["created_at"][:26])) / np.timedelta64(1, "s")
    figures = {
        "rows": args.rows, "features": args.features, "nnz": int(X.nnz),
        "chunk_rows": args.chunk_rows, "equal_to_library": equal,
        "worker_rss_before_mib": rss_before / 1024, "worker_peak_mib": peak / 1024,
        "worker_peak_sampled_mib": sampler.peak / 1024,
        "worker_growth_mib": (peak - rss_before) / 1024,
        "dataset_csr_mib": csr_bytes / 2**20, "result_mib": done["result"]["bytes"] / 2**20,
        "job_seconds": float(job_s), "worker_seconds": done["result"]["seconds"],
        "job_rows_per_s": args.rows / float(job_s),
        "worker_rows_per_s": args.rows / done["result"]["seconds"],
        "library_seconds": min(library_s), "library_rows_per_s": args.rows / min(library_s),
        "library_with_csv_seconds": library_csv_s,
        "load_before": load_before, "load_after": os.getloadavg(),
    }
    print(json.dumps(figures, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2))
    return 0 if equal else 1


COMMAND = Command(
    "batch_predict", "a batch prediction job's worker memory and rows/s against the library",
    run_command, options=(
        option("--rows", type=int, default=1_000_000, help="rows predicted"),
        option("--features", type=int, default=1000, help="columns of the problem"),
        option("--per-row", dest="per_row", type=int, default=10, help="entries a row"),
        option("--chunk-rows", dest="chunk_rows", type=int, default=50_000,
               help="SVMSVC_PREDICTION_CHUNK_ROWS of the service"),
        out(None)),
    description=__doc__)
