"""Helpers shared by the tests of one model trained on a Dask cluster
(tests/test_distributed.py, tests/test_distributed_interior_point.py): the cluster (2 worker
processes x 1 thread, spawned), real data cut to a subset and split into shards of unequal
sizes with an empty one, and the comparisons.

(A module with its own name, as ``shared_data``: ``conftest`` is ambiguous once
tests/service has its own.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from shared_data import data_path

import solvers

distributed = pytest.importorskip("distributed")
sd = pytest.importorskip("solvers.distributed")

SHARDINGS = {2: [3, 1], 3: [1, 0, 2], 7: [5, 1, 0, 2, 3, 1, 4]}
TIMEOUT = 120


def local_cluster(n_workers=2, threads=1):
    return distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads,
                                     processes=True, dashboard_address=None,
                                     worker_dashboard_address=None,
                                     env={"NUMBA_NUM_THREADS": str(threads)}, silence_logs=40)


def cluster_client():
    """A generator for a module-scoped ``client`` fixture: the cluster and its client
    (``direct_to_workers``: actor calls go to the workers, not through the scheduler)."""
    with local_cluster() as cluster, \
            distributed.Client(cluster, timeout=TIMEOUT, direct_to_workers=True) as client:
        yield client


def head(name: str, n_lines: int, out: Path) -> Path:
    """The first ``n_lines`` lines of a committed dataset (a subset that keeps the test short)."""
    target = out / f"{name}.head{n_lines}"
    with open(data_path(name), "rb") as source, open(target, "wb") as sink:
        for _, line in zip(range(n_lines), source, strict=False):
            sink.write(line)
    return target


def shards(files, name, count):
    """``files[name]`` split into ``count`` shards of the sizes ``SHARDINGS[count]`` (0: an
    empty shard) under ``files["dir"]``."""
    return sd.split_svmlight(files[name], files["dir"] / f"{name}-{count}",
                             fractions=SHARDINGS[count])


def read(client, files, name, count):
    """(the whole set on this process, the same rows as a distributed dataset in ``count``
    shards)."""
    local = solvers.read_svmlight(files[name])
    data = sd.read_svmlight(client, shards(files, name, count), n_features=local.n_features)
    return local, data


def beta_of(model) -> np.ndarray:
    return np.concatenate([model.coef_.ravel(), np.ravel(model.intercept_)])


def relative(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-300))


def assert_same_records(one, many, count: int, rel: float = 1e-9) -> None:
    """Two cutting-plane solves (the single machine's ``one``, the distributed ``many``) made
    ``count`` records each, their objectives and lower bounds equal to ``rel`` record by
    record."""
    assert len(many.log) == len(one.log) == count
    for a, b in zip(one.log, many.log, strict=True):
        assert b.objective == pytest.approx(a.objective, rel=rel), a.iteration
        assert b.extras["lower_bound"] == pytest.approx(a.extras["lower_bound"], rel=rel)


def ballast_partition(n_rows: int, n_features: int, per_row: int) -> solvers.Dataset:
    """A partition of ``n_rows`` rows with ``per_row`` stored ones each (sorted distinct
    columns, labels alternating): memory of a known size, made on a worker in milliseconds
    (for the tests of what a worker's memory limit does)."""
    import scipy.sparse as sp  # noqa: PLC0415

    step = n_features // per_row
    columns = (np.arange(per_row)[None, :] * step + (np.arange(n_rows) % step)[:, None])
    indptr = np.arange(0, n_rows * per_row + 1, per_row, dtype=np.int64)
    X = sp.csr_matrix((np.ones(n_rows * per_row), columns.ravel().astype(np.int32), indptr),
                      shape=(n_rows, n_features))
    return solvers.Dataset(X, np.where(np.arange(n_rows) % 2 == 0, 1.0, -1.0))
