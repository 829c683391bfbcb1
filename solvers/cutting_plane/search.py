"""Choosing mu on the ray w(mu) = w_b + mu (w_t - w_b): f(mu) = F(w(mu)), mu >= 0.

Everything here works from the outputs stored at w_b and w_t (margins for the binary hinge,
the score matrix for Crammer-Singer) and three numbers of the regularizer,
1/2 ||w(mu)||^2 = 1/2 (nb + 2 B0 mu + A0 mu^2), nb = ||w_b||^2, B0 = w_b . (w_t - w_b),
A0 = ||w_t - w_b||^2: no pass over the data.

* :func:`exact_mu` -- OCAS's line search (Franc & Sonnenburg 2008 section 3.2; JMLR 2009
  section 3.3): f is convex, its slope piecewise linear with upward jumps where an example's
  loss changes piece.  Binary: a breakpoint per example with (1 - mb_i)/d_i > 0, d_i = mt_i -
  mb_i, jump C_i |d_i|.  Crammer-Singer: per example the upper envelope over mu >= 0 of its k
  lines [m != y_i] + s_im(mu) - s_iy_i(mu) (walked from the line that is highest at 0+, at each
  step to the nearest crossing by a steeper line, ties to the steepest: O(k^2) per example),
  its breakpoints merged over the examples, jump C_i times the change of slope.  The root is
  :func:`solvers.core.linesearch.piecewise_linear_root_jumps`, exact, expected O(n) (O(nk)).
* :func:`f_values` -- f at any mu in O(n) (O(nk)) for the grid and three-point searches;
* :class:`GridSearch` -- Arnosti's GCA2 (Algorithm 2), :class:`ThreePointSearch` -- TCA
  (Algorithm 3), each keeping mu_prev and the uncertainty between iterations.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from solvers import config
from solvers.core.linesearch import piecewise_linear_root_jumps
from solvers.losses.kernels import HINGE, _value
from solvers.problems.oracles import crammer_singer_risk_on_ray

# -- binary hinge -------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def hinge_ray_breakpoints(mb, mt, cost):
    """(slope of the loss sum at 0+, breakpoints, jumps) of sum_i C_i max(0, 1 - m_i(mu)),
    m_i(mu) = mb_i + mu (mt_i - mb_i)."""
    n = mb.shape[0]
    bp = np.empty(n)
    jump = np.empty(n)
    slope = 0.0
    count = 0
    for i in range(n):
        xi0 = 1.0 - mb[i]
        d = mt[i] - mb[i]
        if xi0 > 0.0 or (xi0 == 0.0 and d < 0.0):
            slope -= cost[i] * d  # active just right of 0
        if d != 0.0:
            t = xi0 / d
            if t > 0.0:
                bp[count] = t
                jump[count] = cost[i] * abs(d)
                count += 1
    return slope, bp[:count], jump[:count]


@njit(cache=True, nogil=True)
def hinge_ray_values(mb, mt, cost, mus, out):
    """out[j] = sum_i C_i max(0, 1 - m_i(mus[j]))."""
    for j in range(mus.shape[0]):
        mu = mus[j]
        total = 0.0
        for i in range(mb.shape[0]):
            total += cost[i] * _value(HINGE, 1.0, 1.0 - (mb[i] + mu * (mt[i] - mb[i])))
        out[j] = total


# -- Crammer-Singer -----------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _cs_envelope(Sb, St, labels, cost, i, u, v, bp, jump, pos):
    """Example i's envelope over mu >= 0 (module docstring): its breakpoints and jumps written
    to bp[pos:], jump[pos:]; returns (how many, its slope at 0+).

    The walk goes from the line highest at 0+ to the nearest crossing by a steeper line,
    t_m = max(mu, (u_j - u_m) / (v_m - v_j)) (ties to the steepest).  The candidates are
    compared as fractions, num_m den_best < num_best den_m (every den = v_m - v_j > 0), so a
    step divides once, for the winner, not once per steeper line: the same breakpoints, with
    the packing below 1.3-4x faster serially and 1.1-1.5x in parallel on letter's rays
    (bench/history/notebook.md, Cutting planes, fourth pass)."""
    k = Sb.shape[1]
    y = labels[i]
    sby = Sb[i, y]
    dy = St[i, y] - sby
    for m in range(k):
        sbm = Sb[i, m]
        u[m] = 1.0 + sbm - sby
        v[m] = (St[i, m] - sbm) - dy
    u[y] = 0.0
    v[y] = 0.0
    # the highest line at 0, ties to the steepest (the envelope just right of 0)
    j = 0
    for m in range(1, k):
        if u[m] > u[j] or (u[m] == u[j] and v[m] > v[j]):
            j = m
    s0 = cost[i] * v[j]
    c = 0
    mu = 0.0
    while True:
        nxt = -1
        best_num = 0.0
        best_den = 1.0
        uj = u[j]
        vj = v[j]
        for m in range(k):
            den = v[m] - vj
            if den > 0.0:
                num = uj - u[m]
                if num < mu * den:  # crossed before mu (rounding): t_m = mu
                    num = mu * den
                if nxt < 0:
                    nxt, best_num, best_den = m, num, den
                else:
                    lhs = num * best_den
                    rhs = best_num * den
                    if lhs < rhs or (lhs == rhs and v[m] > v[nxt]):
                        nxt, best_num, best_den = m, num, den
        if nxt < 0:
            break
        t = best_num / best_den
        if t < mu:
            t = mu
        jmp = cost[i] * (v[nxt] - vj)
        if t <= 0.0:
            s0 += jmp  # crossing at 0 (rounding): part of the slope at 0+
        else:
            bp[pos + c] = t
            jump[pos + c] = jmp
            c += 1
        mu = t
        j = nxt
    return c, s0


@njit(cache=True, nogil=True)
def _cs_envelopes_serial(Sb, St, labels, cost, bp, jump):
    """(slope at 0+, count): every example's breakpoints and jumps, packed at the front of
    ``bp`` and ``jump`` (each of length n (k - 1), only the used front ever written)."""
    u = np.empty(Sb.shape[1])
    v = np.empty(Sb.shape[1])
    total = 0
    slope = 0.0
    for i in range(Sb.shape[0]):
        c, s0 = _cs_envelope(Sb, St, labels, cost, i, u, v, bp, jump, total)
        total += c
        slope += s0
    return slope, total


@njit(cache=True, nogil=True, parallel=True)
def _cs_envelopes_parallel(Sb, St, labels, cost, bp, jump, n_blocks):
    """:func:`_cs_envelopes_serial` over ``n_blocks`` blocks of examples in parallel: block b
    packs its breakpoints from the start of its own share of ``bp`` and ``jump`` (its first
    example times k - 1), then the blocks are moved together in order."""
    n, k = Sb.shape
    stride = max(k - 1, 1)
    step = (n + n_blocks - 1) // n_blocks
    counts = np.zeros(n_blocks, dtype=np.int64)
    slopes = np.zeros(n_blocks)
    for blk in prange(n_blocks):
        u = np.empty(k)
        v = np.empty(k)
        start = blk * step * stride
        count = 0
        slope = 0.0
        for i in range(blk * step, min(n, (blk + 1) * step)):
            c, s0 = _cs_envelope(Sb, St, labels, cost, i, u, v, bp, jump, start + count)
            count += c
            slope += s0
        counts[blk] = count
        slopes[blk] = slope
    total = counts[0]
    slope = slopes[0]
    for blk in range(1, n_blocks):
        start = blk * step * stride
        for t in range(counts[blk]):
            bp[total + t] = bp[start + t]
            jump[total + t] = jump[start + t]
        total += counts[blk]
        slope += slopes[blk]
    return slope, total


def crammer_singer_ray_breakpoints(Sb, St, labels, cost, parallel=None):
    """(slope of the loss sum at 0+, breakpoints, jumps) of sum_i C_i max_m(...) along the
    ray of scores Sb + mu (St - Sb); ``parallel`` the kernel's form (None: by the work)."""
    n, k = Sb.shape
    bp = np.empty(n * max(k - 1, 1))
    jump = np.empty(n * max(k - 1, 1))
    if parallel is None:
        parallel = n * k * k >= config.KERNEL_PARALLEL_MIN_WORK
    n_blocks = min(numba.get_num_threads(), n) if parallel else 1
    if n_blocks > 1:
        slope, total = _cs_envelopes_parallel(Sb, St, labels, cost, bp, jump, n_blocks)
    else:
        slope, total = _cs_envelopes_serial(Sb, St, labels, cost, bp, jump)
    return slope, bp[:total], jump[:total]


def crammer_singer_ray_values(Sb, St, labels, cost, mus, out):
    """out[j] = sum_i C_i max_m ([m != y_i] + s_im - s_iy_i) at the scores Sb + mu (St - Sb)
    (the problem layer's per-example maximum, one pass per mu, no temporaries)."""
    for j, mu in enumerate(mus):
        out[j] = crammer_singer_risk_on_ray(Sb, St, labels, cost, float(mu))


# -- the ray ------------------------------------------------------------------------------------


class Ray:
    """f(mu) on w_b + mu (w_t - w_b) from the stored outputs (module docstring)."""

    def __init__(self, kind: str, ob, ot, cost, labels, nb: float, B0: float, A0: float,
                 choice=None):
        self.kind = kind
        self.ob, self.ot, self.cost, self.labels = ob, ot, cost, labels
        self.nb, self.B0, self.A0 = nb, B0, A0
        self.choice = choice  # a TimedChoice for the Crammer-Singer envelopes, or None
        self.evaluations = 0

    def values(self, mus) -> np.ndarray:
        mus = np.ascontiguousarray(np.atleast_1d(np.asarray(mus, dtype=np.float64)))
        out = np.empty(mus.shape[0])
        if self.kind == "binary":
            hinge_ray_values(self.ob, self.ot, self.cost, mus, out)
        else:
            crammer_singer_ray_values(self.ob, self.ot, self.labels, self.cost, mus, out)
        self.evaluations += mus.shape[0]
        return 0.5 * (self.nb + 2.0 * self.B0 * mus + self.A0 * mus * mus) + out

    def __call__(self, mu: float) -> float:
        """f(mu); also below 0 (the ray extended backwards: the approximate searches may look
        there, and a minimizer they find below 0 means mu = 0 is best over mu >= 0, f being
        convex)."""
        return float(self.values(mu)[0])

    def exact(self) -> float:
        """argmin_{mu >= 0} f(mu), exactly."""
        if self.kind == "binary":
            slope, bp, jump = hinge_ray_breakpoints(self.ob, self.ot, self.cost)
        else:
            def envelopes(parallel):
                return crammer_singer_ray_breakpoints(self.ob, self.ot, self.labels,
                                                      self.cost, parallel)

            slope, bp, jump = envelopes(None) if self.choice is None else \
                self.choice.run(envelopes)
        l0 = self.B0 + slope
        mu = piecewise_linear_root_jumps(l0, l0 + self.A0, bp, jump, jump)
        return float(mu) if np.isfinite(mu) else 0.0


class GridSearch:
    """Arnosti's GCA2 (Algorithm 2) with makepass2's truncated passes of steps beta, beta^2,
    beta^3 and the uncertainty that skips the coarse passes.

    Uncertainty starts at 1.  Pass 1 runs when uncertainty >= t2, pass 2 when >= t1, pass 3
    always; then |mu3 - mu_prev| <= h(uncertainty) = uncertainty / 2 shrinks the uncertainty by
    ``shrink``, otherwise it grows by ``grow`` (kept in [beta^3, 1]).  Defaults (not in the
    paper): t2 = beta (a coarse pass is needed only when mu may move by a coarse step), t1 =
    beta^2, shrink 1/2, grow 2.

    Misprint fixed: the printed passes 2 and 3 start at mu1 - beta/2 and mu2 - beta^2/2, but
    after a pass that stops at mu1 (f(mu1 + beta) >= f(mu1), and f(mu1 - beta) > f(mu1) when it
    moved) the minimizer lies anywhere in [mu1 - beta, mu1 + beta]: the windows miss
    [mu1 - beta, mu1 - beta/2].  Here each refining pass starts at the left end of the bracket
    the previous pass certified, mu1 - beta (mu2 - beta^2), so it walks across the whole
    bracket.  The passes may evaluate f below 0 (as printed: pass 1 starts at mu_prev - 1); the
    caller clamps the result to mu >= 0, which is exact for a convex f.
    """

    def __init__(self, beta=0.2, t1=None, t2=None, shrink=0.5, grow=2.0):
        self.beta = beta
        self.t1 = beta ** 2 if t1 is None else t1
        self.t2 = beta if t2 is None else t2
        self.shrink, self.grow = shrink, grow
        self.uncertainty = 1.0
        self.mu_prev = 0.0

    #: the most steps of one pass: a refining pass walks a bracket of 2/beta steps, the
    #: coarse pass as far as the minimizer; a pass still descending after this many (an
    #: objective decreasing without end, as only broken arithmetic makes it) returns its
    #: best point, so no input makes it spin
    max_pass_steps = 100_000

    @classmethod
    def _pass(cls, f, start, inc):
        mu = start
        fmu = f(mu)
        for _ in range(cls.max_pass_steps):
            fn = f(mu + inc)
            if not fn < fmu:
                return mu
            mu, fmu = mu + inc, fn
        return mu

    def __call__(self, f) -> float:
        beta = self.beta
        mu1 = self._pass(f, self.mu_prev - 1.0, beta) if self.uncertainty >= self.t2 \
            else self.mu_prev
        mu2 = self._pass(f, mu1 - beta, beta ** 2) if self.uncertainty >= self.t1 \
            else self.mu_prev
        mu3 = self._pass(f, mu2 - beta ** 2, beta ** 3)
        if abs(mu3 - self.mu_prev) <= self.uncertainty / 2.0:
            self.uncertainty = max(self.uncertainty * self.shrink, beta ** 3)
        else:
            self.uncertainty = min(self.uncertainty * self.grow, 1.0)
        self.mu_prev = mu3
        return mu3


class ThreePointSearch:
    """Arnosti's TCA (Algorithm 3): a window low < mid < high around mu_prev of half-width
    ``uncertainty``, shifted towards the lowest of the three values or contracted with weights
    g(x, y) = (x / y)^2 until high - low <= gamma; the uncertainty shrinks by ``shrink`` when
    |mid - mu_prev| <= h(uncertainty) = uncertainty / 2 and grows by ``grow`` otherwise (kept in
    [gamma, 1]; the factors are not in the paper: 1/2 and 2).

    Misprint fixed: the printed right shift sets high <- 2 low - mid after low <- mid, mid <-
    high, which puts high below mid (the window inverts); the shift that mirrors the left one
    is high <- 2 mid - low.  The window may reach below 0 as printed (a window clamped at 0
    would have width u alone and, at mu_prev = 0 and u = gamma, never search again: measured,
    TCA then returned mu = 0 for 9994 of 10000 iterations on a9a at C = 1); the caller clamps
    the result to mu >= 0, exact for a convex f.  ``max_evaluations`` guards the loop.
    """

    def __init__(self, gamma=0.02, shrink=0.5, grow=2.0, max_evaluations=200):
        self.gamma = gamma
        self.shrink, self.grow = shrink, grow
        self.max_evaluations = max_evaluations
        self.uncertainty = 1.0
        self.mu_prev = 0.0

    def __call__(self, f) -> float:
        u = self.uncertainty
        mid = self.mu_prev
        low, high = mid - u, mid + u
        f_low, f_mid, f_high = f(low), f(mid), f(high)
        evaluations = 3
        while high - low > self.gamma and evaluations < self.max_evaluations:
            if f_low < f_mid:  # shift left
                high, f_high = mid, f_mid
                mid, f_mid = low, f_low
                low = 2.0 * mid - high
                f_low = f(low)
            elif f_high < f_mid:  # shift right (misprint fixed)
                low, f_low = mid, f_mid
                mid, f_mid = high, f_high
                high = 2.0 * mid - low
                f_high = f(high)
            else:  # contract
                a_l = (f_mid / f_low) ** 2 if f_low > 0 else 1.0
                a_h = (f_mid / f_high) ** 2 if f_high > 0 else 1.0
                low = (mid + a_l * low) / (1.0 + a_l)
                high = (mid + a_h * high) / (1.0 + a_h)
                f_low, f_high = f(low), f(high)
                evaluations += 1
            evaluations += 1
        if abs(mid - self.mu_prev) <= u / 2.0:
            self.uncertainty = max(u * self.shrink, self.gamma)
        else:
            self.uncertainty = min(u * self.grow, 1.0)
        self.mu_prev = mid
        return mid
