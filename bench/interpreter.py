"""Anchors that live in an interpreter of their own (a library that cannot share the
benchmarks' environment: scikit-learn-intelex's oneDAL, Snap ML): the problem goes over once
as a ``.npz`` of CSR arrays, a worker script runs in the other interpreter, times only the
library's ``fit`` and prints one JSON object a line.

Used by ``bench smo_anchors`` (oneDAL) and ``bench race`` (Snap ML).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

import solvers


def save_problem(path: Path, train: solvers.Dataset, test: solvers.Dataset | None = None) -> None:
    """``train`` (and ``test``, keys prefixed ``t_``) as CSR arrays in ``path`` (``.npz``): a
    worker reads ``X = csr_matrix((data, indices, indptr), shape)`` and ``y``."""
    arrays = {}
    for prefix, dataset in (("", train), ("t_", test)):
        if dataset is None:
            continue
        X = sp.csr_matrix(dataset.X)
        arrays.update({f"{prefix}data": X.data, f"{prefix}indices": X.indices,
                       f"{prefix}indptr": X.indptr, f"{prefix}shape": X.shape,
                       f"{prefix}y": dataset.y})
    np.savez(path, **arrays)


def run_worker(python: str | Path, script: str, *args: Any, timeout: float = 3600.0
               ) -> list[dict[str, Any]]:
    """Run ``script`` (``python -c``) in the interpreter ``python`` with ``args``; its
    stdout's lines, each a JSON object.  A worker that fails raises with its stderr's end."""
    done = subprocess.run([str(python), "-c", script, *(str(a) for a in args)],
                          capture_output=True, text=True, check=False, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"worker in {python} failed: {done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def interpreter(given: str | None, variable: str) -> str | None:
    """The interpreter ``given`` (an option), else the environment ``variable``'s, if it
    exists (None: the anchor is left out, and the output says so)."""
    python = given or os.environ.get(variable)
    return python if python and Path(python).exists() else None
