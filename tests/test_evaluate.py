"""The metrics of :mod:`solvers.evaluate` equal scikit-learn's (``sklearn.metrics``) to 1e-12
on real models and data: a9a/a9a.t (binary, 76% one class) and dna (3 classes); string labels
too; cross-validation's ``scoring=`` and the service's evaluation report them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata
from sklearn import metrics

import solvers
from solvers.evaluate import (
    ROC_POINTS,
    average_precision,
    average_ranks,
    binary_roc_auc,
    roc_curve,
)
from tests.shared_data import load


@pytest.fixture(scope="module")
def binary():
    train, test = load("a9a", n_features=123), load("a9a.t", n_features=123)
    return solvers.train(train, solver="mfn", C=1.0).model, test


@pytest.fixture(scope="module")
def multiclass():
    return solvers.train(load("dna.scale"), solver="mfn", C=0.1).model, load("dna.scale.t")


def _check_label_metrics(report, truth, predicted):
    labels = report["labels"]
    assert report["accuracy"] == pytest.approx(metrics.accuracy_score(truth, predicted), abs=1e-12)
    assert report["balanced_accuracy"] == pytest.approx(
        metrics.balanced_accuracy_score(truth, predicted), abs=1e-12)
    for name in ("precision", "recall", "f1"):
        function = getattr(metrics, f"{name}_score")
        assert report[f"{name}_macro"] == pytest.approx(
            function(truth, predicted, average="macro", zero_division=0), abs=1e-12)
        per_class = function(truth, predicted, labels=labels, average=None, zero_division=0)
        np.testing.assert_allclose([c[name] for c in report["per_class"]], per_class,
                                   rtol=0, atol=1e-12)
    np.testing.assert_array_equal(report["confusion_matrix"],
                                  metrics.confusion_matrix(truth, predicted, labels=labels))


def test_binary_metrics_equal_sklearn(binary):
    model, test = binary
    report = solvers.evaluate(model, test)
    scores = model.decision_function(test.X)
    truth, predicted = test.labels, model.predict(test.X)
    _check_label_metrics(report, truth, predicted)
    assert report["labels"] == [-1, 1] and report["balanced_accuracy"] < report["accuracy"]
    assert report["roc_auc"] == pytest.approx(metrics.roc_auc_score(truth == 1, scores),
                                              abs=1e-12)
    assert report["average_precision"] == pytest.approx(
        metrics.average_precision_score(truth == 1, scores), abs=1e-12)
    # ties: rounded scores have many; both still agree
    rounded = np.round(scores, 1)
    assert binary_roc_auc(truth == 1, rounded) == pytest.approx(
        metrics.roc_auc_score(truth == 1, rounded), abs=1e-12)
    assert average_precision(truth == 1, rounded) == pytest.approx(
        metrics.average_precision_score(truth == 1, rounded), abs=1e-12)


def _sklearn_points(positive, scores, drop_intermediate=True):
    fpr, tpr, thresholds = metrics.roc_curve(positive, scores,
                                             drop_intermediate=drop_intermediate)
    return set(zip(fpr.tolist(), tpr.tolist(), thresholds.tolist(), strict=True))


def test_roc_curve_points_are_sklearns(binary):
    """Uncapped, the curve is scikit-learn's roc_curve exactly (drop_intermediate, ties);
    capped at 200, every point kept is one of its points, the ends included."""
    model, test = binary
    positive, scores = test.labels == 1, model.decision_function(test.X)
    for s in (scores, np.round(scores, 1), np.round(scores, 2)):
        fpr, tpr, thresholds = roc_curve(positive, s, max_points=None)
        want = metrics.roc_curve(positive, s)
        for got, expected in zip((fpr, tpr, thresholds), want, strict=True):
            np.testing.assert_array_equal(got, expected)
        fpr, tpr, thresholds = roc_curve(positive, s)
        assert len(fpr) == min(ROC_POINTS, len(want[0]))
        points = set(zip(fpr.tolist(), tpr.tolist(), thresholds.tolist(), strict=True))
        assert points <= _sklearn_points(positive, s)
        assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
        assert np.all(np.diff(thresholds) < 0) and np.all(np.diff(fpr) >= 0)
    assert len(metrics.roc_curve(positive, scores)[0]) > ROC_POINTS  # the cap was exercised
    report = solvers.evaluate(model, test)["roc_curve"]
    assert report["fpr"] == roc_curve(positive, scores)[0].tolist()
    assert report["thresholds"][0] is None  # +infinity in JSON
    assert roc_curve(np.ones(3, dtype=bool), np.arange(3.0)) is None


def test_log_loss_of_a_calibrated_model_equals_sklearn(binary):
    model, test = binary
    assert solvers.evaluate(model, test)["log_loss"] is None  # no probabilities
    train = load("heart_scale")
    calibrated = solvers.train(train, solver="mfn", C=1.0, probability=True).model
    report = solvers.evaluate(calibrated, train)
    assert report["log_loss"] == pytest.approx(metrics.log_loss(
        train.labels, calibrated.predict_proba(train.X), labels=calibrated.classes_),
        rel=1e-12)


def test_multiclass_metrics_equal_sklearn(multiclass):
    model, test = multiclass
    report = solvers.evaluate(model, test)
    truth, predicted = test.labels, model.predict(test.X)
    _check_label_metrics(report, truth, predicted)
    scores = model.decision_function(test.X)
    per_class = [metrics.roc_auc_score(truth == c, scores[:, k])
                 for k, c in enumerate(model.classes_)]
    assert report["roc_auc"] == pytest.approx(np.mean(per_class), abs=1e-12)
    assert report["average_precision"] is None


def test_string_labels_and_an_unseen_label(multiclass):
    model, test = multiclass
    names = np.array(["EI", "IE", "N"])
    train = load("dna.scale")
    named = solvers.train(solvers.Dataset(train.X, names[train.y.astype(int) - 1]),
                          solver="mfn", C=0.1).model
    truth = names[test.y.astype(int) - 1].astype("<U8")
    truth[:5] = "other"  # a label the model does not know: always wrong
    report = solvers.evaluate(named, solvers.Dataset(test.X, truth))
    assert report["labels"] == ["EI", "IE", "N", "other"]
    _check_label_metrics(report, truth, named.predict(test.X))


def test_cross_validation_scoring():
    from solvers.model_selection import cross_validate

    ds = load("a9a")
    by_accuracy = cross_validate(ds, solver="mfn", C=[0.01, 1.0], folds=3)
    balanced = cross_validate(ds, solver="mfn", C=[0.01, 1.0], folds=3,
                              scoring="balanced_accuracy")
    auc = cross_validate(ds, solver="mfn", C=[0.01, 1.0], folds=3, scoring="roc_auc")
    assert balanced.metric == "balanced_accuracy" and auc.metric == "roc_auc"
    for a, b, c in zip(by_accuracy.scores, balanced.scores, auc.scores, strict=True):
        assert b.mean < a.mean < c.mean  # a9a: 76% negatives; AUC above both
    with pytest.raises(solvers.InvalidParametersError, match="scoring"):
        cross_validate(ds, solver="mfn", C=[1.0], scoring="nope")
    with pytest.raises(solvers.InvalidParametersError, match="two labels"):
        cross_validate(load("dna.scale"), solver="mfn", C=[1.0], scoring="average_precision")


def test_cli_predict_reports_the_metrics(tmp_path, capsys, binary):
    from app.cli import main
    from tests.shared_data import data_path

    model, test = binary
    path = tmp_path / "m.npz"
    model.save(path)
    assert main(["predict", str(data_path("a9a.t")), str(path), "--metrics"]) == 0
    out = capsys.readouterr().out
    report = solvers.evaluate(model, solvers.read_svmlight(data_path("a9a.t")))
    assert f"balanced accuracy: {100 * report['balanced_accuracy']:.4f}%" in out
    assert f"ROC AUC: {report['roc_auc']:.6f}" in out
    assert main(["cv", str(data_path("heart_scale")), "--solver", "mfn", "--C", "1",
                 "--folds", "3", "--quiet", "--scoring", "f1_macro"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[:2] == ["C", "f1_macro"]


def test_service_evaluation_has_the_metrics(multiclass):
    from app.evaluation import evaluate
    from app.schemas import EvaluationPublic

    model, test = multiclass
    report = evaluate(model, test)
    public = EvaluationPublic(dataset_id="00000000-0000-0000-0000-000000000000", **report)
    assert public.f1_macro == report["f1_macro"] and public.labels == [1, 2, 3]
    assert public.per_class[0].precision == report["per_class"][0]["precision"]


def test_average_ranks_are_scipys_rankdata():
    rng = np.random.default_rng(3)
    for values in (rng.integers(0, 5, 200).astype(float), rng.standard_normal(50),
                   np.array([2.0]), np.array([1.0, 1.0, 1.0]), np.array([], dtype=float)):
        np.testing.assert_array_equal(average_ranks(values), rankdata(values))
