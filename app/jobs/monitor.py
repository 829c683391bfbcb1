"""The monitor a worker hands to ``solvers.train``.

It buffers iteration records and writes them in batches (every 0.25 s or 100 records), with
the job's progress, in one short transaction; it checks the job's cancel flag at most every
0.2 s (and with every batch), enforces the job's time limit, and notices when the service
that started the worker has gone away.  Any of these makes ``stop_reason`` answer, and the
solver stops at its next iteration.
"""

from __future__ import annotations

import enum
import math
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from app.db.models import Job
from app.db.session import Sessions
from app.jobs.state import (
    Signal,
    check_in,
    finite_or_none,
    record_progress,
    set_running_message,
)

FLUSH_INTERVAL_S = 0.25
FLUSH_RECORDS = 100
POLL_INTERVAL_S = 0.2


class StopCause(enum.Enum):
    """Why the monitor asked the solver to stop (the value is the reason it gives)."""

    cancelled = "cancelled by request"
    time_limit = "time limit reached"
    lost = "the job was taken over (re-queued or finished elsewhere)"
    orphaned = "the service that started this worker has stopped"


def jsonable(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays as Python values, non-finite floats as None."""
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if hasattr(value, "tolist"):  # NumPy scalars and arrays
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _aware(moment: datetime) -> datetime:
    """A stored timestamp as timezone-aware UTC (SQLite gives naive ones back)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class DatabaseMonitor:
    """Writes a job's convergence log and tells its solver when to stop."""

    def __init__(self, sessions: Sessions, job_id: uuid.UUID, attempt: int,
                 time_limit_s: float | None, parent_alive: Callable[[], bool],
                 started_at: datetime | None = None):
        self._sessions = sessions
        self._job_id = job_id
        self._attempt = attempt
        self._time_limit_s = time_limit_s
        self._parent_alive = parent_alive
        self._start = time.monotonic()
        # The job's clock (issue 48: a tuning job showed Elapsed 1.89 s, finished_at minus
        # started_at, over a plot to 2.27 s, the solvers' own clocks): every record is timed
        # when it reaches this monitor, in seconds since the attempt's ``started_at``, the
        # origin of the job's Elapsed; one wall-clock read places that origin on the
        # monotonic clock.  The solver's own time stays in the record's extras
        # (``solver_elapsed``).
        behind = 0.0 if started_at is None else max(
            0.0, (datetime.now(UTC) - _aware(started_at)).total_seconds())
        self._origin = self._start - behind
        self._last_flush = self._start
        self._last_poll = self._start
        self._buffer: list[dict[str, Any]] = []
        self.stop_cause: StopCause | None = None

    @property
    def writable(self) -> bool:
        """Whether this attempt may still write the job."""
        return self.stop_cause not in (StopCause.lost, StopCause.orphaned)

    def report(self, record) -> None:
        """Buffer one iteration record; write the batch when it is due."""
        now = time.monotonic()
        self._buffer.append({
            "iteration": int(record.iteration),
            "elapsed": now - self._origin,  # the job's clock (__init__)
            "objective": finite_or_none(record.objective),
            "optimality": finite_or_none(record.optimality),
            "extras": jsonable({**record.extras, "solver_elapsed": float(record.elapsed)}),
        })
        if len(self._buffer) >= FLUSH_RECORDS or now - self._last_flush >= FLUSH_INTERVAL_S:
            self.flush()

    def notice(self, text: str) -> None:
        """What the solver tells during the run (a distributed solve resumed after a lost
        worker): appended to the job's running message now (the final message carries it
        too, as a warning)."""
        self.flush()
        with self._sessions.write() as session:
            current = session.get(Job, self._job_id)
            previous = current.message if current is not None else None
            set_running_message(session, self._job_id, self._attempt,
                                f"{previous}; {text}" if previous else text)

    def stop_reason(self) -> str | None:
        """Why the solver should stop now, or None to go on."""
        if self.stop_cause is None:
            now = time.monotonic()
            if self._time_limit_s is not None and now - self._start > self._time_limit_s:
                self.stop_cause = StopCause.time_limit
            elif now - self._last_poll >= POLL_INTERVAL_S:
                self._poll()
        return None if self.stop_cause is None else self.stop_cause.value

    def flush(self) -> None:
        """Write the buffered records (a no-op once the job is no longer this attempt's)."""
        if not self._buffer or not self.writable:
            return
        records, self._buffer = self._buffer, []
        with self._sessions.write() as session:
            self._apply(record_progress(session, self._job_id, self._attempt, records))
        self._last_flush = time.monotonic()

    def _poll(self) -> None:
        self._last_poll = time.monotonic()
        if not self._parent_alive():
            self.stop_cause = StopCause.orphaned
        elif self._buffer:
            self.flush()
        else:
            with self._sessions.read() as session:
                self._apply(check_in(session, self._job_id, self._attempt))

    def _apply(self, signal: Signal) -> None:
        if signal is Signal.lost:
            self.stop_cause = StopCause.lost
        elif signal is Signal.cancel and self.stop_cause is None:
            self.stop_cause = StopCause.cancelled
