"""The least-squares family's problems in kernel form (Joshi et al.; ``solvers.lssvm``).

With f(x) = sum_j coef_j k(x_j, x) + intercept and ||w||^2 = coef' K coef, every problem of the
family is ``docs/design.md``'s binary problem with the feature map of the kernel::

    P = 1/2 norm2 + sum_i C_i L(1 - y_i f(x_i))

where ``norm2`` is ||w||^2 plus the solver's bias term (0 for the free bias of the LS-SVM,
b~^2 for the proximal SVM, A b^2 for the relaxed LS-SVM), which the solvers have from the
quantities they maintain (K beta, K z, the multipliers and the gradient of the dual).

The hinge loss with a free bias is C-SVC (``solvers.smo``): with alpha its dual variables and
G = Q alpha - e the gradient of its dual (Q_ij = y_i y_j K_ij), the margins without the bias
are y_i sum_j alpha_j y_j K_ij = G_i + 1 and ||w||^2 = alpha'Q alpha = sum_i alpha_i (G_i + 1),
so the primal at the bias b and the dual objective come from G in O(n)
(:meth:`KernelProblem.csvc_objectives`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.core.linalg import dot
from solvers.losses import Loss, get_loss
from solvers.termination import Termination


@dataclass
class KernelProblem:
    """Labels ``y`` (+-1), per-example costs C_i and the loss (least squares, the squared
    hinge of SesquiSMO, or the hinge of C-SVC: which loss a kernel family poses is its
    declaration's, ``solvers.base.Solves``)."""

    y: np.ndarray
    cost: np.ndarray
    loss: str = "least_squares"
    loss_function: Loss = field(init=False, repr=False)

    def __post_init__(self):
        self.loss_function = get_loss(self.loss)

    def objective(self, norm2: float, outputs: np.ndarray) -> float:
        """1/2 norm2 + sum_i C_i L(1 - y_i f_i) at the outputs f_i = f(x_i)."""
        return self.objective_from_margins(norm2, self.y * outputs)

    def objective_from_margins(self, norm2: float, margins: np.ndarray) -> float:
        return 0.5 * norm2 + self.loss_function.sum(1.0 - margins, self.cost)

    @staticmethod
    def relaxed_dual_objective(lam: np.ndarray, gradient: np.ndarray) -> float:
        """The relaxed LS-SVM's dual (20), max_lambda e'lambda - 1/2 lambda'Q lambda, from the
        multipliers and g = Q lambda - e: 1/2 (e'lambda - lambda'g)."""
        return 0.5 * (float(lam.sum()) - dot(lam, gradient))

    def csvc_objectives(self, alpha: np.ndarray, gradient: np.ndarray,
                        bias: float) -> tuple[float, float]:
        """(primal, dual) of C-SVC (hinge loss, free bias) at the dual point ``alpha`` with
        gradient G = Q alpha - e of its dual, and the bias ``bias``:
        P = 1/2 sum alpha_i (G_i + 1) + sum_i C_i max(0, -G_i - y_i b) and
        D = e'alpha - 1/2 alpha'Q alpha = 1/2 sum alpha_i (1 - G_i).  D <= P* <= P for
        every feasible alpha (y'alpha = 0, 0 <= alpha <= C) and every b.  The dual is the
        hinge's: a loss whose conjugate term vanishes on its dual range (``dual_quadratic``
        0)."""
        if self.loss_function.dual_quadratic != 0.0:
            raise ValueError("csvc_objectives is the hinge loss's (C-SVC): its dual has no "
                             f"conjugate term, loss {self.loss!r}'s has")
        norm2 = dot(alpha, gradient) + float(alpha.sum())
        primal = self.objective_from_margins(norm2, gradient + 1.0 + self.y * bias)
        dual = 0.5 * (float(alpha.sum()) - dot(alpha, gradient))
        return primal, dual


@dataclass(frozen=True)
class KernelSolution:
    """One binary kernel problem solved (by C-SVC's SMO or a least-squares solver): f(x) =
    sum_j coef_j k(x_j, x) + intercept over the training rows x_j (coef_j = y_j alpha_j), the
    primal objective of the model and why the solve stopped."""

    coef: np.ndarray
    intercept: float
    objective: float
    status: Termination
    message: str
    iterations: int
    extras: dict[str, Any] = field(default_factory=dict)
    #: the least-squares systems' unknown (beta of (7), z of (12)): the start of the next C's
    #: CG
    unknown: np.ndarray | None = None
