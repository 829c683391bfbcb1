"""The residual losses of support vector regression (``docs/design.md``, the loss section).

A regression loss is a function of the residual r = y - f(x), not of a margin: LIBLINEAR's
(Ho & Lin, JMLR 2012, eqs. (2)-(3); ``-s 11/12/13`` with ``-p epsilon``)

=============================  =====================  ==================  ==================
loss                           L(r)                   dual range of b     C L*(b / C)
=============================  =====================  ==================  ==================
epsilon_insensitive            max(0, |r| - eps)      [-C_i, C_i]         eps |b|
squared_epsilon_insensitive    max(0, |r| - eps)^2    (-inf, inf)         eps |b| + b^2/(4C)
=============================  =====================  ==================  ==================

How they sit beside the margin losses: for eps >= 0, L(r) = l(r - eps) + l(-r - eps) with l
the hinge or the squared hinge (at most one term is positive), i.e. each example is two
margin terms, slack xi+ = (y - eps) - f(x) with label +1 and xi- = (-y - eps) + f(x) with
label -1: the margin loss ``margin_loss`` of targets y -+ eps instead of 1.  The dual point
of an example is b_i = alpha+_i - alpha-_i (Ho & Lin's beta; at most one of the two is
nonzero at the optimum), w = sum_i b_i x~_i, and the dual (:class:`solvers.problems.
RegressionProblem`) is D(b) = sum_i (y_i b_i - C_i L*(b_i / C_i)) - 1/2 ||w(b)||^2.  A family
whose engine runs on margin terms (mfn on the squared hinge) solves the regression problem on
those 2n terms; a dual method (dual_cd) works on b directly.

Each object is one loss with its ``epsilon`` (LIBLINEAR's -p, default 0.1); the declarations
of :class:`~solvers.losses.Loss` are those of its margin loss but ``slack = "residual"``:
``value``, ``derivative`` and ``prox`` take residuals, ``dual_lower``/``dual_upper`` bound b.
"""

from __future__ import annotations

import numpy as np

from solvers.losses import HINGE_LOSS, SQUARED_HINGE_LOSS, Loss, _as_array

#: LIBLINEAR's default -p
DEFAULT_EPSILON = 0.1


class ResidualLoss(Loss, abstract=True):
    """max(0, |r| - epsilon)^p as two terms of ``margin_loss`` (the module docstring).  A
    subclass declares its name, its margin loss and LIBLINEAR's names."""

    slack = "residual"
    code = None  # its value, sum, derivative and prox are its margin loss's, twice
    has_exponent = False
    clipped = False
    smoothing = None
    margin_loss: Loss

    def __init__(self, epsilon: float = DEFAULT_EPSILON):
        epsilon = float(epsilon)
        if not (np.isfinite(epsilon) and epsilon >= 0.0):
            raise ValueError(f"epsilon must be a finite number >= 0 (the width of the "
                             f"insensitive tube), got {epsilon!r}")
        self.epsilon = epsilon

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.epsilon == self.epsilon

    def __hash__(self) -> int:
        return hash((self.name, self.epsilon))

    def _slacks(self, r) -> tuple[np.ndarray, np.ndarray]:
        r = _as_array(r)
        return r - self.epsilon, -r - self.epsilon

    def value(self, r) -> np.ndarray:
        upper, lower = self._slacks(r)
        return self.margin_loss.value(upper) + self.margin_loss.value(lower)

    def sum(self, r, weight) -> float:
        upper, lower = self._slacks(r)
        return self.margin_loss.sum(upper, weight) + self.margin_loss.sum(lower, weight)

    def derivative(self, r) -> np.ndarray:
        """dL/dr: l'(r - eps) - l'(-r - eps) (0 inside the tube); the KKT map is b_i = C_i
        L'(r_i)."""
        upper, lower = self._slacks(r)
        return self.margin_loss.derivative(upper) - self.margin_loss.derivative(lower)

    def dual_lower(self, cost) -> np.ndarray:
        return -self.dual_upper(cost)

    def dual_upper(self, cost) -> np.ndarray:
        return self.margin_loss.dual_upper(cost)

    def conjugate(self, v) -> np.ndarray:
        """L*(v) = eps |v| + l*(|v|) on the dual range."""
        v = np.abs(_as_array(v))
        return self.epsilon * v + self.margin_loss.conjugate(v)

    def conjugate_sum(self, b, cost) -> float:
        b = np.abs(_as_array(b))
        tail = self.margin_loss.conjugate_sum(b, cost)
        return self.epsilon * float(b.sum()) + tail

    def prox(self, v, t) -> np.ndarray:
        """argmin_u t L(u) + (u - v)^2 / 2: inside the tube u = v; outside, the margin loss's
        proximal step on the distance to the tube, |v| - eps, kept on v's side."""
        v = _as_array(v)
        t = np.broadcast_to(_as_array(t), v.shape)
        outside = np.abs(v) - self.epsilon
        # l's prox at a positive slack s is in [0, s]; at s <= 0 it is s (l is 0 there)
        moved = self.margin_loss.prox(np.maximum(outside, 0.0), t)
        return np.where(outside > 0.0, np.sign(v) * (self.epsilon + moved), v)


class EpsilonInsensitive(ResidualLoss):
    """max(0, |r| - eps): L1-loss SVR (LIBLINEAR -s 13)."""

    name = "epsilon_insensitive"
    margin_loss = HINGE_LOSS
    p = 1.0
    piecewise_linear = True
    dual_quadratic = 0.0
    liblinear_solver_type = "L2R_L1LOSS_SVR_DUAL"
    liblinear_types = (13,)


class SquaredEpsilonInsensitive(ResidualLoss):
    """max(0, |r| - eps)^2: L2-loss SVR (LIBLINEAR -s 12 dual, -s 11 primal)."""

    name = "squared_epsilon_insensitive"
    margin_loss = SQUARED_HINGE_LOSS
    p = 2.0
    piecewise_linear = False
    dual_quadratic = 0.25
    liblinear_solver_type = "L2R_L2LOSS_SVR_DUAL"
    liblinear_types = (12, 11)


RESIDUAL_LOSSES = (EpsilonInsensitive, SquaredEpsilonInsensitive)
