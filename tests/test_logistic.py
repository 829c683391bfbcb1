"""Logistic regression (issue 47): the ``logistic`` loss solved by dual_cd (Yu, Huang & Lin,
LIBLINEAR ``-s 7``) and by newton (LIBLINEAR ``-s 0``'s truncated Newton method), against
liblinear-official on real data, and its models' own probabilities against LIBLINEAR's
``predict -b 1``.

* Objectives: each problem's P (the problem layer's) at our model equals P at LIBLINEAR's
  weights (``-e 1e-10``) to 1e-6 relative, at three C, with a regularized bias (``-B 1``) and
  none; one-vs-rest problem by problem (LIBLINEAR's, each class against the rest at C).
* Probabilities: a model's ``predict_proba`` is sigma(f) (binary) or the one-vs-rest sigmoids
  normalized, LIBLINEAR's ``predict_probability``: the labels and probabilities of held-out
  rows equal ``predict -b 1``'s (probabilities to 1e-6), also through a LIBLINEAR model file
  written here and read by LIBLINEAR, and read back here; no Platt step; ONNX keeps them.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest
from liblinear import liblinearutil
from shared_data import load
from test_onnx import assert_served_as_predicted

import solvers
from solvers.models import LinearModel, load_model
from solvers.problems import BinaryProblem

CS = (0.1, 1.0, 10.0)
BIAS = {"regularized": "-B 1", "none": ""}


def _split(name: str, rows: int | None = None):
    """(train, test): a set's first rows and the rest (every 4th row held out)."""
    data = load(name)
    if rows is not None:
        data = data.subset(np.arange(rows))
    held = np.arange(data.n_samples) % 4 == 3
    return data.subset(~held), data.subset(held)


@functools.cache
def _data(name: str):
    if name == "dna":  # three classes: one-vs-rest
        return _split("dna.scale", 1000)[0]
    return load(name)


@functools.cache
def _liblinear(name: str, solver_type: int, C: float, bias: str, tmp: str) -> LinearModel:
    """LIBLINEAR's model (``-e 1e-10``) of the set, read through its model file."""
    data = _data(name)
    model = liblinearutil.train(data.y.astype(float).tolist(), data.X,
                                f"-s {solver_type} -c {C!r} {BIAS[bias]} -e 1e-10 -q")
    path = os.path.join(tmp, f"{name}-{solver_type}-{C}-{bias}.model")
    liblinearutil.save_model(path, model)
    return load_model(path)


def _objective(data, model: LinearModel, C: float, bias: str) -> float:
    """sum over the model's binary problems (one per row of coef_) of P at its row."""
    classes = data.classes
    positives = [classes[1]] if len(classes) == 2 else list(classes)
    total = 0.0
    for row, positive in enumerate(positives):
        y = np.where(data.y == positive, 1.0, -1.0)
        problem = BinaryProblem(data.X, y, C=C, loss="logistic", bias=bias)
        beta = problem.join(model.coef_[row], model.intercept_[row] if bias != "none" else 0.0)
        total += problem.objective(beta)
    return total


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("liblinear"))


@pytest.mark.parametrize("C", CS)
@pytest.mark.parametrize("bias", ["regularized", "none"])
@pytest.mark.parametrize("name", ["heart_scale", "breast-cancer_scale", "dna"])
@pytest.mark.parametrize(("solver", "solver_type"), [("newton", 0), ("dual_cd", 7)])
def test_objective_equals_liblinear(solver, solver_type, name, bias, C, tmp):
    data = _data(name)
    result = solvers.train(data, solver=solver, loss="logistic", C=C, bias=bias, tol=1e-9)
    assert result.status == "converged", result.message
    ours = _objective(data, result.model, C, bias)
    assert ours == pytest.approx(result.objective, rel=1e-12)
    theirs = _objective(data, _liblinear(name, solver_type, C, bias, tmp), C, bias)
    assert ours == pytest.approx(theirs, rel=1e-6)
    assert ours <= theirs * (1 + 1e-9)  # certified within 1e-9: never above the anchor's


def test_objective_on_a9a_at_C_1(tmp):
    """The larger set once (32,561 rows): both methods against -s 0."""
    bias = "regularized"
    data = _data("a9a")
    theirs = _objective(data, _liblinear("a9a", 0, 1.0, bias, tmp), 1.0, bias)
    for solver in ("newton", "dual_cd"):
        result = solvers.train(data, solver=solver, loss="logistic", C=1.0, bias=bias,
                               tol=1e-9)
        assert result.objective == pytest.approx(theirs, rel=1e-6), solver


def _liblinear_probabilities(model_path: str, test) -> tuple[np.ndarray, np.ndarray]:
    """LIBLINEAR's ``predict -b 1`` of the model file on ``test``: labels and probabilities,
    columns in sorted label order."""
    theirs = liblinearutil.load_model(model_path)
    labels, _, probabilities = liblinearutil.predict(test.y.astype(float).tolist(), test.X,
                                                     theirs, "-b 1 -q")
    order = np.argsort(theirs.get_labels())
    return np.asarray(labels), np.asarray(probabilities)[:, order]


@pytest.mark.parametrize(("name", "C", "bias"), [("svmguide1", 1.0, "regularized"),
                                                 ("dna", 0.1, "regularized"),
                                                 ("heart_scale", 10.0, "none")])
def test_probabilities_are_liblinears_predict_b1(name, C, bias, tmp_path):
    """Trained here (newton, certified to 1e-13) and by LIBLINEAR -s 0 at -e 1e-10: the
    held-out labels are the same and the probabilities agree to 1e-6; our model written as a
    LIBLINEAR file (L2R_LR) gives LIBLINEAR's predict -b 1 our probabilities, and read back
    keeps them."""
    if name == "dna":
        train, test = _split("dna.scale", 1000)
    else:
        train, test = _split(name)
    result = solvers.train(train, solver="newton", loss="logistic", C=C, bias=bias,
                           tol=1e-13)
    model = result.model
    assert model.calibrated and model.metadata["platt"][0] == [-1.0, 0.0]
    ours = model.predict_proba(test.X)
    theirs_file = str(tmp_path / "theirs.model")
    liblinearutil.save_model(theirs_file, liblinearutil.train(
        train.y.astype(float).tolist(), train.X, f"-s 0 -c {C!r} {BIAS[bias]} -e 1e-10 -q"))
    labels, theirs = _liblinear_probabilities(theirs_file, test)
    np.testing.assert_array_equal(model.predict(test.X).astype(float), labels)
    np.testing.assert_allclose(ours, theirs, atol=1e-6, rtol=0)
    # our model through LIBLINEAR's model file: LIBLINEAR predicts our probabilities
    ours_file = tmp_path / "ours.model"
    ours_file.write_text(model.to_liblinear())
    assert ours_file.read_text().startswith("solver_type L2R_LR\n")
    labels, through = _liblinear_probabilities(str(ours_file), test)
    np.testing.assert_allclose(through, ours, atol=1e-12, rtol=0)
    back = load_model(str(ours_file))
    assert back.calibrated
    np.testing.assert_allclose(back.predict_proba(test.X), ours, atol=1e-12, rtol=0)
    # and LIBLINEAR's own file read here gives LIBLINEAR's
    np.testing.assert_allclose(load_model(theirs_file).predict_proba(test.X), theirs,
                               atol=1e-12, rtol=0)


def test_binary_probabilities_are_the_sigmoid_and_no_platt_step_runs():
    """predict_proba = [1 - sigma(f), sigma(f)] at the model's own scores, with or without
    probability=True (no out-of-fold fits: the sigmoid is the loss's, not fitted); dual_cd's
    model too; the ONNX graph serves the same probabilities."""
    train, test = _split("heart_scale")
    for solver in ("newton", "dual_cd"):
        plain = solvers.train(train, solver=solver, loss="logistic", C=1.0).model
        asked = solvers.train(train, solver=solver, loss="logistic", C=1.0,
                              probability=True).model
        for model in (plain, asked):  # (dual_cd's stop point depends on timing: two models)
            f = model.decision_function(test.X)
            sigma = 1.0 / (1.0 + np.exp(-f))
            np.testing.assert_allclose(model.predict_proba(test.X),
                                       np.column_stack([1.0 - sigma, sigma]), rtol=1e-14)
        assert asked.metadata["platt"] == plain.metadata["platt"] == [[-1.0, 0.0]]
        assert_served_as_predicted(plain, test.X)
    hinge = solvers.train(train, solver="dual_cd", loss="hinge", C=1.0).model
    assert not hinge.calibrated


def test_one_vs_rest_probabilities_are_normalized_sigmoids():
    train, test = _split("dna.scale", 600)
    model = solvers.train(train, solver="dual_cd", loss="logistic", C=1.0).model
    f = model.decision_function(test.X)
    sigma = 1.0 / (1.0 + np.exp(-f))
    np.testing.assert_allclose(model.predict_proba(test.X),
                               sigma / sigma.sum(axis=1, keepdims=True), rtol=1e-14)
    assert_served_as_predicted(model, test.X)


def test_the_dual_point_is_certified_at_every_newton_iterate():
    """newton's records: the problem layer's objective and a gap from a feasible alpha (inside
    (0, C_i)) that falls to tol; the free bias balanced."""
    data = load("heart_scale")
    y = np.where(data.y == data.classes[1], 1.0, -1.0)
    for bias in ("regularized", "free"):
        problem = BinaryProblem(data.X, y, C=2.0, loss="logistic", bias=bias)
        log = solvers.ListMonitor()
        solution = solvers.get_solver("newton").run(
            problem, solvers.get_solver("newton").params_model(loss="logistic", C=2.0,
                                                               bias=bias, tol=1e-10), log)
        gaps = [r.optimality for r in log.records]
        assert gaps[-1] <= 1e-10 and all(g >= 0 for g in gaps)
        assert log.records[-1].objective == pytest.approx(problem.objective(solution.beta),
                                                          rel=1e-14)
        alpha = problem.dual_from_primal(solution.beta)
        assert np.all(alpha > 0) and np.all(alpha < problem.cost)
        assert problem.relative_duality_gap(solution.beta) <= 1e-10


def test_liblinear_rules_stop_both_methods():
    """stop_rule: LIBLINEAR's own rules (newton's gradient norm, dual_cd's largest
    sub-problem derivative), uncertified, end near the optimum too."""
    data = load("heart_scale")
    best = solvers.train(data, solver="newton", loss="logistic", tol=1e-12).objective
    newton = solvers.train(data, solver="newton", loss="logistic", stop_rule="gradient",
                           eps=0.01)
    dual = solvers.train(data, solver="dual_cd", loss="logistic",
                         stop_rule="projected_gradient", eps=0.01)
    for result in (newton, dual):
        assert result.status == "converged" and "LIBLINEAR's rule" in result.message
        assert result.objective == pytest.approx(best, rel=1e-3)


def test_refusals_say_why():
    data = load("heart_scale")
    with pytest.raises(solvers.InvalidParametersError, match="Crammer-Singer"):
        solvers.train(load("dna.scale"), solver="dual_cd", loss="logistic",
                      multiclass="crammer_singer")
    with pytest.raises(solvers.InvalidParametersError, match="equality constraint"):
        solvers.train(data, solver="dual_cd", loss="logistic", bias="free")
    with pytest.raises(solvers.InvalidParametersError, match="mfn' does not solve"):
        solvers.train(data, solver="mfn", loss="logistic")
