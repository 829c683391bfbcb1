"""One definition of each problem: objective, gradient and dual against direct formulas."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad, minimize
from shared_data import random_csr

from solvers.losses import LOSSES
from solvers.problems import BIAS_MODES, BinaryProblem, loss_value


def _problem(loss, bias, weighted=False, p=1.5, bias_scale=1.0):
    X = random_csr(60, 8, 0.5, seed=11)
    rng = np.random.default_rng(12)
    y = rng.choice([-1.0, 1.0], 60)
    weights = rng.uniform(0.5, 2.0, 60) if weighted else None
    return BinaryProblem(X, y, C=0.7, loss=loss, bias=bias, bias_scale=bias_scale, p=p,
                         sample_weight=weights)


def _direct_objective(problem, beta):
    X = np.asarray(problem.X.todense())
    w, b = beta[:-1], beta[-1]
    s = problem.effective_bias_scale
    m = problem.y * (X @ w + s * b)
    xi = 1 - m
    table = {
        "hinge": np.maximum(xi, 0),
        "squared_hinge": np.maximum(xi, 0) ** 2,
        "lp": np.maximum(xi, 0) ** problem.p,
        "modified_huber": np.where(m >= -1, np.maximum(xi, 0) ** 2, -4 * m),
        "least_squares": xi**2,
    }
    r = {"regularized": 1.0, "free": 0.0, "none": 0.0}[problem.bias]
    return 0.5 * (w @ w + r * b * b) + problem.cost @ table[problem.loss]


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("bias", BIAS_MODES)
def test_objective_matches_direct_formula(loss, bias):
    problem = _problem(loss, bias, weighted=True, bias_scale=2.0)
    beta = np.random.default_rng(1).standard_normal(9) * 0.5
    if bias == "none":
        beta[-1] = 0.0
    assert problem.objective(beta) == pytest.approx(_direct_objective(problem, beta),
                                                    rel=1e-12)


@pytest.mark.parametrize("loss", ["squared_hinge", "modified_huber", "least_squares", "lp"])
@pytest.mark.parametrize("bias", BIAS_MODES)
def test_gradient_of_smooth_losses(loss, bias):
    problem = _problem(loss, bias, weighted=True)
    beta = np.random.default_rng(2).standard_normal(9) * 0.3
    if bias == "none":
        beta[-1] = 0.0
    err = check_grad(problem.objective, problem.gradient, beta)
    assert err < 1e-5 * max(1.0, np.linalg.norm(problem.gradient(beta)))


@pytest.mark.parametrize("loss", ["squared_hinge", "modified_huber", "least_squares", "lp"])
def test_strong_duality_at_the_optimum(loss):
    """At the optimum of a smooth problem the KKT map gives a dual point with zero gap."""
    problem = _problem(loss, "regularized", weighted=True, p=1.6)
    result = minimize(problem.objective, problem.zeros(), jac=problem.gradient,
                      method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-11,
                                                  "maxiter": 20000})
    gap = problem.duality_gap(result.x)
    assert 0 <= gap <= 1e-7 * problem.objective(result.x)
    np.testing.assert_allclose(problem.primal_from_dual(problem.dual_from_primal(result.x)),
                               result.x, atol=1e-5)


@pytest.mark.parametrize("loss", LOSSES)
def test_weak_duality_anywhere(loss):
    problem = _problem(loss, "regularized", p=1.4)
    rng = np.random.default_rng(3)
    for _ in range(5):
        beta = rng.standard_normal(9)
        alpha = problem.dual_from_primal(beta)
        assert problem.dual_objective(alpha) <= problem.objective(beta) + 1e-9


def test_free_bias_dual_requires_balance():
    problem = _problem("hinge", "free")
    alpha = np.full(60, 0.1)
    balanced = alpha * (problem.y == problem.y[0])  # only one class: sum alpha y != 0
    assert problem.dual_objective(balanced) == -np.inf


def test_hinge_dual_box():
    problem = _problem("hinge", "regularized")
    assert problem.dual_objective(np.full(60, 10.0)) == -np.inf
    assert np.isfinite(problem.dual_objective(np.full(60, 0.1)))


@pytest.mark.parametrize("bad, message", [
    ({"loss": "logistic"}, "unknown loss"),
    ({"bias": "maybe"}, "unknown bias mode"),
    ({"C": 0.0}, "C must be positive"),
    ({"p": 3.0}, "p must lie"),
    ({"bias_scale": -1.0}, "bias_scale"),
])
def test_invalid_problems_are_refused(bad, message):
    X = random_csr(5, 3, 0.6, seed=1)
    kwargs = {"C": 1.0, "loss": "hinge", "bias": "regularized", **bad}
    with pytest.raises(ValueError, match=message):
        BinaryProblem(X, np.array([1.0, -1, 1, -1, 1]), **kwargs)


def test_labels_must_be_plus_minus_one():
    X = random_csr(3, 3, 0.6, seed=1)
    with pytest.raises(ValueError, match="must be \\+1 or -1"):
        BinaryProblem(X, np.array([0.0, 1.0, 1.0]))


def test_loss_values_at_knots():
    m = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    np.testing.assert_allclose(loss_value("modified_huber", m), [8.0, 4.0, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(loss_value("lp", m, p=1.0), loss_value("hinge", m))
    np.testing.assert_allclose(loss_value("lp", m, p=2.0), loss_value("squared_hinge", m))
