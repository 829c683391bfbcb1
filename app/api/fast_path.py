"""GET predict of a cached linear model, answered before the router (issue 38), by id or
through the registry (``/registry/{name}@{alias}/predict``, ``/registry/{name}/{version}/
predict``: the name resolved to a model id by :class:`app.crud.registry.DirectLookup`, from
its cache while nothing changed).

One ``GET /api/v1/models/{model_id}/predict`` cost the web process 0.84-1.0 ms of CPU on a
2-core machine of this project's kind, of which scoring the example is some 0.07 ms: py-spy
(2026-11-27, load 6) put 70 % of the process's samples under the router, FastAPI's
request handler and the dependency solving of the route (the key, the scope check, the query
and path parameters), and a third of the rest in uvicorn's two socket writes and its event
loop.  :class:`PredictFastPath` answers the common case itself: a ``GET`` of that path with a
canonical model id, a query of ``x`` (and optionally ``zero_based`` as ``true``/``false``/
``1``/``0``) only, a key that authenticates with scope ``read`` (or an open service), a model
the key's owner may see that is in the cache and linear, and an example that parses.  It does
with the very functions the route uses (:func:`app.core.security.authorize` on
:func:`~app.core.security.presented_key`, :meth:`~app.prediction.ModelCache.peek`,
:func:`~app.prediction.example_columns`, :func:`~app.prediction.predict_linear_one`) what the
route does, and sends the same bytes and headers.  Anything else (no or a wrong key, another
owner's model, a model not cached or not linear, a malformed example, another parameter)
falls through to the route, which answers it as it always has, errors included: the fast path
never answers an error.

It wraps the whole application (:func:`install`), outside the middleware stack: once the
router and the handler were gone, the layers every request passes (the error and telemetry
middlewares, the body limit, the memory release, the metrics, each wrapping ``send``) were
the larger part of what was left in the application (0.10 of 0.22 ms, in-process, load 14).
So it counts and times its answers in the metrics itself
(:meth:`app.metrics.ServiceMetrics.record_request`, under the route's template), and lets the
route answer a request with an ``Origin`` header when CORS is configured (the CORS middleware
adds its headers there).  uvicorn writes the access log line of its answers as of any other.
"""

from __future__ import annotations

import re
import time
import uuid
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api import API_PREFIX
from app.api.deps import MAX_POSITION
from app.core.principals import Scope as KeyScope
from app.core.security import authorize, presented_key
from app.crud.registry import SLUG_PATTERN
from app.errors import ServiceError
from app.prediction import example_columns, predict_linear_one

_PATH = re.compile(API_PREFIX + r"/models/([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                                r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12})/predict")
_SLUG = SLUG_PATTERN.strip("^$")
_REGISTRY_PATH = re.compile(API_PREFIX + rf"/registry/({_SLUG})(?:@({_SLUG})|/([1-9][0-9]{{0,9}}))"
                                         r"/predict")
_BOOLEAN = {"true": True, "1": True, "false": False, "0": False}
_CONTENT_TYPE = (b"content-type", b"application/json")


def _query(query_string: bytes) -> tuple[str, bool] | None:
    """(x, zero_based) of a query of ``x`` and at most ``zero_based``, each once, read as
    Starlette reads a query (``parse_qsl``, blank values kept); None for any other query."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    if not 1 <= len(pairs) <= 2:
        return None
    found = dict(pairs)
    if len(found) != len(pairs) or "x" not in found:
        return None
    if len(found) == 1:
        return found["x"], False
    zero_based = _BOOLEAN.get(found.get("zero_based", ""))
    return None if zero_based is None else (found["x"], zero_based)


class PredictFastPath:
    """ASGI middleware: the common GET predict without the router (see the module
    docstring); ``route`` is the predict route (its template labels the metrics),
    ``metrics`` the application's :class:`~app.metrics.ServiceMetrics`, ``cors`` whether
    CORS is configured."""

    def __init__(self, app: ASGIApp, routes: dict, metrics, cors: bool = False):
        self.app = app
        self.routes = routes
        self.metrics = metrics
        self.cors = cors

    def answer(self, scope: Scope) -> bytes | None:
        """The body of the answer to ``scope``, or None: let the route answer."""
        found = self.answer_for(scope)
        return None if found is None else found[0]

    def answer_for(self, scope: Scope) -> tuple[bytes, object] | None:
        """The body of the answer to ``scope`` and the route it answers for, or None: let the
        route answer (a registry name read with the blocking lookup)."""
        checked = self._checked(scope)
        if checked is None:
            return None
        state, principal, query, target, route = checked
        if not isinstance(target, uuid.UUID):
            target = state.registry_lookup.model_id(*target)
        return self._scored(state, principal, query, target, route)

    async def answer_async(self, scope: Scope) -> tuple[bytes, object] | None:
        """:meth:`answer_for`, a registry name read without blocking the event loop on a
        database server's round trip (:meth:`~app.crud.registry.DirectLookup.
        model_id_async`)."""
        checked = self._checked(scope)
        if checked is None:
            return None
        state, principal, query, target, route = checked
        if not isinstance(target, uuid.UUID):
            target = await state.registry_lookup.model_id_async(*target)
        return self._scored(state, principal, query, target, route)

    def _checked(self, scope: Scope):
        """(state, principal, (x, zero_based), the model id or the registry read's arguments
        (owner, name, alias, version), route) of a request the fast path may answer; None
        for any other."""
        if scope["type"] != "http" or scope["method"] != "GET" or scope.get("root_path"):
            return None
        path = scope["path"]
        match = _PATH.fullmatch(path)
        registered = None if match is not None else _REGISTRY_PATH.fullmatch(path)
        if match is None and registered is None:
            return None
        query = _query(scope["query_string"])
        if query is None:
            return None
        headers = Headers(scope=scope)
        if self.cors and "origin" in headers:
            return None
        state = scope["app"].state
        try:
            principal = authorize(state.api_keys, presented_key(headers), KeyScope.read)
        except ServiceError:
            return None
        if match is not None:
            return state, principal, query, uuid.UUID(match.group(1)), self.routes["predict"]
        # name@alias or name/version: app.crud.registry.DirectLookup, a per-process cache
        # trusted only while nothing changed (SQLite's data_version, PostgreSQL's
        # acknowledged NOTIFY), so a moved alias is seen here at the next request
        name, alias, version = registered.groups()
        if alias is not None:
            return (state, principal, query, (principal.owner, name, alias, None),
                    self.routes["predict-alias"])
        number = int(version)
        if number > MAX_POSITION:
            return None
        return (state, principal, query, (principal.owner, name, None, number),
                self.routes["predict-version"])

    @staticmethod
    def _scored(state, principal, query, model_id: uuid.UUID | None,
                route) -> tuple[bytes, object] | None:
        if model_id is None:
            return None
        cached = state.model_cache.peek(model_id)
        if cached is None or not principal.may_see(cached[1]):
            return None
        x, zero_based = query
        try:
            columns = example_columns(cached[0], x, zero_based)
        except ServiceError:
            return None
        body = predict_linear_one(cached[0], columns)
        return None if body is None else (body, route)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()
        answered = await self.answer_async(scope)
        if answered is None:
            await self.app(scope, receive, send)
            return
        body, route = answered
        # the headers of Response(body, media_type="application/json"), the route's answer
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(body)).encode()), _CONTENT_TYPE]})
        await send({"type": "http.response.body", "body": body})
        self.metrics.record_request("GET", route.path_format, 200, time.perf_counter() - start)


def install(app, routes: dict, metrics, cors: bool) -> None:
    """Put :class:`PredictFastPath` around ``app``'s middleware stack (built on the first
    request, as Starlette builds it); ``routes``: the GET predict routes by name
    (``predict`` by id, ``predict-alias`` and ``predict-version`` of the registry)."""
    build = app.build_middleware_stack

    def build_middleware_stack():
        return PredictFastPath(build(), routes, metrics, cors)

    app.build_middleware_stack = build_middleware_stack
