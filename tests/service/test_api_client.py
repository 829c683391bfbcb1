"""A Python client generated from the live spec (openapi-python-client) drives the workflow:
upload -> train -> poll -> log -> predict -> evaluate, without hand edits."""

from __future__ import annotations

import importlib
import io
import json
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import SQLiteBackend
from servicetools import FINISHED, PATIENCE_S, ServerProcess, data_path

pytestmark = [pytest.mark.slow, pytest.mark.embedded_database_only]

PACKAGE = "svmsvc_client"


def generator() -> str:
    found = Path(sys.executable).parent / "openapi-python-client"
    if found.exists():
        return str(found)
    path = shutil.which("openapi-python-client")
    if path is None:
        pytest.fail("openapi-python-client is not installed (it is a dev dependency)")
    return path


@pytest.fixture
def client_package(live_server, tmp_path):
    """Generate the client from ``GET /openapi.json`` and import it."""
    yield from _generated(live_server.client.get("/openapi.json").json(), tmp_path)


def _generated(spec_json: dict, tmp_path: Path):
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(spec_json))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"package_name_override": PACKAGE, "post_hooks": []}))
    subprocess.run(
        [generator(), "generate", "--path", str(spec), "--output-path",
         str(tmp_path / PACKAGE), "--meta", "none", "--config", str(config),
         "--fail-on-warning"],
        check=True, capture_output=True, text=True)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _finished(jobs_get, client, job, what: str):
    """``job`` polled through the generated client's ``jobs_get`` until it has finished
    (a ceiling of PATIENCE_S, not a timing)."""
    deadline = time.monotonic() + PATIENCE_S
    while job.status.value not in FINISHED:
        assert time.monotonic() < deadline, f"{what} did not finish"
        time.sleep(0.1)
        job = jobs_get.sync(client=client, job_id=job.id)
    return job


def test_generated_client_runs_the_whole_workflow(live_server, client_package):
    models = importlib.import_module(f"{PACKAGE}.models")
    types = importlib.import_module(f"{PACKAGE}.types")
    datasets_upload = importlib.import_module(f"{PACKAGE}.api.datasets.datasets_upload")
    jobs_create = importlib.import_module(f"{PACKAGE}.api.jobs.jobs_create")
    jobs_get = importlib.import_module(f"{PACKAGE}.api.jobs.jobs_get")
    jobs_log = importlib.import_module(f"{PACKAGE}.api.jobs.jobs_log")
    models_get = importlib.import_module(f"{PACKAGE}.api.models.models_get")
    models_predict = importlib.import_module(f"{PACKAGE}.api.models.models_predict")
    predict_batch = importlib.import_module(f"{PACKAGE}.api.models.models_predict_batch")
    models_evaluate = importlib.import_module(f"{PACKAGE}.api.models.models_evaluate")
    models_evaluations = importlib.import_module(f"{PACKAGE}.api.models.models_evaluations")
    solvers_list = importlib.import_module(f"{PACKAGE}.api.solvers.solvers_list")

    path = data_path("heart_scale")
    with client_package.Client(base_url=live_server.url, timeout=PATIENCE_S) as client:
        assert "mfn" in [s.name for s in solvers_list.sync(client=client).data]

        body = models.DatasetUpload(file=types.File(payload=io.BytesIO(path.read_bytes()),
                                                    file_name="heart_scale"))
        dataset = datasets_upload.sync(client=client, body=body)
        assert isinstance(dataset, models.DatasetPublic)
        assert dataset.n_samples == 270

        params = models.MFNParams.from_dict({"solver": "mfn", "C": 2.0})
        job = jobs_create.sync(client=client, body=models.JobCreate(
            dataset_id=dataset.id, params=params, time_limit_s=60.0))
        assert isinstance(job, models.JobPublic)

        job = _finished(jobs_get, client, job, "the job")
        assert job.status == models.JobStatus.SUCCEEDED

        log = jobs_log.sync(client=client, job_id=job.id, after=0)
        assert isinstance(log, models.JobLogPublic)
        assert [r.iteration for r in log.data] == list(range(1, log.count + 1))

        model = models_get.sync(client=client, model_id=job.model_id)
        assert model.classes == [-1.0, 1.0] and model.params["C"] == 2.0

        single = models_predict.sync(client=client, model_id=model.id, x="1:0.7 3:1")
        assert single.label in (-1.0, 1.0) and len(single.decision_values) == 1

        rows = models.PredictBatchRequest(rows=[
            models.PredictBatchRequestRowsItem.from_dict({"1": 0.7, "3": 1.0}),
            models.PredictBatchRequestRowsItem.from_dict({}),
        ])
        batch = predict_batch.sync(client=client, model_id=model.id, body=rows)
        assert batch.count == 2
        assert batch.data[0].decision_values == pytest.approx(single.decision_values)

        evaluation = models_evaluate.sync(
            client=client, model_id=model.id,
            body=models.EvaluateRequest(dataset_id=dataset.id))
        assert isinstance(evaluation, models.StoredEvaluationPublic)
        assert evaluation.n_samples == 270 and 0.8 < evaluation.accuracy <= 1.0
        stored = models_evaluations.sync(client=client, model_id=model.id)
        assert stored.count == 1 and stored.data[0].id == evaluation.id

        missing = jobs_get.sync(client=client, job_id=uuid.uuid4())
        assert isinstance(missing, models.Problem)
        assert missing.status == 404 and missing.detail.endswith("not found")

        # a regression (issue 47): the task, epsilon, its real-valued predictions and errors
        housing = data_path("regression/housing_scale")
        regression = datasets_upload.sync(client=client, body=models.DatasetUpload(
            file=types.File(payload=io.BytesIO(housing.read_bytes()), file_name="housing")))
        assert regression.label_summary.distinct == 229
        svr = models.DualCDParams.from_dict({"solver": "dual_cd", "task": "regression",
                                             "loss": "epsilon_insensitive", "epsilon": 0.5})
        job = jobs_create.sync(client=client, body=models.JobCreate(
            dataset_id=regression.id, params=svr, time_limit_s=60.0))
        job = _finished(jobs_get, client, job, "the regression job")
        assert job.status == models.JobStatus.SUCCEEDED
        model = models_get.sync(client=client, model_id=job.model_id)
        assert model.task.value == "regression" and model.params["epsilon"] == 0.5
        single = models_predict.sync(client=client, model_id=model.id, x="1:0.7 3:1")
        assert single.value == single.label == single.decision_values[0]
        evaluation = models_evaluate.sync(
            client=client, model_id=model.id,
            body=models.EvaluateRequest(dataset_id=regression.id))
        assert evaluation.task.value == "regression" and evaluation.mean_squared_error > 0


def test_a_generated_client_authenticates_with_its_token_as_it_is(tmp_path):
    """With keys on, the generated ``AuthenticatedClient(token=key)`` (it sends
    ``Authorization: Bearer <key>``) is let in with no other setting; no key is a 401 problem."""
    key = "generated-client-read-key"
    server = ServerProcess(tmp_path / "keyed", SQLiteBackend().database_url(tmp_path / "keyed"),
                           workers=1, api_keys=f"read:{key}")
    try:
        server.wait_ready()
        spec = server.client.get("/openapi.json", headers={"X-API-Key": key}).json()
        for package in _generated(spec, tmp_path):
            solvers_list = importlib.import_module(f"{PACKAGE}.api.solvers.solvers_list")
            models = importlib.import_module(f"{PACKAGE}.models")
            with package.AuthenticatedClient(base_url=server.url, token=key,
                                             timeout=PATIENCE_S) as client:
                assert "mfn" in [s.name for s in solvers_list.sync(client=client).data]
            with package.AuthenticatedClient(base_url=server.url, token="wrong",
                                             timeout=PATIENCE_S) as client:
                refused = solvers_list.sync(client=client)
                assert isinstance(refused, models.Problem) and refused.status == 401
    finally:
        server.stop()


def test_generated_client_drives_the_registry(live_server, client_package):
    """The registry through the generated client: a named job's version, an alias moved,
    predict by name@alias and by name/version, the name with its history."""
    models = importlib.import_module(f"{PACKAGE}.models")
    types = importlib.import_module(f"{PACKAGE}.types")
    datasets_upload = importlib.import_module(f"{PACKAGE}.api.datasets.datasets_upload")
    jobs_create = importlib.import_module(f"{PACKAGE}.api.jobs.jobs_create")
    jobs_get = importlib.import_module(f"{PACKAGE}.api.jobs.jobs_get")
    registry = {name: importlib.import_module(f"{PACKAGE}.api.registry.registry_{name}")
                for name in ("list", "get", "move_alias", "predict_alias", "predict_version",
                             "delete_version")}

    name = f"client-{uuid.uuid4().hex[:6]}"
    path = data_path("heart_scale")
    with client_package.Client(base_url=live_server.url, timeout=PATIENCE_S) as client:
        body = models.DatasetUpload(file=types.File(payload=io.BytesIO(path.read_bytes()),
                                                    file_name="heart_scale"))
        dataset = datasets_upload.sync(client=client, body=body)
        params = models.MFNParams.from_dict({"solver": "mfn", "C": 2.0})
        job = jobs_create.sync(client=client, body=models.JobCreate(
            dataset_id=dataset.id, params=params, model_name=name))
        job = _finished(jobs_get, client, job, "the job")
        assert job.model_name == name and job.model_version == 1

        alias = registry["move_alias"].sync(client=client, name=name, alias="production",
                                            body=models.AliasMove(version=1))
        assert isinstance(alias, models.AliasPublic) and alias.model_id == job.model_id
        by_alias = registry["predict_alias"].sync(client=client, name=name, alias="production",
                                                  x="1:0.7 3:1")
        by_version = registry["predict_version"].sync(client=client, name=name, version=1,
                                                      x="1:0.7 3:1")
        assert by_alias.to_dict() == by_version.to_dict()
        assert name in [entry.name for entry in registry["list"].sync(client=client).data]
        registered = registry["get"].sync(client=client, name=name)
        assert [v.version for v in registered.versions] == [1]
        assert registered.aliases[0].history[0].to_version == 1
        refused = registry["delete_version"].sync_detailed(client=client, name=name, version=1)
        assert refused.status_code == 409
