"""A worker lost mid-training (solvers.distributed, issue 36): the lost partitions are read
again from their shards onto the workers left and the solve resumes, a bounded number of
times; with no worker left it fails with the reason, within a bound, never hanging.

Each test has its own ``LocalCluster`` of 2 worker processes x 1 thread (spawned) and kills
worker processes in it (SIGKILL, as an out-of-memory kill) from a monitor at an iteration.
The victim's nanny is first told to close instead of starting another worker
(``Nanny.close_gracefully``): the worker is gone for good, so the partitions must go to the
survivor.  The data are the first 3,000 rows of a9a in 3 shards of unequal sizes (shard k
on worker k mod 2).
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from shared_data import data_path

import solvers
from solvers import config

distributed = pytest.importorskip("distributed")
sd = pytest.importorskip("solvers.distributed")

pytestmark = pytest.mark.dask

TIMEOUT = 120


@pytest.fixture
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, worker_dashboard_address=None,
                                  env={"NUMBA_NUM_THREADS": "1"}, silence_logs=50) as cluster, \
            distributed.Client(cluster, timeout=TIMEOUT, direct_to_workers=True) as client:
        client.wait_for_workers(2, timeout=TIMEOUT)
        yield client


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    out = tmp_path_factory.mktemp("retry")
    head = out / "a9a.head3000"
    with open(data_path("a9a"), "rb") as source, open(head, "wb") as sink:
        for _, line in zip(range(3000), source, strict=False):
            sink.write(line)
    return head, sd.split_svmlight(head, out / "shards", fractions=[1, 2, 3])


def _close_nanny(dask_worker):
    dask_worker.close_gracefully(reason="test: the worker is lost for good")


class _KillAt:
    """A monitor that, at an iteration, kills worker processes for good: their nannies are
    told not to start others, then the processes get SIGKILL."""

    def __init__(self, client, addresses, iteration):
        self.client, self.addresses, self.iteration = client, list(addresses), iteration
        self.pids = client.run(os.getpid, workers=self.addresses)
        self.killed_at = None
        self.notices = []

    def report(self, record):
        if record.iteration == self.iteration and self.killed_at is None:
            self.client.run(_close_nanny, workers=self.addresses, nanny=True)
            for address in self.addresses:
                os.kill(self.pids[address], signal.SIGKILL)
            self.killed_at = time.perf_counter()

    def stop_reason(self):
        return None

    def notice(self, text):
        self.notices.append(text)


def _beta(model) -> np.ndarray:
    return np.concatenate([model.coef_.ravel(), np.ravel(model.intercept_)])


def _holder_of_partition(data, k):
    return data.partitions.workers[k]


MFN_EXACT = {"tol": None, "epsilon": 1e-10}


def test_mfn_resumes_on_the_survivor_and_reaches_the_same_optimum(client, shards):
    """mfn resumes from its last iterate (a warm start at the target C): the same optimum as
    the uninterrupted solve, to 1e-9 relative (the problem is strictly convex and both are
    driven to rule (13) at eps = 1e-10)."""
    head, paths = shards
    data = sd.read_svmlight(client, paths)
    whole = solvers.train(data, solver="mfn", **MFN_EXACT)  # uninterrupted, same cluster
    assert whole.status == "converged" and not whole.warnings
    victim = _holder_of_partition(data, 1)  # partition 1 (and no other of the 3)
    (survivor,) = [w for w in client.scheduler_info()["workers"] if w != victim]
    killer = _KillAt(client, [victim], iteration=2)
    result = solvers.train(data, solver="mfn", monitor=killer, **MFN_EXACT)
    assert killer.killed_at is not None
    assert result.status == "converged", result.message
    assert result.objective == pytest.approx(whole.objective, rel=1e-9)
    beta, reference = _beta(result.model), _beta(whole.model)
    assert np.linalg.norm(beta - reference) <= 1e-9 * np.linalg.norm(reference)
    # what happened is said: which worker, which partition went where, from which point
    (warning,) = result.warnings
    assert f"worker(s) {victim} lost after 2 iteration record(s)" in warning
    assert f"partition(s) 1 -> {survivor} read again from their shards" in warning
    assert "resumed from its last good iterate (restart 1 of at most 2)" in warning
    (restart,) = result.model.metadata["distributed"]["restarts"]
    assert restart["lost_workers"] == [victim] and restart["partitions"] == {"1": survivor}
    assert result.model.metadata["warnings"] == [warning]
    assert killer.notices == [warning]  # told at once, not only at the end
    assert data.partitions.workers == [survivor] * 3
    # the log goes on: numbered on, the resumed records tagged
    iterations = [r.iteration for r in result.log]
    assert iterations == list(range(1, len(iterations) + 1))
    assert [r.extras.get("restart") for r in result.log[:2]] == [None, None]
    assert all(r.extras["restart"] == 1 for r in result.log[2:]) and len(result.log) > 2
    # the model is the same: every row predicted alike
    local = solvers.read_svmlight(head)
    assert np.array_equal(result.model.predict(local.X), whole.model.predict(local.X))
    data.close()


def test_ocas_resumes_with_its_cuts_and_certifies_the_gap(client, shards):
    """OCAS resumes at its w_best with every cut it had (they are on the driver): a
    documented restart, not the same path (the paths part), so the check is the certified
    gap: both runs stop at tol, within 2 tol of each other."""
    _, paths = shards
    data = sd.read_svmlight(client, paths)
    options = {"loss": "hinge", "tol": 1e-4}
    whole = solvers.train(data, solver="cutting_plane", **options)
    assert whole.status == "converged"
    victim = _holder_of_partition(data, 0)  # partitions 0 and 2
    killer = _KillAt(client, [victim], iteration=5)
    result = solvers.train(data, solver="cutting_plane", monitor=killer, **options)
    assert result.status == "converged", result.message
    assert result.log[-1].optimality <= 1e-4
    assert abs(result.objective - whole.objective) <= 2e-4 * whole.objective
    (warning,) = result.warnings
    assert f"worker(s) {victim} lost after 5 iteration record(s)" in warning
    assert "partition(s) 0 -> " in warning and ", 2 -> " in warning
    # resumed with the cuts: the first resumed record already has the bound it had
    before, after = result.log[4], result.log[5]
    assert after.extras["restart"] == 1
    assert after.extras["lower_bound"] >= 0.99 * before.extras["lower_bound"]
    assert result.subproblems[0].extras["restarts"] == 1
    data.close()


def test_interior_point_resumes_warm_from_its_last_iterate(client, shards):
    """The MPC method resumes from the last recorded iterate's (w, b) (``problem.checkpoint``)
    by the single machine's warm start (an interior point near it): not the same path, the
    same optimum, both certified at tol."""
    _, paths = shards
    data = sd.read_svmlight(client, paths)
    options = {"loss": "hinge", "bias": "free", "linear_solver": "direct", "tol": 1e-8}
    whole = solvers.train(data, solver="interior_point", **options)
    assert whole.status == "converged" and whole.subproblems[0].extras["start"] == "scaled"
    killer = _KillAt(client, [_holder_of_partition(data, 1)], iteration=4)
    result = solvers.train(data, solver="interior_point", monitor=killer, **options)
    assert killer.killed_at is not None
    assert result.status == "converged", result.message
    assert result.log[-1].optimality <= 1e-8
    assert result.objective == pytest.approx(whole.objective, rel=2e-8)
    (warning,) = result.warnings
    assert "lost after 4 iteration record(s)" in warning
    assert "resumed from its last good iterate" in warning
    assert result.subproblems[0].extras["start"] == "warm"
    # the first resumed record starts near the optimum, not from the cold start's gap
    assert result.log[4].extras["restart"] == 1
    assert result.log[4].optimality < whole.log[0].optimality
    data.close()


def test_with_no_worker_left_the_solve_fails_with_the_reason_in_bounded_time(client, shards,
                                                                             monkeypatch):
    monkeypatch.setattr(config, "DISTRIBUTED_ROUND_TIMEOUT", 60.0)
    monkeypatch.setattr(config, "DISTRIBUTED_PROBE_TIMEOUT", 10.0)
    monkeypatch.setattr(config, "DISTRIBUTED_WORKER_WAIT", 5.0)
    _, paths = shards
    data = sd.read_svmlight(client, paths)
    killer = _KillAt(client, sorted(client.scheduler_info()["workers"]), iteration=2)
    with pytest.raises(sd.PartitionLostError, match="no worker left") as raised:
        solvers.train(data, solver="mfn", monitor=killer, **MFN_EXACT)
    assert time.perf_counter() - killer.killed_at < 90
    assert "partitions [0, 1, 2] were lost" in str(raised.value)
    assert "to read their shards again" in str(raised.value)


def test_restarts_spent_fail_with_the_reason(client, shards):
    """restarts=0: the first loss fails the solve, saying so and what to do."""
    _, paths = shards
    data = sd.read_svmlight(client, paths, restarts=0)
    killer = _KillAt(client, [_holder_of_partition(data, 1)], iteration=2)
    with pytest.raises(sd.PartitionLostError, match="read the dataset again") as raised:
        solvers.train(data, solver="mfn", monitor=killer, **MFN_EXACT)
    assert "gave up: 0 restart(s) already made, restarts=0" in str(raised.value)


class _StopAt:
    """A monitor that, at an iteration, stops a worker process (SIGSTOP): it lives, its
    nanny does not restart it, the scheduler still lists it, but it answers nothing and
    sends no heartbeat (a hung worker)."""

    def __init__(self, client, address, iteration):
        self.client, self.address, self.iteration = client, address, iteration
        self.pid = client.run(os.getpid, workers=[address])[address]
        self.stopped_at = None

    def report(self, record):
        if record.iteration == self.iteration and self.stopped_at is None:
            os.kill(self.pid, signal.SIGSTOP)
            self.stopped_at = time.perf_counter()

    def stop_reason(self):
        return None

    def resume(self):
        if self.stopped_at is not None:
            os.kill(self.pid, signal.SIGCONT)


def test_a_hung_worker_is_found_by_its_heartbeats_and_the_solve_resumes(client, shards,
                                                                          monkeypatch):
    """A worker that stops answering without dying (SIGSTOP) is taken for lost once the
    scheduler has had no heartbeat from it for DISTRIBUTED_HEARTBEAT_TIMEOUT seconds, not
    after the round's timeout (600 s by default; a hang here would end the test at 60):
    its partitions are read again on the other worker and mfn reaches the same optimum."""
    monkeypatch.setattr(config, "DISTRIBUTED_HEARTBEAT_TIMEOUT", 3.0)
    monkeypatch.setattr(config, "DISTRIBUTED_HEARTBEAT_POLL", 0.5)
    monkeypatch.setattr(config, "DISTRIBUTED_PROBE_TIMEOUT", 5.0)
    monkeypatch.setattr(config, "DISTRIBUTED_ROUND_TIMEOUT", 60.0)
    _, paths = shards
    data = sd.read_svmlight(client, paths)
    whole = solvers.train(data, solver="mfn", **MFN_EXACT)
    victim = _holder_of_partition(data, 1)
    (survivor,) = [w for w in client.scheduler_info()["workers"] if w != victim]
    stopper = _StopAt(client, victim, iteration=2)
    try:
        result = solvers.train(data, solver="mfn", monitor=stopper, **MFN_EXACT)
        found_in = time.perf_counter() - stopper.stopped_at
    finally:
        stopper.resume()  # the cluster's teardown needs it to answer
    assert result.status == "converged", result.message
    assert result.objective == pytest.approx(whole.objective, rel=1e-9)
    beta, reference = _beta(result.model), _beta(whole.model)
    assert np.linalg.norm(beta - reference) <= 1e-9 * np.linalg.norm(reference)
    (warning,) = result.warnings
    assert f"partition(s) 1 -> {survivor} read again from their shards" in warning
    assert found_in < 45  # heartbeats (3 s), the probe (5 s), the read and the solve
    assert data.partitions.workers == [survivor] * 3


def test_shards_that_do_not_fit_fail_the_read_with_the_reason(monkeypatch):
    """A worker paused by Dask's memory manager (80% of its limit) with partitions still to
    read on it would never resume (the partitions it holds keep their memory): the read
    fails after DISTRIBUTED_PAUSED_TIMEOUT naming the worker and what to do, instead of
    waiting out DISTRIBUTED_ROUND_TIMEOUT once per partition."""
    from distributed_helpers import ballast_partition

    monkeypatch.setattr(config, "DISTRIBUTED_PAUSED_TIMEOUT", 3.0)
    monkeypatch.setattr(config, "DISTRIBUTED_HEARTBEAT_POLL", 0.5)
    monkeypatch.setattr(config, "DISTRIBUTED_ROUND_TIMEOUT", 120.0)
    # 48 MB a partition (50,000 rows of 80 entries): 1 GB of them for a worker of 1 GB,
    # which pauses at 0.8 GB (each step is well below the nanny's 0.95 GB)
    sources = [("call", ballast_partition, (50_000, 20_000, 80)) for _ in range(21)]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  memory_limit="1GB", dashboard_address=None,
                                  worker_dashboard_address=None,
                                  env={"NUMBA_NUM_THREADS": "1",
                                       "MALLOC_TRIM_THRESHOLD_": "65536",
                                       "MALLOC_MMAP_THRESHOLD_": "65536"},
                                  silence_logs=50) as cluster, \
            distributed.Client(cluster, timeout=TIMEOUT, direct_to_workers=True) as client:
        (worker,) = client.scheduler_info()["workers"]
        start = time.perf_counter()
        with pytest.raises(sd.WorkerMemoryError) as raised:
            sd.read_svmlight(client, sources, n_features=20_000)
        assert time.perf_counter() - start < 90
    text = str(raised.value)
    assert f"worker {worker} was paused by Dask's memory manager" in text
    assert "GB memory limit" in text and "partition(s) still to read on it" in text
    assert "Use more workers or a larger memory limit" in text
