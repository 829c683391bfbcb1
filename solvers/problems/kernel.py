"""The least-squares family's problems in kernel form (Joshi et al.; ``solvers.lssvm``).

With f(x) = sum_j coef_j k(x_j, x) + intercept and ||w||^2 = coef' K coef, every problem of the
family is ``design.md``'s binary problem with the feature map of the kernel::

    P = 1/2 norm2 + sum_i C_i L(1 - y_i f(x_i))

where ``norm2`` is ||w||^2 plus the solver's bias term (0 for the free bias of the LS-SVM,
b~^2 for the proximal SVM, A b^2 for the relaxed LS-SVM), which the solvers have from the
quantities they maintain (K beta, K z, the multipliers and the gradient of the dual).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.core.linalg import dot
from solvers.losses import Loss, get_loss


@dataclass
class KernelProblem:
    """Labels ``y`` (+-1), per-example costs C_i and the loss (least squares, or the squared
    hinge of SesquiSMO)."""

    y: np.ndarray
    cost: np.ndarray
    loss: str = "least_squares"
    loss_function: Loss = field(init=False, repr=False)

    def __post_init__(self):
        if self.loss not in ("least_squares", "squared_hinge"):
            raise ValueError(f"the kernel least-squares problems have no loss {self.loss!r}")
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
