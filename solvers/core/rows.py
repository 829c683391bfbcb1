"""The row operator the least-squares solvers share: the terms of a problem as rows x~_k.

A problem's loss terms are least-squares rows: one per example for a binary problem, x~_i =
(x_i, s) with the bias column of value s (0: no bias), and one per (example, threshold) pair for
ordinal regression, (x_i, -s e_c).  These classes give the products over all terms or a subset
of them (forward: x~_k . v; adjoint: sum_k c_k x~_k), the compacted subsets CGLS streams over,
the pair structure of ordinal terms, and the terms' squared norms.  Each solve keeps the rows
in non-decreasing order of length (:func:`solvers.core.sparse.length_order`) and maps
per-example vectors back with ``in_input_order``.  Used by L2-SVM-MFN's engine and the Gram
upkeep (:mod:`solvers.core.gram`); the augmented-Lagrangian and interior-point methods need the
same products.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

from solvers.core.sparse import (
    CompactRows,
    csr_matvec_rows,
    csr_rmatvec_rows,
    length_order,
    row_norms_squared,
    rows_nnz,
    use_parallel,
)


class Rows:
    """What the terms of every problem share: the data matrix with its rows in non-decreasing
    order of length (a copy, made once per solve, when they are not already), so that the
    compacted active rows CGLS streams over keep a predictable inner-loop length
    (:func:`solvers.core.sparse.length_order`; about 2x per stored entry on w8a).  The
    engine works in this order throughout; ``in_input_order`` maps per-example vectors back.
    """

    def __init__(self, X: sp.csr_matrix):
        self.order = length_order(X.indptr)
        self.X = X if self.order is None else X[self.order]
        self.unit_values = X.nnz > 0 and bool(np.all(X.data == 1.0))
        self.n_features = X.shape[1]
        n_blocks = numba.get_num_threads() if use_parallel(X.nnz, 0) else 1
        self.everything = CompactRows.all_rows(self.X, n_blocks=n_blocks,
                                               unit_values=self.unit_values)
        self._example_square_norms = None

    def example_square_norms(self) -> np.ndarray:
        """||x_i||^2 of every example (one pass over the data, made once: the C path's scale
        and preconditioning="auto" both read them)."""
        if self._example_square_norms is None:
            self._example_square_norms = np.empty(self.X.shape[0])
            row_norms_squared(self.X.indptr, self.X.indices, self.X.data,
                              self._example_square_norms)
        return self._example_square_norms

    def sorted_examples(self, values: np.ndarray) -> np.ndarray:
        return values if self.order is None else values[self.order]

    def in_input_order(self, values: np.ndarray) -> np.ndarray:
        if self.order is None:
            return values
        out = np.empty_like(values)
        out[self.order] = values
        return out

    def compact_rows(self, rows: np.ndarray) -> CompactRows:
        """The selected examples' rows as a :class:`CompactRows`, one block per thread when
        the products pay for it (all of them, sorted: the matrix itself, no copy)."""
        if rows.shape[0] == self.X.shape[0]:
            return self.everything
        nnz = rows_nnz(self.X.indptr, rows)
        n_blocks = numba.get_num_threads() if use_parallel(nnz, self.n_features) else 1
        return CompactRows(self.X, rows, n_blocks=n_blocks, unit_values=self.unit_values)


class BinaryRows(Rows):
    """A binary problem's terms: one per example, least-squares row x~_i = (x_i, s)."""

    def __init__(self, X: sp.csr_matrix, labels: np.ndarray, cost: np.ndarray, s: float):
        super().__init__(X)
        self.labels = self.sorted_examples(labels)
        self.cost = self.sorted_examples(cost)
        self.extra_value = s
        self.n_params = self.n_features + 1

    def outputs(self, beta: np.ndarray) -> np.ndarray:
        return self.everything.matvec(beta[:-1], self.extra_value * beta[-1])

    def outputs_in_input_order(self, outputs: np.ndarray) -> np.ndarray:
        return self.in_input_order(outputs)

    def structure(self, terms: np.ndarray):
        """(rows of X, pair_ptr, pair_col) of the least-squares rows ``terms``: one per row."""
        return terms, None, None

    def compact(self, terms: np.ndarray):
        """(A, pair_ptr, pair_col) of the least-squares rows ``terms`` for
        :func:`cgls_compact`."""
        return self.compact_rows(terms), None, None

    def compact_forward(self, A: CompactRows, v: np.ndarray, pair_ptr=None,
                        pair_col=None) -> np.ndarray:
        """x~_k . v over the compacted terms."""
        return A.matvec(v[:-1], self.extra_value * v[-1])

    def compact_adjoint(self, A: CompactRows, coefficients: np.ndarray, pair_ptr=None,
                        pair_col=None) -> np.ndarray:
        """sum_k coefficients_k x~_k over the compacted terms, as a parameter vector."""
        out = np.empty(self.n_params)
        out[:-1] = A.rmatvec(coefficients)
        out[-1] = self.extra_value * coefficients.sum()
        return out

    def square_norms(self) -> np.ndarray:
        """||x~_k||^2 of every term."""
        return self.example_square_norms() + self.extra_value ** 2

    def forward(self, terms: np.ndarray, v: np.ndarray) -> np.ndarray:
        return csr_matvec_rows(self.X, terms, v[:-1], self.extra_value * v[-1])

    def adjoint(self, terms: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        """sum_k coefficients_k x~_{terms[k]} as a parameter vector."""
        out = np.empty(self.n_params)
        out[:-1] = csr_rmatvec_rows(self.X, terms, coefficients)
        out[-1] = self.extra_value * coefficients.sum()
        return out


class OrdinalRows(Rows):
    """An ordinal problem's terms: pair k = i (p - 1) + c of example i and threshold c, least-
    squares row (x_i, -s e_c), label +1 when rank_i > c + 1, else -1 (section 7)."""

    def __init__(self, X: sp.csr_matrix, ranks: np.ndarray, n_levels: int, cost: np.ndarray,
                 s: float):
        super().__init__(X)
        ranks = self.sorted_examples(ranks)
        cost = self.sorted_examples(cost)
        self.n_thresholds = n_levels - 1
        columns = np.arange(self.n_thresholds)
        self.labels = np.where(columns[None, :] < ranks[:, None] - 1, 1.0, -1.0).ravel()
        self.cost = np.repeat(cost, self.n_thresholds)
        self.extra_value = -s
        self.n_params = self.n_features + self.n_thresholds

    def outputs(self, beta: np.ndarray) -> np.ndarray:
        d = self.n_features
        scores = self.everything.matvec(beta[:d])
        return (scores[:, None] + self.extra_value * beta[None, d:]).ravel()

    def outputs_in_input_order(self, outputs: np.ndarray) -> np.ndarray:
        return self.in_input_order(outputs.reshape(-1, self.n_thresholds)).ravel()

    def _examples(self, terms: np.ndarray):
        example = terms // self.n_thresholds
        rows, counts = np.unique(example, return_counts=True)
        return rows, counts

    def structure(self, terms: np.ndarray):
        """(examples, pair_ptr, pair_col) of the pairs ``terms`` (sorted, so they group by
        example)."""
        rows, counts = self._examples(terms)
        pair_ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=pair_ptr[1:])
        return rows, pair_ptr, terms % self.n_thresholds

    def compact(self, terms: np.ndarray):
        rows, pair_ptr, pair_col = self.structure(terms)
        return self.compact_rows(rows), pair_ptr, pair_col

    def compact_forward(self, A: CompactRows, v: np.ndarray, pair_ptr=None,
                        pair_col=None) -> np.ndarray:
        d = self.n_features
        scores = A.matvec(v[:d])
        return np.repeat(scores, np.diff(pair_ptr)) + self.extra_value * v[d + pair_col]

    def compact_adjoint(self, A: CompactRows, coefficients: np.ndarray, pair_ptr=None,
                        pair_col=None) -> np.ndarray:
        d = self.n_features
        per_example = np.add.reduceat(coefficients, pair_ptr[:-1]) \
            if coefficients.shape[0] else np.zeros(A.n_rows)
        out = np.empty(self.n_params)
        out[:d] = A.rmatvec(per_example)
        out[d:] = self.extra_value * np.bincount(pair_col, coefficients,
                                                 minlength=self.n_thresholds)
        return out

    def square_norms(self) -> np.ndarray:
        """||x~_k||^2 of every term: ||x_i||^2 + s^2 for each pair of example i."""
        return np.repeat(self.example_square_norms() + self.extra_value ** 2,
                         self.n_thresholds)

    def forward(self, terms: np.ndarray, v: np.ndarray) -> np.ndarray:
        d = self.n_features
        rows, counts = self._examples(terms)
        scores = csr_matvec_rows(self.X, rows, v[:d])
        return np.repeat(scores, counts) + self.extra_value * v[d + terms % self.n_thresholds]

    def adjoint(self, terms: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        d = self.n_features
        rows, counts = self._examples(terms)
        per_example = np.add.reduceat(coefficients, np.r_[0, np.cumsum(counts)[:-1]]) \
            if terms.shape[0] else coefficients
        out = np.empty(self.n_params)
        out[:d] = csr_rmatvec_rows(self.X, rows, per_example)
        out[d:] = self.extra_value * np.bincount(terms % self.n_thresholds, coefficients,
                                                 minlength=self.n_thresholds)
        return out


class RegressionRows(BinaryRows):
    """A regression problem's terms (:meth:`solvers.problems.RegressionProblem.terms`): two
    per example, term 2j + 0 with label +1 and target y - eps, term 2j + 1 with label -1 and
    target -y - eps, both on the row x~_j = (x_j, s) of the j-th example in the sorted order.
    The slack of a term is target_k - label_k x~_k . beta; an engine that forms slacks as
    1 - label_k o_k (a margin problem's) reads ``outputs`` = x~_k . beta + label_k (1 -
    target_k), an affine shift of the products, which the least-squares steps (linear in
    beta: ``forward``, ``adjoint``, their compacted forms) never see.  For eps >= 0 at most
    one term of an example has a positive slack, so the active terms of the squared hinge
    are distinct rows (``compact``)."""

    def __init__(self, X: sp.csr_matrix, targets: np.ndarray, cost: np.ndarray, s: float):
        Rows.__init__(self, X)
        n = X.shape[0]
        pairs = self.sorted_examples(np.asarray(targets, dtype=np.float64).reshape(n, 2))
        self.labels = np.tile(np.array([1.0, -1.0]), n)
        self.cost = np.repeat(self.sorted_examples(cost), 2)
        self.offset = self.labels * (1.0 - pairs.ravel())
        self.extra_value = s
        self.n_params = self.n_features + 1

    def outputs(self, beta: np.ndarray) -> np.ndarray:
        return np.repeat(self.everything.matvec(beta[:-1], self.extra_value * beta[-1]), 2) \
            + self.offset

    def outputs_in_input_order(self, outputs: np.ndarray) -> np.ndarray:
        return self.in_input_order(outputs.reshape(-1, 2)).ravel()

    def structure(self, terms: np.ndarray):
        """(rows of X, None, None): the example of each term (sorted terms give sorted rows;
        an entering and a leaving term of one example give it twice, as the Gram upkeep
        wants)."""
        return terms // 2, None, None

    def compact(self, terms: np.ndarray):
        return self.compact_rows(terms // 2), None, None

    def square_norms(self) -> np.ndarray:
        return np.repeat(self.example_square_norms() + self.extra_value ** 2, 2)

    def forward(self, terms: np.ndarray, v: np.ndarray) -> np.ndarray:
        return super().forward(terms // 2, v)

    def adjoint(self, terms: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        return super().adjoint(terms // 2, coefficients)
