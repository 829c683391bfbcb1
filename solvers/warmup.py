"""Compile everything a training job or a prediction can run, once per process.

:func:`solvers.core.warm_up` compiles the shared kernels; the solvers have Numba loops of
their own (the SMO loops, kernel rows and caches), so this also trains and predicts with every
registered solver on a tiny dataset, through the same entry points jobs use.
"""

from __future__ import annotations

import time

import numpy as np

from solvers.core.warmup import warm_up as warm_up_core
from solvers.data.dataset import Dataset
from solvers.registry import list_solvers


def _tiny_dataset() -> Dataset:
    X = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0],
                  [0.5, 0.0, 0.0], [0.0, 0.5, 1.0]])
    return Dataset(X, [1.0, -1.0, 1.0, -1.0, 1.0, -1.0])


def warm_up(parallel: bool = True) -> float:
    """Compile (or load from the on-disk cache) every kernel; returns the seconds it took."""
    from solvers.train import train

    start = time.perf_counter()
    warm_up_core(parallel=parallel)
    ds = _tiny_dataset()
    for spec in list_solvers():
        model = train(ds, solver=spec.name).model
        for flag in ((False, True) if parallel else (False,)):
            model.predict(ds.X, parallel=flag)
    return time.perf_counter() - start
