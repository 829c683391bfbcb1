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

from bench.references import hinge_dual_interior_point
from solvers.problems import BinaryProblem


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


def hinge_dual_optimum(problem: BinaryProblem, relative_gap: float = 1e-12) -> Reference:
    """The hinge optimum (regularized bias) from the interior-point solve of its dual that
    the stored benchmark references use (:func:`bench.references.hinge_dual_interior_point`)."""
    if problem.bias != "regularized":
        raise ValueError("the box-constrained dual needs the hinge loss with a regularized bias")
    _, beta, dual = hinge_dual_interior_point(problem, relative_gap)
    primal = problem.objective(beta)
    return Reference(beta, primal, (primal - dual) / primal, "interior-point dual")
