"""The dashboard's additions to the API, each useful on its own: the normalized problem key of
a job, down-sampled logs, the multi-job log fetch, and the key's backfill migration."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from servicetools import create_job, data_path, full_log, uploaded_id, wait_job
from sqlalchemy import MetaData, Table, select

import solvers
from app.db.migrate import upgrade_database
from app.db.models import Dataset, Job
from app.db.session import Sessions, create_db_engine
from app.downsample import downsample_indices, lttb
from app.problem import key_fields, problem_key, stored_problem_key
from solvers.losses import is_residual


@pytest.fixture(scope="module")
def heart(api):
    return uploaded_id(api, data_path("heart_scale"))


def _params(**fields):
    return solvers.get_solver(fields["solver"]).params_model.model_validate(fields)


# -- the key ---------------------------------------------------------------------------------


def test_the_key_names_the_problem_not_the_algorithm():
    dataset = uuid.uuid4()
    mfn = problem_key(dataset, _params(solver="mfn", loss="hinge", C=2, tol=1e-3))
    ocas = problem_key(dataset, _params(solver="cutting_plane", C=2.0, method="gca2"))
    assert mfn == ocas == (f"dataset={dataset};task=classification;multiclass=ovr;"
                           "loss=hinge;C=2.0;bias=regularized;bias_scale=1.0")
    # lp with p = 1 or 2 is hinge or squared hinge; bias_scale only with a regularized bias
    assert problem_key(dataset, _params(solver="alm", loss="lp", p=1.0, bias="none")) == \
        problem_key(dataset, _params(solver="interior_point", bias="none"))
    assert "p=1.5" in problem_key(dataset, _params(solver="alm", loss="lp", p=1.5))
    assert "bias_scale" not in problem_key(dataset, _params(solver="alm", bias="free"))
    # other C, bias scale, data or multi-class strategy: another problem
    base = problem_key(dataset, _params(solver="mfn"))
    assert base != problem_key(dataset, _params(solver="mfn", C=3.0))
    assert base != problem_key(dataset, _params(solver="mfn", bias_scale=2.0))
    assert base != problem_key(uuid.uuid4(), _params(solver="mfn"))
    assert problem_key(dataset, _params(solver="cutting_plane")) != problem_key(
        dataset, _params(solver="cutting_plane", multiclass="crammer_singer"))


def test_kernel_fields_enter_the_key_and_a_linear_kernel_is_the_linear_problem():
    dataset = uuid.uuid4()
    linear = _params(solver="proximal_svm", kernel="linear", gamma=5.0)
    assert "kernel" not in problem_key(dataset, linear)
    assert problem_key(dataset, linear) == problem_key(
        dataset, _params(solver="proximal_svm", kernel="linear", gamma=1.0, cg_tol=1e-3))
    rbf = problem_key(dataset, _params(solver="lssvm", kernel="rbf", gamma=0.5))
    assert rbf.endswith("kernel=rbf;gamma=0.5") and "degree" not in rbf
    poly = problem_key(dataset, _params(solver="lssvm", kernel="polynomial", degree=2))
    assert poly.endswith("kernel=polynomial;gamma=1.0;degree=2;coef0=0.0")
    # relaxed LS-SVM: A/2 b^2 is the regularized bias with bias_scale = 1/sqrt(A)
    relaxed = _params(solver="relaxed_lssvm", kernel="linear", A=4.0)
    assert problem_key(dataset, relaxed) == problem_key(
        dataset, _params(solver="proximal_svm", kernel="linear", bias_scale=0.5))
    sumt = _params(solver="relaxed_lssvm", kernel="linear", sumt=True)
    assert problem_key(dataset, sumt) == problem_key(
        dataset, _params(solver="lssvm", kernel="linear"))


def test_key_fields_read_a_key_back():
    dataset = uuid.uuid4()
    key = problem_key(dataset, _params(solver="lssvm", kernel="polynomial", degree=2, C=0.5))
    assert key_fields(key) == {"dataset": str(dataset), "task": "classification",
                               "multiclass": "ovr", "loss": "least_squares", "C": 0.5,
                               "bias": "free", "kernel": "polynomial", "gamma": 1.0,
                               "degree": 2, "coef0": 0.0}


def test_stored_parameters_the_solver_refuses_and_tuning_jobs_have_no_key():
    dataset = uuid.uuid4()
    assert stored_problem_key(dataset, "mfn", {"solver": "mfn", "C": 1.0}, None) == \
        problem_key(dataset, _params(solver="mfn", C=1.0))
    assert stored_problem_key(dataset, "mfn", {"solver": "mfn", "C": 1.0}, {"folds": 5}) is None
    assert stored_problem_key(dataset, "mfn", {"solver": "mfn", "nonsense": 1}, None) is None
    assert stored_problem_key(dataset, "gone", {"solver": "gone"}, None) is None


def test_jobs_carry_their_key_and_filter_by_it(api, heart):
    hinge = create_job(api, heart, {"solver": "mfn", "loss": "hinge", "C": 0.5})
    ocas = create_job(api, heart, {"solver": "cutting_plane", "C": 0.5})
    other = create_job(api, heart, {"solver": "mfn", "C": 0.5})
    assert hinge["problem_key"] == ocas["problem_key"] != other["problem_key"]
    assert hinge["problem"]["loss"] == "hinge" and hinge["problem"]["C"] == 0.5
    assert hinge["problem"]["dataset"] == heart
    listed = api.get("/api/v1/jobs", params={"problem_key": hinge["problem_key"]}).json()
    assert {j["id"] for j in listed["data"]} >= {hinge["id"], ocas["id"]}
    assert other["id"] not in {j["id"] for j in listed["data"]}
    assert all(j["problem_key"] == hinge["problem_key"] for j in listed["data"])
    tuning = create_job(api, heart, {"solver": "mfn"}, tuning={"C": [1.0], "folds": 2})
    assert tuning["problem_key"] is None and tuning["problem"] is None
    for bad in ("x" * 513, "dataset=\x00"):
        response = api.get("/api/v1/jobs", params={"problem_key": bad})
        assert response.status_code == 422
        assert response.json()["errors"][0]["loc"] == ["query", "problem_key"]
    for created in (hinge, ocas, other, tuning):
        wait_job(api, created["id"])


# -- down-sampling -----------------------------------------------------------------------------


def test_lttb_keeps_the_ends_and_a_spike_that_every_kth_sample_misses():
    y = np.zeros(1001)
    y[333] = 10.0
    chosen = lttb(y, 20)
    assert len(chosen) == 20 and chosen[0] == 0 and chosen[-1] == 1000
    assert 333 in chosen and np.all(np.diff(chosen) > 0)
    assert 333 not in np.arange(0, 1001, 1000 // 19)
    assert list(lttb(y[:15], 20)) == list(range(15))


def test_downsampling_keeps_the_lowest_objective_and_tolerates_missing_values():
    rng = np.random.default_rng(0)
    objective = list(1.0 + np.exp(-np.arange(500) / 50.0) + 1e-3 * rng.random(500))
    objective[7] = None
    best = int(np.nanargmin(np.array(objective, dtype=float)))
    optimality = [None] * 500
    chosen = downsample_indices(objective, optimality, 25)
    assert len(chosen) == 25 and chosen[0] == 0 and chosen[-1] == 499 and best in chosen
    assert len(downsample_indices([None] * 50, [1.0] * 50, 10)) == 10


def test_downsampling_keeps_each_parts_lowest_and_last_record():
    """A one-vs-rest log of three classes, each descending to its own optimum: down-sampled,
    each class keeps its lowest and its last record (its gap reaches 0 per class)."""
    rng = np.random.default_rng(1)
    objective, parts = [], []
    for k, optimum in enumerate((5.0, 1.0, 3.0)):
        values = optimum + np.exp(-np.arange(400) / 40.0) + 1e-4 * rng.random(400)
        values[-1] = values[-1] + 0.5  # the last record is not the lowest
        objective += list(values)
        parts += [(False, k)] * 400
    chosen = downsample_indices(objective, [None] * len(objective), 40, parts)
    assert len(chosen) == 40 and np.all(np.diff(chosen) > 0)
    f = np.array(objective)
    for k in range(3):
        rows = np.arange(400 * k, 400 * (k + 1))
        assert rows[np.argmin(f[rows])] in chosen and rows[-1] in chosen
    # more parts than half the points: only the whole log's lowest is kept beyond LTTB's picks
    many = downsample_indices(objective, [None] * len(objective), 10, parts)
    assert len(many) == 10 and int(np.argmin(f)) in many


def test_log_down_sampled_to_points(api, heart):
    job_id = create_job(api, heart, {"solver": "alm", "variant": "inexact"})["id"]
    wait_job(api, job_id)
    records = full_log(api, job_id)
    assert len(records) > 30  # 89 on heart_scale
    page = api.get(f"/api/v1/jobs/{job_id}/log", params={"points": 10}).json()
    data = page["data"]
    assert len(data) == 10 and page["count"] == len(records) and not page["has_more"]
    assert data[0] == records[0] and data[-1] == records[-1]
    assert min(r["objective"] for r in data) == min(r["objective"] for r in records)
    assert all(r in records for r in data)
    csv = api.get(f"/api/v1/jobs/{job_id}/log", params={"points": 10},
                  headers={"Accept": "text/csv"})
    assert len(csv.text.strip().splitlines()) == 11
    whole = api.get(f"/api/v1/jobs/{job_id}/log", params={"points": 10000}).json()
    assert whole["data"] == records
    for bad in (2, 10001, "many"):
        response = api.get(f"/api/v1/jobs/{job_id}/log", params={"points": bad})
        assert response.status_code == 422
        assert response.json()["errors"][0]["loc"] == ["query", "points"]


def test_multi_job_logs_for_a_comparison(api, heart):
    ids = [create_job(api, heart, {"solver": "mfn", "loss": "hinge"})["id"],
           create_job(api, heart, {"solver": "cutting_plane"})["id"],
           create_job(api, heart, {"solver": "interior_point", "bias": "regularized"})["id"]]
    for job_id in ids:
        assert wait_job(api, job_id)["status"] == "succeeded"
    response = api.get("/api/v1/logs", params={"job_id": ids, "points": 8})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["count"] == 3 and [s["job"]["id"] for s in body["data"]] == ids
    assert body["same_problem"]
    for series in body["data"]:
        records = full_log(api, series["job"]["id"])
        assert series["count"] == len(records) and 0 < len(series["data"]) <= 8
        assert series["best_objective"] == min(r["objective"] for r in records)
    assert body["best_objective"] == min(s["best_objective"] for s in body["data"])
    mixed = api.get("/api/v1/logs",
                    params={"job_id": [ids[0], create_job(api, heart, {"solver": "mfn"})["id"]]})
    assert not mixed.json()["same_problem"]
    missing = api.get("/api/v1/logs", params={"job_id": [ids[0], str(uuid.uuid4())]})
    assert missing.status_code == 422 and "not found" in missing.json()["detail"]
    assert api.get("/api/v1/logs").status_code == 422
    assert api.get("/api/v1/logs", params={"job_id": "nope"}).status_code == 422
    assert api.get("/api/v1/logs",
                   params={"job_id": [ids[0]] * 21}).status_code == 422


# -- the migration -----------------------------------------------------------------------------


SHARDED_COLUMNS = {"kind", "source", "scanned_at", "label_summary"}
"""The dataset columns of revision 0009 (sharded datasets) and later (0013_taskservice's
``label_summary``): a table of a revision before 0009 has none of them (``kind``'s Python-side
default would otherwise be inserted)."""


#: the jobs' columns that revisions after 0009 add (0010_registry, 0010_batch_webhooks, 0012,
#: 0013_limits): a test at an earlier revision leaves them out (kind has a default the insert
#: would send)
JOB_COLUMNS_AFTER_0009 = {"model_name", "kind", "predict_model_id", "result", "rows_done",
                          "rows_total", "callback_url", "tags", "reserved_model_bytes"}


def table_at(row_kind, later: set[str]) -> Table:
    """``row_kind``'s table without the columns a later revision added."""
    return Table(row_kind.__tablename__, MetaData(),
                 *(column._copy() for column in row_kind.__table__.columns
                   if column.name not in later))


def test_the_migration_backfills_the_keys_of_existing_jobs(backend, tmp_path):
    engine = create_db_engine(backend.database_url(tmp_path))
    upgrade_database(engine, "0003")
    dataset = uuid.uuid4()
    jobs = {"plain": ({"solver": "mfn", "loss": "hinge", "C": 2.0}, None),
            "tuning": ({"solver": "mfn"}, {"C": [1.0], "folds": 2, "seed": 0, "gamma": None}),
            "stale": ({"solver": "mfn", "retired_option": 1}, None)}
    ids = {name: uuid.uuid4() for name in jobs}
    with engine.begin() as connection:
        # the tables as revision 0003 left them (later columns with defaults, such as
        # 0005's keep_last_good or 0006's owners, are not there yet)
        connection.execute(table_at(Dataset, {"owner", *SHARDED_COLUMNS}).insert().values(
            id=dataset, name="d", sha256="0" * 64, n_samples=1, n_features=1, nnz=1,
            density=1.0, class_counts={"1": 1}, has_qid=False, has_sample_weight=False,
            upload_bytes=1, stored_bytes=1))
        jobs_0003 = table_at(Job, {"problem_key", "keep_last_good", "progress_stage",
                                   *JOB_COLUMNS_AFTER_0009})
        for name, (params, tuning) in jobs.items():
            connection.execute(jobs_0003.insert().values(
                id=ids[name], dataset_id=dataset, solver=params["solver"], params=params,
                status="succeeded", attempts=1, tuning=tuning))
    upgrade_database(engine)
    sessions = Sessions(engine)
    with sessions.read() as session:
        keys = dict(session.execute(select(Job.id, Job.problem_key)).all())
    assert keys[ids["plain"]] == problem_key(dataset, _params(solver="mfn", loss="hinge", C=2))
    assert keys[ids["tuning"]] is None and keys[ids["stale"]] is None
    engine.dispose()



@pytest.mark.parametrize("spec", solvers.list_solvers(), ids=lambda spec: spec.name)
def test_stored_parameters_validate_again_for_every_loss(spec):
    """A job stores its parameters as dumped; the worker validates them again (alm with loss
    hinge once failed there: its default p = 2 was dumped beside it)."""
    for loss in spec.losses:
        fields = {"solver": spec.name, "loss": loss}
        if is_residual(loss):  # a regression loss: the task that takes it
            fields["task"] = "regression"
        if spec.name == "relaxed_lssvm" and loss == "squared_hinge":
            fields["variant"] = "sesquismo"
        params = spec.params_model.model_validate(fields)
        dumped = params.model_dump(mode="json")
        assert spec.params_model.model_validate(dumped) == params
        assert stored_problem_key(uuid.UUID(int=0), spec.name, dumped, None) == \
            problem_key(uuid.UUID(int=0), params)


def test_the_migration_renames_interior_points_stored_pcg_gamma(backend, tmp_path):
    """Revision 0008: a stored interior_point job's ``gamma`` (its PCG parameter, before the
    kernel's gamma joined every solver) becomes ``pcg_gamma``; other solvers' stay."""
    engine = create_db_engine(backend.database_url(tmp_path))
    upgrade_database(engine, "0007")
    dataset, ip_job, smo_job = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with engine.begin() as connection:
        connection.execute(table_at(Dataset, SHARDED_COLUMNS).insert().values(
            id=dataset, name="d", sha256="0" * 64, n_samples=1, n_features=1, nnz=1,
            density=1.0, class_counts={"1": 1}, has_qid=False, has_sample_weight=False,
            upload_bytes=1, stored_bytes=1))
        for job_id, params in ((ip_job, {"solver": "interior_point", "gamma": 0.5}),
                               (smo_job, {"solver": "smo", "gamma": 0.5})):
            connection.execute(table_at(Job, JOB_COLUMNS_AFTER_0009).insert().values(
                id=job_id, dataset_id=dataset, solver=params["solver"], params=params,
                status="succeeded", attempts=1))
    upgrade_database(engine)
    with Sessions(engine).read() as session:
        stored = dict(session.execute(select(Job.id, Job.params)).all())
    assert stored[ip_job] == {"solver": "interior_point", "pcg_gamma": 0.5}
    assert stored[smo_job] == {"solver": "smo", "gamma": 0.5}
    spec = solvers.registry.get_solver("interior_point")
    assert spec.params_model.model_validate(stored[ip_job]).pcg_gamma == 0.5
    engine.dispose()
