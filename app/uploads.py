"""Streaming dataset uploads: multipart body -> decompression -> SVMlight parser, chunk by chunk.

The request body is never buffered whole: each chunk received goes through the multipart
parser (``python-multipart``); the bytes of the ``file`` field are decompressed here (gzip,
bzip2 and xz are recognised by their first bytes) in pieces of at most :data:`FEED_BYTES` and
the text goes into a :class:`solvers.SVMLightStreamParser` (``decompress=None``).  Everything
an upload can make the service allocate is checked as it streams, against
:class:`UploadLimits`:

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

import bz2
import lzma
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request

from app.api.errors import BadRequest, Unprocessable, over_limit

FILE_FIELD = "file"
FEED_BYTES = 1 << 20
"""Bytes of the file collected (and text decompressed) before they go to the next stage."""

ENVELOPE_BYTES = 1 << 20
"""Allowance for the multipart framing and other fields on top of the file size limit."""

_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"))
_MAGIC_LENGTH = max(len(magic) for magic, _ in _MAGIC)


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


class _Decompressor:
    """The text of a file fed in pieces: gzip, bzip2 or xz (several concatenated streams
    allowed) recognised by the first bytes, anything else passed through; output in pieces
    of at most :data:`FEED_BYTES`, so a highly compressed piece never expands at once."""

    def __init__(self):
        self.kind: str | None = None
        self._head = b""
        self._settled = False
        self._engine = None
        self._inside_stream = False

    def _new_engine(self):
        if self.kind == "gzip":
            return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        if self.kind == "bz2":
            return bz2.BZ2Decompressor()
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not self._settled:
            self._head += data
            if len(self._head) < _MAGIC_LENGTH:
                return
            data, self._head = self._head, b""
            self._settle(data)
        yield from self._decode(data)

    def finish(self) -> Iterator[bytes]:
        if not self._settled:
            data, self._head = self._head, b""
            self._settle(data)
            yield from self._decode(data)
        if self._inside_stream:
            from solvers import SVMLightFormatError

            raise SVMLightFormatError(f"truncated {self.kind} data (the stream ends early)")

    def _settle(self, head: bytes) -> None:
        self._settled = True
        self.kind = next((kind for magic, kind in _MAGIC if head.startswith(magic)), None)
        if self.kind is not None:
            self._engine = self._new_engine()

    def _decode(self, data: bytes) -> Iterator[bytes]:
        if self.kind is None:
            for start in range(0, len(data), FEED_BYTES):
                yield data[start:start + FEED_BYTES]
            return
        while data:
            if self._engine.eof:
                self._engine = self._new_engine()
            self._inside_stream = True
            data = yield from self._drain(data)

    def _drain(self, data: bytes) -> Iterator[bytes]:
        """Decompress within one stream; return the bytes after the stream's end."""
        from solvers import SVMLightFormatError

        engine = self._engine
        while True:
            try:
                piece = engine.decompress(data, FEED_BYTES)
            except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
                raise SVMLightFormatError(f"corrupt {self.kind} data: {exc}") from None
            if piece:
                yield piece
            if engine.eof:
                self._inside_stream = False
                return engine.unused_data
            if self.kind == "gzip":
                data = engine.unconsumed_tail
                if not data and len(piece) < FEED_BYTES:
                    return b""
            else:
                if engine.needs_input:
                    return b""
                data = b""


@dataclass
class ParsedUpload:
    """The dataset of an upload, the file name the client gave and the bytes received."""

    dataset: object  # solvers.Dataset
    filename: str
    size: int


class _MultipartFile:
    """Collects the ``file`` part of a multipart body, decompresses it and feeds the text to
    an SVMlight parser, checking the limits as it goes."""

    def __init__(self, boundary: bytes, parser, limits: UploadLimits):
        self.parser = parser
        self.limits = limits
        self.filename: str | None = None
        self.size = 0
        self.text_bytes = 0
        self._decompressor = _Decompressor()
        self.files_seen = 0
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
            raise Unprocessable(f"send one multipart field {FILE_FIELD!r}, not several")
        self._in_file = True
        self.filename = options.get(b"filename", b"upload").decode("utf-8", "replace")

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if not self._in_file:
            return
        self.size += end - start
        if self.size > self.limits.max_bytes:
            raise over_limit("the file", "max_upload_bytes", self.limits.max_bytes, "bytes")
        self._pending += data[start:end]

    def _on_part_end(self) -> None:
        self._in_file = False

    # driven from a worker thread
    def consume(self, chunk: bytes) -> None:
        """Parse a piece of the body; feed the file bytes collected once there are enough."""
        try:
            self._multipart.write(chunk)
        except MultipartParseError as exc:
            raise Unprocessable(f"malformed multipart body: {exc}") from None
        if len(self._pending) >= FEED_BYTES:
            self._feed()

    def finish(self):
        """End of the body: parse what is left and return the dataset."""
        try:
            self._multipart.finalize()
        except MultipartParseError as exc:
            raise Unprocessable(f"malformed multipart body: {exc}") from None
        if self.files_seen == 0:
            raise Unprocessable(f"the multipart field {FILE_FIELD!r} is missing")
        self._feed()
        self._parse_text(self._decompressor.finish())
        dataset = self.parser.finish()
        limits = self.limits
        self._check_rows(dataset.n_samples)
        if dataset.X.nnz > limits.max_nnz:
            raise over_limit("the dataset's stored entries", "max_upload_nnz", limits.max_nnz,
                             "entries", actual=dataset.X.nnz)
        if dataset.n_features > limits.max_features:
            raise over_limit("the dataset's number of features (the largest feature index)",
                             "max_features", limits.max_features, "features",
                             actual=dataset.n_features)
        return dataset

    def _feed(self) -> None:
        if self._pending:
            pending, self._pending = bytes(self._pending), bytearray()
            self._parse_text(self._decompressor.feed(pending))

    def _parse_text(self, pieces: Iterator[bytes]) -> None:
        for piece in pieces:
            self.text_bytes += len(piece)
            if self.text_bytes > self.limits.max_bytes:
                raise over_limit("the decompressed file", "max_upload_bytes",
                                 self.limits.max_bytes, "bytes")
            self.parser.feed(piece)
            self._check_rows(self.parser.rows_read)

    def _check_rows(self, rows: int) -> None:
        if rows > self.limits.max_rows:
            raise over_limit("the dataset's rows", "max_upload_rows", self.limits.max_rows,
                             "rows")


async def receive_svmlight_upload(request: Request, limits: UploadLimits, *,
                                  n_features: int | None,
                                  zero_based: bool) -> ParsedUpload:
    """Parse the SVMlight file of a ``multipart/form-data`` request while it streams in.

    Raises ``PayloadTooLarge`` past a limit, ``Unprocessable`` for a body that is not a
    multipart upload with one ``file`` field, ``BadRequest`` for a body cut off by the
    client, and ``solvers.SVMLightFormatError`` for a malformed file.
    """
    import solvers

    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise Unprocessable(f"send the dataset as multipart/form-data with a field "
                            f"{FILE_FIELD!r}")
    max_bytes = limits.max_bytes
    body_limit = max_bytes + ENVELOPE_BYTES
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > body_limit:
        raise over_limit("the request", "max_upload_bytes", max_bytes, "bytes")
    upload = _MultipartFile(
        boundary, solvers.SVMLightStreamParser(n_features=n_features, zero_based=zero_based,
                                               decompress=None),
        limits)
    received = 0
    batch = bytearray()
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > body_limit:
                raise over_limit("the request", "max_upload_bytes", max_bytes, "bytes")
            batch += chunk
            if len(batch) >= FEED_BYTES:
                data, batch = bytes(batch), bytearray()
                await run_in_threadpool(upload.consume, data)
    except ClientDisconnect:
        raise BadRequest("the request body was cut off before its end") from None
    if batch:
        await run_in_threadpool(upload.consume, bytes(batch))
    dataset = await run_in_threadpool(upload.finish)
    return ParsedUpload(dataset, upload.filename or "upload", upload.size)
