"""Compile everything a training job or a prediction can run, once per process.

Worker processes call :func:`warm_up` at start so that the first job does not pay for
compilation: the shared core's kernels (:func:`solvers.core.warm_up`), the loss layer's, the
SVMlight parser's, and what each registered solver calls beyond them (its spec's ``warm_up``
hook: mfn's clipped-loss and Gram kernels, the least-squares family's kernel rows, cache and
SMO loops).  No solver is trained: each hook calls its kernels on a few rows.  The kernels are
compiled with ``cache=True``, so after the first process on a machine this mostly loads
machine code from ``__pycache__``.
"""

from __future__ import annotations

import time

import numpy as np

from solvers.core.warmup import warm_up as warm_up_core
from solvers.data import warm_up_parser
from solvers.losses import LOSSES, get_loss
from solvers.models import LinearModel, OrdinalModel
from solvers.problems import balancing_shift
from solvers.registry import list_solvers


def warm_up_losses() -> None:
    """The loss layer's kernels, for every registered loss (lp at p = 1.5: its own code)."""
    xi = np.array([-1.0, 0.5, 2.5])
    weight = np.ones(3)
    for name in LOSSES:
        loss = get_loss(name, 1.5)
        loss.sum(xi, weight)
        loss.value(xi)
        loss.derivative(xi)
        loss.prox(xi, weight)
        loss.conjugate_sum(np.zeros(3), weight)


def warm_up_problems() -> None:
    """The problem layer's kernels: the free bias's balancing shift."""
    balancing_shift(np.array([0.5, 0.2, 0.0]), np.array([1.0, -1.0, -1.0]), np.zeros(3),
                    np.ones(3))


def warm_up_prediction(parallel: bool = True) -> None:
    """The models' decision functions (linear, one-vs-rest, ordinal; the kernel model's are the
    least-squares family's warm-up)."""
    X = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]])
    models = [LinearModel(np.ones((1, 3)), np.zeros(1), [-1.0, 1.0]),
              LinearModel(np.ones((3, 3)), np.zeros(3), [0.0, 1.0, 2.0]),
              OrdinalModel(np.ones(3), np.array([0.0, 1.0]), [1.0, 2.0, 3.0])]
    for model in models:
        for flag in ((False, True) if parallel else (False,)):
            model.predict(X, parallel=flag)


def warm_up(parallel: bool = True) -> float:
    """Compile (or load from the on-disk cache) every kernel; returns the seconds it took."""
    start = time.perf_counter()
    warm_up_core(parallel=parallel)
    warm_up_parser()
    warm_up_losses()
    warm_up_problems()
    warm_up_prediction(parallel)
    for spec in list_solvers():
        if spec.warm_up is not None:
            spec.warm_up()
    return time.perf_counter() - start
