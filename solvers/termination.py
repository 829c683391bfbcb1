"""Why a solver stopped: one code for every solver and every iterative kernel of the core."""

from __future__ import annotations

import enum


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
