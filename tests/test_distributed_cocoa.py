"""dual_cd on distributed data: CoCoA+ (solvers.dual_cd.cocoa, issue 51).

The driver runs over the partitions of this process (``LocalPartitions``: rows sliced from one
problem) or over a distributed dataset's on Dask workers; the certified gap is checked against
LIBLINEAR's optimum on 2, 3 and 7 unequal shards with an empty one, the two row operators take
the same iterates, one partition is the serial descent, and a lost worker's solve resumes.
"""

from __future__ import annotations

import numpy as np
import pytest
from distributed_helpers import SHARDINGS, cluster_client, head, relative, shards
from test_dual_cd import liblinear_beta

import solvers
from solvers.base import InvalidParametersError
from solvers.dual_cd import DualCDParams, dcd_epochs
from solvers.dual_cd.cocoa import LocalPartitions, cocoa_dual, solve_cocoa
from solvers.monitor import ListMonitor
from solvers.problems import BinaryProblem

distributed = pytest.importorskip("distributed")
sd = pytest.importorskip("solvers.distributed")

ROWS = 3000


def _problem(path, loss, bias="none", C=1.0) -> BinaryProblem:
    data = solvers.read_svmlight(path)
    y = np.where(data.y == data.classes[1], 1.0, -1.0)
    return BinaryProblem(data.X, y, C=C, loss=loss, bias=bias)


def _liblinear_objective(problem: BinaryProblem) -> float:
    """P at LIBLINEAR -s 1 / -s 3's point at -e 1e-10 (an upper bound on P*)."""
    return problem.objective(liblinear_beta(problem))


def _sizes(n: int, count: int) -> list[int]:
    """``n`` rows in the proportions of SHARDINGS[count] (0: an empty partition)."""
    shares = np.asarray(SHARDINGS[count], dtype=np.float64)
    bounds = np.floor(np.cumsum(shares) / shares.sum() * n).astype(np.int64)
    bounds[-1] = n
    return list(np.diff(np.concatenate(([0], bounds))).astype(int))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = tmp_path_factory.mktemp("cocoa")
    return {"dir": out, "a9a": head("a9a", ROWS, out), "ijcnn1": head("ijcnn1", ROWS, out)}


@pytest.mark.parametrize("count", [2, 3, 7])
@pytest.mark.parametrize("name,loss,bias", [("a9a", "hinge", "none"),
                                            ("ijcnn1", "hinge", "regularized"),
                                            ("a9a", "squared_hinge", "regularized")])
def test_certified_gap_holds_against_liblinears_optimum(files, name, loss, bias, count):
    """On unequal partitions (SHARDINGS: one empty among 3 and among 7): the solve stops at
    the certified gap tol, the gap recomputed from alpha holds too, and P(w) is within tol P
    of the optimum, bracketed by LIBLINEAR's objective above and the serial descent's
    certified dual value below."""
    problem = _problem(files[name], loss, bias)
    tol = 1e-3  # a9a's 3,000 rows without a bias take CoCoA+ ~10^3 rounds to 1e-3 (below)
    sizes = _sizes(problem.n_samples, count)
    assert (0 in sizes) == (count > 2)
    solution = solve_cocoa(LocalPartitions(problem, sizes),
                           DualCDParams(loss=loss, bias=bias, tol=tol, max_iter=20000))
    assert solution.status == "converged", solution.message
    assert solution.extras["relative_duality_gap"] <= tol * (1 + 1e-6)
    assert solution.objective == pytest.approx(problem.objective(solution.beta), rel=1e-12)
    # LIBLINEAR's point bounds P* from above (at -e 1e-8 it stops at its 1,000 iterations on
    # some of these, a little above the optimum); the serial descent's certified D(alpha)
    # at a gap of 1e-9 bounds it from below
    liblinear = _liblinear_objective(problem)
    assert solution.objective <= liblinear + tol * solution.objective
    serial = solvers.dual_cd.solve(problem, DualCDParams(loss=loss, bias=bias, tol=1e-9))
    lower = serial.objective * (1 - serial.extras["relative_duality_gap"])
    assert lower <= liblinear * (1 + 1e-12)
    assert solution.objective >= lower * (1 - 1e-12)
    assert solution.objective <= lower + tol * solution.objective
    assert solution.extras["sigma"] == sum(1 for s in sizes if s)  # partitions with rows


def test_one_partition_is_the_serial_descent(files):
    """One partition: sigma = 1 and no line search, each round one outer iteration of
    dual_cd's kernel from the driver's w; after R rounds alpha is the kernel's after R
    epochs (same seed, same shrinking state) up to the one rounding per round of
    w + (v - w)."""
    problem = _problem(files["a9a"], "hinge")
    rounds = 4
    params = DualCDParams(loss="hinge", bias="none", tol=1e-12, max_iter=rounds)
    local = LocalPartitions(problem, [problem.n_samples])
    solve_cocoa(local, params)
    qp = problem.dual_qp()
    n = problem.n_samples
    alpha, w = np.zeros(n), problem.zeros()
    index, istate = np.arange(n, dtype=np.int64), np.array([n], dtype=np.int64)
    fstate = np.array([np.inf, -np.inf])
    rng = np.array([(0 * 0x9E3779B97F4A7C15 + 1) % 2**64 or 1], dtype=np.uint64)
    eps = params.eps
    for _ in range(rounds):
        _, met, _, _ = dcd_epochs(problem.X.indptr, problem.X.indices, problem.X.data,
                                  problem.y, 0.0, qp.diagonal(), qp.diagonal_shift, qp.upper,
                                  alpha, w, index, istate, fstate, rng, 1, eps, np.inf, True,
                                  1.0)
        if met:
            eps /= 10.0
    assert relative(cocoa_dual(local.parts[0]), alpha) <= 1e-10


def test_the_line_search_keeps_every_round_a_dual_descent(files):
    """sigma' = 1 on 3 partitions (below the safe 3): the partitions' steps overshoot
    together, the line search scales them back (steps below 1), and the dual value never
    falls from one checked round to the next."""
    problem = _problem(files["a9a"], "hinge")
    monitor = ListMonitor()
    solution = solve_cocoa(LocalPartitions(problem, _sizes(problem.n_samples, 3)),
                           DualCDParams(loss="hinge", bias="none", tol=1e-3, cocoa_sigma=1.0),
                           monitor)
    assert solution.status == "converged"
    assert solution.extras["steps"]["min"] < 1.0
    duals = [r.extras["dual_objective"] for r in monitor.records]
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(duals, duals[1:], strict=False))


@pytest.fixture(scope="module")
def client():
    yield from cluster_client()


@pytest.mark.dask
@pytest.mark.parametrize("count", [2, 3, 7])
def test_distributed_takes_the_local_iterates(client, files, count):
    """solvers.train on the shards (Dask workers) and solve_cocoa over the same rows sliced
    in this process take the same iterates: every record's P and gap, and the point."""
    local = solvers.read_svmlight(files["ijcnn1"])
    paths = shards(files, "ijcnn1", count)
    data = sd.read_svmlight(client, paths, n_features=local.n_features)
    # (the equality is the point: on 7 shards, sigma' = 6, 500 rounds end above tol, the
    # same 500 on each side)
    options = {"loss": "hinge", "bias": "regularized", "tol": 1e-3, "max_iter": 500}
    try:
        result = solvers.train(data, solver="dual_cd", **options)
    finally:
        data.close()
    y = np.where(local.y == local.classes[1], 1.0, -1.0)
    problem = BinaryProblem(local.X, y, C=1.0, loss="hinge", bias="regularized")
    monitor = ListMonitor()
    solution = solve_cocoa(LocalPartitions(problem, list(data.partition_sizes)),
                           DualCDParams(**options), monitor)
    assert result.status == solution.status
    assert len(result.log) == len(monitor.records) <= solution.iterations
    assert result.subproblems[0].iterations == solution.iterations
    for a, b in zip(monitor.records, result.log, strict=True):
        assert b.objective == pytest.approx(a.objective, rel=1e-12)
        assert b.optimality == pytest.approx(a.optimality, rel=1e-9, abs=1e-15)
    beta = np.concatenate([result.model.coef_.ravel(), np.ravel(result.model.intercept_)])
    w, intercept = problem.split(solution.beta)
    assert relative(np.r_[w, intercept], beta) <= 1e-12
    extras = result.subproblems[0].extras
    # the problem's posing, the dual state's, the rounds, the certificate
    assert extras["reductions"] == 1 + 1 + solution.iterations + 1
    assert extras["relative_duality_gap"] == pytest.approx(
        solution.extras["relative_duality_gap"], rel=1e-9)


@pytest.mark.dask
def test_what_cocoa_does_not_solve_is_refused_before_it_runs(client, files):
    local = solvers.read_svmlight(files["a9a"])
    data = sd.read_svmlight(client, shards(files, "a9a", 2), n_features=local.n_features)
    try:
        with pytest.raises(InvalidParametersError, match="entropy dual is not distributed"):
            solvers.train(data, solver="dual_cd", loss="logistic")
        with pytest.raises(InvalidParametersError, match="certified gap"):
            solvers.train(data, solver="dual_cd", loss="hinge",
                          stop_rule="projected_gradient")
    finally:
        data.close()


@pytest.mark.dask
def test_a_lost_worker_resumes_from_the_last_checked_w_and_certifies_the_gap(files):
    """A worker killed at the 3rd round: its partitions are read again on the survivor and
    the solve resumes from the last checked w (the problem is posed again on every
    partition: alpha by the KKT map of that w everywhere, A alpha summed afresh): not the
    same path, the same certified gap."""
    from test_distributed_retry import _KillAt  # noqa: PLC0415

    local = solvers.read_svmlight(files["ijcnn1"])
    # (resumed from the KKT map of a hinge's w, alpha_i in {0, C}, the path can be longer
    # than the cold one's)
    options = {"loss": "hinge", "bias": "regularized", "tol": 1e-3, "max_iter": 5000}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, worker_dashboard_address=None,
                                  env={"NUMBA_NUM_THREADS": "1"}, silence_logs=50) as cluster, \
            distributed.Client(cluster, timeout=120, direct_to_workers=True) as client:
        client.wait_for_workers(2, timeout=120)
        data = sd.read_svmlight(client, shards(files, "ijcnn1", 3),
                                n_features=local.n_features)
        whole = solvers.train(data, solver="dual_cd", **options)
        victim = data.partitions.workers[1]
        killer = _KillAt(client, [victim], iteration=3)
        result = solvers.train(data, solver="dual_cd", monitor=killer, **options)
        assert killer.killed_at is not None
        assert result.status == "converged", result.message
        assert result.subproblems[0].extras["relative_duality_gap"] <= 1e-3 * (1 + 1e-6)
        assert abs(result.objective - whole.objective) <= 2e-3 * whole.objective
        (warning,) = result.warnings
        assert f"worker(s) {victim} lost after 3 iteration record(s)" in warning
        assert "resumed from its last good iterate" in warning
        # the first resumed round starts from the checkpoint's alpha (the KKT map, scaled
        # by the dual's best factor): a dual value above a cold start's D(0) = 0
        assert result.log[3].extras["restart"] == 1
        assert result.log[3].extras["dual_objective"] > 0.0 == whole.log[0].extras[
            "dual_objective"]
        data.close()


def test_a_jobs_shown_parameters_hold_cocoas_fields_only_when_set():
    """CoCoA+'s ``local_epochs`` and ``cocoa_sigma`` act on distributed data only: a page
    lists them when the user set them, not at their defaults on every dual_cd job."""
    from solvers.train import validate_params

    _, plain = validate_params("dual_cd", {"loss": "hinge"})
    shown = type(plain).shown(plain.model_dump())
    assert not {"local_epochs", "cocoa_sigma"} & set(shown) and "tol" in shown
    _, set_ = validate_params("dual_cd", {"loss": "hinge", "local_epochs": 2,
                                          "cocoa_sigma": 1.5})
    shown = type(set_).shown(set_.model_dump())
    assert shown["local_epochs"] == 2 and shown["cocoa_sigma"] == 1.5
