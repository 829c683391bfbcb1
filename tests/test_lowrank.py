"""The low-rank kernel path (``approximation="nystrom" | "icf"``, issue 33) on real data.

* the factors: ||K - G G'|| falls with the rank (the incomplete Cholesky's residual is PSD and
  shrinks by a rank-one PSD term per pivot, so its Frobenius norm and trace fall at every
  step), rank n reproduces K, and the residual-trace stopping rule stops at the first rank
  where trace(K - G G') <= tol trace(K);
* the feature map: exact kernel rows against the landmarks (pivots) times the map give the
  training rows' factor back;
* convergence to the exact kernel SVM.  The reference is ``smo``: C-SVC, the hinge loss with a
  *free* (unregularized) bias b, LIBSVM's problem 1/2 ||f||_K^2 + C sum max(0, 1 - y_i (f(x_i)
  + b)).  The low-rank problem is posed with the same loss and ``bias="free"`` (the
  interior-point method solves it), so with G G' = K (rank n) it is the same problem: w =
  G' beta gives ||w||^2 = beta'K beta and w.g_i = (K beta)_i.  (A regularized bias, LIBLINEAR's
  -B 1, would add 1/2 b^2: the kernel K + 1, another problem.)  ICF factors are nested (the
  rank-r factor is the first r columns of the rank-(r+1) one), so the low-rank optimum can
  only fall with the rank, down to the exact optimum;
* every linear family trains on the factor and they agree on its optimum; one-vs-rest through
  the multiclass layer; the model round-trips through its npz bytes and predicts identically.
"""

from __future__ import annotations

import numpy as np
import pytest
from shared_data import load

import solvers
from solvers.core import lowrank
from solvers.core.kernels import Kernel, kernel_matrix
from solvers.core.lowrank import incomplete_cholesky, nystrom
from solvers.models import KernelModel

GAMMA = 0.1  # heart_scale: 13 features in [-1, 1]
C = 1.0


@pytest.fixture(scope="module")
def heart():
    return load("heart_scale")


@pytest.fixture(scope="module")
def heart_kernel(heart):
    kernel = Kernel("rbf", GAMMA)
    return kernel, kernel_matrix(heart.X, heart.X, kernel)


def test_icf_residual_falls_with_rank_and_vanishes_at_full_rank(heart, heart_kernel):
    kernel, K = heart_kernel
    n = heart.n_samples
    full = incomplete_cholesky(heart.X, kernel, n, tol=0.0)
    norms, traces = [], []
    for r in (5, 20, 60, 120, full.rank):
        G = full.G[:, :r]  # the first r pivots are the rank-r factorization
        R = K - G @ G.T
        norms.append(np.linalg.norm(R))
        traces.append(np.trace(R))
    assert all(a > b for a, b in zip(norms, norms[1:], strict=False)), norms
    assert all(a > b for a, b in zip(traces, traces[1:], strict=False)), traces
    assert norms[-1] <= 1e-8 * np.linalg.norm(K)
    # the rank-r run is the prefix of the full one (same pivots, same columns)
    part = incomplete_cholesky(heart.X, kernel, 60, tol=0.0)
    np.testing.assert_array_equal(part.pivots, full.pivots[:60])
    np.testing.assert_allclose(part.G, full.G[:, :60], rtol=0, atol=1e-12)


def textbook_pivoted_cholesky(K: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-looking pivoted Cholesky on the dense K (Golub & Van Loan, Algorithm 4.2.4's
    symmetric pivoting, stopped after ``rank`` steps): pivot = the largest diagonal entry of
    the residual R, G[:, j] = R[:, p] / sqrt(R[p, p]), R -= G[:, j] G[:, j]'.  The same
    factor as the left-looking incomplete Cholesky, by other arithmetic."""
    R = K.copy()
    G = np.zeros((K.shape[0], rank))
    pivots = np.empty(rank, np.int64)
    done = np.zeros(K.shape[0], bool)
    for j in range(rank):
        diagonal = np.where(done, -np.inf, np.diag(R))
        p = int(np.argmax(diagonal))
        G[:, j] = R[:, p] / np.sqrt(R[p, p])
        R -= np.outer(G[:, j], G[:, j])
        pivots[j], done[p] = p, True
    return G, pivots


@pytest.mark.parametrize("name,gamma", [("heart_scale", GAMMA), ("australian_scale", 0.2)])
def test_icf_is_the_textbook_pivoted_cholesky(name, gamma):
    """The incomplete Cholesky (a BLAS product per column over the columns so far) takes the
    pivots of the textbook right-looking pivoted Cholesky of the full kernel matrix, in the
    same order, and its factor agrees to rounding."""
    data = load(name)
    kernel = Kernel("rbf", gamma)
    K = kernel_matrix(data.X, data.X, kernel)
    factor = incomplete_cholesky(data.X, kernel, 150, tol=0.0)
    G, pivots = textbook_pivoted_cholesky(K, 150)
    np.testing.assert_array_equal(factor.pivots, pivots)
    np.testing.assert_allclose(factor.G, G, rtol=0, atol=1e-10)


@pytest.mark.parametrize("tol", [1e-1, 1e-2, 1e-3])
def test_icf_trace_stopping_rule_is_exact(heart, heart_kernel, tol):
    kernel, K = heart_kernel
    factor = incomplete_cholesky(heart.X, kernel, heart.n_samples, tol=tol)
    r = factor.rank
    G = factor.G
    trace = np.trace(K)
    residual = np.trace(K - G @ G.T)
    assert factor.kernel_trace == pytest.approx(trace, rel=1e-14)
    assert factor.residual_trace == pytest.approx(residual, rel=1e-9, abs=1e-9)
    assert residual <= tol * trace                               # stopped when met ...
    before = np.trace(K - G[:, :r - 1] @ G[:, :r - 1].T)
    assert before > tol * trace                                  # ... and not one pivot later


@pytest.mark.parametrize("landmarks", ["uniform", "kmeans"])
def test_nystrom_error_falls_with_rank_and_is_exact_at_full_rank(heart, heart_kernel,
                                                                 landmarks):
    kernel, K = heart_kernel
    errors = []
    for r in (10, 50, 150):
        factor = nystrom(heart.X, kernel, r, seed=3, landmarks=landmarks)
        assert factor.rank <= r
        errors.append(np.linalg.norm(K - factor.G @ factor.G.T))
        assert factor.residual_trace == pytest.approx(np.trace(K - factor.G @ factor.G.T),
                                                      rel=1e-8)
    assert errors[0] > errors[1] > errors[2], errors
    full = nystrom(heart.X, kernel, heart.n_samples, seed=3, landmarks="uniform")
    assert np.linalg.norm(K - full.G @ full.G.T) <= 1e-6 * np.linalg.norm(K)


def test_rank_search_on_every_row_is_the_exact_residual_of_the_nested_factors(heart,
                                                                             heart_kernel):
    """With every row in the sample (n <= sample_rows) the search's residuals are the exact
    relative residual traces of the Nystrom factors at its ranks (its landmarks are those of
    ``nystrom`` at the same rank: the first m of one permutation), and it stops at the first
    rank at or below ``tol``."""
    kernel, K = heart_kernel
    trace = np.trace(K)
    search = lowrank.choose_nystrom_rank(heart.X, kernel, seed=5, tol=0.05, start=8)
    assert search.rows == heart.n_samples
    ranks = [m for m, _ in search.residuals]
    assert ranks == [8 * 2 ** k for k in range(len(ranks))] and ranks[-1] == search.rank
    for m, residual in search.residuals:
        factor = nystrom(heart.X, kernel, m, seed=5)
        exact = np.trace(K - factor.G @ factor.G.T) / trace
        assert residual == pytest.approx(exact, rel=1e-8, abs=1e-10), m
    assert search.residuals[-1][1] <= 0.05 < search.residuals[-2][1]
    nested = lowrank.uniform_landmarks(heart.n_samples, 16, 5)
    assert set(nested) <= set(lowrank.uniform_landmarks(heart.n_samples, 32, 5))


def test_rank_search_stops_at_its_cap():
    X = load("svmguide1").X
    kernel = Kernel("rbf", 1e3)  # nearly diagonal: the residual stays near 1
    search = lowrank.choose_nystrom_rank(X, kernel, 0, tol=0.02, max_rank=100, start=30)
    assert [m for m, _ in search.residuals] == [30, 60, 100]
    assert search.rank == 100 and search.residuals[-1][1] > 0.5


def test_rank_search_sample_estimates_the_whole_residual():
    """On a9a (32,561 rows) the estimate from 4,096 sampled rows is within a few percent of
    the factor's exact residual trace (the ratio estimate's spread: the diagonal residuals
    of RBF rows lie in [0, 1])."""
    X = load("a9a").X
    kernel = Kernel("rbf", 1 / 123 / 0.1)
    search = lowrank.choose_nystrom_rank(X, kernel, 0, tol=0.3, start=128)
    factor = nystrom(X, kernel, search.rank, seed=0)
    exact = factor.residual_trace / factor.kernel_trace
    assert search.rows == 4096 and search.rank == 256
    assert search.residuals[-1][1] == pytest.approx(exact, rel=0.05)


@pytest.mark.parametrize("method", ["nystrom", "icf"])
def test_train_without_a_rank_chooses_it_from_the_residual_trace(method):
    """``rank=None`` (the default): svmguide1's RBF kernel (4 features) is captured to 98% of
    its trace by few landmarks; the model records how the rank was chosen and is within a
    point of the exact kernel SVM (smo) on the test file."""
    train, test = load("svmguide1"), load("svmguide1.t", 4)
    result = solvers.train(train, solver="dual_cd", loss="hinge", C=C, approximation=method,
                           kernel="rbf", gamma="scale", tol=1e-3)
    assert result.params.rank is None and result.params.rank_tol == 0.02
    info = result.model.metadata["approximation"]
    assert info["requested_rank"] is None
    assert info["residual_trace"] <= 0.02 * info["kernel_trace"]
    if method == "nystrom":
        search = info["rank_search"]
        assert search["tol"] == 0.02 and search["rows"] == train.n_samples
        assert search["residuals"][-1][0] == info["rank"] < 1024
        assert search["residuals"][-1][1] <= 0.02
    else:  # pivots until the bound: one pivot fewer is above it
        assert info["rank"] < 1024
    exact = solvers.train(train, solver="smo", C=C, kernel="rbf", gamma="scale")
    accuracy = np.mean(result.model.predict(test.X) == test.y)
    assert accuracy >= np.mean(exact.model.predict(test.X) == test.y) - 0.01
    shown = type(result.params).shown(result.params.model_dump())
    assert shown["rank"] is None and shown["rank_tol"] == 0.02
    assert result.params.problem_fields()["rank_tol"] == 0.02
    given = result.params.model_copy(update={"rank": 64})
    assert "rank_tol" not in type(given).shown(given.model_dump())
    assert "rank_tol" not in given.problem_fields()


@pytest.mark.parametrize("method", ["nystrom", "icf"])
def test_feature_map_gives_the_training_factor_back(heart, method):
    kernel = Kernel("rbf", GAMMA)
    factor = (nystrom(heart.X, kernel, 80, seed=1) if method == "nystrom"
              else incomplete_cholesky(heart.X, kernel, 80))
    mapped = factor.feature_map.transform(heart.X)
    np.testing.assert_allclose(mapped, factor.G, rtol=0, atol=1e-9 * np.abs(factor.G).max())


@pytest.fixture(scope="module")
def exact_svm(heart):
    """C-SVC on heart by smo (free bias), solved to a relative gap of 1e-10."""
    return solvers.train(heart, solver="smo", C=C, kernel="rbf", gamma=GAMMA, tol=1e-10)


def test_low_rank_svm_converges_to_the_exact_kernel_svm(heart, exact_svm):
    """ICF objectives fall with the rank to the exact C-SVC's; at rank n the objective agrees
    to 1e-6 relative and the decision values (bias included: both free) to 1e-3."""
    exact = exact_svm.objective
    objectives, deviations = [], []
    scores = exact_svm.model.decision_function(heart.X)
    for r in (10, 40, 120, heart.n_samples):
        result = solvers.train(heart, solver="interior_point", C=C, loss="hinge", bias="free",
                               approximation="icf", rank=r, icf_tol=0.0, kernel="rbf",
                               gamma=GAMMA, tol=1e-10)
        assert isinstance(result.model, KernelModel)
        objectives.append(result.objective)
        deviations.append(np.abs(result.model.decision_function(heart.X) - scores).max())
    # nested factors: the optimum falls (to the solvers' 1e-10 gaps) down to the exact one
    assert all(a >= b * (1 - 1e-8) for a, b in zip(objectives, objectives[1:], strict=False))
    assert objectives[0] > exact * (1 + 1e-2)
    assert objectives[-1] == pytest.approx(exact, rel=1e-6)
    assert deviations[0] > deviations[-1]
    assert deviations[-1] <= 1e-3, deviations


def test_nystrom_at_full_rank_poses_the_exact_problem(heart, exact_svm):
    result = solvers.train(heart, solver="interior_point", C=C, loss="hinge", bias="free",
                           approximation="nystrom", rank=heart.n_samples, kernel="rbf",
                           gamma=GAMMA, tol=1e-10)
    assert result.objective == pytest.approx(exact_svm.objective, rel=1e-6)


@pytest.fixture(scope="module")
def australian():
    return load("australian_scale")


FAMILIES = [("mfn", {}), ("alm", {}), ("cutting_plane", {}), ("interior_point", {}),
            ("dual_cd", {})]


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_auto_factors_once_and_chooses_among_the_linear_solvers_on_the_factor(
        australian, monkeypatch, loss):
    """solver="auto" with an approximation: the kernel is factored once, the candidates run
    on that one factor (dual_cd first: what bench_lowrank measured fastest on factors) as a
    portfolio, and the winner's optimum is the explicit solver's on the same factor (dual_cd
    at a relative gap of 1e-9) to the certified gap asked (1e-6).  The result and the model
    say which solver ran, under which approximation."""
    common = dict(C=C, loss=loss, bias="regularized", approximation="nystrom", rank=100,
                  approximation_seed=7, kernel="rbf", gamma="scale")
    reference = solvers.train(australian, solver="dual_cd", tol=1e-9, **common)
    calls = []
    factor = solvers.approximation.nystrom

    def counted(*args, **kwargs):
        calls.append(args[2])
        return factor(*args, **kwargs)

    monkeypatch.setattr(solvers.approximation, "nystrom", counted)
    result = solvers.train(australian, solver="auto", tol=1e-6, **common)
    assert calls == [100]  # one factorization, shared by every candidate that ran
    assert result.status == "converged", result.message
    assert result.objective == pytest.approx(reference.objective, rel=2e-6)
    assert result.choice.reason.startswith("on a dense low-rank factor (690 x 100)")
    ran = [run["candidate"] for run in result.choice.runs]
    assert ran[0] == "dual_cd", result.choice.runs
    assert isinstance(result.model, KernelModel) and result.model.n_support == 100
    assert result.params.solver == result.choice.solver
    assert result.params.approximation == "nystrom" and result.params.rank == 100
    assert result.model.metadata["approximation"]["method"] == "nystrom"
    np.testing.assert_allclose(result.model.decision_function(australian.X),
                               reference.model.decision_function(australian.X),
                               rtol=0, atol=5e-2)


@pytest.mark.parametrize("solver,extra", FAMILIES, ids=[f for f, _ in FAMILIES])
def test_every_linear_family_trains_on_the_factor(australian, solver, extra):
    """The hinge loss with a regularized bias (LIBLINEAR -B 1 on the factor), which all five
    linear families solve: each reaches the same low-rank optimum, that of dual_cd at a
    relative gap of 1e-9, to its own certified gap of 1e-6."""
    common = dict(C=C, loss="hinge", bias="regularized", approximation="nystrom", rank=100,
                  approximation_seed=7, kernel="rbf", gamma="scale")
    reference = solvers.train(australian, solver="dual_cd", tol=1e-9, **common)
    result = solvers.train(australian, solver=solver, tol=1e-6, **common, **extra)
    assert result.status == "converged", result.message
    assert result.objective == pytest.approx(reference.objective, rel=2e-6)
    assert result.model.metadata["approximation"]["method"] == "nystrom"
    assert result.model.metadata["params"]["rank"] == 100
    accuracy = np.mean(result.model.predict(australian.X) == australian.y)
    assert accuracy > 0.85


def test_one_vs_rest_through_the_multiclass_layer_and_round_trip(tmp_path):
    train_set = load("dna.scale")
    test_set = load("dna.scale.t", n_features=train_set.n_features)
    result = solvers.train(train_set, solver="dual_cd", C=1.0, loss="hinge",
                           approximation="icf", rank=300, kernel="rbf", gamma=0.01)
    model = result.model
    assert isinstance(model, KernelModel) and model.coef_.shape == (3, 300)
    assert len(result.subproblems) == 3
    accuracy = np.mean(model.predict(test_set.X) == test_set.y)
    exact = solvers.train(train_set, solver="smo", C=1.0, kernel="rbf", gamma=0.01,
                          multiclass="ovr").model
    exact_accuracy = np.mean(exact.predict(test_set.X) == test_set.y)  # 0.948 measured
    # rank 300 of 2,000 rows: 0.927 measured (rank 600: 0.939)
    assert accuracy >= exact_accuracy - 0.03, (accuracy, exact_accuracy)
    path = tmp_path / "dna.npz"
    model.save(path)
    loaded = solvers.load_model(path)
    np.testing.assert_array_equal(loaded.decision_function(test_set.X),
                                  model.decision_function(test_set.X))
    np.testing.assert_array_equal(loaded.predict(test_set.X), model.predict(test_set.X))
    assert loaded.metadata["approximation"]["rank"] == 300


def test_decision_values_are_the_linear_model_on_the_factor(heart):
    """The kernel model predicts with exact kernel rows against the landmarks: on the
    training rows it gives G w + b of the linear model the solver trained on G."""
    result = solvers.train(heart, solver="mfn", C=C, approximation="nystrom", rank=60,
                           kernel="rbf", gamma=GAMMA, approximation_seed=2)
    kernel = Kernel("rbf", GAMMA)
    factor = nystrom(heart.X, kernel, 60, seed=2)
    linear = solvers.train(heart.with_X(factor.G, n_features=factor.rank), solver="mfn", C=C)
    np.testing.assert_allclose(result.model.decision_function(heart.X),
                               linear.model.decision_function(factor.G), rtol=0, atol=1e-8)


def test_approximation_is_refused_where_it_does_not_apply(heart):
    for params in (dict(solver="smo"), dict(solver="auto", scale="maxabs"),
                   dict(solver="mfn", scale="maxabs"),
                   dict(solver="mfn", task="ordinal")):
        with pytest.raises(solvers.InvalidParametersError, match="approximation|smo"):
            solvers.train(heart, approximation="icf", **params)
    # the relaxed LS-SVM's dual is n x n whatever its kernel: no factor makes it smaller
    with pytest.raises(solvers.InvalidParametersError,
                       match="relaxed_lssvm solves its n x n dual.*does not make it smaller"):
        solvers.train(heart, solver="relaxed_lssvm", approximation="nystrom", rank=10)


def test_least_squares_kernel_path_fails_fast_past_its_practical_size():
    """The least-squares family's kernel path refuses, at once, a problem whose kernel
    matrix does not fit its row cache (5,792 rows at 256 MiB), naming the limit and the
    low-rank path; the low-rank path trains the same job."""
    ijcnn1 = load("ijcnn1").subset(np.arange(6000))
    with pytest.raises(solvers.InvalidParametersError,
                       match=r"practical limit of 5792 rows at cache_mb=256.*nystrom"):
        solvers.train(ijcnn1, solver="lssvm", kernel="rbf", gamma=1.0)
    with pytest.raises(solvers.InvalidParametersError, match="practical limit"):
        solvers.train(ijcnn1, solver="relaxed_lssvm", kernel="rbf", gamma=1.0)
    result = solvers.train(ijcnn1, solver="lssvm", kernel="rbf", gamma=1.0,
                           approximation="nystrom", rank=100)
    assert isinstance(result.model, KernelModel) and result.model.n_support == 100


def test_class_weights_and_probabilities_compose_with_the_factor(heart):
    """The train steps every family shares apply on the factor: class weights change the
    low-rank optimum (heavier positives: more of them predicted), and probability=True fits
    Platt's sigmoid on out-of-fold low-rank models."""
    common = dict(solver="dual_cd", C=C, loss="hinge", approximation="icf", rank=60,
                  kernel="rbf", gamma=GAMMA)
    plain = solvers.train(heart, **common)
    weighted = solvers.train(heart, class_weight={1: 5.0}, **common)
    assert weighted.objective != pytest.approx(plain.objective, rel=1e-3)
    positive = heart.classes[1]
    assert np.sum(weighted.model.predict(heart.X) == positive) > \
        np.sum(plain.model.predict(heart.X) == positive)
    calibrated = solvers.train(heart, probability=True, **common)
    proba = calibrated.model.predict_proba(heart.X)
    assert proba.shape == (heart.n_samples, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


# -- stopping and progress during the factorization ---------------------------------------------


class StopOnAsk:
    """A monitor that asks to stop from its ``limit``-th ``stop_reason`` call on (a job's
    cancel flag raised while the factor is computed), counting the asks and keeping every
    record."""

    def __init__(self, limit: int):
        self.limit = limit
        self.asks = 0
        self.records = []

    def report(self, record):
        self.records.append(record)

    def stop_reason(self):
        self.asks += 1
        return "cancelled by request" if self.asks >= self.limit else None


@pytest.mark.parametrize("method", ["icf", "nystrom"])
def test_a_stop_during_the_factorization_ends_the_run_within_one_block(method):
    """A monitor that says stop while the factor is computed ends the run at the next
    checkpoint (one pivot of the incomplete Cholesky, one block of Nystrom's kernel
    columns), not after the whole factor: the result is ``stopped`` with the monitor's
    reason and how far the factorization came, no solver ran (every record is the
    factorization's), and the model is every solver's starting point, f = 0, whose
    objective is C sum_i loss(0) = C n for the hinge loss."""
    train_set = load("letter.scale")  # 15,000 rows
    n = train_set.n_samples
    monitor = StopOnAsk(limit=3)
    result = solvers.train(train_set, solver="dual_cd", C=C, loss="hinge", approximation=method,
                           rank=2000, kernel="rbf", gamma="scale", monitor=monitor)
    assert result.status == "stopped"
    assert result.message.startswith("stopped: cancelled by request (while factorizing")
    (summary,) = result.subproblems
    done = summary.extras["factorization"]["done"]
    assert summary.iterations == 0 and result.log == []
    # three asks: the third one stopped it, at a checkpoint after at most 3 blocks of work
    block = 1 if method == "icf" else lowrank.column_block(n)
    assert summary.extras["factorization"]["step"] == ("pivots" if method == "icf"
                                                       else "kernel columns")
    assert done <= 3 * block < 2000
    assert monitor.records and all(r.extras["stage"] == "factorizing" for r in monitor.records)
    assert [r.iteration for r in monitor.records] == list(range(1, len(monitor.records) + 1))
    assert result.objective == pytest.approx(C * n, rel=1e-12)
    assert np.all(result.model.decision_function(train_set.X) == 0.0)


def test_a_time_limit_stops_the_factorization():
    """ListMonitor's time limit (the library's): a limit already passed stops the
    incomplete Cholesky after its first pivot."""
    heart = load("heart_scale")
    result = solvers.train(heart, solver="mfn", approximation="icf", rank=200, kernel="rbf",
                           gamma=GAMMA, monitor=solvers.ListMonitor(time_limit=0.0))
    assert result.status == "stopped"
    assert "time limit of 0 s reached" in result.message
    assert result.subproblems[0].extras["factorization"]["done"] == 1


@pytest.mark.parametrize("method", ["icf", "nystrom"])
def test_factorization_progress_comes_first_in_the_log_and_changes_nothing(heart, method):
    """With a monitor that never stops, the factorization reports its progress (records
    tagged ``stage: factorizing``, the last one the rank obtained), the solver's records are
    numbered and timed after them, and the factor is the one computed without a monitor (the
    checkpoints change no arithmetic: the same landmarks and residual to the last bit, the
    same optimum to the solver's gap); the result's log is the solver's alone."""
    common = dict(solver="dual_cd", C=C, loss="hinge", approximation=method, rank=120,
                  kernel="rbf", gamma=GAMMA)
    plain = solvers.train(heart, **common)
    monitor = solvers.ListMonitor()
    watched = solvers.train(heart, monitor=monitor, **common)
    assert (watched.model.support_vectors_ != plain.model.support_vectors_).nnz == 0
    assert watched.model.metadata["approximation"]["residual_trace"] == \
        plain.model.metadata["approximation"]["residual_trace"]
    assert watched.objective == pytest.approx(plain.objective, rel=2e-6)
    records = monitor.records
    factor = [r for r in records if r.extras.get("stage") == "factorizing"]
    solver = records[len(factor):]
    assert records[:len(factor)] == factor and solver
    assert [r.iteration for r in records] == list(range(1, len(records) + 1))
    assert factor[-1].extras["factor_step"] == "done"
    assert factor[-1].extras["factor_done"] == plain.model.metadata["approximation"]["rank"]
    assert factor[-1].extras["factor_total"] == 120
    ratio = (watched.model.metadata["approximation"]["residual_trace"]
             / watched.model.metadata["approximation"]["kernel_trace"])
    assert factor[-1].optimality == pytest.approx(ratio, rel=1e-12)
    assert solver[0].elapsed >= factor[-1].elapsed
    assert [r.iteration for r in watched.log] == [r.iteration - len(factor) for r in solver]


# -- one-vs-one on the factor -------------------------------------------------------------------


def test_one_vs_one_on_the_factor_solves_each_pair_and_votes(tmp_path):
    """multiclass="ovo" on a factor (dna: 3 classes, 2,000 rows): one binary problem per pair
    of classes on that pair's rows of the one factor, each the problem dual_cd solves on
    those rows of G alone (objective to its certified gap, against a run at 1e-9); the model
    is a one-vs-one KernelModel whose pairwise values are the linear ones on G and whose
    labels are LIBSVM's vote; it round-trips; linear solvers refuse ovo without a factor."""
    train_set = load("dna.scale")
    test_set = load("dna.scale.t", n_features=train_set.n_features)
    common = dict(C=1.0, loss="hinge", approximation="nystrom", rank=200, approximation_seed=5,
                  kernel="rbf", gamma=0.01)
    result = solvers.train(train_set, solver="dual_cd", multiclass="ovo", tol=1e-6, **common)
    model = result.model
    assert isinstance(model, KernelModel) and model.multiclass == "ovo"
    assert model.coef_.shape == (3, 200)
    assert [s.label for s in result.subproblems] == ["1-2", "1-3", "2-3"]
    factor = nystrom(train_set.X, Kernel("rbf", 0.01), 200, seed=5)
    classes = train_set.classes
    pairwise = model.pairwise_decision(train_set.X)
    for p, (a, b) in enumerate([(0, 1), (0, 2), (1, 2)]):
        rows = np.flatnonzero((train_set.y == classes[a]) | (train_set.y == classes[b]))
        pair = solvers.Dataset(factor.G[rows], np.where(train_set.y[rows] == classes[a], 1, -1))
        alone = solvers.train(pair, solver="dual_cd", C=1.0, loss="hinge", tol=1e-9)
        assert result.subproblems[p].objective == pytest.approx(alone.objective, rel=2e-6)
        # f_ab = +1 for a: the linear model on G, positive class +1 = a
        np.testing.assert_allclose(pairwise[rows, p], alone.model.decision_function(pair.X),
                                   rtol=0, atol=5e-2)
    votes = np.zeros((train_set.n_samples, 3), dtype=int)
    for p, (a, b) in enumerate([(0, 1), (0, 2), (1, 2)]):
        votes[:, a] += pairwise[:, p] > 0
        votes[:, b] += pairwise[:, p] <= 0
    np.testing.assert_array_equal(model.predict(train_set.X), classes[np.argmax(votes, axis=1)])
    accuracy = np.mean(model.predict(test_set.X) == test_set.y)
    assert accuracy > 0.9, accuracy
    path = tmp_path / "ovo.npz"
    model.save(path)
    np.testing.assert_array_equal(solvers.load_model(path).predict(test_set.X),
                                  model.predict(test_set.X))
    with pytest.raises(solvers.InvalidParametersError, match="'ovo' on a linear solver is the "
                                                             "low-rank kernel path's strategy"):
        solvers.train(train_set, solver="dual_cd", multiclass="ovo")


def test_the_rank_search_reports_each_step_before_the_factor(heart, monkeypatch):
    """With the rank chosen, the factorization's records begin with the search's steps
    (``factor_step`` "rank search", the landmarks tried of the cap, the estimated residual
    as the record's optimality), which the service shows as "choosing the rank: m of at most
    M landmarks"; the last record is the rank obtained of itself."""
    from app.jobs.state import progress_stage

    monkeypatch.setattr("solvers.approximation.REPORT_INTERVAL_S", 0.0)
    monitor = solvers.ListMonitor()
    result = solvers.train(heart, solver="dual_cd", C=C, loss="hinge", approximation="nystrom",
                           kernel="rbf", gamma=GAMMA, rank_tol=0.05, monitor=monitor)
    search = result.model.metadata["approximation"]["rank_search"]
    steps = [r for r in monitor.records if r.extras.get("factor_step") == "rank search"]
    assert [r.extras["factor_done"] for r in steps] == [m for m, _ in search["residuals"]]
    assert [r.optimality for r in steps] == [r for _, r in search["residuals"]]
    assert {r.extras["factor_total"] for r in steps} == {heart.n_samples}  # 270 < 1024
    assert progress_stage(steps[0].extras) == \
        f"choosing the rank: 64 of at most {heart.n_samples} landmarks"
    done = [r for r in monitor.records if r.extras.get("factor_step") == "done"][0]
    assert done.extras["factor_done"] == done.extras["factor_total"] == \
        result.model.metadata["approximation"]["rank"]
