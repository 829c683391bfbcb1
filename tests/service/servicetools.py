"""Helpers of the service tests: committed data, polling, and a real ``svmsvc serve`` process."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np

from tests.shared_data import data_path  # noqa: F401 (the service tests take it from here)

FINISHED = {"succeeded", "failed", "cancelled"}

QUICK_PARAMS = {"solver": "mfn", "C": 1.0}
"""Converges in a few iterations on heart_scale."""

LONG_PARAMS = {"solver": "mfn", "C": 100.0, "epsilon": 1e-15, "max_cgls_iter": 300,
               "max_iter": 100000, "c_path_start": None, "tol": None}
"""Never converges on a9a: CGLS rule (13) at eps = 1e-15 is below what floating point reaches,
so every Newton iteration runs its 300 CG iterations (a record about every 0.05 s) and
itermax is out of reach within a test."""

MEDIUM_PARAMS = {**LONG_PARAMS, "max_iter": 80}
"""The same, ended by itermax after 80 Newton iterations: about 3 s on a9a."""


LIVE_GRACE_S = 5.0
"""Seconds the live server gives a worker to stop after a cancel request: long enough that a
worker starved of CPU on a loaded machine still stops cooperatively in the tests that expect
it to (how fast a cancel really is, is measured by ``bench/bench_cancel.py``)."""

PATIENCE_S = 120.0
"""Ceiling for a condition the tests wait on (a job finishing, a process exiting).  Tests
wait on conditions, never on fixed sleeps; the ceiling only turns a hang into a failure and
is generous so that a busy 2-core machine does not fail the suite."""

START_PATIENCE_S = 300.0
"""Ceiling for a service to become ready: its workers compile (or load) the Numba kernels,
which takes minutes on a fresh clone of a loaded machine."""


def random_svmlight(n_rows: int = 40, n_features: int = 5, seed: int | None = None) -> bytes:
    """A small random binary dataset in SVMlight text (unique content for each seed)."""
    rng = np.random.default_rng(seed)
    lines = []
    for row in range(n_rows):
        label = 1 if row % 2 else -1
        values = rng.normal(size=n_features) + 0.5 * label
        features = " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(values))
        lines.append(f"{label} {features}")
    return ("\n".join(lines) + "\n").encode()


def wait_for(condition: Callable[[], object], timeout: float, interval: float = 0.1,
             what: str = "condition"):
    """Poll ``condition`` until it returns a truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def upload(client, content: bytes | Path, filename: str = "data.svm", **params):
    if isinstance(content, Path):
        filename, content = content.name, content.read_bytes()
    files = {"file": (filename, io.BytesIO(content), "application/octet-stream")}
    return client.post("/api/v1/datasets", files=files, params=params)


def uploaded_id(client, content: bytes | Path, **params) -> str:
    response = upload(client, content, **params)
    assert response.status_code in (200, 201), response.text
    return response.json()["id"]


def create_job(client, dataset_id: str, params: dict, **fields) -> dict:
    response = client.post("/api/v1/jobs",
                           json={"dataset_id": dataset_id, "params": params, **fields})
    assert response.status_code == 202, response.text
    return response.json()


def job(client, job_id: str) -> dict:
    response = client.get(f"/api/v1/jobs/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()


def wait_job(client, job_id: str, timeout: float = PATIENCE_S,
             until: Callable[[dict], bool] = lambda j: j["status"] in FINISHED) -> dict:
    """The job once ``until(job)`` holds (by default: once it has finished)."""

    def reached() -> dict | None:
        current = job(client, job_id)
        return current if until(current) else None

    return wait_for(reached, timeout, interval=0.05, what=f"job {job_id}")


def running_with_progress(j: dict) -> bool:
    """A job running that has reported an iteration (``until`` of :func:`wait_job`)."""
    return j["status"] == "running" and j["progress"] is not None


def assert_contiguous_log(client, job_id: str) -> list[dict]:
    """The job's whole log, its iterations numbered 1, 2, ... without a gap."""
    records = full_log(client, job_id)
    assert [r["iteration"] for r in records] == list(range(1, len(records) + 1))
    return records


STORED_EVALUATION_FIELDS = ("id", "model_id", "dataset_name", "created_at", "created_by")
"""What POST /models/{id}/evaluate answers besides the metrics: the stored evaluation's."""


#: the fields of a regression's and a one-class model's evaluation, null in a classifier's
#: (its answer has every field of EvaluationPublic; the library's dict only its task's)
OTHER_TASKS_FIELDS = ("mean_squared_error", "mean_absolute_error", "r2", "squared_correlation",
                      "predicted_vs_true", "outlier_fraction", "inlier_label",
                      "decision_histogram")


def metrics_of(evaluation: dict) -> dict:
    """A classifier's evaluation answer without the fields of its storing, its ``task`` and
    the other tasks' (null) fields: the metrics and the dataset's id, as ``solvers.evaluate``
    and a model's ``validation`` have them."""
    return {k: v for k, v in evaluation.items()
            if k not in STORED_EVALUATION_FIELDS and k != "task"
            and not (k in OTHER_TASKS_FIELDS and v is None)}


def full_log(client, job_id: str) -> list[dict]:
    records, after = [], 0
    while True:
        page = client.get(f"/api/v1/jobs/{job_id}/log", params={"after": after}).json()
        records += page["data"]
        if not page["has_more"]:
            return records
        after = page["data"][-1]["iteration"]


def sse_events(lines):
    """The events of a text/event-stream, from its lines: one dict of fields (``event``,
    ``data``, ``id``) per event, comment lines (``:``) skipped."""
    event: dict = {}
    for line in lines:
        if line.startswith(":"):
            continue
        if line:
            key, _, value = line.partition(": ")
            event[key] = value
        elif event:
            yield event
            event = {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def svmsvc_command() -> list[str]:
    script = Path(sys.executable).parent / "svmsvc"
    return [str(script)] if script.exists() else [sys.executable, "-m", "app.cli"]


class ServerProcess:
    """``svmsvc serve`` on a free port, as a subprocess with its own log file."""

    def __init__(self, data_dir: Path, database_url: str, workers: int = 2, **settings):
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir / f"server-{self.port}.log"
        env = dict(os.environ, SVMSVC_DATABASE_URL=database_url, SVMSVC_THREADS_PER_WORKER="1")
        env.update({f"SVMSVC_{name.upper()}": str(value) for name, value in settings.items()})
        data_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [*svmsvc_command(), "serve", "--port", str(self.port), "--data-dir",
             str(data_dir), "--workers", str(workers)],
            stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self.client = httpx.Client(base_url=self.url, timeout=PATIENCE_S)
        self.expected_workers = workers

    def readiness(self) -> dict | None:
        try:
            return self.client.get("/readyz").json()
        except httpx.TransportError:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited:\n{self.log()}") from None
            return None

    def wait_ready(self, timeout: float = START_PATIENCE_S) -> dict:
        """Until every worker is alive and warmed up."""

        def all_ready():
            state = self.readiness()
            if state is None or state["status"] != "ready":
                return None
            workers = state["workers"]
            if len(workers) == self.expected_workers and all(w["ready"] for w in workers):
                return state
            return None

        return wait_for(all_ready, timeout, interval=0.2, what="all workers ready")

    def worker_of(self, job_id: str) -> dict:
        workers = self.readiness()["workers"]
        return next(w for w in workers if w["job_id"] == job_id)

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = PATIENCE_S) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.client.close()
        self._log.close()


def wait_process_gone(pid: int, timeout: float = PATIENCE_S) -> None:
    """Until no process ``pid`` exists (or it is a zombie nobody reaps)."""

    def gone() -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        return state == "Z"

    wait_for(gone, timeout, interval=0.1, what=f"process {pid} to exit")
