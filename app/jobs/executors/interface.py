"""The interface between the dispatcher and wherever job attempts run: :class:`Executor`,
and the records they exchange (:class:`Assignment`, :class:`Ended`, :class:`WorkerInfo`).

The dispatcher (:mod:`app.jobs.dispatcher`) decides *what* runs: it claims queued jobs,
enforces cancellations and time limits, keeps leases and settles the jobs of attempts that
died.  An executor only runs what it is given and reports what happened:

* ``submit(claim)`` starts an attempt on an idle slot (``idle()`` says how many there are);
* ``kill(assignment)`` ends an attempt that did not stop by itself;
* ``wait(timeout, wake)`` blocks until something happens (or the dispatcher's ``wake``, a
  pipe or a socket, becomes readable) and returns the attempts whose slot ended them abnormally;
* ``running()`` and ``snapshot()`` describe the slots.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Protocol

from app.jobs.state import Claim


@dataclass
class Assignment:
    """A job attempt running on a slot of an executor, as the dispatcher tracks it."""

    job_id: uuid.UUID
    attempt: int
    time_limit_s: float | None
    started: float = field(default_factory=time.monotonic)
    cancel_deadline: float | None = None
    killed_for: str | None = None  # "cancel" or "time_limit" once the dispatcher killed it


@dataclass(frozen=True)
class Ended:
    """An attempt whose slot ended without the attempt writing its own result (the worker
    died, or was killed).

    ``reason`` replaces the dispatcher's own wording of what happened (a cluster executor
    knows better than an exit code); ``retry`` asks for the job to be re-queued while it has
    attempts left (the attempt was lost with its cluster worker, not ended by the job)."""

    assignment: Assignment
    exit_code: int | None
    reason: str | None = None
    retry: bool = False


@dataclass(frozen=True)
class WorkerInfo:
    """A snapshot of one slot for health checks and metrics."""

    index: int
    pid: int | None
    alive: bool
    ready: bool
    job_id: uuid.UUID | None
    state: str | None = None  # what a worker not yet ready is doing (its warm-up's progress)
    solvers: tuple[str, ...] = ()  # the solvers whose own kernels it has compiled (or loaded)


class Waitable(Protocol):
    """What ``multiprocessing.connection.wait`` waits on: a pipe's end, a socket."""

    def fileno(self) -> int: ...


class Executor(Protocol):
    """What the dispatcher needs from wherever attempts run."""

    def start(self) -> None: ...

    def stop(self) -> list[Assignment]:
        """Stop every slot; returns the attempts that were still running."""

    def idle(self) -> int:
        """How many attempts could start now."""

    def submit(self, claim: Claim) -> None: ...

    def kill(self, assignment: Assignment) -> None: ...

    def running(self) -> list[Assignment]: ...

    def snapshot(self) -> list[WorkerInfo]: ...

    def wait(self, timeout: float, wake: Waitable) -> list[Ended]: ...
