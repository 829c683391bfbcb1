"""The losses of ``docs/design.md``, one object each, in the slack xi = 1 - m (m = y f(x)).

=================  ==============================  ===================  ============================
loss               L(xi)                           dual range of alpha  L*(v) on that range
=================  ==============================  ===================  ============================
hinge              max(0, xi)                      [0, C_i]             0
squared_hinge      max(0, xi)^2                    [0, inf)             v^2 / 4
lp (1 < p < 2)     max(0, xi)^p                    [0, inf)             (p-1) (v/p)^(p/(p-1))
modified_huber     xi^2 on (0, 2], 4 xi - 4 above  [0, 4 C_i]           v^2 / 4
least_squares      xi^2                            (-inf, inf)          v^2 / 4
smoothed hinge     see :func:`smoothed_hinge`       [0, C_i]             v xi_lo + v^2/(2 kappa)
logistic           log(1 + exp(xi - 1))            [0, C_i]             v + v log v + (1-v) log(1-v)
=================  ==============================  ===================  ============================

(modified Huber: -4 m = 4 xi - 4 for m < -1; logistic: log(1 + exp(-m)).)  The dual of every
linear binary problem (``solvers.problems``) is D(alpha) = sum_i alpha_i - 1/2
||beta(alpha)||^2 - sum_i C_i L*(alpha_i / C_i), alpha_i in C_i times the range; the KKT map
is alpha_i = C_i L'(xi_i).

Each object gives the value, the derivative, the conjugate term, the dual bounds, the
proximal operator of t L (ALM's e-step) and what the solvers and the certificates read of it
(:class:`Loss`: the code its Numba kernels dispatch on (:mod:`solvers.losses.kernels`), its
exponent, whether it is piecewise linear, whether it belongs to the clipped family, its
smoothing, whether its dual is a QP, its LIBLINEAR solver type).  Every loss declares each of
them itself: :class:`Loss` has no defaults, and a class that leaves one out fails when it is
made.  The squared hinge, the modified Huber loss and the smoothed hinge form the clipped
family L'(xi) = kappa clip(xi - xi_lo, 0, width) that L2-SVM-MFN's engine runs on (``kappa``,
``xi_lo``, ``width``; :class:`ClippedLoss`).

The regression losses, epsilon_insensitive and squared_epsilon_insensitive, take the residual
r = y - f(x) instead of a slack (``Loss.slack = "residual"``): each is two terms of the hinge
or the squared hinge, of slacks r - eps and -r - eps, with a signed dual variable
(:class:`ResidualLoss`).

This package owns the losses as one concept: the names (:data:`LOSSES`, in the order of
:data:`LOSS_TYPES`), the rule that names one loss two ways (:func:`canonical`: lp with p = 1
is the hinge, with p = 2 the squared hinge), the objects (:func:`get_loss`, always the
canonical one, so a kernel never sees lp with p = 1 or 2) and the sets of losses a solver
family names by a declaration instead of by their names (:class:`LossFamily`).  What a new
loss takes is in ``docs/extending.md``.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solvers.losses import kernels
from solvers.losses.kernels import (
    HINGE,
    LEAST_SQUARES,
    LOGISTIC,
    LP,
    MODIFIED_HUBER,
    SQUARED_HINGE,
)

_DUAL_TOL = 1e-12  # relative slack on the dual bounds when checking a dual point


def _as_array(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64)


class Loss(abc.ABC):
    """A loss of ``docs/design.md`` as a function of the slack xi = 1 - m.

    Every loss declares, as class attributes (:data:`DECLARATIONS`; an intermediate class may
    give some for its subclasses, this base gives none):

    * ``name``: its name in :data:`LOSS_TYPES` (and in a solver's declaration);
    * ``slack``: what its argument is: "margin", the slack xi = 1 - y f(x) of a classifier
      (every loss of the table above), or "residual", r = y - f(x) of a regression
      (:class:`ResidualLoss`: its dual variable is signed, b_i in [-U_i, U_i]);
    * ``code``: the code its Numba kernels dispatch on (:mod:`solvers.losses.kernels`), or
      None for a loss without a branch there, which then gives :meth:`value`, :meth:`sum`,
      :meth:`derivative` and :meth:`prox` itself (a kernel taking a code refuses it);
    * ``p`` and ``has_exponent``: its exponent, and whether it takes one (lp) or has it fixed;
    * ``piecewise_linear``: L is piecewise linear (the hinge), so L* is 0 on the dual range
      and the primal is an LP-type QP with slack bounds (the interior point's problem (1));
    * ``clipped``: it belongs to the clipped family L'(xi) = kappa clip(xi - xi_lo, 0, width)
      and has ``kappa``, ``xi_lo`` and ``width`` (:class:`ClippedLoss`; mfn's engine runs on
      it);
    * ``smoothing``: None, or tau -> a clipped loss that tends to this one as tau -> 0 (the
      hinge's smoothed hinge; mfn reaches the loss by that homotopy, section 6);
    * ``dual_quadratic``: k in C_i L*(alpha_i / C_i) = k alpha_i^2 / C_i on the dual range (the
      dual is then a QP: :class:`solvers.problems.binary.DualQP`), None when it is not;
    * ``liblinear_solver_type``: the ``solver_type`` a LIBLINEAR model file names for it
      (LIBLINEAR's predict reads the weights alone; a loss LIBLINEAR has not names its
      L2R_L2LOSS_SVC, a classifier);
    * ``liblinear_types``: LIBLINEAR's ``-s`` types that train its L2-regularized binary
      problem, its dual coordinate descent first (() when LIBLINEAR has not the loss; the
      benchmarks' anchors);
    * ``margin_sigmoid``: None, or (A, B) when the loss is the negative log-likelihood of a
      sigmoid of the score f, P(y = +1 | x) = 1 / (1 + exp(A f + B)) (the logistic loss:
      (-1, 0)): a model of it has these probabilities of its own, in the form of Platt's
      sigmoids (``solvers.calibration``), and no Platt step is fitted.

    and, as methods, its dual range (:meth:`dual_lower`, :meth:`dual_upper`) and its conjugate
    (:meth:`conjugate`).  A class that misses one fails when it is made, naming what it misses
    (as a C++ class with a pure virtual function left cannot be instantiated: LIBLINEAR's
    ``function``); ``abstract=True`` in the class statement marks an intermediate class.
    """

    #: the class attributes every loss declares (the class docstring says what each means)
    DECLARATIONS = ("name", "slack", "code", "p", "has_exponent", "piecewise_linear", "clipped",
                    "smoothing", "dual_quadratic", "liblinear_solver_type", "liblinear_types",
                    "margin_sigmoid")
    #: what a loss without a kernel code gives itself (the methods here run its code's kernels)
    CODED_METHODS = ("value", "sum", "derivative", "prox")

    name: str
    slack: str
    code: int | None
    p: float
    has_exponent: bool
    piecewise_linear: bool
    clipped: bool
    smoothing: Callable[[float], ClippedLoss] | None
    dual_quadratic: float | None
    liblinear_solver_type: str
    liblinear_types: tuple[int, ...]
    margin_sigmoid: tuple[float, float] | None

    def __init_subclass__(cls, abstract: bool = False, **kwargs):
        super().__init_subclass__(**kwargs)
        if abstract:
            return
        missing = [name for name in cls.DECLARATIONS if not hasattr(cls, name)]
        missing += [name for name, member in vars(Loss).items()
                    if getattr(member, "__isabstractmethod__", False)
                    and getattr(getattr(cls, name), "__isabstractmethod__", False)]
        if getattr(cls, "code", 0) is None:
            missing += [f"{name} (it has no kernel code)" for name in cls.CODED_METHODS
                        if getattr(cls, name) is getattr(Loss, name)]
        if missing:
            raise TypeError(f"loss {cls.__name__} does not declare {', '.join(missing)}: "
                            f"every loss gives each (solvers.losses.Loss)")

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
        """L''(xi), the generalized one where L' has a kink (a primal Newton method's
        Hessian weights, ``BinaryProblem.curvature``); NaN where the loss has none (lp)."""
        if self.code is None:
            raise ValueError(f"loss {self.name!r} has no kernel code: no curvature kernel")
        xi = _as_array(xi)
        out = np.empty_like(xi)
        kernels.loss_curvatures(self.code, self.p, xi, out)
        return out

    @abc.abstractmethod
    def dual_upper(self, cost) -> np.ndarray:
        """Upper bound of alpha_i (per-example cost C_i); the lower bound is
        :meth:`dual_lower`."""

    @abc.abstractmethod
    def dual_lower(self, cost) -> np.ndarray:
        """Lower bound of alpha_i (per-example cost C_i)."""

    @abc.abstractmethod
    def conjugate(self, v) -> np.ndarray:
        """L*(v) = sup_xi (v xi - L(xi)) inside the dual range (callers check the range)."""

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
        if positive.all():  # the usual case: the same values without the masked copies
            return float((cost * self.conjugate(alpha / cost)).sum())
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
    slack = "margin"
    code = HINGE
    p = 1.0
    has_exponent = False
    piecewise_linear = True
    clipped = False
    dual_quadratic = 0.0
    liblinear_solver_type = "L2R_L1LOSS_SVC_DUAL"
    liblinear_types = (3,)
    margin_sigmoid = None

    @staticmethod
    def smoothing(tau: float) -> ClippedLoss:
        """The smoothed hinge of mfn's homotopy (:func:`smoothed_hinge`)."""
        return smoothed_hinge(tau)

    def dual_lower(self, cost) -> np.ndarray:
        return np.zeros(np.shape(cost))

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
    [0, kappa width].

    The family's values, derivatives, proximal steps and conjugates come from these
    formulas (and the clipped kernels of :mod:`solvers.losses.kernels`), so a member is its
    three constants: a subclass that passes them to ``__init__`` and declares its name is a
    loss mfn solves (``docs/extending.md``)."""

    name = "clipped"
    slack = "margin"
    code = None
    p = 2.0  # the power of its quadratic piece (no kernel reads it: the family has no code)
    has_exponent = False
    piecewise_linear = False
    clipped = True
    smoothing = None
    liblinear_solver_type = "L2R_L2LOSS_SVC"
    liblinear_types = ()
    margin_sigmoid = None

    def __init__(self, kappa: float, xi_lo: float, width: float):
        self.kappa = float(kappa)
        self.xi_lo = float(xi_lo)
        self.width = float(width)

    @property
    def dual_quadratic(self) -> float | None:
        """1 / (2 kappa) when L* has no linear term (xi_lo = 0), else None (the smoothed
        hinge: ``DualQP`` has no linear term of its own)."""
        return 1.0 / (2.0 * self.kappa) if self.xi_lo == 0.0 else None

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

    def dual_lower(self, cost) -> np.ndarray:
        return np.zeros(np.shape(cost))

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


class _CodedClippedLoss(ClippedLoss, abstract=True):
    """A clipped loss with a code of its own: its values, derivatives and proximal operator
    come from the coded kernels (one pass, no temporaries).  Its subclasses declare the
    code."""

    value = Loss.value
    sum = Loss.sum
    derivative = Loss.derivative
    prox = Loss.prox


class SquaredHinge(_CodedClippedLoss):
    name = "squared_hinge"
    code = SQUARED_HINGE
    liblinear_solver_type = "L2R_L2LOSS_SVC"
    liblinear_types = (1, 2)

    def __init__(self):
        super().__init__(2.0, 0.0, math.inf)


class ModifiedHuber(_CodedClippedLoss):
    name = "modified_huber"
    code = MODIFIED_HUBER
    liblinear_solver_type = "L2R_L2LOSS_SVC"
    liblinear_types = ()

    def __init__(self):
        super().__init__(2.0, 0.0, 2.0)


class LeastSquares(Loss):
    name = "least_squares"
    slack = "margin"
    code = LEAST_SQUARES
    p = 2.0
    has_exponent = False
    piecewise_linear = False
    clipped = False
    smoothing = None
    dual_quadratic = 0.25
    liblinear_solver_type = "L2R_L2LOSS_SVC"
    liblinear_types = ()
    margin_sigmoid = None

    def dual_lower(self, cost) -> np.ndarray:
        return np.full(np.shape(cost), -np.inf)

    def dual_upper(self, cost) -> np.ndarray:
        return np.full(np.shape(cost), np.inf)

    def conjugate(self, v) -> np.ndarray:
        v = _as_array(v)
        return v * v / 4.0

    def conjugate_sum(self, alpha, cost) -> float:
        return float(kernels.quadratic_conjugate_sum(_as_array(alpha), _as_array(cost), False,
                                                     math.inf, 0.0, 4.0))


class Lp(Loss):
    """max(0, xi)^p, 1 <= p <= 2 (Nie et al.): p = 1 is the hinge, p = 2 the squared hinge."""

    name = "lp"
    slack = "margin"
    code = LP
    p = 2.0  # the default exponent; each object has its own
    has_exponent = True
    piecewise_linear = False
    clipped = False
    smoothing = None
    dual_quadratic = None
    liblinear_solver_type = "L2R_L2LOSS_SVC"
    liblinear_types = ()
    margin_sigmoid = None

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

    def dual_lower(self, cost) -> np.ndarray:
        return np.zeros(np.shape(cost))

    def dual_upper(self, cost) -> np.ndarray:
        return np.full(np.shape(cost), np.inf)

    def conjugate(self, v) -> np.ndarray:
        v = _as_array(v)
        p = self.p
        return (p - 1.0) * (np.maximum(v, 0.0) / p) ** (p / (p - 1.0))


class Logistic(Loss):
    """log(1 + exp(-m)) = log(1 + exp(xi - 1)): logistic regression, LIBLINEAR's ``-s 0`` (primal
    Newton) and ``-s 7`` (Yu, Huang & Lin's dual coordinate descent), the same C.

    L'(xi) = sigma(xi - 1) = sigma(-m) in (0, 1), so the dual range is [0, C_i] (the KKT map
    alpha_i = C_i sigma(-m_i) lies inside it at every point) and L*(v) = v + v log v + (1 - v)
    log(1 - v) on [0, 1] (0 log 0 = 0): C_i L*(alpha_i / C_i) = alpha_i + alpha_i log alpha_i
    + (C_i - alpha_i) log(C_i - alpha_i) - C_i log C_i, whose linear alpha_i cancels the
    dual's sum_i alpha_i, leaving LIBLINEAR's entropy dual (``solve_l2r_lr_dual``).  Not
    piecewise linear, not clipped, and its dual is not a QP; its scores are log-odds, so its
    models predict P(y = +1 | x) = sigma(f(x)) (``margin_sigmoid`` = (-1, 0))."""

    name = "logistic"
    slack = "margin"
    code = LOGISTIC
    p = 1.0  # its growth as xi -> inf (no kernel reads it: no exponent)
    has_exponent = False
    piecewise_linear = False
    clipped = False
    smoothing = None
    dual_quadratic = None
    liblinear_solver_type = "L2R_LR"
    liblinear_types = (7, 0)
    margin_sigmoid = (-1.0, 0.0)

    def dual_lower(self, cost) -> np.ndarray:
        return np.zeros(np.shape(cost))

    def dual_upper(self, cost) -> np.ndarray:
        return _as_array(cost)

    def conjugate(self, v) -> np.ndarray:
        v = np.clip(_as_array(v), 0.0, 1.0)
        u = 1.0 - v
        with np.errstate(divide="ignore", invalid="ignore"):
            return v + np.where(v > 0.0, v * np.log(v), 0.0) + \
                np.where(u > 0.0, u * np.log(u), 0.0)

    def conjugate_sum(self, alpha, cost) -> float:
        return float(kernels.entropy_conjugate_sum(_as_array(alpha), _as_array(cost)))


def smoothed_hinge(tau: float) -> ClippedLoss:
    """tau/2 L_h(xi/tau + 1) of Keerthi & DeCoste section 6: 0 below -tau, (xi + tau)^2 /
    (4 tau) on (-tau, tau), xi above; it exceeds the hinge by at most tau/4, and its dual range
    is the hinge's [0, C_i]."""
    return ClippedLoss(kappa=1.0 / (2.0 * tau), xi_lo=-tau, width=2.0 * tau)


HINGE_LOSS = Hinge()
SQUARED_HINGE_LOSS = SquaredHinge()
MODIFIED_HUBER_LOSS = ModifiedHuber()
LEAST_SQUARES_LOSS = LeastSquares()

# -- the residual losses of regression (Ho & Lin, JMLR 2012, eqs. (2)-(3); LIBLINEAR -s 11-13) -
#
# L(r) of the residual r = y - f(x): max(0, |r| - eps) (dual range [-C_i, C_i], C L*(b/C) =
# eps |b|) and its square ((-inf, inf), eps |b| + b^2/(4C)).  For eps >= 0, L(r) = l(r - eps)
# + l(-r - eps) with l the hinge or the squared hinge (``margin_loss``; at most one term is
# positive): an example is two margin terms, slack (y - eps) - f(x) with label +1 and (-y -
# eps) + f(x) with label -1, and its dual variable is signed, b_i = alpha+_i - alpha-_i (Ho &
# Lin's beta).  The problem is :class:`solvers.problems.RegressionProblem`; mfn runs its engine
# on the 2n terms, dual_cd works on b.

#: LIBLINEAR's default -p
DEFAULT_EPSILON = 0.1


class ResidualLoss(Loss, abstract=True):
    """max(0, |r| - epsilon)^p as two terms of ``margin_loss`` (the comment above).  A
    subclass declares its name, its margin loss and LIBLINEAR's names."""

    slack = "residual"
    code = None  # its value, sum, derivative and prox are its margin loss's, twice
    has_exponent = False
    clipped = False
    smoothing = None
    margin_sigmoid = None
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


#: Every loss of ``docs/design.md`` by name, in the order the catalogue lists them.  A loss
#: without an exponent has one instance, which :func:`get_loss` returns.  A loss is in the
#: catalogue by its entry here (a test registers one of its own for its duration: ``tests/
#: test_new_loss.py``).
LOSS_TYPES: dict[str, type[Loss]] = {
    cls.name: cls for cls in (Hinge, SquaredHinge, Lp, ModifiedHuber, LeastSquares, Logistic)
}
LOSS_TYPES.update((cls.name, cls) for cls in RESIDUAL_LOSSES)
LOSSES = tuple(LOSS_TYPES)
#: the one instance of each loss class without an exponent that :func:`get_loss` has made
_INSTANCES: dict[type[Loss], Loss] = {
    type(loss): loss
    for loss in (HINGE_LOSS, SQUARED_HINGE_LOSS, MODIFIED_HUBER_LOSS, LEAST_SQUARES_LOSS)
}


def loss_type(name: str) -> type[Loss]:
    try:
        return LOSS_TYPES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; expected one of {', '.join(LOSS_TYPES)}") \
            from None


def is_residual(name) -> bool:
    """Whether the loss named ``name`` is a regression loss of the residual (``Loss.slack``);
    False for anything not in the catalogue."""
    cls = LOSS_TYPES.get(name) if isinstance(name, str) else None
    return cls is not None and cls.slack == "residual"


def takes_exponent(name) -> bool:
    """Whether the loss named ``name`` takes an exponent (lp: ``Loss.has_exponent``); False
    for anything not in the catalogue."""
    cls = LOSS_TYPES.get(name) if isinstance(name, str) else None
    return cls is not None and cls.has_exponent


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


def get_loss(name: str, p: float = 2.0, epsilon: float | None = None) -> Loss:
    """The loss object of a ``docs/design.md`` loss name (``p`` for ``lp``, ``epsilon`` for a
    residual loss, default LIBLINEAR's 0.1), canonical: lp with p = 1 or 2 gives the hinge or
    the squared hinge object."""
    name, p = canonical(name, p)
    cls = LOSS_TYPES[name]
    if cls.has_exponent:
        return cls(p)
    if cls.slack == "residual" and epsilon is not None:
        return cls(epsilon)
    if cls not in _INSTANCES:
        _INSTANCES[cls] = cls()
    return _INSTANCES[cls]


@dataclass(frozen=True)
class LossFamily:
    """The losses that make a declaration: how a solver family whose engine runs on what a
    loss declares, not on which loss it is, names the losses it solves
    (``solvers.base.Solves.product`` takes one in place of a tuple of names; mfn's is the
    clipped family).  A loss in the catalogue that makes the declaration is then solved
    without an edit to the family.

    ``member`` reads a loss class's declarations; ``order`` names members first, in the order
    a parameter model offers them (its default first), the others following in the
    catalogue's order; ``description`` says what the members are, for a refusal."""

    description: str
    member: Callable[[type[Loss]], bool]
    order: tuple[str, ...] = ()

    def __post_init__(self):
        strangers = [name for name in self.order if not self.member(loss_type(name))]
        if strangers:
            raise TypeError(f"{', '.join(strangers)} not of {self.description}")

    def names(self) -> tuple[str, ...]:
        """The members in the catalogue now, ``order`` first."""
        rest = (name for name, cls in LOSS_TYPES.items() if self.member(cls))
        return tuple(dict.fromkeys((*self.order, *rest)))


__all__ = [
    "HINGE_LOSS",
    "LEAST_SQUARES_LOSS",
    "LOSSES",
    "LOSS_TYPES",
    "MODIFIED_HUBER_LOSS",
    "SQUARED_HINGE_LOSS",
    "ClippedLoss",
    "DEFAULT_EPSILON",
    "EpsilonInsensitive",
    "Hinge",
    "LeastSquares",
    "Loss",
    "Logistic",
    "LossFamily",
    "Lp",
    "ModifiedHuber",
    "ResidualLoss",
    "SquaredEpsilonInsensitive",
    "SquaredHinge",
    "canonical",
    "get_loss",
    "is_residual",
    "loss_type",
    "smoothed_hinge",
    "takes_exponent",
]
