"""LIBSVM's five problems (``svm_type``) in the one dual form its ``Solver`` solves.

Every svm_type is (Chang & Lin, LIBSVM, ACM TIST 2 (2011), section 4, eq. (11))::

    minimize f(alpha) = 1/2 alpha'Q alpha + p'alpha
    subject to y'alpha = Delta,  0 <= alpha_t <= C_t   (and e'alpha = constant for the nus)

with Q_st = y_s y_t K(x_idx(s), x_idx(t)); :class:`LibsvmProblem` gives its variables (signs y,
linear term p, row map idx, bounds C_t, LIBSVM's starting point), the primal and dual
objectives at a point from the maintained gradient G = Q alpha + p in O(m), and the model's
coefficients.  Each dual is the Lagrange dual of a primal; the primal value at (w(alpha), the
bias and the level LIBSVM's ``calculate_rho`` gives) bounds the optimum from above and
D(alpha) = -f(alpha) from below, so P - D certifies the stop (the project's ``tol``):

* ``c_svc`` (LIBSVM -s 0): 1/2 ||w||^2 + sum C_i max(0, 1 - y_i f(x_i)); p = -e.
* ``nu_svc`` (-s 1; Chang & Lin 2001, Schölkopf et al. 2000), in LIBSVM's scaling (bounds 1,
  e'alpha = nu l, p = 0; ``solve_nu_svc``): 1/2 ||w||^2 - nu l rho + sum max(0, rho -
  y_i f(x_i)).  At the solution LIBSVM rescales by 1/r, r = rho (the margin): the model is
  C-SVC's with C = 1/r, coef = y alpha / r, b = -rho_b / r, and the objective reported here,
  as LIBSVM's ``obj``, is divided by r^2.
* ``one_class`` (-s 2; Schölkopf et al., Neural Computation 13 (2001), eq. (3)-(4)), scaled
  by nu l as LIBSVM (bounds 1, e'alpha = nu l, p = 0, y = e; ``solve_one_class``):
  1/2 ||w||^2 - nu l rho + sum max(0, rho - w.phi(x_i)); decision w.phi(x) - rho.
* ``epsilon_svr`` (-s 3; ``solve_epsilon_svr``): 2l variables alpha, alpha* with signs +1,
  -1, p = (epsilon - z, epsilon + z): 1/2 ||w||^2 + sum C_i max(0, |z_i - f(x_i)| -
  epsilon).
* ``nu_svr`` (-s 4; Chang & Lin 2002; ``solve_nu_svr``): p = (-z, z), e'alpha = C nu l:
  1/2 ||w||^2 + C nu l epsilon + sum C_i max(0, |z_i - f(x_i)| - epsilon), epsilon = -r
  found by the solver (LIBSVM prints it).

In every case w = sum_t y_t alpha_t phi(x_idx(t)), ||w||^2 = alpha'Q alpha = alpha'(G - p) and
the outputs without the bias are (Q alpha)_t = G_t - p_t (times y_t), so nothing is recomputed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from solvers.core.linalg import dot
from solvers.problems.kernel import KernelProblem

#: LIBSVM's svm_type names, in its -s order
SVM_TYPES = ("c_svc", "nu_svc", "one_class", "epsilon_svr", "nu_svr")
#: the svm_types with the extra constraint e'alpha = constant (``Solver_NU``'s working sets)
NU_TYPES = ("nu_svc", "nu_svr")
#: the task each svm_type poses (``solvers.base.TASKS``; None: classification, binary or
#: multi-class by the labels)
SVM_TYPE_TASKS = {"c_svc": None, "nu_svc": None, "one_class": "one_class",
                  "epsilon_svr": "regression", "nu_svr": "regression"}


@dataclass
class LibsvmProblem:
    """One LIBSVM problem on l rows: ``targets`` (+-1 labels for the classifiers, real values
    for the regressions, unread by one-class), ``cost`` the per-row C_i (the classifiers' and
    regressions' C times the row's weight; the nu-SVC and one-class bounds, 1 in LIBSVM's
    scaling, times the row's weight), ``epsilon`` (epsilon-SVR's -p), ``nu`` (-n).  The nus'
    equality constraints weigh rows by their bounds (:attr:`nu_mass`)."""

    svm_type: str
    targets: np.ndarray
    cost: np.ndarray
    epsilon: float = 0.1
    nu: float = 0.5
    hinge: KernelProblem | None = field(default=None, init=False, repr=False)

    def __post_init__(self):
        if self.svm_type not in SVM_TYPES:
            raise ValueError(f"unknown svm_type {self.svm_type!r}; expected one of "
                             f"{', '.join(SVM_TYPES)}")
        self.targets = np.ascontiguousarray(self.targets, dtype=np.float64)
        self.cost = np.ascontiguousarray(self.cost, dtype=np.float64)
        if self.svm_type == "c_svc":
            self.hinge = KernelProblem(self.targets, self.cost, "hinge")
        self.check()

    @property
    def n_rows(self) -> int:
        return self.targets.shape[0]

    @property
    def nu_mass(self) -> float:
        """nu times the rows' total weight: e'alpha of nu-SVC and one-class (nu l in LIBSVM,
        whose rows weigh 1) and of nu-SVR (nu sum_i C_i = C nu l).  A row of weight 2 is then
        two copies of the row (the bounds C_i add up, and so does this total)."""
        return self.nu * float(self.cost.sum())

    @property
    def nu_constraint(self) -> bool:
        """Whether the dual has e'alpha = constant (nu-SVC, nu-SVR: ``Solver_NU``)."""
        return self.svm_type in NU_TYPES

    @property
    def two_sided(self) -> bool:
        """Whether each row has two variables (alpha and alpha*: the regressions)."""
        return self.svm_type in ("epsilon_svr", "nu_svr")

    def check(self) -> None:
        """LIBSVM's ``svm_check_parameter`` for this problem: nu in (0, 1], epsilon >= 0,
        and nu-SVC's feasibility nu (n_+ + n_-)/2 <= min(n_+, n_-) (Chang & Lin 2001,
        section 2: a larger nu has no feasible alpha)."""
        if self.svm_type in ("nu_svc", "one_class", "nu_svr") and not 0.0 < self.nu <= 1.0:
            raise ValueError(f"nu must lie in (0, 1] (it bounds the fraction of margin "
                             f"errors from above and of support vectors from below), got "
                             f"{self.nu!r}")
        if self.svm_type == "epsilon_svr" and not self.epsilon >= 0.0:
            raise ValueError(f"epsilon (the tube's half width, LIBSVM's -p) must be >= 0, "
                             f"got {self.epsilon!r}")
        if self.n_rows == 0:
            raise ValueError("no training rows")
        if self.svm_type == "c_svc":
            positive = self.cost > 0
            if not (np.any(positive & (self.targets > 0)) and
                    np.any(positive & (self.targets < 0))):
                raise ValueError("C-SVC needs examples of both classes with a positive weight")
        if self.svm_type == "nu_svc":
            positive = self.cost[self.targets > 0].sum()
            negative = self.cost[self.targets < 0].sum()
            if positive == 0 or negative == 0:
                raise ValueError("nu-SVC needs examples of both classes")
            if self.nu * self.cost.sum() / 2.0 > min(positive, negative) * (1 + 1e-12):
                raise ValueError(
                    f"specified nu={self.nu:g} is infeasible for nu-SVC: nu (n_+ + n_-)/2 "
                    f"must not exceed min(n_+, n_-) (here {positive:g} and {negative:g} "
                    f"examples; the largest feasible nu is "
                    f"{2.0 * min(positive, negative) / (positive + negative):.6g})")

    # -- the dual's variables -------------------------------------------------------------------
    def variables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(y, p, idx, C, alpha0) of the m variables: signs, linear term, row of each, bounds
        and LIBSVM's starting point (feasible: alpha = 0 for C-SVC and epsilon-SVR; for the
        nus and one-class the equality constraints' mass put on the first variables in
        order, as ``solve_nu_svc``, ``solve_one_class`` and ``solve_nu_svr`` do)."""
        l = self.n_rows
        z = self.targets
        rows = np.arange(l, dtype=np.int64)
        if self.svm_type == "c_svc":
            return z.copy(), -np.ones(l), rows, self.cost.copy(), np.zeros(l)
        if self.svm_type == "nu_svc":
            alpha = np.zeros(l)
            for sign in (1.0, -1.0):
                left = self.nu_mass / 2.0
                for i in np.flatnonzero(z == sign):
                    alpha[i] = min(self.cost[i], left)
                    left -= alpha[i]
            return z.copy(), np.zeros(l), rows, self.cost.copy(), alpha
        if self.svm_type == "one_class":
            alpha = np.zeros(l)
            left = self.nu_mass
            for i in range(l):
                alpha[i] = min(self.cost[i], left)
                left -= alpha[i]
            return np.ones(l), np.zeros(l), rows, self.cost.copy(), alpha
        signs = np.concatenate([np.ones(l), -np.ones(l)])
        index = np.concatenate([rows, rows])
        cost = np.concatenate([self.cost, self.cost])
        if self.svm_type == "epsilon_svr":
            p = np.concatenate([self.epsilon - z, self.epsilon + z])
            return signs, p, index, cost, np.zeros(2 * l)
        alpha = np.zeros(2 * l)
        left = self.nu_mass / 2.0
        for i in range(l):
            alpha[i] = alpha[i + l] = min(left, self.cost[i])
            left -= alpha[i]
        return signs, np.concatenate([-z, z]), index, cost, alpha

    # -- objectives -----------------------------------------------------------------------------
    def objectives(self, alpha: np.ndarray, G: np.ndarray, rho: float,
                   r: float = 0.0) -> tuple[float, float]:
        """(primal, dual) at the dual point ``alpha`` with gradient G = Q alpha + p, LIBSVM's
        ``rho`` (b = -rho) and, for the nus, r (``Solver_NU::calculate_rho``), in the units
        of the model (nu-SVC's divided by r^2 when r > 0).  D <= optimum <= P."""
        if self.svm_type == "c_svc":
            return self.hinge.csvc_objectives(alpha, G, -rho)
        y, p, _, cost, _ = self.variables_cache()
        quad = dot(alpha, G - p)  # alpha'Q alpha = ||w||^2
        dual = -0.5 * (quad + 2.0 * dot(p, alpha))
        if self.svm_type in ("nu_svc", "one_class"):
            # the margins y_i (w.phi(x_i) - rho_b) = G_i - y_i rho_b (p = 0) against the
            # level: nu-SVC's r, one-class's rho (its decision is w.phi(x) - rho)
            if self.svm_type == "nu_svc":
                level, shift = r, rho
            else:
                level, shift = rho, 0.0
            margins = G - y * shift
            primal = (0.5 * quad - self.nu_mass * level
                      + float(np.dot(cost, np.maximum(0.0, level - margins))))
            if self.svm_type == "nu_svc" and r > 0.0:
                return primal / (r * r), dual / (r * r)
            return primal, dual
        l = self.n_rows
        outputs = G[:l] - p[:l] - rho  # f(x_i) = w.phi(x_i) + b, b = -rho
        residual = np.abs(self.targets - outputs)
        tube = self.epsilon if self.svm_type == "epsilon_svr" else -r
        primal = 0.5 * quad + float(np.dot(self.cost, np.maximum(0.0, residual - tube)))
        if self.svm_type == "nu_svr":
            primal += self.nu_mass * tube
        return primal, dual

    def variables_cache(self):
        """:meth:`variables`, computed once."""
        cached = getattr(self, "_variables", None)
        if cached is None:
            cached = self._variables = self.variables()
        return cached

    @staticmethod
    def relative_gap(primal: float, dual: float) -> float:
        """(P - D) / |P| (P may be negative: the nus' and one-class' optimum is -f* < 0)."""
        if primal == 0.0 or not math.isfinite(primal):
            return 0.0 if primal == dual else math.inf
        return (primal - dual) / abs(primal)

    def solution(self, alpha: np.ndarray, rho: float, r: float = 0.0
                 ) -> tuple[np.ndarray, float]:
        """(coef, intercept) of f(x) = sum_i coef_i k(x_i, x) + intercept over the l rows:
        y alpha and -rho, with nu-SVC's rescaling by 1/r (``solve_nu_svc``) and the
        regressions' coef_i = alpha_i - alpha*_i (``solve_epsilon_svr``)."""
        l = self.n_rows
        if self.two_sided:
            return alpha[:l] - alpha[l:], -rho
        y = self.variables_cache()[0]
        if self.svm_type == "nu_svc":
            if not r > 0.0:
                raise ValueError(f"nu-SVC ended with a non-positive margin r={r:g}: its "
                                 "solution cannot be rescaled to a classifier")
            return y * alpha / r, -rho / r
        return y * alpha, -rho

    def bounded(self, alpha: np.ndarray) -> int:
        """The number of variables at their upper bound."""
        cost = self.variables_cache()[3]
        return int(np.count_nonzero((cost > 0) & (alpha >= cost)))
