"""The model registry (issue 50): a job names its model (``model_name``) and each success
under the name is its next version, numbered without gaps however many jobs finish at once;
aliases point at one version, move in one request, atomically, with their history; a version
an alias points at cannot be deleted; predict and evaluate by ``name@alias`` or
``name/version`` answer what the same request by id answers (the GET through the fast path);
names are per owner.  On SQLite and PostgreSQL (the ``api`` fixture), with the two web
processes' case in ``test_registry_processes.py``.
"""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from conftest import API_KEYS, TENANT_KEYS
from servicetools import (
    PATIENCE_S,
    QUICK_PARAMS,
    data_path,
    metrics_of,
    uploaded_id,
    wait_for,
    wait_job,
)

from app.crud.registry import resolve
from app.db.models import Job, JobStatus, ModelVersion, TrainedModel, utcnow
from app.jobs.state import finish_job

ALICE = {"X-API-Key": TENANT_KEYS["alice"]}
ALICE_READ = {"X-API-Key": TENANT_KEYS["alice-read"]}
BOB = {"X-API-Key": TENANT_KEYS["bob"]}
READ = {"X-API-Key": API_KEYS["read"]}
TRAIN = {"X-API-Key": API_KEYS["train"]}
EXAMPLE = "1:0.7 3:1 5:-0.2 9:0.4"


def train_named(api, dataset_id: str, name: str, C: float = 1.0, headers=None,
                **fields) -> dict:
    response = api.post("/api/v1/jobs", json={
        "dataset_id": dataset_id, "params": {**QUICK_PARAMS, "C": C}, "model_name": name,
        **fields}, headers=headers or {})
    assert response.status_code == 202, response.text
    done = wait_job(api, response.json()["id"])
    assert done["status"] == "succeeded", done
    return done


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def heart(api):
    return uploaded_id(api, data_path("heart_scale"))


@pytest.fixture(scope="module")
def churn(api, heart):
    """A registered model ``churn-...`` of the owner ``tester`` with two versions (C=1 and
    C=0.01: different decision values), ``production`` at version 1."""
    name = unique_name("churn")
    first = train_named(api, heart, name, C=1.0, validation_dataset_id=heart)
    second = train_named(api, heart, name, C=0.01)
    moved = api.put(f"/api/v1/registry/{name}/aliases/production", json={"version": 1})
    assert moved.status_code == 200, moved.text
    return name, first, second


def test_a_named_job_makes_the_next_version_with_what_made_it(api, heart, churn):
    name, first, second = churn
    assert (first["model_name"], first["model_version"]) == (name, 1)
    assert (second["model_name"], second["model_version"]) == (name, 2)
    model = api.get(f"/api/v1/models/{first['model_id']}").json()
    assert (model["model_name"], model["model_version"]) == (name, 1)
    registered = api.get(f"/api/v1/registry/{name}").json()
    assert registered["latest_version"] == 2
    assert [v["version"] for v in registered["versions"]] == [2, 1]
    version_1 = registered["versions"][1]
    assert version_1["model_id"] == first["model_id"] and version_1["job_id"] == first["id"]
    assert version_1["dataset_id"] == heart and version_1["solver"] == "mfn"
    assert version_1["params"]["C"] == 1.0 and version_1["created_by"] == "tester"
    assert version_1["aliases"] == ["production"]
    assert version_1["metrics"]["objective"] == model["objective"]
    assert version_1["metrics"]["validation"]["accuracy"] == model["validation"]["accuracy"]
    assert "validation" not in registered["versions"][0]["metrics"]  # none was asked
    assert api.get(f"/api/v1/registry/{name}/2").json()["model_id"] == second["model_id"]
    listed = {entry["name"]: entry for entry in api.get("/api/v1/registry").json()["data"]}
    assert listed[name]["versions"] == 2 and listed[name]["aliases"] == {"production": 1}


def test_predict_and_evaluate_by_alias_or_version_answer_as_by_id(api, heart, churn):
    name, first, second = churn
    by_id = {n: api.get(f"/api/v1/models/{job['model_id']}/predict", params={"x": EXAMPLE})
             for n, job in ((1, first), (2, second))}
    assert by_id[1].content != by_id[2].content  # the two versions are told apart
    for path, version in ((f"{name}@production", 1), (f"{name}/1", 1), (f"{name}/2", 2)):
        answer = api.get(f"/api/v1/registry/{path}/predict", params={"x": EXAMPLE})
        assert answer.status_code == 200 and answer.content == by_id[version].content
        zero = api.get(f"/api/v1/registry/{path}/predict",
                       params={"x": "0:0.7 2:1 4:-0.2 8:0.4", "zero_based": "true"})
        assert zero.content == by_id[version].content
        batch = api.post(f"/api/v1/registry/{path}/predict", content=f"{EXAMPLE}\n1:-1\n",
                         headers={"content-type": "text/plain"})
        same = api.post(f"/api/v1/models/{(first, second)[version - 1]['model_id']}/predict",
                        content=f"{EXAMPLE}\n1:-1\n", headers={"content-type": "text/plain"})
        assert batch.status_code == 200 and batch.json() == same.json()
        rows = api.post(f"/api/v1/registry/{path}/predict", json={"rows": [{"1": 0.7}]})
        assert rows.status_code == 200 and len(rows.json()["data"]) == 1
        evaluated = api.post(f"/api/v1/registry/{path}/evaluate", json={"dataset_id": heart})
        assert evaluated.status_code == 200, evaluated.text
        by_model = api.post(
            f"/api/v1/models/{(first, second)[version - 1]['model_id']}/evaluate",
            json={"dataset_id": heart}).json()
        assert metrics_of(evaluated.json()) == metrics_of(by_model)
        assert evaluated.json()["model_id"] == by_model["model_id"]  # both stored with it
    # a read key predicts; errors are the by-id route's
    assert api.get(f"/api/v1/registry/{name}@production/predict", params={"x": EXAMPLE},
                   headers=READ).content == by_id[1].content
    for path in (f"{name}@staging", f"{name}/3", f"nothing-{name}@production"):
        missing = api.get(f"/api/v1/registry/{path}/predict", params={"x": EXAMPLE})
        assert missing.status_code == 404, missing.text
        assert missing.headers["content-type"] == "application/problem+json"
    assert api.get(f"/api/v1/registry/{name}@production/predict",
                   params={"x": "1:oops"}).status_code == 422
    assert api.get(f"/api/v1/registry/{name}/0/predict", params={"x": EXAMPLE}).status_code \
        == 422


def test_get_predict_by_alias_takes_the_fast_path(api, churn):
    """The fast path answers GET predict by alias and by version with the route's bytes,
    counted under the registry route's template; a name that resolves to nothing falls
    through to the route (its 404)."""
    from app.api.fast_path import PredictFastPath
    from app.api.routes.models import router as models_router
    from app.api.routes.registry import router

    name, first, _ = churn
    routes = {r.name: r for r in [*models_router.routes, *router.routes]}
    fast = PredictFastPath(None, routes, None)
    by_id = api.get(f"/api/v1/models/{first['model_id']}/predict", params={"x": EXAMPLE})

    def scope(path: str) -> dict:
        return {"type": "http", "method": "GET", "path": path, "root_path": "",
                "query_string": b"x=" + EXAMPLE.replace(" ", "+").encode(),
                "headers": [(b"x-api-key", API_KEYS["read"].encode())], "app": api.app}

    for path, template in ((f"{name}@production", "/api/v1/registry/{name}@{alias}/predict"),
                           (f"{name}/1", "/api/v1/registry/{name}/{version}/predict")):
        body, route = fast.answer_for(scope(f"/api/v1/registry/{path}/predict"))
        assert body == by_id.content and route.path_format == template
    for path in (f"{name}@staging", f"{name}/9", f"{name}/99999999999", "Bad@production"):
        assert fast.answer(scope(f"/api/v1/registry/{path}/predict")) is None
    series = ('svmsvc_http_requests_total{method="GET",'
              'route="/api/v1/registry/{name}@{alias}/predict",status="200"} ')

    def counted() -> float:
        return next(float(line[len(series):]) for line in api.get("/metrics").text.splitlines()
                    if line.startswith(series))

    path = f"/api/v1/registry/{name}@production/predict"
    api.get(path, params={"x": EXAMPLE})  # the series exists from the first answer on
    before = counted()
    assert api.get(path, params={"x": EXAMPLE}).content == by_id.content
    assert counted() == before + 1


def test_an_alias_moves_in_one_request_with_its_history_and_back(api, churn):
    name, first, second = churn
    path = f"/api/v1/registry/{name}/aliases/staging"
    assert api.put(path, json={"version": 2}, headers=TRAIN).status_code == 200
    moved = api.put(path, json={"version": 1}, headers=TRAIN)
    assert moved.status_code == 200, moved.text
    assert moved.json()["version"] == 1 and moved.json()["model_id"] == first["model_id"]
    assert api.get(f"/api/v1/registry/{name}@staging/predict", params={"x": EXAMPLE}).content \
        == api.get(f"/api/v1/registry/{name}/1/predict", params={"x": EXAMPLE}).content
    back = api.put(path, json={"version": 2}, headers=TRAIN).json()
    assert back["version"] == 2
    assert api.get(f"/api/v1/registry/{name}@staging/predict", params={"x": EXAMPLE}).content \
        == api.get(f"/api/v1/models/{second['model_id']}/predict", params={"x": EXAMPLE}).content
    same = api.put(path, json={"version": 2}, headers=TRAIN).json()  # no move: not recorded
    history = [(e["from_version"], e["to_version"], e["moved_by"]) for e in same["history"]]
    assert history == [(1, 2, "tester"), (2, 1, "tester"), (None, 2, "tester")]
    times = [e["moved_at"] for e in same["history"]]
    assert times == sorted(times, reverse=True)
    # the scopes: a read key cannot move; bad bodies and versions are 422
    assert api.put(path, json={"version": 1}, headers=READ).status_code == 403
    for body in ({"version": 3}, {"version": 0}, {"version": "one"}, {}, {"version": 1, "x": 1}):
        refused = api.put(path, json=body)
        assert refused.status_code == 422, (body, refused.text)
    assert api.put(f"/api/v1/registry/{name}/aliases/Not%20a%20slug",
                   json={"version": 1}).status_code == 422
    assert api.put(f"/api/v1/registry/none-{name}/aliases/staging",
                   json={"version": 1}).status_code == 404
    # deleting: recorded, the history stays visible; reversible by another PUT
    assert api.delete(path, headers=TRAIN).status_code == 204
    assert api.get(f"/api/v1/registry/{name}@staging/predict",
                   params={"x": EXAMPLE}).status_code == 404
    deleted = next(a for a in api.get(f"/api/v1/registry/{name}").json()["aliases"]
                   if a["alias"] == "staging")
    assert deleted["version"] is None and deleted["history"][0]["to_version"] is None
    assert api.delete(path).status_code == 404
    assert api.put(path, json={"version": 1}).json()["history"][0]["from_version"] is None
    assert api.delete(path).status_code == 204


def test_a_version_an_alias_points_at_is_not_deleted(api, heart):
    name = unique_name("deletable")
    first = train_named(api, heart, name)
    second = train_named(api, heart, name)
    assert api.put(f"/api/v1/registry/{name}/aliases/production",
                   json={"version": 1}).status_code == 200
    for refused in (api.delete(f"/api/v1/registry/{name}/1"),
                    api.delete(f"/api/v1/models/{first['model_id']}")):
        assert refused.status_code == 409, refused.text
        problem = refused.json()
        assert refused.headers["content-type"] == "application/problem+json"
        assert f"{name}@production" in problem["detail"] and problem["status"] == 409
    assert api.delete(f"/api/v1/registry/{name}/2", headers=TRAIN).status_code == 403
    assert api.delete(f"/api/v1/registry/{name}/2").status_code == 204
    assert api.get(f"/api/v1/models/{second['model_id']}").status_code == 404
    assert api.get(f"/api/v1/registry/{name}/2").status_code == 404
    assert api.delete(f"/api/v1/registry/{name}/2").status_code == 404
    # the number is not given again; deleting the model deletes its version
    third = train_named(api, heart, name)
    assert third["model_version"] == 3
    assert api.delete(f"/api/v1/models/{third['model_id']}").status_code == 204
    assert [v["version"] for v in api.get(f"/api/v1/registry/{name}").json()["versions"]] == [1]
    assert api.delete(f"/api/v1/registry/{name}/aliases/production").status_code == 204
    assert api.delete(f"/api/v1/registry/{name}/1").status_code == 204


def test_names_are_per_owner_and_another_owner_can_neither_see_nor_move(api):
    files = {"file": ("heart.svm", data_path("heart_scale").read_bytes(),
                      "application/octet-stream")}
    dataset = api.post("/api/v1/datasets", files=files, headers=ALICE).json()["id"]
    name = unique_name("shared-name")
    done = train_named(api, dataset, name, headers=ALICE)
    assert done["model_version"] == 1
    assert api.put(f"/api/v1/registry/{name}/aliases/production", json={"version": 1},
                   headers=ALICE).status_code == 200
    alice_answer = api.get(f"/api/v1/registry/{name}@production/predict",
                           params={"x": EXAMPLE}, headers=ALICE_READ)
    assert alice_answer.status_code == 200  # her read key predicts
    assert api.put(f"/api/v1/registry/{name}/aliases/production", json={"version": 1},
                   headers=ALICE_READ).status_code == 403
    for headers in (BOB, {"X-API-Key": API_KEYS["admin"]}):
        assert name not in [e["name"] for e in api.get("/api/v1/registry",
                                                       headers=headers).json()["data"]]
        for response in (
                api.get(f"/api/v1/registry/{name}", headers=headers),
                api.get(f"/api/v1/registry/{name}/1", headers=headers),
                api.get(f"/api/v1/registry/{name}@production/predict", params={"x": EXAMPLE},
                        headers=headers),
                api.get(f"/api/v1/registry/{name}/1/predict", params={"x": EXAMPLE},
                        headers=headers),
                api.put(f"/api/v1/registry/{name}/aliases/production", json={"version": 1},
                        headers=headers),
                api.delete(f"/api/v1/registry/{name}/aliases/production", headers=headers)):
            assert response.status_code == 404, response.text
    # bob's job under the same name starts bob's own version 1
    bobs = api.post("/api/v1/datasets", files=files, headers=BOB).json()["id"]
    assert train_named(api, bobs, name, headers=BOB)["model_version"] == 1
    assert api.get(f"/api/v1/registry/{name}", headers=ALICE).json()["latest_version"] == 1
    assert api.get(f"/api/v1/registry/{name}@production/predict", params={"x": EXAMPLE},
                   headers=BOB).status_code == 404


def test_a_model_name_must_be_a_slug(api, heart):
    for bad in ("Churn", "a b", "a@b", "a/b", "", "x" * 65, "-lead"):
        response = api.post("/api/v1/jobs", json={"dataset_id": heart, "params": QUICK_PARAMS,
                                                  "model_name": bad})
        assert response.status_code == 422, (bad, response.text)
        assert "model_name" in str(response.json()["errors"][0]["loc"])


def test_twenty_jobs_finishing_at_once_take_versions_1_to_20(api, heart):
    """Twenty running jobs under one name finished at the same moment, each by its own
    thread and session as twenty workers would: versions 1-20, each once, no gap (the
    counter's row lock on PostgreSQL, the write lock on SQLite)."""
    sessions = api.app.state.sessions
    name = unique_name("concurrent")
    template = api.get(f"/api/v1/models/{train_named(api, heart, unique_name('t'))['model_id']}")
    with sessions.read() as session:
        row = session.get(TrainedModel, uuid.UUID(template.json()["id"]))
        artifact = row.artifact
    jobs = []
    with sessions.write() as session:
        for _ in range(20):
            job = Job(dataset_id=uuid.UUID(heart), solver="mfn", params=QUICK_PARAMS,
                      status=JobStatus.running, attempts=1, owner="tester", model_name=name,
                      started_at=utcnow(), heartbeat_at=utcnow())
            session.add(job)
            jobs.append(job)
        session.commit()
    start = threading.Barrier(20)
    written: list[bool] = []

    def finish(job_id: uuid.UUID) -> None:
        model = TrainedModel(
            job_id=job_id, dataset_id=uuid.UUID(heart), solver="mfn", params=QUICK_PARAMS,
            kind="linear", classes=[-1, 1], n_features=13, objective=1.0,
            solver_status="converged", message="", iterations=1, training_seconds=0.1,
            training_data={}, subproblems=[], validation=None, size_bytes=len(artifact),
            artifact=artifact)
        start.wait()
        with sessions.write() as session:
            written.append(finish_job(session, job_id, 1, JobStatus.succeeded, model=model))

    threads = [threading.Thread(target=finish, args=(job.id,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert written == [True] * 20
    with sessions.read() as session:
        versions = session.query(ModelVersion).filter_by(owner="tester", name=name).all()
    assert sorted(v.version for v in versions) == list(range(1, 21))
    assert sorted(str(v.job_id) for v in versions) == sorted(str(job.id) for job in jobs)
    assert api.get(f"/api/v1/registry/{name}").json()["latest_version"] == 20
    assert resolve(sessions.engine, "tester", name, version=20) is not None


def test_a_batch_by_alias_is_bounded_as_by_id(api, churn):
    """POST predict by alias or version has the by-id route's body limit (413 naming
    SVMSVC_MAX_PREDICT_BYTES, before the body is read)."""
    name, _, _ = churn
    body = b"1:0.5\n" * (api.app.state.settings.max_predict_bytes // 6 + 1)
    for path in (f"{name}@production", f"{name}/1"):
        refused = api.post(f"/api/v1/registry/{path}/predict", content=body,
                           headers={"content-type": "text/plain"})
        assert refused.status_code == 413, refused.text
        assert refused.json()["setting"] == "SVMSVC_MAX_PREDICT_BYTES"


def test_the_fast_paths_lookup_caches_sees_every_change_at_once_and_survives_a_lost_connection(
        api, churn, heart):
    """``DirectLookup`` (the fast path's read) answers what ``resolve`` answers and keeps it
    (a second ask reads nothing), yet sees at once, with a warm cache, every change another
    connection commits: an alias moved and moved back, deleted and made again, a version
    deleted (SQLite: ``data_version``; PostgreSQL: the listener, which each writer waits
    for); it keeps no name it did not find and nothing across owners; after its connection
    is lost it answers None once (the route then answers) and reconnects."""
    from app.crud.registry import DirectLookup

    name, first, second = churn
    engine = api.app.state.sessions.engine
    lookup = DirectLookup(engine)
    try:
        if lookup.postgresql:  # listening, or the cache is not trusted (every ask reads)
            wait_for(lambda: lookup.listener.live, PATIENCE_S, what="the registry listener")
        first_id, second_id = uuid.UUID(first["model_id"]), uuid.UUID(second["model_id"])
        assert lookup.model_id("tester", name, "production") == first_id
        assert lookup.model_id("tester", name, version=2) == second_id
        reads: list[str] = []
        driver = lookup._driver()
        lookup._driver = lambda: ReadCounter(driver, reads)
        assert lookup.model_id("tester", name, "production") == first_id  # kept: no read
        assert lookup.model_id("tester", name, version=2) == second_id
        assert [sql for sql in reads if "model_" in sql] == []
        assert lookup.model_id("bob", name, "production") is None  # another owner: read
        assert lookup.model_id("tester", name, version=9) is None
        assert len([sql for sql in reads if "model_" in sql]) == 2
        assert lookup.model_id("bob", name, "production") is None  # not found: not kept
        del lookup._driver

        path = f"/api/v1/registry/{name}/aliases/lookup-test"
        for version, model_id in ((2, second_id), (1, first_id), (2, second_id)):
            assert api.put(path, json={"version": version}).status_code == 200
            assert lookup.model_id("tester", name, "lookup-test") == model_id
            assert lookup.model_id("tester", name, "lookup-test") == model_id  # kept
        assert api.delete(path).status_code == 204
        assert lookup.model_id("tester", name, "lookup-test") is None
        assert api.put(path, json={"version": 1}).status_code == 200  # made again
        assert lookup.model_id("tester", name, "lookup-test") == first_id
        assert api.delete(path).status_code == 204

        third = train_named(api, heart, name, C=0.1)  # a version deleted while kept
        third_id = uuid.UUID(third["model_id"])
        number = third["model_version"]
        assert lookup.model_id("tester", name, version=number) == third_id
        assert lookup.model_id("tester", name, version=number) == third_id
        assert api.delete(f"/api/v1/registry/{name}/{number}",
                          headers={"X-API-Key": API_KEYS["admin"]}).status_code == 204
        assert lookup.model_id("tester", name, version=number) is None
        assert api.get(f"/api/v1/registry/{name}/{number}/predict",
                       params={"x": EXAMPLE}).status_code == 404

        lookup.close()  # a fresh connection, the cache empty: the next ask reads
        lookup.invalidate()
        lookup._driver().close()
        assert lookup.model_id("tester", name, "production") is None
        assert lookup.model_id("tester", name, "production") == first_id

        async def read_concurrently():  # the event loop's reads (PostgreSQL: not blocking)
            lookup.invalidate()
            return await asyncio.gather(*(
                lookup.model_id_async("tester", name, *reference)
                for reference in [("production", None), (None, 2), ("staging", None)] * 4))

        found = asyncio.run(read_concurrently())
        assert found == [first_id, second_id, None] * 4
        assert lookup._async_open <= lookup.ASYNC_CONNECTIONS
    finally:
        lookup.stop()


class ReadCounter:
    """A driver connection that records the SQL it is given (which asks read the tables)."""

    def __init__(self, driver, reads: list[str]):
        self.driver, self.reads = driver, reads

    def execute(self, sql, *args):
        self.reads.append(sql)
        return self.driver.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.driver, name)


def test_concurrent_moves_of_one_alias_leave_one_consistent_history(api, churn):
    """Twelve moves of one alias at the same instant, each in its own session: every move is
    recorded once, each from the version the one before it left (the name's row lock on
    PostgreSQL, the write lock on SQLite: no move reads a version another is replacing), and
    the alias ends where the last recorded move put it."""
    from app.core.principals import Principal, Scope
    from app.crud.registry import move_alias

    name, first, second = churn
    sessions = api.app.state.sessions
    tester = Principal(owner="tester", scope=Scope.train)
    start = threading.Barrier(12)
    errors: list[BaseException] = []

    def move(index: int) -> None:
        start.wait()
        try:
            with sessions.write() as session:
                move_alias(session, tester, name, "contended", 1 + index % 2)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=move, args=(index,)) for index in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    alias = next(a for a in api.get(f"/api/v1/registry/{name}").json()["aliases"]
                 if a["alias"] == "contended")
    history = list(reversed(alias["history"]))  # oldest first
    assert history[0]["from_version"] is None
    assert all(later["from_version"] == earlier["to_version"]
               for earlier, later in zip(history, history[1:], strict=False))
    assert all(event["from_version"] != event["to_version"] for event in history)
    assert alias["version"] == history[-1]["to_version"]
    assert api.delete(f"/api/v1/registry/{name}/aliases/contended").status_code == 204


def test_the_migration_adds_and_removes_the_registry(backend, tmp_path):
    """0010_registry upgrades a database of 0010 (its jobs get no model name) and downgrades
    back, the registry's tables gone."""
    from sqlalchemy import inspect

    from app.db.migrate import downgrade_database, upgrade_database
    from app.db.session import create_db_engine

    engine = create_db_engine(backend.database_url(tmp_path / "db"))
    try:
        upgrade_database(engine, "0010")
        assert "registered_models" not in inspect(engine).get_table_names()
        upgrade_database(engine)
        tables = set(inspect(engine).get_table_names())
        assert {"registered_models", "model_versions", "model_aliases",
                "model_alias_events"} <= tables
        assert "model_name" in {c["name"] for c in inspect(engine).get_columns("jobs")}
        downgrade_database(engine, "0010")
        assert not {"registered_models", "model_versions", "model_aliases",
                    "model_alias_events"} & set(inspect(engine).get_table_names())
        assert "model_name" not in {c["name"] for c in inspect(engine).get_columns("jobs")}
    finally:
        engine.dispose()
