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


LIVENESS_PATH = "/healthz"
LIVENESS_BODY = b'{"status":"ok"}'
"""``GET /healthz``'s answer: :class:`app.schemas.HealthPublic` as FastAPI serialises it."""


class LivenessProbe:
    """ASGI middleware answering ``GET /healthz`` itself, before the body guard, the request
    metrics, the memory release and the router (issue 49).

    The answer is still a truthful liveness answer: it is written by this process's event
    loop, the one every request is served by, so a loop that is stalled or dead leaves the
    probe unanswered.  What it skips is only work: under concurrent uploads the event loop
    shares the GIL with the threads parsing them, and every Python step of a request (three
    middleware layers, FastAPI's routing, dependency resolution, the response model's
    validation and serialisation) is a point where the probe may wait for it.  With the cap
    on upload parse threads (``SVMSVC_UPLOAD_PARSE_THREADS``), ``/healthz``'s p99 under four
    1.4 MB uploads at once about halved (``bench/README.md``).  What a profile then showed is
    the loop waiting for a CPU, not for Python: it ran 60-100 ms over a round of uploads and
    waited 150-900 ms on a run queue, partly behind the upload threads, which now run at a
    lower priority (``SVMSVC_UPLOAD_NICE``, :class:`app.uploads.UploadThreads`).  Other
    methods and paths go on to the application (the router answers them, as before).  Not
    counted in the request metrics."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == LIVENESS_PATH and \
                scope["method"] == "GET":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(LIVENESS_BODY)).encode())]})
            await send({"type": "http.response.body", "body": LIVENESS_BODY})
            return
        await self.app(scope, receive, send)
