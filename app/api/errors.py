"""Every error answered as an RFC 9457 problem (``application/problem+json``), never a
traceback: the one place where the service's errors become HTTP.

* :class:`app.errors.ServiceError` and its subclasses (the domain errors the query layer,
  admission, uploads, predictions and security raise) get their status from
  :data:`STATUS_OF`, their ``type`` (``urn:svmsvc:problem:<slug>``) and ``title`` from their
  class, their ``detail`` and extension members (``line``, ``token``, ``setting``) from the
  instance, and ``Retry-After`` / ``WWW-Authenticate`` headers where they apply;
* request validation errors are a 422 whose ``errors`` member lists every problem;
* malformed SVMlight input from the library is a 422 with ``line`` and ``token``;
* Starlette's own errors (unknown path, wrong method, a body not parseable) keep their status,
  with ``type`` ``about:blank``;
* a database that does not answer is a 503 with ``Retry-After``; anything else a 500 whose
  detail says nothing of the internals (they go to the log).

``instance`` is the request's path.  :func:`responses` documents the error statuses of an
operation in the OpenAPI spec, all with the :class:`~app.schemas.Problem` schema.
"""

from __future__ import annotations

import logging
import re
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

import solvers
from app.errors import (
    PROBLEM_TYPE_PREFIX,
    BodyTimeout,
    CapacityExceeded,
    Conflict,
    ContentTooLarge,
    Forbidden,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    QuotaExceeded,
    ServiceError,
    Unauthenticated,
    UnreadableBody,
)
from app.schemas import FieldError, Problem
from solvers import SVMLightFormatError

logger = logging.getLogger("svmsvc.api")

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_SCHEMA_REF = "#/components/schemas/Problem"

STATUS_OF: dict[type[ServiceError], int] = {
    InvalidRequest: 422,
    UnreadableBody: 400,
    BodyTimeout: 408,
    Unauthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    LimitExceeded: 422,
    ContentTooLarge: 413,
    QuotaExceeded: 429,
    CapacityExceeded: 503,
    ServiceError: 422,
}
"""The HTTP status of each domain error (the nearest class in its MRO decides)."""

AUTHENTICATE_CHALLENGES = 'Bearer realm="svmsvc", X-API-Key'
"""The ``WWW-Authenticate`` of a 401: the key as a bearer token, or in the X-API-Key header."""

DATABASE_RETRY_AFTER_S = 5


def status_of(error: ServiceError) -> int:
    """The HTTP status of a domain error."""
    for kind in type(error).__mro__:
        if kind in STATUS_OF:
            return STATUS_OF[kind]
    raise TypeError(f"{type(error).__name__} is not a ServiceError")


def problem_response(request: Request, status: int, title: str, detail: str, *,
                     type_: str = "about:blank", headers: dict[str, str] | None = None,
                     **members: Any) -> JSONResponse:
    """A ``Problem`` body with this status (members that are None are left out)."""
    body = Problem(type=type_, title=title, status=status, detail=detail,
                   instance=request.url.path, **members)
    return JSONResponse(body.model_dump(mode="json", exclude_none=True), status_code=status,
                        headers=headers, media_type=PROBLEM_MEDIA_TYPE)


def responses(*status_codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting these error statuses (always problem
    details, also on routes whose success is a stream or a file)."""
    descriptions = {
        400: "Body not readable (not UTF-8 where text is expected, or cut off)",
        401: "Missing or unknown API key",
        403: "The API key's scope does not allow this",
        404: "Not found (or another owner's)",
        408: "The body stalled: no byte of it for SVMSVC_BODY_READ_TIMEOUT_S seconds (the "
             "`setting` member names it)",
        409: "Conflict with the resource's state",
        413: "Content past a configured limit (the `setting` member names it)",
        422: "Invalid request, or a limit exceeded (the `setting` member names it)",
        429: "Quota reached (the `setting` member names it)",
        503: "Database unavailable, or the service at capacity; retry after Retry-After "
             "seconds",
    }
    content = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": PROBLEM_SCHEMA_REF}}}
    return {code: {"description": descriptions[code], "content": content}
            for code in status_codes}


def _location(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc)


async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
    return service_error_response(request, exc)


def service_error_response(request: Request, exc: ServiceError) -> JSONResponse:
    """The problem of a domain error, with its ``Retry-After`` and ``WWW-Authenticate``
    headers (also for the middleware that answers before the router,
    :class:`app.api.body_limits.BodyGuard`)."""
    status = status_of(exc)
    headers = {}
    if exc.retry_after_s is not None:
        headers["Retry-After"] = str(exc.retry_after_s)
    if status == 401:
        headers["WWW-Authenticate"] = AUTHENTICATE_CHALLENGES
    return problem_response(request, status, exc.title, exc.detail, type_=exc.type,
                            headers=headers or None, line=exc.line, token=exc.token,
                            setting=exc.setting)


def _field_error(error: dict) -> FieldError:
    """One validation error in the user's terms: pydantic's words for a missing or unknown
    discriminator ("Unable to extract tag using discriminator 'solver'") become which field
    is needed and what it may be."""
    loc, kind = list(error.get("loc", ())), error.get("type", "value_error")
    message = error.get("msg", "invalid").removeprefix("Value error, ")
    tag = str((error.get("ctx") or {}).get("discriminator", "")).strip("'")
    if tag == "solver" and kind in ("union_tag_not_found", "union_tag_invalid"):
        names = ", ".join(spec.name for spec in solvers.list_solvers())
        given = (error.get("ctx") or {}).get("tag")
        message = (f"solver is required (one of {names})" if kind == "union_tag_not_found"
                   else f"unknown solver {given!r} (one of {names})")
        loc = [*loc, "solver"]
    return FieldError(loc=loc, message=message, type=kind)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = [_field_error(error) for error in exc.errors()]
    detail = "; ".join(f"{_location(tuple(e.loc))}: {e.message}" for e in errors)
    return problem_response(request, 422, InvalidRequest.title, detail or "invalid request",
                            type_=PROBLEM_TYPE_PREFIX + InvalidRequest.slug, errors=errors)


async def _svmlight_error(request: Request, exc: SVMLightFormatError) -> JSONResponse:
    return problem_response(request, 422, "Malformed input", str(exc),
                            type_=PROBLEM_TYPE_PREFIX + "malformed-input", line=exc.line,
                            token=exc.token)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    headers = getattr(exc, "headers", None)
    if exc.status_code == 405:
        headers = {**(headers or {}), "Allow": ", ".join(_allowed_methods(request))}
    try:
        title = HTTPStatus(exc.status_code).phrase
    except ValueError:
        title = "Error"
    return problem_response(request, exc.status_code, title, str(exc.detail), headers=headers)


def _allowed_methods(request: Request) -> list[str]:
    """Every method the spec documents for the request's path (Starlette's 405 names only
    those of the first route that matched the path).  A path the spec has as written
    (``/datasets/sharded``) is that path's, not also a template's that would match it
    (``/datasets/{dataset_id}``): the paths with the fewest parameters among those that
    match, and of those the ones with the most literal text (``/registry/{name}@{alias}/
    predict``, not also ``/registry/{name}/{version}``, for ``/registry/x@prod/predict``)."""
    app = request.app
    table = getattr(app.state, "allowed_methods", None)
    if table is None:
        table = []
        for template, operations in app.openapi()["paths"].items():
            pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
            literal = len(re.sub(r"\{[^/]+?\}", "", template))
            table.append((re.compile(pattern + "$"), (template.count("{"), -literal),
                          sorted(method.upper() for method in operations)))
        app.state.allowed_methods = table
    path = request.url.path
    matches = [(specificity, methods) for regex, specificity, methods in table
               if regex.match(path)]
    best = min((specificity for specificity, _ in matches), default=None)
    return sorted({m for specificity, methods in matches if specificity == best
                   for m in methods})


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    logger.warning("database unavailable in %s %s: %s", request.method, request.url.path,
                   str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    return problem_response(
        request, 503, "Database unavailable",
        f"the database is unavailable; retry in {DATABASE_RETRY_AFTER_S} s",
        type_=PROBLEM_TYPE_PREFIX + "database-unavailable",
        headers={"Retry-After": str(DATABASE_RETRY_AFTER_S)})


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    logger.error("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(request, 500, "Internal error", "internal error",
                            type_=PROBLEM_TYPE_PREFIX + "internal-error")


def install_error_handlers(app: FastAPI) -> None:
    """Make every error of ``app`` a problem."""
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(SVMLightFormatError, _svmlight_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    # OperationalError: the server is down or unreachable, the connection dropped, SQLite's
    # file is locked past the busy timeout; InterfaceError: the connection is unusable.
    app.add_exception_handler(OperationalError, _database_unavailable)
    app.add_exception_handler(InterfaceError, _database_unavailable)
    app.add_exception_handler(Exception, _unexpected_error)
