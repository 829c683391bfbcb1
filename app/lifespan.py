"""What a web process does beside answering requests, step by step; the application's
lifespan (:func:`app.main.create_app`) runs them in this order:

1. :func:`open_database`: the data directory, the allocator, the engine, and the migrations
   (one process at a time when there are several web processes);
2. :meth:`WebProcess.take_dispatcher_role`: with one web process, start the dispatcher
   (:meth:`~WebProcess.start_dispatcher`); with several, the process that takes the
   dispatcher lock starts it and the others contend for the lock in case its holder dies
   (:meth:`~WebProcess.contend_for_dispatcher`, :mod:`app.web_processes`).  Starting the
   dispatcher first removes what a crash left in the dataset store
   (:meth:`~WebProcess.sweep_orphaned_files`) and settles the jobs a previous process left
   running (:meth:`~WebProcess.settle_jobs_left_running`); the process that runs it then
   sweeps the store again every ``orphan_sweep_interval_s``;
3. :meth:`WebProcess.start_webhook_sender` (every web process: the events of finished jobs
   with a callback URL, claimed under leases in the database, :mod:`app.webhooks`);
4. :func:`warm_serial_kernels_in_background` and :func:`log_ready`.

Shut-down is :meth:`WebProcess.cancel_background` before the dispatcher stops.  Nothing here
knows HTTP: blocking steps run in a worker thread through ``anyio.to_thread`` (what
Starlette's ``run_in_threadpool`` calls).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from dataclasses import dataclass, field

from anyio import to_thread
from sqlalchemy.engine import Engine

from app.core.config import Settings
from app.crud.datasets import stored_digests
from app.db.migrate import upgrade_database
from app.db.session import Sessions, create_db_engine
from app.jobs.dispatcher import Dispatcher
from app.jobs.state import recover_interrupted_jobs
from app.memory import configure_allocator
from app.metrics import ServiceMetrics
from app.storage import DatasetStorage
from app.web_processes import (
    CONTEND_INTERVAL_S,
    MIGRATE_LOCK_FILE,
    SharedDispatcher,
    WakeSocket,
    exclusively,
)
from app.webhooks import WebhookSender

logger = logging.getLogger("svmsvc")


async def open_database(settings: Settings) -> tuple[Engine, str]:
    """The engine of the service's database, brought to the newest schema, and its revision
    (the data directory created and the allocator configured first)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    configure_allocator()
    engine = create_db_engine(settings.sqlalchemy_url)
    revision = await to_thread.run_sync(upgrade_schema, engine, settings)
    return engine, revision


def upgrade_schema(engine: Engine, settings: Settings) -> str:
    """Apply the migrations; one process at a time when there are several (Alembic upgrading
    one database from two processes at once fails on SQLite and PostgreSQL alike)."""
    if settings.web_processes == 1:
        return upgrade_database(engine)
    with exclusively(settings.data_dir / MIGRATE_LOCK_FILE):
        return upgrade_database(engine)


@dataclass
class WebProcess:
    """One web process's part of the service beside its requests: the dispatcher's role
    and the store's sweeps, with the background tasks they leave running."""

    settings: Settings
    sessions: Sessions
    store: DatasetStorage
    metrics: ServiceMetrics
    background: list[asyncio.Task] = field(default_factory=list)

    def sweep_orphaned_files(self) -> None:
        """Remove the temporary upload files and the stored dataset files without a
        database row (older than ``orphan_grace_s``), left by a crash."""
        with self.sessions.read() as session:
            digests = stored_digests(session)
        temporary, orphans = self.store.sweep(digests, self.settings.orphan_grace_s)
        if temporary or orphans:
            logger.warning("removed %d temporary upload file(s) and %d stored dataset "
                           "file(s) without a database row, left by a crash", temporary,
                           orphans)

    async def sweep_periodically(self) -> None:
        """:meth:`sweep_orphaned_files` every ``orphan_sweep_interval_s``, until cancelled."""
        # a crash of an upload's request (not of the process) leaves its temporary file
        # too: sweep while running, not only at start
        while True:
            await asyncio.sleep(self.settings.orphan_sweep_interval_s)
            try:
                await to_thread.run_sync(self.sweep_orphaned_files)
            except Exception:  # a sweep that fails (a database hiccup) waits for the next
                logger.exception("the periodic sweep of orphaned files failed")

    def settle_jobs_left_running(self) -> None:
        """Re-queue, cancel or fail the jobs a previous process left running (those whose
        lease expired)."""
        with self.sessions.write() as session:
            requeued, cancelled, failed = recover_interrupted_jobs(
                session, self.settings.max_attempts, self.settings.lease_s)
        if requeued or cancelled or failed:
            logger.warning("jobs left running by the previous process: %d re-queued, "
                           "%d cancelled, %d failed", requeued, cancelled, failed)

    def start_dispatcher(self, wake_socket: WakeSocket | None = None) -> Dispatcher:
        """What one process of the service does: sweep, take back the jobs a previous
        process left running, start the dispatcher and its pool."""
        self.sweep_orphaned_files()
        self.settle_jobs_left_running()
        dispatcher = Dispatcher(self.settings, self.sessions, self.metrics,
                                wake_socket=wake_socket)
        dispatcher.start()
        return dispatcher

    async def take_dispatcher_role(self) -> Dispatcher | SharedDispatcher:
        """The dispatcher this process's routes talk to.  One web process starts it; of
        several, the one that takes the lock starts it and each other one contends for the
        lock in the background.  The process running the dispatcher sweeps periodically."""
        if self.settings.web_processes == 1:
            dispatcher = await to_thread.run_sync(self.start_dispatcher)
            self._in_background(self.sweep_periodically())
            return dispatcher
        shared = SharedDispatcher(self.settings.data_dir.resolve())
        if await to_thread.run_sync(shared.lead, self.start_dispatcher):
            self._in_background(self.sweep_periodically())
        else:
            logger.info("web process %d serves requests; another runs the dispatcher",
                        os.getpid())
            self._in_background(self.contend_for_dispatcher(shared))
        return shared

    async def contend_for_dispatcher(self, shared: SharedDispatcher) -> None:
        """Try to take the dispatcher lock every ``CONTEND_INTERVAL_S`` until this process
        runs the dispatcher (uvicorn replaces a dispatcher process that dies: another takes
        over its role), then sweep periodically."""
        while True:
            await asyncio.sleep(CONTEND_INTERVAL_S)
            try:
                if await to_thread.run_sync(shared.lead, self.start_dispatcher):
                    break
            except Exception:
                logger.exception("could not take over the dispatcher; retrying")
        logger.warning("web process %d took over the dispatcher", os.getpid())
        self._in_background(self.sweep_periodically())

    def start_webhook_sender(self) -> None:
        """Deliver the events of finished jobs with a callback URL (every web process: the
        events are claimed under leases in the database, :mod:`app.webhooks`)."""
        self._in_background(WebhookSender(self.settings, self.sessions).run())

    def cancel_background(self) -> None:
        """Cancel the periodic sweep and the contention (at shut-down)."""
        for task in self.background:
            task.cancel()

    def _in_background(self, work) -> None:
        self.background.append(asyncio.get_running_loop().create_task(work))


def warm_serial_kernels_in_background() -> None:
    """Compile (or load) the parser's and the serial prediction kernels in a daemon thread:
    the web process trains nothing, and requests are served meanwhile."""
    threading.Thread(target=_warm_serial_kernels, name="svmsvc-warm-up", daemon=True).start()


def _warm_serial_kernels() -> None:
    from solvers import warm_up

    seconds = warm_up(serving=True)  # parsing and serial prediction: the web process trains nothing
    logger.info("serial kernels ready for predictions (%.1f s)", seconds)


def log_ready(settings: Settings, engine: Engine, revision: str, api_keys) -> None:
    """Say that the service serves requests (ready for jobs once a worker has warmed up:
    the pool logs 'svmsvc ready' then, as ``/readyz`` turns 200), where its data are, and
    whether it needs API keys (loudly when it does not)."""
    logger.info("svmsvc serving requests: database %s at revision %s, data in %s; jobs wait "
                "for a worker's warm-up (GET /readyz says how far)",
                engine.url.render_as_string(hide_password=True), revision,
                settings.data_dir.resolve())
    if api_keys.enabled:
        logger.info("API keys: %d configured or created; every route but /healthz and "
                    "/readyz needs one (X-API-Key)", len(api_keys))
    else:
        logger.warning("NO API KEYS CONFIGURED: THE SERVICE IS OPEN to anyone who can "
                       "reach %s:%d (set SVMSVC_API_KEYS or SVMSVC_API_KEYS_FILE, or create "
                       "one: POST /api/v1/api-keys)",
                       settings.host, settings.port)
