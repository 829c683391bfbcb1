"""The dataset type: canonical CSR, labels, stats, splits."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import load

from solvers import Dataset


def test_canonical_csr_from_dense_and_unsorted_sparse():
    X = sp.csr_matrix((np.array([2.0, 1.0, 3.0]), np.array([2, 0, 0]), np.array([0, 2, 3])),
                      shape=(2, 3))
    ds = Dataset(X, [1, -1])
    assert ds.X.has_canonical_format and ds.X.dtype == np.float64
    assert ds.X.indices.dtype == np.int32
    np.testing.assert_array_equal(ds.X.toarray(), [[1.0, 0, 2.0], [3.0, 0, 0]])
    dense = Dataset(np.array([[0.0, 1.5]]), [4])
    assert dense.X.nnz == 1 and dense.classes.tolist() == [4.0]


def test_widen_and_refuse_narrowing():
    ds = Dataset(np.eye(2), [1, -1], n_features=5)
    assert ds.n_features == 5
    with pytest.raises(ValueError, match="smaller"):
        Dataset(np.eye(3), [1, -1, 1], n_features=2)


@pytest.mark.parametrize("kwargs, message", [
    ({"y": [1.0]}, "labels"),
    ({"y": [1.0, np.nan]}, "finite"),
    ({"qid": [1]}, "qid"),
    ({"sample_weight": [1.0, -2.0]}, "non-negative"),
])
def test_invalid_datasets(kwargs, message):
    args = {"X": np.eye(2), "y": [1.0, -1.0], **kwargs}
    with pytest.raises(ValueError, match=message):
        Dataset(**args)


def test_stats_on_real_data():
    ds = load("a9a")
    stats = ds.stats()
    assert (stats.n_samples, stats.n_features, stats.nnz) == (32561, 123, 451592)
    assert stats.class_counts == {"-1": 24720, "1": 7841}
    assert stats.density == pytest.approx(451592 / (32561 * 123))


def test_stratified_split_is_seeded_and_keeps_proportions():
    ds = load("a9a")
    train, test = ds.train_test_split(0.25, seed=3)
    again_train, _ = ds.train_test_split(0.25, seed=3)
    assert train == again_train
    assert train.n_samples + test.n_samples == ds.n_samples
    for c in ds.classes:
        share = np.mean(test.y == c)
        assert share == pytest.approx(np.mean(ds.y == c), abs=1e-3)


def test_folds_are_stratified():
    ds = load("heart_scale")
    folds = ds.stratified_folds(10, seed=0)
    counts = np.bincount(folds, minlength=10)
    assert counts.max() - counts.min() <= 1
    positives = np.bincount(folds[ds.y == 1], minlength=10)
    assert positives.max() - positives.min() <= 1


def test_the_facts_train_reads_are_computed_once_and_right():
    """A dataset keeps its columns' max |x_ij|, rows' squared norms and class counts (train
    reads them on every call): the values numpy computes, read-only, the same arrays on the
    next call, and class counts a fresh dict each time."""
    ds = load("heart_scale")
    dense = ds.X.toarray()
    columns, rows = ds.column_max_abs(), ds.row_norms_squared()
    np.testing.assert_array_equal(columns, np.abs(dense).max(axis=0))
    np.testing.assert_allclose(rows, (dense * dense).sum(axis=1), rtol=1e-14)
    assert ds.column_max_abs() is columns and ds.row_norms_squared() is rows
    with pytest.raises(ValueError, match="read-only"):
        columns[0] = 1.0
    counts = ds.class_counts()
    counts["1"] = -5
    assert ds.class_counts() == {"-1": 150, "1": 120}
    # a derived dataset computes its own
    half = ds.subset(np.arange(100))
    np.testing.assert_array_equal(half.column_max_abs(), np.abs(dense[:100]).max(axis=0))


def test_a_canonical_matrix_is_taken_as_it_is():
    """as_csr hands back a matrix already in canonical form (no new object), still refusing
    non-finite values, and converts anything else as before."""
    from solvers.data.dataset import as_csr

    X = load("heart_scale").X
    assert as_csr(X) is X
    bad = X.copy()
    bad.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        as_csr(bad)
    wide = as_csr(X, n_features=X.shape[1] + 2)
    assert wide is not X and wide.shape == (X.shape[0], X.shape[1] + 2)
    as_array = as_csr(sp.csr_array(X))
    assert type(as_array) is sp.csr_matrix and as_array is not X
