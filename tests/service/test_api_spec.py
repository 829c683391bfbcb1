"""The OpenAPI contract, error bodies, probes, metrics and the solver listing."""

from __future__ import annotations

import pytest
from servicetools import QUICK_PARAMS, create_job, data_path, uploaded_id, wait_job

import solvers
from app.core.config import Settings
from app.main import create_app

OPERATION_IDS = {
    ("post", "/api/v1/datasets"): "datasets-upload",
    ("post", "/api/v1/datasets/sharded"): "datasets-register_sharded",
    ("get", "/api/v1/datasets"): "datasets-list",
    ("get", "/api/v1/datasets/{dataset_id}"): "datasets-get",
    ("delete", "/api/v1/datasets/{dataset_id}"): "datasets-delete",
    ("post", "/api/v1/jobs"): "jobs-create",
    ("get", "/api/v1/jobs"): "jobs-list",
    ("get", "/api/v1/jobs/{job_id}"): "jobs-get",
    ("patch", "/api/v1/jobs/{job_id}"): "jobs-update",
    ("post", "/api/v1/jobs/{job_id}/cancel"): "jobs-cancel",
    ("delete", "/api/v1/jobs/{job_id}"): "jobs-delete",
    ("get", "/api/v1/jobs/{job_id}/log"): "jobs-log",
    ("get", "/api/v1/jobs/{job_id}/log/stream"): "jobs-log-stream",
    ("post", "/api/v1/jobs/predict"): "jobs-create_prediction",
    ("get", "/api/v1/jobs/{job_id}/predictions"): "jobs-predictions",
    ("get", "/api/v1/jobs/{job_id}/deliveries"): "jobs-deliveries",
    ("get", "/api/v1/webhook-secret"): "webhooks-get_secret",
    ("post", "/api/v1/webhook-secret"): "webhooks-rotate_secret",
    ("get", "/api/v1/models"): "models-list",
    ("get", "/api/v1/models/{model_id}"): "models-get",
    ("patch", "/api/v1/models/{model_id}"): "models-update",
    ("delete", "/api/v1/models/{model_id}"): "models-delete",
    ("get", "/api/v1/models/{model_id}/download"): "models-download",
    ("get", "/api/v1/models/{model_id}/predict"): "models-predict",
    ("post", "/api/v1/models/{model_id}/predict"): "models-predict-batch",
    ("post", "/api/v1/models/{model_id}/evaluate"): "models-evaluate",
    ("get", "/api/v1/models/{model_id}/evaluations"): "models-evaluations",
    ("post", "/api/v1/api-keys"): "api-keys-create",
    ("get", "/api/v1/api-keys"): "api-keys-list",
    ("delete", "/api/v1/api-keys/{key_id}"): "api-keys-delete",
    ("get", "/api/v1/registry"): "registry-list",
    ("get", "/api/v1/registry/{name}"): "registry-get",
    ("get", "/api/v1/registry/{name}/{version}"): "registry-get-version",
    ("delete", "/api/v1/registry/{name}/{version}"): "registry-delete-version",
    ("put", "/api/v1/registry/{name}/aliases/{alias}"): "registry-move-alias",
    ("delete", "/api/v1/registry/{name}/aliases/{alias}"): "registry-delete-alias",
    ("get", "/api/v1/registry/{name}@{alias}/predict"): "registry-predict-alias",
    ("post", "/api/v1/registry/{name}@{alias}/predict"): "registry-predict-batch-alias",
    ("post", "/api/v1/registry/{name}@{alias}/evaluate"): "registry-evaluate-alias",
    ("get", "/api/v1/registry/{name}/{version}/predict"): "registry-predict-version",
    ("post", "/api/v1/registry/{name}/{version}/predict"): "registry-predict-batch-version",
    ("post", "/api/v1/registry/{name}/{version}/evaluate"): "registry-evaluate-version",
    ("get", "/api/v1/logs"): "jobs-logs",
    ("get", "/api/v1/solvers"): "solvers-list",
    ("post", "/api/v1/solvers/pose"): "solvers-pose",
    ("get", "/api/v1/usage"): "usage-get",
    ("get", "/healthz"): "health-live",
    ("get", "/readyz"): "health-ready",
}


@pytest.fixture(scope="module")
def spec():
    return create_app(Settings(data_dir="unused")).openapi()


def operations(spec):
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            yield (method, path), operation


def test_operation_ids_are_tag_dash_name(spec):
    found = {key: op["operationId"] for key, op in operations(spec)}
    assert found == OPERATION_IDS
    for (_, _), operation in operations(spec):
        assert len(operation["tags"]) == 1
        assert operation["operationId"].startswith(operation["tags"][0] + "-")


def test_the_download_formats_are_in_the_spec(spec):
    """The formats a model downloads in, ONNX among them, as an enum a generated client
    offers, the file a binary body."""
    download = spec["paths"]["/api/v1/models/{model_id}/download"]["get"]
    [parameter] = [p for p in download["parameters"] if p["name"] == "format"]
    assert parameter["schema"]["$ref"] == "#/components/schemas/DownloadFormat"
    assert spec["components"]["schemas"]["DownloadFormat"]["enum"] == [
        "npz", "liblinear", "libsvm", "onnx"]
    assert download["responses"]["200"]["content"]["application/octet-stream"]["schema"] == {
        "type": "string", "format": "binary"}


def test_errors_are_typed_in_the_spec(spec):
    """Every error status of every operation is an RFC 9457 problem, with the extension
    members declared, so generated clients type them."""
    problem_ref = {"$ref": "#/components/schemas/Problem"}
    statuses = set()
    for (_, path), operation in operations(spec):
        for status, response in operation["responses"].items():
            if status[0] in "45" and not (path == "/readyz" and status == "503"):
                statuses.add(status)
                assert response["content"] == {"application/problem+json": {
                    "schema": problem_ref}}, (path, status)
    assert statuses == {"400", "401", "403", "404", "408", "409", "413", "422", "429", "503"}
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    problem = spec["components"]["schemas"]["Problem"]
    assert set(problem["properties"]) == {"type", "title", "status", "detail", "instance",
                                          "line", "token", "errors", "setting"}
    assert set(problem["required"]) == {"title", "status", "detail"}


def test_job_parameters_are_a_discriminated_union_of_the_registry(spec):
    params = spec["components"]["schemas"]["JobCreate"]["properties"]["params"]
    names = {s.name: s.params_model.__name__ for s in solvers.list_solvers()}
    assert params["discriminator"]["propertyName"] == "solver"
    assert params["discriminator"]["mapping"] == {
        name: f"#/components/schemas/{model}" for name, model in names.items()}
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in params["oneOf"]] == sorted(
        names.values(), key=lambda model: [k for k, v in names.items() if v == model][0])


def test_request_bodies_of_uploads_and_batches(spec):
    schemas = spec["components"]["schemas"]
    upload = spec["paths"]["/api/v1/datasets"]["post"]["requestBody"]["content"]
    assert upload["multipart/form-data"]["schema"] == {
        "$ref": "#/components/schemas/DatasetUpload"}
    assert schemas["DatasetUpload"]["properties"]["file"]["format"] == "binary"
    batch = spec["paths"]["/api/v1/models/{model_id}/predict"]["post"]["requestBody"]["content"]
    assert set(batch) == {"application/json", "application/octet-stream"}
    assert "PredictBatchRequest" in schemas


def test_solvers_lists_the_registry(api):
    body = api.get("/api/v1/solvers").json()
    assert body["count"] == len(solvers.list_solvers())
    mfn = next(s for s in body["data"] if s["name"] == "mfn")
    assert "squared_hinge" in mfn["losses"] and "binary" in mfn["tasks"]
    assert mfn["params_schema"]["properties"]["C"]["default"] == 1.0
    assert {"task": "ordinal", "loss": "squared_hinge", "bias": "regularized"} in mfn["solves"]
    assert mfn["solves"] == solvers.get_solver("mfn").solves.as_list()
    warm = {s["name"]: s["warm_start_tasks"] for s in body["data"]}
    assert warm["mfn"] == ["binary", "ovr", "ordinal"]
    assert warm["interior_point"] == ["binary", "ovr"]
    # auto has no run of its own: a search resolves it to one solver and warm-starts that one
    assert warm["auto"] == []
    assert warm["cutting_plane"] == ["binary", "ovr", "crammer_singer"]


def test_pose_gives_every_solver_the_parameters_of_one_problem(api):
    """The library's rule (the one auto uses) served: the parameters that pose one problem to
    each solver at one tol, or why a solver does not solve it."""
    # a job's `problem`, as GET /jobs/{id} gives it (with its dataset: the race posts it so)
    problem = {"dataset": "6bc76250-513e-4ba5-a470-d1d05b43a751", "task": "classification",
               "multiclass": "ovr", "loss": "hinge", "C": 2.0, "bias": "regularized",
               "bias_scale": 1.0}
    body = api.post("/api/v1/solvers/pose", json={"problem": problem, "tol": 1e-4}).json()
    posed = {entry["solver"]: entry for entry in body["data"]}
    assert "auto" not in posed and body["count"] == len(posed)
    for name in ("mfn", "alm", "interior_point", "cutting_plane"):
        params = posed[name]["params"]
        assert params["loss"] == "hinge" and params["C"] == 2.0 and params["tol"] == 1e-4, name
    assert posed["alm"]["params"]["p"] == 1.0  # alm's lp at p = 1
    assert posed["lssvm"]["params"] is None and "does not solve" in posed["lssvm"]["reason"]
    free = api.post("/api/v1/solvers/pose", json={"problem": {**problem, "bias": "free"}}).json()
    refusal = next(e for e in free["data"] if e["solver"] == "cutting_plane")["reason"]
    assert "unbounded" in refusal
    missing = api.post("/api/v1/solvers/pose", json={"problem": {"loss": "hinge"}})
    assert missing.status_code == 422


def test_unknown_paths_and_methods_are_json_errors(api):
    response = api.get("/no/such/path")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json() == {"type": "about:blank", "title": "Not Found", "status": 404,
                               "detail": "Not Found", "instance": "/no/such/path"}
    response = api.put("/api/v1/datasets")
    assert response.status_code == 405
    assert response.json() == {"type": "about:blank", "title": "Method Not Allowed",
                               "status": 405, "detail": "Method Not Allowed",
                               "instance": "/api/v1/datasets"}


def test_validation_errors_list_every_problem(api):
    response = api.post("/api/v1/jobs", json={"params": {"solver": "mfn", "C": "lots"}})
    assert response.status_code == 422
    problem = response.json()
    assert problem["type"] == "urn:svmsvc:problem:invalid-request"
    locations = [tuple(e["loc"]) for e in problem["errors"]]
    assert ("body", "dataset_id") in locations
    assert ("body", "params", "mfn", "C") in locations
    assert "body.dataset_id: Field required" in problem["detail"]


def test_an_unexpected_error_is_a_500_without_traceback(api):
    def broken():
        raise RuntimeError("secret internals at /srv/app.py line 12")

    api.app.add_api_route("/test-broken", broken, tags=["test"])
    try:
        response = api.get("/test-broken")
    finally:
        api.app.router.routes.pop()
    assert response.status_code == 500
    assert response.json() == {"type": "urn:svmsvc:problem:internal-error",
                               "title": "Internal error", "status": 500,
                               "detail": "internal error", "instance": "/test-broken"}
    assert "secret" not in response.text and "Traceback" not in response.text


def test_probes(api):
    assert api.get("/healthz").json() == {"status": "ok"}
    dataset_id = uploaded_id(api, data_path("heart_scale"))
    wait_job(api, create_job(api, dataset_id, QUICK_PARAMS)["id"])  # a worker is ready
    ready = api.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready" and body["database"] and body["dispatcher"]
    assert len(body["workers"]) == 1 and body["workers"][0]["ready"]


def test_metrics(api):
    dataset_id = uploaded_id(api, data_path("heart_scale"))
    wait_job(api, create_job(api, dataset_id, QUICK_PARAMS)["id"])
    api.get(f"/api/v1/datasets/{dataset_id}")
    text = api.get("/metrics").text
    assert 'svmsvc_http_requests_total{method="GET",route="/api/v1/datasets/{dataset_id}",' \
           'status="200"}' in text
    assert "svmsvc_http_request_duration_seconds_bucket" in text
    assert 'svmsvc_jobs{status="succeeded"}' in text
    assert 'svmsvc_workers{state="idle"} 1.0' in text
    assert 'svmsvc_jobs_finished_total{status="succeeded"}' in text


def test_metrics_count_open_log_streams(api):
    """The gauges of live log streams follow the slots taken and given back (in all and per
    owner, a key shown only by a prefix of its digest)."""
    from app.core.principals import own_owner
    from app.core.security import key_digest

    streams = api.app.state.log_streams
    digest = key_digest("some-key")
    owners = [own_owner(digest), own_owner(digest), "client:10.0.0.7", "alice"]
    for owner in owners:
        streams.acquire(owner)
    try:
        text = api.get("/metrics").text
        assert "svmsvc_log_streams_open 4.0" in text
        assert (f'svmsvc_log_streams_open_by_owner{{owner="{own_owner(digest)}"}} 2.0'
                in text)
        assert 'svmsvc_log_streams_open_by_owner{owner="client:10.0.0.7"} 1.0' in text
        assert 'svmsvc_log_streams_open_by_owner{owner="alice"} 1.0' in text
        assert digest not in text and digest[:12] not in text
    finally:
        for owner in owners:
            streams.release(owner)
    text = api.get("/metrics").text
    assert "svmsvc_log_streams_open 0.0" in text
    assert "svmsvc_log_streams_open_by_owner{" not in text


def test_a_database_outage_is_a_503_with_retry_after(api):
    """Requests that reach a database that does not answer get a 503 and a retry hint (not a
    500 with a traceback); the service answers again once the database is back."""
    from app.db.session import Sessions, create_db_engine

    working = api.app.state.sessions
    unreachable = create_db_engine(
        "postgresql+psycopg://svmsvc@127.0.0.1:1/svmsvc?connect_timeout=2")
    api.app.state.sessions = Sessions(unreachable)
    try:
        for method, path in [("get", "/api/v1/datasets"), ("get", "/api/v1/jobs"),
                             ("post", "/api/v1/jobs")]:
            kwargs = {"json": {"dataset_id": "0" * 32, "params": {"solver": "mfn"}}} \
                if method == "post" else {}
            response = getattr(api, method)(path, **kwargs)
            assert response.status_code == 503, (path, response.text)
            assert response.headers["retry-after"] == "5"
            assert response.json() == {
                "type": "urn:svmsvc:problem:database-unavailable",
                "title": "Database unavailable", "status": 503,
                "detail": "the database is unavailable; retry in 5 s", "instance": path}
        assert api.get("/readyz").json()["database"] is False
    finally:
        api.app.state.sessions = working
        unreachable.dispose()
    assert api.get("/api/v1/datasets").status_code == 200


def test_a_dead_worker_is_never_shown_ready():
    """Regression: between its death and the dispatcher noticing it, /readyz listed a dead
    worker as ready."""
    from types import SimpleNamespace

    from app.jobs.executors.local import ProcessExecutor, _Worker
    from app.metrics import ServiceMetrics

    executor = ProcessExecutor(Settings(data_dir="unused"), metrics=ServiceMetrics())
    for index, alive in enumerate((True, False)):
        process = SimpleNamespace(pid=100 + index, is_alive=lambda alive=alive: alive)
        executor._workers.append(_Worker(index, process, connection=None, ready=True))
    assert [(w.alive, w.ready) for w in executor.snapshot()] == [(True, True), (False, False)]


def test_no_header_parameter_is_nullable(spec):
    """A header carries a value or is absent; it cannot carry a null.  The log stream's
    ``Last-Event-ID`` was "integer or null": the stateful schemathesis run sent the null as
    a header's text and the handler answered 422 to a request the spec allowed."""
    headers = [(path, parameter) for path, operations in spec["paths"].items()
               for operation in operations.values() if isinstance(operation, dict)
               for parameter in operation.get("parameters", []) if parameter["in"] == "header"]
    assert headers  # Last-Event-ID at least
    for path, parameter in headers:
        assert "anyOf" not in parameter["schema"] and parameter["schema"].get("type") != "null", \
            (path, parameter)

