"""Helpers for tests: the real datasets the repository carries (``data/``), small random
matrices, and the check that a solver reached a reference optimum.

(A module with its own name: ``conftest`` is ambiguous once tests/service has its own.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from bench.paths import DATA_DIR, dataset_names, dataset_path

__all__ = ["DATA_DIR", "assert_reaches", "data_path", "dataset_names", "load", "random_csr"]


def data_path(name: str) -> Path:
    """A plain copy of the committed dataset ``name`` (``data/NAME.xz``, checked against its
    sha256); a name the repository does not carry is an error, never a skip."""
    return dataset_path(name)


_CACHE: dict = {}


def load(name: str, n_features: int | None = None):
    """A committed dataset, parsed once per test process."""
    import solvers

    key = (name, n_features)
    if key not in _CACHE:
        _CACHE[key] = solvers.read_svmlight(data_path(name), n_features=n_features)
    return _CACHE[key]


def random_csr(n_rows, n_cols, density, seed, index_dtype=np.int32):
    rng = np.random.default_rng(seed)
    X = sp.random(n_rows, n_cols, density=density, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.standard_normal(k))
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    return X


def assert_reaches(solution, objective, reference: float, rtol: float,
                   linear_solver: str | None = None) -> None:
    """``solution`` converged (with ``linear_solver`` where named), reports the objective of
    its own point (``objective(beta)``), and is within ``rtol`` of ``reference`` either way."""
    if linear_solver is not None:
        assert solution.extras["linear_solver"] == linear_solver
    assert solution.status == "converged", solution.message
    assert solution.objective == pytest.approx(objective(solution.beta), rel=1e-12)
    assert (solution.objective - reference) / abs(reference) <= rtol
    assert (reference - solution.objective) / abs(reference) <= rtol
