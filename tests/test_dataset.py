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
