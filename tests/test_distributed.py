"""One model trained data-parallel on a Dask cluster (solvers.distributed): partitions parsed
and kept on worker processes, the same solve as one machine's on the same data.

A LocalCluster of 2 worker processes x 1 thread (spawned: no fork after Numba's threads),
shared by the module; real data from the repository's data/ split at line boundaries into 2, 3 and 7
shards of unequal sizes with an empty one.  Equality is to 1e-9 relative:

* mfn (squared hinge) converges finitely: both runs are driven to rule (13) at eps = 1e-10
  with no gap stop, and the objectives and parameter vectors agree;
* the cutting planes (OCAS, CPA) follow the same iterates while the partitions' sums differ
  from the single machine's only by the order of additions: the first iterations' records
  and iterate agree to 1e-9 (further on, a rounding difference amplified by the line search's
  root on a flat segment and the loosely solved reduced QP moves the paths apart, measured
  from about iteration 40 on a9a); solved to the end, both certify the gap asked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from distributed_helpers import TIMEOUT, assert_same_records, cluster_client, local_cluster
from distributed_helpers import beta_of as _beta
from distributed_helpers import head as _head
from distributed_helpers import read as _read
from distributed_helpers import relative as _relative
from distributed_helpers import shards as _shards

import solvers
from solvers import config
from solvers.base import InvalidParametersError

distributed = pytest.importorskip("distributed")
sd = pytest.importorskip("solvers.distributed")

pytestmark = pytest.mark.dask


@pytest.fixture(scope="module")
def client():
    yield from cluster_client()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = tmp_path_factory.mktemp("distributed")
    return {"a9a": _head("a9a", 3000, out), "dna": _head("dna.scale", 900, out), "dir": out}


# -- the dataset --------------------------------------------------------------------------------


def test_split_keeps_every_line_whole_and_in_order(files, tmp_path):
    shards = sd.split_svmlight(files["a9a"], tmp_path, fractions=[5, 0, 1, 0.001, 3])
    pieces = [p.read_bytes() for p in shards]
    assert b"".join(pieces) == files["a9a"].read_bytes()
    assert pieces[1] == b""
    assert all(p.endswith(b"\n") for p in pieces if p)
    with pytest.raises(ValueError):
        sd.split_svmlight(files["a9a"], tmp_path, fractions=[0, 0])


@pytest.mark.parametrize("count", [3, 7])
def test_partitions_are_parsed_on_the_workers_and_only_summaries_come_back(client, files,
                                                                           count):
    local, data = _read(client, files, "dna", count)
    assert data.n_samples == local.n_samples and data.n_features == local.n_features
    assert data.nnz == local.nnz
    assert np.array_equal(data.classes, local.classes)
    assert data.class_counts.tolist() == [int(np.sum(local.y == c)) for c in local.classes]
    assert 0 in data.partition_sizes and sum(data.partition_sizes) == local.n_samples
    # the rows live in the worker processes, not in this one
    pids = {a.pid().result(timeout=TIMEOUT) for a in data.partitions.actors}
    assert os.getpid() not in pids and len(pids) == 2
    data.close()
    assert data.partitions.actors == [] and data.partitions.futures == []
    assert data.square_norm_sum == pytest.approx(float(local.X.multiply(local.X).sum()),
                                                 rel=1e-12)


def test_shards_from_urls_and_from_functions_run_on_the_workers(client, files):
    """A shard may be an fsspec URL or a function the worker calls to make its rows (data
    generated where it is held)."""
    local = solvers.read_svmlight(files["dna"])
    shards = _shards(files, "dna", 2)
    sources = [f"file://{shards[0]}", ("call", solvers.read_svmlight, (str(shards[1]),))]
    data = sd.read_svmlight(client, sources, n_features=local.n_features)
    assert data.n_samples == local.n_samples and data.nnz == local.nnz
    assert np.array_equal(data.classes, local.classes)
    data.close()


# -- mfn: the same optimum ------------------------------------------------------------------------

MFN_EXACT = {"tol": None, "epsilon": 1e-10}


@pytest.mark.parametrize("count", [2, 7])  # 3 shards: the one-vs-rest and Huber cases
def test_mfn_binary_equals_the_single_machine_solve(client, files, count):
    local, data = _read(client, files, "a9a", count)
    one = solvers.train(local, solver="mfn", **MFN_EXACT)
    many = solvers.train(data, solver="mfn", **MFN_EXACT)
    assert many.status == "converged", many.message
    assert many.objective == pytest.approx(one.objective, rel=1e-9)
    assert _relative(_beta(one.model), _beta(many.model)) <= 1e-9
    # the reported objective is the problem layer's at the returned model, on all the rows
    y = np.where(local.y == local.classes[1], 1.0, -1.0)
    problem = solvers.problems.BinaryProblem(local.X, y, C=1.0)
    beta = problem.join(many.model.coef_[0], many.model.intercept_[0])
    assert problem.objective(beta) == pytest.approx(many.objective, rel=1e-12)
    assert many.log[-1].objective == pytest.approx(many.objective, rel=1e-12)


def test_a_workers_partitions_answer_at_once_on_its_threads(files):
    """One worker of 2 threads holding 3 partitions: they answer each round on the worker's
    thread pool (not Dask's one actor thread), each with its share of the threads (1), and
    mfn and OCAS take the single machine's solve."""
    def threads(part):
        import threading  # noqa: PLC0415

        import numba  # noqa: PLC0415

        return numba.get_num_threads(), threading.current_thread().name

    with local_cluster(n_workers=1, threads=2) as cluster, \
            distributed.Client(cluster, timeout=TIMEOUT, direct_to_workers=True) as client:
        local, data = _read(client, files, "a9a", 3)
        try:
            assert data.partitions.threaded
            seen = data.partitions.map(threads)
            assert {n for n, _ in seen} == {1}  # 2 threads shared by 3 partitions
            assert not any("Actor" in name for _, name in seen)
            one = solvers.train(local, solver="mfn", **MFN_EXACT)
            many = solvers.train(data, solver="mfn", **MFN_EXACT)
            assert _relative(_beta(one.model), _beta(many.model)) <= 1e-9
            options = {"loss": "hinge", "method": "ocas", "max_iter": 10}
            assert_same_records(solvers.train(local, solver="cutting_plane", **options),
                                solvers.train(data, solver="cutting_plane", **options), 10)
        finally:
            data.close()


@pytest.mark.parametrize(("name", "loss"), [("dna", "squared_hinge"),
                                           ("a9a", "modified_huber")])
def test_mfn_one_vs_rest_and_modified_huber_equal_the_single_machine(client, files, name,
                                                                     loss):
    local, data = _read(client, files, name, 3)
    if True:
        options = {**MFN_EXACT, "loss": loss, "C": 0.5}
        one = solvers.train(local, solver="mfn", **options)
        many = solvers.train(data, solver="mfn", **options)
        assert many.status == "converged", many.message
        assert len(many.subproblems) == (3 if name == "dna" else 1)
        assert many.objective == pytest.approx(one.objective, rel=1e-9)
        assert _relative(_beta(one.model), _beta(many.model)) <= 1e-9
        assert np.array_equal(many.model.predict(local.X), one.model.predict(local.X))


@pytest.mark.parametrize("setting, value", [
    ("DISTRIBUTED_COMPACT_MAX_FRACTION", 0.0),
    # the memory rule: no copy fits in a millionth of the workers' limit
    ("DISTRIBUTED_COMPACT_MEMORY_FRACTION", 1e-6),
])
def test_mfn_without_compacting_the_active_rows_equals_the_single_machine(client, files,
                                                                       monkeypatch, setting,
                                                                       value):
    """CGLS passes over all of a partition's rows with the inactive ones weighted zero (no
    copy of the active rows: what lets the rows take a worker's memory nearly whole), asked
    for (DISTRIBUTED_COMPACT_MAX_FRACTION = 0) or because the copy would not fit the worker's
    memory limit (the memory rule): the same optimum, and the records say so."""
    monkeypatch.setattr(config, setting, value)
    local, data = _read(client, files, "a9a", 3)
    one = solvers.train(local, solver="mfn", **MFN_EXACT)
    many = solvers.train(data, solver="mfn", **MFN_EXACT)
    assert many.status == "converged", many.message
    assert min(r.extras["active"] for r in many.log) < data.n_samples  # rows were inactive
    uncompacted = [r.extras.get("uncompacted_partitions", 0) for r in many.log]
    # every partition that holds rows (one of the three shards is empty), at a point where
    # rows were inactive
    assert max(uncompacted) == sum(1 for size in data.partition_sizes if size) == 2
    assert many.objective == pytest.approx(one.objective, rel=1e-9)
    assert _relative(_beta(one.model), _beta(many.model)) <= 1e-9


def test_mfn_compacts_the_active_rows_where_memory_allows(client, files):
    """The defaults on workers with memory to spare (a LocalCluster's limit is the machine's
    memory over its workers): every partition copies its active rows, as one machine's
    engine does."""
    _, data = _read(client, files, "a9a", 3)
    many = solvers.train(data, solver="mfn", **MFN_EXACT)
    assert many.status == "converged", many.message
    assert min(r.extras["active"] for r in many.log) < data.n_samples
    assert not any("uncompacted_partitions" in r.extras for r in many.log)


def test_mfn_with_the_defaults_reaches_the_same_certified_gap(client, files):
    """Default parameters (gap stop, heuristics, C path at a large C): the distributed run
    certifies the gap asked, so its objective is within tol of the single machine's."""
    local, data = _read(client, files, "a9a", 3)
    for C in (100.0,):
        one = solvers.train(local, solver="mfn", C=C)
        many = solvers.train(data, solver="mfn", C=C)
        assert many.status == "converged", many.message
        tol = many.params.tol
        assert many.log[-1].optimality <= tol
        assert abs(many.objective - one.objective) <= 2 * tol * one.objective


# -- cutting planes: the same iterates ---------------------------------------------------------


@pytest.mark.parametrize(("method", "count"), [("ocas", 2), ("ocas", 3), ("ocas", 7),
                                              ("cpa", 7)])
def test_cutting_plane_iterates_equal_the_single_machine(client, files, method, count,
                                                         monkeypatch):
    # few breakpoints gathered: the line search's selection rounds run, not only its sweep
    monkeypatch.setattr(config, "DISTRIBUTED_GATHER_BREAKPOINTS", 64)
    local, data = _read(client, files, "a9a", count)
    options = {"loss": "hinge", "method": method, "max_iter": 12}
    one = solvers.train(local, solver="cutting_plane", **options)
    many = solvers.train(data, solver="cutting_plane", **options)
    assert_same_records(one, many, 12)
    for a, b in zip(one.log, many.log, strict=True):
        assert b.extras["mu"] == pytest.approx(a.extras["mu"], rel=1e-6, abs=1e-12)
    assert _relative(_beta(one.model), _beta(many.model)) <= 1e-9
    # the communication record: every iteration's reductions and bytes; only d-vectors and
    # scalars move (far less than one n-vector per reduction)
    d = data.n_features + 1
    for record in many.log:
        assert record.extras["reductions"] >= 1
        assert 0 < record.extras["bytes_moved"] <= \
            record.extras["reductions"] * data.n_partitions * (2 * d + 3 * 64 + 200) * 8


def test_ocas_solved_to_tol_certifies_the_same_optimum(client, files):
    local, data = _read(client, files, "a9a", 3)
    one = solvers.train(local, solver="cutting_plane", loss="hinge", tol=1e-4)
    many = solvers.train(data, solver="cutting_plane", loss="hinge", tol=1e-4)
    assert many.status == "converged", many.message
    assert many.log[-1].optimality <= 1e-4
    assert many.objective == pytest.approx(one.objective, rel=2e-4)


def test_ocas_one_vs_rest(client, files):
    local, data = _read(client, files, "dna", 7)
    options = {"loss": "hinge", "max_iter": 5}
    one = solvers.train(local, solver="cutting_plane", **options)
    many = solvers.train(data, solver="cutting_plane", **options)
    assert [s.label for s in many.subproblems] == [s.label for s in one.subproblems]
    for a, b in zip(one.log, many.log, strict=True):
        assert b.objective == pytest.approx(a.objective, rel=1e-9)
    assert _relative(_beta(one.model), _beta(many.model)) <= 1e-9
    assert list(many.model.classes_) == list(one.model.classes_)


class _KillWorkerAt:
    """A monitor that SIGKILLs a worker process at an iteration (its nanny, if any, starts
    another: a deployment's worker lost to the out-of-memory killer)."""

    def __init__(self, client, address, iteration):
        self.pid = client.run(os.getpid, workers=[address])[address]
        self.iteration, self.killed = iteration, False

    def report(self, record):
        if record.iteration == self.iteration and not self.killed:
            os.kill(self.pid, signal.SIGKILL)
            self.killed = True

    def stop_reason(self):
        return None


@pytest.mark.slow  # 21 s; the LocalCluster tests cover the solve
def test_on_dask_scheduler_and_dask_worker_processes(files, tmp_path):
    """The same solve on a cluster started as a deployment starts it: ``dask scheduler`` and
    two ``dask worker`` processes (1 thread each, each under its nanny), found through a
    scheduler file; then a worker process killed mid-solve: its partitions are read again
    (on the survivor or the worker its nanny started) and the solve reaches the same
    optimum."""
    scheduler_file = tmp_path / "scheduler.json"
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parents[1])}
    started = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--port", "0",
                                 "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + TIMEOUT
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        started += [subprocess.Popen([sys.executable, "-m", "dask", "worker", "--nthreads",
                                      "1", "--no-dashboard", "--scheduler-file",
                                      str(scheduler_file)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for _ in range(2)]
        with distributed.Client(scheduler_file=str(scheduler_file), timeout=TIMEOUT,
                                direct_to_workers=True) as client:
            client.wait_for_workers(2, timeout=TIMEOUT)
            local, data = _read(client, files, "dna", 3)
            one = solvers.train(local, solver="mfn", **MFN_EXACT)
            many = solvers.train(data, solver="mfn", **MFN_EXACT)
            assert many.objective == pytest.approx(one.objective, rel=1e-9)
            assert _relative(_beta(one.model), _beta(many.model)) <= 1e-9
            victim = data.partitions.workers[1]
            killer = _KillWorkerAt(client, victim, iteration=2)
            resumed = solvers.train(data, solver="mfn", monitor=killer, **MFN_EXACT)
            assert killer.killed
            assert resumed.objective == pytest.approx(one.objective, rel=1e-9)
            assert _relative(_beta(one.model), _beta(resumed.model)) <= 1e-9
            (warning,) = resumed.warnings
            assert f"worker(s) {victim} lost after 2 iteration record(s)" in warning
            assert victim not in data.partitions.workers
            data.close()
    finally:
        for process in reversed(started):
            process.terminate()
        for process in reversed(started):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


# -- what is refused ------------------------------------------------------------------------------


def test_solvers_that_do_not_declare_distributed_data_are_refused_with_the_reason(client,
                                                                                   files):
    _, data = _read(client, files, "dna", 2)
    with pytest.raises(InvalidParametersError, match="does not train on distributed data"):
        solvers.train(data, solver="smo")
    with pytest.raises(InvalidParametersError, match="name the solver"):
        solvers.train(data, solver="auto")
    with pytest.raises(InvalidParametersError, match="homotopy"):
        solvers.train(data, solver="mfn", loss="hinge")
    with pytest.raises(InvalidParametersError, match="scale="):
        solvers.train(data, solver="mfn", scale="maxabs")
    with pytest.raises(InvalidParametersError, match="not task 'crammer_singer'"):
        solvers.train(data, solver="cutting_plane", loss="hinge",
                      multiclass="crammer_singer")


# -- a worker lost mid-training ------------------------------------------------------------------


class _KillAt:
    """A monitor that kills one worker process (SIGKILL, as an out-of-memory kill) at an
    iteration."""

    def __init__(self, pid, iteration):
        self.pid, self.iteration = pid, iteration

    def report(self, record):
        if record.iteration == self.iteration:
            os.kill(self.pid, signal.SIGKILL)

    def stop_reason(self):
        return None


def test_a_worker_lost_mid_training_fails_the_solve_with_the_reason(client, files,
                                                                      monkeypatch):
    """Last in the module: it kills one of the shared cluster's workers (its nanny starts
    another).  With no restart allowed (``restarts=0``) the loss fails the solve; the
    restarts themselves are tests/test_distributed_retry.py's."""
    monkeypatch.setattr(config, "DISTRIBUTED_ROUND_TIMEOUT", 60.0)
    data = sd.read_svmlight(client, _shards(files, "a9a", 2), restarts=0)
    pid = data.partitions.actors[1].pid().result(timeout=TIMEOUT)
    start = time.perf_counter()
    with pytest.raises(sd.PartitionLostError, match="read the dataset again"):
        solvers.train(data, solver="cutting_plane", loss="hinge", tol=1e-9,
                      monitor=_KillAt(pid, 3))
    assert time.perf_counter() - start < 90
