"""The interior-point method of Gertz & Griffin (Comput. Optim. Appl. 47, 2010; online 2009):
Mehrotra's predictor-corrector (MPC) method on the SVM quadratic program, its Newton systems
reduced to m x m normal equations solved directly (SVM-Direct) or by PCG with the SVM
preconditioner (SVM-PCG).

Problem (1), d_i = y_i in {-1, +1}, x~_i the row (with a constant column for the regularized
bias), tau = C (``docs/design.md``: Gertz & Griffin use 1/2||w||^2 + tau e'z with a free bias)::

    minimize  1/2 ||w||^2 + sum_i tau_i z_i
    s.t.      d_i (x_i'w - beta) >= 1 - z_i,  z_i >= 0,        tau_i = C * sample_weight_i

whose optimum is the hinge problem of ``docs/design.md`` with the free bias b = -beta (the paper's
classifier is x'w - beta).  Bias modes: ``free`` (the paper), ``none`` (beta = 0 and the row
(4b)/(5b) of d'v dropped: M = I + Y'Omega^-1 Y) and ``regularized`` (a constant feature of
value ``bias_scale`` appended to every x_i, no beta).

The method, section by section (``mpc.py``, ``linsys.py``):

* optimality conditions (4) and their residuals r_w = w - Y'v, rho_beta = d'v,
  r_z = tau - v - u, r_s = Yw - beta d + z - e - s; Newton system (5);
* reduction (6)-(10): Omega = V^-1 S + U^-1 Z (7), r_Omega, r^_w, rho^_beta, y_d, sigma (8),
  M dw = -(r^_w + rho^_beta y_d / sigma) with M = I + Y'Omega^-1 Y - y_d y_d'/sigma (9a, 11),
  dbeta (9b), dv (10), then dz, du, ds by the back substitutions of section 3;
* MPC as OOQP's ``MehrotraSolver`` (Gertz & Wright 2003): the affine predictor (r_u = Zu,
  r_v = Sv), alpha_aff = the largest step to the boundary, mu_aff, sigma = (mu_aff / mu)^3,
  the corrector (r_u = Zu + dZ_aff du_aff - sigma mu e, likewise r_v), one step length for
  every variable by Mehrotra's heuristic (OOQP's ``finalStepLength``, gamma_f = 0.99),
  mu = (v's + u'z) / (2n);
* stopping (section 6.1): mu <= 1e-6 and ||(r_w, rho_beta, r_z, r_s)||_inf <= 1e-6
  max_ij |x_ij| (``mu_tol``, ``residual_tol``); OOQP's other tests of
  ``defaultStatus`` with phi = (||r||_inf + |gap|) / max|x_ij|: infeasibility (after 10
  iterations, phi >= 1e-8 and 1e4 times its smallest value: ``infeasible``), slow
  convergence (the smallest phi not halved in 30 iterations: ``failed``) and residuals that
  stop following mu (||r|| / mu grown 1e8 times: ``numerical_error``); a Cholesky
  factorization that fails again after a 1e-12 relative diagonal shift (round-off makes M
  indefinite late in the run, when 1/omega_i spans ~20 orders) is also ``numerical_error``;
  every status but ``converged`` and ``stopped`` returns the iterate of smallest certified
  gap;
* ``linear_solver="direct"``: M formed by the core's weighted Gram build (weights
  1/omega_i, parallel over the sparse rows) and factored by Cholesky once per MPC iteration
  (the paper's SVM-Direct sets gamma = 0 so that P_A = M); ``"pcg"``: section 5's
  preconditioner P_A (13), rule (15), the tolerances and fall-back of section 5.3
  (``linsys.PCGSolver``); ``"auto"``: a cost model (``auto.py``).

Misprint fixed: section 5.1 says rule (15) "will exclude all omega_i that are converging to
zero at a rate proportional to mu".  The rule keeps the terms with large ||y_i||^2 / omega_i:
those whose omega_i -> 0 (1/omega_i grows like 1/mu: the free support vectors, where s_i and
z_i vanish) are kept, and those whose omega_i grows like 1/mu (1/omega_i -> 0 like mu: the
non-support and the bounded support vectors) are the ones excluded.  The rule is implemented
as (15) states it, which is also what Proposition 5's proof uses.

Starting point: OOQP's default (``cold_start="ooqp"``) takes the affine step from
sqrt(max|x_ij|) and shifts every slack and multiplier by 1e3 + 2 * violation, blind to tau;
``cold_start="scaled"`` (default) starts the multipliers v, u at tau/2 and shifts them by tau/2
(slacks by 1) instead (``mpc.starting_point``).  With OOQP's start the MPC iteration counts
are the paper's; the scaled start saved 1-21 iterations on eight sets and was never worse
(bench/history/measurements.json, interior-point-start).

Warm start (``start=WarmStart(beta)``, a C path's next point; not in the paper, which solves
one problem): :func:`mpc.warm_starting_point` builds an interior point near docs/design.md's
(w, b) of the last C: the slacks from its margins plus 0.01, v from its KKT map held 0.2 tau_i
inside the box [0, tau_i] (u = tau - v).  Interior-point methods are known to warm-start
poorly from a point near the boundary; pushed this far in, they do well: over a C path the
MPC iterations fell by a third to two thirds on six sets, and (0.01, 0.2) was the best pair
(primal shift, dual margin) or near it on every set (bench/history/measurements.json,
interior-point-warm-start).

The paper's stopping test is absolute: mu <= 1e-6 bounds the duality gap by 2n 1e-6
whatever the objective's size (on mushrooms at C = 1, objective 7.57, it stops 3.5e-5 above
the optimum; on a9a at tau = 0.05 1.5e-7).  By default (``stop_rule="gap"``) it is replaced
by the scale-free test every solver shares: stop once the records' certified relative duality
gap is at most ``tol``; ``stop_rule="paper"`` keeps the paper's tests.

The primal objective reported per iteration is ``docs/design.md``'s at the current (w, b); the
optimality measure is the problem layer's relative duality gap with the dual point
alpha = clip(v, 0, tau) (balanced for the free bias by ``BinaryProblem.balance``).  Records
also carry mu, the scaled residual norm and the norms of r_w, rho_beta, r_z, r_s, the step
length, sigma, the PCG iterations of the MPC iteration, |A| and gamma.

Data with more than ``INTERIOR_POINT_MAX_DENSE_PARAMS`` (8192) parameters are refused by
``direct`` and ``auto`` with an error naming the limit (news20: M would take 28.7 GiB);
``pcg`` then runs with the diagonal preconditioner (A empty) and no fall-back, measured too
slow to be of use there (news20 made binary at C = 1: 274 s to a 1.6e-3 gap).

Extension (the issue's optional item): the squared hinge, ``loss="squared_hinge"``
(docs/design.md's C max(0, 1 - m)^2): penalty sum tau_i z_i^2 with z free, so (4c) becomes
r_z = 2 tau z - v, the pair (z, u) and (4e) disappear, Omega = V^-1 S + 1/(2 tau) and
mu = v's / n; the rest (reduction, both linear solvers, MPC) is unchanged.  Every bias mode,
including the free bias that ``mfn`` does not solve.  On a9a, w8a and mushrooms it reached
LIBLINEAR's certified optima in 3-7 times ``mfn``'s time (bench/history/measurements.json,
interior-point-squared-hinge): for the squared hinge the finite Newton method is the better
choice, and the interior-point method adds the free bias.

Multi-class: one-vs-rest through the shared multiclass layer.

One loop, local or distributed rows: ``mpc.solve_rows`` runs the MPC iterations over a row
protocol (``solvers.problems.mpc_rows.MPCRows``): the loop holds (w, beta), the rows the
per-example part of the iterate and the data.  ``mpc.LocalMPCRows`` is one process's (the
direct or PCG linear solver on its operator); on distributed data (``solvers.train`` on a
``solvers.distributed.DistributedDataset``, binary and one-vs-rest)
``distributed.PartitionedMPCRows`` answers the same calls by rounds, every per-example vector
on the workers: 3 rounds per MPC iteration (plus the free bias's balancing shift of the
records' dual point: none while its breakpoints are few enough to gather, else typically
1), the (d+1) x (d+1) weighted Gram matrix one reduction
of them, factorized on the driver by ``DirectSolver``.  Each partition runs this module's
per-example code on its own rows (``SVMQP.residual_pieces``, ``reduced_vectors``,
``back_substitute``).  Refused (the partitions declare no matrix-free M:
``InteriorPointParams.rows_refusal``): ``linear_solver="pcg"``, more than
``INTERIOR_POINT_MAX_DENSE_PARAMS`` parameters; ``"auto"`` runs ``direct``.
"""

from __future__ import annotations

from solvers import config
from solvers.base import SolverSpec
from solvers.interior_point.auto import choose_linear_solver, linear_solver_costs
from solvers.interior_point.distributed import solve as solve_distributed
from solvers.interior_point.linsys import DirectSolver, NormalOperator, PCGSolver
from solvers.interior_point.mpc import (
    SVMQP,
    Iterate,
    final_step_length,
    run,
    warm_starting_point,
)
from solvers.interior_point.params import InteriorPointParams


def dense_system(params: InteriorPointParams, n_samples: int,
                 n_features: int) -> tuple[str, int] | None:
    """The spec's ``dense_system``: ``direct`` (and ``auto``, which refuses rather than run
    PCG with a diagonal preconditioner beyond the dense limit) forms and factorizes the
    (n_features + 1)^2 normal equations M every iteration; ``pcg`` factorizes P_A of the same
    size, or nothing beyond the dense limit."""
    side = n_features + 1
    if params.linear_solver == "pcg" and side > config.INTERIOR_POINT_MAX_DENSE_PARAMS:
        return None
    return ("the interior-point method's normal equations (a dense (n_features + 1)^2 "
            "matrix)", side)


SPECS = (
    SolverSpec(
        name="interior_point",
        params_model=InteriorPointParams,
        run=run,
        description="Interior-point method (Mehrotra predictor-corrector) for the hinge loss "
                    "(and the squared hinge) with a free, regularized or no bias; normal "
                    "equations by Cholesky or by PCG with the SVM preconditioner.",
        reference="E. M. Gertz and J. D. Griffin, Using an iterative linear solver in an "
                  "interior-point method for generating support vector machines, Comput. "
                  "Optim. Appl. 47 (2010) 431-453.",
        warm_up=None,  # only the shared core's kernels (solvers.core.warm_up)
        # a C path's next point from an interior point near the last solution
        # (mpc.warm_starting_point; the package docstring has the measurements)
        warm_start=True,
        dense_system=dense_system,
        auto_candidates=((),),
        # binary and one-vs-rest on a DistributedDataset: mpc.py's loop over the partitioned
        # rows, the Gram matrix of the normal equations one reduction per iteration
        distributed=solve_distributed,
    ),
)

__all__ = [
    "SPECS",
    "SVMQP",
    "DirectSolver",
    "InteriorPointParams",
    "Iterate",
    "NormalOperator",
    "PCGSolver",
    "choose_linear_solver",
    "final_step_length",
    "linear_solver_costs",
    "run",
    "warm_starting_point",
]
