"""The low-rank kernel path: a step of ``train`` that turns a kernel problem into a linear one
for any linear family (``approximation="nystrom" | "icf"``, ``rank``; ``docs/design.md``
section 3.8).

The step factors the kernel matrix of the training rows, K ~ G G' with G dense n x r
(:mod:`solvers.core.lowrank`: Nystrom on ``rank`` landmarks, uniform or k-means, or the
pivoted incomplete Cholesky with at most ``rank`` pivots and the residual-trace stop), and
the solver trains on G as its data: the same problem as any linear one,

    minimize   1/2 (||w||^2 + r b^2)  +  C * sum_i s_i loss(y_i (w.g_i + b)),

with the loss and bias mode of the parameters.  This is the exact kernel SVM of the
approximated kernel G G' (w = sum_i beta_i g_i is a kernel expansion in it), so the
certified gap a solver reports is **the gap of this low-rank problem**: it bounds the
distance to the low-rank optimum, not to the exact kernel SVM's; the two agree as the
residual K - G G' vanishes (with rank = n, up to the eigenvalue cut-off, they are the same
problem).

The model folds the map into the coefficients: w.g(x) = w.(k(x, L) M) = sum_j (M w)_j
k(l_j, x), so the linear model on G becomes a :class:`~solvers.models.KernelModel` whose
"support vectors" are the landmarks (or pivots) L and whose coefficients are (M w)' (one row
per binary problem; one-vs-rest and Crammer-Singer keep their rows, one-vs-one's pairs make a
one-vs-one kernel model that votes as LIBSVM's).  ``solver="auto"`` factors once too and its
candidates race on the factor (``solvers.train``).  It predicts with exact
kernel rows against L, serializes as any kernel model (npz, no pickle), and its metadata
records the approximation (method, rank asked and obtained, residual trace, seconds).

Given a monitor, the factorization reports its progress and may be stopped
(:class:`FactorProgress`): it asks the monitor's ``stop_reason`` between blocks of its work
(every pivot, every block of Nystrom's kernel columns: :mod:`solvers.core.lowrank`), so a
cancelled job stops within a block's work, not after the whole factor, and it reports a record
at most every :data:`REPORT_INTERVAL_S` tagged ``stage: "factorizing"`` (the job's progress
reads "factorizing: 640 of 2000 pivots").  Its records come first in the job's log, numbered
1, 2, ...; ``train`` numbers the solver's after them (:class:`solvers.monitor.Continued`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers.base import PairwiseLinear, SolverParams
from solvers.core.lowrank import Factor, FactorizationStopped, incomplete_cholesky, nystrom
from solvers.data.dataset import Dataset
from solvers.models import KernelModel, LinearModel
from solvers.monitor import Monitor, NullMonitor, Reporter, Stopwatch

#: The factorization reports a progress record at most this often (seconds).
REPORT_INTERVAL_S = 0.25

#: Why a factorization given ``should_stop`` (not a monitor) stopped.
STOP_ASKED = "a stop was asked"


class FactorProgress:
    """The checkpoint (:data:`solvers.core.lowrank.Checkpoint`) a factorization asks between
    blocks of its work: it asks ``monitor.stop_reason()`` every time and reports a record
    every :data:`REPORT_INTERVAL_S` and at the end of each step's work.  A record's
    ``iteration`` counts the factorization's records (1, 2, ...), ``objective`` is NaN (no
    iterate yet), ``optimality`` the relative residual trace trace(K - G G') / trace(K) when
    known (the incomplete Cholesky's; NaN for Nystrom until its factor is complete), and
    ``extras`` say ``stage="factorizing"``, ``factor_step`` (pivots, kernel columns, k-means
    iterations, map rows; ``done`` for the last record, whose ``factor_done`` is the rank
    obtained of ``factor_total`` asked), ``factor_done`` of ``factor_total``."""

    def __init__(self, monitor: Monitor, method: str, clock: Stopwatch | None = None):
        self.monitor = monitor
        self.method = method
        self.reporter = Reporter(monitor, "relative_residual_trace", clock)
        self._last = -math.inf

    @property
    def records(self) -> int:
        return self.reporter.records

    def __call__(self, step: str, done: int, total: int, residual: float) -> str | None:
        now = self.reporter.clock()
        if done >= total or now - self._last >= REPORT_INTERVAL_S:
            self._last = now
            self.report(step, done, total, residual, elapsed=now)
        return self.monitor.stop_reason()

    def report(self, step: str, done: int, total: int, residual: float, **kwargs) -> None:
        self.reporter(self.records + 1, math.nan, residual, stage="factorizing",
                      factor_method=self.method, factor_step=step, factor_done=int(done),
                      factor_total=int(total), **kwargs)


@dataclass
class Approximation:
    """A factor of the training rows' kernel matrix and how it was obtained."""

    factor: Factor | None  # None: stopped (``stopped``) before the factor was complete
    seconds: float
    requested_rank: int | None  # None: chosen from the residual trace
    #: the monitor's reason when it stopped the factorization, with how far it had come
    stopped: FactorizationStopped | None = None
    #: the records the factorization reported (the solver's are numbered after them)
    records: int = 0

    def dataset(self, dataset: Dataset) -> Dataset:
        """``dataset`` with the factor's rows as its features: a CSR matrix over G's own
        buffer (every entry stored, rows of ``rank`` columns), not a copy of it."""
        G = self.factor.G
        n, r = G.shape
        X = sp.csr_matrix((G.reshape(-1), np.tile(np.arange(r, dtype=np.int32), n),
                           np.arange(0, n * r + 1, r, dtype=np.int64)), shape=(n, r))
        return dataset.with_X(X, n_features=r)

    @staticmethod
    def solver_params(params: SolverParams) -> SolverParams:
        """The parameters the solver runs with on the factor: no approximation and the linear
        kernel (a kernel family, lssvm, then solves the linear problem on G); ``params``
        themselves without an approximation."""
        if params.approximation == "none":
            return params
        return params.model_copy(update={"approximation": "none", "kernel": "linear"})

    @staticmethod
    def with_approximation(params: SolverParams, source: SolverParams) -> SolverParams:
        """``params`` (a solver's, posed on the factor without the approximation: ``auto``'s
        chosen candidate) with ``source``'s approximation (method, rank, landmarks, seed,
        trace tolerance, kernel): the parameters that train the low-rank problem asked
        for, as a result and a model record them."""
        if source.approximation == "none":
            return params
        fields = ("approximation", "rank", "rank_tol", "landmarks", "approximation_seed",
                  "icf_tol",
                  "kernel", "gamma", "degree", "coef0")
        values = {**params.model_dump(), **{name: getattr(source, name) for name in fields}}
        return type(params).model_validate(values)

    def describe(self) -> dict[str, Any]:
        factor = self.factor
        described = {"method": factor.method, "rank": factor.rank,
                     "requested_rank": self.requested_rank,
                     "landmarks": int(factor.feature_map.landmarks.shape[0]),
                     "residual_trace": factor.residual_trace,
                     "kernel_trace": factor.kernel_trace, "seconds": self.seconds}
        if factor.rank_search is not None:
            described["rank_search"] = factor.rank_search.describe()
        return described

    def kernel_model(self, model: LinearModel | PairwiseLinear) -> KernelModel:
        """The kernel model a linear model on the factor is: coefficients (M w)' over the
        landmarks, the same intercepts and classes; one-vs-one weights
        (:class:`~solvers.base.PairwiseLinear`) make a one-vs-one kernel model, which
        votes as LIBSVM's."""
        if isinstance(model, PairwiseLinear):
            coef, intercept, classes, metadata = (model.coef, model.intercept, model.classes,
                                                  {})
        elif isinstance(model, LinearModel):
            coef, intercept, classes, metadata = (model.coef_, model.intercept_,
                                                  model.classes_, dict(model.metadata))
        else:
            raise TypeError(f"the low-rank path turns linear models into kernel models, not "
                            f"a {type(model).__name__}")
        feature_map = self.factor.feature_map
        metadata["approximation"] = self.describe()
        return KernelModel(feature_map.landmarks, coef @ feature_map.map.T, intercept, classes,
                           feature_map.kernel, metadata,
                           multiclass=getattr(model, "multiclass", "ovr"))


def approximate(dataset: Dataset, params: SolverParams, monitor: Monitor | None = None,
                should_stop: Callable[[], bool] | None = None) -> Approximation | None:
    """The factor ``params`` ask for on ``dataset``'s rows (None: ``approximation="none"``).
    With a ``monitor``, the factorization reports its progress to it and stops when it asks
    (:class:`FactorProgress`); with ``should_stop`` instead (cross-validation, whose log holds
    fold scores, not a fold's factorization), it reports nothing and stops when that says
    so.  A stopped factorization gives a result with no factor that says why
    (``Approximation.stopped``)."""
    if params.approximation == "none":
        return None
    clock = Stopwatch()
    kernel = params.approximation_kernel(dataset.X)
    progress = checkpoint = None
    if monitor is not None and not isinstance(monitor, NullMonitor):
        progress = checkpoint = FactorProgress(monitor, params.approximation, clock)
    elif should_stop is not None:
        def checkpoint(step: str, done: int, total: int, residual: float) -> str | None:
            return STOP_ASKED if should_stop() else None
    try:
        if params.approximation == "nystrom":
            factor = nystrom(dataset.X, kernel, params.rank, params.approximation_seed,
                             params.landmarks, rank_tol=params.rank_tol,
                             checkpoint=checkpoint)
        else:  # with the rank chosen: pivots until the residual trace is rank_tol's
            tol = params.icf_tol if params.rank is not None else max(params.icf_tol,
                                                                     params.rank_tol)
            factor = incomplete_cholesky(dataset.X, kernel, params.largest_rank, tol,
                                         checkpoint=checkpoint)
    except FactorizationStopped as stopped:
        return Approximation(None, clock(), params.rank, stopped,
                             0 if progress is None else progress.records)
    if progress is not None:  # the complete factor: its rank and residual, exactly
        progress.report("done", factor.rank, factor.rank if params.rank is None
                        else int(params.rank),
                        factor.residual_trace / factor.kernel_trace
                        if factor.kernel_trace else 0.0)
    return Approximation(factor, clock(), params.rank,
                         records=0 if progress is None else progress.records)


__all__ = ["REPORT_INTERVAL_S", "STOP_ASKED", "Approximation", "FactorProgress", "approximate"]
