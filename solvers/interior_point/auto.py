"""linear_solver="auto": the cheaper of SVM-Direct and SVM-PCG by a cost model (the paper
gives only a rule of thumb: section 5, "the system must be solved in fewer than m/4
iterations", and section 7, "moderately large" average nonzeros per observation).

Per MPC iteration, in multiply-adds, with L_i the stored entries of row i, nnz their sum and
p = n_features + 1:

* direct: the Gram build of M over every row, sum_i L_i (L_i + 1) / 2, and its Cholesky
  factorization p^3 / 3;
* pcg: the Gram build of P_A over the rows of A (a fraction ``f`` of the rows, measured:
  ``INTERIOR_POINT_AUTO_ACTIVE_FRACTION``), the same factorization, and K PCG iterations
  (``INTERIOR_POINT_AUTO_PCG_ITERATIONS``, measured per MPC iteration), each two sparse
  products (2 nnz), two triangular solves with the factor (2 p^2) and O(n) vector work.

The products, residuals and back substitutions both share are left out.  A Gram entry is a
scattered update of a dense matrix, a product entry a streamed one: their relative cost is
``INTERIOR_POINT_AUTO_GRAM_WEIGHT`` (measured).  Beyond INTERIOR_POINT_MAX_DENSE_PARAMS "auto"
refuses (only the diagonal-preconditioned PCG could run, measured far too slow).
"""

from __future__ import annotations

import numpy as np

from solvers import config
from solvers.core.linalg import gram_cost


def linear_solver_costs(X, regularized_bias: bool) -> dict[str, float]:
    """The modelled multiply-adds of one MPC iteration for each linear solver."""
    n, m = X.shape
    p = m + 1
    rows = np.arange(n, dtype=np.int64)
    gram = float(gram_cost(X.indptr, rows)) + (float(X.nnz) + n if regularized_bias else 0.0)
    gram *= config.INTERIOR_POINT_AUTO_GRAM_WEIGHT
    factor = p ** 3 / 3.0
    pcg_iteration = 2.0 * X.nnz + 2.0 * p * p + 6.0 * n
    return {
        "direct": gram + factor,
        "pcg": config.INTERIOR_POINT_AUTO_ACTIVE_FRACTION * gram + factor
        + config.INTERIOR_POINT_AUTO_PCG_ITERATIONS * pcg_iteration,
    }


def choose_linear_solver(X, regularized_bias: bool) -> str:
    """'direct' or 'pcg' for linear_solver="auto"; a ValueError naming the limit beyond
    INTERIOR_POINT_MAX_DENSE_PARAMS parameters, where only the diagonal-preconditioned PCG
    could run and was measured far too slow to choose by default (news20 made binary:
    bench/history/measurements.json, interior-point-diagonal-pcg)."""
    if X.shape[1] + 1 > config.INTERIOR_POINT_MAX_DENSE_PARAMS:
        raise ValueError(
            f"interior_point: {X.shape[1] + 1} parameters exceed the dense factorization "
            f"limit of {config.INTERIOR_POINT_MAX_DENSE_PARAMS} "
            f"(INTERIOR_POINT_MAX_DENSE_PARAMS; M would take "
            f"{(X.shape[1] + 1) ** 2 * 8 / 2 ** 30:.1f} GiB); linear_solver='pcg' runs with a "
            f"diagonal preconditioner there but converges slowly (minutes to a 1e-3 gap on "
            f"news20): use another solver (mfn, or the cutting-plane family)")
    costs = linear_solver_costs(X, regularized_bias)
    return "direct" if costs["direct"] <= costs["pcg"] else "pcg"
