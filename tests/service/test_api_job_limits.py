"""What a job may cost (issue 49): a time limit always (``SVMSVC_JOB_TIME_LIMIT_S`` when the
request gives none; at most ``SVMSVC_MAX_JOB_TIME_LIMIT_S``), a tuning grid of at most
``SVMSVC_MAX_TUNING_FITS`` fits, and the parameters in the ranges where the solvers'
arithmetic is sound (``solvers.base.C_RANGE``, ``MIN_RELATIVE_TOL``).  Each refusal is a 422
naming the setting or the field, and queues nothing."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from servicetools import QUICK_PARAMS, create_job, data_path, uploaded_id

from app.core.config import Settings

JOBS = "/api/v1/jobs"


@pytest.fixture(scope="module")
def heart(api) -> str:
    return uploaded_id(api, data_path("heart_scale"))


def job_count(api) -> int:
    return api.get(JOBS).json()["count"]


def refused(api, body: dict) -> dict:
    """The 422 of ``POST /jobs`` for ``body``, which queued nothing."""
    before = job_count(api)
    response = api.post(JOBS, json=body)
    assert response.status_code == 422, response.text
    assert job_count(api) == before
    return response.json()


def test_a_job_without_a_time_limit_gets_the_default(api, heart):
    settings = api.app.state.settings
    job = create_job(api, heart, QUICK_PARAMS)
    assert job["time_limit_s"] == settings.job_time_limit_s
    lower = create_job(api, heart, QUICK_PARAMS, time_limit_s=5.0)
    assert lower["time_limit_s"] == 5.0


@pytest.mark.parametrize("time_limit_s", [1e18, 86400.5])
def test_a_time_limit_past_the_cap_is_a_422_naming_the_setting(api, heart, time_limit_s):
    problem = refused(api, {"dataset_id": heart, "params": QUICK_PARAMS,
                            "time_limit_s": time_limit_s})
    assert problem["setting"] == "SVMSVC_MAX_JOB_TIME_LIMIT_S"
    assert "time_limit_s" in problem["detail"] and "86400" in problem["detail"]


def test_the_default_time_limit_must_be_one_a_job_may_ask_for():
    with pytest.raises(ValidationError, match="SVMSVC_MAX_JOB_TIME_LIMIT_S"):
        Settings(job_time_limit_s=7200.0, max_job_time_limit_s=3600.0)


def test_a_tuning_grid_past_the_fits_cap_is_a_422_naming_the_setting(api, heart):
    """50 C values x 20 folds and the refit: 1,001 fits, one past the default cap."""
    grid = [2.0 ** k for k in range(-25, 25)]
    problem = refused(api, {"dataset_id": heart, "params": QUICK_PARAMS,
                            "tuning": {"C": grid, "folds": 20}})
    assert problem["setting"] == "SVMSVC_MAX_TUNING_FITS"
    assert "20 folds x 50 points" in problem["detail"] and "1001 fits" in problem["detail"]
    within = api.post(JOBS, json={"dataset_id": heart, "params": QUICK_PARAMS,
                                  "tuning": {"C": grid[:49], "folds": 20}})
    assert within.status_code == 202, within.text  # 981 fits
    api.post(f"{JOBS}/{within.json()['id']}/cancel")


@pytest.mark.parametrize("params", [{"solver": "mfn", "C": 5e-324},
                                    {"solver": "mfn", "C": 1e-300},
                                    {"solver": "dual_cd", "C": 1e13},
                                    {"solver": "mfn", "tol": 1e-17},
                                    {"solver": "mfn", "epsilon": 1e-20}])
def test_parameters_outside_the_sound_ranges_are_a_422(api, heart, params):
    """C = 5e-324 passed ``gt=0`` and mfn spun on it for ever, holding a worker."""
    problem = refused(api, {"dataset_id": heart, "params": params})
    field = "C" if "C" in params else next(k for k in params if k != "solver")
    assert field in str(problem), problem


def test_a_tuning_grid_outside_the_sound_ranges_is_a_422(api, heart):
    refused(api, {"dataset_id": heart, "params": QUICK_PARAMS, "tuning": {"C": [1.0, 5e-324]}})
    refused(api, {"dataset_id": heart, "params": QUICK_PARAMS, "tuning": {"fit_gap": 1e-17}})
