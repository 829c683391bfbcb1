"""Data-parallel dual coordinate descent: CoCoA+ (C. Ma, V. Smith, M. Jaggi, M. I. Jordan,
P. Richtarik and M. Takac, "Adding vs. averaging in distributed primal-dual optimization",
ICML 2015; V. Smith et al., "CoCoA: a general framework for communication-efficient
distributed optimization", JMLR 18, 2018) for the hinge and the squared hinge, with dual_cd's
own coordinate steps (:func:`solvers.dual_cd.kernels.dcd_epochs`) as the local solver.

The dual (the package docstring: Hsieh et al.'s (4), -D(alpha) of ``docs/design.md`` 2.x)::

    f(alpha) = 1/2 ||A alpha||^2 + 1/2 sum_i D_ii alpha_i^2 - sum_i alpha_i,
    0 <= alpha_i <= U_i,   A alpha = sum_i alpha_i y_i x~_i = w.

Its quadratic part couples the examples only through w, so with the examples cut into K
partitions P_k, f(alpha + sum_k dalpha_[k]) <= f(alpha) + sum_k G_k(dalpha_[k]) where

    G_k(dalpha) = sum_{i in P_k} [1/2 D_ii (alpha_i + dalpha_i)^2 - dalpha_i]
                  + w . A dalpha_[k] + sigma/2 ||A dalpha_[k]||^2 + const,

the CoCoA+ subproblem with sigma' = sigma = K ("adding", gamma = 1: the bound holds for any
dalpha since ||sum_k u_k||^2 <= K sum_k ||u_k||^2).  Each partition keeps its alpha_[k]
resident and decreases G_k by ``local_epochs`` passes of Hsieh et al.'s coordinate step on it:
for i in a random permutation, with v = w + sigma A dalpha_[k],

    G = y_i v . x~_i - 1 + D_ii alpha_i,   alpha_i <- clip(alpha_i - G / (sigma ||x~_i||^2 +
    D_ii), 0, U_i),   v <- v + sigma (alpha_i - alpha_i^old) y_i x~_i,

which is :func:`~solvers.dual_cd.kernels.dcd_epochs` with its ``sigma`` (and Algorithm 3's
shrinking, its state kept between rounds as the serial driver keeps it between calls).  The
partition returns dw_k = A dalpha_[k] = (v - w) / sigma, a d-vector; the driver adds them all:
w <- w + sum_k dw_k, which is A alpha at the new alpha (gamma = 1).  A round moves one d-vector
to every partition and one back, the minimum.

Stopping: the same certified relative gap as the serial dual_cd (its objective convention, the
problem layer's P and D).  A round asked to check computes, before its descent, the
partition's loss sum at the w it was sent (one pass over its rows: P(w) = 1/2 ||w||^2 + the
sum) and its sums of alpha and of the conjugate term (D(alpha) = sum alpha - 1/2 ||w||^2 -
conjugate, with w = A alpha kept by the driver): the gap of (w_t, alpha_t) comes back with the
round's dw.  When it is within ``tol`` the solve ends at w_t (the round's descent is spent)
and one more round recomputes A alpha_t from the partitions' alpha (as the serial driver
recomputes w at its end) for the gap without the round-off w accumulated, reported in the
extras.

One driver (:func:`solve_cocoa`) over a row operator with two implementations: the
partitions in this process (:class:`LocalPartitions`, rows sliced from one problem) and the
partitions of a distributed dataset on Dask workers (:class:`DistributedPartitions`); the
same worker functions run on both, so a run over K local slices and over the same K shards
on workers take the same iterates (the same per-partition seeds, the same sums in partition
order).  With one partition, sigma = 1 and the local descent is the serial one on the whole
problem: each round is ``local_epochs`` outer iterations of dual_cd's kernel from w, the
driver's w = w + (v - w) equal to the kernel's v up to one rounding per round (the serial
driver, which calls the kernel in budgets of work rather than epochs, takes other checks
and the Newton switch; the steps are the same).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solvers.base import Solution, Solves, WarmStart, warm_start_argument
from solvers.core.sparse import csr_matvec
from solvers.distributed.cluster import reduce_sum
from solvers.dual_cd.kernels import dcd_epochs
from solvers.dual_cd.params import DualCDParams
from solvers.monitor import Monitor, Reporter
from solvers.problems import BinaryProblem
from solvers.termination import Termination, format_gap

#: What CoCoA+ solves here: the QP duals of the hinge and the squared hinge (Hsieh et al.'s
#: steps), a binary problem (one-vs-rest through ``solvers.train``), a regularized bias or
#: none (dual_cd's own refusals beside: the free bias, the logistic loss's entropy dual)
COCOA_SOLVES = Solves.product(("binary", "ovr"), ("hinge", "squared_hinge"),
                              ("regularized", "none")).refusing(
    "dual_cd on distributed data is CoCoA+ over Hsieh et al.'s steps on a QP dual (hinge, "
    "squared_hinge); the logistic loss's entropy dual is not distributed (yet): use mfn or "
    "newton's loss on one machine, or the hinge / squared hinge", loss="logistic")


# -- the partition's side -------------------------------------------------------------------


@dataclass
class _LocalDual:
    """A partition's dual variables and its descent's state, kept where its rows are."""

    alpha: np.ndarray
    norms: np.ndarray  # ||x~_i||^2 (the bias column's s^2 included)
    diag: np.ndarray  # D_ii
    upper: np.ndarray  # U_i
    index: np.ndarray  # the permutation; its first istate[0] the active set
    istate: np.ndarray
    fstate: np.ndarray  # Algorithm 3's (M-bar, m-bar)
    rng: np.ndarray
    qd: np.ndarray | None = None  # sigma ||x~_i||^2 + D_ii, for ``qd_sigma``
    qd_sigma: float = 0.0
    checked: np.ndarray | None = None  # alpha at the last checked round's w
    before: np.ndarray | None = None  # alpha at the last round's start (its step's origin)


@dataclass
class CocoaAnswer:
    """A partition's answer to a round (:func:`cocoa_round`)."""

    delta: np.ndarray  # dw_k = A dalpha_[k], d + 1 entries
    loss_sum: float  # sum_i C_i L(1 - m_i(w)) at the round's w (checked rounds; else 0)
    alpha_sum: float  # at the round's start (checked rounds)
    conjugate_sum: float  # sum_i C_i L*(alpha_i / C_i) at the round's start (checked rounds)
    epochs: int
    met: bool  # the full set met eps in the last pass (Algorithm 3's rule, locally)
    spread: float
    work: int  # stored entries touched by the descent
    active: int
    check_seconds: float
    descent_seconds: float
    #: the line search's sums over the partition: sum dalpha_i, sum D_ii alpha_i dalpha_i,
    #: sum D_ii dalpha_i^2 (alpha at the round's start)
    step_sums: tuple = (0.0, 0.0, 0.0)


@dataclass
class CocoaCertificate:
    """A partition's share of D(alpha) at its checked alpha, A alpha recomputed
    (:func:`cocoa_certify`)."""

    alpha_sum: float
    conjugate_sum: float
    beta_alpha: np.ndarray


def _generator(seed: int) -> np.ndarray:
    """The kernels' xorshift state of a seed (the serial driver's map: partition 0's
    permutations are dual_cd's)."""
    return np.array([(seed * 0x9E3779B97F4A7C15 + 1) % 2**64 or 1], dtype=np.uint64)


def cocoa_pose(part, seed: int, beta: np.ndarray | None, index: int):
    """Make partition ``index``'s dual state on its posed problem (``part.state["problem"]``):
    alpha = 0, or the KKT map of the primal point ``beta`` clipped into the box
    (:func:`solvers.dual_cd.primal_start`'s start, a lost worker's resume); its permutations
    from seed ``seed + index``.  Returns A alpha's share (d + 1 entries) when a ``beta`` was
    given, else None."""
    problem: BinaryProblem = part.state["problem"]
    qp = problem.dual_qp()
    n = problem.n_samples
    lower, upper = problem.dual_bounds()
    if beta is None:
        alpha = np.zeros(n)
    else:
        beta = np.array(beta, dtype=np.float64)
        if problem.bias == "none":
            beta[-1] = 0.0
        alpha = np.clip(problem.dual_from_primal(beta), lower, upper) if n else np.zeros(0)
    diag = np.ascontiguousarray(qp.diagonal_shift, dtype=np.float64)
    part.state["cocoa"] = local = _LocalDual(
        alpha=alpha, norms=qp.diagonal() - diag, diag=diag,
        upper=np.ascontiguousarray(qp.upper, dtype=np.float64),
        index=np.arange(n, dtype=np.int64), istate=np.array([n], dtype=np.int64),
        fstate=np.array([np.inf, -np.inf]), rng=_generator(seed + index))
    if beta is None:
        return None
    # the driver scales this alpha by the dual's best t in [0, 1] (sent as the first
    # round's step, applied from alpha = 0)
    local.before = np.zeros(n)
    return (problem.primal_from_dual(alpha), float(alpha.sum()),
            float(np.dot(diag * alpha, alpha)))


def cocoa_round(part, w: np.ndarray, sigma: float, epochs: int, eps: float, check: bool,
                shrinking: bool, step: float = 1.0) -> CocoaAnswer:
    """One CoCoA+ round on the partition: when ``check``, its shares of P(w) and D(alpha) at
    the round's start (one pass for the margins); then ``epochs`` passes of the coordinate
    steps on its subproblem with ``sigma`` from v = w; returns dw_k = (v - w) / sigma."""
    problem: BinaryProblem = part.state["problem"]
    local: _LocalDual = part.state["cocoa"]
    start = time.perf_counter()
    if step != 1.0 and local.before is not None:
        # the last round's step scaled by the driver's line search: alpha = alpha_old +
        # t dalpha (t in [0, 1]: a convex combination of two points of the box)
        np.clip(local.before + step * (local.alpha - local.before), 0.0, local.upper,
                out=local.alpha)
    loss_sum = alpha_sum = conjugate_sum = 0.0
    if check:
        if problem.n_samples:
            weights, intercept = problem.split(w)
            slacks = 1.0 - problem.y * csr_matvec(problem.X, weights, intercept)
            loss_sum = float(problem.loss_function.sum(slacks, problem.cost))
            alpha_sum = float(local.alpha.sum())
            conjugate_sum = float(problem.loss_function.conjugate_sum(local.alpha,
                                                                      problem.cost))
        local.checked = local.alpha.copy()
    checked = time.perf_counter()
    if local.qd is None or local.qd_sigma != sigma:
        local.qd = sigma * local.norms + local.diag
        local.qd_sigma = sigma
    v = np.array(w, dtype=np.float64)
    ran, met, spread, work = 0, True, 0.0, 0
    if local.before is None or local.before.shape != local.alpha.shape:
        local.before = local.alpha.copy()
    else:
        local.before[:] = local.alpha
    if problem.n_samples:
        X = problem.X
        ran, met, spread, work = dcd_epochs(
            X.indptr, X.indices, X.data, problem.y, problem.effective_bias_scale, local.qd,
            local.diag, local.upper, local.alpha, v, local.index, local.istate, local.fstate,
            local.rng, epochs, eps, np.inf, shrinking, sigma)
    v -= w
    if sigma != 1.0:
        v /= sigma
    moved = local.alpha - local.before
    sums = (float(moved.sum()), float(np.dot(local.diag * local.before, moved)),
            float(np.dot(local.diag * moved, moved)))
    return CocoaAnswer(v, loss_sum, alpha_sum, conjugate_sum, int(ran), bool(met),
                       float(spread), int(work), int(local.istate[0]),
                       checked - start, time.perf_counter() - checked, sums)


def cocoa_certify(part) -> CocoaCertificate:
    """The partition's sums of D at the alpha of the last checked round, with its share of
    A alpha recomputed from alpha (no round-off of the steps)."""
    problem: BinaryProblem = part.state["problem"]
    local: _LocalDual = part.state["cocoa"]
    alpha = local.checked if local.checked is not None else local.alpha
    if not problem.n_samples:
        return CocoaCertificate(0.0, 0.0, problem.zeros())
    return CocoaCertificate(float(alpha.sum()),
                            float(problem.loss_function.conjugate_sum(alpha, problem.cost)),
                            problem.primal_from_dual(alpha))


def cocoa_dual(part) -> np.ndarray:
    """The partition's alpha (tests and diagnostics: n_k numbers, not a round of a solve)."""
    return part.state["cocoa"].alpha.copy()


# -- the row operator: the partitions here or on Dask workers -------------------------------


class _Part:
    """A partition in this process: the state a worker's :class:`~solvers.distributed.
    Partition` keeps (its posed problem, its solve's vectors)."""

    def __init__(self, problem: BinaryProblem):
        self.state = {"problem": problem}


class LocalPartitions:
    """The rows of one :class:`~solvers.problems.BinaryProblem` cut into consecutive slices
    of ``sizes`` rows (an empty one allowed), each a partition in this process: the same
    rounds as :class:`DistributedPartitions`, without workers."""

    def __init__(self, problem: BinaryProblem, sizes: list[int]):
        if sum(sizes) != problem.n_samples or any(s < 0 for s in sizes):
            raise ValueError(f"partition sizes {sizes} do not cover {problem.n_samples} rows")
        self.template = problem
        bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        weight = problem.sample_weight
        self.parts = [_Part(BinaryProblem(
            problem.X[a:b], problem.y[a:b], C=problem.C, loss=problem.loss, bias=problem.bias,
            bias_scale=problem.bias_scale, p=problem.p,
            sample_weight=None if weight is None else np.asarray(weight)[a:b]))
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        self.sizes = [int(s) for s in sizes]
        self.checkpoint = None

    @property
    def n_partitions(self) -> int:
        return len(self.parts)

    def round(self, function, *args, per_partition: list | None = None) -> list:
        return [function(part, *args, *(() if per_partition is None else
                                         (per_partition[k],)))
                for k, part in enumerate(self.parts)]


class DistributedPartitions:
    """The partitions of a :class:`~solvers.distributed.DistributedBinaryProblem` (posed on
    the workers): each round one :meth:`~solvers.distributed.PartitionGroup.map`."""

    def __init__(self, problem):
        self.problem = problem
        self.template = problem.template
        self.sizes = list(problem.dataset.partition_sizes)

    @property
    def n_partitions(self) -> int:
        return len(self.problem.group)

    @property
    def checkpoint(self):
        return self.problem.checkpoint

    @checkpoint.setter
    def checkpoint(self, value) -> None:
        self.problem.checkpoint = value

    def round(self, function, *args, per_partition: list | None = None) -> list:
        return self.problem.group.map(function, *args, per_partition=per_partition)


# -- the driver -----------------------------------------------------------------------------


def solve_cocoa(operator, params: DualCDParams, monitor: Monitor | None = None,
                start: WarmStart | None = None, *, sigma: float | None = None,
                line_search: bool | None = None) -> Solution:
    """CoCoA+ (the module docstring) over ``operator``'s partitions to the certified gap
    ``tol``; ``start``: a :class:`~solvers.base.WarmStart` whose ``beta`` (a primal point:
    a lost worker's resume, the checkpoint kept here) gives alpha by the KKT map.  Each
    record is a checked round: P(w), the relative gap, the dual value, the rounds and local
    epochs so far."""
    template: BinaryProblem = operator.template
    COCOA_SOLVES.require_problem(template, "dual_cd on distributed data")
    if params.stop_rule != "gap":
        raise ValueError("dual_cd on distributed data stops on the certified gap (stop_rule="
                         "'gap'): LIBLINEAR's projected-gradient rule is a serial pass's")
    reporter = Reporter(monitor, "relative_duality_gap")
    K = operator.n_partitions
    # the bound's K counts the partitions with rows (an empty one adds nothing to A dalpha)
    filled = max(sum(1 for s in operator.sizes if s > 0), 1)
    if sigma is None:
        sigma = params.cocoa_sigma
    sigma = float(filled) if sigma is None else float(sigma)
    line_search = filled > 1 if line_search is None else bool(line_search)
    steps = []
    epochs = int(params.local_epochs)
    beta = None if start is None or start.beta is None else \
        np.array(start.beta, dtype=np.float64)
    shares = operator.round(cocoa_pose, int(params.permutation_seed), beta,
                            per_partition=list(range(K)))
    step = 1.0
    if beta is None:
        w = template.zeros()
    else:
        # alpha by the KKT map of beta on every partition, scaled by the t in [0, 1] that
        # maximizes D(t alpha) = t sum alpha - t^2 / 2 (||A alpha||^2 + sum D alpha^2): the
        # hinge's map puts alpha_i at 0 or C_i, whose A alpha can lie far from beta (on
        # ijcnn1 a relative gap of 1.3 where a cold start has 1)
        image, total, square = reduce_sum(shares)
        curvature = float(np.dot(image, image)) + square
        step = min(max(total / curvature, 0.0), 1.0) if curvature > 0.0 else 1.0
        w = step * image
    eps = params.eps
    rounds = local_epochs = checks = 0
    work = 0
    check_seconds = descent_seconds = 0.0
    status = message = None
    primal = gap = np.inf
    checked_w = w.copy()
    next_check = 1  # the round of the next gap check
    history: list[tuple[int, float]] = []  # (round, gap) of the checks
    while True:
        check = rounds + 1 >= next_check or rounds + 1 >= params.max_iter
        answers = operator.round(cocoa_round, w, sigma, epochs, eps, check, params.shrinking,
                                 step)
        rounds += 1
        local_epochs += max(a.epochs for a in answers)
        work += sum(a.work for a in answers)
        check_seconds += max(a.check_seconds for a in answers)
        descent_seconds += max(a.descent_seconds for a in answers)
        met = all(a.met for a in answers)
        if not check:
            if met:
                eps = eps / 10.0
            w, step = _next_point(w, answers, line_search, steps)
            continue
        checks += 1
        regularizer = template.regularizer(w)
        primal = regularizer + float(sum(a.loss_sum for a in answers))
        dual = float(sum(a.alpha_sum for a in answers)) - regularizer \
            - float(sum(a.conjugate_sum for a in answers))
        gap = (primal - dual) / max(abs(primal), 1e-300)
        checked_w = w
        operator.checkpoint = WarmStart(beta=checked_w.copy())
        history.append((rounds, gap))
        next_check = rounds + _rounds_to_next_check(history, params.tol)
        stop = reporter(rounds, primal, gap, dual_objective=dual, rounds=rounds,
                        local_epochs=local_epochs, eps=eps,
                        active_size=int(sum(a.active for a in answers)),
                        projected_gradient_spread=float(max(a.spread for a in answers)))
        if gap <= params.tol:
            status = Termination.CONVERGED
            message = (f"converged: relative duality gap {format_gap(gap)} <= "
                       f"tol={params.tol:g}")
            break
        if stop:
            status, message = Termination.STOPPED, reporter.stop_message
            break
        if rounds >= params.max_iter:
            status = Termination.MAX_ITER
            message = (f"max_iter={params.max_iter} rounds reached (relative duality gap "
                       f"{format_gap(gap)})")
            break
        if met:
            eps = eps / 10.0  # the continuation of the serial driver (every partition's full
            # set met eps with the gap above tol)
        w, step = _next_point(w, answers, line_search, steps)
    # the gap without the round-off of the kept w: A alpha_t recomputed (one round)
    shares = operator.round(cocoa_certify)
    beta_alpha = reduce_sum([c.beta_alpha for c in shares])
    exact_dual = float(sum(c.alpha_sum for c in shares)) - template.regularizer(beta_alpha) \
        - float(sum(c.conjugate_sum for c in shares))
    exact_gap = (primal - exact_dual) / max(abs(primal), 1e-300)
    extras = {"rounds": rounds, "local_epochs": local_epochs, "epochs_per_round": epochs,
              "sigma": sigma, "partitions": K, "gap_checks": checks,
              "relative_duality_gap": float(exact_gap), "kept_w_gap": float(gap),
              "final_eps": eps, "work": int(work), "check_seconds": check_seconds,
              "descent_seconds": descent_seconds, "method": "cocoa+",
              "line_search": line_search,
              "steps": {"mean": float(np.mean(steps)) if steps else 1.0,
                        "min": float(min(steps)) if steps else 1.0}}
    return Solution(checked_w.copy(), float(primal), status, message, rounds, extras)


def _next_point(w: np.ndarray, answers: list, line_search: bool, steps: list
                ) -> tuple[np.ndarray, float]:
    """w + t sum_k dw_k and t: 1, or with the line search the t in [0, 1] minimizing the
    dual along the partitions' summed step (appended to ``steps``)."""
    delta = reduce_sum([a.delta for a in answers])
    step = 1.0
    if line_search:
        # f(alpha + t dalpha) - f(alpha) = t (w . dw + sum D alpha dalpha - sum dalpha)
        # + t^2 / 2 (||dw||^2 + sum D dalpha^2): its minimum over t in [0, 1]
        moved, cross, square = (float(sum(a.step_sums[j] for a in answers))
                                for j in range(3))
        slope = float(np.dot(w, delta)) + cross - moved
        curvature = float(np.dot(delta, delta)) + square
        if curvature > 0.0:
            step = min(max(-slope / curvature, 0.0), 1.0)
        steps.append(step)
    return (w + step * delta if step != 1.0 else w + delta), step


#: the most rounds between two gap checks
MAX_CHECK_SPACING = 8


def _rounds_to_next_check(history: list[tuple[int, float]], tol: float) -> int:
    """Rounds until the next gap check (each check is a pass over the rows, a quarter of a
    round at 2 M rows): the rate of the last two checks, r per round, predicts the rounds
    to ``tol`` as log(tol / gap) / log r; the next check comes after half of them (at least
    1, at most :data:`MAX_CHECK_SPACING`), so a prediction that is too short costs checks and
    one that is too long at most about as many rounds as it was off by.  Every round while
    there is no rate (the first two checks) or the gap did not fall."""
    if len(history) < 2:
        return 1
    (r0, g0), (r1, g1) = history[-2], history[-1]
    if not (0.0 < g1 < g0) or g1 <= tol:
        return 1
    rate = (g1 / g0) ** (1.0 / (r1 - r0))
    remaining = np.log(tol / g1) / np.log(rate)
    return int(min(max(remaining // 2, 1), MAX_CHECK_SPACING))


def run_distributed(problem, params: DualCDParams, monitor: Monitor | None,
                    start: WarmStart | None = None) -> Solution:
    """The spec's solve on distributed data (``solvers.train``): CoCoA+ over the partitions
    of the :class:`~solvers.distributed.DistributedBinaryProblem` ``problem``, its checkpoint
    (``problem.checkpoint``) the last checked w, from which a solve that lost a worker
    resumes (``start``: alpha by the KKT map on every partition, A alpha summed afresh)."""
    solution = solve_cocoa(DistributedPartitions(problem), params, monitor,
                           warm_start_argument(start))
    solution.extras.update(problem.communication_totals())
    return solution
