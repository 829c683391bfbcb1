"""The least-squares SVM family (solvers/lssvm.py) against dense direct solves of each
solver's own system, on real data."""

from __future__ import annotations

import functools

import naive_kernels as naive
import numpy as np
import pytest
from shared_data import load

import solvers
from solvers.lssvm import LSSVMParams, ProximalSVMParams, run_linear
from solvers.models import KernelModel, LinearModel
from solvers.monitor import ListMonitor
from solvers.problems import BinaryProblem
from solvers.registry import get_solver

# Decision values of every solver against the dense solve of its own system (the bar).
DECISION_RTOL = 1e-6
# Reported objective against the objective recomputed from the dense solution.
OBJECTIVE_RTOL = 1e-7
# Solver tolerances used for the comparisons: CG relative residual, SMO KKT violation.
CG_TOL = 1e-10
SMO_TOL = 1e-10

C = 0.5  # Joshi's C_J = 2 C = 1, the paper's choice
C_J = 2 * C
GAMMA = 1.0
DATASETS = [("mushrooms", 400), ("diabetes_scale", 400), ("breast-cancer_scale", 400)]
DATASET_IDS = ["mushrooms", "diabetes", "breast-cancer"]


_SUBSET_KEYS: dict[int, tuple] = {}
_KERNELS: dict[tuple, np.ndarray] = {}


@functools.cache
def _subset(name, n_train, n_test=200, seed=0):
    """Seeded disjoint train / held-out rows of a committed dataset (kept for the session)."""
    ds = load(name)
    rows = np.random.default_rng(seed).permutation(ds.n_samples)
    train = ds.subset(np.sort(rows[:n_train]))
    test = ds.subset(np.sort(rows[n_train:n_train + n_test]))
    for part, subset in (("train", train), ("test", test)):
        _SUBSET_KEYS[id(subset)] = (name, n_train, n_test, seed, part)
    return train, test


def _targets(ds):
    return np.where(ds.y == ds.classes[1], 1.0, -1.0)


def _kernel(ds_a, ds_b, kernel):
    """The reference kernel matrix, computed once per pair of subsets from :func:`_subset`."""
    key = (_SUBSET_KEYS.get(id(ds_a)), _SUBSET_KEYS.get(id(ds_b)), kernel)
    if None in key[:2]:
        return naive.kernel_matrix(ds_a.X, ds_b.X, kernel, GAMMA)
    if key not in _KERNELS:
        _KERNELS[key] = naive.kernel_matrix(ds_a.X, ds_b.X, kernel, GAMMA)
        _KERNELS[key].setflags(write=False)
    return _KERNELS[key]


def each_dataset_and_kernel(test):
    """Parametrize ``test`` over the datasets (name, n) and both kernels."""
    test = pytest.mark.parametrize("kernel", ["rbf", "linear"])(test)
    return pytest.mark.parametrize("name, n", DATASETS, ids=DATASET_IDS)(test)


def _kernel_problem(name, n, kernel):
    """(train, test, targets, the training kernel matrix) of a subset."""
    train, test = _subset(name, n)
    return train, test, _targets(train), _kernel(train, train, kernel)


def _relative(values, reference):
    return float(np.max(np.abs(values - reference)) / np.max(np.abs(reference)))


def _check_decisions(model, train, test, kernel, coef, intercept):
    """Decision values on training and held-out rows against coef/intercept over the training
    rows (the dense solution)."""
    for part in (train, test):
        reference = _kernel(part, train, kernel) @ coef + intercept
        assert _relative(model.decision_function(part.X), reference) <= DECISION_RTOL
    assert isinstance(model, LinearModel if kernel == "linear" else KernelModel)


def _check_records(result, measure):
    assert result.log, "no iteration records"
    for record in result.log:
        assert np.isfinite(record.objective) and np.isfinite(record.optimality)
        assert record.extras["optimality_measure"] == measure
    # the per-iteration objective (tracked, for CG) ends where the recomputed one is
    assert result.log[-1].objective == pytest.approx(result.objective, rel=1e-6)


# -- lssvm ---------------------------------------------------------------------------------------


@each_dataset_and_kernel
@pytest.mark.parametrize("method", ["direct", "iterative"])
def test_lssvm_matches_system_7(name, n, kernel, method):
    train, test, y, K = _kernel_problem(name, n, kernel)
    coef, b = naive.lssvm_classical(K, y, C_J)
    result = solvers.train(train, solver="lssvm", C=C, kernel=kernel, gamma=GAMMA,
                           method=method, cg_tol=CG_TOL)
    assert result.status == "converged", result.message
    _check_decisions(result.model, train, test, kernel, coef, b)
    f = K @ coef + b
    objective = 0.5 * coef @ K @ coef + C * np.sum((1 - y * f) ** 2)
    assert result.objective == pytest.approx(objective, rel=OBJECTIVE_RTOL)
    linear_primal = kernel == "linear" and method == "iterative"
    _check_records(result, "relative_gradient_norm" if linear_primal else "relative_residual")
    if method == "iterative" and kernel != "linear":
        extras = result.subproblems[0].extras
        assert extras["cache_hits"] > 0 and extras["cg_iterations"] == result.iterations


def test_lssvm_auto_picks_cgls_for_linear_and_direct_for_small_kernel_problems():
    train, _ = _subset("diabetes_scale", 200)
    linear = solvers.train(train, solver="lssvm", kernel="linear")
    assert isinstance(linear.model, LinearModel) and len(linear.log) > 1
    assert linear.subproblems[0].extras["method"] == "cgls"
    rbf = solvers.train(train, solver="lssvm")
    assert rbf.subproblems[0].extras["method"] == "direct"


def test_lssvm_cgls_runs_rounds_of_decreasing_tolerance():
    train, _ = _subset("mushrooms", 300)
    result = solvers.train(train, solver="lssvm", kernel="linear", cg_tol=1e-6)
    epsilons = [r.extras["epsilon"] for r in result.log]
    assert epsilons == pytest.approx([1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6])
    assert result.log[-1].optimality < 1e-5
    assert sum(r.extras["cg_iterations"] for r in result.log) == result.iterations


@pytest.mark.parametrize("method", ["direct", "iterative"])
def test_lssvm_sample_weights_scale_the_costs(method):
    train, test = _subset("breast-cancer_scale", 300)
    weights = np.random.default_rng(1).uniform(0.2, 3.0, train.n_samples)
    weighted = solvers.Dataset(train.X, train.y, sample_weight=weights)
    y = _targets(train)
    K = _kernel(train, train, "rbf")
    # (7) with 1/C_J on the diagonal replaced by 1/(2 C w_i)
    n = y.size
    M = np.zeros((n + 1, n + 1))
    M[0, 1:] = M[1:, 0] = y
    M[1:, 1:] = np.outer(y, y) * K + np.diag(1.0 / (2 * C * weights))
    solution = np.linalg.solve(M, np.concatenate([[0.0], np.ones(n)]))
    result = solvers.train(weighted, solver="lssvm", C=C, method=method, cg_tol=CG_TOL)
    _check_decisions(result.model, train, test, "rbf", y * solution[1:], solution[0])


# -- proximal_svm -------------------------------------------------------------------------------


@each_dataset_and_kernel
@pytest.mark.parametrize("method", ["direct", "iterative"])
def test_proximal_matches_system_12(name, n, kernel, method):
    train, test = _subset(name, n)
    y = _targets(train)
    if kernel == "linear":
        A = naive.dense(train.X)
        G = A @ A.T  # the linear PSVM: (12) with K replaced by the data matrix
    else:
        K = _kernel(train, train, kernel)
        G = K @ K.T
    v, z = naive.proximal(G, y, C_J)
    coef = z if kernel == "linear" else K @ z  # (11): w = D K'D v, the intercept e'D v
    result = solvers.train(train, solver="proximal_svm", C=C, kernel=kernel, gamma=GAMMA,
                           method=method, cg_tol=CG_TOL)
    assert result.status == "converged", result.message
    _check_decisions(result.model, train, test, kernel, coef, y @ v)
    u = z if kernel == "linear" else coef
    f = G @ z + y @ v
    norm2 = u @ naive.dense(train.X) @ naive.dense(train.X).T @ u if kernel == "linear" \
        else u @ u
    objective = 0.5 * (norm2 + (y @ v) ** 2) + C * np.sum((1 - y * f) ** 2)
    assert result.objective == pytest.approx(objective, rel=OBJECTIVE_RTOL)


def test_proximal_bias_scale_is_the_constant_feature():
    train, test = _subset("diabetes_scale", 300)
    y = _targets(train)
    K = _kernel(train, train, "rbf")
    s = 3.0
    v, z = naive.proximal(K @ K, y, C_J, s=s)
    result = solvers.train(train, solver="proximal_svm", C=C, bias_scale=s)
    _check_decisions(result.model, train, test, "rbf", K @ z, s * s * (y @ v))


# -- relaxed_lssvm ---------------------------------------------------------------------------


@each_dataset_and_kernel
@pytest.mark.parametrize("variant", ["2smo", "sesquismo"])
def test_relaxed_matches_its_dual(name, n, kernel, variant):
    train, test, y, K = _kernel_problem(name, n, kernel)
    A = 1e4
    reference = naive.relaxed_2smo if variant == "2smo" else naive.relaxed_sesquismo
    coef, b, lam = reference(K, y, C_J, A)
    result = solvers.train(train, solver="relaxed_lssvm", C=C, kernel=kernel, gamma=GAMMA,
                           variant=variant, kkt_tol=SMO_TOL, max_iter=100_000)
    assert result.status == "converged", result.message
    _check_decisions(result.model, train, test, kernel, coef, b)
    f = K @ coef + b
    slack = 1 - y * f if variant == "2smo" else np.maximum(1 - y * f, 0.0)
    objective = 0.5 * coef @ K @ coef + A / 2 * b * b + C * np.sum(slack ** 2)
    assert result.objective == pytest.approx(objective, rel=OBJECTIVE_RTOL)
    _check_records(result, "kkt_violation")
    extras = result.subproblems[0].extras
    assert extras["kkt_violation"] <= SMO_TOL
    assert abs(extras["duality_gap"]) <= 1e-8 * objective
    assert extras["n_support"] == np.count_nonzero(lam)
    # every row computed at most once; SesquiSMO computes only the rows of the multipliers it
    # moved (the final gradient check reads the support vectors' rows)
    if variant == "2smo":
        assert extras["cache_misses"] == train.n_samples
    else:
        assert np.count_nonzero(lam) <= extras["cache_misses"] <= train.n_samples
    if kernel != "linear":
        assert result.model.n_support == np.count_nonzero(lam)


def test_sesquismo_is_sparser_and_keeps_multipliers_non_negative():
    """The inequality constraints (33) zero the multipliers of points beyond the margin (34);
    with equality constraints every multiplier is nonzero."""
    train, _ = _subset("breast-cancer_scale", 400)
    two = solvers.train(train, solver="relaxed_lssvm", C=C, kkt_tol=SMO_TOL, max_iter=100_000)
    sesqui = solvers.train(train, solver="relaxed_lssvm", C=C, variant="sesquismo",
                           kkt_tol=SMO_TOL, max_iter=100_000)
    assert two.model.n_support == train.n_samples
    assert sesqui.model.n_support < 0.6 * train.n_samples
    assert sesqui.params.loss == "squared_hinge"
    # coef_j = y_j lambda_j: lambda >= 0 means each coefficient has its example's label sign
    label_of = {row.tobytes(): label for row, label in
                zip(naive.dense(train.X), _targets(train), strict=True)}
    labels = np.array([label_of[row.tobytes()]
                       for row in naive.dense(sesqui.model.support_vectors_)])
    assert np.all(sesqui.model.coef_[0] * labels > 0)


def test_relaxed_with_a_equal_one_is_the_linear_proximal_svm():
    """(13) with A = 1 and the linear kernel is the linear PSVM (Joshi et al., section III)."""
    train, test = _subset("diabetes_scale", 300)
    relaxed = solvers.train(train, solver="relaxed_lssvm", kernel="linear", C=C, A=1.0,
                            kkt_tol=SMO_TOL, max_iter=100_000)
    proximal = solvers.train(train, solver="proximal_svm", kernel="linear", C=C, cg_tol=1e-12)
    assert _relative(relaxed.model.decision_function(test.X),
                     proximal.model.decision_function(test.X)) <= DECISION_RTOL
    assert relaxed.objective == pytest.approx(proximal.objective, rel=OBJECTIVE_RTOL)


def test_sesquismo_linear_is_the_l2_svm_that_mfn_solves():
    """SesquiSMO's problem is the squared hinge with the bias weighted by A: docs/design.md's
    regularized bias with bias_scale = 1/sqrt(A), which L2-SVM-MFN solves independently."""
    train, _ = _subset("breast-cancer_scale", 400)
    A = 4.0
    sesqui = solvers.train(train, solver="relaxed_lssvm", variant="sesquismo",
                           kernel="linear", C=C, A=A, kkt_tol=SMO_TOL, max_iter=100_000)
    mfn = solvers.train(train, solver="mfn", C=C, loss="squared_hinge",
                        bias_scale=1 / np.sqrt(A), epsilon=1e-10)
    assert sesqui.objective == pytest.approx(mfn.objective, rel=1e-8)
    np.testing.assert_allclose(sesqui.model.coef_, mfn.model.coef_, rtol=1e-5, atol=1e-7)


# -- SUMT (section VI) ---------------------------------------------------------------------------


def test_sumt_drives_lambda_y_to_zero_and_reaches_the_classical_lssvm():
    train, test = _subset("breast-cancer_scale", 300)
    y = _targets(train)
    K = _kernel(train, train, "rbf")
    coef_classical, b_classical = naive.lssvm_classical(K, y, C_J)
    classical = K @ coef_classical + b_classical
    rounds = 7  # A = 1e4, 1e3, ..., 1e-2
    distances, balances = [], []
    for r in range(1, rounds + 1):
        result = solvers.train(train, solver="relaxed_lssvm", C=C, kkt_tol=SMO_TOL, sumt=True,
                               sumt_factor=0.1, sumt_max_rounds=r, max_iter=100_000)
        history = result.subproblems[0].extras["sumt"]
        assert len(history) == r and history[-1]["A"] == pytest.approx(1e4 * 0.1 ** (r - 1))
        distances.append(_relative(result.model.decision_function(train.X), classical))
        balances.append(abs(history[-1]["lambda_y"]))
        # the rounds of a longer run repeat those of the shorter ones (warm starts)
        np.testing.assert_allclose([abs(h["lambda_y"]) for h in history], balances,
                                   rtol=1e-6)
    assert result.status == "max_iter" and "SUMT stopped after 7 rounds" in result.message
    # Figs. 4-5: lambda'y and the distance to the classical solution fall with A ...
    assert all(np.diff(balances) < 0) and all(np.diff(distances) < 0)
    # ... in proportion to A once A is small (penalty methods converge like 1/penalty)
    assert balances[-1] / balances[-2] == pytest.approx(0.1, rel=0.05)
    assert distances[-1] / distances[-2] == pytest.approx(0.1, rel=0.05)
    assert distances[-1] < 2e-4
    records = [r for r in result.log if "sumt_round" in r.extras]
    assert {r.extras["sumt_round"] for r in records} == set(range(1, rounds + 1))
    # the SUMT stopping rule
    done = solvers.train(train, solver="relaxed_lssvm", C=C, kkt_tol=SMO_TOL, sumt=True,
                         sumt_factor=0.1, sumt_tol=1e-4, max_iter=100_000)
    assert done.status == "converged" and "SUMT converged" in done.message
    last = done.subproblems[0].extras["sumt"][-1]
    assert last["relative_lambda_y"] <= 1e-4 < done.subproblems[0].extras["sumt"][-2][
        "relative_lambda_y"]


# -- multi-class, models, monitors, errors -----------------------------------------------------


@pytest.fixture(scope="module")
def dna():
    train = load("dna.scale")
    test = load("dna.scale.t", n_features=train.n_features)
    return train, test


@pytest.mark.parametrize("solver, params", [
    ("lssvm", {}),
    ("proximal_svm", {}),
    ("relaxed_lssvm", {}),
    ("relaxed_lssvm", {"variant": "sesquismo"}),
])
def test_one_vs_rest_on_dna(dna, solver, params):
    train, test = dna
    result = solvers.train(train, solver=solver, C=0.05, gamma=0.02, **params)
    assert result.status == "converged"
    model = result.model
    assert isinstance(model, KernelModel) and model.coef_.shape[0] == 3
    assert [s.label for s in result.subproblems] == ["1", "2", "3"]
    scores = model.decision_function(test.X)
    assert scores.shape == (test.n_samples, 3)
    np.testing.assert_array_equal(model.predict(test.X), model.classes_[scores.argmax(1)])
    assert np.mean(model.predict(test.X) == test.y) > 0.88
    # the records of the three subproblems are numbered consecutively and tagged
    assert [r.iteration for r in result.log] == list(range(1, len(result.log) + 1))
    assert {r.extras["class"] for r in result.log} == {"1", "2", "3"}


def test_one_vs_rest_classes_match_binary_dense_solves(dna):
    train = dna[0].subset(np.arange(300))
    result = solvers.train(train, solver="lssvm", C=0.05, gamma=0.02, method="iterative",
                           cg_tol=CG_TOL)
    K = naive.kernel_matrix(train.X, train.X, "rbf", 0.02)
    for k, label in enumerate(train.classes):
        y = np.where(train.y == label, 1.0, -1.0)
        coef, b = naive.lssvm_classical(K, y, 0.1)
        assert _relative(result.model.decision_function(train.X)[:, k], K @ coef + b) \
            <= DECISION_RTOL


def test_kernel_model_round_trip_and_prediction(dna, tmp_path):
    train, test = dna
    for params in ({"variant": "sesquismo"}, {}):
        result = solvers.train(train.subset(np.arange(500)), solver="relaxed_lssvm",
                               C=0.05, gamma=0.02, kernel="polynomial", degree=2, coef0=1.0,
                               **params)
        model = result.model
        loaded = solvers.load_model(model.to_bytes())
        assert isinstance(loaded, KernelModel)
        np.testing.assert_array_equal(loaded.decision_function(test.X),
                                      model.decision_function(test.X))
        np.testing.assert_array_equal(loaded.predict(test.X), model.predict(test.X))
        np.testing.assert_array_equal(loaded.decision_function(test.X, parallel=True),
                                      model.decision_function(test.X))
        assert loaded.kernel == model.kernel and loaded.n_support == model.n_support
        assert loaded.metadata["solver"] == "relaxed_lssvm"
        assert loaded.describe()["kernel"] == "polynomial" and \
            loaded.describe()["n_support"] == model.n_support
        model.save(tmp_path / "model.npz")
        assert solvers.load_model(tmp_path / "model.npz").n_features_in_ == 180


def test_kernel_model_accepts_more_or_fewer_features():
    train, test = _subset("heart_scale", 150)
    model = solvers.train(train, solver="lssvm").model
    wide = solvers.Dataset(test.X, test.y, n_features=test.n_features + 5)
    narrow = test.X[:, :10]
    expected = model.decision_function(test.X)
    np.testing.assert_array_equal(model.decision_function(wide), expected)
    dropped = model.decision_function(narrow)  # missing trailing features are zero
    padded = solvers.Dataset(narrow, test.y, n_features=test.n_features)
    np.testing.assert_array_equal(dropped, model.decision_function(padded))


def test_inconsistent_kernel_archives_are_refused():
    train, _ = _subset("heart_scale", 60)
    model = solvers.train(train, solver="lssvm").model
    fields, arrays = model._fields()
    arrays = dict(arrays)
    arrays["sv_indices"] = arrays["sv_indices"] + 100  # beyond n_features
    with pytest.raises(solvers.ModelFormatError, match="inconsistent kernel model"):
        KernelModel._from_fields(fields, {**arrays, "classes": model.classes_})
    with pytest.raises(solvers.ModelFormatError, match="inconsistent kernel model"):
        KernelModel._from_fields({**fields, "kernel": "laplacian"},
                                 {**model._fields()[1], "classes": model.classes_})


@pytest.mark.parametrize("solver, params", [
    ("lssvm", {"kernel": "linear"}),
    ("lssvm", {"method": "iterative"}),
    ("proximal_svm", {"method": "iterative"}),
    ("relaxed_lssvm", {}),
])
def test_monitor_can_stop_every_path(solver, params):
    train, _ = _subset("diabetes_scale", 300)
    monitor = ListMonitor(time_limit=0.0)
    tol = {"kkt_tol": 1e-12} if solver == "relaxed_lssvm" else {"cg_tol": 1e-12}
    result = solvers.train(train, solver=solver, monitor=monitor, **tol, **params)
    assert result.status == "stopped" and "time limit" in result.message
    assert len(monitor.records) == 1


@pytest.mark.parametrize("solver, params, message", [
    ("lssvm", {"kernel": "linear", "max_iter": 3}, "max_iter=3 CGLS iterations reached"),
    ("lssvm", {"method": "iterative", "max_iter": 2}, "iteration limit reached"),
    ("proximal_svm", {"method": "iterative", "max_iter": 2}, "iteration limit reached"),
    ("relaxed_lssvm", {"max_iter": 1}, "max_iter=1 epochs reached"),
    ("relaxed_lssvm", {"sumt": True, "sumt_max_rounds": 2}, "SUMT stopped after 2 rounds"),
])
def test_iteration_limits_say_why_they_stopped(solver, params, message):
    train, _ = _subset("diabetes_scale", 300)
    tol = {"kkt_tol": 1e-12} if solver == "relaxed_lssvm" else {"cg_tol": 1e-12}
    result = solvers.train(train, solver=solver, **tol, **params)
    assert result.status == "max_iter" and message in result.message


@pytest.mark.parametrize("solver, params, message", [
    ("lssvm", {"loss": "hinge"}, "lssvm' does not solve binary problems with loss='hinge', "
                                 "bias='free' .it solves: loss 'least_squares' with bias 'free'"),
    ("lssvm", {"bias": "regularized"}, "it solves: loss 'least_squares' with bias 'free'"),
    ("proximal_svm", {"bias": "free"}, "it solves: loss 'least_squares' with bias 'regularized'"),
    ("proximal_svm", {"loss": "squared_hinge"}, "does not solve binary problems with "
                                                "loss='squared_hinge'"),
    ("relaxed_lssvm", {"bias": "none"}, "relaxed_lssvm' does not solve binary problems with "
                                        "loss='least_squares', bias='none'"),
    ("relaxed_lssvm", {"loss": "hinge"}, "it solves: loss 'least_squares' or 'squared_hinge'"),
    ("relaxed_lssvm", {"variant": "2smo", "loss": "squared_hinge"},
     "variant '2smo' solves loss 'least_squares'"),
    ("relaxed_lssvm", {"bias_scale": 2.0}, "set A instead of bias_scale"),
    ("relaxed_lssvm", {"A": 0.0}, "A: Input should be greater than 0"),
    ("lssvm", {"kernel": "sigmoid"}, "kernel: Input should be"),
    ("lssvm", {"gamma": -1.0}, "gamma: Input should be greater than 0"),
    ("proximal_svm", {"cache_mb": 0}, "cache_mb: Input should be greater than 0"),
])
def test_unsupported_choices_raise_clear_errors(solver, params, message):
    train, _ = _subset("heart_scale", 50)
    with pytest.raises(solvers.InvalidParametersError, match=message):
        solvers.train(train, solver=solver, **params)


def test_zero_weights_and_foreign_problems_are_refused():
    train, _ = _subset("heart_scale", 50)
    weights = np.ones(train.n_samples)
    weights[3] = 0.0
    weighted = solvers.Dataset(train.X, train.y, sample_weight=weights)
    with pytest.raises(ValueError, match="positive sample weights"):
        solvers.train(weighted, solver="relaxed_lssvm")
    y = _targets(train)
    with pytest.raises(ValueError, match="least_squares loss"):
        run_linear(BinaryProblem(train.X, y, loss="squared_hinge", bias="free"),
                   LSSVMParams(kernel="linear"), ListMonitor())
    with pytest.raises(ValueError, match="'regularized' bias mode"):
        run_linear(BinaryProblem(train.X, y, loss="least_squares", bias="free"),
                   ProximalSVMParams(kernel="linear"), ListMonitor())
    with pytest.raises(ValueError, match="linear kernel only"):
        run_linear(BinaryProblem(train.X, y, loss="least_squares", bias="free"),
                   LSSVMParams(kernel="rbf"), ListMonitor())


def test_registry_describes_the_family():
    for name, losses, bias in [("lssvm", ("least_squares",), ("free",)),
                               ("proximal_svm", ("least_squares",), ("regularized",)),
                               ("relaxed_lssvm", ("least_squares", "squared_hinge"),
                                ("regularized",))]:
        spec = get_solver(name)
        assert spec.losses == losses and spec.bias_modes == bias
        schema = spec.describe()["params_schema"]["properties"]
        stop = "kkt_tol" if name == "relaxed_lssvm" else "cg_tol"
        for key in ("kernel", "gamma", "degree", "coef0", "cache_mb", stop, "max_iter"):
            assert schema[key]["description"]
        assert not spec.certifies_gap and "tol" not in schema
    assert solvers.train(_subset("heart_scale", 80)[0], solver="relaxed_lssvm",
                         variant="sesquismo").params.loss == "squared_hinge"


@pytest.mark.parametrize("fields", [{"variant": {"not": "a name"}}, {"loss": ["hinge"]}])
def test_relaxed_lssvm_refuses_a_variant_or_loss_that_is_not_a_name(fields):
    """The variant/loss pairing looks names up only: a dict or list is the fields' own
    validation error (a 422 in the service), not a TypeError (schemathesis found the 500)."""
    import pydantic

    with pytest.raises(pydantic.ValidationError):
        get_solver("relaxed_lssvm").params_model(**fields)
