"""Joshi et al., Table 1: 10-fold cross-validation accuracy of the classical LS-SVM, 2SMO and
SesquiSMO with the RBF kernel, gamma = 1, the paper's C = 1 (our C = 0.5, docs/design.md's
C_J = 2 C) and A = 1e4.  Training times are measured in bench/bench_lssvm.py, not here.

The paper's PIMA-INDIAN and BREAST-W rows match RBF gamma = 1 on the *unscaled* UCI features
(65.96% on Pima is its majority-class rate), while data/ holds LIBSVM's scaled
copies.  The raw features are recovered exactly from them: every Pima column was scaled from
its known UCI range to [-1, 1] and is printed with 6 digits, and columns 2-10 of
breast-cancer_scale are the nine Wisconsin attributes 1..10 (column 1 is the scaled sample
id, which the paper's 10 attributes (9 + class) do not include).  Mushrooms is binary, so
scaled and raw are the same data.
"""

from __future__ import annotations

import numpy as np
import pytest
from shared_data import load

import solvers
from bench import bench_lssvm

PAPER_PARAMS = {"C": 0.5, "gamma": 1.0, "kernel": "rbf", "cache_mb": 512}
METHODS = {
    "lssvm": {"solver": "lssvm"},
    "2smo": {"solver": "relaxed_lssvm", "A": 1e4},
    "sesquismo": {"solver": "relaxed_lssvm", "A": 1e4, "variant": "sesquismo"},
}
# Table 1, mean 10-fold CV accuracy (%).
PAPER = {
    "mushrooms": {"lssvm": 99.98, "2smo": 100.0, "sesquismo": 100.0},
    "pima": {"lssvm": 65.96, "2smo": 65.96, "sesquismo": 65.96},
    "breast-w": {"lssvm": 85.53, "2smo": 91.19, "sesquismo": 91.19},
}


def raw_pima() -> solvers.Dataset:
    return bench_lssvm.raw_pima(load("diabetes_scale"))


def raw_breast_w() -> solvers.Dataset:
    return bench_lssvm.raw_breast_w(load("breast-cancer_scale"))


def cross_validate(ds: solvers.Dataset, n_folds: int = 10) -> dict[str, float]:
    """Mean accuracy (%) per method over seeded stratified folds."""
    folds = ds.stratified_folds(n_folds, seed=0)
    correct = dict.fromkeys(METHODS, 0)
    for k in range(n_folds):
        train, test = ds.subset(folds != k), ds.subset(folds == k)
        for name, params in METHODS.items():
            result = solvers.train(train, **PAPER_PARAMS, **params)
            assert result.status == "converged", result.message
            correct[name] += int(np.sum(result.model.predict(test.X) == test.y))
    return {name: 100.0 * hits / ds.n_samples for name, hits in correct.items()}


def test_raw_features_are_recovered_exactly():
    pima = load("diabetes_scale")
    assert pima.n_samples == 768 and raw_pima().X[0].toarray().ravel().tolist() == \
        [6, 148, 72, 35, 0, 33.6, 0.627, 50]  # the first UCI record
    scaled = load("breast-cancer_scale").X.toarray()[:, 1:]
    unrounded = 1.0 + (scaled + 1.0) * 4.5
    assert np.max(np.abs(unrounded - np.round(unrounded))) < 1e-5


@pytest.mark.slow  # 10-21 s: the paper's table; test_lssvm.py covers the family
def test_table1_pima_on_raw_features():
    """Every method predicts the majority class, as in the paper (65.96%; 500/768 = 65.1%)."""
    accuracy = cross_validate(raw_pima())
    for name in METHODS:
        assert accuracy[name] == pytest.approx(PAPER["pima"][name], abs=1.0)


@pytest.mark.slow  # 10-21 s: the paper's table; test_lssvm.py covers the family
def test_table1_breast_w_on_raw_features():
    """The paper's pattern: 2SMO and SesquiSMO agree and beat the classical LS-SVM by about
    six points (A = 1e4 all but removes the bias, which helps on these features).  Our folds
    hold the 683 complete rows, the paper's 699 (with missing values); accuracies are within
    4 points of the paper's."""
    accuracy = cross_validate(raw_breast_w())
    assert accuracy["2smo"] == pytest.approx(accuracy["sesquismo"], abs=0.5)
    assert accuracy["2smo"] - accuracy["lssvm"] > 3.0
    for name in METHODS:
        assert accuracy[name] == pytest.approx(PAPER["breast-w"][name], abs=4.0)


@pytest.mark.slow  # 10-21 s: the paper's table; test_lssvm.py covers the family
def test_table1_scaled_copies():
    """On the scaled files as given the RBF kernel sees the data, and accuracy is far above
    the paper's (our measurement, kept as a regression check)."""
    pima = cross_validate(load("diabetes_scale"))
    breast = cross_validate(load("breast-cancer_scale"))
    for name in METHODS:
        assert 75.0 < pima[name] < 78.0
        assert 96.0 < breast[name] < 98.0


@pytest.mark.slow
def test_table1_mushrooms():
    accuracy = cross_validate(load("mushrooms"))
    for name in METHODS:
        assert accuracy[name] >= 99.95
        assert accuracy[name] == pytest.approx(PAPER["mushrooms"][name], abs=0.05)
