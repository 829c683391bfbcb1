"""Several web processes on one port, sharing one dispatcher (issue 38).

``svmsvc serve --web-processes N`` (``SVMSVC_WEB_PROCESSES``) with N > 1 runs uvicorn's
supervisor, which spawns N processes (the ``spawn`` start method: nothing is forked after
Numba's threads started) and replaces those that die; on Linux each listens on a socket of
its own on the port (:class:`OwnListeningSocket`).  Every process serves every route;
exactly one of them also runs what a service runs once: the dispatcher and the executor's
worker pool, the lease renewal, the periodic sweep of orphaned files, and the recovery of the
jobs a previous process left running.

* **Who dispatches.**  The process that holds an exclusive ``flock`` on ``dispatcher.lock``
  in the data directory (so two services with different data directories never collide).
  The others try to take it every :data:`CONTEND_INTERVAL_S`; the kernel releases a lock
  when its process dies, however it dies, and uvicorn's supervisor replaces the dead process,
  so the dispatcher moves to a surviving process within about a second.  What the dead one
  ran is recovered as after any crash: its jobs' leases expire and the new dispatcher takes
  them back (an orphaned worker finishing a job still writes it, fenced by its attempt).
* **Waking it.**  The dispatcher process listens on a Unix datagram socket named after the
  data directory (:func:`wake_address`: in Linux's abstract namespace, so nothing is left on
  disk and no path length limit applies); ``wake()`` in another process sends it a byte, so a
  job created or cancelled there starts or stops as promptly as in the dispatcher's own
  process.  A wake that finds nobody listening is dropped: the dispatcher also looks at the
  queue every tick, and a new dispatcher looks at it when it starts.
* **What the others see.**  The dispatcher process publishes its pool (the dispatcher
  thread's state and each worker's slot) to ``pool.json`` in the data directory every
  :data:`PUBLISH_INTERVAL_S` (written aside and renamed over, so a reader never sees half of
  it); the other processes answer ``/readyz``, ``/metrics``' worker states and a queued job's
  message from it.  A publication older than :data:`STALE_S`, or of a process that no longer
  exists, says that nobody dispatches.
* **Migrations** run in ``svmsvc serve`` before the processes start, then again in each
  process under an exclusive ``flock`` on ``migrate.lock`` (no-ops at the newest revision):
  Alembic upgrading one database from two processes at once fails on both backends.
* **Metrics**: ``svmsvc serve`` gives the processes a ``PROMETHEUS_MULTIPROC_DIR``
  (``prometheus`` in the data directory, emptied at start) and ``/metrics`` adds up every
  process's counters and histograms (:mod:`app.metrics`).

Per process: the model cache (each process loads the models it predicts with), the live log
streams and their limits (``max_log_streams``, ``max_log_streams_per_key``), and the
serial-kernel warm-up.  API keys come from the same settings in each; the queued-jobs quota
is counted in the database, so it holds across processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

from app.jobs.dispatcher import Dispatcher
from app.jobs.executors import WorkerInfo

logger = logging.getLogger("svmsvc")

CONTEND_INTERVAL_S = 1.0
"""How often a process that does not dispatch tries to take the dispatcher lock."""

PUBLISH_INTERVAL_S = 0.5
"""How often the dispatcher process publishes its pool."""

STALE_S = 10.0
"""A published pool older than this says nobody dispatches (its process is stuck)."""

LOCK_FILE = "dispatcher.lock"
MIGRATE_LOCK_FILE = "migrate.lock"
POOL_FILE = "pool.json"
METRICS_DIR = "prometheus"


def _reuse_port_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) with ``SO_REUSEPORT`` (not listening yet)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


class OwnListeningSocket:
    """What uvicorn's supervisor hands each web process as its listening socket, on Linux:
    unpickled in the process (uvicorn pickles its sockets to the processes it spawns), it is
    a socket of the process's own, bound to the service's address with ``SO_REUSEPORT``.

    With one socket shared by every process, the process whose event loop wakes first
    accepts every connection waiting (asyncio accepts in a loop), so a burst of new
    connections (a client pool, ``wrk``) lands on one process (seen: 8 of 8, the other
    process idle).  With a socket each, the kernel spreads the connections over the
    processes by a hash of their addresses.  The supervisor holds a socket of the group that
    never listens (:func:`reserve_port`): it keeps the port while processes are replaced and
    receives no connection.  A process that dies loses the connections not yet accepted in
    its queue (they are reset), as with any listener that closes."""

    def __init__(self, host: str, port: int):
        self.host = host
        self.port = port

    def __reduce__(self):
        return _reuse_port_socket, (self.host, self.port)


def listening_sockets(host: str, port: int) -> tuple[socket.socket, list]:
    """The supervisor's socket and what it hands every web process: on Linux, a socket that
    reserves the port and an :class:`OwnListeningSocket`; elsewhere (no load-balancing
    ``SO_REUSEPORT``) one socket bound here that every process shares."""
    if not sys.platform.startswith("linux"):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.set_inheritable(True)
        return sock, [sock]
    reserved = _reuse_port_socket(host, port)
    return reserved, [OwnListeningSocket(host, reserved.getsockname()[1])]


class DispatcherLock:
    """The exclusive, non-blocking ``flock`` that makes its holder the dispatcher process;
    the file holds the holder's pid (for operators: ``cat dispatcher.lock``)."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it; whether this process holds it now."""
        if self._fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor releases the flock
            self._fd = None


@contextlib.contextmanager
def exclusively(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` meanwhile (waiting for it)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def wake_address(data_dir: Path) -> str | bytes:
    """The dispatcher's wake socket for ``data_dir``: an abstract Unix socket name on Linux
    (a digest of the directory's absolute path), a file in the directory elsewhere."""
    if sys.platform.startswith("linux"):
        digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:32]
        return f"\0svmsvc-wake-{digest}".encode()
    return str(data_dir.resolve() / "dispatcher.wake")


class WakeSocket:
    """The dispatcher's end of the cross-process wake: the dispatcher waits on it
    (``fileno``) alongside its executor, and wakes itself through it too."""

    def __init__(self, address: str | bytes):
        self.address = address
        if isinstance(address, str):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(address)
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            self._socket.bind(address)
        except OSError:
            self._socket.close()
            raise
        self._socket.setblocking(False)

    def fileno(self) -> int:
        return self._socket.fileno()

    def poke(self) -> None:
        send_wake(self.address)

    def drain(self) -> None:
        """Read every pending wake (one look at the database serves them all)."""
        while True:
            try:
                self._socket.recv(64)
            except (BlockingIOError, OSError):
                return

    def close(self) -> None:
        self._socket.close()
        if isinstance(self.address, str):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.address)


_sender: socket.socket | None = None
_sender_lock = threading.Lock()


def send_wake(address: str | bytes) -> None:
    """Wake the dispatcher listening on ``address``; dropped when nobody listens (it also
    polls) or its queue is full (it is awake already)."""
    global _sender
    with _sender_lock:
        if _sender is None:
            _sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            _sender.setblocking(False)
        try:
            _sender.sendto(b"w", address)
        except OSError:
            pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SharedDispatcher:
    """``app.state.dispatcher`` in each of several web processes: the routes' ``wake()``,
    ``snapshot()`` and ``dispatching``, answered by the dispatcher when this process runs it
    and from its publication otherwise (see the module docstring)."""

    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self.lock = DispatcherLock(data_dir / LOCK_FILE)
        self.address = wake_address(data_dir)
        self.local: Dispatcher | None = None
        self._pool_path = data_dir / POOL_FILE
        self._stopping = threading.Event()
        self._leading = threading.Lock()
        self._publisher: threading.Thread | None = None

    @property
    def role(self) -> str:
        return "dispatcher" if self.local is not None else "serving"

    # -- becoming the dispatcher ---------------------------------------------------------
    def lead(self, start: Callable[[WakeSocket], Dispatcher]) -> bool:
        """If this process can take the lock: start the dispatcher (``start`` builds and
        starts it on the wake socket) and publish its pool; whether it did."""
        with self._leading:
            if self.local is not None:
                return True
            if self._stopping.is_set() or not self.lock.try_acquire():
                return False
            self._start(start)
        return True

    def _start(self, start: Callable[[WakeSocket], Dispatcher]) -> None:
        try:
            wake = WakeSocket(self.address)
        except OSError as exc:
            self.lock.release()
            raise RuntimeError(f"cannot listen for wake-ups on {self.address!r}: {exc}") \
                from exc
        try:
            self.local = start(wake)
        except BaseException:
            wake.close()
            self.lock.release()
            raise
        self._publish()
        self._publisher = threading.Thread(target=self._publish_periodically,
                                           name="svmsvc-pool-publisher", daemon=True)
        self._publisher.start()
        logger.info("web process %d runs the dispatcher (lock %s)", os.getpid(),
                    self.lock.path)

    def stop(self) -> None:
        """Stop the dispatcher if this process runs it, say so, and release the lock."""
        self._stopping.set()
        with self._leading:  # after a take-over under way
            if self._publisher is not None:
                self._publisher.join()
            if self.local is not None:
                self.local.stop()
                with contextlib.suppress(OSError):
                    self._write({"pid": os.getpid(), "time": time.time(),
                                 "dispatching": False, "workers": []})
            self.lock.release()

    # -- the routes' view ----------------------------------------------------------------
    def wake(self) -> None:
        if self.local is not None:
            self.local.wake()
        else:
            send_wake(self.address)

    def snapshot(self) -> list[WorkerInfo]:
        if self.local is not None:
            return self.local.snapshot()
        published = self._published()
        if published is None:
            return []
        return [WorkerInfo(**worker) for worker in published["workers"]]

    @property
    def dispatching(self) -> bool:
        if self.local is not None:
            return self.local.dispatching
        published = self._published()
        return published is not None and published["dispatching"]

    # -- the publication -----------------------------------------------------------------
    def _publish_periodically(self) -> None:
        while not self._stopping.wait(PUBLISH_INTERVAL_S):
            try:
                self._publish()
            except Exception:  # a full disk: the others see a stale publication
                logger.exception("could not publish the worker pool's state")

    def _publish(self) -> None:
        local = self.local
        workers = [asdict(worker) | {"job_id": str(worker.job_id) if worker.job_id else None}
                   for worker in local.snapshot()]
        self._write({"pid": os.getpid(), "time": time.time(),
                     "dispatching": local.dispatching, "workers": workers})

    def _write(self, content: dict) -> None:
        descriptor, temporary = tempfile.mkstemp(dir=self.data_dir, prefix=".pool-")
        try:
            with os.fdopen(descriptor, "w") as handle:
                json.dump(content, handle)
            os.replace(temporary, self._pool_path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise

    def _published(self) -> dict | None:
        """The dispatcher process's last publication, if it is recent and its process
        lives."""
        try:
            published = json.loads(self._pool_path.read_text())
        except (FileNotFoundError, ValueError):
            return None
        if time.time() - published["time"] > STALE_S or not _pid_alive(published["pid"]):
            return None
        for worker in published["workers"]:
            if worker["job_id"] is not None:
                worker["job_id"] = uuid.UUID(worker["job_id"])
        return published
