"""Live log streams in a real ``svmsvc serve`` process: many streams on one job share one
poller and each gets every record in order; the caps refuse more; a shutdown with streams open
ends them cleanly."""

from __future__ import annotations

import json
import signal
import threading

import httpx
import pytest
from servicetools import (
    LONG_PARAMS,
    PATIENCE_S,
    create_job,
    data_path,
    full_log,
    sse_events,
    uploaded_id,
    wait_for,
)

pytestmark = pytest.mark.slow

KEYS = {"many": "stream-key-many", "few": "stream-key-few", "admin": "stream-key-admin"}
PER_KEY = 40
TOTAL = 45


class Follower(threading.Thread):
    """Reads one live log stream to its end, keeping its events."""

    def __init__(self, url: str, job_id: str, key: str):
        super().__init__(daemon=True)
        self.url, self.job_id, self.key = url, job_id, key
        self.events: list[dict] = []
        self.status_code: int | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.url, timeout=PATIENCE_S) as client, \
                    client.stream("GET", f"/api/v1/jobs/{self.job_id}/log/stream",
                                  headers={"X-API-Key": self.key}) as response:
                self.status_code = response.status_code
                for event in sse_events(response.iter_lines()):
                    self.events.append(event)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def iterations(self) -> list[int]:
        return [json.loads(e["data"])["iteration"] for e in self.events
                if e.get("event") == "record"]

    def kinds(self) -> list[str]:
        return [e.get("event") for e in self.events]


def follow(server, job_id: str, key: str, count: int) -> list[Follower]:
    followers = [Follower(server.url, job_id, key) for _ in range(count)]
    for follower in followers:
        follower.start()
    wait_for(lambda: all(f.events or f.error for f in followers), PATIENCE_S,
             what=f"{count} streams to start")
    assert [f.error for f in followers] == [None] * count
    assert {f.status_code for f in followers} == {200}
    return followers


def refusal(server, job_id: str, key: str) -> httpx.Response:
    return server.client.get(f"/api/v1/jobs/{job_id}/log/stream",
                             headers={"X-API-Key": key})


def test_many_streams_share_a_job_and_the_caps_refuse_more(server_factory):
    server = server_factory(
        workers=1, max_log_streams=TOTAL, max_log_streams_per_key=PER_KEY,
        # owners (tenants): the job is the owner ops's (its admin key creates it); "many" is
        # a read key of ops, "few" an admin key of its own (admins see every owner's jobs)
        api_keys=f"read:ops:{KEYS['many']},admin:{KEYS['few']},admin:ops:{KEYS['admin']}")
    server.client.headers["X-API-Key"] = KEYS["admin"]
    server.wait_ready()
    a9a = uploaded_id(server.client, data_path("a9a"))
    job_id = create_job(server.client, a9a, LONG_PARAMS)["id"]

    many = follow(server, job_id, KEYS["many"], PER_KEY)
    response = refusal(server, job_id, KEYS["many"])
    assert response.status_code == 429
    assert response.headers["retry-after"] == "10"
    assert "SVMSVC_MAX_LOG_STREAMS_PER_KEY" in response.json()["detail"]
    few = follow(server, job_id, KEYS["few"], TOTAL - PER_KEY)
    response = refusal(server, job_id, KEYS["few"])
    assert response.status_code == 503
    assert response.headers["retry-after"] == "10"
    assert "set by SVMSVC_MAX_LOG_STREAMS;" in response.json()["detail"]

    metrics = server.client.get("/metrics").text
    assert f"svmsvc_log_streams_open {float(TOTAL)}" in metrics
    assert metrics.count("svmsvc_log_streams_open_by_owner{") == 2
    assert f"}} {float(PER_KEY)}" in metrics and f"}} {float(TOTAL - PER_KEY)}" in metrics

    followers = many + few
    wait_for(lambda: all(len(f.iterations()) >= 20 for f in followers), PATIENCE_S,
             what="20 records on every stream")
    assert server.client.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 202
    for follower in followers:
        follower.join(PATIENCE_S)
        assert not follower.is_alive() and follower.error is None
    records = [r["iteration"] for r in full_log(server.client, job_id)]
    for follower in followers:
        assert follower.iterations() == records  # every record, in order, once
        kinds = follower.kinds()
        assert "status" in kinds[:-2] and kinds[-2:] == ["status", "end"]
        assert json.loads(follower.events[-1]["data"])["status"] == "cancelled"

    # The slots are given back once the streams ended: the capped key streams again.
    wait_for(lambda: refusal(server, job_id, KEYS["many"]).status_code == 200, PATIENCE_S,
             what="the stream slots to be released")


@pytest.mark.parametrize("web_processes", [1, 2])
def test_a_shutdown_with_open_streams_ends_them_without_tracebacks(server_factory,
                                                                   web_processes):
    """With two web processes (``create_web_process_app``), each ends its own streams."""
    server = server_factory(workers=1, web_processes=web_processes)
    server.wait_ready()
    a9a = uploaded_id(server.client, data_path("a9a"))
    job_id = create_job(server.client, a9a, LONG_PARAMS)["id"]
    followers = follow(server, job_id, "", 20)
    wait_for(lambda: all(f.iterations() for f in followers), PATIENCE_S,
             what="a record on every stream")
    server.stop(signal.SIGTERM)
    for follower in followers:
        follower.join(PATIENCE_S)
        assert not follower.is_alive() and follower.error is None
        assert "end" not in follower.kinds()  # ended by the service, not by the job
    log = server.log()
    assert log.count("Application shutdown complete") == web_processes
    assert "Traceback" not in log and "Cancel" not in log
