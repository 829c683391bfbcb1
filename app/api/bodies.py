"""Request bodies read from the request as they stream, for the routes: the framework's side
of :mod:`app.uploads` (its request stream and headers, and a client that disconnects
mid-body as :class:`~app.errors.UnreadableBody`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import ClientDisconnect, Request

from app.errors import UnreadableBody
from app.uploads import (
    ParsedUpload,
    UploadLimits,
    UploadThreads,
    parse_svmlight_upload,
    parse_text_body,
    read_body,
)


async def receive_body(request: Request, limit: int, setting: str) -> bytes:
    """The whole body of a request, refused (:class:`ContentTooLarge` naming ``setting``) as
    soon as its declared length, or what has arrived, exceeds ``limit`` bytes;
    :class:`UnreadableBody` when the client cuts it off."""
    return await read_body(_chunks(request), request.headers.get("content-length"), limit,
                           setting)


async def receive_parsed_text(request: Request, parser, limit: int, setting: str):
    """``parser.finish()`` once the request's body, at most ``limit`` bytes (refused naming
    ``setting``), has been fed to ``parser`` as it arrived (:func:`app.uploads.parse_text_body`);
    :class:`UnreadableBody` when the client cuts it off."""
    return await parse_text_body(_chunks(request), request.headers.get("content-length"),
                                 limit, setting, parser)


async def receive_svmlight_upload(request: Request, limits: UploadLimits, *,
                                  n_features: int | None,
                                  zero_based: bool,
                                  threads: UploadThreads | None = None) -> ParsedUpload:
    """Parse the SVMlight file of a ``multipart/form-data`` request while it streams in
    (:func:`app.uploads.parse_svmlight_upload`, its steps run by ``threads``);
    ``UnreadableBody`` for a body cut off by the client."""
    return await parse_svmlight_upload(
        _chunks(request), request.headers.get("content-type", ""),
        request.headers.get("content-length"), limits, n_features=n_features,
        zero_based=zero_based, threads=threads)


async def _chunks(request: Request) -> AsyncIterator[bytes]:
    """The request's body as it arrives."""
    try:
        async for chunk in request.stream():
            yield chunk
    except ClientDisconnect:
        raise UnreadableBody("the request body was cut off before its end") from None
