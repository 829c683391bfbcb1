"""Measurements of a running service (``svmsvc serve`` as a subprocess), not timed tests.

    python -m bench service cancel [--trials 10] [--database-url URL]
    python -m bench service load [--clients 20] [--seconds 60] [--wrk-connections 0]
        [--database-url URL]
    python -m bench service memory [--rounds 6] [--database-url URL]
    python -m bench service predict [--baseline SOURCE_TREE] [--rounds 5]
        [--requests 2000] [--seconds 10] [--connections 8] [--web-processes N]
        [--database-url URL]
    python -m bench service registry [--rounds 5] [--requests 2000] [--seconds 10]
        [--connections 8] [--database-url URL]
    python -m bench service startup [--warm-runs 3]
    python -m bench service uploads [--baseline SOURCE_TREE] [--rounds 3] [--uploads 10]
        [--uploaders 4] [--probers process,thread] [--no-floor] [--database-url URL]
    python -m bench service download [--baseline SOURCE_TREE] [--features 16777216]
        [--formats npz,liblinear] [--database-url URL]

``cancel``: how long a running job takes to end after ``POST /jobs/{id}/cancel`` (until
``GET /jobs/{id}`` reports ``cancelled``), on a9a with parameters that never converge; the
promise "a cancel stops a job within about a second" is checked here, with figures, rather than
in the test suite, where a loaded machine would make it flaky.

``load``: ``--clients`` threads for ``--seconds`` against a service with two workers, each
looping over a mix of requests (GET predict 70 %, batch predict of 10 rows 10 %, log pages 6 %,
a live log stream of a finished job 4 %, dataset uploads of fresh content 4 %, job creation
2 %, list endpoints 4 %): throughput, p50/p99 latency per kind, errors (any 5xx, transport
error, or unexpected status) and "database is locked" in the service's log.  Then /healthz
latency while large evaluations (a9a, 32,561 rows) run.  The load generator shares the
machine with the service.  With ``--wrk-connections N``, GET predict comes from N ``wrk``
connections running beside the threads (which then run the rest of the mix): a Python client
thread costs more CPU per request than the server does, so 20 of them measure mostly
themselves.

``memory``: the web process's resident memory (``VmRSS``) idle, then after each of
``--rounds`` large uploads (ijcnn1.t four times over, 57 MB of text, fresh content each time,
deleted after), and after as many batch predictions with a 12 MB JSON body; the peak is sampled
every 20 ms.  What the process keeps once a large request is over is what it holds idle.

``predict``: GET predict of a linear model (mfn on a9a): ``--requests`` sequential requests
from one client (p50/p99), then ``wrk`` (``apt-get install wrk``) with ``--connections`` for
``--seconds`` (predictions/s, p50/p99), and the web process's CPU time per request
(``--created-key``: also with a key created through ``POST /api-keys``); with
``--baseline``, a second server runs that source tree (first on its ``PYTHONPATH``) and the two
are measured in turn, round by round, the order alternating; ``--web-processes N`` adds a
server of this tree with N web processes (``svmsvc serve --web-processes N``), its CPU time
that of all N (and each one's, which shows how the connections spread over them).

``registry``: GET predict of one linear model (mfn on a9a) by id, by ``name@alias`` and by
``name/version`` (issue 50), on one server, interleaved round by round: single client and
``wrk`` as ``predict``, and the throughput by alias and by version over that by id; then
what an alias change costs its writer (PUT and DELETE, milliseconds), one name's answer
from the bench's own process (the fast path's cache, a database read, SQLAlchemy) and the
fast path's CPU per prediction by id, alias and version in the bench's process
(``fast_path_cpu_us``).

``uploads``: /healthz and GET predict (a linear model of heart_scale, one example) probed
every 20 ms each while ``--uploaders`` clients upload ``--uploads`` fresh 1.4 MB SVMlight
files (14,000 rows) a round: p50, p99 and max of each, the event-loop thread's CPU time and
run-queue wait (``schedstat``), the medians over ``--rounds``; with ``--baseline``, a server
of that source tree is measured too, interleaved round by round.  The probes come from a
process of their own (``bench/prober.py``), as a kubelet's do; ``--probers process,thread``
measures each server also from threads of the bench's process, as before 2026-12-07 17:40
UTC (they shared its GIL with the upload clients: the bench measured itself too).  An idle
server of this tree, probed the same way while each round's uploads go to the first
server (the floor; ``--no-floor`` to leave it out), shows what a probe costs on this machine
at that moment whatever the service does.

``startup``: seconds from ``svmsvc serve`` (two workers) to ``/readyz`` ready (and whether
the log said "svmsvc ready" by then), to the first a9a model (``solver="auto"`` at its
defaults, uploaded once ready: issue 48's goal, <= 60 s cold on an idle machine, <= 5 s warm)
and to every worker having compiled (or loaded) every solver's own kernels, first on a cold
Numba cache (a fresh ``NUMBA_CACHE_DIR``, as on a machine's first start), then
``--warm-runs`` times on the cache that run filled.

``download``: the model of issue 49 (a 20-byte upload with feature index ``--features``,
trained by dual_cd: one weight a feature, an 88 MB archive at 2^24) downloaded in each of
``--formats``: seconds, bytes, and the web process's resident memory (``VmRSS``, sampled every
20 ms) idle before and at its peak during the download; with ``--baseline``, a server of that
source tree (e.g. a worktree of main) is measured too, after this tree's.

The server runs with one worker (``cancel``, ``memory``) or two (``load``), its data in a temporary
directory, SQLite unless ``--database-url`` is given, with an admin API key made up here.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.commands import Command, database_url, option
from bench.paths import dataset_path

LONG_PARAMS = {"solver": "mfn", "C": 100.0, "epsilon": 1e-15, "max_cgls_iter": 300,
               "max_iter": 100000, "c_path_start": None, "tol": None}
ADMIN_KEY = "bench-admin-key"


class Server:
    """``svmsvc serve`` on a free port with its own data directory."""

    def __init__(self, directory: Path, *, workers: int = 1, database_url: str | None = None,
                 extra_env: dict[str, str] | None = None, **settings):
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, SVMSVC_API_KEYS=f"admin:{ADMIN_KEY}",
                   SVMSVC_THREADS_PER_WORKER="1")
        if database_url:
            env["SVMSVC_DATABASE_URL"] = database_url
        env.update({f"SVMSVC_{k.upper()}": str(v) for k, v in settings.items()})
        env.update(extra_env or {})
        self.web_processes = int(env.get("SVMSVC_WEB_PROCESSES", "1"))
        self.log_path = directory / "server.log"
        self._log = open(self.log_path, "wb")
        svmsvc = Path(sys.executable).parent / "svmsvc"
        self.process = subprocess.Popen(
            [str(svmsvc), "serve", "--port", str(self.port), "--data-dir", str(directory),
             "--workers", str(workers)], stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self.headers = {"X-API-Key": ADMIN_KEY}

    def web_pids(self) -> list[int]:
        """The processes that answer requests: the server's own, or with several web
        processes the ones uvicorn's supervisor (the server process) spawned."""
        if self.web_processes == 1:
            return [self.process.pid]
        pids = []
        for entry in Path("/proc").iterdir():
            try:
                stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
                if stat and int(stat.rsplit(")", 1)[1].split()[1]) == self.process.pid \
                        and b"spawn_main" in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError):
                continue
        return sorted(pids)

    def client(self, **kwargs) -> httpx.Client:
        kwargs.setdefault("timeout", 120.0)
        return httpx.Client(base_url=self.url, headers=self.headers, **kwargs)

    def wait_ready(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the server exited:\n{self.log_path.read_text()}")
            try:
                if httpx.get(f"{self.url}/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise SystemExit("the server did not become ready")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._log.close()


def upload(client: httpx.Client, path: Path) -> str:
    response = client.post("/api/v1/datasets",
                           files={"file": (path.name, path.read_bytes())})
    response.raise_for_status()
    return response.json()["id"]


def trained_model(client: httpx.Client, name: str, timeout: float = 120.0) -> tuple[str, dict]:
    """Upload the committed dataset ``name`` and train ``mfn`` (C = 1) on it: (dataset id,
    the succeeded job)."""
    dataset = upload(client, dataset_path(name))
    job = client.post("/api/v1/jobs", json={"dataset_id": dataset,
                                            "params": {"solver": "mfn", "C": 1.0}}).json()
    job, _ = wait_job(client, job["id"], lambda j: j["status"] == "succeeded", timeout=timeout)
    return dataset, job


def wait_job(client: httpx.Client, job_id: str, until, timeout: float = 120.0,
             interval: float = 0.01) -> tuple[dict, float]:
    """The job once ``until(job)`` holds, and the monotonic time it was seen."""
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if until(job):
            return job, time.monotonic()
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job_id} timed out: {job}")
        time.sleep(interval)


def cancel_latency(server: Server, trials: int) -> list[float]:
    """Seconds from the cancel request to the job seen ``cancelled``, per trial."""
    with server.client() as client:
        a9a = upload(client, dataset_path("a9a"))
        latencies = []
        for _ in range(trials):
            job_id = client.post("/api/v1/jobs", json={"dataset_id": a9a,
                                                       "params": LONG_PARAMS}).json()["id"]
            wait_job(client, job_id, lambda j: j["status"] == "running"
                     and (j["progress"] or {}).get("iteration", 0) >= 3)
            started = time.monotonic()
            client.post(f"/api/v1/jobs/{job_id}/cancel").raise_for_status()
            job, seen = wait_job(client, job_id, lambda j: j["status"] == "cancelled")
            if job["solver_status"] != "stopped":
                print(f"  trial: the worker was killed, not stopped: {job['message']}")
            latencies.append(seen - started)
    return latencies


MIX = [("predict", 70), ("predict_batch", 10), ("log", 6), ("stream", 4), ("upload", 4),
       ("job", 2), ("list", 4)]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


HEART_X = ("1:0.708333 2:1 3:1 4:-0.320755 5:-0.105023 6:-1 7:1 8:-0.419847 9:-1 "
           "10:-0.225806 12:1 13:-1")
"""The first example of heart_scale: GET predict's query under wrk in the mixed load."""


def load(server: Server, clients: int, seconds: float, wrk_connections: int = 0) -> dict:
    """Run the mixed load; returns the figures.  With ``wrk_connections``, GET predict comes
    from that many ``wrk`` connections for the same ``seconds`` while the ``clients`` threads
    run the rest of the mix (its other kinds, in the same proportions among themselves)."""
    import random
    import threading

    with server.client() as client:
        heart, job = trained_model(client, "heart_scale")
        model, job_id = job["model_id"], job["id"]
    kinds = [kind for kind, weight in MIX for _ in range(weight)
             if not (wrk_connections and kind == "predict")]
    latencies: dict[str, list[float]] = {kind: [] for kind, _ in MIX}
    errors: list[str] = []
    refused = {"429": 0}
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def one(client: httpx.Client, rng: random.Random, kind: str) -> httpx.Response:
        if kind == "predict":
            x = " ".join(f"{j}:{rng.random():.3f}" for j in sorted(rng.sample(range(1, 14), 5)))
            return client.get(f"/api/v1/models/{model}/predict", params={"x": x})
        if kind == "predict_batch":
            rows = [{str(j): rng.random() for j in rng.sample(range(1, 14), 5)}
                    for _ in range(10)]
            return client.post(f"/api/v1/models/{model}/predict", json={"rows": rows})
        if kind == "log":
            return client.get(f"/api/v1/jobs/{job_id}/log", params={"limit": 100})
        if kind == "stream":
            with client.stream("GET", f"/api/v1/jobs/{job_id}/log/stream") as response:
                for _ in response.iter_lines():
                    pass
                return response
        if kind == "upload":
            rows = "".join(f"{1 if k % 2 else -1} 1:{rng.random():.6f} 2:{rng.random():.6f}\n"
                           for k in range(50))
            return client.post("/api/v1/datasets", files={"file": ("load.svm", rows.encode())})
        if kind == "job":
            return client.post("/api/v1/jobs", json={"dataset_id": heart,
                                              "params": {"solver": "mfn", "C": rng.random()}})
        return client.get(rng.choice(["/api/v1/datasets", "/api/v1/jobs", "/api/v1/models"]),
                          params={"limit": 20})

    def run(seed: int) -> None:
        rng = random.Random(seed)
        with server.client() as client:
            while time.monotonic() < stop:
                kind = rng.choice(kinds)
                started = time.perf_counter()
                try:
                    response = one(client, rng, kind)
                    status = response.status_code
                except httpx.HTTPError as exc:
                    with lock:
                        errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                    continue
                elapsed = time.perf_counter() - started
                with lock:
                    if status == 429:
                        refused["429"] += 1
                    elif status >= 400:
                        errors.append(f"{kind}: {status} {response.text[:200]}")
                    else:
                        latencies[kind].append(elapsed)

    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(clients)]
    wrk_result: dict = {}
    if wrk_connections:
        threads.append(threading.Thread(target=lambda: wrk_result.update(
            _wrk(server, model, seconds, wrk_connections, x=HEART_X))))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = sum(len(v) for v in latencies.values())
    figures = {
        "clients": clients, "seconds": seconds, "requests": total,
        "throughput": total / seconds, "errors": len(errors), "first_errors": errors[:5],
        "refused_429": refused["429"],
        "database_locked": server.log_path.read_text(errors="replace").count(
            "database is locked"),
        "by_kind": {kind: {"n": len(v), "p50_ms": 1e3 * _percentile(v, 0.5),
                           "p99_ms": 1e3 * _percentile(v, 0.99)}
                    for kind, v in latencies.items()},
    }
    figures["predictions_per_s"] = len(latencies["predict"]) / seconds
    if wrk_connections:
        figures["wrk_connections"] = wrk_connections
        figures["wrk_predict"] = wrk_result
        figures["predictions_per_s"] = wrk_result.get("per_s")
    return figures


def healthz_during_evaluation(server: Server, evaluations: int = 4) -> dict:
    """/healthz latencies while ``evaluations`` evaluations of an a9a model on a9a run at
    once (each 32,561 rows in the web process)."""
    import threading

    with server.client() as client:
        a9a, job = trained_model(client, "a9a")
        model = job["model_id"]
        client.post(f"/api/v1/models/{model}/evaluate", json={"dataset_id": a9a}).raise_for_status()
        durations: list[float] = []

        def evaluate() -> None:
            with server.client() as own:
                started = time.perf_counter()
                own.post(f"/api/v1/models/{model}/evaluate",
                         json={"dataset_id": a9a}).raise_for_status()
                durations.append(time.perf_counter() - started)

        threads = [threading.Thread(target=evaluate) for _ in range(evaluations)]
        for thread in threads:
            thread.start()
        probes = []
        while any(thread.is_alive() for thread in threads):
            started = time.perf_counter()
            client.get("/healthz").raise_for_status()
            probes.append(time.perf_counter() - started)
            time.sleep(0.02)
        for thread in threads:
            thread.join()
    return {"evaluations": evaluations, "evaluation_s_max": max(durations),
            "healthz_n": len(probes), "healthz_p50_ms": 1e3 * _percentile(probes, 0.5),
            "healthz_max_ms": 1e3 * max(probes)}


def upload_files(uploads: int, rows: int) -> list[bytes]:
    """``uploads`` SVMlight files of ``rows`` rows of 8 features out of 200 (about 1.4 MB at
    14,000 rows), all different."""
    import numpy as np

    rng = np.random.default_rng(35)
    files = []
    for _ in range(uploads):
        lines = [f"{1 if rng.random() < 0.5 else -1} " + " ".join(
            f"{j}:{v:.6f}" for j, v in zip(np.sort(rng.choice(200, 8, replace=False)) + 1,
                                          rng.random(8), strict=True)) for _ in range(rows)]
        files.append(("\n".join(lines) + "\n").encode())
    return files


PROBERS = ("process", "thread")
"""Where the probes of :func:`healthz_during_uploads` come from: ``process``, a prober process
of its own (:mod:`bench.prober`, as a kubelet is); ``thread``, threads of the bench's own
process, beside the upload clients (the method of the records before 2026-12-07 17:40 UTC)."""


def loop_thread_schedstat(pid: int) -> tuple[float, float]:
    """(CPU ms, ms waiting on a run queue) of a process's main thread so far (Linux
    ``/proc/PID/task/PID/schedstat``): for ``svmsvc serve`` with one web process, the thread
    of the event loop that answers every request."""
    cpu_ns, wait_ns, _ = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()
    return int(cpu_ns) / 1e6, int(wait_ns) / 1e6


class _ProberProcess:
    """:mod:`bench.prober` on ``targets`` of ``server``: started (and every target answered
    once) on entry; on exit, told to stop, its latencies in :attr:`latencies`."""

    def __init__(self, server: Server, targets: list[tuple[str, str, dict]],
                 timeout: float = 120.0):
        self.server, self.targets, self.timeout = server, targets, timeout
        self.latencies: dict[str, list[float]] = {}

    def __enter__(self) -> _ProberProcess:
        import select

        spec = {"url": self.server.url, "headers": self.server.headers, "interval": 0.02,
                "targets": self.targets}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.prober", json.dumps(spec)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
        ready, _, _ = select.select([self.process.stdout], [], [], self.timeout)
        if not ready or self.process.stdout.readline().strip() != "ready":
            self.process.kill()
            raise SystemExit(f"the prober was not ready within {self.timeout:.0f} s")
        return self

    def __exit__(self, *exc) -> None:
        try:
            out, _ = self.process.communicate(input="", timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise SystemExit("the prober did not stop") from None
        if exc[0] is None:
            self.latencies = json.loads(out.strip().splitlines()[-1])


def healthz_during_uploads(server: Server, uploads: int = 10, rows: int = 14000,
                          uploaders: int = 1, model: str | None = None,
                          files: list[bytes] | None = None, prober: str = "process",
                          probed: Server | None = None) -> dict:
    """/healthz latencies while ``uploads`` SVMlight files of about 1.4 MB (``rows`` rows of
    8 features) are uploaded to ``server`` by ``uploaders`` clients at once (each upload is
    parsed, stored, and followed by the memory release, :mod:`app.memory`; none may stall the
    event loop: issue 35's and 49's goal, p99 under 50 ms).  With ``model``, GET predict of
    that model (one example) is probed too, each probe every 20 ms, from a process of their
    own (``prober="process"``) or from threads of this one (``"thread"``, see
    :data:`PROBERS`).  ``probed``: the server probed, by default ``server``; another (idle)
    one measures what the machine alone costs a probe meanwhile (the floor).  Also the
    probed server's event-loop thread's CPU and run-queue wait over the round
    (:func:`loop_thread_schedstat`; one web process)."""
    import io
    import threading
    from concurrent.futures import ThreadPoolExecutor

    probed = probed or server
    files = files or upload_files(uploads, rows)
    targets = [("healthz", "/healthz", {})]
    if model is not None:
        targets.append(("predict", f"/api/v1/models/{model}/predict",
                        {"x": "3:1 10:0.5 13:1"}))

    def send(content: bytes) -> None:
        with server.client() as client:
            client.post("/api/v1/datasets", files={"file": ("d.svm", io.BytesIO(content))}
                        ).raise_for_status()

    def upload_all() -> None:
        with ThreadPoolExecutor(uploaders) as pool:
            list(pool.map(send, files))

    before = loop_thread_schedstat(probed.process.pid)
    if prober == "process":
        with _ProberProcess(probed, targets) as probes:
            upload_all()
        latencies = probes.latencies
    else:
        latencies = {kind: [] for kind, _, _ in targets}
        done = threading.Event()

        def probe(kind: str, path: str, params: dict) -> None:
            with probed.client() as own:
                while not done.is_set():
                    started = time.perf_counter()
                    own.get(path, params=params).raise_for_status()
                    latencies[kind].append(time.perf_counter() - started)
                    time.sleep(0.02)

        probers = [threading.Thread(target=probe, args=target) for target in targets]
        for thread in probers:
            thread.start()
        try:
            upload_all()
        finally:
            done.set()
            for thread in probers:
                thread.join()
    after = loop_thread_schedstat(probed.process.pid)
    figures = {"uploads": len(files), "uploaders": uploaders, "upload_bytes": len(files[0]),
               "loop_cpu_ms": after[0] - before[0], "loop_runq_wait_ms": after[1] - before[1]}
    for kind, values in latencies.items():
        if values:
            figures.update({f"{kind}_n": len(values),
                            f"{kind}_p50_ms": 1e3 * _percentile(values, 0.5),
                            f"{kind}_p99_ms": 1e3 * _percentile(values, 0.99),
                            f"{kind}_max_ms": 1e3 * max(values)})
    return figures


FLOOR = "floor (an idle server of this tree)"


def uploads_ab(directory: Path, variants: dict[str, str | None], rounds: int, uploads: int,
               uploaders: int, database_url: str | None, probers: tuple[str, ...] = ("process",),
               floor: bool = True) -> dict:
    """:func:`healthz_during_uploads` (with GET predict of an mfn model of heart_scale) on
    one server per variant (a source tree put first on ``PYTHONPATH``), the variants
    interleaved round by round, the order alternating; each round uploads fresh files (the
    same ones to every variant), probed from each of ``probers``.  With ``floor``, one more
    server of this tree stays idle and is probed the same way while the round's uploads go
    to the first variant's server (files of their own): a probe's latency on this machine at
    this moment, whatever the service does.  The medians over the rounds of each figure."""
    servers, models = {}, {}
    here = str(Path(__file__).resolve().parents[1])
    sources = dict(variants, **({FLOOR: here} if floor else {}))
    try:
        for number, (name, source) in enumerate(sources.items()):
            (directory / str(number)).mkdir()
            servers[name] = Server(directory / str(number), workers=1,
                                   database_url=database_url,
                                   extra_env={"PYTHONPATH": source} if source else {})
        for name, server in servers.items():
            server.wait_ready(timeout=1200)  # a loaded 2-core machine: minutes to warm up
            with server.client() as client:
                models[name] = trained_model(client, "heart_scale", timeout=600)[1]["model_id"]
        measured = [(name, prober) for name in servers for prober in probers]
        results: dict = {_label(*m, probers): [] for m in measured}
        all_files = upload_files(uploads * rounds * (2 if floor else 1), 14000)
        first = next(iter(variants))
        for round_ in range(rounds):
            files = all_files[round_ * uploads:(round_ + 1) * uploads]
            floor_files = all_files[(rounds + round_) * uploads:(rounds + round_ + 1) * uploads]
            for name, prober in (measured if round_ % 2 == 0 else measured[::-1]):
                target = servers[first] if name == FLOOR else servers[name]
                figures = {"utc": time.strftime("%H:%M:%S", time.gmtime()),
                           "load": os.getloadavg()[0],
                           **healthz_during_uploads(
                               target, uploaders=uploaders, model=models[name],
                               files=floor_files if name == FLOOR else files, prober=prober,
                               probed=servers[name])}
                results[_label(name, prober, probers)].append(figures)
                print(_label(name, prober, probers), json.dumps(figures), flush=True)
        return {name: {key: statistics.median(r[key] for r in runs)
                       for key in runs[0] if key != "utc"}
                | {"rounds_healthz_p99_under_50_ms": sum(r["healthz_p99_ms"] < 50 for r in runs),
                   "rounds": len(runs)}
                for name, runs in results.items()}
    finally:
        for server in servers.values():
            server.stop()


def _label(name: str, prober: str, probers: tuple[str, ...]) -> str:
    return name if probers == ("process",) else f"{name}, probers: {prober}"


def rss_mb(pid: int) -> float:
    """Resident memory of a process, in MB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def memory(server: Server, rounds: int) -> dict:
    """The web process's idle RSS before and after large uploads and large predictions."""
    import threading

    pid = server.process.pid
    peak = [0.0]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.02):
            peak[0] = max(peak[0], rss_mb(pid))

    def idle() -> float:
        time.sleep(2.0)  # let the request's threads finish and the allocator settle
        return rss_mb(pid)

    text = dataset_path("ijcnn1.t").read_bytes() * 4
    figures: dict = {"upload_mb": len(text) / 1e6}
    with server.client() as client:
        _, job = trained_model(client, "heart_scale")
        model = job["model_id"]
        client.get(f"/api/v1/models/{model}/predict", params={"x": "1:0.5"}).raise_for_status()
        figures["idle_before_mb"] = idle()
        threading.Thread(target=sample, daemon=True).start()
        after_uploads = []
        for round_ in range(rounds):
            content = text + f"1 1:{round_ + 1}e-3\n".encode()
            response = client.post("/api/v1/datasets",
                                   files={"file": (f"big-{round_}.svm", content)})
            response.raise_for_status()
            client.delete(f"/api/v1/datasets/{response.json()['id']}").raise_for_status()
            after_uploads.append(idle())
        figures["idle_after_each_upload_mb"] = after_uploads
        rows = [{str(j): round(0.001 * ((k * 7 + j) % 1000), 3) for j in range(1, 14)}
                for k in range(60000)]
        body = json.dumps({"rows": rows}).encode()
        figures["predict_body_mb"] = len(body) / 1e6
        after_predictions = []
        for _ in range(rounds):
            client.post(f"/api/v1/models/{model}/predict", content=body,
                        headers={"Content-Type": "application/json"}).raise_for_status()
            after_predictions.append(idle())
        figures["idle_after_each_prediction_mb"] = after_predictions
        sampling.set()
    figures["peak_mb"] = peak[0]
    return figures


class RssPeak:
    """The peak of a process's resident memory while the context runs (sampled every 20 ms)."""

    def __init__(self, pid: int):
        import threading

        self.pid, self.peak_mb = pid, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak_mb = max(self.peak_mb, rss_mb(self.pid))

    def __enter__(self) -> RssPeak:
        self.peak_mb = rss_mb(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def download(directory: Path, variants: dict, features: int, formats: list[str],
             database_url: str | None) -> dict:
    """Each format's download of the wide dual_cd model of issue 49, on a server per variant
    (a source tree first on ``PYTHONPATH``; None: as installed), one after the other."""
    results = {}
    for number, (name, source) in enumerate(variants.items()):
        (directory / str(number)).mkdir()
        server = Server(directory / str(number), workers=1, database_url=database_url,
                        extra_env={"PYTHONPATH": source} if source else {})
        try:
            server.wait_ready()
            with server.client(timeout=1800.0) as client:
                content = f"1 {features}:1\n-1 1:1\n".encode()
                response = client.post("/api/v1/datasets",
                                       files={"file": ("wide.svm", content)})
                response.raise_for_status()
                job = client.post("/api/v1/jobs", json={
                    "dataset_id": response.json()["id"], "params": {"solver": "dual_cd"}})
                job.raise_for_status()
                done, _ = wait_job(client, job.json()["id"], lambda j: j["status"] in
                                   ("succeeded", "failed", "cancelled"), timeout=1800.0,
                                   interval=0.5)
                if done["status"] != "succeeded":
                    raise SystemExit(f"{name}: the job {done['status']}: {done.get('error')}")
                model = done["model_id"]
                size = client.get(f"/api/v1/models/{model}").json()["size_bytes"]
                figures: dict = {"archive_bytes": size}
                for format_ in formats:
                    time.sleep(2.0)  # the allocator settles after the last request
                    idle = rss_mb(server.process.pid)
                    with RssPeak(server.process.pid) as peak:
                        start = time.perf_counter()
                        received = 0
                        with client.stream("GET", f"/api/v1/models/{model}/download",
                                           params={"format": format_}) as answer:
                            answer.raise_for_status()
                            for chunk in answer.iter_bytes():
                                received += len(chunk)
                        seconds = time.perf_counter() - start
                    figures[format_] = {"seconds": round(seconds, 2), "bytes": received,
                                        "idle_rss_mb": round(idle), "peak_rss_mb":
                                        round(peak.peak_mb), "load": os.getloadavg()[0]}
                    print(name, format_, json.dumps(figures[format_]), flush=True)
                results[name] = figures
        finally:
            server.stop()
    return results


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_times() -> tuple[int, int]:
    """(busy, total) clock ticks of all the machine's cores so far (``/proc/stat``): what
    was left idle during a measurement says whether another process could have had it."""
    # user nice system idle iowait irq softirq steal (guest time is counted in user)
    ticks = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


def web_cpu_seconds(server: Server) -> dict[int, float]:
    """CPU time so far of each process of ``server`` that answers requests, by pid."""
    return {pid: cpu_seconds(pid) for pid in server.web_pids()}


PREDICT_X = "3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1"
"""The first example of a9a (14 features): GET predict's query."""


def _sequential(server: Server, model: str, requests: int, prefix: str = "models") -> dict:
    """``requests`` GET predicts one after another on one keep-alive connection
    (``http.client``: a lighter client than httpx, so its own time counts less);
    ``prefix/model``: ``models/{id}``, or ``registry/{name}@{alias}`` or
    ``registry/{name}/{version}``."""
    import http.client
    from urllib.parse import quote

    path = f"/api/v1/{prefix}/{model}/predict?x={quote(PREDICT_X)}"
    connection = http.client.HTTPConnection("127.0.0.1", server.port)
    times = []
    cpu = web_cpu_seconds(server)
    for _ in range(requests):
        start = time.perf_counter()
        connection.request("GET", path, headers=server.headers)
        response = connection.getresponse()
        response.read()
        times.append(time.perf_counter() - start)
        if response.status != 200:
            raise SystemExit(f"GET predict: {response.status}")
    cpu = sum(web_cpu_seconds(server).values()) - sum(cpu.values())
    connection.close()
    return {"p50_ms": 1e3 * _percentile(times, 0.5), "p99_ms": 1e3 * _percentile(times, 0.99),
            "server_cpu_ms_per_request": 1e3 * cpu / requests}


def _wrk(server: Server, model: str, seconds: float, connections: int,
         x: str = PREDICT_X, prefix: str = "models") -> dict:
    """Throughput of GET predict of the example ``x`` under ``wrk`` (one thread,
    ``connections`` keep-alive connections; wrk is C and event-driven, so it takes little of
    the cores itself); ``prefix`` as in :func:`_sequential`."""
    import re
    import shutil
    from urllib.parse import quote

    if shutil.which("wrk") is None:
        return {"error": "wrk not installed (apt-get install wrk)"}
    cpu = web_cpu_seconds(server)
    machine, load = machine_cpu_times(), resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency",
         "-H", f"X-API-Key: {server.headers['X-API-Key']}",
         f"{server.url}/api/v1/{prefix}/{model}/predict?x={quote(x)}"],
        capture_output=True, text=True, check=True).stdout
    after = web_cpu_seconds(server)
    generator = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy, total = (b - a for a, b in zip(machine, machine_cpu_times(), strict=True))
    by_process = {pid: after[pid] - cpu.get(pid, 0.0) for pid in after}
    cpu = sum(by_process.values())

    def ms(text: str) -> float:
        match = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
        if match is None:
            raise SystemExit(f"cannot read the latency {text!r} in wrk's output:\n{out}")
        value, unit = match.groups()
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4, "h": 3.6e6}[unit]

    requests = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {"per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            # the latency distribution's lines ("     99%   58.74ms"), not a "+/- Stdev"
            # column's percentage that happens to end in 50% or 99% ("54.99%")
            "p50_ms": ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)),
            "p99_ms": ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)),
            "non_2xx": int(bad.group(1)) if bad else 0,
            "socket_errors": errors.group(1) if errors else "none",
            "server_cpu_ms_per_request": 1e3 * cpu / max(requests, 1),
            "server_cpu_s_by_process": [round(seconds, 2) for seconds in by_process.values()],
            "wrk_cpu_s": round(generator.ru_utime + generator.ru_stime - load.ru_utime
                               - load.ru_stime, 2),
            "machine_idle_fraction": round(1 - busy / total, 3) if total else None}


CREATED_KEY = "created key"
"""``predict --created-key``: the variant that authenticates with a key of the table."""


def predict_ab(directory: Path, variants: dict, rounds: int, requests: int,
               seconds: float, connections: int, database_url: str | None) -> dict:
    """GET predict of a linear model (mfn on a9a), single client and under wrk, on one server
    per variant (each variant a source tree put first on ``PYTHONPATH``, None: as installed,
    or (source tree, ``SVMSVC_X=value``) for a setting),
    the variants interleaved round by round, the order alternating.  A variant whose setting
    is :data:`CREATED_KEY` sends a key created through ``POST /api-keys`` instead of
    the configured admin key (the key looked up in the ``api_keys`` snapshot,
    ``app.core.keyring``)."""
    servers = {}
    try:
        for number, (name, source) in enumerate(variants.items()):
            source, setting = source if isinstance(source, tuple) else (source, None)
            env = {"PYTHONPATH": source} if source else {}
            if setting and setting != CREATED_KEY:
                key, _, value = setting.partition("=")
                env[key] = value
            (directory / str(number)).mkdir()
            servers[name] = Server(directory / str(number), workers=1,
                                   database_url=database_url, extra_env=env)
        models = {}
        for name, server in servers.items():
            server.wait_ready()
            with server.client() as client:
                models[name] = trained_model(client, "a9a", timeout=600)[1]["model_id"]
                if isinstance(variants[name], tuple) and variants[name][1] == CREATED_KEY:
                    # admin: it sees the model, which the configured key (an owner of
                    # its own) created; the lookup is the same whatever the scope
                    created = client.post("/api/v1/api-keys", json={
                        "name": "bench", "scope": "admin"})
                    created.raise_for_status()
                    server.headers = {"X-API-Key": created.json()["secret"]}
            _sequential(server, models[name], 300)  # warm-up: kernels, cache, connections
        results: dict = {name: [] for name in servers}
        names = list(servers)
        for round_ in range(rounds):
            for name in (names if round_ % 2 == 0 else names[::-1]):
                server = servers[name]
                figures = {"utc": time.strftime("%H:%M:%S", time.gmtime()),
                           "load": os.getloadavg()[0],
                           "sequential": _sequential(server, models[name], requests),
                           "wrk": _wrk(server, models[name], seconds, connections)}
                results[name].append(figures)
                print(name, json.dumps(figures), flush=True)
        summary = {}
        for name, runs in results.items():
            summary[name] = {
                "sequential_p50_ms": statistics.median(r["sequential"]["p50_ms"] for r in runs),
                "sequential_p99_ms": statistics.median(r["sequential"]["p99_ms"] for r in runs),
                "sequential_cpu_ms": statistics.median(
                    r["sequential"]["server_cpu_ms_per_request"] for r in runs),
                "wrk_per_s": statistics.median(r["wrk"].get("per_s", 0) for r in runs),
                "wrk_p50_ms": statistics.median(r["wrk"].get("p50_ms", 0) for r in runs),
                "wrk_cpu_ms": statistics.median(
                    r["wrk"].get("server_cpu_ms_per_request", 0) for r in runs)}
        return summary
    finally:
        for server in servers.values():
            server.stop()


def registry_predict(directory: Path, rounds: int, requests: int, seconds: float,
                     connections: int, database_url: str | None) -> dict:
    """GET predict of one linear model (mfn on a9a) by id, by ``name@alias`` and by
    ``name/version`` on one server, single client and under wrk, the three interleaved round
    by round (the order rotating): what resolving the name (one primary-key read per
    request, on the event loop) costs next to the fast path by id."""
    server = Server(directory, workers=1, database_url=database_url)
    try:
        server.wait_ready()
        with server.client() as client:
            dataset = upload(client, dataset_path("a9a"))
            job = client.post("/api/v1/jobs", json={
                "dataset_id": dataset, "params": {"solver": "mfn", "C": 1.0},
                "model_name": "bench"}).json()
            job, _ = wait_job(client, job["id"], lambda j: j["status"] == "succeeded",
                              timeout=600)
            client.put("/api/v1/registry/bench/aliases/production",
                       json={"version": job["model_version"]}).raise_for_status()
        targets = {"id": ("models", job["model_id"]),
                   "alias": ("registry", "bench@production"),
                   "version": ("registry", f"bench/{job['model_version']}")}
        for prefix, model in targets.values():  # warm-up: kernels, cache, connections
            _sequential(server, model, 300, prefix)
        results: dict = {name: [] for name in targets}
        names = list(targets)
        for round_ in range(rounds):
            for name in names[round_ % 3:] + names[:round_ % 3]:
                prefix, model = targets[name]
                figures = {"utc": time.strftime("%H:%M:%S", time.gmtime()),
                           "load": os.getloadavg()[0],
                           "sequential": _sequential(server, model, requests, prefix),
                           "wrk": _wrk(server, model, seconds, connections, prefix=prefix)}
                results[name].append(figures)
                print(name, json.dumps(figures), flush=True)
        summary = {name: {
            "sequential_p50_ms": statistics.median(r["sequential"]["p50_ms"] for r in runs),
            "sequential_cpu_ms": statistics.median(
                r["sequential"]["server_cpu_ms_per_request"] for r in runs),
            "wrk_per_s": statistics.median(r["wrk"].get("per_s", 0) for r in runs),
            "wrk_p50_ms": statistics.median(r["wrk"].get("p50_ms", 0) for r in runs),
            "wrk_cpu_ms": statistics.median(
                r["wrk"].get("server_cpu_ms_per_request", 0) for r in runs)}
            for name, runs in results.items()}
        by_id = summary["id"]["wrk_per_s"]
        for name in ("alias", "version"):
            summary[name]["wrk_per_s_ratio_to_id"] = (
                round(summary[name]["wrk_per_s"] / by_id, 3) if by_id else None)
            summary[name]["wrk_cpu_ms_minus_id"] = round(
                summary[name]["wrk_cpu_ms"] - summary["id"]["wrk_cpu_ms"], 3)
        summary["alias_change_ms"] = alias_change_cost(server, job["model_version"])
        summary["name_read_us"] = name_read_cost(
            database_url or f"sqlite:///{directory.resolve() / 'svmsvc.db'}",
            job["model_version"])
        summary["fast_path_cpu_us"] = fast_path_cpu(directory, database_url, targets)
        return summary
    finally:
        server.stop()


def fast_path_cpu(directory: Path, database_url: str | None, targets: dict,
                  rounds: int = 8, requests: int = 3000) -> dict:
    """CPU microseconds per GET predict answered by the fast path in this process, by id,
    by ``name@alias`` and by ``name/version`` (the ASGI app called directly: no socket, no
    HTTP parsing, no client): what resolving a name adds to a prediction, which ``wrk``'s
    throughput on a shared 2-core machine shows only within its noise.  An app of this
    process on the server's database and data directory (one worker process, idle) answers;
    rounds interleaved, the order rotating; median of ``rounds``."""
    from urllib.parse import quote

    from fastapi.testclient import TestClient

    from app.core.config import Settings
    from app.main import create_app

    settings = Settings(data_dir=directory, database_url=database_url or
                        f"sqlite:///{directory.resolve() / 'svmsvc.db'}",
                        api_keys=f"admin:{ADMIN_KEY}", workers=1, threads_per_worker=1)
    app = create_app(settings)
    paths = {name: f"/api/v1/{prefix}/{model}/predict" for name, (prefix, model)
             in targets.items()}
    query = f"x={quote(PREDICT_X)}".encode()

    async def answer(path: str, times: int) -> float:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "GET", "scheme": "http", "path": path,
                 "raw_path": path.encode(), "query_string": query, "root_path": "",
                 "headers": [(b"host", b"bench"), (b"x-api-key", ADMIN_KEY.encode())],
                 "client": ("127.0.0.1", 1), "server": ("bench", 80)}
        statuses = set()

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            if message["type"] == "http.response.start":
                statuses.add(message["status"])

        start = time.process_time()
        for _ in range(times):
            await app(scope, receive, send)
        seconds = time.process_time() - start
        if statuses != {200}:
            raise SystemExit(f"GET {path}: {statuses}")
        return 1e6 * seconds / times

    runs: dict[str, list[float]] = {name: [] for name in paths}
    with TestClient(app) as client:
        for path in paths.values():  # the model into this process's cache, names read once
            client.get(path, params={"x": PREDICT_X},
                       headers={"X-API-Key": ADMIN_KEY}).raise_for_status()
            client.portal.call(answer, path, 300)
        names = list(paths)
        for round_ in range(rounds):
            for name in names[round_ % 3:] + names[:round_ % 3]:
                runs[name].append(client.portal.call(answer, paths[name], requests))
    figures = {name: round(statistics.median(values), 1) for name, values in runs.items()}
    figures.update({f"{name}_minus_id": round(figures[name] - figures["id"], 1)
                    for name in ("alias", "version")})
    return figures


def alias_change_cost(server: Server, version: int, changes: int = 20) -> dict:
    """Milliseconds (median, max) of ``changes`` PUTs that make the alias ``moving`` and as
    many DELETEs of it, one client: what a change costs its writer, which on PostgreSQL
    waits until every web process's listener has emptied its cache
    (``app.crud.registry.commit_announced``)."""
    path = "/api/v1/registry/bench/aliases/moving"
    times: dict[str, list[float]] = {"put": [], "delete": []}
    with server.client() as client:
        for _ in range(changes):
            for kind, call in (("put", lambda: client.put(path, json={"version": version})),
                               ("delete", lambda: client.delete(path))):
                start = time.perf_counter()
                call().raise_for_status()
                times[kind].append(1e3 * (time.perf_counter() - start))
    return {f"{kind}_{figure}": round(function(values), 2) for kind, values in times.items()
            for figure, function in (("p50", statistics.median), ("max", max))}


def name_read_cost(url: str, version: int, repeats: int = 7, reads: int = 2000) -> dict:
    """Microseconds per answer of ``bench@production`` (and of ``bench/version``) from this
    process, on the service's database: the fast path's ``DirectLookup`` from its cache
    (``kept_alias``: on SQLite with its ``PRAGMA data_version`` look), the same with the
    cache emptied before each ask (``direct_alias``, ``direct_version``: the database read)
    and, for comparison, ``resolve`` through SQLAlchemy's ``Connection``; the fastest of
    ``repeats`` rounds of ``reads`` (a loaded machine only ever adds)."""
    from app.crud.registry import DirectLookup, resolve
    from app.db.session import create_db_engine

    engine = create_db_engine(url, pool_size=1)
    lookup = DirectLookup(engine)
    owner = ""  # the bench's admin key is an owner of its own: read the row's owner
    with engine.connect() as connection:
        owner = connection.exec_driver_sql("SELECT owner FROM model_aliases").scalar()
    deadline = time.monotonic() + 60
    while lookup.listener is not None and not lookup.listener.live:  # PostgreSQL
        if time.monotonic() > deadline:
            raise SystemExit("the registry listener did not start listening within 60 s")
        time.sleep(0.05)

    def read(**reference):
        lookup.invalidate()  # PostgreSQL's cache
        lookup.local.data_version = None  # SQLite's: as if another connection committed
        return lookup.model_id(owner, "bench", **reference)

    reads_by_kind = {
        "kept_alias": lambda: lookup.model_id(owner, "bench", "production"),
        "direct_alias": lambda: read(alias="production"),
        "direct_version": lambda: read(version=version),
        "sqlalchemy_alias": lambda: resolve(engine, owner, "bench", "production")}
    figures = {}
    try:
        for kind, call in reads_by_kind.items():
            assert call() is not None, kind
            best = min(_timed(call, reads) for _ in range(repeats))
            figures[kind] = round(1e6 * best / reads, 1)
    finally:
        lookup.stop()
        engine.dispose()
    return figures


def _timed(call, times: int) -> float:
    start = time.perf_counter()
    for _ in range(times):
        call()
    return time.perf_counter() - start


def startup(directory: Path, warm_runs: int, workers: int = 2,
            first_job: dict | None = None) -> dict:
    """Seconds from ``svmsvc serve`` to the log's "svmsvc ready", to ``/readyz`` ready, to the
    first model (``first_job``'s parameters on a9a, uploaded once ready: issue 48's goal, the
    first trained a9a model in <= 60 s cold and <= 5 s warm) and to every worker idle with
    every solver's kernels compiled: once on a cold cache (``NUMBA_CACHE_DIR``, a fresh
    directory: the first start on a machine), then ``warm_runs`` times on the cache it
    filled."""
    from solvers.warmup import solver_steps

    solvers = list(solver_steps())
    params = first_job or {"solver": "auto"}
    a9a = dataset_path("a9a")
    cache = directory / "numba-cache"
    cache.mkdir()
    runs = []
    for run in range(1 + warm_runs):
        data = directory / f"run-{run}"
        data.mkdir()
        started = time.monotonic()
        server = Server(data, workers=workers, extra_env={"NUMBA_CACHE_DIR": str(cache)})
        try:
            server.wait_ready(timeout=3600.0)
            ready = time.monotonic() - started
            logged = "svmsvc ready" in server.log_path.read_text(errors="replace")
            with server.client() as client:
                dataset = upload(client, a9a)
                job = client.post("/api/v1/jobs", json={"dataset_id": dataset,
                                                        "params": params}).json()
                job, seen = wait_job(client, job["id"],
                                     lambda j: j["status"] in ("succeeded", "failed"),
                                     timeout=3600.0, interval=0.1)
            first_model = seen - started
            # then until every worker has logged every solver's kernels ready (compiled by
            # the one worker that compiles while idle, or loaded from the cache it filled)
            while _solvers_left(server.log_path, solvers, workers):
                time.sleep(0.2)
            everything = time.monotonic() - started
        finally:
            server.stop()
        runs.append({"cache": "cold" if run == 0 else "warm", "ready_s": round(ready, 2),
                     "log_said_ready_by_then": logged,
                     "first_a9a_model_s": round(first_model, 2), "job_status": job["status"],
                     "job_solver": (job.get("result") or {}).get("solver", job["solver"]),
                     "all_kernels_s": round(everything, 2),
                     "load_average": round(os.getloadavg()[0], 2)})
        print(json.dumps(runs[-1]), flush=True)
    return {"workers": workers, "first_job": params, "runs": runs}


def _solvers_left(log_path: Path, solvers: list[str], workers: int) -> bool:
    """Whether some worker has not yet logged one of ``solvers``' kernels as ready."""
    text = log_path.read_text(errors="replace")
    return any(text.count(f"solver {name}'s kernels ready") < workers for name in solvers)


def run_command(args) -> None:
    if args.command == "predict":
        here = str(Path(__file__).resolve().parents[1])
        variants = {"this": here}
        if args.baseline:
            variants = {"baseline": str(Path(args.baseline).resolve()), "this": here}
        for setting in args.also + [f"SVMSVC_WEB_PROCESSES={n}" for n in args.web_processes]:
            variants[f"this {setting}"] = (here, setting)
        if args.created_key:
            variants[f"this {CREATED_KEY}"] = (here, CREATED_KEY)
        with tempfile.TemporaryDirectory(prefix="svmsvc-bench-") as directory:
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                  f"{os.getloadavg()[0]:.2f}")
            summary = predict_ab(Path(directory), variants, args.rounds, args.requests,
                                 args.seconds, args.connections, args.database_url)
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                  f"{os.getloadavg()[0]:.2f}")
            print(json.dumps(summary, indent=1))
        return
    if args.command == "registry":
        with tempfile.TemporaryDirectory(prefix="svmsvc-bench-") as directory:
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                  f"{os.getloadavg()[0]:.2f}, database "
                  f"{'PostgreSQL' if args.database_url else 'SQLite'}")
            summary = registry_predict(Path(directory), args.rounds, args.requests,
                                       args.seconds, args.connections, args.database_url)
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                  f"{os.getloadavg()[0]:.2f}")
            print(json.dumps(summary, indent=1))
        return
    if args.command == "download":
        variants = {"this": str(Path(__file__).resolve().parents[1])}
        if args.baseline:
            variants["baseline"] = str(Path(args.baseline).resolve())
        with tempfile.TemporaryDirectory(prefix="svmsvc-bench-") as directory:
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                  f"{os.getloadavg()[0]:.2f}, database "
                  f"{'PostgreSQL' if args.database_url else 'SQLite'}")
            print(json.dumps(download(Path(directory), variants, args.features,
                                      args.formats.split(","), args.database_url), indent=1))
        return
    if args.command == "uploads":
        variants = {"this": str(Path(__file__).resolve().parents[1])}
        if args.baseline:
            variants = {"baseline": str(Path(args.baseline).resolve()), **variants}
        with tempfile.TemporaryDirectory(prefix="svmsvc-bench-") as directory:
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                  f"{os.getloadavg()[0]:.2f}")
            probers = tuple(args.probers.split(","))
            if not set(probers) <= set(PROBERS):
                raise SystemExit(f"--probers: each of {', '.join(PROBERS)}")
            summary = uploads_ab(Path(directory), variants, args.rounds, args.uploads,
                                 args.uploaders, args.database_url, probers,
                                 floor=not args.no_floor)
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                  f"{os.getloadavg()[0]:.2f}")
            print(json.dumps(summary, indent=1))
        return
    if args.command == "startup":
        with tempfile.TemporaryDirectory(prefix="svmsvc-bench-") as directory:
            print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                  f"{os.getloadavg()[0]:.2f}")
            print(json.dumps(startup(Path(directory), args.warm_runs), indent=1))
        return
    with tempfile.TemporaryDirectory(prefix="svmsvc-bench-") as directory:
        server = Server(Path(directory), workers=2 if args.command == "load" else 1,
                        database_url=args.database_url, max_queued_jobs_per_key=10**6)
        try:
            server.wait_ready()
            if args.command == "cancel":
                latencies = cancel_latency(server, args.trials)
                print(f"cancel latency over {len(latencies)} trials "
                      f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                      f"load average {os.getloadavg()[0]:.2f}): "
                      f"median {statistics.median(latencies):.3f} s, "
                      f"min {min(latencies):.3f} s, max {max(latencies):.3f} s")
            elif args.command == "memory":
                print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                      f"{os.getloadavg()[0]:.2f}")
                print(json.dumps(memory(server, args.rounds), indent=1))
            else:
                print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
                      f"{os.getloadavg()[0]:.2f}, database "
                      f"{'PostgreSQL' if args.database_url else 'SQLite'}")
                print(json.dumps(load(server, args.clients, args.seconds,
                                      args.wrk_connections), indent=1))
                print(json.dumps(healthz_during_evaluation(server), indent=1))
                print(json.dumps(healthz_during_uploads(server), indent=1))
        finally:
            server.stop()


COMMAND = Command(
    "service", "the service: cancel latency, mixed load, uploads, memory, predict, startup, "
               "download",
    run_command, description=__doc__, subcommands=(
        Command("cancel", "latency of cancelling a running job", options=(
            option("--trials", type=int, default=10), database_url())),
        Command("load", "mixed load from concurrent clients", options=(
            option("--clients", type=int, default=20),
            option("--seconds", type=float, default=60.0),
            option("--wrk-connections", type=int, default=0,
                   help="GET predict from this many wrk connections instead of the client "
                        "threads (which then run the rest of the mix)"),
            database_url())),
        Command("uploads", "/healthz and GET predict latency while ~1.4 MB files are uploaded",
                options=(
                    option("--rounds", type=int, default=3),
                    option("--uploads", type=int, default=10, help="files per round"),
                    option("--uploaders", type=int, default=4,
                           help="clients uploading at once"),
                    option("--probers", default="process",
                           help="where the probes come from, comma-separated: process (a "
                                "prober process of its own), thread (threads of the bench's "
                                "process, beside the upload clients: the method before "
                                "2026-12-07 17:40 UTC)"),
                    option("--no-floor", action="store_true",
                           help="no idle server probed beside (the floor)"),
                    option("--baseline", default=None,
                           help="a source tree (e.g. a worktree of main) to compare against, "
                                "run as a second server, interleaved"),
                    database_url())),
        Command("memory", "idle memory after large requests", options=(
            option("--rounds", type=int, default=6), database_url())),
        Command("predict", "GET predict: single client and wrk, A/B", options=(
            option("--rounds", type=int, default=5),
            option("--requests", type=int, default=2000, help="sequential requests per round"),
            option("--seconds", type=float, default=10.0, help="wrk duration per round"),
            option("--connections", type=int, default=8, help="wrk connections"),
            option("--web-processes", type=int, action="append", default=[], metavar="N",
                   help="also measure this tree served by N web processes (svmsvc serve "
                        "--web-processes N)"),
            option("--also", action="append", default=[], metavar="SVMSVC_X=VALUE",
                   help="also measure this tree with this setting (a third server)"),
            option("--created-key", action="store_true",
                   help="also measure this tree with a key created through POST "
                        "/api-keys (a third server)"),
            option("--baseline", default=None,
                   help="a source tree (e.g. a worktree of main) to compare against, run as "
                        "a second server, interleaved"),
            database_url())),
        Command("registry", "GET predict by id, by name@alias and by name/version",
                options=(
                    option("--rounds", type=int, default=5),
                    option("--requests", type=int, default=2000,
                           help="sequential requests per round and target"),
                    option("--seconds", type=float, default=10.0,
                           help="wrk duration per round and target"),
                    option("--connections", type=int, default=8, help="wrk connections"),
                    database_url())),
        Command("startup", "svmsvc serve to /readyz, cold and warm", options=(
            option("--warm-runs", type=int, default=3),)),
        Command("download", "time and peak RSS of downloading a wide model", options=(
            option("--features", type=int, default=2**24,
                   help="the feature index of the one-line upload (the model's width)"),
            option("--formats", default="npz,liblinear,onnx",
                   help="comma-separated download formats"),
            option("--baseline", default=None,
                   help="a source tree (e.g. a worktree of main) measured after this one"),
            database_url()))))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["service", *sys.argv[1:]]))
