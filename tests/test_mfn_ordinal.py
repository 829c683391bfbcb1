"""Ordinal regression (Keerthi & DeCoste section 7, eqs. (25)-(26)) and the ordinal model.

Data: dna.scale (labels 1..3), and a regression-like ranking built from diabetes_scale: the
plasma-glucose feature (column 2) cut at its quintiles into ranks 1..5, predicted from the
other seven features.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import assert_reaches, load

import solvers
from bench.references import lbfgs_optimum, liblinear_optimum
from solvers import mfn
from solvers.base import InvalidParametersError
from solvers.models import OrdinalModel, load_model
from solvers.monitor import ListMonitor
from solvers.problems import BinaryProblem, OrdinalProblem

# against a SciPy L-BFGS solve of the same objective
ORDINAL_RTOL = 1e-8
OBJECTIVE_RTOL = 1e-6


def glucose_ranking() -> solvers.Dataset:
    ds = load("diabetes_scale")
    X = ds.X.toarray()
    glucose = X[:, 1]
    ranks = 1 + np.searchsorted(np.quantile(glucose, [0.2, 0.4, 0.6, 0.8]), glucose,
                                side="right")
    return solvers.Dataset(sp.csr_matrix(np.delete(X, 1, axis=1)), ranks.astype(float))


def dataset(name: str) -> solvers.Dataset:
    return glucose_ranking() if name == "glucose" else load(name)


def ordinal_problem(ds: solvers.Dataset, C: float, bias_scale: float = 1.0):
    ranks = np.searchsorted(ds.classes, ds.y) + 1
    return OrdinalProblem(ds.X, ranks, ds.classes.shape[0], C=C, bias_scale=bias_scale)


@pytest.mark.parametrize("linear_solver", ["cgls", "cholesky"])
@pytest.mark.parametrize("name", ["dna.scale", "glucose"])
@pytest.mark.parametrize("C", [0.1, 10.0])
def test_ordinal_matches_lbfgs(name, C, linear_solver):
    """Appendix A's CGLS and the factorized step 3 (the Gram matrix of the active pairs:
    paired rows, one threshold column each) reach the L-BFGS optimum."""
    problem = ordinal_problem(dataset(name), C)
    x, reference = lbfgs_optimum(lambda b: (problem.objective(b), problem.gradient(b)),
                                 np.zeros(problem.n_features + problem.n_levels - 1))
    monitor = ListMonitor()
    solution = mfn.solve_ordinal(problem, mfn.MFNParams(C=C, task="ordinal", tol=None,
                                                        linear_solver=linear_solver), monitor)
    assert_reaches(solution, problem.objective, reference, ORDINAL_RTOL, linear_solver)
    # the duality gap over the (example, threshold) pairs, reported per iteration
    assert monitor.records[-1].optimality <= 1e-9
    # Chu & Keerthi: the optimal thresholds come out ordered
    thresholds = problem.split(solution.beta)[1]
    assert np.all(np.diff(thresholds) > 0)


def test_heuristics_and_bias_scale_reach_the_same_ordinal_optimum():
    ds = dataset("glucose")
    problem = ordinal_problem(ds, 1.0)
    plain = mfn.solve_ordinal(problem, mfn.MFNParams(task="ordinal", first_round_epsilon=None,
                                                     initial_cgls_iter=None))
    default = mfn.solve_ordinal(problem)
    assert default.objective == pytest.approx(plain.objective, rel=1e-10)
    scaled = ordinal_problem(ds, 1.0, bias_scale=3.0)
    solution = mfn.solve_ordinal(scaled, mfn.MFNParams(task="ordinal", bias_scale=3.0))
    x, reference = lbfgs_optimum(lambda b: (scaled.objective(b), scaled.gradient(b)),
                                 np.zeros(scaled.n_features + 4))
    assert abs(solution.objective - reference) / reference <= ORDINAL_RTOL


def test_two_levels_is_the_binary_l2_svm():
    """With p = 2 the single threshold is minus the bias: the optimum is LIBLINEAR's."""
    ds = load("heart_scale")
    problem = ordinal_problem(ds, 1.0)
    solution = mfn.solve_ordinal(problem, mfn.MFNParams(task="ordinal", tol=None))
    binary = BinaryProblem(ds.X, np.where(ds.y == ds.classes[1], 1.0, -1.0), C=1.0)
    reference = liblinear_optimum(binary, solver_type=2)
    assert abs(solution.objective - reference.objective) / reference.objective \
        <= OBJECTIVE_RTOL
    w, thresholds = problem.split(solution.beta)
    np.testing.assert_allclose(w, reference.beta[:-1], rtol=1e-4, atol=1e-6)
    assert thresholds[0] == pytest.approx(-reference.beta[-1], rel=1e-4)


def test_train_builds_an_ordinal_model_that_round_trips():
    train_set = load("dna.scale")
    test_set = load("dna.scale.t", n_features=train_set.n_features)
    result = solvers.train(train_set, solver="mfn", task="ordinal", C=0.1)
    assert result.status == "converged"
    model = result.model
    assert isinstance(model, OrdinalModel) and model.kind == "ordinal"
    assert model.classes_.tolist() == [1.0, 2.0, 3.0]
    assert model.thresholds_.shape == (2,)
    assert model.decision_function(test_set.X).shape == (test_set.n_samples,)
    predicted = model.predict(test_set.X)
    assert set(np.unique(predicted)) <= {1.0, 2.0, 3.0}
    assert np.mean(np.abs(predicted - test_set.y)) < 0.5  # mean absolute rank error
    restored = load_model(model.to_bytes())
    assert isinstance(restored, OrdinalModel)
    np.testing.assert_array_equal(restored.predict(test_set.X), predicted)
    np.testing.assert_array_equal(restored.thresholds_, model.thresholds_)
    assert restored.metadata["params"]["task"] == "ordinal"
    assert restored.describe()["kind"] == "ordinal"
    # the records of the run are numbered and carry the ordinal objective
    assert result.log[-1].objective == pytest.approx(result.objective, rel=1e-12)


def test_original_labels_are_predicted():
    ds = glucose_ranking()
    labels = np.array([-3.0, 0.5, 2.0, 7.0, 11.0])
    relabelled = solvers.Dataset(ds.X, labels[ds.y.astype(int) - 1])
    result = solvers.train(relabelled, solver="mfn", task="ordinal")
    assert result.model.classes_.tolist() == labels.tolist()
    predicted = result.model.predict(relabelled.X)
    assert set(np.unique(predicted)) <= set(labels.tolist())
    ranks = np.searchsorted(labels, predicted)
    true_ranks = ds.y.astype(int) - 1
    assert np.mean(np.abs(ranks - true_ranks)) < 1.0


def test_ordinal_parameters_are_validated():
    ds = load("dna.scale")
    with pytest.raises(InvalidParametersError, match="squared hinge"):
        solvers.train(ds, solver="mfn", task="ordinal", loss="hinge")
    with pytest.raises(InvalidParametersError, match="thresholds"):
        solvers.train(ds, solver="mfn", task="ordinal", bias="none")
    with pytest.raises(ValueError, match="ranks"):
        OrdinalProblem(ds.X, np.zeros(ds.n_samples), 3)


def test_ordinal_model_checks_and_counts_thresholds():
    with pytest.raises(ValueError, match="thresholds"):
        OrdinalModel(np.ones(3), np.zeros(3), [1, 2, 3])
    with pytest.raises(ValueError, match="sorted"):
        OrdinalModel(np.ones(3), np.zeros(1), [2, 1])
    model = OrdinalModel(np.array([1.0, 0.0]), np.array([-1.0, 1.0]), [10, 20, 30])
    X = sp.csr_matrix(np.array([[-2.0, 0.0], [-1.0, 5.0], [0.0, 0.0], [1.0, 0.0], [3.0, 1.0]]))
    np.testing.assert_array_equal(model.predict(X), [10, 10, 20, 20, 30])
    # out-of-order thresholds (a non-optimal model) still give a bin: count those below
    disordered = OrdinalModel(np.array([1.0, 0.0]), np.array([1.0, -1.0]), [10, 20, 30])
    np.testing.assert_array_equal(disordered.predict(X), [10, 10, 20, 20, 30])
