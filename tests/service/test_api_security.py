"""API keys: every route but the probes needs one of a sufficient scope, with the error model,
and the OpenAPI spec declares the scheme."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from conftest import API_KEYS, TENANT_KEYS

from app.core.config import Settings
from app.core.security import ApiKeys, KeyConfigError, Scope, key_digest

PROBES = {"/healthz", "/readyz"}
TRAIN_ROUTES = {("POST", "/api/v1/datasets"), ("POST", "/api/v1/datasets/sharded"),
                ("POST", "/api/v1/jobs"), ("POST", "/api/v1/jobs/{job_id}/cancel"),
                ("PATCH", "/api/v1/jobs/{job_id}"), ("PATCH", "/api/v1/models/{model_id}"),
                ("POST", "/api/v1/jobs/predict"), ("GET", "/api/v1/webhook-secret"),
                ("POST", "/api/v1/webhook-secret"),
                ("PUT", "/api/v1/registry/{name}/aliases/{alias}"),
                ("DELETE", "/api/v1/registry/{name}/aliases/{alias}")}


def needed_scope(method: str, path: str) -> Scope:
    if (method, path) in TRAIN_ROUTES:
        return Scope.train
    if method == "DELETE" or path.startswith("/api/v1/api-keys"):
        return Scope.admin
    return Scope.read


def protected_routes(api) -> list[tuple[str, str, str]]:
    """(method, path template, URL with random ids) of every operation in the spec."""
    routes = []
    for path, methods in api.app.openapi()["paths"].items():
        if path not in PROBES:
            # a random id for each parameter (a registry version is a number: {version:int})
            url = re.sub(r"\{([a-z_]+)\}", lambda m: "1" if m.group(1) == "version"
                         else str(uuid.uuid4()), path)
            routes += [(method.upper(), path, url) for method in methods]
    return routes


def test_every_route_but_the_probes_needs_a_key_of_its_scope(api):
    routes = protected_routes(api)
    assert len(routes) >= 19
    for method, path, url in routes:
        for headers in ({"X-API-Key": ""}, {"X-API-Key": "not-a-key"}):
            response = api.request(method, url, headers=headers)
            assert response.status_code == 401, (method, path, headers)
            assert response.headers["www-authenticate"] == 'Bearer realm="svmsvc", X-API-Key'
            assert response.json()["detail"] in (
                "missing API key: send it in the X-API-Key header or as Authorization: "
                "Bearer <key>", "unknown API key")
        bearer = {"X-API-Key": "", "Authorization": "Bearer not-a-key"}
        assert api.request(method, url, headers=bearer).status_code == 401, (method, path)
        needed = needed_scope(method, path)
        for scope in Scope:
            # the key in its header, or as a bearer token (a generated client's way)
            headers = ({"X-API-Key": API_KEYS[scope.name]} if scope % 2 else
                       {"X-API-Key": "", "Authorization": f"Bearer {API_KEYS[scope.name]}"})
            response = api.request(method, url, headers=headers)
            if scope < needed:
                assert response.status_code == 403, (method, path, scope)
                assert response.json()["detail"] == (
                    f"this API key has scope {scope.name}; this needs {needed.name}")
            else:  # let through: the route itself answers (unknown ids, missing bodies)
                assert response.status_code not in (401, 403, 500), (method, path, scope)


OPEN_ROUTES = {"/healthz": "`/healthz`", "/readyz": "`/readyz`",
               "/openapi.json": "`/openapi.json`", "/docs": "`/docs`", "/redoc": "`/redoc`",
               "/ui/jobs": "`/ui/`", "/ui/static/js/common.js": "`/ui/`"}
"""The routes open with keys on, and how docs/service.md, Security, names each."""


@pytest.mark.parametrize("path", sorted(OPEN_ROUTES))
def test_the_open_routes_are_the_documented_ones(api, path):
    """The probes, the API's description and the dashboard's shells answer without a key (and
    the docs say so); every operation of the spec needs one (the test above)."""
    assert api.get(path, headers={"X-API-Key": ""}).status_code in (200, 503), path
    security = (Path(__file__).resolve().parents[2] / "docs" / "service.md").read_text()
    security = security[security.index("## Security"):security.index("## Endpoints")]
    assert OPEN_ROUTES[path] in security, path


def test_probes_need_no_key_and_metrics_need_one(api):
    assert api.get("/healthz", headers={"X-API-Key": ""}).status_code == 200
    assert api.get("/readyz", headers={"X-API-Key": ""}).status_code in (200, 503)
    assert api.get("/metrics", headers={"X-API-Key": ""}).status_code == 401
    response = api.get("/metrics", headers={"X-API-Key": API_KEYS["read"]})
    assert response.status_code == 200 and "svmsvc_http_requests_total" in response.text
    response = api.get("/metrics", headers={"X-API-Key": "",
                                            "Authorization": f"Bearer {API_KEYS['read']}"})
    assert response.status_code == 200


def test_the_spec_declares_the_key_scheme_on_every_protected_operation(api):
    spec = api.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["ApiKey"] == {
        "type": "apiKey", "in": "header", "name": "X-API-Key",
        "description": spec["components"]["securitySchemes"]["ApiKey"]["description"]}
    assert spec["components"]["securitySchemes"]["Bearer"] == {
        "type": "http", "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["Bearer"]["description"]}
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            if path in PROBES:
                assert "security" not in operation
            else:
                # either scheme will do (two requirement objects: OR)
                assert operation["security"] == [{"ApiKey": []}, {"Bearer": []}], (method, path)
                assert {"401", "403"} <= set(operation["responses"]), (method, path)


def test_keys_from_the_environment_and_a_file_are_kept_hashed(tmp_path):
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"# operators\nadmin:{'a' * 8}\n\ntrain:sha256:{key_digest('t-key')}\n")
    keys = ApiKeys.from_settings(Settings(api_keys="read:r-key, train:r-key",
                                          api_keys_file=keys_file))
    assert len(keys) == 3
    assert keys.principal_of("r-key").scope == Scope.train  # the higher of a key given twice
    assert keys.principal_of("t-key").scope == Scope.train
    assert keys.principal_of("a" * 8).scope == Scope.admin
    assert keys.principal_of("unknown") is None and keys.principal_of(None) is None
    assert "r-key" not in repr(vars(keys))
    assert not ApiKeys.from_settings(Settings()).enabled


@pytest.mark.parametrize("value, fragment", [
    ("reader:k", "unknown scope 'reader'"),
    ("nokey", "expected scope:key"),
])
def test_malformed_keys_are_refused(value, fragment):
    with pytest.raises(KeyConfigError, match=fragment):
        ApiKeys.from_settings(Settings(api_keys=value))


def test_serve_refuses_to_listen_open_beyond_loopback():
    from app.commands import open_service_refusal

    assert open_service_refusal(Settings()) is None  # 127.0.0.1 by default
    assert "refusing to listen on 0.0.0.0" in open_service_refusal(Settings(host="0.0.0.0"))
    assert open_service_refusal(Settings(host="0.0.0.0", allow_open=True)) is None
    assert open_service_refusal(Settings(host="0.0.0.0", api_keys="read:k")) is None


def test_queued_jobs_are_limited_per_owner(api):
    from app.db.models import Job, JobStatus

    sessions = api.app.state.sessions
    limit = api.app.state.settings.max_queued_jobs_per_key
    owner = "tester"  # the train key's owner (conftest)
    dataset_id = api.post("/api/v1/datasets",
                          files={"file": ("q.svm", b"1 1:1\n-1 2:1\n")}).json()["id"]
    with sessions.write() as session:  # a backlog for the train key, as if the pool were busy
        # (more than the quota: the worker may take a few of them meanwhile)
        session.add_all([Job(dataset_id=uuid.UUID(dataset_id), solver="mfn",
                             params={"solver": "mfn"}, status=JobStatus.queued, owner=owner)
                         for _ in range(limit + 100)])
        session.commit()
    try:
        body = {"dataset_id": dataset_id, "params": {"solver": "mfn"}}
        refused = api.post("/api/v1/jobs", json=body, headers={"X-API-Key": API_KEYS["train"]})
        assert refused.status_code == 429
        assert refused.json()["detail"].endswith(
            f"jobs) exceeds the limit of {limit} jobs set by SVMSVC_MAX_QUEUED_JOBS_PER_KEY; "
            f"the operator can raise that setting")
        # another owner has its own quota
        bobs = api.post("/api/v1/datasets", files={"file": ("q.svm", b"1 1:1\n-1 2:1\n")},
                        headers={"X-API-Key": TENANT_KEYS["bob"]}).json()["id"]
        other = api.post("/api/v1/jobs", json={**body, "dataset_id": bobs},
                         headers={"X-API-Key": TENANT_KEYS["bob"]})
        assert other.status_code == 202
        api.post(f"/api/v1/jobs/{other.json()['id']}/cancel")
    finally:
        with sessions.write() as session:
            session.query(Job).filter(Job.owner == owner, Job.status == JobStatus.queued) \
                .delete()
            session.commit()


def test_cors_is_a_setting():
    from fastapi.testclient import TestClient

    from app.main import create_app

    preflight = {"Origin": "https://ui.example.org", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "X-API-Key"}
    allowed = TestClient(create_app(Settings(data_dir="unused",
                                             cors_origins="https://ui.example.org")))
    response = allowed.options("/api/v1/jobs", headers=preflight)  # answered before any route
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://ui.example.org"
    assert "x-api-key" in response.headers["access-control-allow-headers"].lower()
    closed = TestClient(create_app(Settings(data_dir="unused")))
    preflighted = closed.options("/api/v1/jobs", headers=preflight)
    assert "access-control-allow-origin" not in preflighted.headers
