"""Tenants (issue 35): every dataset, job and model belongs to the owner of the key that
created it.  Another owner gets the 404 of a thing that does not exist and does not see it
listed; an admin key sees everything; keys are ``scope:owner:key`` or ``scope:key`` (an owner
of its own); the stored owner is a name or a salted digest, never the key's bare hash; the
migration carries the jobs of a database from before owners.

The in-process service of ``conftest`` has the owners ``tester`` (read, train and admin keys),
``alice`` (a train and a read key), ``bob`` (a train key) and a train key of its own.
"""

from __future__ import annotations

import io
import uuid

import pytest
from conftest import API_KEY_ENTRIES, API_KEYS, TENANT_KEYS, service_settings
from fastapi.testclient import TestClient
from servicetools import (
    LONG_PARAMS,
    PATIENCE_S,
    QUICK_PARAMS,
    data_path,
    random_svmlight,
    wait_for,
    wait_job,
)
from sqlalchemy import MetaData, Table, select
from test_api_problems import SHARDED_COLUMNS, table_at

from app.core.config import Settings
from app.core.principals import own_owner
from app.core.security import ApiKeys, KeyConfigError, Scope, key_digest
from app.db.migrate import downgrade_database, upgrade_database
from app.db.models import Dataset, Job, TrainedModel
from app.db.session import Sessions, create_db_engine
from app.main import create_app

ALICE = {"X-API-Key": TENANT_KEYS["alice"]}
ALICE_READ = {"X-API-Key": TENANT_KEYS["alice-read"]}
BOB = {"X-API-Key": TENANT_KEYS["bob"]}
OWN = {"X-API-Key": TENANT_KEYS["own"]}
ADMIN = {"X-API-Key": API_KEYS["admin"]}


def upload_as(api, headers: dict, content: bytes, expected: int = 201) -> dict:
    files = {"file": ("data.svm", io.BytesIO(content), "application/octet-stream")}
    response = api.post("/api/v1/datasets", files=files, headers=headers)
    assert response.status_code == expected, response.text
    return response.json()


def train_as(api, headers: dict, dataset_id: str) -> dict:
    response = api.post("/api/v1/jobs", json={"dataset_id": dataset_id,
                                              "params": QUICK_PARAMS}, headers=headers)
    assert response.status_code == 202, response.text
    done = wait_job(api, response.json()["id"])  # read with the admin key: it sees all
    assert done["status"] == "succeeded", done
    return done


@pytest.fixture(scope="module")
def alices(api):
    """(dataset id, job id, model id) of alice's, trained on heart_scale; its model was used
    once by alice, so it sits in the model cache (the cached prediction path is checked)."""
    dataset = upload_as(api, ALICE, data_path("heart_scale").read_bytes(), expected=201)
    done = train_as(api, ALICE, dataset["id"])
    predicted = api.get(f"/api/v1/models/{done['model_id']}/predict",
                        params={"x": "1:0.5 3:1"}, headers=ALICE)
    assert predicted.status_code == 200, predicted.text
    return dataset["id"], done["id"], done["model_id"]


# -- keys ------------------------------------------------------------------------------------


def test_a_key_names_its_owner_or_is_an_owner_of_its_own(tmp_path):
    hidden = key_digest("root-key")
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"admin:root:sha256:{hidden}\ntrain:sha256:{key_digest('h-key')}\n")
    keys = ApiKeys.from_settings(Settings(
        api_keys="train:alice:a-key, read:alice:a-read, read:solo-key, train:b.o-b@x:b-key",
        api_keys_file=keys_file))
    alice = keys.principal_of("a-key")
    assert (alice.owner, alice.scope, alice.sees_all) == ("alice", Scope.train, False)
    assert keys.principal_of("a-read").owner == "alice"  # two keys, one owner
    assert keys.principal_of("b-key").owner == "b.o-b@x"
    root = keys.principal_of("root-key")
    assert (root.owner, root.scope, root.sees_all) == ("root", Scope.admin, True)
    for key in ("solo-key", "h-key"):  # scope:key and scope:sha256:<digest>: their own owner
        owner = keys.principal_of(key).owner
        assert owner == own_owner(key_digest(key))
        assert owner.startswith("key:") and len(owner) == 20
        assert owner[4:] not in key_digest(key)  # salted: not a piece of the key's hash
    assert keys.principal_of("unknown") is None and keys.principal_of(None) is None


@pytest.mark.parametrize("value, fragment", [
    ("train:al ice:k", "owner 'al ice' is not a name"),
    ("train:-alice:k", "owner '-alice' is not a name"),
    (f"train:{'a' * 65}:k", "is not a name of 1-64"),
    ("train:alice:", "owner 'alice' has an empty key"),
    ("train:alice:k, read:bob:k", "this key is configured for two owners ('alice' and 'bob')"),
])
def test_malformed_owners_are_refused(value, fragment):
    with pytest.raises(KeyConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        ApiKeys.from_settings(Settings(api_keys=value))


# -- what another owner sees -----------------------------------------------------------------


def test_another_owner_gets_404_for_every_thing_of_alice(api, alices):
    dataset_id, job_id, model_id = alices
    absent = str(uuid.uuid4())

    def same_as_absent(method: str, template: str, thing: str, **request) -> None:
        """Bob's answer for alice's thing is the answer for a thing that does not exist."""
        mine = api.request(method, template.format(thing), headers=BOB, **request)
        none = api.request(method, template.format(absent), headers=BOB, **request)
        assert mine.status_code == none.status_code == 404, (template, mine.text)
        assert mine.json()["detail"] == none.json()["detail"].replace(absent, thing)

    same_as_absent("GET", "/api/v1/datasets/{}", dataset_id)
    same_as_absent("GET", "/api/v1/jobs/{}", job_id)
    same_as_absent("GET", "/api/v1/jobs/{}/log", job_id)
    same_as_absent("GET", "/api/v1/jobs/{}/log", job_id, params={"points": 10})
    same_as_absent("GET", "/api/v1/jobs/{}/log/stream", job_id)
    same_as_absent("POST", "/api/v1/jobs/{}/cancel", job_id)
    same_as_absent("GET", "/api/v1/models/{}", model_id)
    same_as_absent("GET", "/api/v1/models/{}/download", model_id)
    same_as_absent("GET", "/api/v1/models/{}/download", model_id, params={"format": "liblinear"})
    same_as_absent("GET", "/api/v1/models/{}/download", model_id, params={"format": "onnx"})
    same_as_absent("GET", "/api/v1/models/{}/predict", model_id, params={"x": "1:1"})
    for content_type, body in (("text/plain", b"1:1\n"), ("application/json", b'{"rows":[]}')):
        batch = api.post(f"/api/v1/models/{model_id}/predict", content=body,
                         headers={**BOB, "Content-Type": content_type})
        assert batch.status_code == 404, batch.text
    evaluated = api.post(f"/api/v1/models/{model_id}/evaluate",
                         json={"dataset_id": dataset_id}, headers=BOB)
    assert evaluated.status_code == 404, evaluated.text
    # things named in a body or the query are a 422 naming them, as unknown ones are
    refused = api.post("/api/v1/jobs", json={"dataset_id": dataset_id, "params": QUICK_PARAMS},
                       headers=BOB)
    assert refused.status_code == 422 and f"dataset {dataset_id} not found" in refused.text
    compared = api.get("/api/v1/logs", params={"job_id": job_id}, headers=BOB)
    assert compared.status_code == 422 and f"job {job_id} not found" in compared.text
    # ... and alice's things are untouched, for alice
    assert api.get(f"/api/v1/jobs/{job_id}", headers=ALICE_READ).json()["status"] == "succeeded"


def test_bob_evaluates_his_model_only_on_his_datasets(api, alices):
    dataset_id, _, _ = alices
    bobs = upload_as(api, BOB, random_svmlight(60, 5, seed=35))
    model_id = train_as(api, BOB, bobs["id"])["model_id"]
    assert api.post(f"/api/v1/models/{model_id}/evaluate", json={"dataset_id": bobs["id"]},
                    headers=BOB).status_code == 200
    on_alices = api.post(f"/api/v1/models/{model_id}/evaluate",
                         json={"dataset_id": dataset_id}, headers=BOB)
    assert on_alices.status_code == 422
    assert f"dataset {dataset_id} not found" in on_alices.json()["detail"]


def test_listings_show_the_callers_things_and_an_admin_all(api, alices):
    dataset_id, job_id, model_id = alices

    def listed(path: str, headers: dict, **params) -> set[str]:
        response = api.get(path, headers=headers, params={"limit": 1000, **params})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["count"] == len(body["data"])  # the count is of what the caller sees
        return {item["id"] for item in body["data"]}

    for path, thing in (("/api/v1/datasets", dataset_id), ("/api/v1/jobs", job_id),
                        ("/api/v1/models", model_id)):
        assert thing in listed(path, ALICE_READ), path  # alice's other key: the same owner
        assert thing in listed(path, ADMIN), path
        assert thing not in listed(path, BOB), path
        assert thing not in listed(path, OWN), path
    assert listed("/api/v1/jobs", BOB, dataset_id=dataset_id) == set()
    assert listed("/api/v1/models", BOB, dataset_id=dataset_id) == set()
    assert listed("/api/v1/jobs", ALICE_READ, dataset_id=dataset_id) == {job_id}


def test_alices_read_key_predicts_with_her_model_cached_or_not(api, alices):
    _, _, model_id = alices
    url = f"/api/v1/models/{model_id}/predict"
    cached = api.get(url, params={"x": "1:0.5 3:1"}, headers=ALICE_READ)
    api.app.state.model_cache.discard(uuid.UUID(model_id))
    loaded = api.get(url, params={"x": "1:0.5 3:1"}, headers=ALICE_READ)
    assert cached.status_code == loaded.status_code == 200, loaded.text
    assert cached.json() == loaded.json()
    assert api.get(url, params={"x": "1:1"}, headers=BOB).status_code == 404  # loaded now


def test_the_same_content_is_a_dataset_of_each_owner(api):
    content = random_svmlight(50, 4, seed=3535)
    alices = upload_as(api, ALICE, content, expected=201)
    assert upload_as(api, ALICE, content, expected=200)["id"] == alices["id"]
    bobs = upload_as(api, BOB, content, expected=201)
    assert bobs["id"] != alices["id"] and bobs["sha256"] == alices["sha256"]
    # the arrays are stored once; deleting bob's dataset keeps them for alice's
    assert api.delete(f"/api/v1/datasets/{bobs['id']}", headers=ADMIN).status_code == 204
    assert api.app.state.store.load(alices["sha256"]).X.shape[0] == 50
    train_as(api, ALICE, alices["id"])


def test_the_stored_owner_is_a_name_or_a_salted_digest(api):
    own = upload_as(api, OWN, random_svmlight(30, 3, seed=353535))
    alices = upload_as(api, ALICE, random_svmlight(30, 3, seed=353536))
    with api.app.state.sessions.read() as session:
        owners = dict(session.execute(select(Dataset.id, Dataset.owner).where(
            Dataset.id.in_([uuid.UUID(own["id"]), uuid.UUID(alices["id"])]))).all())
    digest = key_digest(TENANT_KEYS["own"])
    assert owners[uuid.UUID(own["id"])] == own_owner(digest)
    assert owners[uuid.UUID(alices["id"])] == "alice"
    assert digest not in owners.values()


# -- the migration ---------------------------------------------------------------------------


def test_the_migration_gives_existing_things_their_owners(backend, tmp_path):
    """Revision 0006: a job's bare key digest becomes the key's own owner (so that key keeps
    its jobs), no owner becomes "" (an open service's things: admins see them once keys are
    on); a model takes its job's owner, a dataset the owner of the first job using it."""
    engine = create_db_engine(backend.database_url(tmp_path))
    upgrade_database(engine, "0005")

    def table_at_0005(row_kind) -> Table:
        return table_at(row_kind, {"owner", *(SHARDED_COLUMNS if row_kind is Dataset else ())})

    digest = key_digest("an old key")
    used, unused = uuid.uuid4(), uuid.uuid4()
    keyed, open_job = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as connection:
        for dataset, sha in ((used, "1" * 64), (unused, "2" * 64)):
            connection.execute(table_at_0005(Dataset).insert().values(
                id=dataset, name="d", sha256=sha, n_samples=1, n_features=1, nnz=1,
                density=1.0, class_counts={"1": 1}, has_qid=False, has_sample_weight=False,
                upload_bytes=1, stored_bytes=1))
        jobs = Table("jobs", MetaData(), *(c._copy() for c in Job.__table__.columns  # not
                                           if c.name not in ("progress_stage", "kind")))  # yet
        for job_id, owner in ((keyed, digest), (open_job, None)):
            connection.execute(jobs.insert().values(
                id=job_id, dataset_id=used, solver="mfn", params={"solver": "mfn"},
                status="succeeded", attempts=1, owner=owner))
        for job_id in (keyed, open_job):
            connection.execute(table_at_0005(TrainedModel).insert().values(
                id=uuid.uuid4(), job_id=job_id, dataset_id=used, solver="mfn", params={},
                kind="linear", classes=[1, -1], n_features=1, objective=1.0,
                solver_status="converged", message="", iterations=1, training_seconds=0.1,
                training_data={}, subproblems=[], size_bytes=1, artifact=b"x"))
    upgrade_database(engine)
    sessions = Sessions(engine)
    with sessions.read() as session:
        job_owners = dict(session.execute(select(Job.id, Job.owner)).all())
        model_owners = dict(session.execute(select(TrainedModel.job_id,
                                                   TrainedModel.owner)).all())
        dataset_owners = dict(session.execute(select(Dataset.id, Dataset.owner)).all())
        # the content digest is unique per owner now, not overall
        session.add(Dataset(name="again", sha256="2" * 64, owner="alice", n_samples=1,
                            n_features=1, nnz=1, density=1.0, class_counts={"1": 1},
                            has_qid=False, has_sample_weight=False, upload_bytes=1,
                            stored_bytes=1))
        session.commit()
    assert job_owners == {keyed: own_owner(digest), open_job: ""}
    assert model_owners == job_owners
    assert dataset_owners == {used: own_owner(digest), unused: ""}
    with engine.begin() as connection:  # and back
        connection.execute(Dataset.__table__.delete().where(Dataset.name == "again"))
    downgrade_database(engine, "0005")
    engine.dispose()


# -- what answers without a key, or to any key (issue 49) ------------------------------------


def test_another_owners_uncached_model_is_not_loaded_before_the_404(api, alices):
    """Bob's predictions on alice's model, not cached, answer 404 without reading her
    archive: the ownership is part of the archive's query, so the cache stays without it."""
    _, _, model_id = alices
    cache = api.app.state.model_cache
    url = f"/api/v1/models/{model_id}/predict"
    cache.discard(uuid.UUID(model_id))
    assert api.get(url, params={"x": "1:1"}, headers=BOB).status_code == 404
    batch = api.post(url, content=b"1:1\n", headers={**BOB, "Content-Type": "text/plain"})
    assert batch.status_code == 404, batch.text
    assert cache.peek(uuid.UUID(model_id)) is None
    assert api.get(url, params={"x": "1:1"}, headers=ALICE_READ).status_code == 200
    assert cache.peek(uuid.UUID(model_id)) is not None


def test_readyz_shows_the_job_a_worker_runs_to_an_admin_only(api):
    """A running job's id is a tenant's: /readyz (answered without a key) shows it to an
    admin key, and null to anyone else."""
    dataset = upload_as(api, ALICE, data_path("a9a").read_bytes())
    response = api.post("/api/v1/jobs", json={"dataset_id": dataset["id"],
                                              "params": LONG_PARAMS}, headers=ALICE)
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    try:
        wait_job(api, job_id, until=lambda j: j["status"] == "running")

        def job_ids(headers: dict) -> list:
            answer = api.get("/readyz", headers=headers)
            assert answer.status_code == 200, answer.text
            return [worker["job_id"] for worker in answer.json()["workers"]]

        assert wait_for(lambda: job_id in job_ids(ADMIN), PATIENCE_S)
        for headers in ({"X-API-Key": ""}, ALICE, ALICE_READ, BOB, {"X-API-Key": "unknown"}):
            assert job_ids(headers) == [None] * len(job_ids(headers)), headers
    finally:
        api.post(f"/api/v1/jobs/{job_id}/cancel", headers=ALICE)
        wait_job(api, job_id)


def test_metrics_name_no_owner_to_a_caller_who_is_not_admin(api):
    """The live log streams per owner name tenants: /metrics serves that family to an admin
    key only; the totals to every key that may read it."""
    per_owner = "svmsvc_log_streams_open_by_owner"
    admin = api.get("/metrics", headers=ADMIN)
    assert admin.status_code == 200 and f"# HELP {per_owner}" in admin.text
    for headers in (ALICE_READ, BOB, OWN):
        scraped = api.get("/metrics", headers=headers)
        assert scraped.status_code == 200, scraped.text
        assert per_owner not in scraped.text
        assert "svmsvc_log_streams_open " in scraped.text and "svmsvc_jobs{" in scraped.text
    assert api.get("/metrics", headers={"X-API-Key": ""}).status_code == 401


def test_a_public_metrics_endpoint_names_no_owner_without_an_admin_key(backend, tmp_path):
    settings = service_settings(tmp_path, backend, api_keys=API_KEY_ENTRIES,
                                metrics_public=True)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        anonymous = client.get("/metrics")
        assert anonymous.status_code == 200
        assert "svmsvc_log_streams_open_by_owner" not in anonymous.text
        admin = client.get("/metrics", headers=ADMIN)
        assert "# HELP svmsvc_log_streams_open_by_owner" in admin.text
