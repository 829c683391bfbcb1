"""What an MLflow user expects of runs (issue 48): API keys managed through the admin API
(created with their secret shown once, listed without it, revoked, expiring; stored as
SHA-256 digests; refused at once once revoked), tags on jobs and models (set at creation and
by PATCH, inherited by the model, filtered on), stored evaluations, and jobs sorted and
filtered by a stored metric of their model."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from conftest import API_KEYS, service_settings
from fastapi.testclient import TestClient
from servicetools import (
    PATIENCE_S,
    QUICK_PARAMS,
    create_job,
    data_path,
    uploaded_id,
    wait_for,
    wait_job,
)
from sqlalchemy import select

from app.core.security import key_digest
from app.db.models import ApiKey
from app.main import create_app

KEYS = "/api/v1/api-keys"


def created_key(api, **fields) -> dict:
    response = api.post(KEYS, json={"name": "teammate", "scope": "train", **fields})
    assert response.status_code == 201, response.text
    return response.json()


def as_key(secret: str) -> dict:
    return {"X-API-Key": secret}


# -- API keys -------------------------------------------------------------------------------


def test_a_created_key_works_at_once_is_listed_without_its_secret_and_revoked_at_once(
        api, caplog):
    caplog.set_level(logging.DEBUG)
    created = created_key(api, name="carol's laptop", owner="carol")
    secret = created["secret"]
    assert secret.startswith("svmsvc_") and len(secret) >= 40
    assert created["owner"] == "carol" and created["scope"] == "train" and created["active"]
    assert api.get(KEYS.replace("api-keys", "datasets"), headers=as_key(secret)).status_code \
        == 200
    # its scope holds: train, not admin
    assert api.get(KEYS, headers=as_key(secret)).status_code == 403
    listed = api.get(KEYS).json()
    mine = next(key for key in listed["data"] if key["id"] == created["id"])
    assert "secret" not in mine and mine["name"] == "carol's laptop" and mine["active"]
    assert secret not in api.get(KEYS).text
    # only the digest is stored
    with api.app.state.sessions.read() as session:
        row = session.scalar(select(ApiKey).where(ApiKey.id == uuid.UUID(created["id"])))
        assert row.digest == key_digest(secret) and secret not in repr(row.__dict__)

    assert api.delete(f"{KEYS}/{created['id']}").status_code == 204
    refused = api.get("/api/v1/datasets", headers=as_key(secret))  # the very next request
    assert refused.status_code == 401
    assert "revoked" in refused.json()["detail"] and created["id"] in refused.json()["detail"]
    listed = api.get(KEYS).json()
    mine = next(key for key in listed["data"] if key["id"] == created["id"])
    assert mine["revoked_at"] is not None and not mine["active"]
    assert api.delete(f"{KEYS}/{created['id']}").status_code == 204  # again: no change
    # the secret was never logged
    assert secret not in caplog.text and key_digest(secret) not in caplog.text


def test_a_key_acts_for_its_tenant(api):
    carol = as_key(created_key(api, owner="carol-tenant")["secret"])
    own = created_key(api)  # no owner: a key of its own
    assert own["owner"].startswith("key:")
    response = api.post("/api/v1/datasets", headers=carol, files={
        "file": ("d.svm", (data_path("heart_scale")).read_bytes(), "application/octet-stream")})
    assert response.status_code in (200, 201), response.text
    carols = response.json()["id"]
    assert api.get(f"/api/v1/datasets/{carols}", headers=as_key(own["secret"])).status_code \
        == 404
    assert api.get(f"/api/v1/datasets/{carols}", headers=carol).status_code == 200


def test_an_expired_key_is_refused_with_a_clear_401(api):
    expires = datetime.now(UTC) + timedelta(seconds=2)
    created = created_key(api, scope="read", expires_at=expires.isoformat())
    headers = as_key(created["secret"])
    assert api.get("/api/v1/datasets", headers=headers).status_code == 200
    refused = wait_for(lambda: (r := api.get("/api/v1/datasets", headers=headers))
                       .status_code == 401 and r, PATIENCE_S, what="the key to expire")
    assert "expired at" in refused.json()["detail"]
    listed = {key["id"]: key for key in api.get(KEYS).json()["data"]}
    assert not listed[created["id"]]["active"]


@pytest.mark.parametrize("fields, problem", [
    ({"expires_at": "2020-01-01T00:00:00Z"}, "not in the future"),
    ({"expires_at": "2099-01-01T00:00:00"}, "time zone"),
    ({"owner": "no spaces allowed"}, "owner"),
    ({"scope": "root"}, "scope"),
])
def test_a_bad_key_request_is_a_422_naming_the_field(api, fields, problem):
    response = api.post(KEYS, json={"name": "x", "scope": "read", **fields})
    assert response.status_code == 422 and problem in response.text, response.text


def test_only_admins_manage_keys(api):
    for scope in ("read", "train"):
        headers = as_key(API_KEYS[scope])
        assert api.get(KEYS, headers=headers).status_code == 403
        assert api.post(KEYS, json={"name": "x", "scope": "admin"},
                        headers=headers).status_code == 403
    assert api.delete(f"{KEYS}/00000000-0000-0000-0000-000000000000").status_code == 404


def test_the_first_key_created_closes_an_open_service(backend, tmp_path):
    settings = service_settings(tmp_path, backend)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        assert client.get("/api/v1/datasets").status_code == 200  # open
        admin = client.post(KEYS, json={"name": "first admin", "scope": "admin"})
        assert admin.status_code == 201, admin.text
        assert client.get("/api/v1/datasets").status_code == 401  # at once
        headers = as_key(admin.json()["secret"])
        assert client.get("/api/v1/datasets", headers=headers).status_code == 200
        # revoking every key does not open the service again
        assert client.delete(f"{KEYS}/{admin.json()['id']}",
                             headers=headers).status_code == 204
        assert client.get("/api/v1/datasets").status_code == 401


# -- tags -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tagged(api):
    """Two finished jobs on heart_scale, one tagged, each validated on heart_scale."""
    dataset_id = uploaded_id(api, data_path("heart_scale"))
    first = create_job(api, dataset_id, {**QUICK_PARAMS, "C": 0.001},
                       validation_dataset_id=dataset_id,
                       tags={"experiment": "runs-test", "owner.team": "svm"})
    second = create_job(api, dataset_id, {**QUICK_PARAMS, "C": 1.0},
                        validation_dataset_id=dataset_id, tags={"experiment": "runs-test"})
    done = [wait_job(api, job["id"]) for job in (first, second)]
    assert all(job["status"] == "succeeded" for job in done), done
    return dataset_id, done


def test_tags_are_set_at_creation_inherited_by_the_model_patched_and_filtered(api, tagged):
    _, (first, second) = tagged
    assert first["tags"] == {"experiment": "runs-test", "owner.team": "svm"}
    model = api.get(f"/api/v1/models/{first['model_id']}").json()
    assert model["tags"] == first["tags"]

    def listed(path: str, *tags: str) -> set[str]:
        response = api.get(path, params={"tag": list(tags), "limit": 1000})
        assert response.status_code == 200, response.text
        return {row["id"] for row in response.json()["data"]}

    assert listed("/api/v1/jobs", "experiment:runs-test") >= {first["id"], second["id"]}
    assert listed("/api/v1/jobs", "experiment:runs-test", "owner.team:svm") == {first["id"]}
    assert listed("/api/v1/models", "owner.team:svm") == {first["model_id"]}

    patched = api.patch(f"/api/v1/jobs/{second['id']}",
                        json={"tags": {"owner.team": "svm", "experiment": None}})
    assert patched.status_code == 200, patched.text
    assert patched.json()["tags"] == {"owner.team": "svm"}
    assert listed("/api/v1/jobs", "owner.team:svm") == {first["id"], second["id"]}
    # the model keeps its own tags; it is patched on its own
    assert api.get(f"/api/v1/models/{second['model_id']}").json()["tags"] == {
        "experiment": "runs-test"}
    patched = api.patch(f"/api/v1/models/{second['model_id']}", json={"tags": {"best": "yes"}})
    assert patched.status_code == 200 and patched.json()["tags"] == {
        "experiment": "runs-test", "best": "yes"}
    assert listed("/api/v1/models", "best:yes") == {second["model_id"]}
    # a read key may not change tags
    assert api.patch(f"/api/v1/models/{second['model_id']}", json={"tags": {"a": "b"}},
                     headers=as_key(API_KEYS["read"])).status_code == 403


@pytest.mark.parametrize("tags, problem", [
    ({f"k{i}": "v" for i in range(33)}, "at most 32"),
    ({"a:b": "v"}, "tags"),
    ({"k": "v" * 257}, "tags"),
    ({"k": 3}, "tags"),
])
def test_bad_tags_are_a_422(api, tagged, tags, problem):
    dataset_id, (first, _) = tagged
    response = api.post("/api/v1/jobs", json={"dataset_id": dataset_id, "params": QUICK_PARAMS,
                                              "tags": tags})
    assert response.status_code == 422 and problem in response.text, response.text
    response = api.patch(f"/api/v1/jobs/{first['id']}", json={"tags": tags})
    assert response.status_code == 422, response.text


def test_a_bad_tag_filter_is_a_422(api):
    response = api.get("/api/v1/jobs", params={"tag": "no-colon"})
    assert response.status_code == 422 and "tag" in response.text, response.text


# -- stored evaluations ---------------------------------------------------------------------


def test_evaluations_are_stored_and_listed(api, tagged):
    dataset_id, (first, _) = tagged
    model_id = first["model_id"]
    answered = api.post(f"/api/v1/models/{model_id}/evaluate",
                        json={"dataset_id": dataset_id}).json()
    assert answered["model_id"] == model_id and answered["dataset_id"] == dataset_id
    assert answered["created_by"] == "tester" and answered["dataset_name"] == "heart_scale"
    read = as_key(API_KEYS["read"])
    again = api.post(f"/api/v1/models/{model_id}/evaluate", json={"dataset_id": dataset_id},
                     headers=read).json()
    listed = api.get(f"/api/v1/models/{model_id}/evaluations").json()
    assert listed["count"] == 2
    assert [row["id"] for row in listed["data"]] == [again["id"], answered["id"]]
    assert listed["data"][1] == answered  # as answered, metrics and all
    assert listed["data"][0]["accuracy"] == answered["accuracy"]
    assert api.get("/api/v1/models/00000000-0000-0000-0000-000000000000/evaluations"
                   ).status_code == 404


# -- jobs sorted and filtered by a metric ---------------------------------------------------


def test_jobs_sort_and_filter_by_a_stored_metric(api, tagged):
    _, (first, second) = tagged
    accuracy = {job["id"]: api.get(f"/api/v1/models/{job['model_id']}").json()
                ["validation"]["accuracy"] for job in (first, second)}
    assert accuracy[first["id"]] != accuracy[second["id"]]  # C 0.001 and 1 differ
    both = {first["id"], second["id"]}

    def order(**params) -> list[str]:
        response = api.get("/api/v1/jobs", params={"limit": 1000, **params})
        assert response.status_code == 200, response.text
        return [row["id"] for row in response.json()["data"] if row["id"] in both]

    best_first = sorted(both, key=lambda job: -accuracy[job])
    assert order(sort="-validation.accuracy") == best_first
    assert order(sort="validation.accuracy") == best_first[::-1]
    # every job in order of the metric, those without it (no validation dataset, no model)
    # last
    rows = api.get("/api/v1/jobs", params={"sort": "-validation.accuracy",
                                           "limit": 1000}).json()["data"]

    def accuracy_of(row) -> float | None:
        if row["model_id"] is None:
            return None
        validation = api.get(f"/api/v1/models/{row['model_id']}").json()["validation"]
        return None if validation is None else validation["accuracy"]

    values = [accuracy_of(row) for row in rows]
    known = [value for value in values if value is not None]
    assert values[:len(known)] == known == sorted(known, reverse=True)
    middle = (accuracy[first["id"]] + accuracy[second["id"]]) / 2
    assert order(min=f"validation.accuracy:{middle}") == best_first[:1]
    assert order(max=f"validation.accuracy:{middle}") == best_first[1:]
    assert set(order(sort="training_seconds")) == both
    assert set(order(sort="-objective", min="iterations:1")) == both


@pytest.mark.parametrize("params", [{"sort": "-validation.nothing"}, {"sort": "params.C"},
                                    {"min": "validation.accuracy"},
                                    {"max": "objective:nan"}])
def test_an_unknown_metric_is_a_422(api, params):
    response = api.get("/api/v1/jobs", params=params)
    assert response.status_code == 422, response.text
