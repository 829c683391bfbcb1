"""Models: prediction conventions, safe serialization, LIBLINEAR export."""

from __future__ import annotations

import io

import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import load

import solvers
from solvers.models import FORMAT_VERSION, LinearModel, ModelFormatError, load_model


def _binary_model():
    return LinearModel([[1.0, -2.0, 0.5]], [0.25], [2.0, 4.0], {"solver": "mfn"})


def test_binary_convention_positive_class_is_classes_1():
    model = _binary_model()
    X = sp.csr_matrix(np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 0]]))
    np.testing.assert_allclose(model.decision_function(X), [1.25, -1.75, 0.25])
    np.testing.assert_array_equal(model.predict(X), [4.0, 2.0, 4.0])


def test_zero_score_predicts_negative_class_like_liblinear():
    model = LinearModel([[1.0]], [0.0], [-1.0, 1.0])
    assert model.predict(np.zeros((1, 1)))[0] == -1.0


def test_multiclass_predicts_largest_score():
    model = LinearModel(np.eye(3), np.zeros(3), [1.0, 2.0, 3.0])
    X = np.array([[0.1, 0.9, 0.0], [0.0, 0.0, 2.0]])
    np.testing.assert_array_equal(model.predict(X), [2.0, 3.0])
    assert model.decision_function(X).shape == (2, 3)


def test_feature_count_mismatch_is_handled():
    model = _binary_model()
    wide = sp.csr_matrix(np.array([[1.0, 0, 0, 7.0]]))  # unseen feature 4 is ignored
    narrow = sp.csr_matrix(np.array([[1.0]]))  # missing trailing features are zero
    assert model.decision_function(wide)[0] == pytest.approx(1.25)
    assert model.decision_function(narrow)[0] == pytest.approx(1.25)


def test_serial_and_parallel_prediction_agree():
    ds = load("dna.scale")
    result = solvers.train(ds, solver="mfn", C=0.1)
    np.testing.assert_allclose(result.model.decision_function(ds.X, parallel=True),
                               result.model.decision_function(ds.X, parallel=False),
                               rtol=1e-13)


@pytest.mark.parametrize("name", ["heart_scale", "dna.scale"])
def test_one_example_scores_as_its_row(name):
    """``decision_example`` (one example, no matrix) gives exactly ``decision_function``'s
    row, binary and one-vs-rest."""
    ds = load(name)
    model = solvers.train(ds, solver="mfn").model
    expected = model.decision_function(ds.X[:5], parallel=False)
    for i in range(5):
        row = ds.X[i]
        got = model.decision_example(row.indices.astype(np.int32), row.data)
        assert np.array_equal(got, expected[i:i + 1])


def test_round_trip_is_exact_and_keeps_metadata(tmp_path):
    model = _binary_model()
    model.metadata["params"] = {"C": 2.0}
    loaded = load_model(model.to_bytes())
    assert loaded.kind == "linear"
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    np.testing.assert_array_equal(loaded.intercept_, model.intercept_)
    np.testing.assert_array_equal(loaded.classes_, model.classes_)
    assert loaded.metadata == model.metadata
    model.save(tmp_path / "m.npz")
    assert load_model(tmp_path / "m.npz").describe() == model.describe()


def test_archive_is_plain_npz_without_pickles():
    with np.load(io.BytesIO(_binary_model().to_bytes()), allow_pickle=False) as archive:
        assert set(archive.files) == {"header", "classes", "coef", "intercept"}
        assert all(archive[name].dtype != object for name in archive.files)


@pytest.mark.parametrize("payload, message", [
    (b"not a model", "not a model archive"),
    (b"", "not a model archive"),
])
def test_garbage_is_refused(payload, message):
    with pytest.raises(ModelFormatError, match=message):
        load_model(payload)


def _archive(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _header(**fields) -> np.ndarray:
    import json

    header = {"format": "svmsvc-model", "version": FORMAT_VERSION, "kind": "linear",
              "fields": {}, "metadata": {}, **fields}
    return np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)


def test_pickled_arrays_are_refused():
    payload = _archive(header=_header(), classes=np.array([0.0, 1.0]),
                       coef=np.array([object()], dtype=object), intercept=np.zeros(1))
    with pytest.raises(ModelFormatError):
        load_model(payload)


def test_newer_format_version_and_unknown_kind_are_refused():
    newer = _archive(header=_header(version=FORMAT_VERSION + 1), classes=np.array([0.0, 1.0]))
    with pytest.raises(ModelFormatError, match="newer"):
        load_model(newer)
    alien = _archive(header=_header(kind="quantum"), classes=np.array([0.0, 1.0]))
    with pytest.raises(ModelFormatError, match="unknown model kind"):
        load_model(alien)


def test_inconsistent_shapes_are_refused():
    with pytest.raises(ValueError, match="weight rows"):
        LinearModel(np.ones((2, 3)), np.zeros(2), [0.0, 1.0])
    with pytest.raises(ValueError, match="at least two classes"):
        LinearModel(np.ones((1, 3)), np.zeros(1), [1.0])


@pytest.mark.parametrize("name, params", [
    ("heart_scale", {"C": 1.0}),
    ("breast-cancer_scale", {"C": 0.5, "bias_scale": 3.0}),
    ("svmguide1", {"C": 1.0, "bias": "none"}),
    ("dna.scale", {"C": 0.1}),
])
def test_liblinear_predict_agrees_with_exported_model(tmp_path, name, params):
    """LIBLINEAR's own predict, reading our exported model file, gives our predictions."""
    from liblinear.liblinearutil import load_model as ll_load_model
    from liblinear.liblinearutil import predict as ll_predict

    ds = load(name)
    model = solvers.train(ds, solver="mfn", **params).model
    path = tmp_path / "model.liblinear"
    path.write_text(model.to_liblinear())
    ll_model = ll_load_model(str(path))
    ll_labels, _, ll_values = ll_predict(ds.y.tolist(), ds.X, ll_model, "-q")
    np.testing.assert_array_equal(np.asarray(ll_labels), model.predict(ds.X))
    ours = model.decision_function(ds.X)
    theirs = np.asarray(ll_values)
    if ours.ndim == 1:
        theirs = theirs[:, 0]
    np.testing.assert_allclose(theirs, ours, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("rows", "bias"), [(1, "regularized"), (3, "none"), (3, "free")])
def test_the_liblinear_text_in_pieces_is_the_whole_text(rows, bias):
    """``iter_liblinear`` (what a download streams) writes ``block_rows`` weight rows a
    piece; joined, at any block size (one row, a bias row alone in the last block, all rows
    in one), they are ``to_liblinear``'s text, which reads back as the same model."""
    rng = np.random.default_rng(49)
    coef = rng.normal(size=(rows, 50))
    coef[0, :3] = [-0.0, 1e-300, 1.0]  # repr's shortest round-trip texts
    intercept = np.zeros(rows) if bias == "none" else rng.normal(size=rows)
    model = LinearModel(coef, intercept, np.arange(2 if rows == 1 else rows),
                        {"params": {"bias": bias, "bias_scale": 2.5}})
    whole = model.to_liblinear()
    for block_rows in (1, 7, 50, 51, 10_000):
        pieces = list(model.iter_liblinear(block_rows=block_rows))
        assert "".join(pieces) == whole
        n_rows = 50 + (bias != "none")
        assert len(pieces) == 1 + -(-n_rows // block_rows)  # the header, then the blocks
    back = LinearModel.from_liblinear(whole)
    X = rng.normal(size=(20, 50))
    np.testing.assert_allclose(back.decision_function(X), model.decision_function(X),
                               rtol=1e-12, atol=1e-12)
