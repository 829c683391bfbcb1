"""The Crammer-Singer problem against direct formulas, its subgradient and its dual, and its
optimum against LIBLINEAR -s 4 and Clarabel on real data."""

from __future__ import annotations

import numpy as np
import pytest
from shared_data import load, random_csr

from solvers.problems import CrammerSingerProblem


def _problem(bias="regularized", weighted=False):
    X = random_csr(40, 6, 0.6, seed=3)
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 4, 40)
    weights = rng.uniform(0.5, 2.0, 40) if weighted else None
    return CrammerSingerProblem(X, labels, 4, C=0.8, bias=bias, bias_scale=1.5,
                                sample_weight=weights)


def _direct_objective(problem, W):
    X = np.asarray(problem.X.todense())
    Xt = np.hstack([X, np.full((X.shape[0], 1), problem.effective_bias_scale)])
    S = Xt @ W.T
    total = 0.5 * float(np.sum(W * W))
    for i, yi in enumerate(problem.labels):
        terms = [(k != yi) + S[i, k] - S[i, yi] for k in range(problem.n_classes)]
        total += problem.cost[i] * max(terms)
    return total


@pytest.mark.parametrize("bias", ["regularized", "none"])
def test_objective_matches_direct_formula(bias):
    problem = _problem(bias, weighted=True)
    W = np.random.default_rng(5).standard_normal((4, 7))
    if bias == "none":
        W[:, -1] = 0.0
    assert problem.objective(W) == pytest.approx(_direct_objective(problem, W), rel=1e-12)


def test_subgradient_and_weak_duality():
    problem = _problem(weighted=True)
    rng = np.random.default_rng(6)
    for _ in range(5):
        W = rng.standard_normal((4, 7))
        risk, G = problem.risk_subgradient(W)
        assert risk == pytest.approx(problem.risk(W), rel=1e-12)
        for _ in range(10):
            V = W + rng.standard_normal(W.shape)
            assert problem.risk(V) >= risk + float(np.sum(G * (V - W))) - 1e-9
        alpha = problem.dual_from_primal(W)
        assert np.isfinite(problem.dual_objective(alpha))
        assert problem.duality_gap(W) >= -1e-9
    assert problem.dual_objective(np.ones((40, 4))) == -np.inf  # rows must sum to 0


def test_optimum_against_liblinear_and_clarabel():
    """On 300 rows of dna (180 features, 3 classes): Clarabel's exact optimum of the QP,
    LIBLINEAR -s 4 -B 1 at a tight eps, and the dual bound all agree."""
    cp = pytest.importorskip("cvxpy")
    from liblinear.liblinearutil import train

    dataset = load("dna.scale")
    keep = np.arange(300)
    X = dataset.X[keep]
    labels = np.searchsorted(dataset.classes, dataset.y[keep])
    problem = CrammerSingerProblem(X, labels, dataset.classes.shape[0], C=0.1)
    k, d = problem.n_classes, problem.n_features
    Xt = np.hstack([X.toarray(), np.ones((X.shape[0], 1))])
    W = cp.Variable((k, d + 1))
    xi = cp.Variable(X.shape[0])
    S = Xt @ W.T
    onehot = np.eye(k)[labels]
    true_score = cp.reshape(cp.sum(cp.multiply(S, onehot), axis=1), (X.shape[0], 1), order="C")
    slack = cp.reshape(xi, (X.shape[0], 1), order="C")
    constraints = [slack >= S + (1 - onehot) - true_score]
    qp = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + problem.C * cp.sum(xi)), constraints)
    qp.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    optimum = problem.objective(W.value)
    assert optimum == pytest.approx(qp.value, rel=1e-8)
    model = train(labels.astype(float), X, f"-s 4 -B 1 -c {problem.C} -e 1e-8 -q")
    W_lib = np.zeros((k, d + 1))
    for index, label in enumerate(model.get_labels()):
        w, b = model.get_decfun(index)
        W_lib[int(label)] = np.r_[w, b]
    assert problem.objective(W_lib) == pytest.approx(optimum, rel=1e-6)
    assert problem.dual_objective(problem.dual_from_primal(W.value)) <= optimum + 1e-9
