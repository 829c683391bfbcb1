"""The parameters of ``interior_point`` (the package docstring maps them to the paper)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from solvers import config
from solvers.base import SolverParams, Solves, gap_tolerance_field
from solvers.problems.mpc_rows import MATRIX_FREE

#: What interior_point solves: the hinge-loss QP (1) of the paper with its free bias, and
#: beside it no bias, the regularized bias, and the squared hinge (the extension).
INTERIOR_POINT_SOLVES = Solves.product(("binary", "ovr", "ovo"), ("hinge", "squared_hinge"),
                                       ("free", "none", "regularized"))


class InteriorPointParams(SolverParams):
    """Parameters of ``interior_point``: Gertz & Griffin's MPC method on the hinge loss
    (tau = C).  The defaults are the paper's (section 5, 6.1) except ``start`` (see the
    package docstring: OOQP's default start shifts by a scale-blind 1e3) and the stopping
    rule: every solver's certified gap ``tol`` (``stop_rule="paper"``: the paper's tests)."""

    solves: ClassVar[Solves] = INTERIOR_POINT_SOLVES
    renamed_fields: ClassVar[dict[str, str]] = {
        "mu_tolerance": "mu_tol",
        "residual_tolerance": "residual_tol",
        "start": "cold_start",  # alm's cold_start; start= is the warm start (WarmStart)
    }

    solver: Literal["interior_point"] = "interior_point"
    multiclass: INTERIOR_POINT_SOLVES.choices("multiclass") = (
        INTERIOR_POINT_SOLVES.multiclass_field())
    loss: INTERIOR_POINT_SOLVES.choices("loss") = Field(
        "hinge",
        description="hinge: problem (1), the paper's; squared_hinge: the extension with "
                    "penalty C z_i^2 (z free, no u: Omega = V^-1 S + 1/(2C)).")
    bias: INTERIOR_POINT_SOLVES.choices("bias") = Field(
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
    mu_tol: float = Field(
        1e-6, gt=0,
        description="stop_rule='paper': stop when mu = (v's + u'z) / (2n) is at most this "
                    "(paper: 1e-6) and the residual test holds.")
    residual_tol: float = Field(
        1e-6, gt=0,
        description="stop_rule='paper': stop when ||(r_w, rho_beta, r_z, r_s)||_inf <= this "
                    "* max_ij |x_ij| (paper: 1e-6) and the mu test holds.")
    tol: float = gap_tolerance_field()
    stop_rule: Literal["gap", "paper"] = Field(
        "gap",
        description="gap: stop on tol (a certified relative duality gap, scale-free); paper: "
                    "stop on the paper's mu and residual tests (mu_tol, residual_tol; "
                    "absolute, section 5).")
    max_iter: int = Field(
        100, ge=1,
        description="MPC iterations (one: a factorization or preconditioner, a predictor "
                    "and a corrector solve, one step).")
    cold_start: Literal["scaled", "ooqp"] = Field(
        "scaled",
        description="Starting point without a warm start: ooqp (OOQP's default: an affine "
                    "step from sqrt(max|x_ij|), then every slack and multiplier shifted by "
                    "1e3 + 2 violation) or scaled (the same affine step, then the slacks s, z "
                    "shifted to the margin scale 1 and the multipliers v, u to tau's scale).")
    pcg_gamma: float = Field(
        100.0, gt=0,
        description="pcg: initial gamma of the selection rule (15), never increased (named "
                    "pcg_gamma: gamma is the kernel's, as in every solver).")
    sigma_exponent: float = Field(
        3.0, gt=0, description="Mehrotra's centering sigma = (mu_aff / mu)^this (OOQP: 3).")
    step_factor: float = Field(
        0.99, gt=0, lt=1,
        description="gamma_f of Mehrotra's step-length heuristic (OOQP: 0.99).")

    def rows_refusal(self, capabilities: frozenset, n_features: int) -> str | None:
        """Why the MPC loop does not run these parameters over rows that offer only
        ``capabilities`` (:mod:`solvers.problems.mpc_rows`: a distributed dataset's
        partitions offer none), or None.  Without a matrix-free M the normal equations are
        formed and factorized dense, by ``direct`` (``auto`` runs it)."""
        if MATRIX_FREE in capabilities:
            return None
        if self.linear_solver == "pcg":
            return ("interior_point on distributed data: linear_solver='pcg' is not "
                    "distributed (the SVM preconditioner's rule (15) selects rows by a global "
                    "threshold and each PCG iteration would be two rounds); use 'direct' (one "
                    "(d+1) x (d+1) reduction per MPC iteration) or 'auto'")
        side = n_features + 1
        if side > config.INTERIOR_POINT_MAX_DENSE_PARAMS:
            return (f"interior_point on distributed data forms and factorizes the dense "
                    f"{side} x {side} normal equations on the driver; at most "
                    f"{config.INTERIOR_POINT_MAX_DENSE_PARAMS} parameters "
                    f"(INTERIOR_POINT_MAX_DENSE_PARAMS): use mfn or cutting_plane")
        return None
