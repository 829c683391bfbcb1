"""Sharded datasets through the service (issue 36): registered from shard paths that the Dask
workers parse where they are (``POST /api/v1/datasets/sharded``, nothing uploaded), trained
data-parallel on the Dask executor (``solvers.distributed``) with the job's records, progress
and cancel, the model stored and served like any other.  On a ``distributed.LocalCluster`` of
two worker processes; SQLite (``SVMSVC_SINGLE_MACHINE``) and PostgreSQL.

The equality with one machine is the library's (``tests/test_distributed.py``, 1e-9 on the
iterates); here, what the service adds: the model a job stores has the single-machine solve's
objective on the same rows to 1e-6 relative, and predicts as it does."""

from __future__ import annotations

import os
import signal

import pytest

distributed = pytest.importorskip(
    "distributed", reason="dask[distributed] is not installed (pip install 'svmsvc[dask]')")

from conftest import service_settings  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from servicetools import (  # noqa: E402
    FINISHED,
    LONG_PARAMS,
    create_job,
    data_path,
    full_log,
    wait_job,
)
from test_dask import LocalClusterProcesses, wait_ready  # noqa: E402

import solvers  # noqa: E402
from app.main import create_app  # noqa: E402
from solvers.distributed import split_svmlight  # noqa: E402

pytestmark = [pytest.mark.dask]

SHARDED = "/api/v1/datasets/sharded"
INVALID_SHARD = "urn:svmsvc:problem:invalid-shard"
INVALID_JOB = "urn:svmsvc:problem:invalid-job"


SHARDED_LONG_PARAMS = {**LONG_PARAMS, "linear_solver": "cgls", "max_cgls_iter": 100}
"""Never converges on a9a's shards: every Newton step is CGLS (Appendix A as written) at a rule
(13) below what floating point reaches, so each runs its 100 CG iterations, one round of the
partitions each.  (servicetools' LONG_PARAMS leave ``linear_solver`` to 'auto', which on a9a's
123 features factorizes the normal equations: since mfn runs one loop over local or partitioned
rows, the partitioned step is exact and the solve ended in a few Newton steps on an idle
machine, before the first poll saw its progress, 2026-12-07.)"""

SHARDED_MEDIUM_PARAMS = {**SHARDED_LONG_PARAMS, "max_iter": 30}
"""The same, ended by itermax after 30 Newton steps: a few seconds of rounds."""


@pytest.fixture(scope="module")
def cluster():
    instance = LocalClusterProcesses()
    yield instance
    instance.close()


@pytest.fixture(scope="module")
def shard_root(tmp_path_factory):
    """The directory the service allows shards in: heart_scale in 3 shards of unequal sizes
    (1:2:3 of its bytes), a9a in 2."""
    root = tmp_path_factory.mktemp("shards")
    split_svmlight(data_path("heart_scale"), root / "heart", fractions=[1, 2, 3])
    split_svmlight(data_path("a9a"), root / "a9a", n_shards=2)
    return root


def shards(root, name: str) -> list[str]:
    return sorted(str(path) for path in (root / name).iterdir())


@pytest.fixture(scope="module")
def service(cluster, backend, shard_root, tmp_path_factory):
    """An in-process service whose jobs run on ``cluster``, shards allowed in ``shard_root``."""
    directory = tmp_path_factory.mktemp(f"sharded-{backend.name}")
    settings = service_settings(directory, backend, executor="dask",
                                dask_scheduler=cluster.address, single_machine=True,
                                dask_threads_per_job=1, shard_roots=str(shard_root))
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        wait_ready(client)
        yield client


def register(client, paths: list[str], **fields):
    return client.post(SHARDED, json={"shards": paths, **fields})


@pytest.fixture(scope="module")
def heart(service, shard_root) -> str:
    response = register(service, shards(shard_root, "heart"), name="heart (3 shards)")
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_registration_stores_the_shards_without_reading_them(service, shard_root):
    paths = shards(shard_root, "heart")
    created = register(service, paths, n_features=13)
    assert created.status_code == 201, created.text
    body = created.json()
    assert created.headers["Location"] == f"/api/v1/datasets/{body['id']}"
    assert body["kind"] == "sharded" and body["shards"] == paths and body["n_shards"] == 3
    assert body["name"] == "heart_scale.0" and body["zero_based"] is False
    # nothing read yet: the statistics are the cluster's to find
    assert body["n_samples"] is None and body["class_counts"] is None
    assert body["scanned_at"] is None and body["n_features"] == 13
    assert body["upload_bytes"] == 0 and body["stored_bytes"] == 0
    again = register(service, paths, n_features=13)
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    listed = service.get("/api/v1/datasets").json()["data"]
    assert any(d["id"] == body["id"] and d["kind"] == "sharded" for d in listed)
    assert service.delete(f"/api/v1/datasets/{body['id']}").status_code == 204
    assert all(os.path.exists(p) for p in paths)  # the shards are not the service's


@pytest.mark.slow
@pytest.mark.parametrize("params", [{"solver": "mfn", "C": 1.0},
                                    {"solver": "cutting_plane", "method": "ocas", "C": 1.0},
                                    {"solver": "interior_point", "C": 1.0}],
                         ids=["mfn", "ocas", "interior_point"])
def test_a_sharded_job_trains_data_parallel_as_one_machine(service, heart, params):
    done = wait_job(service, create_job(service, heart, params)["id"])
    assert done["status"] == "succeeded", done
    local_data = solvers.read_svmlight(data_path("heart_scale"))
    local = solvers.train(local_data, solver=params["solver"],
                          params={k: v for k, v in params.items() if k != "solver"})
    model = service.get(f"/api/v1/models/{done['model_id']}").json()
    assert model["objective"] == pytest.approx(local.objective, rel=1e-6)
    assert model["training_data"]["n_samples"] == 270
    assert sum(model["training_data"]["partitions"]) == 270
    assert len(model["training_data"]["partitions"]) == 3
    assert model["training_data"]["workers"] == 2  # shard k on worker k mod 2
    # the communication record, per iteration, in the job's log
    log = full_log(service, done["id"])
    assert log and all(r["extras"]["reductions"] >= 1 and r["extras"]["bytes_moved"] > 0
                       for r in log)
    # the statistics the job's read found are the dataset's now
    dataset = service.get(f"/api/v1/datasets/{heart}").json()
    assert dataset["n_samples"] == 270 and dataset["n_features"] == 13
    assert dataset["class_counts"] == {"-1": 150, "1": 120}
    assert dataset["nnz"] == local_data.nnz and dataset["scanned_at"] is not None
    # served like any model: the same predictions as the single machine's
    lines = data_path("heart_scale").read_text().splitlines()[:30]
    served = service.post(f"/api/v1/models/{done['model_id']}/predict",
                          content="\n".join(lines) + "\n",
                          headers={"Content-Type": "text/plain"})
    assert served.status_code == 200, served.text
    rows = solvers.read_svmlight(("\n".join(lines) + "\n").encode(), n_features=13)
    assert [r["label"] for r in served.json()["data"]] == \
        local.model.predict(rows.X).tolist()
    # its rows stay on the cluster: evaluating on it is refused with the reason
    evaluated = service.post(f"/api/v1/models/{done['model_id']}/evaluate",
                             json={"dataset_id": heart})
    assert evaluated.status_code == 422 and "is sharded" in evaluated.json()["detail"]


@pytest.mark.slow
def test_cancel_stops_a_sharded_job(service, shard_root):
    dataset = register(service, shards(shard_root, "a9a"))
    assert dataset.status_code == 201, dataset.text
    job_id = create_job(service, dataset.json()["id"], SHARDED_LONG_PARAMS)["id"]
    running = wait_job(service, job_id, until=lambda j: j["status"] == "running"
                       and j["progress"] is not None)
    assert running["message"].startswith("running on Dask worker tcp://")
    assert running["message"].endswith(": training data-parallel: 32561 rows in 2 partitions "
                                       "on 2 Dask worker(s)")
    assert service.post(f"/api/v1/jobs/{job_id}/cancel").status_code == 202
    done = wait_job(service, job_id)
    assert done["status"] == "cancelled" and done["solver_status"] == "stopped", done
    assert done["message"].startswith("cancelled by request after")
    assert done["model_id"] is None
    wait_ready(service)  # the slot is free again, the partitions released


def test_a_shard_gone_since_registration_fails_its_job_with_the_reason(service, shard_root):
    copy = shard_root / "gone.svm"
    copy.write_bytes(data_path("heart_scale").read_bytes())
    dataset = register(service, [shards(shard_root, "heart")[0], str(copy)])
    assert dataset.status_code == 201, dataset.text
    copy.unlink()
    done = wait_job(service, create_job(service, dataset.json()["id"],
                                        {"solver": "mfn"})["id"])
    assert done["status"] == "failed" and str(copy) in done["error"], done
    assert service.get(f"/api/v1/datasets/{dataset.json()['id']}").json()["n_samples"] is None


def test_a_validation_set_of_another_feature_space_fails_the_job_before_training(
        service, shard_root):
    """Admission cannot compare the widths before the shards were read: the job's read does,
    and fails the job with admission's reason before any training."""
    dataset = register(service, shards(shard_root, "heart")[:2])
    assert dataset.status_code == 201, dataset.text
    wide = service.post("/api/v1/datasets", files={"file": ("wide.svm", b"1 20:1\n-1 1:1\n")})
    assert wide.status_code == 201, wide.text
    done = wait_job(service, create_job(service, dataset.json()["id"], {"solver": "mfn"},
                                        validation_dataset_id=wide.json()["id"])["id"])
    assert done["status"] == "failed" and done["model_id"] is None, done
    assert done["error"] == ("validation_dataset_id: the validation dataset has 20 features, "
                             "the training dataset 13: another feature space")
    assert full_log(service, done["id"]) == []


@pytest.mark.slow
def test_a_lost_partition_is_read_again_and_its_job_resumes(cluster, service, shard_root):
    """The worker that holds a partition but not the job's task is killed (SIGKILL) mid-solve:
    the partition is gone with it (an actor is not recomputed by Dask), so the library reads
    its shard again on a worker left and the solve resumes from its last iterate
    (``SVMSVC_SHARD_RESTARTS``, 2 by default); the job succeeds and its message says which
    worker was lost and what was read again -- never left running.  (A killed worker that
    ran the task itself is the executor's lost-attempt path, test_dask.py; a loss with no
    restart left fails with the reason, tests/test_distributed_retry.py.)"""
    dataset = register(service, shards(shard_root, "a9a"))
    # itermax ends it: long enough for the kill to land mid-solve on a fast machine (four
    # Newton iterations were not: the job ended before the first poll saw its progress),
    # short after the resume (max_iter counts again from there)
    job_id = create_job(service, dataset.json()["id"], SHARDED_MEDIUM_PARAMS)["id"]
    running = wait_job(service, job_id, until=lambda j: j["status"] in FINISHED
                       or (j["status"] == "running" and j["progress"] is not None))
    assert running["status"] == "running", running
    task_worker = running["message"].removeprefix("running on Dask worker ").split(":")[:3]
    task_worker = ":".join(task_worker)
    with distributed.Client(cluster.address, set_as_default=False) as client:
        pids = client.run(os.getpid)
    (other,) = [address for address in pids if address != task_worker]
    os.kill(pids[other], signal.SIGKILL)
    done = wait_job(service, job_id)
    assert done["status"] == "succeeded" and done["model_id"] is not None, done
    assert f"worker(s) {other} lost after " in done["message"], done["message"]
    assert "read again from their shards; the solve resumed from its last good iterate " \
        "(restart 1 of at most 2)" in done["message"]
    assert done["message"].count(f"worker(s) {other} lost after ") == 1  # not twice
    log = full_log(service, job_id)
    assert log[-1]["extras"]["restart"] == 1
    assert [r["iteration"] for r in log] == list(range(1, len(log) + 1))
    wait_ready(service)  # the nanny brings the worker back; both slots ready again


def assert_problem(response, type_: str, *fragments: str, setting: str | None = None):
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"] == type_ and problem["status"] == 422
    for fragment in fragments:
        assert fragment in problem["detail"], problem["detail"]
    assert problem.get("setting") == setting


def test_bad_registrations_are_refused_with_the_reason(service, shard_root, tmp_path):
    inside = shards(shard_root, "heart")[0]
    assert_problem(register(service, ["/etc/passwd"]), INVALID_SHARD, "shards[0]",
                   "SVMSVC_SHARD_ROOTS", setting="SVMSVC_SHARD_ROOTS")
    escape = shard_root / "escape"  # a link inside the root to a file outside it
    outside = tmp_path / "outside.svm"
    outside.write_text("1 1:1\n-1 1:-1\n")
    escape.symlink_to(outside)
    try:
        assert_problem(register(service, [inside, str(escape)]), INVALID_SHARD, "shards[1]",
                       setting="SVMSVC_SHARD_ROOTS")
    finally:
        escape.unlink()
    dotted = f"{shard_root}/{os.path.relpath(outside, shard_root)}"  # root/../../x
    assert_problem(register(service, [dotted]), INVALID_SHARD, setting="SVMSVC_SHARD_ROOTS")
    assert_problem(register(service, [str(shard_root / "heart" / "missing.svm")]),
                   INVALID_SHARD, "does not exist")
    assert_problem(register(service, [str(shard_root / "heart")]), INVALID_SHARD,
                   "is not a regular file")
    assert_problem(register(service, ["http://169.254.169.254/latest"]), INVALID_SHARD,
                   "scheme 'http'", setting="SVMSVC_SHARD_SCHEMES")
    assert_problem(register(service, ["heart/heart_scale.0"]), INVALID_SHARD, "absolute")
    assert_problem(register(service, [str(shard_root / ("x" * 300))]), INVALID_SHARD,
                   "File name too long")
    loop = shard_root / "loop"
    loop.symlink_to(loop)
    try:
        assert_problem(register(service, [str(loop)]), INVALID_SHARD, "cannot be resolved")
    finally:
        loop.unlink()
    assert_problem(register(service, [inside, f"file://{inside}"]), INVALID_SHARD,
                   "listed twice")
    empty = service.post(SHARDED, json={"shards": []})
    assert empty.status_code == 422 and empty.json()["title"] == "Invalid request"


def test_jobs_a_sharded_dataset_cannot_run_are_refused(service, heart):
    def refused(params, **fields):
        return service.post("/api/v1/jobs", json={"dataset_id": heart, "params": params,
                                                  **fields})

    # the library's own refusal, with its reason
    assert_problem(refused({"solver": "smo"}), INVALID_JOB, "does not train on distributed "
                   "data")
    assert_problem(refused({"solver": "auto"}), INVALID_JOB, "name the solver")
    assert_problem(refused({"solver": "mfn", "scale": "standard"}), INVALID_JOB,
                   "scale='standard' is not available on distributed data")
    assert_problem(refused({"solver": "mfn"}, tuning={"C": [1.0, 2.0]}), INVALID_JOB,
                   "cross-validation does not run on a sharded dataset")


@pytest.mark.slow
def test_a_local_executor_refuses_jobs_on_a_sharded_dataset(backend, shard_root, tmp_path):
    settings = service_settings(tmp_path, backend, shard_roots=str(shard_root))
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        dataset = register(client, shards(shard_root, "heart"))
        assert dataset.status_code == 201, dataset.text
        response = client.post("/api/v1/jobs", json={"dataset_id": dataset.json()["id"],
                                                      "params": {"solver": "mfn"}})
        assert_problem(response, INVALID_JOB, "SVMSVC_EXECUTOR=dask",
                       setting="SVMSVC_EXECUTOR")


def test_without_shard_roots_local_shards_are_refused(api, shard_root):
    response = api.post(SHARDED, json={"shards": shards(shard_root, "heart")})
    assert_problem(response, INVALID_SHARD, "not enabled", setting="SVMSVC_SHARD_ROOTS")
