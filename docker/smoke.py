"""The compose deployment's smoke test, against a stack that ``docker/smoke.sh`` brought up.

Standard library only (it runs with the host's python3, outside the project's environment).
It checks, in order, printing each step and what it saw:

1. the API gets ready (``/readyz``) and refuses a request without an API key;
2. a dataset uploads (``/api/v1/datasets``);
3. a training job runs to ``succeeded`` -- on a Dask worker, which the worker's own record of
   the task says (with ``--executor dask``) -- and its model predicts the training rows;
4. with ``--executor dask``: a long job is caught running on a worker, that worker's container
   is killed (SIGKILL), and the job must end -- retried on the other worker (``succeeded``
   with ``attempts`` >= 2) or ``failed`` with a reason -- never stay ``running``;
5. with ``--scale N`` (and ``--executor dask``): ``compose up --scale worker=N`` on the running
   stack, readiness lists N live workers, and N jobs queued at once run on N different workers;
6. then one model data-parallel across the N workers: the dataset split into N shards in the
   volume the API and the workers share (under ``SVMSVC_SHARD_ROOTS``), registered from their
   paths (``/api/v1/datasets/sharded``, nothing uploaded), an ``mfn`` job whose partitions sit
   on all N workers, whose objective is the uploaded dataset's job's to 1e-6 relative, and
   whose model predicts the training rows.

Exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import lzma
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

API = "/api/v1"
TERMINAL = ("succeeded", "failed", "cancelled")
START_PATIENCE_S = 600.0
JOB_PATIENCE_S = 900.0

# The long job of the worker-death check: an RBF LS-SVM on mushrooms by conjugate gradients
# with the whole 8124 x 8124 kernel in its row cache (cache_mb=512: without it the service
# refuses 8124 rows, past the kernel path's practical limit at the default 256 MB) and a CG
# tolerance it never reaches, so it ends at max_iter, succeeded: 1.6 s to its second
# iteration and about 40 ms an iteration after that on one thread (40.8 s for 1000 here,
# 2026-11-27), so the job runs for tens of seconds.
LONG_JOB = {"solver": "lssvm", "C": 1.0, "kernel": "rbf", "gamma": 0.05,
            "method": "iterative", "cg_tol": 1e-300, "max_iter": 600, "cache_mb": 512}
# The jobs of the scale-out check: the same, shorter (each holds its worker for a few seconds,
# long enough that jobs queued at once cannot share one).
SCALE_JOB = {**LONG_JOB, "max_iter": 40}
STARTED_ON = "running on Dask worker "  # the job's message while its attempt runs

# Runs inside the scheduler's container (it has the project and distributed): which workers
# hold a record of the task KEY (argv[1]), and which worker processes it now.
WHO_RAN = """
import json, sys
from distributed import Client
key = sys.argv[1]
with Client("tcp://127.0.0.1:8786", timeout=30) as client:
    stories = client.run(lambda dask_worker: len(dask_worker.state.story(key)))
    processing = client.run_on_scheduler(
        lambda dask_scheduler: {k: ts.processing_on.address
                                for k, ts in dask_scheduler.tasks.items()
                                if ts.processing_on is not None})
print(json.dumps({"ran": sorted(a for a, n in stories.items() if n),
                  "processing_on": processing.get(key)}))
"""


class SmokeFailure(Exception):
    pass


DECOMPRESSORS = {".xz": lzma.open, ".gz": gzip.open, ".bz2": bz2.open}


def plain_dataset(path: Path, directory: Path) -> Path:
    """The SVMlight file ``path`` as plain text: itself, or, compressed (``.xz``, ``.gz``,
    ``.bz2``: the repository's ``data/`` carries its sets in xz), its decompressed copy in
    ``directory``.  The checks read its rows and the sharded step cuts it at line ends, which a
    compressed file has none of."""
    opener = DECOMPRESSORS.get(path.suffix)
    if opener is None:
        return path
    target = directory / path.stem
    with opener(path, "rb") as source, target.open("wb") as sink:
        shutil.copyfileobj(source, sink)
    return target


def say(text: str) -> None:
    sys.stdout.write(f"[{time.strftime('%H:%M:%S')}] {text}\n")
    sys.stdout.flush()


def check(condition: bool, text: str) -> None:
    if not condition:
        raise SmokeFailure(text)
    say(f"ok: {text}")


class Api:
    def __init__(self, base: str, key: str):
        self.base = base.rstrip("/")
        self.key = key

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str | None = None, key: bool = True) -> tuple[int, object]:
        request = urllib.request.Request(self.base + path, data=body, method=method)
        if key:
            request.add_header("X-API-Key", self.key)
        if content_type:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def json(self, method: str, path: str, payload: object) -> tuple[int, object]:
        return self.request(method, path, json.dumps(payload).encode(), "application/json")

    def upload(self, path: Path) -> dict:
        boundary = uuid.uuid4().hex
        body = b"".join([
            f"--{boundary}\r\n".encode(),
            f'Content-Disposition: form-data; name="file"; filename="{path.name}"\r\n'.encode(),
            b"Content-Type: application/octet-stream\r\n\r\n",
            path.read_bytes(),
            f"\r\n--{boundary}--\r\n".encode(),
        ])
        status, dataset = self.request("POST", f"{API}/datasets", body,
                                       f"multipart/form-data; boundary={boundary}")
        check(status in (200, 201), f"upload of {path.name}: HTTP {status}")
        return dataset


class Stack:
    """The compose project: its containers and a way to ask the Dask scheduler."""

    def __init__(self, compose: list[str]):
        self.compose = compose

    def container_ids(self, service: str) -> list[str]:
        out = subprocess.run([*self.compose, "ps", "-q", service], check=True,
                             capture_output=True, text=True).stdout
        return out.split()

    @staticmethod
    def ip_address(container: str) -> str:
        return subprocess.run(
            ["docker", "inspect", "-f",
             "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", container],
            check=True, capture_output=True, text=True).stdout.split()[0]

    def who_ran(self, key: str) -> dict:
        scheduler = self.container_ids("scheduler")[0]
        out = subprocess.run(["docker", "exec", scheduler, "python", "-c", WHO_RAN, key],
                             check=True, capture_output=True, text=True, timeout=120).stdout
        return json.loads(out.strip().splitlines()[-1])

    def worker_of(self, address: str) -> str:
        """The worker container whose address (tcp://IP:port) is ``address``."""
        host = address.split("://", 1)[-1].rsplit(":", 1)[0]
        for container in self.container_ids("worker"):
            if self.ip_address(container) == host:
                return container
        raise SmokeFailure(f"no worker container has the address {address}")


def wait_ready(api: Api) -> dict:
    deadline = time.monotonic() + START_PATIENCE_S
    last = None
    while time.monotonic() < deadline:
        try:
            status, body = api.request("GET", "/readyz", key=False)
            if status == 200:
                return body
            last = body
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            last = str(exc)
        time.sleep(2)
    raise SmokeFailure(f"the API was not ready within {START_PATIENCE_S:.0f} s: {last}")


def job_line(job: dict) -> str:
    progress = job.get("progress") or {}
    return (f"status={job['status']} attempts={job['attempts']} "
            f"iteration={progress.get('iteration')} solver_status={job.get('solver_status')} "
            f"message={job.get('message')!r} error={job.get('error')!r}")


def wait_job(api: Api, job_id: str, until, what: str, patience: float = JOB_PATIENCE_S,
             every: float = 1.0) -> dict:
    """Poll the job until ``until(job)``; print each change of its state."""
    deadline = time.monotonic() + patience
    seen = None
    while time.monotonic() < deadline:
        status, job = api.request("GET", f"{API}/jobs/{job_id}")
        check_quiet(status == 200, f"GET job {job_id}: HTTP {status} {job}")
        line = job_line(job)
        if line != seen:
            say(f"  job {job_id[:8]}: {line}")
            seen = line
        if until(job):
            return job
        time.sleep(every)
    raise SmokeFailure(f"job {job_id} did not {what} within {patience:.0f} s: {seen}")


def check_quiet(condition: bool, text: str) -> None:
    if not condition:
        raise SmokeFailure(text)


def train_mfn(api: Api, dataset_id: str, what: str) -> dict:
    """An ``mfn`` job at C = 1 on the dataset, queued and run to ``succeeded``."""
    status, job = api.json("POST", f"{API}/jobs",
                           {"dataset_id": dataset_id, "params": {"solver": "mfn", "C": 1.0}})
    check(status == 202, f"{what} queued (HTTP {status})")
    job = wait_job(api, job["id"], lambda j: j["status"] in TERMINAL, "finish")
    check(job["status"] == "succeeded" and job["model_id"],
          f"{what} succeeded with model {job['model_id']}")
    return job


def train_and_predict(api: Api, stack: Stack, dataset_path: Path, executor: str) -> dict:
    dataset = api.upload(dataset_path)
    say(f"dataset {dataset['id']}: {dataset['n_samples']} x {dataset['n_features']}, "
        f"classes {dataset['class_counts']}")
    job = train_mfn(api, dataset["id"], "training job")
    if executor == "dask":
        key = f"svmsvc-job-{job['id']}-{job['attempts']}"
        ran = stack.who_ran(key)
        check(len(ran["ran"]) == 1,
              f"task {key} ran on Dask worker {ran['ran']} (the worker's own record)")
    check_predictions(api, job["model_id"], dataset_path)
    return job


def check_predictions(api: Api, model_id: str, dataset_path: Path) -> None:
    """The model predicts the first 500 training rows, at least 90% of them right."""
    lines = dataset_path.read_text().splitlines()[:500]
    truth = [float(line.split(None, 1)[0]) for line in lines]
    status, predicted = api.request("POST", f"{API}/models/{model_id}/predict",
                                    "\n".join(lines).encode(), "text/plain")
    check(status == 200 and predicted["count"] == len(lines),
          f"batch prediction of {len(lines)} rows (HTTP {status})")
    labels = [float(row["label"]) for row in predicted["data"]]
    accuracy = sum(a == b for a, b in zip(labels, truth, strict=True)) / len(truth)
    check(accuracy >= 0.9, f"training accuracy on those rows {accuracy:.4f} (>= 0.9)")


def kill_worker_mid_job(api: Api, stack: Stack, dataset_path: Path, max_attempts: int) -> None:
    workers = stack.container_ids("worker")
    check(len(workers) >= 2, f"{len(workers)} worker containers up")
    dataset = api.upload(dataset_path)
    status, job = api.json("POST", f"{API}/jobs",
                           {"dataset_id": dataset["id"], "params": LONG_JOB})
    check(status == 202, f"long job queued (HTTP {status}): {json.dumps(LONG_JOB)}"
          + ("" if status == 202 else f" -> {json.dumps(job)}"))
    job_id = job["id"]
    # Mid-job: running, and past its first iterations (the kernels compiled, the log written).
    job = wait_job(api, job_id, lambda j: j["status"] in TERMINAL or (
        j["status"] == "running" and (j.get("progress") or {}).get("iteration", 0) >= 2),
        "reach its second iteration")
    check(job["status"] == "running", "the long job is running")
    key = f"svmsvc-job-{job_id}-{job['attempts']}"
    # Where it runs: the job's message names the worker its attempt started on (quick, so the
    # kill lands mid-job); the scheduler is asked only when the message does not say.
    message = job.get("message") or ""
    if message.startswith(STARTED_ON):
        address = message[len(STARTED_ON):].split()[0]
        say(f"the job's message names worker {address}")
    else:
        address = stack.who_ran(key)["processing_on"]
        check(address is not None, f"the scheduler has task {key} processing on {address}")
    victim = stack.worker_of(address)
    say(f"killing worker container {victim[:12]} ({address}) with SIGKILL")
    killed_at = time.monotonic()
    subprocess.run(["docker", "kill", "--signal", "KILL", victim], check=True,
                   capture_output=True)
    job = wait_job(api, job_id, lambda j: j["status"] in TERMINAL, "end after the kill")
    say(f"the job ended {time.monotonic() - killed_at:.1f} s after the kill: {job_line(job)}")
    if job["status"] == "succeeded":
        check(job["attempts"] >= 2,
              f"the job was retried: succeeded on attempt {job['attempts']} of {max_attempts}")
        check(job["finished_at"] is not None and job["model_id"] is not None,
              f"the retry wrote its model {job['model_id']}")
        key = f"svmsvc-job-{job_id}-{job['attempts']}"
        ran = stack.who_ran(key)
        survivors = {stack.ip_address(c) for c in stack.container_ids("worker") if c != victim}
        hosts = {a.split("://", 1)[-1].rsplit(":", 1)[0] for a in ran["ran"]}
        check(bool(hosts) and hosts <= survivors,
              f"the retry ({key}) ran on the surviving worker {ran['ran']}")
    else:
        check(job["status"] == "failed" and bool(job.get("error")),
              f"the job failed with a reason: {job.get('error')!r}")


def scale_workers(api: Api, stack: Stack, dataset_path: Path, replicas: int) -> None:
    """``docker compose up --scale worker=N`` on the running stack: the API's readiness comes
    to list N live Dask workers (one slot each with the compose defaults), and N jobs queued at
    once all succeed, each on a worker of its own."""
    subprocess.run([*stack.compose, "up", "-d", "--no-build", "--no-recreate", "--scale",
                    f"worker={replicas}"], check=True, capture_output=True, text=True,
                   timeout=START_PATIENCE_S)
    check(len(stack.container_ids("worker")) == replicas,
          f"{replicas} worker containers after --scale worker={replicas}")
    deadline = time.monotonic() + START_PATIENCE_S
    alive = 0
    while time.monotonic() < deadline:
        status, ready = api.request("GET", "/readyz", key=False)
        alive = sum(w["alive"] for w in ready["workers"]) if status == 200 else 0
        if alive >= replicas:
            break
        time.sleep(2)
    check(alive >= replicas, f"readiness lists {alive} live Dask workers (>= {replicas})")
    dataset = api.upload(dataset_path)
    ids = []
    for _ in range(replicas):
        status, job = api.json("POST", f"{API}/jobs",
                               {"dataset_id": dataset["id"], "params": SCALE_JOB})
        check(status == 202, f"job {len(ids) + 1} of {replicas} queued (HTTP {status})")
        ids.append(job["id"])
    ran_on = set()
    for job_id in ids:
        job = wait_job(api, job_id, lambda j: j["status"] in TERMINAL, "finish")
        check(job["status"] == "succeeded",
              f"scaled job {job_id} {job['status']}: {job.get('message')!r}")
        ran_on.update(stack.who_ran(f"svmsvc-job-{job_id}-{job['attempts']}")["ran"])
    check(len(ran_on) == replicas,
          f"the {replicas} jobs queued at once ran on {len(ran_on)} different Dask workers")


SHARD_DIR = "/var/lib/svmsvc/shards/smoke"  # in the volume the API and the workers share


def train_sharded(api: Api, stack: Stack, dataset_path: Path, replicas: int,
                  uploaded_job: dict) -> None:
    """The dataset in ``replicas`` shards written into the shared volume (through the API's
    container: the file goes in on stdin, ``split_svmlight`` cuts it there), registered from
    their paths, and one ``mfn`` job trained data-parallel on them: a partition on each worker
    (shard k on worker k mod N), the objective of the job on the uploaded dataset."""
    exec_api = [*stack.compose, "exec", "-T", "api"]
    with dataset_path.open("rb") as source:
        subprocess.run([*exec_api, "sh", "-c", f"mkdir -p {SHARD_DIR} && "
                        f"cat > {SHARD_DIR}/whole.svm"], stdin=source, check=True,
                       capture_output=True, timeout=START_PATIENCE_S)
    split = ("import json; from solvers.distributed import split_svmlight; "
             f"paths = split_svmlight('{SHARD_DIR}/whole.svm', '{SHARD_DIR}/parts', "
             f"n_shards={replicas}); print(json.dumps([str(p) for p in paths]))")
    out = subprocess.run([*exec_api, "sh", "-c", f"python -c \"{split}\" && "
                          f"rm {SHARD_DIR}/whole.svm"], check=True, capture_output=True,
                         text=True, timeout=START_PATIENCE_S).stdout
    shards = json.loads(out.strip().splitlines()[-1])
    status, dataset = api.json("POST", f"{API}/datasets/sharded",
                               {"shards": shards, "name": f"{dataset_path.name} (sharded)"})
    check(status in (200, 201) and dataset["kind"] == "sharded"
          and dataset["n_shards"] == replicas,
          f"sharded dataset registered from {replicas} shard paths (HTTP {status})")
    job = train_mfn(api, dataset["id"], "data-parallel job")
    _, model = api.request("GET", f"{API}/models/{job['model_id']}")
    _, reference = api.request("GET", f"{API}/models/{uploaded_job['model_id']}")
    training = model["training_data"]
    check(training.get("workers") == replicas and len(training["partitions"]) == replicas,
          f"its {len(training['partitions'])} partitions sat on {training.get('workers')} "
          f"Dask workers (of {replicas}): sizes {training['partitions']}")
    check(training["n_samples"] == reference["training_data"]["n_samples"],
          f"it trained on all {training['n_samples']} rows")
    relative = abs(model["objective"] - reference["objective"]) / abs(reference["objective"])
    check(relative <= 1e-6, f"objective {model['objective']!r} is the uploaded dataset's "
                            f"{reference['objective']!r} to {relative:.1e} relative (<= 1e-6)")
    _, records = api.request("GET", f"{API}/jobs/{job['id']}/log?limit=1000")
    moved = sum(r["extras"].get("bytes_moved", 0) for r in records["data"])
    rounds = sum(r["extras"].get("reductions", 0) for r in records["data"])
    check(rounds > 0, f"its log counts {rounds} reductions and {moved} bytes moved")
    check_predictions(api, job["model_id"], dataset_path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the API's base URL")
    parser.add_argument("--key", required=True, help="an API key of scope train (or admin)")
    parser.add_argument("--compose", required=True, help="the compose command of the stack")
    parser.add_argument("--executor", choices=("dask", "local"), default="dask")
    parser.add_argument("--dataset", type=Path, required=True,
                        help="an SVMlight file, plain or compressed (.xz, .gz, .bz2)")
    parser.add_argument("--max-attempts", type=int, default=2)
    parser.add_argument("--scale", type=int, default=0,
                        help="then scale the Dask workers to this many (0: no scale-out check)")
    args = parser.parse_args()
    api = Api(args.url, args.key)
    stack = Stack(shlex.split(args.compose))
    with tempfile.TemporaryDirectory(prefix="svmsvc-smoke-") as scratch:
        return run_checks(api, stack, args, plain_dataset(args.dataset, Path(scratch)))


def run_checks(api: Api, stack: Stack, args: argparse.Namespace, dataset: Path) -> int:
    """Steps 1-6 of the module's docstring on ``dataset`` (plain SVMlight text); 0 if all
    passed."""
    try:
        ready = wait_ready(api)
        say(f"ready: {json.dumps(ready)}")
        if args.executor == "dask":
            check(sum(w["alive"] for w in ready["workers"]) >= 2,
                  "readiness lists the Dask workers")
        status, _ = api.request("GET", f"{API}/datasets", key=False)
        check(status == 401, f"a request without an API key is refused (HTTP {status})")
        uploaded_job = train_and_predict(api, stack, dataset, args.executor)
        if args.executor == "dask":
            kill_worker_mid_job(api, stack, dataset, args.max_attempts)
            if args.scale:
                scale_workers(api, stack, dataset, args.scale)
                train_sharded(api, stack, dataset, args.scale, uploaded_job)
        else:
            say("executor local: no Dask worker to kill; the worker-death check is skipped")
    except SmokeFailure as exc:
        say(f"FAILED: {exc}")
        return 1
    say("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
