"""``svmsvc serve --web-processes 2``: two web processes on one socket sharing one dispatcher
(``app.web_processes``).  Both answer requests (predictions among them); a job created through
either starts; when the dispatcher's process is killed, the other takes the dispatcher over,
the job that was running is taken back and finishes, and new jobs run."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from conftest import RESTART_LEASE_S
from servicetools import (
    MEDIUM_PARAMS,
    PATIENCE_S,
    QUICK_PARAMS,
    START_PATIENCE_S,
    ServerProcess,
    create_job,
    data_path,
    uploaded_id,
    wait_for,
    wait_job,
    wait_process_gone,
)

from app.web_processes import (
    LOCK_FILE,
    POOL_FILE,
    STALE_S,
    DispatcherLock,
    SharedDispatcher,
    WakeSocket,
    send_wake,
    wake_address,
)

pytestmark = pytest.mark.slow

PREDICTIONS = 400


def web_processes(server: ServerProcess) -> list[int]:
    """The pids of the web processes uvicorn's supervisor (the server process) spawned."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().split(")")[-1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if ppid == server.process.pid and b"spawn_main" in command:
            pids.append(int(entry.name))
    return sorted(pids)


def dispatcher_pid(server: ServerProcess) -> int | None:
    """The web process that says (in its publication) that it runs the dispatcher."""
    try:
        published = json.loads((server.data_dir / POOL_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return published["pid"] if published["dispatching"] else None


def served_by(server: ServerProcess, request: str) -> dict[int, int]:
    """Access-log lines of ``request`` (method and path) per process id (each line names
    its process)."""
    counts: dict[int, int] = {}
    for pid in re.findall(r"\[(\d+)\] [^ ]+ - \"" + re.escape(request) + r"[ ?]",
                          server.log()):
        counts[int(pid)] = counts.get(int(pid), 0) + 1
    return counts


def predict_on_new_connections(server: ServerProcess, model_id: str) -> list[dict]:
    """``PREDICTIONS`` GET predictions, each on a connection of its own (a kept-alive
    connection stays with the process that accepted it), four at a time."""

    def one(_) -> dict:
        response = httpx.get(f"{server.url}/api/v1/models/{model_id}/predict",
                             params={"x": "1:0.7 3:1 5:-0.2"}, timeout=PATIENCE_S)
        assert response.status_code == 200, response.text
        return response.json()

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, range(PREDICTIONS)))


@pytest.fixture
def server(backend, tmp_path):
    directory = tmp_path / "data"
    server = ServerProcess(directory, backend.database_url(directory), workers=1,
                           web_processes=2, lease_s=RESTART_LEASE_S)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def test_two_web_processes_share_one_dispatcher(server):
    client = server.client
    processes = wait_for(lambda: len(web_processes(server)) == 2 and web_processes(server),
                         PATIENCE_S, what="two web processes")
    leader = wait_for(lambda: dispatcher_pid(server), PATIENCE_S, what="a dispatcher")
    assert leader in processes
    assert (server.data_dir / LOCK_FILE).read_text().strip() == str(leader)

    heart = uploaded_id(client, data_path("heart_scale"))
    done = wait_job(client, create_job(client, heart, QUICK_PARAMS)["id"])
    assert done["status"] == "succeeded", done
    model_id = done["model_id"]

    answers = predict_on_new_connections(server, model_id)
    assert len({json.dumps(answer, sort_keys=True) for answer in answers}) == 1
    counts = served_by(server, f"GET /api/v1/models/{model_id}/predict")
    assert sum(counts.values()) == PREDICTIONS
    assert set(counts) == set(processes), counts  # both processes answered

    # /metrics, whichever process answers, adds up what both counted
    route = 'route="/api/v1/models/{model_id}/predict",status="200"'
    for _ in range(6):
        metrics = httpx.get(f"{server.url}/metrics", timeout=PATIENCE_S).text
        served = [line for line in metrics.splitlines()
                  if line.startswith("svmsvc_http_requests_total{") and route in line]
        assert served and float(served[0].rsplit(" ", 1)[1]) >= PREDICTIONS, served
        workers = [float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                   if line.startswith("svmsvc_workers{")]
        assert sum(workers) == 1  # the published pool's one worker

    # a job created through the process that does not dispatch starts as promptly (it
    # wakes the dispatcher): create jobs on fresh connections until each process made one
    def creators() -> set[int]:
        return set(served_by(server, "POST /api/v1/jobs"))

    for _ in range(60):
        if creators() == set(processes):
            break
        with httpx.Client(base_url=server.url, timeout=PATIENCE_S) as fresh:
            made = wait_job(fresh, create_job(fresh, heart, QUICK_PARAMS)["id"])
            assert made["status"] == "succeeded", made
    assert creators() == set(processes)

    # the dispatcher's process dies mid-job: the other process takes the dispatcher over,
    # takes the job back once its lease expires, and it finishes on its second attempt
    a9a = uploaded_id(client, data_path("a9a"))
    interrupted = create_job(client, a9a, MEDIUM_PARAMS)["id"]
    wait_job(client, interrupted, until=lambda j: j["status"] == "running"
             and j["progress"] is not None)

    def worker_of_interrupted() -> int | None:
        # /readyz of the process that does not dispatch shows the pool as last published
        workers = client.get("/readyz").json()["workers"]
        return next((w["pid"] for w in workers if w["job_id"] == interrupted), None)

    orphan = wait_for(worker_of_interrupted, PATIENCE_S, what="the job's worker")
    os.kill(leader, signal.SIGKILL)
    wait_process_gone(orphan)  # its worker notices its parent is gone and stops
    survivor = next(pid for pid in processes if pid != leader)
    wait_for(lambda: dispatcher_pid(server) == survivor, PATIENCE_S,
             what="the surviving process to take the dispatcher over")
    # the line is logged once the takeover's call returns to the event loop, which may be
    # after the lock (what dispatcher_pid reads) changed hands: wait for it too
    wait_for(lambda: f"web process {survivor} took over the dispatcher" in server.log(),
             PATIENCE_S, what="the takeover's log line")
    wait_for(lambda: len(web_processes(server)) == 2, PATIENCE_S,
             what="uvicorn to replace the killed process")
    server.wait_ready(START_PATIENCE_S)
    done = wait_job(client, interrupted, timeout=START_PATIENCE_S)
    assert done["status"] == "succeeded" and done["attempts"] == 2, done
    after = wait_job(client, create_job(client, heart, QUICK_PARAMS)["id"])
    assert after["status"] == "succeeded", after


@pytest.mark.embedded_database_only
def test_a_second_service_on_the_same_data_directory_is_refused(server):
    """The data directory's lock refuses the second service before it opens a database (its
    own SQLite file, whatever the first one's backend): SQLite only, nothing of it is the
    database's."""
    other = ServerProcess(server.data_dir, f"sqlite:///{server.data_dir / 'other.db'}",
                          workers=1, web_processes=2)
    try:
        assert other.process.wait(PATIENCE_S) == 2
        assert "another svmsvc serve runs on the data directory" in other.log()
    finally:
        other.stop()


def test_the_dispatcher_lock_has_one_holder_at_a_time(tmp_path):
    first, second = (DispatcherLock(tmp_path / LOCK_FILE) for _ in range(2))
    assert first.try_acquire() and first.held
    assert not second.try_acquire()  # flock is per open file: refused in one process too
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
    first.release()
    assert second.try_acquire()
    second.release()


def test_a_wake_reaches_the_dispatchers_socket_and_is_dropped_when_nobody_listens(tmp_path):
    address = wake_address(tmp_path)
    send_wake(address)  # nobody listens: dropped, no error
    listener = WakeSocket(address)
    try:
        for _ in range(3):
            send_wake(address)
        assert select.select([listener], [], [], PATIENCE_S)[0] == [listener]
        listener.drain()
        assert select.select([listener], [], [], 0)[0] == []  # one drain reads them all
    finally:
        listener.close()
    assert wake_address(tmp_path / "other") != address  # another data directory


def test_the_published_pool_is_read_while_fresh_and_its_process_lives(tmp_path):
    reader = SharedDispatcher(tmp_path)
    assert reader.role == "serving" and not reader.dispatching and reader.snapshot() == []
    worker = {"index": 0, "pid": 1234, "alive": True, "ready": True,
              "job_id": "6f1c2a4e-8a0b-4d4e-9a39-3c2a1d5e7f00", "state": None}

    def publish(**fields) -> None:
        content = {"pid": os.getpid(), "time": time.time(), "dispatching": True,
                   "workers": [worker]} | fields
        (tmp_path / POOL_FILE).write_text(json.dumps(content))

    publish()
    assert reader.dispatching
    [info] = reader.snapshot()
    assert info.ready and str(info.job_id) == worker["job_id"] and info.pid == 1234
    publish(time=time.time() - STALE_S - 1)  # its process stopped publishing
    assert not reader.dispatching and reader.snapshot() == []
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    publish(pid=gone.pid)  # its process is gone
    assert not reader.dispatching


ADMIN_KEY = "web-processes-admin-key"


def test_a_revoked_key_is_refused_at_the_next_request_in_every_web_process(backend, tmp_path):
    """A key created through one web process works in both; revoked through one, it is
    refused at the very next request in both (``SVMSVC_API_KEY_CACHE_S=0``: each request
    reads the table; with the default 1 s the other process refuses it within that second,
    docs/service.md); the secret is never logged."""
    directory = tmp_path / "data"
    server = ServerProcess(directory, backend.database_url(directory), workers=1,
                           web_processes=2, api_keys=f"admin:tester:{ADMIN_KEY}",
                           api_key_cache_s=0)
    try:
        server.wait_ready()
        processes = wait_for(lambda: len(web_processes(server)) == 2 and web_processes(server),
                             PATIENCE_S, what="two web processes")
        created = server.client.post("/api/v1/api-keys", json={"name": "leaked", "scope": "read"},
                                     headers={"X-API-Key": ADMIN_KEY})
        assert created.status_code == 201, created.text
        secret, key_id = created.json()["secret"], created.json()["id"]

        def on_fresh_connections(path: str, status: int) -> None:
            """GET ``path`` with the key on fresh connections (a kept-alive one stays with the
            process that accepted it) until both processes answered it; each answer must be
            ``status``."""
            for _ in range(200):
                if set(served_by(server, f"GET {path}")) == set(processes):
                    return
                response = httpx.get(f"{server.url}{path}", headers={"X-API-Key": secret},
                                     timeout=PATIENCE_S)
                assert response.status_code == status, response.text
            raise AssertionError(f"one process never answered {path}: "
                                 f"{served_by(server, f'GET {path}')}")

        on_fresh_connections("/api/v1/datasets?limit=7", 200)
        revoked = server.client.delete(f"/api/v1/api-keys/{key_id}",
                                       headers={"X-API-Key": ADMIN_KEY})
        assert revoked.status_code == 204
        on_fresh_connections("/api/v1/datasets?limit=8", 401)
        assert secret not in server.log()
    finally:
        server.stop()
