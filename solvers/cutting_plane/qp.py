"""The reduced problem of the cutting-plane methods and its solver.

With cuts R(v) >= a_j . v + b_j (j = 1..t, in ``docs/design.md``'s C scale: a_j = -sum_i C_i
L'(xi_i) y_i x~_i), the reduced problem is

    F_t(w) = 1/2 ||w||^2 + max(0, max_j a_j . w + b_j)

and its dual, over the simplex with slack,

    maximize  D_t(alpha) = b' alpha - 1/2 alpha' H alpha,   H_jk = a_j . a_k,
    subject to alpha >= 0,  sum_j alpha_j <= 1;           w(alpha) = -sum_j alpha_j a_j.

libocas writes the cuts without C (a_j / C, b_j / C) and the constraint sum alpha <= C: its
alpha is C times ours.  Every feasible alpha is also a dual point of the full problem
(alpha_i = C_i sum_j alpha_j [i in cut j] lies in [0, C_i]) with the same value, so
D_t(alpha) is a certified lower bound on the optimum, whether or not the QP is solved exactly.

:class:`CutBuffer` keeps the cuts (sparse: their nonzeros), their offsets and the Gram matrix
H, one new row per cut (libocas's ``add_new_cut``); a cut whose alpha stayed 0 for
``max_inactive`` consecutive solves is removed (SVMperf's rule, K = 50), and a full buffer
(libocas: 2000 cuts) first drops every cut with alpha = 0, and if all are active, replaces them
by their aggregate sum_j alpha_j (a_j, b_j) / sum_j alpha_j (a convex combination of cuts is a
cut; w(alpha) and D_t are unchanged), so long runs do not grow H without end.

:func:`simplex_active_set` solves the dual by default: a primal active-set method (Nocedal &
Wright, Algorithm 16.3) warm-started at the previous alpha, each iteration one solve over the
free cuts through a Cholesky factor that is updated as cuts join and leave the free set (a
ridge of 1e-10 max H_jj makes a singular block give a long descent step that the ratio test
cuts).  It is our choice, which the papers leave open: SVMperf and libocas
use their own SMO-like solvers (libocas: ``libqp_splx``, below), and at large C the SMO took
most of the time: on a9a at C = 100 the active-set method solved the same QPs about ten
times faster (bench/history/measurements.json, cutting-plane-qp-smo).  Each iteration used to
factorize afresh, O(s^3) for s free cuts; updating the factor cut the QP's share of an OCAS
run on a9a at C = 100 by a factor of eight (cutting-plane-qp-factor-update).  The
factorization at the start of a solve is still O(s^3), so each solve first takes up to
``config.CUTTING_PLANE_SMO_STEPS_BEFORE_ACTIVE_SET`` m SMO steps, which finish most solves at
a loose outer gap from a close warm start: on dna (Crammer-Singer, up to 250 free cuts, tol
1e-4, load average 18) the QP took 2.3-2.6 s so, 3.2-3.8 s with the active-set method alone,
2.5-3.2 s with the SMO alone (three runs each); on the a9a replay above 0.95 s.  When the
active-set method gives up (more free cuts than ``config.CUTTING_PLANE_ACTIVE_SET_MAX_FREE``,
cycling, or rounding undoing a decrease even with the gradient recomputed) the SMO finishes
from the feasible point it reached.

:func:`simplex_smo` (``qp_solver="smo"``, and the fall-back) solves the dual by pairwise (SMO)
steps on the simplex with slack (libqp's ``libqp_splx``, Franc & Hlavac 2006): the slack is a
variable alpha_0 = 1 - sum alpha with zero gradient; each step moves mass from the variable of
largest gradient in the support to the one with the best second-order gain, exactly along the
pair. Warm-started at the previous alpha (the new cut at 0); stopped when the Frank-Wolfe gap
alpha' g - min(0, min_j g_j), which bounds D_t* - D_t(alpha), is at most ``tol_rel``
|D_t(alpha)| (libocas: half the outer relative tolerance) or ``tol_abs``. """

from __future__ import annotations

import numpy as np
from numba import njit

from solvers import config


@njit(cache=True, nogil=True)
def _objective_and_gap(x, g, b, m):
    """The reduced QP's objective f = (x'g - x'b) / 2 at ``x`` (``g`` its gradient) and the
    Frank-Wolfe gap x'g - min(0, min_j g_j) (the slack's gradient is 0); with the two sums
    x'g and x'b."""
    ag = 0.0
    ab = 0.0
    gmin = 0.0  # the slack's gradient
    for j in range(m):
        ag += x[j] * g[j]
        ab += x[j] * b[j]
        if g[j] < gmin:
            gmin = g[j]
    return 0.5 * (ag - ab), ag - gmin, ag, ab


@njit(cache=True, nogil=True)
def _reduced_gradient(H, b, x, m, g):
    """g[:m] = H[:m, :m] x[:m] - b[:m], skipping the zero entries of x (most cuts are
    inactive)."""
    for j in range(m):
        acc = -b[j]
        for k in range(m):
            if x[k] != 0.0:
                acc += H[j, k] * x[k]
        g[j] = acc


@njit(cache=True, nogil=True, inline="always")
def _sum_ceiling(m):
    """The largest sum of m nonnegative alphas kept: 1 - 4 m u (u the unit roundoff), so that
    their sum in floating point is at most 1 in any order of summation (an order errs by at
    most (m - 1) u of the exact sum; a sequential sum of exactly 1 was seen to sum to
    1 + 2e-16 pairwise, NumPy's order).  The bound D_t(alpha) must be at a feasible point."""
    return 1.0 - 4.0 * m * 1.1102230246251565e-16


@njit(cache=True, nogil=True, inline="always")
def _simplex_scale(x, m):
    """The factor (at most 1) that brings sum x[:m] within :func:`_sum_ceiling`."""
    total = 0.0
    for j in range(m):
        total += x[j]
    ceiling = _sum_ceiling(m)
    return ceiling / total if total > ceiling else 1.0


@njit(cache=True, nogil=True)
def simplex_smo(H, b, alpha, m, tol_rel, tol_abs, max_steps):
    """Minimize f = 1/2 alpha' H alpha - b' alpha over alpha >= 0, sum alpha <= 1 (the first
    ``m`` entries; H may be larger, the leading m x m block is used).  ``alpha`` is the warm
    start (feasible) and is updated in place.  Returns (f, gap, steps)."""
    g = np.empty(m)
    _reduced_gradient(H, b, alpha, m, g)
    slack = 1.0
    for j in range(m):
        slack -= alpha[j]
    if slack < 0.0:
        slack = 0.0
    steps = 0
    f = 0.0
    gap = np.inf
    ag = 0.0
    ab = 0.0
    while True:
        f, gap, ag, ab = _objective_and_gap(alpha, g, b, m)
        if gap <= tol_abs or gap <= tol_rel * abs(f) or steps >= max_steps:
            break
        # v: largest gradient over the support (slack included, gradient 0)
        v = -1
        gv = -np.inf
        if slack > 0.0:
            gv = 0.0
        for j in range(m):
            if alpha[j] > 0.0 and g[j] > gv:
                gv = g[j]
                v = j
        hvv = H[v, v] if v >= 0 else 0.0
        # u: best second-order decrease moving mass from v to u
        u = -2
        best = 0.0
        if v >= 0 and gv > 0.0:  # u = slack (curvature H_vv)
            if hvv > 0.0:
                best = gv * gv / hvv
            else:
                best = np.inf
            u = -1
        for j in range(m):
            if j == v:
                continue
            diff = gv - g[j]
            if diff <= 0.0:
                continue
            curv = H[j, j] + hvv - (2.0 * H[j, v] if v >= 0 else 0.0)
            gain = diff * diff / curv if curv > 0.0 else np.inf
            if gain > best:
                best = gain
                u = j
        if u == -2:
            break
        # step t in [0, mass of v] along e_u - e_v
        avail = alpha[v] if v >= 0 else slack
        gu = g[u] if u >= 0 else 0.0
        curv = (H[u, u] if u >= 0 else 0.0) + hvv
        if u >= 0 and v >= 0:
            curv -= 2.0 * H[u, v]
        t = (gv - gu) / curv if curv > 0.0 else avail
        if t > avail:
            t = avail
        if t <= 0.0:
            break
        if u >= 0:
            alpha[u] += t
        else:
            slack += t
        if v >= 0:
            alpha[v] -= t
            if t == avail:
                alpha[v] = 0.0
        else:
            slack -= t
            if t == avail:
                slack = 0.0
        for j in range(m):
            delta = 0.0
            if u >= 0:
                delta += H[j, u]
            if v >= 0:
                delta -= H[j, v]
            g[j] += t * delta
        steps += 1
    # the pairwise steps keep sum alpha <= 1 up to rounding: scale into the simplex (f from
    # the loop's last sums: alpha' H alpha = ag + ab, so f(s alpha) needs no product)
    scale = _simplex_scale(alpha, m)
    if scale < 1.0:
        for j in range(m):
            alpha[j] *= scale
        f = 0.5 * scale * scale * (ag + ab) - scale * ab
    return f, gap, steps


@njit(cache=True, nogil=True)
def _gram_row(ptr, idx, val, m, dense, out):
    """out[j] = cut_j . dense for the m stored cuts."""
    for j in range(m):
        acc = 0.0
        for k in range(ptr[j], ptr[j + 1]):
            acc += val[k] * dense[idx[k]]
        out[j] = acc


@njit(cache=True, nogil=True)
def _combine(ptr, idx, val, m, coef, out):
    """out = sum_j coef_j cut_j."""
    out[:] = 0.0
    for j in range(m):
        c = coef[j]
        if c != 0.0:
            for k in range(ptr[j], ptr[j + 1]):
                out[idx[k]] += c * val[k]


@njit(cache=True, nogil=True)
def _compact(H, b, alpha, inactive, ptr, idx, val, m, keep):
    """Keep the cuts ``keep`` (sorted) of the m stored, in place: H's rows and columns, the
    offsets, alpha, the inactivity counts and the entries (one Numba pass: the NumPy fancy
    indexing and one arange per cut it replaces took about 1 ms per call on dna)."""
    m_new = keep.shape[0]
    for r in range(m_new):
        kr = keep[r]
        for c in range(m_new):
            H[r, c] = H[kr, keep[c]]
        b[r] = b[kr]
        alpha[r] = alpha[kr]
        inactive[r] = inactive[kr]
    for r in range(m_new, m):
        b[r] = 0.0
        alpha[r] = 0.0
        inactive[r] = 0
    pos = 0
    for r in range(m_new):
        kr = keep[r]
        start, stop = ptr[kr], ptr[kr + 1]
        ptr[r] = pos  # ptr[kr] >= ptr[r] and the entries move left: no overwrite
        for t in range(start, stop):
            idx[pos] = idx[t]
            val[pos] = val[t]
            pos += 1
    ptr[m_new] = pos


class CutBuffer:
    """The cuts (a_j, b_j), their Gram matrix H and the dual alpha (module docstring)."""

    def __init__(self, dim: int, capacity: int = 2000, max_inactive: int = 50,
                 solver: str = "active_set", max_free: int | None = None):
        if solver not in ("active_set", "smo"):
            raise ValueError(f"unknown reduced-QP solver {solver!r}")
        self.dim = dim
        self.capacity = capacity
        self.max_inactive = max_inactive
        self.solver = solver
        self.max_free = config.CUTTING_PLANE_ACTIVE_SET_MAX_FREE if max_free is None \
            else max_free
        self.active_set_iterations = 0
        self.smo_steps = 0
        self.m = 0
        size = min(capacity, 64)
        self.H = np.zeros((size, size))
        self.b = np.zeros(size)
        self.alpha = np.zeros(size)
        self.inactive = np.zeros(size, dtype=np.int64)
        self.ptr = np.zeros(size + 1, dtype=np.int64)
        self.idx = np.zeros(1024, dtype=np.int64)
        self.val = np.zeros(1024)
        self.removed = 0
        self.aggregations = 0

    # -- storage -------------------------------------------------------------------------
    def _grow_cuts(self, m_new: int):
        size = self.H.shape[0]
        if m_new <= size:
            return
        new = min(self.capacity, max(2 * size, m_new))
        H = np.zeros((new, new))
        H[:size, :size] = self.H
        self.H = H
        for name in ("b", "alpha", "inactive"):
            old = getattr(self, name)
            arr = np.zeros(new, dtype=old.dtype)
            arr[:size] = old
            setattr(self, name, arr)
        ptr = np.zeros(new + 1, dtype=np.int64)
        ptr[:size + 1] = self.ptr
        self.ptr = ptr

    def _grow_entries(self, total: int):
        if total > self.idx.shape[0]:
            new = max(2 * self.idx.shape[0], total)
            for name in ("idx", "val"):
                old = getattr(self, name)
                arr = np.zeros(new, dtype=old.dtype)
                arr[:old.shape[0]] = old
                setattr(self, name, arr)

    def add(self, a: np.ndarray, offset: float):
        """Append the cut a . v + offset (a dense, length ``dim``) and its row of H."""
        if self.m >= self.capacity:
            self._make_room()
        m = self.m
        self._grow_cuts(m + 1)
        nz = np.flatnonzero(a)
        start = self.ptr[m]
        self._grow_entries(start + nz.shape[0])
        self.idx[start:start + nz.shape[0]] = nz
        self.val[start:start + nz.shape[0]] = a[nz]
        self.ptr[m + 1] = start + nz.shape[0]
        row = np.empty(m + 1)
        _gram_row(self.ptr, self.idx, self.val, m + 1, a, row)
        self.H[m, :m + 1] = row
        self.H[:m + 1, m] = row
        self.b[m] = offset
        self.alpha[m] = 0.0
        self.inactive[m] = 0
        self.m = m + 1

    def _keep(self, keep: np.ndarray):
        """Keep the cuts ``keep`` (sorted), compacting H, the offsets, alpha and the entries."""
        m_new = keep.shape[0]
        _compact(self.H, self.b, self.alpha, self.inactive, self.ptr, self.idx, self.val,
                 self.m, np.ascontiguousarray(keep, dtype=np.int64))
        self.removed += self.m - m_new
        self.m = m_new

    def _make_room(self):
        m = self.m
        active = np.flatnonzero(self.alpha[:m] > 0.0)
        if active.shape[0] < m:
            self._keep(active)
            return
        # every cut active: their aggregate replaces them
        coef = self.alpha[:m].copy()
        total = coef.sum()
        a = self.combine(coef / total)
        offset = float(coef @ self.b[:m]) / total
        self.m = 0
        self.ptr[0] = 0
        self.removed += m
        self.aggregations += 1
        self.add(a, offset)
        self.alpha[0] = total

    def counters(self) -> dict[str, int]:
        """The work done so far, under the names a run's extras give it."""
        return {"cuts_removed": self.removed, "aggregations": self.aggregations,
                "qp_active_set_iterations": self.active_set_iterations,
                "qp_smo_steps": self.smo_steps}

    def rescale(self, factor: float):
        """Scale every cut (a_j, b_j) by ``factor`` > 0, and H by its square.  The risk is
        linear in C (R = sum_i C_i loss_i with C_i = C sample_weight_i), so a cut of R at C
        times C'/C is a cut of R at C': a C path carries its cuts this way.  alpha stays
        feasible (the simplex does not depend on C) and warm-starts the next solve."""
        m = self.m
        self.val[:self.ptr[m]] *= factor
        self.b[:m] *= factor
        self.H[:m, :m] *= factor * factor

    def combine(self, coef: np.ndarray) -> np.ndarray:
        out = np.empty(self.dim)
        _combine(self.ptr, self.idx, self.val, self.m, np.ascontiguousarray(coef[:self.m]), out)
        return out

    # -- the dual ------------------------------------------------------------------------
    def solve(self, tol_rel: float, tol_abs: float = 0.0, max_steps: int = 10_000_000):
        """Solve the reduced dual from the current alpha; returns (D_t(alpha), the QP's
        Frank-Wolfe gap, active-set iterations + SMO steps) and counts each cut's consecutive
        solves at alpha = 0.  ``solver`` "active_set": :func:`simplex_active_set`, finished by
        the SMO when it gives up; "smo": the SMO alone."""
        m = self.m
        steps = 0
        done = False
        if self.solver == "active_set":
            # a few SMO steps first: from a warm start close to the optimum (most solves at a
            # loose outer gap) they are cheaper than one dense system
            budget = config.CUTTING_PLANE_SMO_STEPS_BEFORE_ACTIVE_SET * m
            f, gap, steps = simplex_smo(self.H, self.b, self.alpha, m, tol_rel, tol_abs, budget)
            self.smo_steps += steps
            done = steps < budget
            if not done:
                f, gap, iterations, done = simplex_active_set(
                    self.H, self.b, self.alpha, m, tol_rel, tol_abs, 3 * m + 20, self.max_free)
                self.active_set_iterations += iterations
                steps += iterations
        if not done:
            f, gap, smo = simplex_smo(self.H, self.b, self.alpha, m, tol_rel, tol_abs,
                                      max_steps)
            self.smo_steps += smo
            steps += smo
        zero = self.alpha[:m] == 0.0
        self.inactive[:m] = np.where(zero, self.inactive[:m] + 1, 0)
        return -f, gap, steps

    def prune(self):
        """Drop the cuts inactive for ``max_inactive`` consecutive solves."""
        m = self.m
        stale = self.inactive[:m] >= self.max_inactive
        if stale.any():
            self._keep(np.flatnonzero(~stale))

    def weights(self) -> np.ndarray:
        """w(alpha) = -sum_j alpha_j a_j."""
        return -self.combine(self.alpha)

    @property
    def nnz_alpha(self) -> int:
        return int(np.count_nonzero(self.alpha[:self.m]))


@njit(cache=True, nogil=True, inline="always")
def _free_entry(H, m, delta, i, j):
    """(H_FF + delta I)_ij of the active-set method's variables (the slack, variable m, has no
    curvature: only the ridge)."""
    v = H[i, j] if i < m and j < m else 0.0
    return v + delta if i == j else v


@njit(cache=True, nogil=True)
def _factor_append(L, order, s, H, m, delta, j):
    """Append variable j to the Cholesky factor L of (H_FF + delta I) over ``order[:s]``: one
    forward substitution, O(s^2).  Returns False (nothing changed) when the new pivot is not
    positive in floating point."""
    acc_d = _free_entry(H, m, delta, j, j)
    for a in range(s):
        v = _free_entry(H, m, delta, order[a], j)
        for c in range(a):
            v -= L[a, c] * L[s, c]
        v /= L[a, a]
        L[s, a] = v
        acc_d -= v * v
    if not acc_d > 1e-14 * _free_entry(H, m, delta, j, j):
        return False
    L[s, s] = np.sqrt(acc_d)
    order[s] = j
    return True


@njit(cache=True, nogil=True)
def _factor_delete(L, order, s, k):
    """Remove the variable at position k of ``order[:s]`` from the Cholesky factor L: its row
    and column go, and the trailing block absorbs the removed column by the rank-one update
    of a Cholesky factor (the classical ``cholupdate`` recurrence), O((s - k)^2)."""
    w = np.empty(s - k - 1)
    for a in range(k + 1, s):
        w[a - k - 1] = L[a, k]
    for a in range(k + 1, s):  # shift rows and columns up and left past k
        for c in range(k):
            L[a - 1, c] = L[a, c]
        for c in range(k + 1, a + 1):
            L[a - 1, c - 1] = L[a, c]
        order[a - 1] = order[a]
    # L33~ L33~' = L33 L33' + w w' on the trailing block (rows and columns k .. s-2)
    t = s - k - 1
    for i in range(t):
        r = k + i
        lii = L[r, r]
        wi = w[i]
        new = np.sqrt(lii * lii + wi * wi)
        cos = new / lii
        sin = wi / lii
        L[r, r] = new
        for a in range(i + 1, t):
            ra = k + a
            L[ra, r] = (L[ra, r] + sin * w[a]) / cos
            w[a] = cos * w[a] - sin * L[ra, r]


@njit(cache=True, nogil=True)
def _factor_solve(L, s, rhs, out):
    """out = (L L')^{-1} rhs over the first s entries."""
    for a in range(s):
        v = rhs[a]
        for c in range(a):
            v -= L[a, c] * out[c]
        out[a] = v / L[a, a]
    for a in range(s - 1, -1, -1):
        v = out[a]
        for c in range(a + 1, s):
            v -= L[c, a] * out[c]
        out[a] = v / L[a, a]


@njit(cache=True, nogil=True)
def _factor_build(L, order, free, n, H, m, delta):
    """The factor of the free variables, appended one by one; returns their count, or -1 when
    a pivot fails."""
    s = 0
    for j in range(n):
        if free[j]:
            if not _factor_append(L, order, s, H, m, delta, j):
                return -1
            s += 1
    return s


@njit(cache=True, nogil=True)
def simplex_active_set(H, b, alpha, m, tol_rel, tol_abs, max_iter, max_free):
    """Minimize f = 1/2 alpha' H alpha - b' alpha over alpha >= 0, sum alpha <= 1 (the leading
    m x m block of H) by a primal active-set method, warm-started at the feasible ``alpha``
    (updated in place).  Returns (f, gap, iterations, done); ``done`` False means the method
    gave up (cycling, too many free variables, a step without decrease) and the caller should
    finish with :func:`simplex_smo` from the (feasible, no worse) ``alpha`` left here.

    The slack s = 1 - sum alpha is a variable with zero gradient and curvature, so the
    constraints are x = (alpha, s) >= 0, 1'x = 1.  Each iteration solves the equality-
    constrained problem on the free set F (the variables not held at 0) in step form
    (Nocedal & Wright, Numerical Optimization, Algorithm 16.3):

        [H_FF + delta I   1] [p]   [-g_F]
        [1'               0] [l] = [  0 ],   g = H alpha - b (0 for the slack),

    with a ridge delta = 1e-10 max_j H_jj: a singular H_FF (dependent cuts, or the slack's zero
    curvature) then gives a long descent step that the ratio test cuts at the first variable
    reaching 0, which is dropped from F; g'p = -p'(H_FF + delta I) p < 0, so every step
    t in (0, 1] decreases f.  After a full step the variable with the most negative reduced
    gradient g_j - lambda (lambda the multiplier of 1'x = 1) joins F.  Stopped, like the SMO,
    by the Frank-Wolfe gap alpha'g - min(0, min_j g_j) <= tol_rel |f| or tol_abs.

    The system is solved through a Cholesky factor L of H_FF + delta I that follows F: a
    variable that joins appends a row (one forward substitution), one that leaves is deleted
    by a rank-one update of the trailing block, so an iteration costs O(|F|^2), not the
    O(|F|^3) of a fresh factorization (a9a at C = 100: QP 4.2 of 5.0 s, now 0.54 of 1.28 s);
    then p = -(M^{-1} g_F + l M^{-1} 1) with l = -1'M^{-1}g_F / 1'M^{-1}1.  A pivot that fails
    in floating point rebuilds the factor once; a second failure gives up."""
    n = m + 1  # the slack is variable m
    x = np.empty(n)
    slack = 1.0
    for j in range(m):
        x[j] = alpha[j]
        slack -= alpha[j]
    x[m] = slack if slack > 0.0 else 0.0
    g = np.zeros(n)
    _reduced_gradient(H, b, x, m, g)
    free = np.zeros(n, dtype=np.bool_)
    for j in range(n):
        free[j] = x[j] > 0.0
    hmax = 0.0
    for j in range(m):
        if H[j, j] > hmax:
            hmax = H[j, j]
    delta = 1e-10 * hmax if hmax > 0.0 else 1e-10
    cap = min(n, max_free + 1)
    L = np.zeros((cap, cap))
    order = np.empty(cap, dtype=np.int64)
    s = 0
    for j in range(n):
        if free[j]:
            s += 1
    if s > max_free:
        return _store_feasible(H, b, x, alpha, m), np.inf, 0, False
    s = _factor_build(L, order, free, n, H, m, delta)
    if s < 0:
        return _store_feasible(H, b, x, alpha, m), np.inf, 0, False
    gF = np.empty(cap)
    ones = np.ones(cap)
    y1 = np.empty(cap)
    y2 = np.empty(cap)
    p = np.empty(cap)
    f = 0.0
    gap = np.inf
    last_added = -1
    it = 0
    refreshed = False  # the gradient was just recomputed from scratch
    while True:
        f, gap, _, _ = _objective_and_gap(x, g, b, m)
        if gap <= tol_abs or gap <= tol_rel * abs(f):
            break
        if it >= max_iter:
            return _store_feasible(H, b, x, alpha, m), gap, it, False
        it += 1
        for a in range(s):
            gF[a] = g[order[a]] if order[a] < m else 0.0
        _factor_solve(L, s, gF, y1)
        _factor_solve(L, s, ones, y2)
        num = 0.0
        den = 0.0
        for a in range(s):
            num += y1[a]
            den += y2[a]
        mult = -num / den  # l of the system above; lambda = -l
        lam = -mult
        for a in range(s):
            p[a] = -(y1[a] + mult * y2[a])
        # the ratio test
        t = 1.0
        block = -1
        for a in range(s):
            pa = p[a]
            if pa < 0.0:
                ta = x[order[a]] / -pa
                if ta < t:
                    t = ta
                    block = order[a]
        if t <= 0.0 and block == last_added:
            # degenerate: the variable just added leaves at once
            return _store_feasible(H, b, x, alpha, m), gap, it, False
        # the step, and g += t H_{:,F} p_F
        f_old = f
        for a in range(s):
            ja = order[a]
            step = t * p[a]
            x[ja] += step
            if ja < m and step != 0.0:
                for j in range(m):
                    g[j] += H[j, ja] * step
        last_added = -1
        # leaving: the blocking variable and any rounded below zero
        a = 0
        while a < s:
            j = order[a]
            if j == block or x[j] < 0.0:
                x[j] = 0.0
                free[j] = False
                _factor_delete(L, order, s, a)
                s -= 1
            else:
                a += 1
        if block < 0:
            # a full step: the most negative reduced gradient g_j - lambda joins F
            best = 0.0
            enter = -1
            for j in range(n):
                if not free[j]:
                    r = (g[j] if j < m else 0.0) - lam
                    if r < best:
                        best = r
                        enter = j
            if enter >= 0:
                if s + 1 > max_free:
                    return _store_feasible(H, b, x, alpha, m), gap, it, False
                if not _factor_append(L, order, s, H, m, delta, enter):
                    free[enter] = True
                    s = _factor_build(L, order, free, n, H, m, delta)
                    if s < 0:
                        return _store_feasible(H, b, x, alpha, m), gap, it, False
                else:
                    free[enter] = True
                    s += 1
                last_added = enter
        fn = 0.0
        for j in range(m):
            fn += x[j] * (0.5 * (g[j] - b[j]))
        if fn > f_old + 1e-12 * abs(f_old):
            # f rose: the gradient updated step by step has drifted (near the optimum the
            # decreases are below its rounding), so recompute it once and go on from its f
            # and gap; a rise again right after that is rounding in the steps themselves:
            # hand the point over as it is (still feasible)
            if refreshed:
                return _store_feasible(H, b, x, alpha, m), gap, it, False
            _reduced_gradient(H, b, x, m, g)
            refreshed = True
        else:
            refreshed = False
    f = _store_feasible(H, b, x, alpha, m)
    return f, gap, it, True


@njit(cache=True, nogil=True)
def _store_feasible(H, b, x, alpha, m):
    """alpha <- x[:m], scaled into the simplex where rounding of the steps pushed the sum to
    or past 1 (by ~1e-12; :func:`_sum_ceiling`); returns f(alpha)."""
    scale = _simplex_scale(x, m)
    for j in range(m):
        alpha[j] = x[j] * scale
    f = 0.0
    for j in range(m):
        if alpha[j] != 0.0:
            acc = 0.5 * H[j, j] * alpha[j] - b[j]
            for k in range(j + 1, m):
                if alpha[k] != 0.0:
                    acc += H[j, k] * alpha[k]
            f += alpha[j] * acc
    return f
