"""The parameters of ``interior_point`` (the package docstring maps them to the paper)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solvers.base import SolverParams


class InteriorPointParams(SolverParams):
    """Parameters of ``interior_point``: Gertz & Griffin's MPC method on the hinge loss
    (tau = C).  The defaults are the paper's (section 5, 6.1) except ``start`` (see the
    package docstring: OOQP's default start shifts by a scale-blind 1e3)."""

    solver: Literal["interior_point"] = "interior_point"
    loss: Literal["hinge", "squared_hinge"] = Field(
        "hinge",
        description="hinge: problem (1), the paper's; squared_hinge: the extension with "
                    "penalty C z_i^2 (z free, no u: Omega = V^-1 S + 1/(2C)).")
    bias: Literal["free", "none", "regularized"] = Field(
        "free",
        description="free: the paper's unregularized beta (decision x'w - beta, b = -beta); "
                    "none: no bias (the beta row dropped, M = I + Y'Omega^-1 Y); "
                    "regularized: a constant feature of value bias_scale.")
    linear_solver: Literal["auto", "direct", "pcg"] = Field(
        "auto",
        description="How the normal equations (9a) are solved: direct (M formed with "
                    "weights 1/omega_i and factored by Cholesky, SVM-Direct), pcg (conjugate "
                    "gradients with the SVM preconditioner P_A (13), SVM-PCG), auto (the "
                    "cheaper by a cost model of forming M against the expected PCG work).")
    mu_tolerance: float = Field(
        1e-6, gt=0,
        description="Stop when mu = (v's + u'z) / (2n) is at most this (paper: 1e-6) and the "
                    "residual test holds.")
    residual_tolerance: float = Field(
        1e-6, gt=0,
        description="Stop when ||(r_w, rho_beta, r_z, r_s)||_inf <= this * max_ij |x_ij| "
                    "(paper: 1e-6) and the mu test holds.")
    gap_tolerance: float | None = Field(
        None, gt=0, lt=1,
        description="Instead of the paper's mu and residual tests, stop (converged) once the "
                    "relative duality gap of the records, (P(w, b) - D(alpha)) / P with "
                    "alpha = clip(v, 0, tau) balanced, is at most this: a certificate on the "
                    "objective whatever its scale (None: the paper's tests).")
    max_iter: int = Field(
        100, ge=1,
        description="MPC iterations (one: a factorization or preconditioner, a predictor "
                    "and a corrector solve, one step).")
    start: Literal["scaled", "ooqp"] = Field(
        "scaled",
        description="Starting point: ooqp (OOQP's default: an affine step from "
                    "sqrt(max|x_ij|), then every slack and multiplier shifted by 1e3 + 2 "
                    "violation) or scaled (the same affine step, then the slacks s, z shifted "
                    "to the margin scale 1 and the multipliers v, u to tau's scale).")
    gamma: float = Field(
        100.0, gt=0,
        description="pcg: initial gamma of the selection rule (15), never increased.")
    sigma_exponent: float = Field(
        3.0, gt=0, description="Mehrotra's centering sigma = (mu_aff / mu)^this (OOQP: 3).")
    step_factor: float = Field(
        0.99, gt=0, lt=1,
        description="gamma_f of Mehrotra's step-length heuristic (OOQP: 0.99).")
