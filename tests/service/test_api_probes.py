"""The liveness probe answered ahead of the application, and uploads parsed and stored by a
bounded number of threads of their own, at a lower CPU priority than the event loop (issue 49:
``/healthz`` under concurrent uploads)."""

from __future__ import annotations

import os
import threading

import anyio
import pytest
from anyio import to_thread
from starlette.testclient import TestClient

import app.api.routes.datasets as dataset_routes
from app.api.middleware import LivenessProbe
from app.uploads import UploadThreads, _feed_in_batches


async def _failing_app(scope, receive, send):
    raise AssertionError(f"the application was called for {scope['method']} {scope['path']}")


def test_liveness_is_answered_before_the_application():
    client = TestClient(LivenessProbe(_failing_app), raise_server_exceptions=False)
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"status": "ok"}
    # anything else goes on to the application (which fails here, so it was called)
    assert client.post("/healthz").status_code == 500
    assert client.get("/healthz/x").status_code == 500


def test_the_service_answers_its_probe_as_the_route_did(api):
    response = api.get("/healthz", headers={"X-API-Key": "not a key"})
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert api.post("/healthz").status_code == 405  # the router's answer, as before
    assert "/healthz" in api.get("/openapi.json").json()["paths"]
    settings = api.app.state.settings
    threads = api.app.state.upload_threads
    assert (threads.threads, threads.nice) == (settings.upload_parse_threads,
                                               settings.upload_nice)


def test_an_upload_is_parsed_and_stored_by_the_upload_threads(api, monkeypatch):
    seen = []
    store = dataset_routes.crud_datasets.store

    def recorded(*args):
        seen.append(threading.current_thread().name)
        return store(*args)

    monkeypatch.setattr(dataset_routes.crud_datasets, "store", recorded)
    response = api.post("/api/v1/datasets", files={"file": ("t.svm", b"1 1:1\n-1 2:1\n")})
    assert response.status_code in (200, 201), response.text
    assert len(seen) == 1 and seen[0].startswith("svmsvc-upload"), seen


def _niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="no per-thread niceness here")
def test_upload_threads_run_below_the_rest_of_the_process():
    """Their niceness is the process's plus ``nice`` (at most 19); the shared thread pool's
    threads, and the event loop's, keep the process's."""
    process = os.getpriority(os.PRIO_PROCESS, 0)

    async def main() -> tuple[int, int, int]:
        upload = await UploadThreads(1, nice=5).run(_niceness)
        shared = await to_thread.run_sync(_niceness)
        return upload, shared, _niceness()

    upload, shared, loop = anyio.run(main)
    assert upload == min(process + 5, 19)
    assert shared == loop == process
    assert anyio.run(UploadThreads(1, nice=0).run, _niceness) == process


def test_upload_parsing_threads_take_turns():
    """Two uploads, one place: the second one's piece waits while the first is parsed."""
    threads = UploadThreads(1)
    limiter = threads._limiter
    release = threading.Event()
    lock = threading.Lock()
    active, most, fed = [0], [0], []

    def feed(data: bytes) -> None:
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        try:
            assert release.wait(120), "the test never released the parser"
            fed.append(data)
        finally:
            with lock:
                active[0] -= 1

    async def body(content: bytes):
        yield content

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_feed_in_batches, body(b"1 1:1\n"), feed, threads)
            tasks.start_soon(_feed_in_batches, body(b"-1 2:1\n"), feed, threads)
            with anyio.fail_after(120):
                while limiter.statistics().tasks_waiting < 1 or most[0] < 1:
                    await anyio.sleep(0.01)  # the first piece in its thread, the second queued
            assert limiter.borrowed_tokens == 1 and most[0] == 1
            release.set()

    anyio.run(main)
    assert sorted(fed) == [b"-1 2:1\n", b"1 1:1\n"] and most[0] == 1
