"""The loss layer: each loss's value, derivative, conjugate, dual range and proximal operator
against direct numerical definitions, and the declarations every loss must make."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from solvers.losses import LOSSES, ClippedLoss, Loss, get_loss, smoothed_hinge

XI = np.array([-3.0, -1.0, -0.25, 0.0, 0.3, 1.0, 1.9, 2.0, 2.5, 6.0])
CASES = [("hinge", 2.0), ("squared_hinge", 2.0), ("lp", 1.0), ("lp", 1.3), ("lp", 1.7),
         ("lp", 2.0), ("modified_huber", 2.0), ("least_squares", 2.0), ("logistic", 2.0)]


def _direct(name, p, xi):
    pos = np.maximum(xi, 0.0)
    return {"hinge": pos, "squared_hinge": pos ** 2, "lp": pos ** p,
            "modified_huber": np.where(xi <= 2.0, pos ** 2, 4.0 * xi - 4.0),
            "least_squares": xi ** 2, "logistic": np.logaddexp(0.0, xi - 1.0)}[name]


@pytest.mark.parametrize("name, p", CASES)
def test_value_sum_and_derivative(name, p):
    loss = get_loss(name, p)
    np.testing.assert_allclose(loss.value(XI), _direct(name, p, XI), rtol=1e-14, atol=1e-15)
    weight = np.linspace(0.5, 2.0, XI.size)
    assert loss.sum(XI, weight) == pytest.approx(float(weight @ _direct(name, p, XI)),
                                                 rel=1e-14)
    h = 1e-6
    smooth = np.abs(XI) > 1e-3  # away from the kink at 0
    numeric = (_direct(name, p, XI + h) - _direct(name, p, XI - h)) / (2 * h)
    np.testing.assert_allclose(loss.derivative(XI)[smooth], numeric[smooth], rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("name, p", CASES)
def test_conjugate_is_the_supremum(name, p):
    """L*(v) = sup_xi v xi - L(xi) inside the dual range, +inf outside (per unit cost)."""
    loss = get_loss(name, p)
    upper = float(loss.dual_upper(np.ones(1))[0])
    lower = float(loss.dual_lower(np.ones(1))[0])
    inside = [v for v in (-1.5, 0.0, 0.4, 1.0, 2.5, 3.9) if lower <= v <= upper]
    for v in inside:
        def negative(x, v=v):
            return -(v * x - float(_direct(name, p, np.array([x]))[0]))

        result = minimize_scalar(negative, bounds=(-50, 50), method="bounded",
                                 options={"xatol": 1e-12})
        assert float(loss.conjugate(np.array([v]))[0]) == pytest.approx(-result.fun, abs=1e-8)
        assert loss.conjugate_sum(np.array([2.0 * v]), np.array([2.0])) == \
            pytest.approx(2.0 * float(loss.conjugate(np.array([v]))[0]), rel=1e-12, abs=1e-15)
    if np.isfinite(upper):
        assert loss.conjugate_sum(np.array([upper * 1.01]), np.ones(1)) == np.inf
    if np.isfinite(lower):
        assert loss.conjugate_sum(np.array([lower - 0.01]), np.ones(1)) == np.inf


@pytest.mark.parametrize("name, p", CASES + [("lp", 1.05), ("lp", 1.5)])
@pytest.mark.parametrize("t", [1e-3, 0.7, 50.0])
def test_prox_minimizes(name, p, t):
    loss = get_loss(name, p)
    v = np.linspace(-4.0, 9.0, 53)
    u = loss.prox(v, t)
    for vi, ui in zip(v, u, strict=True):
        def f(x, vi=vi):
            return t * float(_direct(name, p, np.array([x]))[0]) + 0.5 * (x - vi) ** 2

        best = minimize_scalar(f, bounds=(vi - 500, vi + 500), method="bounded",
                               options={"xatol": 1e-13})
        assert f(ui) <= best.fun + 1e-10 * max(1.0, abs(best.fun))


def test_prox_takes_one_step_per_example():
    loss = get_loss("lp", 1.5)
    v = np.array([0.5, 2.0, 3.0])
    t = np.array([0.1, 1.0, 10.0])
    np.testing.assert_allclose(loss.prox(v, t), [loss.prox(v[i:i + 1], t[i])[0]
                                                 for i in range(3)])


def test_smoothed_hinge_bounds_the_hinge():
    hinge = get_loss("hinge")
    for tau in (1.0, 0.125, 2.0 ** -10):
        smooth = smoothed_hinge(tau)
        excess = smooth.value(XI) - hinge.value(XI)
        assert np.all(excess >= -1e-15) and np.all(excess <= tau / 4 + 1e-15)
        assert float(smooth.dual_upper(np.ones(1))[0]) == pytest.approx(1.0)


def test_clipped_family_matches_the_coded_losses():
    """The squared hinge and modified Huber are clipped losses: both formulas agree."""
    for name, clipped in (("squared_hinge", ClippedLoss(2.0, 0.0, np.inf)),
                          ("modified_huber", ClippedLoss(2.0, 0.0, 2.0))):
        coded = get_loss(name)
        assert coded == clipped
        np.testing.assert_allclose(coded.value(XI), clipped.value(XI), rtol=1e-14)
        np.testing.assert_allclose(coded.derivative(XI), clipped.derivative(XI), rtol=1e-14)
        np.testing.assert_allclose(coded.prox(XI, 0.3), clipped.prox(XI, 0.3), rtol=1e-14)
        alpha = clipped.derivative(XI)
        assert coded.conjugate_sum(alpha, np.ones_like(alpha)) == \
            pytest.approx(clipped.conjugate_sum(alpha, np.ones_like(alpha)), rel=1e-14)


def test_unknown_loss():
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("cauchy")
    assert set(LOSSES) == {"hinge", "squared_hinge", "lp", "modified_huber", "least_squares",
                           "logistic", "epsilon_insensitive", "squared_epsilon_insensitive"}


@pytest.mark.parametrize("tau", [1.0, 0.01])
def test_smoothed_hinge_prox_minimizes(tau):
    loss = smoothed_hinge(tau)
    for t in (0.05, 3.0):
        for vi in np.linspace(-2.0, 4.0, 41):
            ui = float(loss.prox(np.array([vi]), t)[0])

            def f(x, vi=vi, t=t):
                return t * float(loss.value(np.array([x]))[0]) + 0.5 * (x - vi) ** 2

            best = minimize_scalar(f, bounds=(vi - 50, vi + 50), method="bounded",
                                   options={"xatol": 1e-13})
            assert f(ui) <= best.fun + 1e-11


# -- the declarations every loss makes -------------------------------------------------------


def _incomplete(**leave_out):
    """The namespace of a complete coded loss (the hinge's formulas) without ``leave_out``."""
    namespace = {"name": "incomplete", "slack": "margin", "code": get_loss("hinge").code,
                 "p": 1.0,
                 "has_exponent": False, "piecewise_linear": True, "clipped": False,
                 "smoothing": None, "dual_quadratic": 0.0,
                 "liblinear_solver_type": "L2R_L1LOSS_SVC_DUAL", "liblinear_types": (3,),
                 "margin_sigmoid": None,
                 "dual_lower": lambda self, cost: np.zeros(np.shape(cost)),
                 "dual_upper": lambda self, cost: np.asarray(cost, dtype=float),
                 "conjugate": lambda self, v: np.zeros(np.shape(v))}
    for name in leave_out:
        del namespace[name]
    return namespace


def test_the_namespace_of_the_incomplete_loss_is_complete():
    loss = type("Complete", (Loss,), _incomplete())()
    np.testing.assert_array_equal(loss.value(XI), get_loss("hinge").value(XI))


@pytest.mark.parametrize("declaration", Loss.DECLARATIONS + ("dual_lower", "dual_upper",
                                                            "conjugate"))
def test_a_loss_that_forgets_a_declaration_fails_when_its_class_is_made(declaration):
    """No default stands in for a forgotten declaration (the base class once gave the squared
    hinge's conjugate, so a new loss without its own reported the squared hinge's gap)."""
    with pytest.raises(TypeError, match=f"loss Forgetful does not declare {declaration}"):
        type("Forgetful", (Loss,), _incomplete(**{declaration: None}))


def test_a_loss_without_a_kernel_code_gives_its_own_values():
    namespace = _incomplete() | {"code": None}
    with pytest.raises(TypeError, match="value .it has no kernel code.*prox"):
        type("Uncoded", (Loss,), namespace)
    # an intermediate class says so, and its subclasses complete it
    assert type("Intermediate", (Loss,), {}, abstract=True)


def test_a_clipped_loss_is_its_three_constants():
    """A member of the clipped family declares its name and passes its constants: the rest
    (values, derivatives, proximal steps, dual range, conjugate) is the family's."""

    class HalfHuber(ClippedLoss):
        name = "half_huber"

        def __init__(self):
            super().__init__(1.0, 0.0, 1.0)

    loss = HalfHuber()
    expected = np.where(XI <= 0.0, 0.0, np.where(XI <= 1.0, XI ** 2 / 2.0, XI - 0.5))
    np.testing.assert_allclose(loss.value(XI), expected, rtol=1e-14)
    assert loss.code is None and loss.clipped and loss.dual_quadratic == 0.5
    assert float(loss.dual_upper(np.ones(1))[0]) == 1.0


@pytest.mark.parametrize("name, p", CASES)
def test_the_declarations_are_the_formulas(name, p):
    """What each loss declares about itself holds of its value and conjugate."""
    loss = get_loss(name, p)
    cost = np.array([0.5, 2.0])
    lower, upper = loss.dual_lower(cost), loss.dual_upper(cost)
    alpha = np.array([0.3, 1.1])  # inside every dual range here
    assert np.all(lower <= alpha) and np.all(alpha <= upper)
    if loss.dual_quadratic is not None:  # C_i L*(alpha_i / C_i) = k alpha_i^2 / C_i
        assert loss.conjugate_sum(alpha, cost) == \
            pytest.approx(loss.dual_quadratic * float(np.sum(alpha ** 2 / cost)), rel=1e-14)
    if loss.piecewise_linear:  # L* vanishes on the dual range, L is linear between kinks
        assert loss.conjugate_sum(alpha, cost) == 0.0
        np.testing.assert_allclose(loss.value(2.0 * XI[XI > 0]), 2.0 * loss.value(XI[XI > 0]))
    if loss.clipped:
        np.testing.assert_allclose(
            loss.derivative(XI), loss.kappa * np.clip(XI - loss.xi_lo, 0.0, loss.width))
    if loss.smoothing is not None:  # within tau/4 of the loss, converging to it
        for tau in (1.0, 2.0 ** -8):
            gap = loss.smoothing(tau).value(XI) - loss.value(XI)
            assert np.all(gap >= -1e-15) and np.all(gap <= tau / 4 + 1e-15)
    assert (name == "lp" and 1.0 < p < 2.0) == (type(loss).has_exponent)


def test_the_logistic_conjugate_sum_kernel_is_the_formula():
    """The logistic loss's one-pass entropy kernel equals the generic form over its
    ``conjugate`` (the base class's ``conjugate_sum``) to round-off, at the box's ends, with
    examples of cost 0, and refuses a point outside the box as that does."""
    loss = get_loss("logistic")
    rng = np.random.default_rng(47)
    for n in (1, 7, 270, 5000):
        cost = rng.uniform(0.1, 10.0, n)
        cost[rng.random(n) < 0.1] = 0.0
        alpha = rng.uniform(0.0, 1.0, n) * cost
        ends = rng.random(n)
        alpha[ends < 0.1] = 0.0
        alpha[ends > 0.9] = cost[ends > 0.9]
        assert loss.conjugate_sum(alpha, cost) == \
            pytest.approx(Loss.conjugate_sum(loss, alpha, cost), rel=1e-13, abs=1e-300)
    ones = np.ones(3)
    for outside in (np.array([0.5, 1.0 + 1e-9, 0.2]), np.array([0.5, -1e-9, 0.2])):
        assert loss.conjugate_sum(outside, ones) == np.inf == \
            Loss.conjugate_sum(loss, outside, ones)
    within = np.array([0.5, 1.0 + 1e-13, 0.0])  # the relative 1e-12 slack on the bounds
    assert loss.conjugate_sum(within, ones) == \
        pytest.approx(Loss.conjugate_sum(loss, within, ones), rel=1e-15)


@pytest.mark.parametrize("name", [n for n in LOSSES if n not in ("lp",)])
def test_the_compiled_conjugate_sum_is_the_losss_own(name):
    """``kernels.conjugate_sum`` by code (what a compiled driver's certificate calls) gives
    each coded loss's ``conjugate_sum`` bit for bit, +inf outside the dual range; lp (no
    conjugate kernel) gives NaN, so a compiled driver cannot take it silently."""
    from solvers.losses import kernels

    loss = get_loss(name)
    if loss.code is None or loss.slack != "margin":
        pytest.skip(f"{name}: no kernel code of a margin loss")
    rng = np.random.default_rng(3)
    cost = rng.uniform(0.5, 2.0, 50)
    lower = np.maximum(loss.dual_lower(cost), -3.0)
    upper = np.minimum(loss.dual_upper(cost), 3.0)
    alpha = rng.uniform(lower, upper)
    assert kernels.conjugate_sum(loss.code, loss.p, alpha, cost) == \
        loss.conjugate_sum(alpha, cost)
    if np.isfinite(loss.dual_upper(cost)).all():
        outside = alpha.copy()
        outside[0] = loss.dual_upper(cost)[0] * 1.01
        assert kernels.conjugate_sum(loss.code, loss.p, outside, cost) == np.inf == \
            loss.conjugate_sum(outside, cost)
    lp = get_loss("lp", 1.5)
    assert np.isnan(kernels.conjugate_sum(lp.code, lp.p, np.full(3, 0.5), np.ones(3)))
