"""A loss added here, and nowhere else, is solved by every family that declares it.

Two members of the clipped family L'(xi) = kappa clip(xi - xi_lo, 0, width) with constants of
their own (``docs/extending.md``: a clipped loss is its name and its three constants), put in
the loss catalogue for each test (``LOSS_TYPES``, undone after it).  No solver names them:
mfn declares the clipped family (``solvers.mfn.params.MFN_LOSSES``), so mfn, and only mfn,
declares them (``auto``'s declaration, its candidates' union, follows).  Each declaring family
solves them on heart_scale to the optimum of an independent solver: the problem written as a
QP for cvxpy and Clarabel.
"""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
from shared_data import load

import solvers
from solvers.losses import LOSS_TYPES, ClippedLoss
from solvers.monitor import ListMonitor
from solvers.problems import BinaryProblem


class HuberHinge(ClippedLoss):
    """1/2 xi^2 on (0, 1], xi - 1/2 beyond: a one-sided Huber loss of the slack (kappa = 1,
    xi_lo = 0, width = 1; its dual range is the hinge's [0, C_i])."""

    name = "huber_hinge"

    def __init__(self):
        super().__init__(1.0, 0.0, 1.0)


class WideMarginSquaredHinge(ClippedLoss):
    """1/2 max(0, 3/2 - m)^2: a squared hinge that asks a margin of 3/2 (kappa = 1, xi_lo =
    -1/2, width = inf: unbounded multipliers, so section 4.7's dual KKT check applies, with
    kappa and xi_lo other than the squared hinge's)."""

    name = "wide_margin_squared_hinge"

    def __init__(self):
        super().__init__(1.0, -0.5, math.inf)


NEW_LOSSES = (HuberHinge, WideMarginSquaredHinge)
TOL = 1e-9  # the certified relative gap each family is asked for


@pytest.fixture(params=NEW_LOSSES, ids=lambda cls: cls.name)
def new_loss(request, monkeypatch):
    monkeypatch.setitem(LOSS_TYPES, request.param.name, request.param)
    return request.param()


def _heart_scale():
    data = load("heart_scale")
    return data.X, np.where(data.y == data.classes[1], 1.0, -1.0)


def _declaring(loss_name: str, bias: str) -> list:
    return [spec for spec in solvers.list_solvers()
            if not spec.portfolio and spec.solves.allows("binary", loss_name, bias)]


def reference_objective(problem: BinaryProblem) -> float:
    """The optimum by Clarabel through cvxpy, the clipped loss as the QP
    kappa min {u^2 / 2 + width r : u + r >= xi - xi_lo, 0 <= u <= width, r >= 0}
    (r absent for width = inf), which is L(xi)."""
    loss = problem.loss_function
    X, y = problem.X, problem.y
    n, d = X.shape
    w = cp.Variable(d)
    b = cp.Variable() if problem.bias != "none" else 0.0
    xi = 1.0 - cp.multiply(y, X @ w + problem.effective_bias_scale * b)
    u = cp.Variable(n)
    constraints = [u >= 0]
    penalty = 0.5 * cp.sum_squares(cp.multiply(np.sqrt(problem.cost), u))
    if math.isinf(loss.width):
        constraints.append(u >= xi - loss.xi_lo)
    else:
        r = cp.Variable(n)
        constraints += [u <= loss.width, r >= 0, u + r >= xi - loss.xi_lo]
        penalty += loss.width * (problem.cost @ r)
    objective = 0.5 * cp.sum_squares(w) + loss.kappa * penalty
    if problem.bias == "regularized":
        objective += 0.5 * cp.square(b)
    cp.Problem(cp.Minimize(objective), constraints).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    beta = np.r_[w.value, b.value if problem.bias != "none" else 0.0]
    return problem.objective(beta)


def test_the_families_that_read_the_clipped_declaration_declare_it(new_loss):
    for bias in ("regularized", "none"):
        assert [spec.name for spec in _declaring(new_loss.name, bias)] == ["mfn"]
        assert solvers.get_solver("auto").solves.allows("binary", new_loss.name, bias)
    assert _declaring(new_loss.name, "free") == []  # mfn refuses a free bias, for any loss
    assert new_loss.name not in solvers.get_solver("dual_cd").solves.losses


@pytest.mark.parametrize("bias", ["regularized", "none"])
@pytest.mark.parametrize("C", [0.05, 5.0])
def test_every_declaring_family_solves_it(new_loss, bias, C):
    X, y = _heart_scale()
    problem = BinaryProblem(X, y, C=C, loss=new_loss.name, bias=bias)
    assert problem.loss_function == new_loss
    best = reference_objective(problem)
    for spec in _declaring(new_loss.name, bias):
        solution = spec.run(problem, spec.params_model(C=C, bias=bias, tol=TOL), ListMonitor())
        assert solution.status == "converged", (spec.name, solution.message)
        assert problem.relative_duality_gap(solution.beta) <= TOL, spec.name
        assert solution.objective == pytest.approx(problem.objective(solution.beta), rel=1e-12)
        assert solution.objective == pytest.approx(best, rel=1e-7), spec.name


def test_mfn_follows_it_along_a_c_path(new_loss):
    """The C path shares one engine between its points (``solvers.mfn.run_path``)."""
    X, y = _heart_scale()
    problem = BinaryProblem(X, y, C=0.01, loss=new_loss.name)
    Cs = [0.01, 0.3, 10.0]
    path = solvers.get_solver("mfn").path(problem, Cs, solvers.mfn.MFNParams(tol=TOL))
    for C, solution in zip(Cs, path, strict=True):
        assert solution.objective == pytest.approx(reference_objective(problem.with_C(C)),
                                                   rel=1e-7)


def test_the_dual_kkt_check_follows_the_loss_constants(monkeypatch):
    """Section 4.7 on the wide-margin squared hinge: its multipliers alpha_i = C_i (xi_i +
    1/2)_+ and its slacks xi_i = alpha_i / C_i - 1/2, not the squared hinge's."""
    monkeypatch.setitem(LOSS_TYPES, WideMarginSquaredHinge.name, WideMarginSquaredHinge)
    X, y = _heart_scale()
    problem = BinaryProblem(X, y, C=1.0, loss=WideMarginSquaredHinge.name)
    params = solvers.mfn.MFNParams(dual_kkt_tol=1e-8)
    solution = solvers.mfn.solve(problem, params)
    assert solution.status == "converged", solution.message
    assert solution.extras["dual_kkt_violation"] <= 1e-8
    alpha, _ = solvers.mfn.dual_kkt_violation(problem, solution.beta)
    np.testing.assert_allclose(alpha, problem.dual_from_primal(solution.beta), rtol=1e-12,
                               atol=1e-12)
    assert solution.objective == pytest.approx(reference_objective(problem), rel=1e-7)
