"""The liveness probe answered ahead of the application, and uploads parsed by a bounded
number of threads (issue 49: ``/healthz`` under concurrent uploads)."""

from __future__ import annotations

import threading

import anyio
from starlette.testclient import TestClient

from app.api.middleware import LivenessProbe
from app.uploads import _feed_in_batches


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
    assert api.app.state.upload_parsing.total_tokens == settings.upload_parse_threads


def test_upload_parsing_threads_take_turns():
    """Two uploads, one place: the second one's piece waits while the first is parsed."""
    limiter = anyio.CapacityLimiter(1)
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
            tasks.start_soon(_feed_in_batches, body(b"1 1:1\n"), feed, limiter)
            tasks.start_soon(_feed_in_batches, body(b"-1 2:1\n"), feed, limiter)
            with anyio.fail_after(120):
                while limiter.statistics().tasks_waiting < 1 or most[0] < 1:
                    await anyio.sleep(0.01)  # the first piece in its thread, the second queued
            assert limiter.borrowed_tokens == 1 and most[0] == 1
            release.set()

    anyio.run(main)
    assert sorted(fed) == [b"-1 2:1\n", b"1 1:1\n"] and most[0] == 1
