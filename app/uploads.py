"""Request bodies consumed while they stream: dataset uploads (multipart body ->
decompression -> SVMlight parser, chunk by chunk, :func:`parse_svmlight_upload`), bounded
plain bodies (:func:`read_body`, JSON batch predictions) and bounded text bodies fed to a parser
as they arrive (:func:`parse_text_body`, SVMlight batch predictions).  The bodies come as
async iterables of chunks: reading them from a request is the route layer's
(:mod:`app.api.bodies`), and this module knows no web framework.

The request body is never buffered whole: each chunk received goes through the multipart
parser (``python-multipart``); the bytes of the ``file`` field go, a megabyte at a time, into a
:class:`solvers.SVMLightStreamParser`, which recognises gzip, bzip2 and xz by their first bytes
and decompresses in pieces of at most :data:`FEED_BYTES`.  Everything an upload can make the
service allocate is checked as it streams, against :class:`UploadLimits` (the bytes sent here,
the rest by the parser's own caps, :class:`solvers.SVMLightLimitError`):

* the bytes sent and the *decompressed* text, each at most ``max_bytes`` (a bzip2 file of
  repeated lines expands 17,000:1: counting only what was sent would let 1 MiB become
  gigabytes), so the parser's arrays stay within a small multiple of ``max_bytes``;
* the rows parsed, after each piece of text;
* the stored entries and the number of features, once the file is parsed (the arrays are then
  already bounded by the text size; a line ``1 8589934592:1`` is refused before anything sized
  by ``n_features`` exists).

Each cap refused is a 413 that names it and the setting that raises it.  Decompressing and
parsing run in a worker thread, a megabyte at a time, so the event loop stays free.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from anyio import CapacityLimiter, to_thread
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from app.errors import ContentTooLarge, InvalidRequest, MalformedInput, limit_exceeded

FILE_FIELD = "file"
FEED_BYTES = 1 << 20
"""Bytes of the file collected (and text decompressed) before they go to the next stage."""

ENVELOPE_BYTES = 1 << 20
"""Allowance for the multipart framing and other fields on top of the file size limit."""

logger = logging.getLogger("svmsvc.uploads")


class UploadThreads:
    """The threads that parse and store dataset uploads: at most ``threads`` at once (the
    steps of other uploads wait their turn, their bodies unread meanwhile), each ``nice``
    steps of CPU niceness below the rest of the process (Linux; elsewhere, or where the
    system refuses, at the process's own).

    Issue 49: under uploads, the event loop that answers every request (``/healthz``
    included) is idle most of the time and waits for a CPU when a request arrives: over a
    round of four clients' uploads it ran 60-100 ms and waited 150-900 ms on a run queue
    (``bench/README.md``), part of that behind these very threads, which the scheduler
    treated as its equals.  A niceness of 10 gives them a tenth of its weight; they still
    take whatever CPU the loop leaves.  Raising a thread's niceness needs no privilege
    (lowering it again would, hence threads of their own, not the shared pool's)."""

    def __init__(self, threads: int, nice: int = 0):
        self.threads, self.nice = threads, nice
        self._limiter = CapacityLimiter(threads)
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="svmsvc-upload",
                                        initializer=self._lower_priority)

    def _lower_priority(self) -> None:
        if self.nice <= 0 or not hasattr(os, "setpriority"):
            return
        thread = threading.get_native_id()
        try:
            os.setpriority(os.PRIO_PROCESS, thread,
                           os.getpriority(os.PRIO_PROCESS, thread) + self.nice)
        except OSError as exc:  # a platform without per-thread niceness, or a sandbox
            logger.warning("upload threads at the process's niceness: %s", exc)

    async def run(self, function: Callable, *args):
        """``function(*args)`` in one of these threads, once a place is free; a request
        cancelled meanwhile waits for the step under way to end (as ``to_thread.run_sync``).
        """
        return await to_thread.run_sync(self._call, function, args, limiter=self._limiter)

    def _call(self, function: Callable, args: tuple):
        return self._pool.submit(function, *args).result()



@dataclass(frozen=True)
class UploadLimits:
    """The caps of one upload (from the settings of the same names)."""

    max_bytes: int
    max_rows: int
    max_nnz: int
    max_features: int

    @classmethod
    def from_settings(cls, settings) -> UploadLimits:
        return cls(settings.max_upload_bytes, settings.max_upload_rows,
                   settings.max_upload_nnz, settings.max_features)


@dataclass
class ParsedUpload:
    """The dataset of an upload, the file name the client gave and the bytes received."""

    dataset: object  # solvers.Dataset
    filename: str
    size: int

    @property
    def name(self) -> str:
        """The name to store: the base of the client's file name, at most 255 characters."""
        return self.filename.replace("\\", "/").rsplit("/", 1)[-1][:255] or "upload"


class _MultipartFile:
    """Collects the ``file`` part of a multipart body, decompresses it and feeds the text to
    an SVMlight parser, checking the limits as it goes."""

    def __init__(self, boundary: bytes, parser, limits: UploadLimits):
        self.parser = parser
        self.limits = limits
        self.filename: str | None = None
        self.size = 0
        self.files_seen = 0
        self.complete = False  # the closing boundary arrived
        self._pending = bytearray()
        self._in_file = False
        self._header_field = bytearray()
        self._header_value = bytearray()
        self._headers: dict[bytes, bytes] = {}
        self._multipart = MultipartParser(boundary, callbacks={
            "on_part_begin": self._on_part_begin,
            "on_header_field": self._on_header_field,
            "on_header_value": self._on_header_value,
            "on_header_end": self._on_header_end,
            "on_headers_finished": self._on_headers_finished,
            "on_part_data": self._on_part_data,
            "on_part_end": self._on_part_end,
            "on_end": self._on_end,
        })

    # callbacks of the multipart parser
    def _on_part_begin(self) -> None:
        self._headers = {}
        self._in_file = False

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        self._headers[bytes(self._header_field).lower()] = bytes(self._header_value)
        self._header_field.clear()
        self._header_value.clear()

    def _on_headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        if options.get(b"name", b"").decode("utf-8", "replace") != FILE_FIELD:
            return  # other fields are ignored
        self.files_seen += 1
        if self.files_seen > 1:
            raise InvalidRequest(f"send one multipart field {FILE_FIELD!r}, not several")
        self._in_file = True
        self.filename = options.get(b"filename", b"upload").decode("utf-8", "replace")

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if not self._in_file:
            return
        self.size += end - start
        if self.size > self.limits.max_bytes:
            raise limit_exceeded("the file", "max_upload_bytes", self.limits.max_bytes, "bytes",
                                 error=ContentTooLarge)
        self._pending += data[start:end]

    def _on_part_end(self) -> None:
        self._in_file = False

    def _on_end(self) -> None:
        self.complete = True

    # driven from a worker thread
    def consume(self, chunk: bytes) -> None:
        """Parse a piece of the body; feed the file bytes collected once there are enough."""
        try:
            self._multipart.write(chunk)
        except MultipartParseError as exc:
            raise MalformedInput(f"malformed multipart body: {exc}") from None
        if len(self._pending) >= FEED_BYTES:
            self._feed()

    def finish(self):
        """End of the body: parse what is left and return the dataset."""
        try:
            self._multipart.finalize()
        except MultipartParseError as exc:
            raise MalformedInput(f"malformed multipart body: {exc}") from None
        if self.files_seen == 0:
            raise InvalidRequest(f"the multipart field {FILE_FIELD!r} is missing")
        if not self.complete:  # a body cut short would otherwise store a truncated dataset
            raise MalformedInput("malformed multipart body: it ends before its closing "
                                 "boundary (the upload was cut short)")
        self._feed()
        # more distinct labels than SVMSVC_MAX_CLASSES are real values (a regression's): stored,
        # their class_counts null (app.crud.datasets.label_summary); a classification job on
        # them is refused at admission, hinting task=regression
        return self._capped(self.parser.finish)

    def close(self) -> None:
        """Drop the parsers.  The multipart parser holds this object's bound methods as its
        callbacks, a reference cycle: left to the garbage collector, it kept the SVMlight
        parser's arrays alive until the next full collection (whose heap walk, holding the
        GIL, stalled the event loop when it was forced after large uploads)."""
        self._multipart = None
        self.parser = None
        self._pending = bytearray()

    def _feed(self) -> None:
        if self._pending:
            pending, self._pending = bytes(self._pending), bytearray()
            self._capped(self.parser.feed, pending)

    def _capped(self, step, *args):
        """Run a parser step; a cap the parser enforces becomes the 413 naming its setting."""
        from solvers import SVMLightLimitError

        try:
            return step(*args)
        except SVMLightLimitError as exc:
            what, setting, unit = _CAPS[exc.limit]
            raise limit_exceeded(what, setting, exc.cap, unit, error=ContentTooLarge,
                                 actual=None if exc.limit == "text_bytes" else exc.actual
                                 ) from None


# The parser's caps (SVMLightLimitError.limit): what the message calls it, the setting, the unit.
_CAPS = {
    "text_bytes": ("the decompressed file", "max_upload_bytes", "bytes"),
    "rows": ("the dataset's rows", "max_upload_rows", "rows"),
    "entries": ("the dataset's stored entries", "max_upload_nnz", "entries"),
    "features": ("the dataset's number of features (the largest feature index)",
                 "max_features", "features"),
}


async def bounded(chunks: AsyncIterable[bytes], declared_length: str | None, limit: int,
                  setting: str) -> AsyncIterator[bytes]:
    """The chunks of a body, refused (:class:`ContentTooLarge` naming ``setting``) as soon as
    its declared length (the ``Content-Length`` header's text, if any), or what has arrived,
    exceeds ``limit`` bytes."""
    if declared_length is not None and declared_length.isdigit() and \
            int(declared_length) > limit:
        raise limit_exceeded("the body", setting, limit, "bytes", error=ContentTooLarge)
    received = 0
    async for chunk in chunks:
        received += len(chunk)
        if received > limit:
            raise limit_exceeded("the body", setting, limit, "bytes", error=ContentTooLarge)
        yield chunk


async def read_body(chunks: AsyncIterable[bytes], declared_length: str | None, limit: int,
                    setting: str) -> bytes:
    """The whole of a body arriving as ``chunks``, at most ``limit`` bytes (:func:`bounded`)."""
    body = bytearray()
    async for chunk in bounded(chunks, declared_length, limit, setting):
        body += chunk
    return bytes(body)


async def parse_text_body(chunks: AsyncIterable[bytes], declared_length: str | None,
                          limit: int, setting: str, parser):
    """``parser.finish()`` once every chunk of a body of at most ``limit`` bytes
    (:func:`bounded`) has been fed to ``parser``, a megabyte at a time in a worker thread,
    as it arrives: whatever ``parser`` refuses (a row past its cap) ends the body there."""
    await _feed_in_batches(bounded(chunks, declared_length, limit, setting), parser.feed)
    return await to_thread.run_sync(parser.finish)


async def _feed_in_batches(chunks: AsyncIterable[bytes], feed,
                           threads: UploadThreads | None = None) -> None:
    """Hand the bytes of ``chunks`` to ``feed`` in a worker thread (one of ``threads``, if
    given: the body waits meanwhile, unread), :data:`FEED_BYTES` or more at a time (the last
    batch whatever is left)."""
    async def step(data: bytes) -> None:
        if threads is None:
            await to_thread.run_sync(feed, data)
        else:
            await threads.run(feed, data)

    batch = bytearray()
    async for chunk in chunks:
        batch += chunk
        if len(batch) >= FEED_BYTES:
            data, batch = bytes(batch), bytearray()
            await step(data)
    if batch:
        await step(bytes(batch))


async def parse_svmlight_upload(chunks: AsyncIterable[bytes], content_type: str,
                                declared_length: str | None, limits: UploadLimits, *,
                                n_features: int | None, zero_based: bool,
                                threads: UploadThreads | None = None) -> ParsedUpload:
    """Parse the SVMlight file of a ``multipart/form-data`` body while it streams in as
    ``chunks`` (``content_type`` and ``declared_length``: the body's ``Content-Type`` and
    ``Content-Length`` headers).

    Raises ``ContentTooLarge`` past a limit, ``InvalidRequest`` for a body that is not a
    multipart upload with one ``file`` field (``MalformedInput`` for a malformed one), and
    ``solvers.SVMLightFormatError`` for a malformed file; whatever ``chunks`` raises (the
    route layer's ``UnreadableBody`` for a body cut off by the client) passes through.
    ``threads`` (the service's :class:`UploadThreads`, ``upload_parse_threads`` of them)
    run the steps: each megabyte's step waits for a place, so concurrent uploads take turns
    rather than each adding a thread that competes with the event loop for the GIL and, at a
    lower priority, for a CPU (issue 49).
    """
    import solvers

    media_type, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if media_type != b"multipart/form-data" or not boundary:
        raise InvalidRequest(f"send the dataset as multipart/form-data with a field "
                            f"{FILE_FIELD!r}")
    max_bytes = limits.max_bytes
    body_limit = max_bytes + ENVELOPE_BYTES
    if declared_length is not None and declared_length.isdigit() and \
            int(declared_length) > body_limit:
        raise limit_exceeded("the request", "max_upload_bytes", max_bytes, "bytes",
                             error=ContentTooLarge)
    parser = solvers.SVMLightStreamParser(
        n_features=n_features, zero_based=zero_based, decompress="auto", piece_size=FEED_BYTES,
        max_text_bytes=limits.max_bytes, max_rows=limits.max_rows, max_entries=limits.max_nnz,
        max_features=limits.max_features)
    upload = _MultipartFile(boundary, parser, limits)
    del parser

    async def counted() -> AsyncIterator[bytes]:
        received = 0
        async for chunk in chunks:
            received += len(chunk)
            if received > body_limit:
                raise limit_exceeded("the request", "max_upload_bytes", max_bytes, "bytes",
                                     error=ContentTooLarge)
            yield chunk

    try:
        await _feed_in_batches(counted(), upload.consume, threads)
        dataset = await (threads.run(upload.finish) if threads is not None
                         else to_thread.run_sync(upload.finish))
        return ParsedUpload(dataset, upload.filename or "upload", upload.size)
    finally:
        upload.close()  # freed by reference counting, whatever happened
