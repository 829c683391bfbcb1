"""Cross-validation: warm-started C paths equal cold solves fold by fold, agree with scikit-
learn's LinearSVC on the same folds, and cover multi-class, ordinal and kernel grids."""

from __future__ import annotations

import os

import numba
import numpy as np
import pytest
from shared_data import data_path, load

import solvers
from bench.problems import BenchProblem
from solvers import model_selection
from solvers.lssvm.systems import KernelWork, LSSVMIterative, ProximalIterative
from solvers.model_selection import cross_validate, parallel_folds, threadsafe_threading_layer
from solvers.monitor import ListMonitor
from solvers.train import validate_params

GRID = [0.01, 0.1, 1.0, 10.0]


def test_folds_are_checked():
    heart = load("heart_scale")
    with pytest.raises(ValueError, match="at least 2"):
        cross_validate(heart, "mfn", C=[1.0], folds=1)
    with pytest.raises(ValueError, match="folds need at least"):
        cross_validate(heart.subset(np.arange(4)), "mfn", C=[1.0], folds=5)


def test_warm_path_equals_cold_solves_fold_by_fold():
    """mfn's beta-seeded path (warm), every point exact (fit_gap=None), gives the fold accuracies
    and objectives of cold solves."""
    dataset = load("a9a")
    folds = dataset.stratified_folds(3, seed=0)
    result = cross_validate(dataset, "mfn", C=GRID, folds=3, seed=0, fit_gap=None)
    assert result.warm_start and result.metric == "accuracy"
    assert result.fit_gap is None and result.fit_gap_parameter is None
    for row in result.scores:
        for fold, score in enumerate(row.fold_scores):
            cold = solvers.train(dataset.subset(folds != fold), solver="mfn", C=row.C)
            test = dataset.subset(folds == fold)
            assert score == pytest.approx(np.mean(cold.model.predict(test.X) == test.y),
                                          abs=2.0 / test.n_samples)
        colds = [solvers.train(dataset.subset(folds != f), solver="mfn", C=row.C).objective
                 for f in range(3)]
        assert row.objective == pytest.approx(np.mean(colds), rel=1e-6)
    assert result.best_C in GRID


@pytest.mark.parametrize("name", ["a9a", pytest.param("news20-binary", marks=pytest.mark.slow)])
def test_points_solved_to_a_certified_gap_score_as_exact_ones(name):
    """The default fit_gap (1e-3): every fold's objective is within the certified gap of the
    exact optimum (P <= P* / (1 - tol)), the fold accuracies are those of exact solves within
    0.05 percentage points of the test fold (a handful of examples on the decision
    boundary), and the best C is the same.  news20 made binary is the text case, where step 3
    runs CG and the gap round's looser eps matters."""
    dataset = BenchProblem(name).train_dataset()  # news20's groups 1-10 against 11-20
    grid = [0.03125, 0.25, 2.0]
    loose = cross_validate(dataset, "mfn", C=grid, folds=3, seed=0)
    exact = cross_validate(dataset, "mfn", C=grid, folds=3, seed=0, fit_gap=None, tol=None)
    assert (loose.fit_gap, loose.fit_gap_parameter) == (1e-3, "tol")
    folds = dataset.stratified_folds(3, seed=0)
    for approximate, optimal in zip(loose.scores, exact.scores, strict=True):
        assert optimal.objective <= approximate.objective <= optimal.objective / (1 - 1e-3)
        for fold, (a, b) in enumerate(zip(approximate.fold_scores, optimal.fold_scores,
                                          strict=True)):
            assert abs(a - b) <= max(5e-4, 1.0 / np.sum(folds == fold)), (fold, a, b)
    assert loose.best_C == exact.best_C


def test_agrees_with_scikit_learn_linear_svc_on_the_same_folds():
    """Squared hinge, regularized bias (LinearSVC's intercept_scaling = 1 is LIBLINEAR -B 1):
    mean accuracy per C within 0.1 percentage points."""
    from sklearn.svm import LinearSVC

    dataset = load("w8a")
    folds = dataset.stratified_folds(3, seed=1)
    result = cross_validate(dataset, "mfn", C=[0.1, 1.0], folds=3, seed=1)
    for row in result.scores:
        accuracies = []
        for fold in range(3):
            train_set = dataset.subset(folds != fold)
            test = dataset.subset(folds == fold)
            model = LinearSVC(C=row.C, tol=1e-8, max_iter=100_000).fit(train_set.X, train_set.y)
            accuracies.append(np.mean(model.predict(test.X) == test.y))
        assert row.mean == pytest.approx(np.mean(accuracies), abs=1e-3)


def test_multiclass_ordinal_and_refit():
    dna = load("dna.scale")
    result = cross_validate(dna, "mfn", C=[0.01, 0.1], folds=3, refit=True)
    assert result.warm_start and len(result.scores) == 2
    assert result.model is not None and result.refit.params.C == result.best_C
    assert 0.8 < max(row.mean for row in result.scores) <= 1.0
    diabetes = load("diabetes_scale")
    ordinal = cross_validate(diabetes, "mfn", C=[0.1, 1.0], folds=3, task="ordinal")
    assert ordinal.metric == "mean_absolute_rank_error" and ordinal.warm_start
    best = min(ordinal.scores, key=lambda r: r.mean)
    assert ordinal.best_C == best.C


def test_interior_point_one_vs_rest_path_is_warm_and_scores_as_cold():
    """Multi-class data through the interior-point method: each class's binary C path starts
    from an interior point near its last solution, and the fold scores are those of every
    point solved cold within a few examples (dna: the same table, measured 2026-11-25)."""
    dna = load("dna.scale")
    options = {"C": [2.0 ** -5, 2.0 ** -3, 2.0 ** -1], "folds": 3, "seed": 0}
    warm = cross_validate(dna, "interior_point", **options)
    cold = cross_validate(dna, "interior_point", warm_start=False, **options)
    assert warm.warm_start and not cold.warm_start
    fold_sizes = np.bincount(dna.stratified_folds(3, seed=0))
    for row, cold_row in zip(warm.scores, cold.scores, strict=True):
        for size, score, cold_score in zip(fold_sizes, row.fold_scores, cold_row.fold_scores,
                                           strict=True):
            assert abs(score - cold_score) <= 3.0 / size, row.C


def test_ordinal_path_is_beta_seeded_and_stays_certified():
    """mfn's ordinal C path (the path handler, beta-seeded like the binary one): every point
    within the certified 1e-3 of the cold optimum (mfn's exact default), the fold scores those
    of the cold search within a few examples."""
    dna = load("dna.scale").subset(np.arange(600))  # three classes: ranks 1..3
    options = {"C": GRID, "folds": 3, "task": "ordinal"}
    warm = cross_validate(dna, "mfn", **options)
    exact = cross_validate(dna, "mfn", warm_start=False, fit_gap=None, **options)
    assert warm.warm_start and not exact.warm_start
    for row, exact_row in zip(warm.scores, exact.scores, strict=True):
        assert exact_row.objective * (1 - 1e-9) <= row.objective \
            <= exact_row.objective / (1 - 1e-3)
        assert row.mean == pytest.approx(exact_row.mean, abs=3 * 3 / 600)


def test_crammer_singer_warm_starts_along_c_through_its_path_handler():
    """The cutting planes' Crammer-Singer C path (cuts carried, rescaled) serves the
    multi-class search: every point within the certified 1e-3 of the cold optimum (to a 1e-8
    gap), fold scores those of the cold fits within a few examples; warm_start=False solves
    cold and says so."""
    dna = load("dna.scale").subset(np.arange(600))
    folds = dna.stratified_folds(3, seed=0)
    grid = [0.01, 0.1, 1.0]
    options = {"multiclass": "crammer_singer", "C": grid, "folds": 3, "seed": 0}
    result = cross_validate(dna, "cutting_plane", **options)
    assert result.warm_start and result.fit_gap == 1e-3
    assert not cross_validate(dna, "cutting_plane", warm_start=False, **options).warm_start
    for row in result.scores:
        optima, accuracies = [], []
        for fold in range(3):
            cold = solvers.train(dna.subset(folds != fold), solver="cutting_plane", C=row.C,
                                 multiclass="crammer_singer", tol=1e-8)
            test = dna.subset(folds == fold)
            optima.append(cold.objective)
            accuracies.append(np.mean(cold.model.predict(test.X) == test.y))
        assert np.mean(optima) * (1 - 1e-8) <= row.objective <= np.mean(optima) / (1 - 1e-3)
        for fold, (score, cold_score) in enumerate(zip(row.fold_scores, accuracies,
                                                        strict=True)):
            assert abs(score - cold_score) <= 3.0 / np.sum(folds == fold), (row.C, fold)


def test_the_result_says_warm_exactly_where_the_spec_does():
    """cross_validate is warm for the tasks of ``SolverSpec.warm_start_tasks`` (every solver's
    binary problems since the interior-point method's warm start) and cold for the rest."""
    heart = load("heart_scale")
    for solver, options in (("mfn", {}), ("alm", {}), ("cutting_plane", {}),
                            ("interior_point", {}), ("lssvm", {"kernel": "linear"})):
        result = cross_validate(heart, solver, C=[0.1, 1.0], folds=3, **options)
        assert result.warm_start == ("binary" in
                                     solvers.get_solver(solver).warm_start_tasks()), solver


@pytest.mark.parametrize("solver", ["lssvm", "proximal_svm"])
def test_least_squares_linear_path_starts_each_c_from_the_last(solver):
    """The linear kernel's primal CGLS along C from the last solution: the objectives of cold
    fits (both solved to the solver's tolerance) and the same fold scores."""
    australian = load("australian_scale")
    options = {"C": GRID, "folds": 3, "kernel": "linear"}
    warm = cross_validate(australian, solver, **options)
    cold = cross_validate(australian, solver, warm_start=False, **options)
    assert warm.warm_start and not cold.warm_start
    for row, cold_row in zip(warm.scores, cold.scores, strict=True):
        assert row.fold_scores == cold_row.fold_scores
        assert row.objective == pytest.approx(cold_row.objective, rel=1e-6)


@pytest.mark.parametrize("solver", ["lssvm", "proximal_svm"])
def test_least_squares_iterative_kernel_path_starts_each_cg_from_the_last_c(solver):
    """The iterative kernel systems along C share the row cache and start each C's CG from
    the last C's solution: the objectives of cold fits to the CG's tolerance, the same fold
    scores, fewer CG iterations in all."""
    heart = load("heart_scale")
    options = {"C": GRID, "gamma": [0.5], "folds": 3, "kernel": "rbf", "method": "iterative",
               "cg_tol": 1e-10}
    results = {warm: cross_validate(heart, solver, warm_start=warm, **options)
               for warm in (True, False)}
    assert results[True].warm_start and not results[False].warm_start
    for row, cold_row in zip(results[True].scores, results[False].scores, strict=True):
        assert row.fold_scores == cold_row.fold_scores
        assert row.objective == pytest.approx(cold_row.objective, rel=1e-8)
    work = KernelWork(heart.X, validate_params(solver, kernel="rbf", gamma=0.5)[1]
                      .kernel_function(), 16.0)
    cold_iterations, warm_iterations = 0, 0
    y = np.where(heart.y == heart.classes[1], 1.0, -1.0)
    system_params = validate_params(solver, kernel="rbf", gamma=0.5, method="iterative",
                                    cg_tol=1e-10)[1]
    start = None
    for C in GRID:
        system = (LSSVMIterative(work, np.full(heart.n_samples, C)) if solver == "lssvm" else
                  ProximalIterative(work, np.full(heart.n_samples, C), 1.0))
        cold_iterations += system.solve(y, np.full(heart.n_samples, C), system_params,
                                        ListMonitor()).iterations
        warm = system.solve(y, np.full(heart.n_samples, C), system_params, ListMonitor(),
                            start=start)
        warm_iterations += warm.iterations
        start = warm.unknown
    assert warm_iterations < cold_iterations


def test_kernel_grid_over_C_and_gamma():
    """The least-squares family's path shares the kernel matrix across C (per gamma): the
    direct solves give the table of cold fits."""
    heart = load("heart_scale")
    result = cross_validate(heart, "lssvm", C=[0.1, 1.0], gamma=[0.1, 1.0], folds=3)
    assert result.warm_start
    cold = cross_validate(heart, "lssvm", C=[0.1, 1.0], gamma=[0.1, 1.0], folds=3,
                          warm_start=False)
    assert not cold.warm_start
    for row, cold_row in zip(result.scores, cold.scores, strict=True):
        assert (row.C, row.gamma, row.fold_scores) == (cold_row.C, cold_row.gamma,
                                                       cold_row.fold_scores)
        assert row.objective == pytest.approx(cold_row.objective, rel=1e-9)
    assert {(row.C, row.gamma) for row in result.scores} == \
        {(0.1, 0.1), (1.0, 0.1), (0.1, 1.0), (1.0, 1.0)}
    best = max(result.scores, key=lambda r: r.mean)
    assert best.mean == max(r.mean for r in result.scores)
    assert (result.best_C, result.best_gamma) in {(r.C, r.gamma) for r in result.scores
                                                  if r.mean == best.mean}
    with pytest.raises(ValueError, match="no kernel gamma"):
        cross_validate(heart, "mfn", C=[1.0], gamma=[1.0])


def test_a_monitor_sees_every_fit_and_can_stop_the_search():
    heart = load("heart_scale")

    class StopAfter:
        def __init__(self, n):
            self.records, self.n = [], n

        def report(self, record):
            self.records.append(record)

        def stop_reason(self):
            return "enough" if len(self.records) >= self.n else None

    everything = StopAfter(10**6)
    result = cross_validate(heart, "mfn", C=[0.1, 1.0], folds=3, monitor=everything)
    assert [r.extras["fold"] for r in everything.records] == [0, 0, 1, 1, 2, 2]
    assert {r.extras["C"] for r in everything.records} == {0.1, 1.0}
    assert all(0.0 <= r.optimality <= 1.0 for r in everything.records)
    assert result.status == "converged" and result.summary()["table"][0]["fold_scores"]
    stopper = StopAfter(3)
    stopped = cross_validate(heart, "lssvm", C=[0.1, 1.0], folds=3, monitor=stopper,
                             refit=True)
    assert stopped.status == "stopped" and "enough" in stopped.message
    assert stopped.model is None and len(stopper.records) == 3
    assert all(len(row.fold_scores) <= 2 for row in stopped.scores)


def _same_search(parallel, serial, fold_sizes):
    """Folds fitted at once give the table of folds fitted one after another: the same
    objectives to the last bits that a different number of threads per fold may change (sums
    in another order), the same fold scores within an example, the same best point."""
    assert len(parallel.scores) == len(serial.scores)
    for a, b in zip(parallel.scores, serial.scores, strict=True):
        assert (a.C, a.gamma) == (b.C, b.gamma)
        assert a.objective == pytest.approx(b.objective, rel=1e-6)
        for size, x, y in zip(fold_sizes, a.fold_scores, b.fold_scores, strict=True):
            assert abs(x - y) <= 1.0 / size + 1e-12
    assert (parallel.best_C, parallel.best_gamma) == (serial.best_C, serial.best_gamma)


@pytest.mark.skipif(not threadsafe_threading_layer(),
                    reason="Numba's workqueue threading layer: the folds run one at a time")
def test_folds_fitted_at_once_give_the_serial_table():
    """mfn's warm C paths (a9a) and the least-squares family's cold kernel fits (heart, a C x
    gamma grid), two folds at a time against one after another."""
    a9a = load("a9a")
    sizes = np.bincount(a9a.stratified_folds(3, seed=0))
    serial = cross_validate(a9a, "mfn", C=GRID, folds=3, n_jobs=1)
    parallel = cross_validate(a9a, "mfn", C=GRID, folds=3, n_jobs=2)
    assert (serial.parallel_folds, parallel.parallel_folds) == (1, 2)
    assert parallel.summary()["parallel_folds"] == 2
    _same_search(parallel, serial, sizes)
    heart = load("heart_scale")
    sizes = np.bincount(heart.stratified_folds(3, seed=0))
    grid = {"C": [0.1, 1.0], "gamma": [0.1, 1.0], "folds": 3}
    _same_search(cross_validate(heart, "lssvm", n_jobs=3, **grid),
                 cross_validate(heart, "lssvm", n_jobs=1, **grid), sizes)


def test_how_many_folds_run_at_once(monkeypatch):
    """At most the folds, 1 when asked; None takes the Numba threads; the workqueue layer
    (not thread-safe) always gets 1; below 1 is refused."""
    assert parallel_folds(5, 1) == 1
    assert parallel_folds(1, 4) == 1
    monkeypatch.setattr(model_selection, "threadsafe_threading_layer", lambda: True)
    assert parallel_folds(3, 8) == 3
    assert parallel_folds(5, None) == min(5, numba.get_num_threads())
    monkeypatch.setattr(model_selection, "threadsafe_threading_layer", lambda: False)
    assert parallel_folds(5, 2) == 1
    with pytest.raises(ValueError, match="n_jobs must be at least 1"):
        parallel_folds(5, 0)


@pytest.mark.skipif(not threadsafe_threading_layer(),
                    reason="Numba's workqueue threading layer: the folds run one at a time")
def test_a_stop_asked_while_folds_run_at_once():
    """A monitor that asks to stop from the start: with the folds one after another nothing is
    fitted; with two at a time the fits already under way finish, the first record asks the
    monitor and the search ends there; either way the result is stopped, without a refit, and
    the monitor was asked from the calling thread only."""
    import threading

    heart = load("heart_scale")
    caller = threading.get_ident()

    class Cancelled:
        def __init__(self):
            self.records, self.threads = [], set()

        def report(self, record):
            self.records.append(record)

        def stop_reason(self):
            self.threads.add(threading.get_ident())
            return "cancelled"

    for n_jobs in (1, 2):
        monitor = Cancelled()
        result = cross_validate(heart, "lssvm", C=[0.1, 1.0], folds=3, monitor=monitor,
                                refit=True, n_jobs=n_jobs)
        assert result.status == "stopped" and "cancelled" in result.message
        assert result.model is None and len(monitor.records) <= 1
        assert monitor.threads == {caller}


@pytest.mark.slow
def test_under_the_workqueue_layer_the_folds_run_one_after_another():
    """Numba's workqueue layer aborts the process when two threads enter it: a search there
    (a fresh process, the layer forced) runs its folds one at a time, and says so."""
    import subprocess
    import sys

    script = ("import numba, solvers; from solvers.model_selection import cross_validate; "
              f"data = solvers.read_svmlight({str(data_path('heart_scale'))!r}); "
              "result = cross_validate(data, 'mfn', C=[0.1, 1.0], folds=3); "
              "print(numba.threading_layer(), result.parallel_folds, len(result.scores))")
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["workqueue", "1", "2"]


@pytest.mark.skipif(not threadsafe_threading_layer(),
                    reason="Numba's workqueue threading layer: the folds run one at a time")
def test_a_fold_that_fails_fails_the_search_with_its_error(monkeypatch):
    """With folds at once, an error in one fold's thread reaches the caller as it is (the
    other folds are abandoned at their next fit), as it would one fold after another."""
    heart = load("heart_scale")
    original = model_selection.fit_linear_path
    calls = []

    def failing(train_set, spec, points):
        calls.append(train_set.n_samples)
        if len(calls) == 2:
            raise FloatingPointError("fold blew up")
        return original(train_set, spec, points)

    monkeypatch.setattr(model_selection, "fit_linear_path", failing)
    for n_jobs in (1, 2):
        calls.clear()
        with pytest.raises(FloatingPointError, match="fold blew up"):
            cross_validate(heart, "mfn", C=[0.1, 1.0], folds=3, n_jobs=n_jobs)


@pytest.mark.parametrize(("solver", "gap_parameter", "cold_tol"),
                         [("alm", "tol", 1e-9), ("cutting_plane", "tol", 1e-8),
                          ("interior_point", "tol", 1e-8)])
def test_warm_starts_along_c_and_each_point_stays_certified(solver, gap_parameter, cold_tol):
    """alm's C path starts each C from the last solution (beta0 and the multipliers of its KKT
    map), the cutting planes' from the last solution and every cut so far, the interior-point
    method's from an interior point near the last solution: every fold's objective is within
    the certified 1e-3 of the cold optimum (to a ``cold_tol`` gap), and the fold scores are
    those of the cold fits within a few examples."""
    dataset = load("australian_scale")
    folds = dataset.stratified_folds(3, seed=0)
    result = cross_validate(dataset, solver, C=GRID, folds=3, seed=0)
    assert result.warm_start
    assert (result.fit_gap, result.fit_gap_parameter) == (1e-3, gap_parameter)
    for row in result.scores:
        optima, accuracies = [], []
        for fold in range(3):
            cold = solvers.train(dataset.subset(folds != fold), solver=solver, C=row.C,
                                 **{gap_parameter: cold_tol})
            test = dataset.subset(folds == fold)
            optima.append(cold.objective)
            accuracies.append(np.mean(cold.model.predict(test.X) == test.y))
        assert np.mean(optima) * (1 - cold_tol) <= row.objective <= np.mean(optima) / (1 - 1e-3)
        for fold, (score, cold_score) in enumerate(zip(row.fold_scores, accuracies,
                                                        strict=True)):
            assert abs(score - cold_score) <= 3.0 / np.sum(folds == fold), (row.C, fold)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_stop_asked_while_a_fold_factorizes_ends_the_factorization(n_jobs, monkeypatch):
    """The low-rank path factors each fold's rows once: a stop asked meanwhile ends the
    factorization at its next checkpoint (not after it), nothing is fitted on the
    unfinished factor, and the search says it stopped.  (Rank 1000 of a9a takes seconds,
    longer than the 0.25 s folds run at once before the caller asks the monitor.)"""
    if n_jobs > 1 and not threadsafe_threading_layer():
        pytest.skip("Numba's workqueue threading layer: the folds run one at a time")
    from solvers import approximation as approximation_module

    factorizations = []

    def recorded(*args, **kwargs):
        factorizations.append(approximation_module.approximate(*args, **kwargs))
        return factorizations[-1]

    monkeypatch.setattr(model_selection, "approximate", recorded)

    class Cancelled:
        def __init__(self):
            self.records = []

        def report(self, record):
            self.records.append(record)

        def stop_reason(self):
            return "cancelled"

    a9a = load("a9a")
    monitor = Cancelled()
    result = cross_validate(a9a, "dual_cd", C=[0.1, 1.0], folds=3, monitor=monitor,
                            n_jobs=n_jobs, approximation="nystrom", rank=1000, kernel="rbf")
    assert result.status == "stopped" and "cancelled" in result.message
    assert result.scores == [] and monitor.records == []
    assert factorizations and all(step.factor is None for step in factorizations)
    assert all(step.stopped.reason == approximation_module.STOP_ASKED
               for step in factorizations)
    assert all(step.stopped.done < step.stopped.total for step in factorizations)


# -- regression, epsilon and nu grids, one-class --------------------------------------------


def test_a_regression_search_scores_unstratified_folds_by_mean_squared_error():
    """mfn's L2-loss SVR (LIBLINEAR -s 11's problem; the finite Newton method ends at the
    optimum) over C x epsilon on housing: seeded folds that are not stratified (sizes within
    one; real labels have no classes), every fold's score the mean squared error of a cold
    solve on that fold's training rows (scikit-learn's mean_squared_error on the held-out
    rows), the best point the lowest mean, refitted there; scoring="r2" ranks by R^2."""
    from sklearn.metrics import mean_squared_error, r2_score

    housing = load("regression/housing_scale")
    folds = housing.shuffled_folds(3, seed=2)
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 1 and not np.array_equal(
        folds, housing.stratified_folds(3, seed=2))
    params = dict(task="regression", loss="squared_epsilon_insensitive")
    result = cross_validate(housing, "mfn", C=[0.1, 1.0], epsilon_grid=[0.0, 2.0], folds=3,
                            seed=2, fit_gap=None, refit=True, warm_start=False, **params)
    assert result.metric == "mean_squared_error"
    assert {(row.C, row.epsilon) for row in result.scores} == \
        {(c, e) for c in (0.1, 1.0) for e in (0.0, 2.0)}
    for row in result.scores:
        for fold, score in enumerate(row.fold_scores):
            cold = solvers.train(housing.subset(folds != fold), solver="mfn", C=row.C,
                                 epsilon=row.epsilon, **params)
            assert cold.status == "converged"
            test = housing.subset(folds == fold)
            assert score == pytest.approx(
                mean_squared_error(test.y, cold.model.predict(test.X)), rel=1e-9)
    best = min(result.scores, key=lambda row: row.mean)
    assert (result.best_C, result.best_epsilon) == (best.C, best.epsilon)
    assert result.best_params == {"C": best.C, "insensitivity": best.epsilon}
    assert result.model.task == "regression"
    assert result.refit.model.coef_ == pytest.approx(solvers.train(
        housing, solver="mfn", C=best.C, epsilon=best.epsilon, **params).model.coef_,
        rel=1e-9)
    by_r2 = cross_validate(housing, "mfn", C=[0.1, 1.0], folds=3, seed=2, fit_gap=None,
                           scoring="r2", **params)
    assert by_r2.metric == "r2"
    for row in by_r2.scores:
        cold = solvers.train(housing.subset(folds != 0), solver="mfn", C=row.C, **params)
        test = housing.subset(folds == 0)
        assert row.fold_scores[0] == pytest.approx(
            r2_score(test.y, cold.model.predict(test.X)), rel=1e-9)
    assert by_r2.best_C == max(by_r2.scores, key=lambda row: row.mean).C


def test_mfn_searches_its_tube_width_under_its_own_name():
    """mfn's epsilon is its CGLS tolerance: an epsilon grid sets its insensitivity, and the
    CGLS tolerance given stays (dual_cd's and smo's tube is their epsilon)."""
    mg = load("regression/mg_scale")
    result = cross_validate(mg, "mfn", C=[1.0], epsilon_grid=[0.05, 0.2], folds=3,
                            task="regression", loss="squared_epsilon_insensitive",
                            cgls_epsilon=1e-8)
    assert result.metric == "mean_squared_error" and len(result.scores) == 2
    assert result.best_params["insensitivity"] in (0.05, 0.2)
    assert result.params["epsilon"] == 1e-8
    svr = cross_validate(mg, "dual_cd", C=[1.0], epsilon_grid=[0.05, 0.2], folds=3,
                         task="regression", loss="epsilon_insensitive")
    assert svr.best_params == {"C": 1.0, "epsilon": svr.best_epsilon}


def test_smo_searches_nu_of_nu_svr_and_refuses_what_a_search_cannot_score():
    bodyfat = load("regression/bodyfat_scale")
    result = cross_validate(bodyfat, "smo", C=[1.0], nu_grid=[0.2, 0.6], gamma=[0.5], folds=3,
                            svm_type="nu_svr", task="regression", kernel="rbf")
    assert [row.nu for row in result.scores] == [0.2, 0.6]
    assert result.best_params == {"C": 1.0, "gamma": 0.5, "nu": result.best_nu}
    with pytest.raises(solvers.InvalidParametersError, match="epsilon: .*nu_svr"):
        cross_validate(bodyfat, "smo", C=[1.0], epsilon_grid=[0.1], folds=3,
                       svm_type="nu_svr", task="regression")
    with pytest.raises(solvers.InvalidParametersError, match="nu: only smo's nu-SVC"):
        cross_validate(bodyfat, "dual_cd", C=[1.0], nu_grid=[0.5], folds=3,
                       task="regression", loss="epsilon_insensitive")
    with pytest.raises(solvers.InvalidParametersError, match="scoring: a regression"):
        cross_validate(bodyfat, "dual_cd", C=[1.0], folds=3, scoring="roc_auc",
                       task="regression", loss="epsilon_insensitive")
    heart = load("heart_scale")
    with pytest.raises(solvers.InvalidParametersError, match="task: a one-class SVM"):
        cross_validate(heart, "smo", C=[1.0], folds=3, svm_type="one_class",
                       task="one_class")
    with pytest.raises(solvers.InvalidParametersError, match="scoring: r2 scores a regr"):
        cross_validate(heart, "mfn", C=[1.0], folds=3, scoring="r2")
