"""The service's HTTP middleware that needs the web framework's types: request metrics.
(The memory release after large requests, :class:`app.memory.ReleaseMemoryMiddleware`, is
plain ASGI.)"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.metrics import ServiceMetrics


class MetricsMiddleware:
    """Counts and times every HTTP request by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status_code = 500

        async def send_with_status(message: Message) -> None:
            nonlocal status_code
            if message["type"] == "http.response.start":
                status_code = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            # the spec's template: a convertor's type left out ({version:int} -> {version})
            route = scope.get("route")
            self.metrics.record_request(scope["method"],
                                        getattr(route, "path_format", None)
                                        or getattr(route, "path", "unmatched"),
                                        status_code, time.perf_counter() - start)
