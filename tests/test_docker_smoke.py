"""The compose smoke test (``docker/smoke.py``) runs only where Docker does; the jobs it posts
are checked here against the parameter models, so that a renamed parameter fails the suite
rather than the next smoke run (``tol`` of lssvm became ``cg_tol``, and 8124 rows passed the
kernel path's limit at the default cache: the smoke's long job was refused with 422 twice on
2026-11-27)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import solvers
from solvers.lssvm.fit import check_kernel_size

MUSHROOMS_ROWS = 8124
SMOKE = Path(__file__).resolve().parent.parent / "docker" / "smoke.py"


def smoke_module():
    spec = importlib.util.spec_from_file_location("docker_smoke", SMOKE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["LONG_JOB", "SCALE_JOB"])
def test_the_smoke_jobs_parameters_validate(name):
    params = dict(getattr(smoke_module(), name))
    spec = solvers.get_solver(params["solver"])
    validated = spec.params_model(**params)
    assert validated.solver == params["solver"]
    # the service admits it on the smoke's dataset (mushrooms, 8124 rows): the kernel fits
    # the row cache (a refusal there answered 422 on the first Docker run of 2026-11-27)
    check_kernel_size(validated, MUSHROOMS_ROWS)


def test_the_smoke_reads_the_repositorys_compressed_dataset_as_its_text(tmp_path):
    # smoke.sh's default dataset is data/mushrooms.xz: its rows are read and split at line
    # ends, so the smoke decompresses it first (it read the xz bytes as text before)
    from bench.paths import DATA_DIR, dataset_path

    plain = smoke_module().plain_dataset(DATA_DIR / "mushrooms.xz", tmp_path)
    assert plain.read_bytes() == dataset_path("mushrooms").read_bytes()
    assert len(plain.read_text().splitlines()) == MUSHROOMS_ROWS
    text = dataset_path("heart_scale")
    assert smoke_module().plain_dataset(text, tmp_path) == text  # plain text: used as it is
