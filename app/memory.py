"""Memory handed back to the system after large requests.

A large upload or batch prediction is parsed in a worker thread; glibc's allocator serves it
from that thread's arena, and once the arrays and the parser's buffers are freed it keeps most
of those pages for later (the arena's top is trimmed, the holes below it are not; and after a
large ``mmap``-ed block is freed glibc raises its ``mmap`` threshold, so the next large arrays
come from the arenas too).  So the web process's resident memory stayed at its high-water
mark: idle RSS 252 MB before, up to 463 MB after 57 MB uploads that were deleted (2026-11-23,
``python -m bench service memory``).

:class:`ReleaseMemoryMiddleware` calls ``malloc_trim(0)`` (every arena, free pages returned
with ``madvise``) in a thread once a request whose body or answer exceeded
:data:`TRIM_AFTER_BYTES` has been answered, when nothing holds its objects any more, and
:func:`configure_allocator` (at start-up) fixes glibc's ``mmap`` threshold so that large
arrays are unmapped when freed.  Without glibc (musl, macOS) both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading

import anyio

logger = logging.getLogger("svmsvc.memory")

TRIM_AFTER_BYTES = 1 << 20
"""Requests with a body, or an answer, larger than this are followed by a trim."""


MMAP_THRESHOLD_BYTES = 1 << 20
"""Allocations of at least this size get pages of their own (``mmap``), given back to the
system the moment they are freed."""

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number in glibc's malloc.h


def _glibc():
    name = ctypes.util.find_library("c")
    if name is None:
        return None, None
    try:
        libc = ctypes.CDLL(name)
        trim, mallopt = libc.malloc_trim, libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return None, None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return trim, mallopt


_MALLOC_TRIM, _MALLOPT = _glibc()


def configure_allocator() -> bool:
    """Fix glibc's ``mmap`` threshold at :data:`MMAP_THRESHOLD_BYTES` (by default it rises to
    the size of the largest block freed, up to 32 MiB, after which a parser's arrays come from
    the arenas and stay there); False without glibc."""
    if _MALLOPT is None:
        return False
    return bool(_MALLOPT(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
_TRIMMING = threading.Lock()


def release_memory() -> bool:
    """Return the allocator's free pages to the system (glibc's ``malloc_trim(0)``, called
    through ctypes, which lets go of the GIL meanwhile); False when there is no such call
    here, or a release is already running.

    No garbage collection: a full one walks the whole heap holding the GIL, and forced after
    every large request it stalled the event loop (``/healthz`` p99 1,275 ms during ten
    1.16 MB uploads, issue 35).  The cycle it was there for (an upload's multipart parser and
    its callbacks, which kept the parsed arrays) is broken where it forms
    (:meth:`app.uploads._MultipartFile.close`)."""
    if _MALLOC_TRIM is None or not _TRIMMING.acquire(blocking=False):
        return False
    try:
        _MALLOC_TRIM(0)
        return True
    finally:
        _TRIMMING.release()


class ReleaseMemoryMiddleware:
    """ASGI middleware: after a request whose body, or whose answer, was larger than
    ``threshold`` bytes has been answered, trim the allocator (in a worker thread, off the
    event loop): a large answer (a model's download, a long list) is built from buffers that
    stay in the arenas as an upload's do."""

    def __init__(self, app, threshold: int = TRIM_AFTER_BYTES):
        self.app = app
        self.threshold = threshold

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or _MALLOC_TRIM is None:
            await self.app(scope, receive, send)
            return
        received = sent = 0

        async def counting_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
            return message

        async def counting_send(message):
            nonlocal sent
            if message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, counting_receive, counting_send)
        finally:
            if received > self.threshold or sent > self.threshold:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(release_memory)
