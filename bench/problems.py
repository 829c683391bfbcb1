"""The benchmark problems: a dataset, a binary labelling, a loss, a bias mode and C.

Datasets come from the repository's ``data/`` (real, see its README) or from :mod:`bench.synthetic`
(always named ``synthetic-...``).  Multi-class sets are made binary as the papers do
(news20: groups 1-10 against 11-20).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

import solvers
from bench.paths import dataset_path
from solvers.losses import is_residual
from solvers.problems import BinaryProblem

# file, test file, n_features (to align train and test), binary labelling
DATASETS = {
    "heart_scale": ("heart_scale", None, None),
    "australian_scale": ("australian_scale", None, None),
    "breast-cancer_scale": ("breast-cancer_scale", None, None),
    "diabetes_scale": ("diabetes_scale", None, None),
    "svmguide1": ("svmguide1", "svmguide1.t", 4),
    "mushrooms": ("mushrooms", None, None),
    "a9a": ("a9a", "a9a.t", 123),
    "w8a": ("w8a", None, None),
    "ijcnn1": ("ijcnn1", "ijcnn1.t", 22),
    "news20-binary": ("news20", "news20.t", 62061),
}

#: The regression sets (``data/regression``, LIBSVM's scaled copies): real-valued labels,
#: posed with a residual loss and epsilon = 0.1 std(y) (the tube of the same relative width
#: on each set, as bench_regression's).
REGRESSION_SETS = ("cpusmall", "abalone", "space_ga", "housing", "mg", "bodyfat")
DATASETS.update({name: (f"regression/{name}_scale", None, None) for name in REGRESSION_SETS})
#: epsilon in units of std(y)
REGRESSION_EPSILON = 0.1

#: Raw copies of scaled datasets (``unscaled``): name -> the scaled dataset.
UNSCALED = {
    "australian-unscaled": "australian_scale",
    "breast-cancer-unscaled": "breast-cancer_scale",
}


def unscaled(dataset: solvers.Dataset) -> solvers.Dataset:
    """``dataset`` with column j multiplied by 10^(j mod 7): scales over six decades, as raw
    measurements in different units come (the shared files are LIBSVM's scaled copies)."""
    factors = 10.0 ** (np.arange(dataset.n_features) % 7)
    return solvers.Dataset(dataset.X @ sp.diags(factors), dataset.y)


def news20_binary(y: np.ndarray) -> np.ndarray:
    """news20's 20 groups as two classes: groups 1-10 (+1) against 11-20 (-1)."""
    return np.where(y <= 10, 1.0, -1.0)


LABELLINGS = {"news20-binary": news20_binary}


@dataclass(frozen=True)
class BenchProblem:
    dataset: str
    loss: str = "squared_hinge"
    bias: str = "regularized"
    C: float = 1.0
    bias_scale: float = 1.0
    n_rows: int | None = None  # a nested subset: the first n rows of a seeded permutation

    @property
    def task(self) -> str:
        """regression for a residual loss (the labels as real values), else classification."""
        return "regression" if is_residual(self.loss) else "classification"

    @property
    def posed(self) -> dict:
        """What ``solvers.train`` needs beyond loss, bias and C to pose the problem: the task
        and epsilon of a regression (REGRESSION_EPSILON std(y))."""
        if self.task != "regression":
            return {}
        return {"task": "regression",
                "epsilon": REGRESSION_EPSILON * float(np.std(self.train_dataset().y))}

    @property
    def key(self) -> str:
        rows = "" if self.n_rows is None else f"[:{self.n_rows}]"
        return f"{self.dataset}{rows}/{self.loss}/{self.bias}/C={self.C:g}"

    def binary_problem(self) -> BinaryProblem:
        ds = self.train_dataset()
        return BinaryProblem(ds.X, ds.y, C=self.C, loss=self.loss, bias=self.bias,
                             bias_scale=self.bias_scale)

    def train_dataset(self) -> solvers.Dataset:
        """The training set with the benchmark's binary labels (+1/-1); a regression's with
        its real-valued labels."""
        if self.task == "regression":
            return load_dataset(self.dataset)
        return _binary_training_set(self.dataset, self.n_rows)

    def test_dataset(self) -> solvers.Dataset | None:
        ds = load_dataset(self.dataset, test=True)
        if ds is None:
            return None
        return solvers.Dataset(ds.X, binary_labels(self.dataset, ds.y))


@functools.cache
def _binary_training_set(name: str, n_rows: int | None) -> solvers.Dataset:
    ds = load_dataset(name)
    labelled = solvers.Dataset(ds.X, binary_labels(name, ds.y))
    if n_rows is None:
        return labelled
    order = np.random.default_rng(0).permutation(ds.n_samples)
    return labelled.subset(np.sort(order[:n_rows]))


def binary_labels(name: str, y: np.ndarray) -> np.ndarray:
    if name in LABELLINGS:
        return LABELLINGS[name](y)
    classes = np.unique(y)
    if classes.shape[0] != 2:
        raise ValueError(f"{name} has {classes.shape[0]} classes; give it a binary labelling")
    return np.where(y == classes[1], 1.0, -1.0)


@functools.cache
def load_dataset(name: str, test: bool = False) -> solvers.Dataset | None:
    """A benchmark dataset (parsed once per process)."""
    if name.startswith("synthetic"):
        from bench.synthetic import synthetic_dataset

        return synthetic_dataset(name, test=test)
    if name in UNSCALED:
        scaled = load_dataset(UNSCALED[name], test)
        return None if scaled is None else unscaled(scaled)
    file, test_file, n_features = DATASETS[name]
    if test:
        if test_file is None:
            return None
        file = test_file
    return solvers.read_svmlight(dataset_path(file), n_features=n_features)
