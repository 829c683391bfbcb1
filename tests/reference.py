"""Independent reference optima for the MFN tests.

* :func:`liblinear_optimum` -- LIBLINEAR (liblinear-official) at a tight tolerance, its
  objective evaluated by :class:`solvers.BinaryProblem`, together with the relative duality
  gap of its solution (alpha from the KKT map), which certifies how tight it is;
* :func:`lbfgs_optimum` -- SciPy's L-BFGS on the primal objective of any smooth problem
  (squared hinge, modified Huber, ordinal regression: all continuously differentiable);
* :func:`hinge_dual_optimum` -- the hinge loss with a regularized bias through its dual,
  max_alpha sum alpha_i - 1/2 ||sum_i alpha_i y_i x~_i||^2 s.t. 0 <= alpha_i <= C_i (only box
  constraints because the bias is regularized), solved by L-BFGS-B; the primal point
  beta(alpha) = sum alpha_i y_i x~_i and the dual value bracket the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from solvers.problem import BinaryProblem


@dataclass(frozen=True)
class Reference:
    beta: np.ndarray
    objective: float
    relative_gap: float  # certified (P - D) / P of the reference point (nan if unknown)
    method: str


def liblinear_optimum(problem: BinaryProblem, solver_type: int, eps: float = 1e-10) -> Reference:
    """LIBLINEAR ``-s solver_type -B bias_scale -c C -e eps`` on ``problem`` (regularized bias,
    unit sample weights)."""
    from liblinear.liblinearutil import train

    if problem.bias != "regularized" or problem.sample_weight is not None:
        raise ValueError("LIBLINEAR solves the regularized-bias, unweighted problem here")
    model = train(problem.y, problem.X,
                  f"-s {solver_type} -B {problem.bias_scale!r} -c {problem.C!r} -e {eps!r} -q")
    w, b = model.get_decfun()
    beta = np.r_[np.asarray(w, dtype=np.float64), b / problem.bias_scale]
    objective = problem.objective(beta)
    gap = problem.duality_gap(beta) / objective
    return Reference(beta, objective, gap, f"liblinear -s {solver_type} -e {eps:g}")


def lbfgs_optimum(objective_and_gradient, x0: np.ndarray, gtol: float = 1e-10,
                  max_iter: int = 50_000) -> tuple[np.ndarray, float]:
    """L-BFGS on a smooth objective; returns (x, f(x))."""
    result = minimize(objective_and_gradient, x0, jac=True, method="L-BFGS-B",
                      options={"maxiter": max_iter, "maxfun": 2 * max_iter, "ftol": 1e-16,
                               "gtol": gtol, "maxcor": 30})
    return result.x, float(result.fun)


def binary_lbfgs_optimum(problem: BinaryProblem) -> Reference:
    """L-BFGS on a smooth binary problem (squared hinge, modified Huber)."""
    def fg(beta):
        return problem.objective(beta), problem.gradient(beta)

    beta, objective = lbfgs_optimum(fg, problem.zeros())
    return Reference(beta, objective, problem.duality_gap(beta) / objective, "L-BFGS primal")


def hinge_dual_optimum(problem: BinaryProblem, relative_gap: float = 1e-12,
                       max_newton: int = 2000) -> Reference:
    """The hinge problem with a regularized bias through its box-constrained dual

        minimize_alpha  1/2 alpha' A A' alpha - sum alpha   s.t.  0 <= alpha_i <= C_i,

    A = rows y_i x~_i (dense), by a log-barrier interior-point method: Newton steps on
    phi_mu(alpha) = the dual objective - mu sum(log alpha_i + log(C_i - alpha_i)) with mu
    shrinking tenfold once the Newton decrement is small.  The Newton systems
    (H + A A') d = -g, H diagonal, are solved through the Woodbury identity in
    O(n (d+1)^2), so this is for data with few features.  Stops when the exact duality gap
    P(beta(alpha)) - D(alpha) is below ``relative_gap`` P.
    """
    if problem.loss != "hinge" or problem.bias != "regularized":
        raise ValueError("the box-constrained dual needs the hinge loss with a regularized bias")
    A = problem.X.toarray() * problem.y[:, None]
    A = np.hstack([A, problem.effective_bias_scale * problem.y[:, None]])
    upper = problem.cost
    n, r = A.shape

    def dual(alpha):
        v = A.T @ alpha
        return float(alpha.sum()) - 0.5 * float(v @ v)

    def barrier(alpha, mu):
        return -dual(alpha) - mu * float(np.sum(np.log(alpha) + np.log(upper - alpha)))

    alpha = 0.5 * upper
    mu = 1.0
    for _ in range(max_newton):
        v = A.T @ alpha
        g = A @ v - 1.0 - mu / alpha + mu / (upper - alpha)
        h = mu / alpha ** 2 + mu / (upper - alpha) ** 2
        # (diag(h) + A A')^{-1} g by Woodbury
        Ah = A / h[:, None]
        small = np.eye(r) + A.T @ Ah
        step = -(g / h - Ah @ np.linalg.solve(small, Ah.T @ g))
        decrement = float(-(g @ step))
        if decrement <= 1e-3 * mu:
            beta = A.T @ alpha
            primal = problem.objective(beta)
            if primal - dual(alpha) <= relative_gap * abs(primal):
                break
            mu *= 0.1
            continue
        # stay strictly inside the box, then backtrack on the barrier function
        ratio = np.concatenate([-alpha[step < 0] / step[step < 0],
                                (upper - alpha)[step > 0] / step[step > 0]])
        t = min(1.0, 0.99 * float(ratio.min(initial=np.inf)))
        current = barrier(alpha, mu)
        while barrier(alpha + t * step, mu) > current + 0.25 * t * float(g @ step) and t > 1e-16:
            t *= 0.5
        alpha = alpha + t * step
    beta = A.T @ alpha
    primal = problem.objective(beta)
    return Reference(beta, primal, (primal - dual(alpha)) / primal, "interior-point dual")
