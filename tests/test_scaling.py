"""Feature scaling, a step of ``train`` every family shares (``scale=``), on real data and on
unscaled copies of it (columns multiplied by factors spanning six decades)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import load, random_csr

import solvers
from bench.problems import unscaled as raw_copy
from solvers.model_selection import cross_validate
from solvers.scaling import (
    FeatureScaler,
    column_max_abs,
    column_scale_decades,
    row_norm_decades,
    scale_spread_warning,
)


def unscaled(name: str) -> solvers.Dataset:
    """``name`` with its columns' scales spread over six decades (:func:`bench.problems.
    unscaled`, the benchmark's raw copies)."""
    return raw_copy(load(name))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_column_max_abs_is_numpys(index_dtype):
    X = random_csr(300, 50, 0.1, seed=3, index_dtype=index_dtype)
    X.data -= 0.5  # negative entries too; some columns empty
    expected = np.zeros(50)
    np.maximum.at(expected, X.indices, np.abs(X.data))
    np.testing.assert_array_equal(column_max_abs(X), expected)


def test_maxabs_model_on_raw_inputs_is_the_scaled_problems_solution():
    raw = unscaled("australian_scale")
    result = solvers.train(raw, solver="mfn", C=1.0, scale="maxabs")
    scaler = FeatureScaler.fit(raw.X, "maxabs")
    scaled = scaler.transform_dataset(raw)
    assert np.allclose(column_max_abs(scaled.X)[column_max_abs(raw.X) > 0], 1.0)
    direct = solvers.train(scaled, solver="mfn", C=1.0)
    assert result.objective == pytest.approx(direct.objective, rel=1e-12)
    np.testing.assert_allclose(result.model.decision_function(raw.X),
                               direct.model.decision_function(scaled.X), rtol=1e-9, atol=1e-9)
    assert result.model.metadata["scaling"] == {"method": "maxabs", "centered": False}
    assert result.params.problem_fields()["scale"] == "maxabs"
    assert not result.warnings


def test_unscaled_data_warn_and_name_the_option():
    raw = unscaled("heart_scale")
    message = scale_spread_warning(raw.X)
    assert message is not None and "scale='maxabs'" in message and "6.0 decades" in message
    result = solvers.train(raw, solver="mfn", C=0.1)
    assert result.warnings == [message] and result.model.metadata["warnings"] == [message]
    assert scale_spread_warning(load("heart_scale").X) is None


def test_a_dataset_keeps_its_scale_spreads():
    """The spreads ``auto`` places a problem by and ``train``'s warning reads are the
    matrix's, computed once per dataset (issue 47: 10-20 us of every small train call)."""
    for data in (unscaled("heart_scale"), load("regression/mg_scale")):
        columns, rows = column_scale_decades(data), row_norm_decades(data)
        assert columns == column_scale_decades(data.X) and rows == row_norm_decades(data.X)
        assert scale_spread_warning(data) == scale_spread_warning(data.X)
        assert data.fact("column_scale_decades", lambda: -1.0) == columns
        assert data.fact("row_norm_decades", lambda: -1.0) == rows


def test_standard_centers_dense_data_and_only_divides_sparse_data():
    dense = load("svmguide1")  # four features, every entry stored
    assert dense.nnz == dense.n_samples * dense.n_features
    scaler = FeatureScaler.fit(dense.X, "standard")
    assert scaler.centered
    Xs = scaler.transform(dense.X).toarray()
    np.testing.assert_allclose(Xs.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(Xs.std(axis=0), 1.0, rtol=1e-10)
    result = solvers.train(dense, solver="mfn", C=1.0, scale="standard")
    direct = solvers.train(scaler.transform_dataset(dense), solver="mfn", C=1.0)
    np.testing.assert_allclose(result.model.decision_function(dense.X),
                               direct.model.decision_function(Xs), rtol=1e-8, atol=1e-8)
    sparse = load("heart_scale")
    assert not FeatureScaler.fit(sparse.X, "standard").centered
    kept = solvers.train(sparse, solver="mfn", C=1.0, scale="standard")
    assert any("without centering" in w for w in kept.warnings)


def test_scaling_rescues_a_solver_on_unscaled_data_and_exports_to_liblinear(tmp_path):
    """mfn with Appendix A's CGLS on an unscaled copy needs many times the CG iterations it
    needs with maxabs (the cutting planes' reduced QPs degenerate there: minutes instead of
    milliseconds); the exported LIBLINEAR model of the scaled run predicts raw inputs as the
    library does (the scaler is folded into the weights)."""
    raw = unscaled("australian_scale")

    def cg_iterations(result):
        return sum(s.extras["cg_iterations"] for s in result.subproblems)

    scaled = solvers.train(raw, solver="mfn", C=1.0, linear_solver="cgls", scale="maxabs")
    plain = solvers.train(raw, solver="mfn", C=1.0, linear_solver="cgls")
    assert scaled.status == "converged"
    assert cg_iterations(plain) > 5 * cg_iterations(scaled)
    from liblinear.liblinearutil import load_model, predict

    path = tmp_path / "model.liblinear"
    path.write_text(scaled.model.to_liblinear())
    rows = [{j + 1: float(v) for j, v in zip(r.indices, r.data, strict=True)} for r in raw.X]
    labels, _, _ = predict([], rows, load_model(str(path)), "-q")
    np.testing.assert_array_equal(np.asarray(labels), scaled.model.predict(raw.X))


def test_cross_validation_fits_the_scaler_on_each_training_part():
    raw = unscaled("heart_scale")
    result = cross_validate(raw, "mfn", C=[0.1, 1.0], folds=3, scale="maxabs")
    folds = raw.stratified_folds(3, seed=0)
    for row in result.scores:
        expected = []
        for fold in range(3):
            train = raw.subset(np.flatnonzero(folds != fold))
            test = raw.subset(np.flatnonzero(folds == fold))
            model = solvers.train(train, solver="mfn", C=row.C, scale="maxabs",
                                  tol=result.fit_gap).model
            expected.append(np.mean(model.predict(test.X) == test.y))
        np.testing.assert_allclose(row.fold_scores, expected, atol=1.5 / 90)


def test_ordinal_models_fold_the_scaler_into_their_thresholds():
    dna = load("dna.scale")
    ds = dna.subset(np.arange(400))
    raw = solvers.Dataset(ds.X @ sp.diags(10.0 ** (np.arange(ds.n_features) % 5)), ds.y)
    result = solvers.train(raw, solver="mfn", task="ordinal", scale="maxabs")
    scaler = FeatureScaler.fit(raw.X, "maxabs")
    direct = solvers.train(scaler.transform_dataset(raw), solver="mfn", task="ordinal")
    np.testing.assert_array_equal(result.model.predict(raw.X),
                                  direct.model.predict(scaler.transform(raw.X)))


@pytest.mark.parametrize("scale", ["maxabs", "standard"])
def test_one_vs_one_linear_kernel_folds_the_scaler_into_its_support_vectors(scale, tmp_path):
    """smo's one-vs-one with the linear kernel (three classes of dna, with unscaled columns)
    is a kernel expansion, not one weight vector: the scaler goes into its support vectors
    and intercepts, and the model on raw inputs is the scaled problem's solution, LIBSVM
    file included."""
    raw = unscaled("dna.scale")
    raw = raw.subset(np.arange(600))
    result = solvers.train(raw, solver="smo", kernel="linear", scale=scale, C=0.1,
                           multiclass="ovo")
    model = result.model
    assert model.multiclass == "ovo" and model.metadata["scaling"]["method"] == scale
    scaler = FeatureScaler.fit(raw.X, scale)
    direct = solvers.train(scaler.transform_dataset(raw), solver="smo", kernel="linear",
                           C=0.1, multiclass="ovo")
    scaled_X = scaler.transform(raw.X)
    expected = direct.model.pairwise_decision(scaled_X)
    np.testing.assert_allclose(model.pairwise_decision(raw.X), expected, rtol=1e-8,
                               atol=1e-8 * np.abs(expected).max())
    np.testing.assert_array_equal(model.predict(raw.X), direct.model.predict(scaled_X))
    path = tmp_path / "dna.model"
    path.write_text(model.to_libsvm())
    again = solvers.load_model(path)
    np.testing.assert_array_equal(again.predict(raw.X), model.predict(raw.X))
