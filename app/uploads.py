"""Streaming dataset uploads: multipart body -> SVMlight parser, chunk by chunk.

The request body is never buffered whole: each chunk received goes through the multipart
parser (``python-multipart``) and the bytes of the ``file`` field straight into a
:class:`solvers.SVMLightStreamParser` (which recognises and decompresses gzip, bzip2 and xz
itself).  The byte count is checked as the chunks arrive, so an upload past the limit is
refused (413) as soon as it crosses it.  Parsing runs in a worker thread, a megabyte at a
time, so the event loop stays free.
"""

from __future__ import annotations

from dataclasses import dataclass

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from app.api.errors import PayloadTooLarge, Unprocessable

FILE_FIELD = "file"
FEED_BYTES = 1 << 20
"""Bytes of the file collected before they are handed to the SVMlight parser."""

ENVELOPE_BYTES = 1 << 20
"""Allowance for the multipart framing and other fields on top of the file size limit."""


@dataclass
class ParsedUpload:
    """The dataset of an upload, the file name the client gave and the bytes received."""

    dataset: object  # solvers.Dataset
    filename: str
    size: int


class _MultipartFile:
    """Collects the ``file`` part of a multipart body and feeds it to an SVMlight parser."""

    def __init__(self, boundary: bytes, parser, max_bytes: int):
        self.parser = parser
        self.max_bytes = max_bytes
        self.filename: str | None = None
        self.size = 0
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
        if self.size > self.max_bytes:
            raise PayloadTooLarge(f"the file exceeds the upload limit of {self.max_bytes} bytes")
        self._pending += data[start:end]

    def _on_part_end(self) -> None:
        self._in_file = False

    # driven from a worker thread
    def consume(self, chunk: bytes) -> None:
        """Parse a piece of the body; feed the file bytes collected once there are enough."""
        self._multipart.write(chunk)
        if len(self._pending) >= FEED_BYTES:
            self._feed()

    def finish(self):
        """End of the body: parse what is left and return the dataset."""
        self._multipart.finalize()
        if self.files_seen == 0:
            raise Unprocessable(f"the multipart field {FILE_FIELD!r} is missing")
        self._feed()
        return self.parser.finish()

    def _feed(self) -> None:
        if self._pending:
            pending, self._pending = bytes(self._pending), bytearray()
            self.parser.feed(pending)


async def receive_svmlight_upload(request: Request, max_bytes: int, *,
                                  n_features: int | None,
                                  zero_based: bool) -> ParsedUpload:
    """Parse the SVMlight file of a ``multipart/form-data`` request while it streams in.

    Raises ``PayloadTooLarge`` past ``max_bytes`` of file, ``Unprocessable`` for a body that
    is not a multipart upload with one ``file`` field, and ``solvers.SVMLightFormatError``
    for a malformed file.
    """
    import solvers

    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise Unprocessable(f"send the dataset as multipart/form-data with a field "
                            f"{FILE_FIELD!r}")
    body_limit = max_bytes + ENVELOPE_BYTES
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > body_limit:
        raise PayloadTooLarge(f"the file exceeds the upload limit of {max_bytes} bytes")
    upload = _MultipartFile(
        boundary, solvers.SVMLightStreamParser(n_features=n_features, zero_based=zero_based),
        max_bytes)
    received = 0
    batch = bytearray()
    async for chunk in request.stream():
        received += len(chunk)
        if received > body_limit:
            raise PayloadTooLarge(f"the request exceeds the upload limit of {max_bytes} bytes")
        batch += chunk
        if len(batch) >= FEED_BYTES:
            data, batch = bytes(batch), bytearray()
            await run_in_threadpool(upload.consume, data)
    if batch:
        await run_in_threadpool(upload.consume, bytes(batch))
    dataset = await run_in_threadpool(upload.finish)
    return ParsedUpload(dataset, upload.filename or "upload", upload.size)
