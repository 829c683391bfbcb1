"""Why a solver stopped: one code for every solver and every iterative kernel of the core."""

from __future__ import annotations

import enum

#: A certified relative gap negative by at most this reads 0 (round-off: P and D are sums of
#: n terms each rounded at u, so P - D carries up to ~n u of P, typically sqrt(n) u); one
#: more negative than this, or not finite, is a failure (``solvers.base.Solution``)
GAP_ROUNDOFF = 1e-12


def clip_gap(gap: float) -> float:
    """A relative duality gap as reported: round-off below 0 (at most :data:`GAP_ROUNDOFF`)
    reads 0; anything else (a real failure included, which ``solvers.base.certified_gap``
    judges) is left as it is."""
    return 0.0 if -GAP_ROUNDOFF <= gap < 0.0 else gap


def format_gap(gap: float) -> str:
    """A relative duality gap in a message: 3 significant digits, "0" for a gap that is 0 up
    to round-off (never "-5.25e-16": a negative gap is impossible in exact arithmetic)."""
    gap = clip_gap(float(gap))
    return "0" if gap == 0.0 else f"{gap:.3g}"


class Termination(enum.StrEnum):
    """Why a solver stopped (a ``str``: compares equal to its value, stores as text).

    ``converged`` met its stopping rule; ``max_iter`` hit its iteration limit (the best iterate
    is returned); ``stopped`` was asked to by the monitor (cancellation, time limit);
    ``failed`` broke down (the message says how; the last good point is returned);
    ``infeasible`` detected primal or dual infeasibility; ``numerical_error`` lost the
    accuracy to go on (a singular system, non-finite values).
    """

    CONVERGED = "converged"
    MAX_ITER = "max_iter"
    INFEASIBLE = "infeasible"
    NUMERICAL_ERROR = "numerical_error"
    FAILED = "failed"
    STOPPED = "stopped"

    @property
    def description(self) -> str:
        return TERMINATION_MESSAGES[self]

    @classmethod
    def worst(cls, statuses) -> Termination:
        """The status of a run made of several solves (one-vs-rest): the most severe."""
        order = list(cls)
        return max((cls(s) for s in statuses), key=order.index)


TERMINATION_MESSAGES = {
    Termination.CONVERGED: "the stopping rule was met",
    Termination.MAX_ITER: "the iteration limit was reached; the best iterate is returned",
    Termination.INFEASIBLE: "the problem was detected to be infeasible",
    Termination.NUMERICAL_ERROR: "the method lost the numerical accuracy to continue",
    Termination.FAILED: "the method broke down; the last good point is returned",
    Termination.STOPPED: "the monitor asked to stop (cancellation or time limit)",
}
