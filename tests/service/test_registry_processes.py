"""The registry across processes (issue 50): ``svmsvc serve --web-processes 2 --workers 2`` on
one database (SQLite, and PostgreSQL: two API processes on one server).  Twenty jobs under one
name, created at once through both web processes and finished by two workers, take versions 1
to 20, each once; an alias moved through one process is what the very next request of either
process predicts with, though each process keeps what names resolve to (the fast path's
cache, trusted only while SQLite's ``data_version`` stays put or, on PostgreSQL, emptied by
a ``NOTIFY`` every writer waits to see acknowledged); so is an alias deleted and made again,
and a version deleted."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from conftest import RESTART_LEASE_S
from servicetools import (
    PATIENCE_S,
    QUICK_PARAMS,
    ServerProcess,
    data_path,
    uploaded_id,
    wait_for,
    wait_job,
)
from test_web_processes import served_by, web_processes

pytestmark = pytest.mark.slow

JOBS = 20
EXAMPLE = "1:0.7 3:1 5:-0.2 9:0.4"


@pytest.fixture
def server(backend, tmp_path):
    directory = tmp_path / "data"
    server = ServerProcess(directory, backend.database_url(directory), workers=2,
                           web_processes=2, lease_s=RESTART_LEASE_S)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def on_a_new_connection(server: ServerProcess, method: str, path: str, **kwargs):
    """One request on a connection of its own (a kept-alive connection stays with the process
    that accepted it), so that both web processes answer."""
    with httpx.Client(base_url=server.url, timeout=PATIENCE_S) as client:
        return client.request(method, path, **kwargs)


def test_versions_and_alias_moves_across_two_web_processes(server):
    wait_for(lambda: len(web_processes(server)) == 2, PATIENCE_S, what="two web processes")
    heart = uploaded_id(server.client, data_path("heart_scale"))
    name = f"churn-{uuid.uuid4().hex[:6]}"

    def create(index: int) -> str:
        params = {**QUICK_PARAMS, "C": 2.0 ** (index % 7 - 3)}
        response = on_a_new_connection(server, "POST", "/api/v1/jobs", json={
            "dataset_id": heart, "params": params, "model_name": name})
        assert response.status_code == 202, response.text
        return response.json()["id"]

    with ThreadPoolExecutor(JOBS) as pool:
        job_ids = list(pool.map(create, range(JOBS)))
    assert len(served_by(server, "POST /api/v1/jobs")) == 2  # both processes created some
    done = [wait_job(server.client, job_id) for job_id in job_ids]
    assert all(job["status"] == "succeeded" for job in done), done
    assert sorted(job["model_version"] for job in done) == list(range(1, JOBS + 1))
    registered = server.client.get(f"/api/v1/registry/{name}").json()
    assert registered["latest_version"] == JOBS
    assert sorted(v["version"] for v in registered["versions"]) == list(range(1, JOBS + 1))
    by_version = {job["model_version"]: job["model_id"] for job in done}

    def by_id(version: int) -> bytes:
        return server.client.get(f"/api/v1/models/{by_version[version]}/predict",
                                 params={"x": EXAMPLE}).content

    # two versions whose predictions differ (C=1/8 and C=8)
    low = next(job["model_version"] for job in done if job["params"]["C"] == 0.125)
    high = next(job["model_version"] for job in done if job["params"]["C"] == 8.0)
    assert by_id(low) != by_id(high)
    alias_path = f"/api/v1/registry/{name}/aliases/production"
    predict_path = f"/api/v1/registry/{name}@production/predict"
    for target in (low, high, low):  # moved through either process, and back
        moved = on_a_new_connection(server, "PUT", alias_path, json={"version": target})
        assert moved.status_code == 200, moved.text

        def predict(_) -> bytes:
            answer = on_a_new_connection(server, "GET", predict_path, params={"x": EXAMPLE})
            assert answer.status_code == 200, answer.text
            return answer.content

        with ThreadPoolExecutor(4) as pool:
            answers = set(pool.map(predict, range(40)))
        assert answers == {by_id(target)}  # every request after the move: the new version
    assert set(served_by(server, f"GET {predict_path}")) == set(web_processes(server))

    def statuses(path: str) -> set[int]:
        """40 GET predict of ``path`` on fresh connections (both processes answer)."""
        with ThreadPoolExecutor(4) as pool:
            return set(pool.map(lambda _: on_a_new_connection(
                server, "GET", path, params={"x": EXAMPLE}).status_code, range(40)))

    # deleted while both processes keep it, then made again on another version
    assert on_a_new_connection(server, "DELETE", alias_path).status_code == 204
    assert statuses(predict_path) == {404}
    assert on_a_new_connection(server, "PUT", alias_path, json={"version": high}).status_code \
        == 200
    with ThreadPoolExecutor(4) as pool:
        assert set(pool.map(lambda _: on_a_new_connection(
            server, "GET", predict_path, params={"x": EXAMPLE}).content, range(40))) \
            == {by_id(high)}
    # a version both processes keep, deleted: the next request of either finds none
    spare = next(version for version in by_version if version not in (low, high))
    version_path = f"/api/v1/registry/{name}/{spare}/predict"
    assert statuses(version_path) == {200}
    assert on_a_new_connection(server, "DELETE",
                               f"/api/v1/registry/{name}/{spare}").status_code == 204
    assert statuses(version_path) == {404}
    assert set(served_by(server, f"GET {version_path}")) == set(web_processes(server))
    history = next(a for a in server.client.get(f"/api/v1/registry/{name}").json()["aliases"]
                   if a["alias"] == "production")["history"]
    assert [(e["from_version"], e["to_version"]) for e in history] == [
        (None, high), (low, None), (high, low), (low, high), (None, low)]
    assert json.loads(by_id(low))["label"] in (-1, 1)
