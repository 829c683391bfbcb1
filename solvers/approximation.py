"""The low-rank kernel path: a step of ``train`` that turns a kernel problem into a linear one
for any linear family (``approximation="nystrom" | "icf"``, ``rank``; ``design.md``
section 3).

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
per binary problem; one-vs-rest and Crammer-Singer keep their rows).  It predicts with exact
kernel rows against L, serializes as any kernel model (npz, no pickle), and its metadata
records the approximation (method, rank asked and obtained, residual trace, seconds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers.base import SolverParams
from solvers.core.lowrank import Factor, incomplete_cholesky, nystrom
from solvers.data.dataset import Dataset
from solvers.models import KernelModel, LinearModel


@dataclass
class Approximation:
    """A factor of the training rows' kernel matrix and how it was obtained."""

    factor: Factor
    seconds: float
    requested_rank: int

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

    def describe(self) -> dict[str, Any]:
        factor = self.factor
        return {"method": factor.method, "rank": factor.rank,
                "requested_rank": self.requested_rank,
                "landmarks": int(factor.feature_map.landmarks.shape[0]),
                "residual_trace": factor.residual_trace, "kernel_trace": factor.kernel_trace,
                "seconds": self.seconds}

    def kernel_model(self, model: LinearModel) -> KernelModel:
        """The kernel model a linear model on the factor is: coefficients (M w)' over the
        landmarks, the same intercepts and classes."""
        if not isinstance(model, LinearModel):
            raise TypeError(f"the low-rank path turns linear models into kernel models, not "
                            f"a {type(model).__name__}")
        feature_map = self.factor.feature_map
        coef = model.coef_ @ feature_map.map.T
        metadata = dict(model.metadata)
        metadata["approximation"] = self.describe()
        return KernelModel(feature_map.landmarks, coef, model.intercept_, model.classes_,
                           feature_map.kernel, metadata, multiclass="ovr")


def approximate(dataset: Dataset, params: SolverParams) -> Approximation | None:
    """The factor ``params`` ask for on ``dataset``'s rows (None: ``approximation="none"``)."""
    if params.approximation == "none":
        return None
    start = time.perf_counter()
    kernel = params.approximation_kernel(dataset.X)
    if params.approximation == "nystrom":
        factor = nystrom(dataset.X, kernel, params.rank, params.approximation_seed,
                         params.landmarks)
    else:
        factor = incomplete_cholesky(dataset.X, kernel, params.rank, params.icf_tol)
    return Approximation(factor, time.perf_counter() - start, int(params.rank))


__all__ = ["Approximation", "approximate"]
