"""Live log streams (``GET /jobs/{id}/log/stream``): capped, and cheap each.

* **Caps.**  At most ``SVMSVC_MAX_LOG_STREAMS`` streams are open at once in the process (past
  it: 503 with ``Retry-After``) and ``SVMSVC_MAX_LOG_STREAMS_PER_KEY`` for one API key (429
  with ``Retry-After``; per client address when the service has no keys).  A stream's slot is
  held from the request's dependencies until its response has ended (or its client has gone).
* **One poller per job.**  A :class:`_Feed` per watched job reads the job and the records
  written since its last look, every :data:`STREAM_POLL_S`, in one short read transaction, and
  keeps the newest records (already serialized) in memory; every stream of the job reads them
  from there.  So 200 streams on one job cost one query every 0.25 s, not 800 a second.  A
  stream that starts behind the feed (``after`` older than the records the feed holds) reads
  that history itself, :data:`STREAM_BATCH` records a query, then follows the feed.
* **Shutdown.**  :meth:`LogStreams.close` ends every stream at its next step (their clients
  see the stream close and ``EventSource`` reconnects with ``Last-Event-ID``).  ``svmsvc
  serve`` calls it as soon as the server is told to stop (uvicorn waits for open responses to
  end before the application's shutdown runs), and the application's shutdown calls it again.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from bisect import bisect_right
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from fastapi.sse import ServerSentEvent
from starlette.concurrency import run_in_threadpool

from app.crud import jobs as crud_jobs
from app.db.models import JobStatus
from app.db.session import Sessions
from app.errors import CapacityExceeded, QuotaExceeded, limit_exceeded
from app.schemas import JobPublic, LogRecordPublic

logger = logging.getLogger("svmsvc.api")

STREAM_POLL_S = 0.25
"""How often a job's feed looks for new records while the job is not finished."""

STREAM_BATCH = 1000
"""Records read by one query (a feed's poll, or a stream catching up on history)."""

FEED_WINDOW = 4 * STREAM_BATCH
"""Records a feed keeps in memory; when it holds more, the older half is dropped (a stream
that has not sent those yet reads them from the database)."""

STREAM_RETRY_AFTER_S = 10
"""The ``Retry-After`` of a stream refused for a cap."""


@dataclass
class _Snapshot:
    """What a feed read in one transaction: the job (public view and JSON) and new records."""

    job: JobPublic | None
    job_json: str | None
    records: list[tuple[int, str]]


@dataclass
class _Feed:
    """The shared view of one job's log: the newest records (iteration, JSON) in memory, after
    ``base``; the job as last read; an event set (and replaced) whenever either changes."""

    job_id: uuid.UUID
    base: int = 0
    iterations: list[int] = field(default_factory=list)
    records: list[str] = field(default_factory=list)
    job: JobPublic | None = None
    job_json: str | None = None
    done: bool = False  # the job is finished (or gone) and every record of it was read
    ended: bool = False  # no more updates: done, the service stops, or the poller failed
    subscribers: int = 0
    started: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task | None = None

    @property
    def position(self) -> int:
        """The newest iteration the feed has read."""
        return self.iterations[-1] if self.iterations else self.base

    def notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


def _serialized(job) -> tuple[JobPublic | None, str | None]:
    if job is None:
        return None, None
    public = JobPublic.from_row(job)
    return public, public.model_dump_json()


def _read_tail(sessions: Sessions, job_id: uuid.UUID) -> tuple[_Snapshot, int]:
    job, last = crud_jobs.with_last_iteration(sessions, job_id)
    public, text = _serialized(job)
    return _Snapshot(public, text, []), last


def _read_after(sessions: Sessions, job_id: uuid.UUID, after: int) -> _Snapshot:
    job, rows = crud_jobs.with_records(sessions, job_id, after, STREAM_BATCH)
    public, text = _serialized(job)
    return _Snapshot(public, text, [(row.iteration, LogRecordPublic.from_row(row)
                                     .model_dump_json()) for row in rows])


def _read_history(sessions: Sessions, job_id: uuid.UUID, after: int,
                  upto: int) -> list[tuple[int, str]]:
    rows = crud_jobs.records_between(sessions, job_id, after, upto, STREAM_BATCH)
    return [(row.iteration, LogRecordPublic.from_row(row).model_dump_json()) for row in rows]


class LogStreams:
    """The live log streams of one application: their caps and the jobs' feeds."""

    def __init__(self, sessions: Sessions | None, max_streams: int, max_per_owner: int,
                 poll_s: float = STREAM_POLL_S):
        self.sessions = sessions
        self.max_streams = max_streams
        self.max_per_owner = max_per_owner
        self.poll_s = poll_s
        self._open: dict[str, int] = {}
        self._feeds: dict[uuid.UUID, _Feed] = {}
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- caps ------------------------------------------------------------------------------
    @property
    def open_streams(self) -> int:
        """Streams open now."""
        return sum(self._open.values())

    def open_by_owner(self) -> dict[str, int]:
        """Streams open now per owner (a key's digest, or ``client:<address>``)."""
        return dict(self._open)

    def acquire(self, owner: str) -> None:
        """Take a stream slot for ``owner`` (a key digest or a client address), or raise
        503 (the process's cap) / 429 (the owner's cap), both with ``Retry-After``."""
        total = self.open_streams
        if total >= self.max_streams:
            raise limit_exceeded("the live log streams open in the service", "max_log_streams",
                                 self.max_streams, "streams", actual=total,
                                 error=CapacityExceeded, retry_after_s=STREAM_RETRY_AFTER_S)
        mine = self._open.get(owner, 0)
        if mine >= self.max_per_owner:
            raise limit_exceeded("the live log streams open for this owner",
                                 "max_log_streams_per_key", self.max_per_owner, "streams",
                                 actual=mine, error=QuotaExceeded,
                                 retry_after_s=STREAM_RETRY_AFTER_S)
        self._open[owner] = mine + 1

    def release(self, owner: str) -> None:
        """Give the slot back."""
        left = self._open.get(owner, 0) - 1
        if left > 0:
            self._open[owner] = left
        else:
            self._open.pop(owner, None)

    # -- shutdown --------------------------------------------------------------------------
    def close(self) -> None:
        """End every stream at its next step, and refuse none (a closing service's new
        streams end at once)."""
        self._closed = True
        for feed in self._feeds.values():
            feed.ended = True
            feed.notify()

    def close_threadsafe(self) -> None:
        """:meth:`close` from another thread or a signal handler."""
        loop = self._loop
        if loop is None or loop.is_closed():
            self._closed = True
            return
        try:
            loop.call_soon_threadsafe(self.close)
        except RuntimeError:  # the loop just closed
            self._closed = True

    # -- streams ---------------------------------------------------------------------------
    async def follow(self, job_id: uuid.UUID, after: int) -> AsyncIterator[ServerSentEvent]:
        """The events of one stream: ``record`` (id = iteration) for every record after
        ``after``, ``status`` whenever the job's state changes, ``end`` once it finished."""
        self._loop = asyncio.get_running_loop()
        if self._closed:
            return
        feed = self._feeds.get(job_id)
        if feed is None or (feed.ended and not feed.done):  # none, or its poller failed
            feed = self._feeds[job_id] = _Feed(job_id)
            feed.task = asyncio.create_task(self._poll(feed), name=f"log-feed-{job_id}")
        feed.subscribers += 1
        try:
            await feed.started.wait()
            last, last_status = after, None
            while True:
                if feed.ended and not feed.done:
                    return
                if last < feed.base:  # history the feed does not hold
                    upto = feed.base
                    history = await run_in_threadpool(_read_history, self.sessions, job_id,
                                                      last, upto)
                    for iteration, text in history:
                        yield ServerSentEvent(event="record", id=str(iteration), raw_data=text)
                        last = iteration
                    if len(history) < STREAM_BATCH:
                        last = max(last, upto)
                    continue
                # One consistent view (no await between these reads): records, then job.
                start = bisect_right(feed.iterations, last)
                iterations, records = feed.iterations[start:], feed.records[start:]
                job, job_json, done, changed = feed.job, feed.job_json, feed.done, feed.changed
                if job is None:
                    return  # the job was deleted
                for iteration, text in zip(iterations, records, strict=True):
                    yield ServerSentEvent(event="record", id=str(iteration), raw_data=text)
                    last = iteration
                if job.status != last_status:
                    yield ServerSentEvent(event="status", raw_data=job_json)
                    last_status = job.status
                if done:
                    yield ServerSentEvent(event="end", raw_data=job_json)
                    return
                await changed.wait()
        finally:
            feed.subscribers -= 1
            if feed.subscribers == 0 and (feed.task is None or feed.task.done()):
                self._forget(feed)

    def _forget(self, feed: _Feed) -> None:
        if self._feeds.get(feed.job_id) is feed:
            del self._feeds[feed.job_id]

    async def _poll(self, feed: _Feed) -> None:
        """The feed's poller: while anyone follows the job and it is not finished."""
        try:
            snapshot, feed.base = await run_in_threadpool(_read_tail, self.sessions,
                                                          feed.job_id)
            self._apply(feed, snapshot)
            feed.started.set()
            while not feed.ended and feed.subscribers > 0:
                await asyncio.sleep(self.poll_s)
                if feed.ended or feed.subscribers == 0:
                    break
                snapshot = await run_in_threadpool(_read_after, self.sessions, feed.job_id,
                                                   feed.position)
                self._apply(feed, snapshot)
                while len(snapshot.records) == STREAM_BATCH and not feed.ended:
                    snapshot = await run_in_threadpool(_read_after, self.sessions,
                                                       feed.job_id, feed.position)
                    self._apply(feed, snapshot)
        except Exception as exc:  # the database went away: the streams end, clients retry
            if not self._closed:
                logger.warning("live log of job %s: reading it failed (%s: %s); its %d "
                               "stream(s) end", feed.job_id, type(exc).__name__,
                               str(exc).splitlines()[0] if str(exc) else "", feed.subscribers)
        finally:
            feed.ended = True
            feed.started.set()
            feed.notify()
            if feed.subscribers == 0:
                self._forget(feed)

    @staticmethod
    def _apply(feed: _Feed, snapshot: _Snapshot) -> None:
        feed.job, feed.job_json = snapshot.job, snapshot.job_json
        for iteration, text in snapshot.records:
            feed.iterations.append(iteration)
            feed.records.append(text)
        if len(feed.records) > FEED_WINDOW:
            drop = len(feed.records) // 2
            feed.base = feed.iterations[drop - 1]
            del feed.iterations[:drop], feed.records[:drop]
        if snapshot.job is None or (JobStatus(snapshot.job.status).finished
                                    and len(snapshot.records) < STREAM_BATCH):
            feed.done = feed.ended = True
        feed.notify()
