"""Errors as JSON: ``{"detail": {"message": ..., ...}}`` for every failure, never a traceback.

Routes raise :class:`ApiError` (or one of its named subclasses); request validation errors,
malformed SVMlight input (with ``line`` and ``token``), Starlette's own HTTP errors (unknown
path, wrong method) and unexpected exceptions are turned into the same
:class:`~app.schemas.ErrorResponse` shape by the handlers installed with
:func:`install_error_handlers`.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.schemas import ErrorDetail, ErrorResponse, FieldError
from solvers import SVMLightFormatError

logger = logging.getLogger("svmsvc.api")

ERROR_SCHEMA_REF = "#/components/schemas/ErrorResponse"


class ApiError(Exception):
    """An error with an HTTP status and a message for the client."""

    status_code = 400

    def __init__(self, message: str, *, line: int | None = None, token: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.detail = ErrorDetail(message=message, line=line, token=token)
        self.headers = headers


class BadRequest(ApiError):
    """400: the body could not be read (not decodable, or cut off)."""

    status_code = 400


class Unauthorized(ApiError):
    """401: no API key, or an unknown one."""

    status_code = 401


class Forbidden(ApiError):
    """403: the API key's scope does not allow the request."""

    status_code = 403


class TooManyRequests(ApiError):
    """429: a quota is reached."""

    status_code = 429


class ServiceUnavailable(ApiError):
    """503: the database cannot be reached; retry later."""

    status_code = 503


class NotFound(ApiError):
    """404: the resource in the path does not exist."""

    status_code = 404


class Conflict(ApiError):
    """409: the request conflicts with the resource's state."""

    status_code = 409


class PayloadTooLarge(ApiError):
    """413: the body is past the upload limit."""

    status_code = 413


class Unprocessable(ApiError):
    """422: the request is invalid."""

    status_code = 422


def setting_variable(setting: str) -> str:
    """The environment variable of a setting (``max_upload_bytes`` -> SVMSVC_MAX_UPLOAD_BYTES)."""
    return f"SVMSVC_{setting.upper()}"


def over_limit(what: str, setting: str, limit: int | float, unit: str, *,
               actual: int | None = None, error: type[ApiError] = PayloadTooLarge) -> ApiError:
    """The error for a request past a configured cap: names the cap and how to raise it."""
    found = f" ({actual} {unit})" if actual is not None else ""
    return error(f"{what}{found} exceeds the limit of {limit} {unit} set by "
                 f"{setting_variable(setting)}; the operator can raise that setting")


def error_response(status_code: int, detail: ErrorDetail,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    """An ``ErrorResponse`` body with this status."""
    body = ErrorResponse(detail=detail).model_dump(mode="json", exclude_none=True)
    return JSONResponse(body, status_code=status_code, headers=headers)


def responses(*status_codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting these error statuses (always JSON, also on
    routes whose success is a stream or a file)."""
    descriptions = {
        400: "Body not readable (not UTF-8 where text is expected, or cut off)",
        401: "Missing or unknown API key",
        403: "The API key's scope does not allow this",
        404: "Not found",
        409: "Conflict with the resource's state",
        413: "Body or content past a configured limit (the message names the setting)",
        422: "Invalid request",
        429: "Quota reached (the message names the setting)",
        503: "Database unavailable; retry after the Retry-After seconds",
    }
    content = {"application/json": {"schema": {"$ref": ERROR_SCHEMA_REF}}}
    return {code: {"description": descriptions[code], "content": content}
            for code in status_codes}


def _location(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc)


async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
    return error_response(exc.status_code, exc.detail, exc.headers)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = [
        FieldError(loc=list(error.get("loc", ())), message=error.get("msg", "invalid"),
                   type=error.get("type", "value_error"))
        for error in exc.errors()
    ]
    message = "; ".join(f"{_location(tuple(e.loc))}: {e.message}" for e in errors)
    return error_response(422, ErrorDetail(message=message or "invalid request", errors=errors))


async def _svmlight_error(request: Request, exc: SVMLightFormatError) -> JSONResponse:
    return error_response(422, ErrorDetail(message=str(exc), line=exc.line, token=exc.token))


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    headers = getattr(exc, "headers", None)
    if exc.status_code == 405:
        headers = {**(headers or {}), "Allow": ", ".join(_allowed_methods(request))}
    return error_response(exc.status_code, ErrorDetail(message=str(exc.detail)), headers)


def _allowed_methods(request: Request) -> list[str]:
    """Every method the spec documents for the request's path (Starlette's 405 names only
    those of the first route that matched the path)."""
    app = request.app
    table = getattr(app.state, "allowed_methods", None)
    if table is None:
        table = []
        for template, operations in app.openapi()["paths"].items():
            pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
            table.append((re.compile(pattern + "$"),
                          sorted(method.upper() for method in operations)))
        app.state.allowed_methods = table
    path = request.url.path
    return sorted({m for regex, methods in table if regex.match(path) for m in methods})


DATABASE_RETRY_AFTER_S = 5


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    logger.warning("database unavailable in %s %s: %s", request.method, request.url.path,
                   str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    return error_response(503, ErrorDetail(message="the database is unavailable; retry "
                                                   f"in {DATABASE_RETRY_AFTER_S} s"),
                          {"Retry-After": str(DATABASE_RETRY_AFTER_S)})


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    logger.error("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, ErrorDetail(message="internal error"))


def install_error_handlers(app: FastAPI) -> None:
    """Make every error of ``app`` an ``ErrorResponse``."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(SVMLightFormatError, _svmlight_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    # OperationalError: the server is down or unreachable, the connection dropped, SQLite's
    # file is locked past the busy timeout; InterfaceError: the connection is unusable.
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.add_exception_handler(InterfaceError, _database_unavailable)
    app.add_exception_handler(Exception, _unexpected_error)
