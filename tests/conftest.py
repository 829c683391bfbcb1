"""Fixtures shared by the library tests (helpers live in tests/shared_data.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

# The benchmark package (bench/) holds the reference optima the tests check solvers against;
# it is not installed, so make the repository root importable however pytest is started.
_REPO_ROOT = str(Path(__file__).resolve().parents[1])
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)


@pytest.fixture(params=[np.int32, np.int64], ids=["int32", "int64"])
def index_dtype(request):
    return request.param
