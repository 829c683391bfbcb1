"""Request bodies bounded before any route reads them, and the key checked before the body.

FastAPI reads and parses a route's body before it solves the route's dependencies, the key's
among them, and nothing bounded a JSON body: 21 MB of ``{"x":[{},{},...]}`` sent to
``POST /api/v1/solvers/pose`` without a key took the web process to 799 MB, 200 MB sent to
``POST /api/v1/jobs`` to 880 MB (issue 49).  :class:`BodyGuard`, plain ASGI in front of the
router, answers such requests before a byte of their body is read:

* when the service has keys, a request to the API (``/api/v1``) that carries a body
  (``Content-Length`` above 0, or ``Transfer-Encoding``) without a valid key is a 401;
* a body is bounded by its route's limit (:func:`route_limits`: the method and the path
  template): a ``Content-Length`` past it is a 413 at once, and a body is counted as it
  arrives, the first chunk past the limit ending it with the 413.  Each 413 names the setting;
* a body that stops arriving (a client that stalls mid-upload waited forever) is a 408 once
  ``SVMSVC_BODY_READ_TIMEOUT_S`` pass without a byte of it.

Dataset uploads are left to their own caps, checked as they stream (:mod:`app.uploads`:
the bytes sent and the decompressed text).  The scope of a key (403) stays the route's to
check: with any valid key a body is bounded by its route's limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import anyio
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api import API_PREFIX
from app.api.errors import responses, service_error_response
from app.core.principals import Scope as KeyScope
from app.core.security import authorize, presented_key
from app.errors import BodyTimeout, ContentTooLarge, ServiceError, limit_exceeded, setting_variable

READ_TIMEOUT_VARIABLE = setting_variable("body_read_timeout_s")


@dataclass(frozen=True)
class BodyLimit:
    """The largest body (bytes) of the requests of a method on a path template, and the
    setting that sets it; ``limit`` None: the route bounds its body itself as it streams."""

    method: str
    template: str
    limit: int | None
    setting: str


def route_limits(settings) -> tuple[list[tuple[BodyLimit, re.Pattern[str]]], BodyLimit]:
    """The routes with a limit of their own (each with its path's pattern), and the limit of
    every other request (JSON bodies: jobs, sharded datasets, evaluations, pose ...)."""
    own = [
        BodyLimit("POST", f"{API_PREFIX}/datasets", None, "max_upload_bytes"),
        *(BodyLimit("POST", f"{API_PREFIX}/{template}/predict", settings.max_predict_bytes,
                    "max_predict_bytes")
          for template in ("models/{model_id}", "registry/{name}@{alias}",
                           "registry/{name}/{version}")),
    ]
    default = BodyLimit("*", "*", settings.max_json_body_bytes, "max_json_body_bytes")
    return [(rule, compile_path(rule.template)[0]) for rule in own], default


def document_refusals(spec: dict) -> dict:
    """``spec`` (an OpenAPI document) with the guard's own answers, the 413 of a body past
    its limit and the 408 of a body that stalls, among the responses of every operation
    that takes a body."""
    refusals = responses(408, 413)
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                answers = operation.setdefault("responses", {})
                for status, response in refusals.items():
                    answers.setdefault(str(status), response)
    return spec


def _too_large(rule: BodyLimit, actual: int | None = None) -> ContentTooLarge:
    return limit_exceeded("the body", rule.setting, rule.limit, "bytes", actual=actual,
                          error=ContentTooLarge)


class BodyGuard:
    """ASGI middleware: the 401 of a request with a body and no valid key, and the 413 of a
    body past its route's limit, both before the route reads the body, and the 408 of a body
    that stalls (see the module docstring).  ``settings`` are the application's; ``keys`` its
    :class:`~app.core.security.ApiKeys`."""

    def __init__(self, app: ASGIApp, settings, keys):
        self.app = app
        self.keys = keys
        self.routes, self.default = route_limits(settings)
        self.read_timeout_s = settings.body_read_timeout_s

    def limit_of(self, method: str, path: str) -> BodyLimit:
        """The limit of a request's body."""
        for rule, pattern in self.routes:
            if method == rule.method and pattern.fullmatch(path):
                return rule
        return self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length")
        declared_length = int(declared) if declared is not None and declared.isdigit() else None
        has_body = bool(declared_length) or "transfer-encoding" in headers
        path = scope["path"]
        root_path = scope.get("root_path", "")
        if root_path and path.startswith(root_path):
            path = path[len(root_path):]
        if has_body and self.keys.enabled and path.startswith(API_PREFIX + "/"):
            try:
                authorize(self.keys, presented_key(headers), KeyScope.read)
            except ServiceError as exc:  # the 401 of a missing or unknown key
                await self.refuse(scope, receive, send, exc)
                return
        if not has_body:
            await self.app(scope, receive, send)
            return
        rule = self.limit_of(scope["method"], path)
        if rule.limit is not None and declared_length is not None and \
                declared_length > rule.limit:
            await self.refuse(scope, receive, send, _too_large(rule, declared_length))
            return
        await self.guarded(scope, receive, send, rule)

    async def guarded(self, scope: Scope, receive: Receive, send: Send,
                      rule: BodyLimit) -> None:
        """Run the application on a body counted as it arrives and timed: past the limit
        ``receive`` raises the 413, and after ``read_timeout_s`` without a message while the
        body is incomplete the 408 (:class:`~app.errors.BodyTimeout`).  Whatever the
        application makes of that (FastAPI turns an error while it reads a body into a
        400), its answer is dropped and the refusal sent instead."""
        received = 0
        body_complete = False
        failure: ServiceError | None = None
        started = False

        async def guarded_receive() -> Message:
            nonlocal received, body_complete, failure
            if body_complete:  # later receives wait for the disconnect: not timed
                return await receive()
            with anyio.move_on_after(self.read_timeout_s) as waiting:
                message = await receive()
            if waiting.cancelled_caught:
                failure = BodyTimeout(
                    f"no byte of the body arrived for {self.read_timeout_s:g} s, the limit "
                    f"set by {READ_TIMEOUT_VARIABLE}", setting=READ_TIMEOUT_VARIABLE)
                raise failure
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_complete = not message.get("more_body", False)
                if rule.limit is not None and received > rule.limit:
                    failure = _too_large(rule)
                    raise failure
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if failure is not None and not started:
                return  # the application's answer to the cut body: the refusal replaces it
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except Exception:
            if failure is None or started:
                raise
        if failure is not None and not started:
            await self.refuse(scope, receive, send, failure)

    @staticmethod
    async def refuse(scope: Scope, receive: Receive, send: Send, error: ServiceError) -> None:
        """Answer ``error`` as the problem the error handlers make of it."""
        await service_error_response(Request(scope), error)(scope, receive, send)
