"""The cutting-plane family's pieces, each against a brute-force or independent answer:

* the jump-aware root of the core (:func:`piecewise_linear_root_jumps`) against a sorted sweep;
* OCAS's exact line search, binary and Crammer-Singer, against f evaluated at every
  breakpoint (and at the vertex of each piece's parabola), with ties, mu* = 0 and mu* > 1;
* the reduced QP's SMO against Clarabel (cvxpy) on small cut sets, and the cut buffer's
  pruning and aggregation;
* the risk oracles against the problem layer's numpy risk and subgradient;
* the lower bound is the full problem's dual objective at a feasible point;
* parameters: the free bias refused with a clear error.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from solvers.base import WarmStart
from solvers.core.linesearch import piecewise_linear_root_jumps
from solvers.core.sparse import TimedChoice, thread_count
from solvers.cutting_plane import (
    CutBuffer,
    CuttingPlaneParams,
    GridSearch,
    Ray,
    ThreePointSearch,
    crammer_singer_ray_breakpoints,
    simplex_smo,
    solve,
)
from solvers.cutting_plane.qp import simplex_active_set
from solvers.problems import BinaryProblem, CrammerSingerProblem
from solvers.train import InvalidParametersError, validate_params
from tests.shared_data import load, random_csr

# -- the jump-aware root ------------------------------------------------------------------------


def sweep_root(l0, r0, bp, dl, dr):
    """The definition, by sorting: the first point where the right slope is >= 0."""
    ls, rs = l0, r0
    if ls >= 0:
        return 0.0
    order = np.argsort(bp, kind="stable")
    bp, dl, dr = bp[order], dl[order], dr[order]
    j = 0
    while j < bp.size:
        p = bp[j]
        if ls + p * (rs - ls) >= 0:
            return -ls / (rs - ls)
        while j < bp.size and bp[j] == p:
            ls += dl[j]
            rs += dr[j]
            j += 1
        if ls + p * (rs - ls) >= 0:
            return p
    return -ls / (rs - ls) if rs > ls else np.inf


@pytest.mark.parametrize("seed", range(40))
def test_jump_root_matches_the_sorted_sweep(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 400))
    # integer breakpoints: many ties; some pure jumps, some kinks
    bp = rng.integers(1, 30, m).astype(float) / 10.0
    jump = rng.exponential(1.0, m)
    kink = rng.random(m) < 0.3
    dl = np.where(kink, 0.0, jump)
    dr = np.where(kink, jump, jump)
    A = rng.exponential(1.0) * (rng.random() < 0.8)
    l0 = -rng.exponential(1.0) * jump.sum() * rng.random()
    got = piecewise_linear_root_jumps(l0, l0 + A + 1e-3, bp, dl, dr)
    want = sweep_root(l0, l0 + A + 1e-3, bp, dl, dr)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_jump_root_lands_on_the_breakpoint_where_the_slope_jumps_over_zero():
    # slope -1 on (0, 0.5), jumps by 3 at 0.5: the minimizer is 0.5 exactly
    assert piecewise_linear_root_jumps(-1.0, -1.0 + 1e-9, np.array([0.5]), np.array([3.0]),
                                       np.array([3.0])) == 0.5
    # many equal breakpoints, each too small alone
    bp = np.full(50, 0.25)
    assert piecewise_linear_root_jumps(-1.0, -1.0, bp, np.full(50, 0.03),
                                       np.full(50, 0.03)) == 0.25
    assert piecewise_linear_root_jumps(0.5, 1.0, bp, bp, bp) == 0.0


# -- the exact line search against brute force ---------------------------------------------------


def brute_force_min(f, points):
    """min of a convex piecewise-quadratic f over mu >= 0 given a superset of its breakpoints:
    at a breakpoint, or at the vertex of a piece's parabola (fitted through three values)."""
    pts = np.unique(np.concatenate([[0.0], points[points > 0]]))
    pts = np.concatenate([pts, [pts[-1] + 1.0, pts[-1] + 10.0, pts[-1] + 1000.0]])
    best = min(f(p) for p in pts)
    for a, b in zip(pts[:-1], pts[1:], strict=True):
        m = 0.5 * (a + b)
        fa, fm, fb = f(a), f(m), f(b)
        curv = (fa - 2 * fm + fb) / ((b - a) / 2) ** 2
        if curv > 0:
            vertex = m - (fb - fa) / (b - a) / curv
            if a < vertex < b:
                best = min(best, f(vertex))
    return best


def binary_case(seed, n=300):
    rng = np.random.default_rng(seed)
    # margins on a coarse grid: ties between breakpoints and exact zeros of the slack
    mb = rng.integers(-6, 8, n) / 4.0
    mt = rng.integers(-6, 12, n) / 4.0
    cost = rng.choice([0.5, 1.0, 2.0], n)
    nb, A0 = rng.exponential(5.0), rng.exponential(50.0)
    B0 = rng.normal() * np.sqrt(nb * A0)
    return Ray("binary", mb, mt, cost, None, nb, B0, A0)


@pytest.mark.parametrize("seed", range(25))
def test_binary_exact_line_search_is_the_brute_force_minimum(seed):
    ray = binary_case(seed)
    mu = ray.exact()
    assert mu >= 0.0
    d = ray.ot - ray.ob
    with np.errstate(divide="ignore", invalid="ignore"):
        points = (1.0 - ray.ob) / d
    points = points[np.isfinite(points)]
    assert ray(mu) <= brute_force_min(ray, points) * (1 + 1e-13)


def test_binary_exact_line_search_at_zero_and_beyond_one():
    n = 50
    ob = np.zeros(n)
    cost = np.ones(n)
    # every step away from w_b hurts: mu = 0
    worse = Ray("binary", ob, np.full(n, -1.0), cost, None, 1.0, 1.0, 1.0)
    assert worse.exact() == 0.0
    # the loss keeps falling past mu = 1 and the regularizer barely grows: mu > 1
    far = Ray("binary", ob, np.full(n, 0.1), cost, None, 0.0, 0.0, 1e-3)
    mu = far.exact()
    assert mu == pytest.approx(10.0)  # every slack hits 0 at mu = 10: a breakpoint
    assert far(mu) <= min(far(mu - 1e-6), far(mu + 1e-6))


def crammer_singer_case(seed, n=120, k=5):
    rng = np.random.default_rng(seed)
    Sb = rng.integers(-4, 5, (n, k)) / 2.0
    St = rng.integers(-4, 5, (n, k)) / 2.0
    labels = rng.integers(0, k, n)
    cost = rng.choice([0.5, 1.0], n)
    nb, A0 = rng.exponential(5.0), rng.exponential(30.0)
    B0 = rng.normal() * np.sqrt(nb * A0)
    return Ray("crammer_singer", Sb, St, cost, labels, nb, B0, A0)


def crossings(ray):
    """Every crossing of two of an example's lines (a superset of the envelope breakpoints)."""
    n, k = ray.ob.shape
    out = []
    for i in range(n):
        y = ray.labels[i]
        u = np.where(np.arange(k) == y, 0.0, 1.0) + ray.ob[i] - ray.ob[i, y]
        v = (ray.ot[i] - ray.ob[i]) - (ray.ot[i, y] - ray.ob[i, y])
        for a in range(k):
            for b in range(a + 1, k):
                if v[a] != v[b]:
                    out.append((u[a] - u[b]) / (v[b] - v[a]))
    return np.asarray(out)


@pytest.mark.parametrize("seed", range(15))
def test_crammer_singer_exact_line_search_is_the_brute_force_minimum(seed):
    ray = crammer_singer_case(seed)
    mu = ray.exact()
    assert mu >= 0.0
    assert ray(mu) <= brute_force_min(ray, crossings(ray)) * (1 + 1e-13)


@pytest.mark.parametrize("seed", range(5))
def test_crammer_singer_envelopes_in_parallel_are_the_serial_ones(seed):
    """The parallel kernel packs each block of examples in its own share of the buffers and
    moves the blocks together after: the same breakpoints and jumps in the same order, and
    the slope at 0+ summed per block."""
    from solvers.cutting_plane.search import _cs_envelopes_parallel

    ray = crammer_singer_case(seed, n=400, k=7)
    slope, bp, jump = crammer_singer_ray_breakpoints(ray.ob, ray.ot, ray.labels, ray.cost,
                                                     False)
    assert bp.size > 0
    # every block count, whatever the machine's threads (prange runs the blocks in turn on one)
    for n_blocks in (2, 3, 7, 400):
        bp_blocks, jump_blocks = np.full(400 * 6, np.nan), np.full(400 * 6, np.nan)
        slope_blocks, total = _cs_envelopes_parallel(ray.ob, ray.ot, ray.labels, ray.cost,
                                                     bp_blocks, jump_blocks, n_blocks)
        assert slope_blocks == pytest.approx(slope, rel=1e-12, abs=1e-12)
        np.testing.assert_array_equal(bp_blocks[:total], bp)
        np.testing.assert_array_equal(jump_blocks[:total], jump)
    parallel = crammer_singer_ray_breakpoints(ray.ob, ray.ot, ray.labels, ray.cost, True)
    np.testing.assert_array_equal(parallel[1], bp)


def test_crammer_singer_line_search_at_zero():
    ray = crammer_singer_case(3)
    uphill = Ray("crammer_singer", ray.ob, ray.ob, ray.cost, ray.labels, 1.0, 1.0, 1.0)
    assert uphill.exact() == 0.0


@pytest.mark.parametrize("seed", range(10))
def test_grid_and_three_point_searches_come_close_to_the_exact_minimum(seed):
    """GCA2 and TCA are approximations: within their grid (beta^3) or window (gamma) of the
    exact minimizer, and never worse than f(0) when mu_prev = 0."""
    ray = binary_case(seed)
    exact = ray.exact()
    for search, width in ((GridSearch(), 0.2 ** 3), (ThreePointSearch(), 0.02)):
        mu = max(search(ray), 0.0)
        assert ray(mu) <= ray(0.0) + 1e-12
        assert abs(mu - exact) <= max(2 * width, 0.05 * exact) or \
            ray(mu) <= ray(exact) * (1 + 1e-3)


# -- the reduced QP -----------------------------------------------------------------------------


def clarabel_simplex_qp(H, b):
    import cvxpy as cp

    L = np.linalg.cholesky(H + 1e-12 * np.eye(H.shape[0]))
    a = cp.Variable(H.shape[0])
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(L.T @ a) - b @ a),
                         [a >= 0, cp.sum(a) <= 1])
    problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return problem.value


@pytest.mark.parametrize(("m", "dim", "seed"), [(5, 40, 0), (30, 10, 1), (60, 25, 2),
                                                (12, 3, 3)])
def test_smo_reaches_the_qp_optimum(m, dim, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, dim)) * rng.exponential(1.0, (m, 1))
    H = A @ A.T
    b = rng.exponential(1.0, m) * rng.choice([1.0, 3.0], m)
    alpha = np.zeros(m)
    f, gap, _ = simplex_smo(H, b, alpha, m, 1e-13, 1e-15, 10_000_000)
    assert alpha.min() >= 0 and alpha.sum() <= 1 + 1e-12
    optimum = clarabel_simplex_qp(H, b)
    assert f == pytest.approx(optimum, rel=1e-8, abs=1e-10)
    assert gap <= 1e-12 * max(1.0, abs(f))


def test_smo_with_slack_active_and_warm_start():
    """b small: the optimum leaves mass on the slack (sum alpha < 1); a warm start from a
    feasible point converges to the same value."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((8, 6)) * 10
    H = A @ A.T
    b = rng.exponential(0.1, 8)
    cold = np.zeros(8)
    f_cold, _, _ = simplex_smo(H, b, cold, 8, 1e-14, 0.0, 10_000_000)
    assert cold.sum() < 1.0
    warm = np.full(8, 0.125)
    f_warm, _, _ = simplex_smo(H, b, warm, 8, 1e-14, 0.0, 10_000_000)
    assert f_warm == pytest.approx(f_cold, rel=1e-10)
    assert f_cold == pytest.approx(clarabel_simplex_qp(H, b), rel=1e-8)


@pytest.mark.parametrize(("m", "dim", "seed"), [(5, 40, 0), (30, 10, 1), (60, 25, 2),
                                                (12, 3, 3), (40, 40, 4)])
def test_active_set_reaches_the_qp_optimum(m, dim, seed):
    """Cold and warm starts, dependent cuts (m > dim: H singular), against Clarabel."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, dim)) * rng.exponential(1.0, (m, 1))
    H = A @ A.T
    b = rng.exponential(1.0, m) * rng.choice([1.0, 3.0], m)
    optimum = clarabel_simplex_qp(H, b)
    for start in (np.zeros(m), np.full(m, 1.0 / m), rng.dirichlet(np.ones(m)) * 0.5):
        alpha = start.copy()
        f, gap, _, done = simplex_active_set(H, b, alpha, m, 1e-13, 1e-15, 10 * m, 1000)
        if not done:  # the caller's fall-back
            f, gap, _ = simplex_smo(H, b, alpha, m, 1e-13, 1e-15, 10_000_000)
        assert alpha.min() >= 0 and alpha.sum() <= 1.0
        assert f == pytest.approx(0.5 * alpha @ H @ alpha - b @ alpha, rel=1e-10, abs=1e-12)
        assert f == pytest.approx(optimum, rel=1e-8, abs=1e-10)


def test_active_set_with_the_slack_active():
    rng = np.random.default_rng(5)
    A = rng.standard_normal((8, 6)) * 10
    H = A @ A.T
    b = rng.exponential(0.1, 8)
    alpha = np.full(8, 0.125)  # sum 1: the slack starts at 0 and must take mass
    f, _, _, done = simplex_active_set(H, b, alpha, 8, 1e-14, 0.0, 100, 1000)
    assert done and alpha.sum() < 1.0
    assert f == pytest.approx(clarabel_simplex_qp(H, b), rel=1e-8)


@pytest.mark.parametrize("solver", ["active_set", "smo"])
def test_cut_buffer_solvers_agree(solver):
    rng = np.random.default_rng(11)
    buffer = CutBuffer(15, solver=solver)
    for _ in range(25):
        buffer.add(rng.standard_normal(15) * (rng.random(15) < 0.6), rng.exponential())
    bound, _, _ = buffer.solve(1e-13)
    H = buffer.H[:25, :25]
    assert -bound == pytest.approx(clarabel_simplex_qp(H, buffer.b[:25]), rel=1e-8)


def test_timed_choice_keeps_the_faster_form_and_rechecks_the_other():
    """The choice logic on recorded times (no clock involved)."""
    choice = TimedChoice(True, recheck=4)
    choice.allowed = True  # as on a machine with two threads
    assert choice.choose() is False  # serial first
    choice.record(False, 0.0001)
    # serial below TIMED_CHOICE_MIN_SECONDS: parallel is never tried
    for _ in range(20):
        assert choice.choose() is False
        choice.record(False, 0.0001)
    slow = TimedChoice(True, recheck=4)
    slow.allowed = True
    slow.record(False, 0.01)  # a slow serial call: parallel is tried next
    assert slow.choose() is True
    slow.record(True, 0.004)  # and wins
    assert slow.choose() is True and slow.current is True
    for _ in range(4):
        slow.record(slow.choose(), 0.004)
    assert slow.choose() is False  # the serial form is re-timed after `recheck` calls
    slow.record(False, 0.01)  # loses again: its next probe waits twice as long
    probes = []
    for _ in range(20):
        parallel = slow.choose()
        probes.append(parallel)
        slow.record(parallel, 0.004 if parallel else 0.01)
    assert probes.index(False) == 8
    serial = TimedChoice(False)
    assert serial.choose() is False


def test_cut_buffer_prunes_and_aggregates_without_changing_the_bound():
    rng = np.random.default_rng(7)
    dim = 12
    buffer = CutBuffer(dim, capacity=6, max_inactive=2)
    cuts = [(rng.standard_normal(dim) * (rng.random(dim) < 0.5), rng.exponential())
            for _ in range(6)]
    for a, b in cuts:
        buffer.add(a, b)
    H = np.array([[a1 @ a2 for a2, _ in cuts] for a1, _ in cuts])
    assert np.allclose(buffer.H[:6, :6], H)
    bound, _, _ = buffer.solve(1e-14)
    w = buffer.weights()
    alpha = buffer.alpha[:6].copy()
    assert np.allclose(w, -sum(al * a for al, (a, _) in zip(alpha, cuts, strict=True)))
    # a full buffer makes room: the inactive cuts go first, the bound is unchanged
    buffer.add(rng.standard_normal(dim), 0.0)
    assert buffer.m <= 6
    bound2, _, _ = buffer.solve(1e-14)
    assert bound2 >= bound - 1e-10 * abs(bound)
    # all active: the aggregate keeps w(alpha) and the bound
    agg = CutBuffer(dim, capacity=2)
    agg.add(np.ones(dim), 3.0)
    agg.add(-np.ones(dim), 3.0)
    bound, _, _ = agg.solve(1e-14)
    w = agg.weights()
    agg._make_room()
    assert agg.m == 1 and agg.aggregations == 1
    assert np.allclose(agg.weights(), w)
    assert agg.solve(1e-14)[0] >= bound - 1e-12


# -- the oracles --------------------------------------------------------------------------------


@pytest.mark.parametrize("bias", ["regularized", "none"])
def test_binary_oracle_matches_the_problem_layer(bias):
    X = random_csr(400, 30, 0.2, 0)
    rng = np.random.default_rng(0)
    y = np.where(rng.random(400) < 0.4, 1.0, -1.0)
    problem = BinaryProblem(X, y, C=0.7, loss="hinge", bias=bias, bias_scale=2.0,
                            sample_weight=rng.uniform(0.5, 2.0, 400))
    beta = rng.standard_normal(31) * 0.3
    risk, cut, margins = problem.risk_oracle(beta)
    r0, a0 = problem.risk_subgradient(beta)
    assert risk == pytest.approx(r0, rel=1e-12)
    assert np.allclose(cut, a0, atol=1e-12)
    assert np.allclose(margins, problem.margins(beta))
    risk2, cut2, _ = problem.risk_oracle(beta, margins)
    assert risk2 == pytest.approx(risk) and np.allclose(cut2, cut)


def test_crammer_singer_oracle_matches_the_problem_layer():
    X = random_csr(300, 20, 0.3, 1)
    rng = np.random.default_rng(1)
    problem = CrammerSingerProblem(X, rng.integers(0, 4, 300), 4, C=0.5, bias_scale=1.5)
    W = rng.standard_normal((4, 21)) * 0.5
    risk, G, scores, k = problem.risk_oracle(W)
    r0, G0 = problem.risk_subgradient(W)
    assert risk == pytest.approx(r0, rel=1e-12)
    assert np.allclose(G, G0, atol=1e-12)
    assert np.allclose(scores, problem.scores(W))


# -- the certificate ----------------------------------------------------------------------------


def test_lower_bound_is_the_full_dual_at_a_feasible_point():
    """D_t(alpha) of the reduced dual equals D(alpha_full) of the full problem with alpha_i =
    C_i sum_j alpha_j [xi_i > 0 at cut j] in [0, C_i]: the cutting-plane bound is a certified
    duality gap.  Checked on cuts taken at a few points of heart_scale."""
    ds = load("heart_scale")
    y = np.where(ds.y == ds.classes[1], 1.0, -1.0)
    problem = BinaryProblem(ds.X, y, C=0.3, loss="hinge", sample_weight=np.linspace(0.5, 2, 270))
    rng = np.random.default_rng(0)
    buffer = CutBuffer(problem.n_features + 1)
    active_sets = []
    for _ in range(6):
        beta = rng.standard_normal(problem.n_features + 1) * 0.2
        risk, cut, margins = problem.risk_oracle(beta)
        buffer.add(cut, risk - cut @ beta)
        active_sets.append(margins < 1.0)
    bound, _, _ = buffer.solve(1e-14)
    alpha = buffer.alpha[:6]
    alpha_full = problem.cost * sum(a * s for a, s in zip(alpha, active_sets, strict=True))
    assert np.all(alpha_full <= problem.cost * (1 + 1e-12))
    assert problem.dual_objective(alpha_full) == pytest.approx(bound, rel=1e-10)
    assert np.allclose(problem.primal_from_dual(alpha_full), buffer.weights())


def test_rescaled_cuts_are_the_cuts_at_the_new_c():
    """The risk is linear in C, so the buffer of cuts taken at C = 0.3, rescaled by 2 / 0.3,
    holds the cuts taken at the same points at C = 2: the same entries, offsets, Gram matrix
    and reduced-problem bound (C paths carry their cuts this way)."""
    ds = load("heart_scale")
    y = np.where(ds.y == ds.classes[1], 1.0, -1.0)
    problem = BinaryProblem(ds.X, y, C=0.3, loss="hinge", sample_weight=np.linspace(0.5, 2, 270))
    rng = np.random.default_rng(3)
    points = [rng.standard_normal(problem.n_features + 1) * 0.2 for _ in range(5)]
    buffers = {}
    for C in (0.3, 2.0):
        buffers[C] = CutBuffer(problem.n_features + 1)
        for beta in points:
            risk, cut, _ = problem.with_C(C).risk_oracle(beta)
            buffers[C].add(cut, risk - cut @ beta)
    buffers[0.3].solve(1e-14)  # a solved buffer keeps its alpha as the warm start
    buffers[0.3].rescale(2.0 / 0.3)
    carried, fresh = buffers[0.3], buffers[2.0]
    assert np.allclose(carried.val[:carried.ptr[5]], fresh.val[:fresh.ptr[5]], rtol=1e-12)
    assert np.allclose(carried.b[:5], fresh.b[:5], rtol=1e-12)
    assert np.allclose(carried.H[:5, :5], fresh.H[:5, :5], rtol=1e-12)
    assert carried.solve(1e-14)[0] == pytest.approx(fresh.solve(1e-14)[0], rel=1e-10)
    assert np.allclose(carried.weights(), fresh.weights(), atol=1e-9)


def test_a_start_point_is_where_the_run_begins():
    """``start`` puts w_best (and the first cut) at a given point: from the optimum of the
    same problem the first record is already at the optimal objective."""
    from solvers.cutting_plane import solve
    from solvers.cutting_plane.params import CuttingPlaneParams
    from solvers.monitor import ListMonitor

    ds = load("heart_scale")
    y = np.where(ds.y == ds.classes[1], 1.0, -1.0)
    problem = BinaryProblem(ds.X, y, C=1.0, loss="hinge")
    params = CuttingPlaneParams(C=1.0, tol=1e-6)
    optimum = solve(problem, params)
    monitor = ListMonitor()
    warm = solve(problem, params, monitor, start=WarmStart(beta=optimum.beta))
    assert warm.status == "converged"
    assert monitor.records[0].objective <= optimum.objective * (1 + 1e-12)
    assert warm.objective == pytest.approx(optimum.objective, rel=2e-6)


@pytest.mark.parametrize("method", ["cpa", "ocas", "gca2", "tca"])
def test_records_carry_the_certificate_and_the_timings(method):
    from solvers.cutting_plane import solve
    from solvers.cutting_plane.params import CuttingPlaneParams
    from solvers.monitor import ListMonitor

    ds = load("heart_scale")
    y = np.where(ds.y == ds.classes[1], 1.0, -1.0)
    problem = BinaryProblem(ds.X, y, C=1.0, loss="hinge")
    monitor = ListMonitor()
    solution = solve(problem, CuttingPlaneParams(C=1.0, tol=1e-4, method=method), monitor)
    assert solution.status == "converged"
    last = monitor.records[-1]
    assert last.objective == pytest.approx(problem.objective(solution.beta), rel=1e-12)
    assert last.optimality <= 1e-4
    for key in ("lower_bound", "cuts", "nnz_alpha", "mu", "time_oracle", "time_qp",
                "time_line_search"):
        assert key in last.extras
    bounds = [r.extras["lower_bound"] for r in monitor.records]
    assert np.all(np.diff(bounds) >= 0) and bounds[-1] <= last.objective
    if method == "ocas":  # the exact search never makes the best point worse (GCA2 and TCA
        # may: their mu is approximate, and Arnosti keeps it whatever f(mu) is)
        assert np.all(np.diff([r.objective for r in monitor.records]) <= 1e-12)


def test_free_bias_is_refused_with_a_clear_error():
    with pytest.raises(InvalidParametersError, match="unbounded"):
        validate_params("cutting_plane", bias="free")
    with pytest.raises(InvalidParametersError):
        validate_params("cutting_plane", loss="squared_hinge")
    spec, params = validate_params("cutting_plane", method="tca", multiclass="crammer_singer")
    assert params.method == "tca"


def test_serial_kernel_form_is_the_one_thread_run_bit_for_bit():
    """kernel_form='serial' (how auto races the cutting planes) never times the oracle's
    forms, whose sums differ in order: on every thread it returns the point a one-thread run
    returns, whatever the load."""
    data = load("a9a").subset(np.arange(6000))
    problem = BinaryProblem(data.X, np.where(data.y == data.classes[1], 1.0, -1.0), C=1.0,
                            loss="hinge")
    params = CuttingPlaneParams(C=1.0, loss="hinge", method="gca2", tol=1e-4,
                                kernel_form="serial")
    with thread_count(1):
        alone = solve(problem, params)
    with thread_count(max(2, numba.config.NUMBA_NUM_THREADS)):
        serial = solve(problem, params)
    assert serial.status == "converged" and serial.extras["parallel_oracle_calls"] == 0
    np.testing.assert_array_equal(serial.beta, alone.beta)
