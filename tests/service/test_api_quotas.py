"""Storage quotas per owner (issue 49, :mod:`app.quotas`): the bytes of an owner's datasets and
models are bounded by ``SVMSVC_MAX_DATASET_BYTES_PER_OWNER`` and
``SVMSVC_MAX_MODEL_BYTES_PER_OWNER``, checked at the upload, at the job's admission (from the
model's shape where it is known) and at the model's write in the worker; what is refused is
not stored, and ``GET /usage`` shows an owner's usage against each limit.

Each test runs its own in-process service with small quotas (the owners of ``conftest``'s
keys: ``tester``, ``alice``, ``bob``)."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import API_KEY_ENTRIES, API_KEYS, TENANT_KEYS, service_settings
from fastapi.testclient import TestClient
from servicetools import (
    LONG_PARAMS,
    QUICK_PARAMS,
    create_job,
    random_svmlight,
    uploaded_id,
    wait_job,
)
from shared_data import data_path

from app.main import create_app

ALICE = {"X-API-Key": TENANT_KEYS["alice"]}
ALICE_READ = {"X-API-Key": TENANT_KEYS["alice-read"]}
BOB = {"X-API-Key": TENANT_KEYS["bob"]}
ADMIN = {"X-API-Key": API_KEYS["admin"]}

DATASET_SETTING = "SVMSVC_MAX_DATASET_BYTES_PER_OWNER"
MODEL_SETTING = "SVMSVC_MAX_MODEL_BYTES_PER_OWNER"


def service(backend, directory, **quotas) -> TestClient:
    settings = service_settings(directory, backend, api_keys=API_KEY_ENTRIES, **quotas)
    return TestClient(create_app(settings), raise_server_exceptions=False, headers=ADMIN)


def post_upload(client, headers: dict, content: bytes):
    files = {"file": ("data.svm", io.BytesIO(content), "application/octet-stream")}
    return client.post("/api/v1/datasets", files=files, headers=headers)


def usage(client, headers: dict, **params) -> dict:
    response = client.get("/api/v1/usage", headers=headers, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_an_upload_past_the_owners_dataset_quota_is_refused_and_not_stored(backend, tmp_path):
    quota = 3500  # a 20-row upload stores about 1.7 kB of arrays, a 30-row one about 2.5 kB
    with service(backend, tmp_path / "data", max_dataset_bytes_per_owner=quota) as client:
        first = post_upload(client, ALICE, random_svmlight(n_rows=20, seed=49001))
        assert first.status_code == 201, first.text
        before = usage(client, ALICE)["datasets"]
        assert before == {"count": 1, "bytes": first.json()["stored_bytes"],
                          "limit_bytes": quota, "setting": DATASET_SETTING}
        large = post_upload(client, ALICE, random_svmlight(n_rows=30, seed=49002))
        assert large.status_code == 413, large.text
        problem = large.json()
        assert problem["type"] == "urn:svmsvc:problem:storage-quota-exceeded"
        assert problem["setting"] == DATASET_SETTING and DATASET_SETTING in problem["detail"]
        assert usage(client, ALICE)["datasets"] == before  # nothing stored
        listed = client.get("/api/v1/datasets", headers=ALICE).json()
        assert listed["count"] == 1
        # the same content again is the dataset already stored, not more bytes
        again = post_upload(client, ALICE, random_svmlight(n_rows=20, seed=49001))
        assert again.status_code == 200
        # another owner has a quota of its own: the same file fits in it
        assert post_upload(client, BOB, random_svmlight(n_rows=30, seed=49002)).status_code == 201


def test_an_owner_at_its_dataset_quota_is_refused_before_the_body_is_read(backend, tmp_path):
    """Over its quota (here: lowered by the operator under what the owner stores), an upload
    is refused before its body is read: a malformed file is a 413, not the parser's 422."""
    settings = service_settings(tmp_path / "data", backend, api_keys=API_KEY_ENTRIES)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        stored = post_upload(client, ALICE, random_svmlight(n_rows=20, seed=49003))
        assert stored.status_code == 201, stored.text
    lowered = settings.model_copy(update={"max_dataset_bytes_per_owner": 100})
    with TestClient(create_app(lowered), raise_server_exceptions=False) as client:
        refused = post_upload(client, ALICE, b"1 x:y\n")
        assert refused.status_code == 413, refused.text
        assert refused.json()["setting"] == DATASET_SETTING
        assert post_upload(client, BOB, b"1 x:y\n").status_code == 422  # bob: not at quota
        assert usage(client, ALICE)["datasets"]["count"] == 1


def test_a_job_whose_linear_model_would_pass_the_owners_model_quota_is_refused(
        backend, tmp_path):
    """A linear model's size is known at admission: 8 bytes a weight (the issue's 20-byte
    upload with feature index 16777216 would store 134 MB)."""
    quota = 50_000
    with service(backend, tmp_path / "data", max_model_bytes_per_owner=quota) as client:
        wide = post_upload(client, ALICE, b"1 10000:1\n-1 1:1\n")  # 10,001 weights: 80 kB
        assert wide.status_code == 201, wide.text
        refused = client.post("/api/v1/jobs", headers=ALICE, json={
            "dataset_id": wide.json()["id"], "params": {"solver": "dual_cd"}})
        assert refused.status_code == 413, refused.text
        assert refused.json()["setting"] == MODEL_SETTING
        assert "80008" in refused.json()["detail"]  # the model's bytes, as admitted
        assert client.get("/api/v1/jobs", headers=ALICE).json()["count"] == 0


def test_jobs_in_flight_reserve_their_models_bytes_so_many_at_once_cannot_pass_the_quota(
        backend, tmp_path):
    """Each job admitted reserves its model's bytes (from its shape) until it finishes: eight
    jobs of an 80,008-byte model sent at once against a 200,000-byte quota, while the one
    worker is busy with another owner's job, are two admitted and six refused naming the
    setting, not eight admitted on the models stored so far (none)."""
    quota, model = 200_000, 80_008
    with service(backend, tmp_path / "data", max_model_bytes_per_owner=quota) as client:
        a9a = uploaded_id(client, data_path("a9a"))  # the admin's owner, "tester"
        blocker = create_job(client, a9a, LONG_PARAMS)["id"]
        wide = post_upload(client, ALICE, b"1 10000:1\n-1 1:1\n").json()["id"]
        wait_job(client, blocker, until=lambda j: j["status"] == "running")

        def admit(_):
            return client.post("/api/v1/jobs", headers=ALICE, json={
                "dataset_id": wide, "params": {"solver": "dual_cd"}})

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(admit, range(8)))
        assert sorted(a.status_code for a in answers) == [202] * 2 + [413] * 6, \
            [a.text for a in answers]
        refusal = next(a.json() for a in answers if a.status_code == 413)
        assert refusal["setting"] == MODEL_SETTING and MODEL_SETTING in refusal["detail"]
        assert f"{2 * model} of them reserved" in refusal["detail"], refusal
        assert usage(client, ALICE)["jobs"]["reserved_model_bytes"] == 2 * model
        assert client.get("/api/v1/jobs", headers=ALICE).json()["count"] == 2  # none stored
        assert client.post(f"/api/v1/jobs/{blocker}/cancel").status_code == 202
        for admitted in (a.json()["id"] for a in answers if a.status_code == 202):
            assert wait_job(client, admitted)["status"] == "succeeded"
        after = usage(client, ALICE)  # the reservations ended with the jobs
        assert after["jobs"]["reserved_model_bytes"] == 0
        assert after["models"]["count"] == 2 and after["models"]["bytes"] <= quota


def test_a_model_that_would_pass_the_quota_when_written_fails_its_job_unstored(
        backend, tmp_path):
    """The size known at admission is the weights'; the archive holds more (its metadata):
    past the quota at the write, the job fails with the reason and nothing is stored."""
    quota = 1024  # the weights of a 5-feature model pass, its archive (a few kB) does not
    with service(backend, tmp_path / "data", max_model_bytes_per_owner=quota) as client:
        dataset = post_upload(client, ALICE, random_svmlight(n_rows=40, seed=49004)).json()
        created = client.post("/api/v1/jobs", headers=ALICE, json={
            "dataset_id": dataset["id"], "params": QUICK_PARAMS})
        assert created.status_code == 202, created.text
        job = wait_job(client, created.json()["id"])  # read with the admin key
        assert job["status"] == "failed", job
        assert MODEL_SETTING in job["error"] and "not stored" in job["error"]
        assert job["model_id"] is None
        assert usage(client, ALICE)["models"] == {"count": 0, "bytes": 0, "limit_bytes": quota,
                                                  "setting": MODEL_SETTING}


@pytest.mark.parametrize("quotas", [{}, {"max_dataset_bytes_per_owner": 0}])
def test_usage_is_the_callers_owners_and_an_admin_may_ask_for_any(backend, tmp_path, quotas):
    with service(backend, tmp_path / "data", **quotas) as client:
        dataset = post_upload(client, ALICE, random_svmlight(n_rows=30, seed=49005)).json()
        mine = usage(client, ALICE_READ)  # a read key of alice: alice's
        assert mine["owner"] == "alice"
        assert mine["datasets"]["count"] == 1
        assert mine["datasets"]["bytes"] == dataset["stored_bytes"]
        limit = quotas.get("max_dataset_bytes_per_owner", 16 * 2**30) or None
        assert mine["datasets"]["limit_bytes"] == limit
        assert mine["jobs"] == {"queued": 0, "running": 0, "reserved_model_bytes": 0,
                                "limit_queued": 100,
                                "setting": "SVMSVC_MAX_QUEUED_JOBS_PER_KEY"}
        bobs = usage(client, BOB)
        assert bobs["owner"] == "bob" and bobs["datasets"]["count"] == 0
        assert usage(client, ALICE, owner="alice")["datasets"]["count"] == 1
        other = client.get("/api/v1/usage", headers=BOB, params={"owner": "alice"})
        assert other.status_code == 403 and "alice" not in other.text
        assert usage(client, ADMIN, owner="alice") == mine
        assert usage(client, ADMIN)["owner"] == "tester"
