"""How a running solver talks to the world.

A solver calls ``monitor.report(record)`` once per iteration and then asks
``monitor.stop_reason()``; a non-None answer (cancellation, a time limit) makes it stop at once
and return its current iterate with status ``stopped``.  Solvers never print, sleep or touch a
database: the CLI's monitor prints, the service's monitor writes convergence rows and reads the
cancel flag, :class:`ListMonitor` collects records for library use.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from solvers.termination import clip_gap


@dataclass(frozen=True)
class IterationRecord:
    """One iteration of a solver.

    ``objective`` is the primal objective of ``docs/design.md`` (comparable across solvers);
    ``optimality`` is the solver's own measure (duality gap, KKT violation, gradient norm),
    named by ``extras["optimality_measure"]`` when it is not obvious.
    """

    iteration: int
    elapsed: float
    objective: float
    optimality: float
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        """A relative duality gap (``optimality``, ``extras["relative_duality_gap"]``) a few
        round-offs below 0 reads 0, as a result's does (``solvers.termination.clip_gap``): a
        log never shows "-5.25e-16"."""
        object.__setattr__(self, "optimality", clip_gap(self.optimality))
        gap = self.extras.get("relative_duality_gap")
        if isinstance(gap, float):
            self.extras["relative_duality_gap"] = clip_gap(gap)

    def as_dict(self) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "elapsed": self.elapsed,
            "objective": self.objective,
            "optimality": self.optimality,
            "extras": dict(self.extras),
        }


@runtime_checkable
class Monitor(Protocol):
    """Receives every iteration record and may stop the run.  A monitor may also have
    ``notice(text)``: told at once what its caller should know during the run (a distributed
    solve resumed after a lost worker); the same text ends in the result's warnings."""

    def report(self, record: IterationRecord) -> None: ...

    def stop_reason(self) -> str | None: ...


class NullMonitor:
    """Accepts everything, never stops."""

    def report(self, record: IterationRecord) -> None:
        pass

    def stop_reason(self) -> str | None:
        return None


class ListMonitor:
    """Collects every record; optional time limit (seconds, from construction)."""

    def __init__(self, time_limit: float | None = None):
        self.records: list[IterationRecord] = []
        self._deadline = None if time_limit is None else time.monotonic() + time_limit
        self._time_limit = time_limit

    def report(self, record: IterationRecord) -> None:
        self.records.append(record)

    def stop_reason(self) -> str | None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            return f"time limit of {self._time_limit:g} s reached"
        return None


class Tee:
    """Forwards records to several monitors; stops when any of them asks to."""

    def __init__(self, *monitors: Monitor):
        self.monitors = monitors

    def report(self, record: IterationRecord) -> None:
        for m in self.monitors:
            m.report(record)

    def stop_reason(self) -> str | None:
        for m in self.monitors:
            reason = m.stop_reason()
            if reason is not None:
                return reason
        return None


class Continued:
    """The records of a later stage of one run, after ``offset`` records and
    ``elapsed_offset`` seconds of earlier ones in the same log (a job's log is numbered and
    timed across its stages): iteration numbers and elapsed times shifted by them, and the
    extras tagged with ``tags``; stop requests are the target's."""

    def __init__(self, target: Monitor, offset: int, elapsed_offset: float = 0.0,
                 tags: dict[str, Any] | None = None):
        self.target = target
        self.offset = offset
        self.elapsed_offset = elapsed_offset
        self.tags = dict(tags or {})

    def report(self, record: IterationRecord) -> None:
        self.target.report(IterationRecord(
            record.iteration + self.offset, record.elapsed + self.elapsed_offset,
            record.objective, record.optimality, {**record.extras, **self.tags}))

    def stop_reason(self) -> str | None:
        return self.target.stop_reason()


class QueuedLane:
    """The monitor of work running on a pool thread while the calling thread owns the real
    monitor (the portfolio's race, one-vs-one's pairs at once): its records go, as
    ``(key, record)``, into ``records`` for the calling thread to forward, and it stops when
    ``stop_reason()`` -- the calling thread's decision, read here -- gives a reason.  The real
    monitor is never asked from the pool thread."""

    def __init__(self, key: Any, records, stop_reason):
        self.key = key
        self.records = records  # a queue.SimpleQueue the calling thread drains
        self._stop_reason = stop_reason

    def report(self, record: IterationRecord) -> None:
        self.records.put((self.key, record))

    def stop_reason(self) -> str | None:
        return self._stop_reason()


class Stopwatch:
    """Elapsed seconds since a solver started (monotonic clock)."""

    __slots__ = ("start",)

    def __init__(self):
        self.start = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.start


class Reporter:
    """The one way a solver reports: builds each iteration's record, times it from the start
    of the solve, hands it to the monitor and asks whether to stop.

    ``reporter(iteration, objective, optimality, **extras)`` returns True when the monitor
    asked to stop; the solver then returns its current point with status ``stopped`` and
    :attr:`stop_message`.  Every record carries ``extras["optimality_measure"]`` (the name of
    the solver's measure: ``relative_duality_gap``, ``kkt_violation``, ...).  ``objective`` is
    the primal objective of ``docs/design.md`` evaluated by ``solvers.problems``.
    """

    def __init__(self, monitor: Monitor | None, measure: str, clock: Stopwatch | None = None):
        self.monitor = monitor if monitor is not None else NullMonitor()
        self.measure = measure
        self.clock = clock if clock is not None else Stopwatch()
        self.stop_reason: str | None = None
        self.records = 0

    def __call__(self, iteration: int, objective: float, optimality: float, *,
                 elapsed: float | None = None, **extras) -> bool:
        """Report one iteration (``elapsed``: when the iterate was ready, if the solver took
        the time before computing the record's measures); True when the monitor asks to
        stop."""
        if elapsed is None:
            elapsed = self.clock()
        extras.setdefault("optimality_measure", self.measure)
        self.monitor.report(IterationRecord(int(iteration), elapsed, float(objective),
                                            float(optimality), extras))
        self.records += 1
        self.stop_reason = self.monitor.stop_reason()
        return self.stop_reason is not None

    @property
    def stop_message(self) -> str:
        return f"stopped: {self.stop_reason}"
