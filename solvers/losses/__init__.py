"""The losses of ``docs/design.md``, one object each, in the slack xi = 1 - m (m = y f(x)).

=================  ==============================  ===================  =====================
loss               L(xi)                           dual range of alpha  L*(v) on that range
=================  ==============================  ===================  =====================
hinge              max(0, xi)                      [0, C_i]             0
squared_hinge      max(0, xi)^2                    [0, inf)             v^2 / 4
lp (1 < p < 2)     max(0, xi)^p                    [0, inf)             (p-1) (v/p)^(p/(p-1))
modified_huber     xi^2 on (0, 2], 4 xi - 4 above  [0, 4 C_i]           v^2 / 4
least_squares      xi^2                            (-inf, inf)          v^2 / 4
smoothed hinge     see :func:`smoothed_hinge`       [0, C_i]             v xi_lo + v^2/(2 kappa)
=================  ==============================  ===================  =====================

(modified Huber: -4 m = 4 xi - 4 for m < -1.)  The dual of every linear binary problem
(``solvers.problems``) is D(alpha) = sum_i alpha_i - 1/2 ||beta(alpha)||^2 - sum_i C_i
L*(alpha_i / C_i), alpha_i in C_i times the range; the KKT map is alpha_i = C_i L'(xi_i).

Each object gives the value, the derivative, a generalized second derivative (``curvature``),
the conjugate term, the dual bounds, the proximal operator of t L (ALM's e-step) and the code
its Numba kernels dispatch on (:mod:`solvers.losses.kernels`).  The squared hinge, the modified
Huber loss and the smoothed hinge form the clipped family L'(xi) = kappa clip(xi - xi_lo, 0,
width) that L2-SVM-MFN's engine runs on (``kappa``, ``xi_lo``, ``width``).

This package owns the losses as one concept: the names (:data:`LOSSES`, in the order of
:data:`LOSS_TYPES`), the rule that names one loss two ways (:func:`canonical`: lp with p = 1
is the hinge, with p = 2 the squared hinge) and the objects (:func:`get_loss`, always the
canonical one, so a kernel never sees lp with p = 1 or 2).  A new loss is one class here
(registered in :data:`LOSS_TYPES`) and one branch in :mod:`solvers.losses.kernels` (its code's
value, derivative and proximal step); a solver family declares whether it solves it
(``solvers.base.Solves``).
"""

from __future__ import annotations

import math

import numpy as np

from solvers.losses import kernels
from solvers.losses.kernels import (
    HINGE,
    LEAST_SQUARES,
    LP,
    MODIFIED_HUBER,
    SQUARED_HINGE,
)

_DUAL_TOL = 1e-12  # relative slack on the dual bounds when checking a dual point


def _as_array(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64)


class Loss:
    """A loss of ``docs/design.md`` as a function of the slack xi = 1 - m."""

    name: str
    code: int
    p: float = 2.0
    #: whether the loss takes the exponent p (lp); the others have theirs fixed
    has_exponent: bool = False
    #: k in C_i L*(alpha_i / C_i) = k alpha_i^2 / C_i on the dual range (the dual is then a
    #: QP: :class:`solvers.problems.binary.DualQP`); None when L* is not quadratic
    dual_quadratic: float | None = 0.25
    #: the ``solver_type`` a LIBLINEAR model file names for this loss (prediction ignores it)
    liblinear_solver_type: str = "L2R_L2LOSS_SVC"

    @classmethod
    def canonical_name(cls, p: float) -> str:
        """The name of the loss this class denotes with exponent ``p`` (itself, but for
        :class:`Lp` at p = 1 or 2)."""
        return cls.name

    def value(self, xi) -> np.ndarray:
        xi = _as_array(xi)
        out = np.empty_like(xi)
        kernels.loss_values(self.code, self.p, xi, out)
        return out

    def margin_value(self, margins) -> np.ndarray:
        """L(1 - m)."""
        return self.value(1.0 - _as_array(margins))

    def sum(self, xi, weight) -> float:
        """sum_i weight_i L(xi_i) in one pass."""
        return float(kernels.loss_sum(self.code, self.p, _as_array(xi), _as_array(weight)))

    def derivative(self, xi) -> np.ndarray:
        """L'(xi) (a subgradient where L has a kink: the right one at xi = 0 is not taken,
        L'(0) = 0)."""
        xi = _as_array(xi)
        out = np.empty_like(xi)
        kernels.loss_derivatives(self.code, self.p, xi, out)
        return out

    def curvature(self, xi) -> np.ndarray:
        """A generalized second derivative L''(xi) (0 on linear pieces)."""
        raise NotImplementedError

    def dual_upper(self, cost) -> np.ndarray:
        """Upper bound of alpha_i (per-example cost C_i); the lower bound is
        :meth:`dual_lower`."""
        return np.full(np.shape(cost), np.inf)

    def dual_lower(self, cost) -> np.ndarray:
        return np.zeros(np.shape(cost))

    def conjugate(self, v) -> np.ndarray:
        """L*(v) = sup_xi (v xi - L(xi)) inside the dual range (callers check the range)."""
        v = _as_array(v)
        return v * v / 4.0

    def conjugate_sum(self, alpha, cost) -> float:
        """sum_i C_i L*(alpha_i / C_i); +inf when alpha leaves the dual range (up to a relative
        1e-12)."""
        alpha = _as_array(alpha)
        cost = _as_array(cost)
        tol = _DUAL_TOL * max(1.0, float(np.max(cost, initial=0.0)))
        if np.any(alpha < self.dual_lower(cost) - tol) or \
                np.any(alpha > self.dual_upper(cost) + tol):
            return math.inf
        positive = cost > 0
        values = np.zeros_like(alpha)
        values[positive] = cost[positive] * self.conjugate(alpha[positive] / cost[positive])
        return float(values.sum())

    def prox(self, v, t) -> np.ndarray:
        """argmin_u t_i L(u) + (u - v_i)^2 / 2, elementwise (``t`` scalar or per example)."""
        v = _as_array(v)
        t = np.broadcast_to(_as_array(t), v.shape)
        out = np.empty_like(v)
        kernels.loss_prox(self.code, self.p, v, np.ascontiguousarray(t), out)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Hinge(Loss):
    name = "hinge"
    code = HINGE
    p = 1.0
    dual_quadratic = 0.0
    liblinear_solver_type = "L2R_L1LOSS_SVC_DUAL"

    def curvature(self, xi) -> np.ndarray:
        return np.zeros(np.shape(xi))

    def dual_upper(self, cost) -> np.ndarray:
        return _as_array(cost)

    def conjugate(self, v) -> np.ndarray:
        return np.zeros(np.shape(v))

    def conjugate_sum(self, alpha, cost) -> float:
        return float(kernels.quadratic_conjugate_sum(_as_array(alpha), _as_array(cost), True,
                                                     1.0, 0.0, math.inf))


class ClippedLoss(Loss):
    """L'(xi) = kappa clip(xi - xi_lo, 0, width): 0 up to xi_lo, quadratic on (xi_lo, xi_lo +
    width), linear beyond (``width`` may be inf).  L(xi) = kappa (u^2 / 2 + width (xi - xi_lo -
    width)_+), u = clip(xi - xi_lo, 0, width); L*(v) = v xi_lo + v^2 / (2 kappa) on
    [0, kappa width]."""

    name = "clipped"
    code = -1

    def __init__(self, kappa: float, xi_lo: float, width: float):
        self.kappa = float(kappa)
        self.xi_lo = float(xi_lo)
        self.width = float(width)

    def __eq__(self, other) -> bool:
        return isinstance(other, ClippedLoss) and (self.kappa, self.xi_lo, self.width) == \
            (other.kappa, other.xi_lo, other.width)

    def __hash__(self) -> int:
        return hash((self.kappa, self.xi_lo, self.width))

    def __repr__(self) -> str:
        return f"ClippedLoss(kappa={self.kappa:g}, xi_lo={self.xi_lo:g}, width={self.width:g})"

    def value(self, xi) -> np.ndarray:
        xi = _as_array(xi)
        u = np.clip(xi - self.xi_lo, 0.0, self.width)
        value = 0.5 * u * u
        if np.isfinite(self.width):
            value += self.width * np.maximum(xi - self.xi_lo - self.width, 0.0)
        return self.kappa * value

    def sum(self, xi, weight) -> float:
        return self.kappa * float(kernels.clipped_loss_sum(_as_array(xi), _as_array(weight),
                                                           self.xi_lo, self.width))

    def derivative(self, xi) -> np.ndarray:
        return self.kappa * np.clip(_as_array(xi) - self.xi_lo, 0.0, self.width)

    def curvature(self, xi) -> np.ndarray:
        xi = _as_array(xi)
        inside = (xi > self.xi_lo) & (xi < self.xi_lo + self.width)
        return np.where(inside, self.kappa, 0.0)

    def dual_upper(self, cost) -> np.ndarray:
        return self.kappa * self.width * _as_array(cost)

    def conjugate(self, v) -> np.ndarray:
        v = _as_array(v)
        return v * self.xi_lo + v * v / (2.0 * self.kappa)

    def conjugate_sum(self, alpha, cost) -> float:
        return float(kernels.quadratic_conjugate_sum(
            _as_array(alpha), _as_array(cost), True, self.kappa * self.width, self.xi_lo,
            2.0 * self.kappa))

    def prox(self, v, t) -> np.ndarray:
        v = _as_array(v)
        t = np.broadcast_to(_as_array(t), v.shape)
        lo, hi, k = self.xi_lo, self.xi_lo + self.width, self.kappa
        quadratic = (v + t * k * lo) / (1.0 + t * k)
        linear = v - t * k * self.width
        out = np.where(v <= lo, v, quadratic)
        beyond = quadratic >= hi
        if np.any(beyond):
            out = np.where(beyond, np.maximum(linear, hi), out)
        return out


class _CodedClippedLoss(ClippedLoss):
    """A clipped loss with a code of its own: its values, derivatives and proximal operator
    come from the coded kernels (one pass, no temporaries)."""

    value = Loss.value
    sum = Loss.sum
    derivative = Loss.derivative
    prox = Loss.prox


class SquaredHinge(_CodedClippedLoss):
    name = "squared_hinge"
    code = SQUARED_HINGE

    def __init__(self):
        super().__init__(2.0, 0.0, math.inf)


class ModifiedHuber(_CodedClippedLoss):
    name = "modified_huber"
    code = MODIFIED_HUBER

    def __init__(self):
        super().__init__(2.0, 0.0, 2.0)


class LeastSquares(Loss):
    name = "least_squares"
    code = LEAST_SQUARES

    def curvature(self, xi) -> np.ndarray:
        return np.full(np.shape(xi), 2.0)

    def dual_lower(self, cost) -> np.ndarray:
        return np.full(np.shape(cost), -np.inf)

    def conjugate_sum(self, alpha, cost) -> float:
        return float(kernels.quadratic_conjugate_sum(_as_array(alpha), _as_array(cost), False,
                                                     math.inf, 0.0, 4.0))


class Lp(Loss):
    """max(0, xi)^p, 1 <= p <= 2 (Nie et al.): p = 1 is the hinge, p = 2 the squared hinge."""

    name = "lp"
    code = LP
    has_exponent = True
    dual_quadratic = None

    #: the losses lp is at the ends of its range (:func:`canonical`)
    ALIASES = {1.0: "hinge", 2.0: "squared_hinge"}

    def __init__(self, p: float):
        if not 1.0 <= p <= 2.0:
            raise ValueError("p must lie in [1, 2]")
        if p in self.ALIASES:
            raise ValueError(f"lp with p = {p:g} is {self.ALIASES[p]!r}: use get_loss")
        self.p = float(p)

    @classmethod
    def canonical_name(cls, p: float) -> str:
        return cls.ALIASES.get(float(p), cls.name)

    def __repr__(self) -> str:
        return f"Lp(p={self.p:g})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Lp) and other.p == self.p

    def __hash__(self) -> int:
        return hash(("lp", self.p))

    def curvature(self, xi) -> np.ndarray:
        xi = _as_array(xi)
        positive = np.maximum(xi, 0.0)
        with np.errstate(divide="ignore"):
            return np.where(xi > 0, self.p * (self.p - 1.0) * positive ** (self.p - 2.0), 0.0)

    def conjugate(self, v) -> np.ndarray:
        v = _as_array(v)
        p = self.p
        return (p - 1.0) * (np.maximum(v, 0.0) / p) ** (p / (p - 1.0))


def smoothed_hinge(tau: float) -> ClippedLoss:
    """tau/2 L_h(xi/tau + 1) of Keerthi & DeCoste section 6: 0 below -tau, (xi + tau)^2 /
    (4 tau) on (-tau, tau), xi above; it exceeds the hinge by at most tau/4, and its dual range
    is the hinge's [0, C_i]."""
    return ClippedLoss(kappa=1.0 / (2.0 * tau), xi_lo=-tau, width=2.0 * tau)


HINGE_LOSS = Hinge()
SQUARED_HINGE_LOSS = SquaredHinge()
MODIFIED_HUBER_LOSS = ModifiedHuber()
LEAST_SQUARES_LOSS = LeastSquares()

#: Every loss of ``docs/design.md`` by name, in the order the catalogue lists them.  A loss without
#: an exponent has one instance, which :func:`get_loss` returns.
LOSS_TYPES: dict[str, type[Loss]] = {
    cls.name: cls for cls in (Hinge, SquaredHinge, Lp, ModifiedHuber, LeastSquares)
}
LOSSES = tuple(LOSS_TYPES)
_INSTANCES: dict[str, Loss] = {
    loss.name: loss
    for loss in (HINGE_LOSS, SQUARED_HINGE_LOSS, MODIFIED_HUBER_LOSS, LEAST_SQUARES_LOSS)
}


def loss_type(name: str) -> type[Loss]:
    try:
        return LOSS_TYPES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; expected one of {', '.join(LOSSES)}") \
            from None


def canonical(name: str, p: float | None = None) -> tuple[str, float]:
    """The one name and exponent of the loss ``(name, p)`` denotes: lp with p = 1 is the
    hinge, with p = 2 the squared hinge (the only loss named two ways); ``p`` matters for
    lp alone (1 <= p <= 2, default 2) and is the loss's own exponent otherwise.  Every
    comparison of losses (a solver's declaration, a problem key, ``auto``) goes through here."""
    cls = loss_type(name)
    if not cls.has_exponent:
        return cls.name, cls.p
    p = 2.0 if p is None else float(p)
    if not 1.0 <= p <= 2.0:
        raise ValueError("p must lie in [1, 2]")
    name = cls.canonical_name(p)
    return name, (p if name == cls.name else LOSS_TYPES[name].p)


def get_loss(name: str, p: float = 2.0) -> Loss:
    """The loss object of a ``docs/design.md`` loss name (``p`` for ``lp``), canonical: lp with
    p = 1 or 2 gives the hinge or the squared hinge object."""
    name, p = canonical(name, p)
    if name in _INSTANCES:
        return _INSTANCES[name]
    return LOSS_TYPES[name](p)


__all__ = [
    "HINGE_LOSS",
    "LEAST_SQUARES_LOSS",
    "LOSSES",
    "LOSS_TYPES",
    "MODIFIED_HUBER_LOSS",
    "SQUARED_HINGE_LOSS",
    "ClippedLoss",
    "Hinge",
    "LeastSquares",
    "Loss",
    "Lp",
    "ModifiedHuber",
    "SquaredHinge",
    "canonical",
    "get_loss",
    "loss_type",
    "smoothed_hinge",
]
