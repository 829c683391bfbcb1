"""Measurements of a running service (``svmsvc serve`` as a subprocess), not timed tests.

    python -m bench.bench_service cancel [--trials 10] [--database-url URL]

``cancel``: how long a running job takes to end after ``POST /jobs/{id}/cancel`` (until
``GET /jobs/{id}`` reports ``cancelled``), on a9a with parameters that never converge; the
promise "a cancel stops a job within about a second" is checked here, with figures, rather than
in the test suite, where a loaded machine would make it flaky.

The server runs with one worker, its data in a temporary directory, SQLite unless
``--database-url`` is given; API keys, when the service needs them, are generated here.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
LONG_PARAMS = {"solver": "mfn", "C": 100.0, "epsilon": 1e-15, "max_cgls_iterations": 300,
               "max_iter": 100000, "c_path_start": None}
ADMIN_KEY = "bench-admin-key"


class Server:
    """``svmsvc serve`` on a free port with its own data directory."""

    def __init__(self, directory: Path, *, workers: int = 1, database_url: str | None = None,
                 **settings):
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
        self.log_path = directory / "server.log"
        self._log = open(self.log_path, "wb")
        svmsvc = Path(sys.executable).parent / "svmsvc"
        self.process = subprocess.Popen(
            [str(svmsvc), "serve", "--port", str(self.port), "--data-dir", str(directory),
             "--workers", str(workers)], stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self.headers = {"X-API-Key": ADMIN_KEY}

    def client(self, **kwargs) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers, timeout=120.0, **kwargs)

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
    response = client.post("/datasets",
                           files={"file": (path.name, path.read_bytes())})
    response.raise_for_status()
    return response.json()["id"]


def wait_job(client: httpx.Client, job_id: str, until, timeout: float = 120.0,
             interval: float = 0.01) -> tuple[dict, float]:
    """The job once ``until(job)`` holds, and the monotonic time it was seen."""
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/jobs/{job_id}").json()
        if until(job):
            return job, time.monotonic()
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job_id} timed out: {job}")
        time.sleep(interval)


def cancel_latency(server: Server, trials: int) -> list[float]:
    """Seconds from the cancel request to the job seen ``cancelled``, per trial."""
    with server.client() as client:
        a9a = upload(client, DATA_DIR / "a9a")
        latencies = []
        for _ in range(trials):
            job_id = client.post("/jobs", json={"dataset_id": a9a,
                                                       "params": LONG_PARAMS}).json()["id"]
            wait_job(client, job_id, lambda j: j["status"] == "running"
                     and (j["progress"] or {}).get("iteration", 0) >= 3)
            started = time.monotonic()
            client.post(f"/jobs/{job_id}/cancel").raise_for_status()
            job, seen = wait_job(client, job_id, lambda j: j["status"] == "cancelled")
            if job["solver_status"] != "stopped":
                print(f"  trial: the worker was killed, not stopped: {job['message']}")
            latencies.append(seen - started)
    return latencies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cancel = commands.add_parser("cancel", help="latency of cancelling a running job")
    cancel.add_argument("--trials", type=int, default=10)
    for command in (cancel,):
        command.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="svmsvc-bench-") as directory:
        server = Server(Path(directory), workers=1, database_url=args.database_url)
        try:
            server.wait_ready()
            if args.command == "cancel":
                latencies = cancel_latency(server, args.trials)
                print(f"cancel latency over {len(latencies)} trials "
                      f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                      f"load average {os.getloadavg()[0]:.2f}): "
                      f"median {statistics.median(latencies):.3f} s, "
                      f"min {min(latencies):.3f} s, max {max(latencies):.3f} s")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
