"""The reduced Newton system of Gertz & Griffin, section 3, and its two solvers (section 5).

Rows x~_i = (x_i, c) with the constant column c = ``bias_scale`` for the regularized bias and
c = 0 otherwise (the last coordinate of w is then inert: M's last row is e_m).  Y = D X~ with
D = diag(d), so Y' Omega^-1 Y = X~' Omega^-1 X~ (d_i^2 = 1) and y_d = Y' Omega^-1 d =
X~' Omega^-1 e.  With the free bias (the paper's beta)::

    M = I + X~' Omega^-1 X~ - y_d y_d' / sigma,   sigma = e' Omega^-1 e          (11), (8c-d)

and without it (``none``, ``regularized``: the beta row of (4b)/(5b) dropped)
M = I + X~' Omega^-1 X~.  :class:`DirectSolver` forms M with the core's weighted Gram build
(weights 1/omega_i, parallel over the sparse rows) and factors it by Cholesky once per MPC
iteration; :class:`PCGSolver` applies M matrix-free (two sparse products) and preconditions by
P_A of (13), chosen by rule (15), factored once per MPC iteration and used for the predictor
and the corrector, with section 5.3's tolerances and fall-back.
"""

from __future__ import annotations

import numpy as np

from solvers import config
from solvers.core.gram import weighted_gram
from solvers.core.linalg import (
    cholesky_factor,
    cholesky_factor_solve,
    conjugate_gradient,
    dot,
    gram_cost,
    gram_update,
)
from solvers.core.sparse import csr_matvec, csr_rmatvec, row_norms_squared, use_parallel
from solvers.termination import Termination


class SingularSystemError(ArithmeticError):
    """A factorization failed: the MPC method stops with ``numerical_error``."""


class NormalOperator:
    """M of (11) at the current weights 1/omega_i, applied matrix-free (section 5: "a total
    of O(2nm + n) multiplications"), and the products with X~ the back substitutions need."""

    def __init__(self, X, extra_value: float, free: bool):
        self.X = X
        self.c = float(extra_value)
        self.free = free
        self.n, self.m = X.shape
        self.dim = self.m + 1
        self.inv_omega = np.ones(self.n)
        self.y_d = np.zeros(self.dim)
        self.sigma = 1.0

    def forward(self, p: np.ndarray) -> np.ndarray:
        """X~ p."""
        return csr_matvec(self.X, p[:-1], self.c * p[-1])

    def adjoint(self, t: np.ndarray) -> np.ndarray:
        """X~' t."""
        out = np.empty(self.dim)
        out[:-1] = csr_rmatvec(self.X, t)
        out[-1] = self.c * float(t.sum())
        return out

    def set_weights(self, inv_omega: np.ndarray) -> None:
        """Omega^-1 of (7); y_d and sigma of (8c-d) for the free bias."""
        self.inv_omega = inv_omega
        if self.free:
            self.y_d = self.adjoint(inv_omega)
            self.sigma = float(inv_omega.sum())

    def __call__(self, p: np.ndarray) -> np.ndarray:
        out = self.adjoint(self.inv_omega * self.forward(p))
        out += p
        if self.free:
            out -= (dot(self.y_d, p) / self.sigma) * self.y_d
        return out


def factor_with_shift(M: np.ndarray) -> np.ndarray | None:
    """The Cholesky factor of M (lower triangle), or, when round-off has made the computed
    M indefinite (late MPC iterations: 1/omega_i spans ~1e20 and the rank-one term of (11)
    cancels most of the Gram part in the bias direction), of M + delta I with delta = 1e-12
    max_i M_ii (M >= I in exact arithmetic, so the shift perturbs the Newton step by a
    relative ~1e-12 max_i M_ii); None if that fails too."""
    diagonal_max = float(np.max(np.diag(M)))
    factor = cholesky_factor(M.copy())
    if factor is not None:
        return factor
    M[np.diag_indices_from(M)] += 1e-12 * diagonal_max
    return cholesky_factor(M)


def dense_limit_error(dim: int, what: str) -> ValueError:
    gib = dim * dim * 8 / 2 ** 30
    return ValueError(
        f"{what} needs a dense {dim} x {dim} matrix ({gib:.1f} GiB); interior_point factors "
        f"at most {config.INTERIOR_POINT_MAX_DENSE_PARAMS} parameters "
        f"(INTERIOR_POINT_MAX_DENSE_PARAMS).  Use linear_solver='pcg' (diagonal "
        f"preconditioner beyond the limit) or another solver.")


class DirectSolver:
    """SVM-Direct: M formed (Gram build with weights 1/omega_i, minus the rank-one term) and
    factored by Cholesky once per MPC iteration; both right-hand sides use the factor."""

    name = "direct"

    def __init__(self, operator: NormalOperator):
        if operator.dim > config.INTERIOR_POINT_MAX_DENSE_PARAMS:
            raise dense_limit_error(operator.dim, "linear_solver='direct'")
        self.op = operator
        self.matrix = np.zeros((operator.dim, operator.dim))
        self.factor = None
        self.iterations = 0  # PCG iterations: none
        self.active_size = operator.n
        self.gamma = 0.0  # the paper's SVM-Direct: gamma = 0, every term in A

    def prepare(self, mu: float) -> None:
        op = self.op
        M = weighted_gram(op.X, op.inv_omega, extra_value=op.c, out=self.matrix, mirror=False)
        self.factorize(M, op.y_d, op.sigma)

    def factorize(self, M: np.ndarray, y_d: np.ndarray, sigma: float) -> None:
        """M of (11) from the weighted Gram matrix X~' Omega^-1 X~ (lower triangle; summed over
        partitions on distributed data), modified in place, and its Cholesky factor."""
        M[np.diag_indices_from(M)] += 1.0
        if self.op.free:
            lower = np.tril_indices_from(M)
            M[lower] -= np.outer(y_d, y_d / sigma)[lower]
        self.factor = factor_with_shift(M)
        if self.factor is None:
            raise SingularSystemError("the Cholesky factorization of M (11) failed")

    def solve(self, rhs: np.ndarray, x0: np.ndarray | None, corrector: bool,
              mu: float) -> np.ndarray:
        x = cholesky_factor_solve(self.factor, rhs)
        if x is None:
            raise SingularSystemError("the solve with the Cholesky factor of M gave non-finite "
                                      "values")
        return x

    def start_iteration(self) -> None:
        pass


class PCGSolver:
    """SVM-PCG (section 5): PCG on (9a) with the SVM preconditioner

        P_A = I - y~_d y~_d' / sigma~ + sum_{i in A} y_i y_i' / omega_i
              + sum_{i not in A} diag(y_i y_i' / omega_i)                            (13)

    (the rank-one term only with the free bias), A chosen by rule (15),
    ||y_i||^2 / omega_i >= gamma min(1, mu^(1/2)), gamma = 100 at the start and never
    increased.  Rule (15) keeps the terms whose 1/omega_i grows like 1/mu (the free support
    vectors: s_i, z_i -> 0 with v_i, u_i bounded away from 0) and drops those whose 1/omega_i
    vanishes like mu (the bounded and the non-support vectors).  Section 5.1 says the test
    "will exclude all omega_i that are converging to zero": a misprint, those are the ones it
    keeps (the proof of Proposition 5 uses the rule as written in (15)).

    Tolerances (section 5.3): rtol = min(0.1, 0.1 mu); the predictor stops at
    ||b - M x|| <= max(rtol ||b||, 1e-12), the corrector at max(1e-2 rtol ||b||, 1e-12),
    warm-started from the predictor's solution.  Fall-back: when the PCG iterations of one MPC
    iteration (predictor and corrector together) exceed i_max = max(m/8, 20), A is enriched to
    the k_j = min(|A| + j floor(m/2), n) largest terms (gamma_j = (1 - 1e-8) d_j /
    min(1, mu^(1/2)), d_j the k_j-th largest ||y_i||^2 / omega_i), the preconditioner updated
    (the entering rows added to its Gram part), the count reset, and PCG continued from its
    last iterate; the final gamma_j is kept for the later MPC iterations.

    Beyond ``INTERIOR_POINT_MAX_DENSE_PARAMS`` parameters no dense P_A can be factored: A stays
    empty (P = I + the diagonal of X~' Omega^-1 X~, rule (15) with gamma = infinity) and there
    is no fall-back; each solve then stops at the tolerance or after
    ``INTERIOR_POINT_DIAGONAL_PCG_MAX_ITER`` iterations.
    """

    name = "pcg"

    def __init__(self, operator: NormalOperator, gamma: float):
        self.op = operator
        self.gamma = float(gamma)
        self.diagonal_only = operator.dim > config.INTERIOR_POINT_MAX_DENSE_PARAMS
        X = operator.X
        self.X2 = X.multiply(X).tocsr()
        norms = np.empty(operator.n)
        row_norms_squared(X.indptr, X.indices, X.data, norms)
        self.square_norms = norms + operator.c ** 2  # ||y_i||^2 = ||x~_i||^2
        self.i_max = max(operator.m // 8, 20)
        self.members = np.zeros(operator.n, dtype=bool)
        self.G = None if self.diagonal_only else np.zeros((operator.dim, operator.dim))
        self.factor = None
        self.diagonal = None
        self.iterations = 0  # PCG iterations of the current MPC iteration (reported)
        self.cumulative = 0  # the count that triggers the fall-back (reset by it)
        self.enrichments = 0
        self.mu = 1.0

    @property
    def active_size(self) -> int:
        return int(np.count_nonzero(self.members))

    def start_iteration(self) -> None:
        self.iterations = 0
        self.cumulative = 0
        self.enrichments = 0

    def _threshold(self, mu: float) -> float:
        return min(1.0, float(np.sqrt(mu)))

    def prepare(self, mu: float) -> None:
        """Choose A by rule (15) at the current weights and factor P_A."""
        self.mu = mu
        op = self.op
        if self.diagonal_only:
            self.members[:] = False
        else:
            scores = self.square_norms * op.inv_omega
            self.select(scores >= self.gamma * self._threshold(mu))
            return
        self._factor()

    def _add_rows(self, rows: np.ndarray) -> None:
        op = self.op
        if rows.shape[0] == 0:
            return
        cost = gram_cost(op.X.indptr, rows)
        gram_update(op.X, rows, op.inv_omega[rows], self.G, extra_value=op.c,
                    parallel=use_parallel(cost, op.dim * op.dim))

    def _diagonal(self) -> np.ndarray:
        """1 + the diagonal of the terms outside A."""
        op = self.op
        rest = np.where(self.members, 0.0, op.inv_omega)
        diagonal = np.empty(op.dim)
        diagonal[:-1] = csr_rmatvec(self.X2, rest)
        diagonal[-1] = op.c ** 2 * float(rest.sum())
        return diagonal + 1.0

    def matrix(self) -> np.ndarray:
        """P_A of (13) at the current A and weights (lower triangle; the upper holds the
        Gram part's zeros)."""
        op = self.op
        P = self.G.copy()
        P[np.diag_indices_from(P)] += self._diagonal()
        if op.free and self.members.any():
            inside = np.where(self.members, op.inv_omega, 0.0)
            y_tilde = op.adjoint(inside)
            sigma_tilde = float(inside.sum())
            lower = np.tril_indices_from(P)
            P[lower] -= np.outer(y_tilde, y_tilde / sigma_tilde)[lower]
        return P

    def _factor(self) -> None:
        if self.diagonal_only:
            self.diagonal = self._diagonal()
            return
        self.factor = factor_with_shift(self.matrix())
        if self.factor is None:
            raise SingularSystemError("the Cholesky factorization of P_A (13) failed")

    def select(self, members: np.ndarray) -> None:
        """Use the terms ``members`` (a boolean mask) as A and factor P_A."""
        self.members = np.asarray(members, dtype=bool).copy()
        self.G[:] = 0.0
        self._add_rows(np.flatnonzero(self.members))
        self._factor()

    def _enrich(self) -> bool:
        """One step j of section 5.3's fall-back; False when A already holds every term."""
        op = self.op
        n = op.n
        size = self.active_size
        if size >= n:
            return False
        self.enrichments += 1
        k = min(max(size + op.m // 2 * self.enrichments, size + 1), n)
        scores = self.square_norms * op.inv_omega
        d_k = float(np.partition(scores, n - k)[n - k])  # the k-th largest
        self.gamma = (1.0 - 1e-8) * d_k / self._threshold(self.mu)
        members = scores >= self.gamma * self._threshold(self.mu)
        entering = np.flatnonzero(members & ~self.members)
        self.members = members
        self._add_rows(entering)
        self._factor()
        return True

    def precondition(self, r: np.ndarray) -> np.ndarray:
        if self.diagonal_only:
            return r / self.diagonal
        x = cholesky_factor_solve(self.factor, r)
        if x is None:
            raise SingularSystemError("the solve with the factor of P_A gave non-finite values")
        return x

    def solve(self, rhs: np.ndarray, x0: np.ndarray | None, corrector: bool,
              mu: float) -> np.ndarray:
        rtol = min(0.1, 0.1 * mu)
        if corrector:
            rtol *= 1e-2
        x = x0
        while True:
            if self.diagonal_only:
                budget = config.INTERIOR_POINT_DIAGONAL_PCG_MAX_ITER
            else:
                budget = max(self.i_max - self.cumulative, 0)
            result = conjugate_gradient(self.op, rhs, x0=x, precondition=self.precondition,
                                        rtol=rtol, atol=1e-12, max_iter=budget)
            self.iterations += result.iterations
            self.cumulative += result.iterations
            if result.converged:
                return result.x
            if self.diagonal_only or not self._enrich():
                # nothing left to enrich with (A holds every term, P_A = M): the last iterate
                return result.x
            self.cumulative = 0
            x = result.x if result.status != Termination.NUMERICAL_ERROR else x0
