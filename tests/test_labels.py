"""Labels keep their type: a model trained on int labels predicts ints (an SVMlight file's
``14`` comes back as ``14``, not ``14.0``), on strings predicts strings, through the library,
the model file (old files with float classes stay loadable) and cross-validation."""

from __future__ import annotations

import io

import numpy as np
import pytest

import solvers
from solvers.data.dataset import label_key
from solvers.models import LinearModel, load_model
from tests.shared_data import load


def _names(dataset, names):
    return np.asarray(names)[dataset.y.astype(int) - 1]


def test_svmlight_labels_are_ints_and_predictions_too():
    dna = load("dna.scale")
    assert dna.labels.dtype == np.int64 and list(dna.class_labels) == [1, 2, 3]
    model = solvers.train(dna, solver="mfn", C=1.0).model
    assert model.classes_.dtype == np.int64
    predicted = model.predict(dna.X)
    assert predicted.dtype == np.int64
    assert [label_key(v) for v in model.classes_] == ["1", "2", "3"]
    assert np.mean(predicted == dna.labels) > 0.9
    again = load_model(model.to_bytes())
    assert again.classes_.dtype == np.int64
    np.testing.assert_array_equal(again.predict(dna.X), predicted)


def test_string_labels_train_and_predict_the_same_model_as_numbers():
    dna = load("dna.scale")
    names = ["exon-intron", "intron-exon", "neither"]  # sorted like 1, 2, 3
    named = solvers.Dataset(dna.X, _names(dna, names))
    assert list(named.class_labels) == names
    by_name = solvers.train(named, solver="mfn", C=1.0).model
    by_number = solvers.train(dna, solver="mfn", C=1.0).model
    np.testing.assert_array_equal(by_name.coef_, by_number.coef_)
    assert list(by_name.classes_) == names
    predicted = by_name.predict(dna.X)
    np.testing.assert_array_equal(predicted, np.asarray(names)[by_number.predict(dna.X) - 1])
    restored = load_model(by_name.to_bytes())  # strings stored without pickle
    assert list(restored.classes_) == names
    # a subset keeps the coding: each fold's model knows the strings
    part = named.subset(np.flatnonzero(named.labels != "neither"))
    assert list(part.class_labels) == names[:2]
    binary = solvers.train(part, solver="mfn", C=1.0).model
    assert set(binary.predict(part.X)) <= set(names[:2])


def test_cross_validation_scores_string_labels():
    from solvers.model_selection import cross_validate

    dna = load("dna.scale")
    named = solvers.Dataset(dna.X, _names(dna, ["a", "b", "c"]))
    by_name = cross_validate(named, solver="mfn", C=[1.0], folds=3)
    by_number = cross_validate(dna, solver="mfn", C=[1.0], folds=3)
    assert by_name.scores[0].mean == pytest.approx(by_number.scores[0].mean, abs=1e-12)
    assert by_name.scores[0].mean > 0.9


def test_ordinal_refuses_string_labels():
    dna = load("dna.scale")
    named = solvers.Dataset(dna.X, _names(dna, ["a", "b", "c"]))
    with pytest.raises(solvers.InvalidParametersError, match="numeric labels"):
        solvers.train(named, solver="mfn", task="ordinal")


def test_model_files_with_float_classes_stay_loadable():
    """A file written before labels kept their type (classes stored as float64)."""
    a9a = load("a9a")
    model = solvers.train(a9a, solver="mfn", C=1.0).model
    old = LinearModel(model.coef_, model.intercept_, np.array([-1.0, 1.0]))
    buffer = io.BytesIO(old.to_bytes())
    restored = load_model(buffer)
    assert restored.classes_.dtype == np.float64
    np.testing.assert_array_equal(restored.predict(a9a.X).astype(np.int64),
                                  model.predict(a9a.X))
