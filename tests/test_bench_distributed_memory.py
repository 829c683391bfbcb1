"""The study of a set larger than a worker's memory (bench distributed_memory, issue 36), at a
tiny size: its partitions are made on the workers as asked (rows in length order, balanced
labels, canonical CSR), and one run records what the study reports."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import cli
from bench.bench_distributed_memory import csr_bytes, text_partition
from solvers.core.sparse import length_order

pytest.importorskip("distributed")


def test_a_partition_is_text_like_canonical_and_in_length_order():
    data = text_partition(7, 6_000, 50_000, 60.0)
    X = data.X
    assert X.shape == (6_000, 50_000) and X.has_canonical_format
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32
    assert length_order(X.indptr) is None  # the row operator keeps it uncopied
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    assert np.allclose(norms, 1.0)
    assert 0.4 < np.mean(data.y == 1.0) < 0.6
    assert 30 < data.nnz / data.n_samples < 60  # duplicates merged
    again = text_partition(7, 6_000, 50_000, 60.0)
    assert (again.X != X).nnz == 0 and np.array_equal(again.y, data.y)


@pytest.mark.dask
@pytest.mark.parametrize("solver", ["mfn", "ocas"])
def test_the_study_records_memory_per_worker_and_the_solve(tmp_path, solver):
    out = tmp_path / "memory.json"
    assert cli.main(["distributed_memory", "--gigabytes", "0.01", "--workers", "2",
                     "--memory-limit", "1GB", "--partitions-per-worker", "2",
                     "--features", "20000", "--max-iter", "2", "--solver", solver,
                     "--out", str(out)]) == 0
    row = json.loads(out.read_text())["row"]
    assert row["solver"] == solver
    assert "error" not in row and row["worker_restarted"] is False
    # the partitions' CSR: values, column indices, each partition's row pointers
    assert row["csr_bytes"] == csr_bytes(row["nnz"], row["n_samples"]) + 4 * (4 - 1)
    assert 0.5e7 < row["csr_bytes"] < 2e7
    assert len(row["worker_vmhwm"]) == 2 and all(v > 0 for v in row["worker_vmhwm"].values())
    assert sum(row["csr_bytes_per_worker"].values()) == row["csr_bytes"]
    assert row["iterations"] >= 1 and row["train_seconds"] > 0
    assert row["client_rss_peak"] > 0 and row["samples"] >= 1
