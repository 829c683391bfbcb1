"""Reference optima: each benchmark/test problem solved by an independent solver.

For each (dataset, loss, bias, C) the optimum comes from a solver that is not ours, at a tight
tolerance, stored with how it was obtained and a certificate:

=======================  ===============================================  ======================
problem                  solver                                           certificate
=======================  ===============================================  ======================
squared hinge, reg. bias LIBLINEAR -s 2 (primal Newton), eps 1e-10;        duality gap, KKT map
                         if uncertified, finite Newton with direct solves
                         from its solution
hinge, regularized bias  the better of LIBLINEAR -s 3 (dual CD, eps 1e-10) gap to the dual solved
                         and w(alpha) of the dual solve                    by an interior-point
                                                                           method
hinge, free bias         LIBSVM through sklearn SVC(kernel="linear")        gap to LIBSVM's dual
modified Huber           SciPy L-BFGS-B on the primal                       duality gap, KKT map
least squares, free      SciPy sparse direct solve of the normal equations  gradient norm
=======================  ===============================================  ======================

``python -m bench references --regenerate`` recomputes them into ``reference_optima.json``.
Tests read that file (a missing entry is computed on the fly by the same code).

For the tests' own problems (any :class:`solvers.BinaryProblem`, weights and ordinal
problems included) the same independent solvers, uncached, as a :class:`Reference`:
:func:`liblinear_optimum` (LIBLINEAR at a tight tolerance with the duality gap of its
solution), :func:`lbfgs_optimum` / :func:`binary_lbfgs_optimum` (SciPy's L-BFGS on a smooth
primal) and :func:`hinge_dual_optimum` (the hinge dual by the interior-point method below).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from bench.anchors import Liblinear, hinge_clarabel, liblinear_beta, liblinear_train
from bench.commands import Command, option
from bench.problems import BenchProblem
from solvers.problems import BinaryProblem

REFERENCE_FILE = Path(__file__).with_name("reference_optima.json")

TIGHT_EPS = 1e-10
CERTIFY = 1e-9  # relative duality gap below which a reference counts as certified

_SQUARED_HINGE_SETS = ("a9a", "w8a", "ijcnn1", "mushrooms", "news20-binary")
_SMALL_SETS = ("heart_scale", "australian_scale", "breast-cancer_scale", "diabetes_scale",
               "svmguide1")

REFERENCE_PROBLEMS = (
    [BenchProblem(d, "squared_hinge", "regularized", C)
     for d in _SQUARED_HINGE_SETS for C in (0.01, 1.0, 100.0)]
    + [BenchProblem(d, "squared_hinge", "regularized", 1.0) for d in _SMALL_SETS]
    + [BenchProblem(d, "squared_hinge", "none", 1.0) for d in ("heart_scale", "a9a")]
    + [BenchProblem(d, "hinge", "regularized", C)
       for d in ("heart_scale", "breast-cancer_scale", "australian_scale") for C in (0.1, 1.0)]
    + [BenchProblem(d, "hinge", "regularized", C)  # the cutting-plane family's tests
       for d in ("a9a", "w8a", "ijcnn1", "mushrooms") for C in (0.01, 1.0)]
    + [BenchProblem(d, "hinge", "free", 1.0) for d in ("heart_scale", "diabetes_scale")]
    + [BenchProblem(d, "modified_huber", "regularized", C)
       for d in ("heart_scale", "australian_scale", "a9a") for C in (0.1, 10.0)]
    + [BenchProblem(d, "least_squares", "free", 1.0) for d in ("heart_scale", "a9a")]
)


def load_references() -> dict[str, dict]:
    if not REFERENCE_FILE.exists():
        return {}
    return {entry["key"]: entry for entry in json.loads(REFERENCE_FILE.read_text())}


def reference_optimum(problem: BenchProblem) -> dict:
    """The stored reference for ``problem`` or, if none is stored, a freshly computed one."""
    stored = load_references().get(problem.key)
    return stored if stored is not None else compute_reference(problem)


def compute_reference(problem: BenchProblem) -> dict:
    bp = problem.binary_problem()
    start = time.perf_counter()
    if problem.loss == "squared_hinge" and problem.bias != "free":
        beta = _liblinear(problem, 2)
        method = f"LIBLINEAR -s 2 -e {TIGHT_EPS:g}"
        if bp.duality_gap(beta) > CERTIFY * abs(bp.objective(beta)):
            # LIBLINEAR stops short on hard problems (news20 at C = 100: -s 2 on a line-search
            # failure 61% above the optimum): finish by finite Newton with direct solves.
            beta = _direct_finite_newton_squared_hinge(bp, beta)
            method += (", then finite Newton with LAPACK Cholesky solves on the active set "
                       "and Brent line searches from its solution")
        certificate = {"duality_gap": bp.duality_gap(beta)}
    elif problem.loss == "hinge" and problem.bias != "free":
        # LIBLINEAR's dual CD stops at 1000 epochs, often short of 1e-6; the dual solved by an
        # interior-point method gives both a lower bound and, through w(alpha), a second
        # primal candidate.
        candidates = {f"LIBLINEAR -s 3 -e {TIGHT_EPS:g}": _liblinear(problem, 3)}
        try:
            if bp.n_samples > 10_000:
                raise np.linalg.LinAlgError("too many Newton steps of O(n d^2) at this size")
            _, beta_of_alpha, dual = hinge_dual_interior_point(bp)
            candidates["w(alpha) of the dual solved by a log-barrier interior-point method"] \
                = beta_of_alpha
            dual_method = "log-barrier interior-point method on the dual"
        except np.linalg.LinAlgError:
            # the barrier's Newton system turns singular when many alpha_i sit at a bound
            # (mushrooms at C = 1), and its Newton steps take minutes on a9a: Clarabel on the
            # primal QP, certified by its multipliers
            clarabel = hinge_clarabel(bp)
            beta_clarabel, dual = clarabel["beta"], clarabel["dual"]
            candidates["Clarabel (cvxpy) on the primal QP"] = beta_clarabel
            dual_method = "the dual at Clarabel's multipliers"
        method, beta = min(candidates.items(), key=lambda item: bp.objective(item[1]))
        certificate = {"duality_gap": bp.objective(beta) - dual, "dual_method": dual_method}
    elif problem.loss == "hinge" and problem.bias == "free":
        beta, dual = _libsvm_linear(problem, bp)
        method = "LIBSVM (sklearn SVC kernel=linear, tol=1e-10)"
        certificate = {"duality_gap": bp.objective(beta) - dual}
    elif problem.loss in ("modified_huber", "lp"):
        beta = _lbfgs_primal(bp)
        method = "SciPy L-BFGS-B on the primal (ftol=1e-15, gtol=1e-10)"
        certificate = {"duality_gap": bp.duality_gap(beta)}
    elif problem.loss == "logistic" and problem.bias != "free":
        beta = _liblinear(problem, 0)
        method = f"LIBLINEAR -s 0 -e {TIGHT_EPS:g}"
        certificate = {"duality_gap": bp.duality_gap(beta)}
    elif problem.loss == "logistic":
        beta = _lbfgs_primal(bp)
        method = "SciPy L-BFGS-B on the primal (ftol=1e-15, gtol=1e-10)"
        certificate = {"duality_gap": bp.duality_gap(beta)}
    elif problem.loss == "least_squares":
        beta = _least_squares_direct(bp)
        method = "SciPy sparse direct solve of the normal equations"
        certificate = {"gradient_norm": float(np.linalg.norm(bp.gradient(beta)))}
    else:
        raise ValueError(f"no reference method for {problem.key}")
    objective = bp.objective(beta)
    if "duality_gap" in certificate:
        certificate["relative_duality_gap"] = certificate["duality_gap"] / abs(objective)
    return {
        "key": problem.key,
        "dataset": problem.dataset,
        "loss": problem.loss,
        "bias": problem.bias,
        "bias_scale": problem.bias_scale,
        "C": problem.C,
        "objective": objective,
        "method": method,
        "certificate": certificate,
        "seconds": time.perf_counter() - start,
    }


def _liblinear(problem: BenchProblem, solver_type: int) -> np.ndarray:
    return Liblinear(solver_type).fit(problem, TIGHT_EPS)[1]


def hinge_dual_interior_point(bp: BinaryProblem, relative_gap: float = 1e-12,
                              max_newton: int = 2000) -> tuple[np.ndarray, np.ndarray, float]:
    """The hinge problem with a regularized bias (or none) through its box-constrained dual

        minimize_alpha  1/2 alpha' A A' alpha - sum alpha   s.t.  0 <= alpha_i <= C_i,

    A = rows y_i x~_i (dense), by a log-barrier interior-point method: Newton steps on
    phi_mu(alpha) = the dual objective - mu sum(log alpha_i + log(C_i - alpha_i)) with mu
    shrinking tenfold once the Newton decrement is small.  The Newton systems
    (H + A A') d = -g, H diagonal, are solved through the Woodbury identity in
    O(n (d+1)^2), so this is for data with few features.  Stops when the exact duality gap
    P(beta(alpha)) - D(alpha) is below ``relative_gap`` P.  Returns (alpha, beta(alpha), D).
    """
    if bp.loss_function.dual_quadratic != 0.0 or bp.bias == "free":
        raise ValueError("the box-constrained dual needs the hinge loss (a dual without a "
                         "conjugate term) without a free bias")
    A = bp.X.toarray() * bp.y[:, None]
    A = np.hstack([A, bp.effective_bias_scale * bp.y[:, None]])
    upper = bp.cost
    r = A.shape[1]

    def dual(alpha):
        v = A.T @ alpha
        return float(alpha.sum()) - 0.5 * float(v @ v)

    def barrier(alpha, mu):
        return -dual(alpha) - mu * float(np.sum(np.log(alpha) + np.log(upper - alpha)))

    alpha = 0.5 * upper
    mu = 1.0
    for _ in range(max_newton):
        v = A.T @ alpha
        g = A @ v - 1.0 - mu / alpha + mu / (upper - alpha)
        h = mu / alpha ** 2 + mu / (upper - alpha) ** 2
        # (diag(h) + A A')^{-1} g by Woodbury
        Ah = A / h[:, None]
        small = np.eye(r) + A.T @ Ah
        step = -(g / h - Ah @ np.linalg.solve(small, Ah.T @ g))
        decrement = float(-(g @ step))
        if decrement <= 1e-3 * mu:
            primal = bp.objective(A.T @ alpha)
            if primal - dual(alpha) <= relative_gap * abs(primal):
                break
            mu *= 0.1
            continue
        # stay strictly inside the box, then backtrack on the barrier function
        ratio = np.concatenate([-alpha[step < 0] / step[step < 0],
                                (upper - alpha)[step > 0] / step[step > 0]])
        t = min(1.0, 0.99 * float(ratio.min(initial=np.inf)))
        current = barrier(alpha, mu)
        while barrier(alpha + t * step, mu) > current + 0.25 * t * float(g @ step) and t > 1e-16:
            t *= 0.5
        alpha = alpha + t * step
    return alpha, A.T @ alpha, dual(alpha)


def _libsvm_linear(problem: BenchProblem, bp: BinaryProblem) -> tuple[np.ndarray, float]:
    from sklearn.svm import SVC

    train = problem.train_dataset()
    model = SVC(kernel="linear", C=problem.C, tol=1e-10, cache_size=2000)
    model.fit(train.X, train.y)
    coef = model.coef_
    w = np.asarray(coef.todense()).ravel() if sp.issparse(coef) else coef.ravel()
    beta = np.append(w, model.intercept_[0])
    alpha = np.zeros(bp.n_samples)
    dual_coef = model.dual_coef_
    dual_coef = dual_coef.toarray() if sp.issparse(dual_coef) else dual_coef
    alpha[model.support_] = np.abs(dual_coef.ravel())
    # LIBSVM balances sum alpha_i y_i = 0 to its tolerance; the problem's repair restores it
    # exactly (within the box), then the dual is evaluated.
    alpha = bp.balance(alpha)
    return beta, bp.dual_objective(alpha)


def _direct_finite_newton_squared_hinge(bp: BinaryProblem, beta0: np.ndarray,
                                        max_iterations: int = 500) -> np.ndarray:
    """Mangasarian's finite Newton method with dense direct solves, from ``beta0``.

    On the active set I = {i : m_i < 1} the squared hinge problem is a regularized least-
    squares problem whose minimizer is beta = X~_I' u with (diag(1 / 2C_i) + X~_I X~_I') u =
    y_I (X~ = [X, s]; LAPACK's Cholesky of an |I| x |I| matrix, |I| < n on the sets that need
    this); the step to it is damped by a Brent line search on the convex piecewise-quadratic
    objective.  Once I no longer changes the iterate is the optimum itself, not an
    approximation: its gradient is that of the least-squares problem, zero to rounding.
    Shares no code with ``mfn``."""
    from scipy.linalg import cho_factor, cho_solve
    from scipy.optimize import minimize_scalar

    X = bp.X
    s = bp.effective_bias_scale if bp.bias == "regularized" else 0.0
    y = bp.y
    beta = np.array(beta0, dtype=np.float64)
    previous = None
    for _ in range(max_iterations):
        margins = bp.margins(beta)
        active = np.flatnonzero(margins < 1.0)
        if previous is not None and np.array_equal(active, previous):
            break
        previous = active
        Xa = X[active]
        gram = (Xa @ Xa.T).toarray() + s * s
        gram[np.diag_indices_from(gram)] += 1.0 / (2.0 * bp.cost[active])
        u = cho_solve(cho_factor(gram, lower=True), y[active])
        target = np.empty_like(beta)
        target[:-1] = Xa.T @ u
        target[-1] = s * u.sum()
        direction = target - beta
        slope = y * bp.outputs(direction)

        def along(delta, beta=beta, margins=margins, slope=slope, direction=direction):
            point = beta + delta * direction
            shortfall = np.maximum(0.0, 1.0 - margins - delta * slope)
            return 0.5 * float(point @ point) + float(np.sum(bp.cost * shortfall * shortfall))

        step = minimize_scalar(along, bracket=(0.0, 1.0), tol=1e-12).x
        beta = beta + (step if along(step) < along(1.0) else 1.0) * direction
    return beta


def _lbfgs_primal(bp: BinaryProblem) -> np.ndarray:
    result = minimize(bp.objective, bp.zeros(), jac=bp.gradient, method="L-BFGS-B",
                      options={"maxiter": 100_000, "ftol": 1e-15, "gtol": 1e-10, "maxcor": 30})
    return result.x


def _least_squares_direct(bp: BinaryProblem) -> np.ndarray:
    """Minimize 1/2 ||w||^2 + sum C_i (1 - y_i (w.x_i + b))^2 (free bias): the normal
    equations (I' + 2 X~' C X~) beta = 2 X~' C y with I' = diag(1, .., 1, 0)."""
    s = 1.0
    Xt = sp.hstack([bp.X, sp.csr_matrix(np.full((bp.n_samples, 1), s))]).tocsr()
    weighted = sp.diags(2.0 * bp.cost) @ Xt
    regularizer = np.ones(bp.n_features + 1)
    regularizer[-1] = 0.0
    H = (Xt.T @ weighted + sp.diags(regularizer)).tocsc()
    rhs = weighted.T @ bp.y
    from scipy.sparse.linalg import spsolve

    return spsolve(H, rhs)


def regenerate(problems=REFERENCE_PROBLEMS, log=print) -> list[dict]:
    """Recompute the given references and merge them into the stored file (others kept)."""
    entries = load_references()
    for problem in problems:
        entry = compute_reference(problem)
        log(f"{entry['key']:50s} {entry['objective']:.15g}  {entry['method']}  "
            f"{json.dumps(entry['certificate'])}  ({entry['seconds']:.1f} s)")
        entries[entry["key"]] = entry
        ordered = [entries[p.key] for p in REFERENCE_PROBLEMS if p.key in entries]
        REFERENCE_FILE.write_text(json.dumps(ordered, indent=1) + "\n")
    return list(entries.values())




@dataclass(frozen=True)
class Reference:
    beta: np.ndarray
    objective: float
    relative_gap: float  # certified (P - D) / P of the reference point (nan if unknown)
    method: str


def liblinear_optimum(problem: BinaryProblem, solver_type: int, eps: float = TIGHT_EPS
                      ) -> Reference:
    """LIBLINEAR ``-s solver_type -B bias_scale -c C -e eps`` on ``problem`` (regularized bias,
    unit sample weights), with the relative duality gap of its solution (alpha from the KKT
    map), which certifies how tight it is."""
    from liblinear.liblinear import problem as ll_problem

    if problem.bias != "regularized" or problem.sample_weight is not None:
        raise ValueError("LIBLINEAR solves the regularized-bias, unweighted problem here")
    prob = ll_problem(problem.y, problem.X)
    prob.set_bias(problem.bias_scale)
    _, model = liblinear_train(prob, f"-s {solver_type} -B {problem.bias_scale!r} "
                                     f"-c {problem.C!r} -e {eps!r}")
    beta = liblinear_beta(model, problem.n_features)
    objective = problem.objective(beta)
    gap = problem.duality_gap(beta) / objective
    return Reference(beta, objective, gap, f"liblinear -s {solver_type} -e {eps:g}")


def lbfgs_optimum(objective_and_gradient, x0: np.ndarray, gtol: float = 1e-10,
                  max_iter: int = 50_000) -> tuple[np.ndarray, float]:
    """L-BFGS on a smooth objective; returns (x, f(x))."""
    result = minimize(objective_and_gradient, x0, jac=True, method="L-BFGS-B",
                      options={"maxiter": max_iter, "maxfun": 2 * max_iter, "ftol": 1e-16,
                               "gtol": gtol, "maxcor": 30})
    return result.x, float(result.fun)


def binary_lbfgs_optimum(problem: BinaryProblem) -> Reference:
    """L-BFGS on a smooth binary problem (squared hinge, modified Huber)."""
    def fg(beta):
        return problem.objective(beta), problem.gradient(beta)

    beta, objective = lbfgs_optimum(fg, problem.zeros())
    return Reference(beta, objective, problem.duality_gap(beta) / objective, "L-BFGS primal")


def hinge_dual_optimum(problem: BinaryProblem, relative_gap: float = 1e-12) -> Reference:
    """The hinge optimum (regularized bias) from the interior-point solve of its dual that
    the stored references use (:func:`hinge_dual_interior_point`)."""
    if problem.bias != "regularized":
        raise ValueError("the box-constrained dual needs the hinge loss with a regularized bias")
    _, beta, dual = hinge_dual_interior_point(problem, relative_gap)
    primal = problem.objective(beta)
    return Reference(beta, primal, (primal - dual) / primal, "interior-point dual")


def _references(args) -> int:
    if args.regenerate:
        chosen = [p for p in REFERENCE_PROBLEMS if args.only is None or args.only in p.key]
        regenerate(chosen)
        return 0
    for key, entry in sorted(load_references().items()):
        print(f"{key:50s} {entry['objective']:.15g}  {entry['method']}")
    return 0


COMMAND = Command("references", "reference optima", _references, options=(
    option("--regenerate", action="store_true", help="recompute the reference optima (minutes)"),
    option("--only", help="with --regenerate: keys containing this text")))
