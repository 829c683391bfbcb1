"""The FastAPI application: :func:`create_app` builds it from :class:`Settings`.

Start-up (the lifespan) creates the data directory, applies the migrations, removes what a
crash left in the dataset store, settles the jobs a previous process left running (those whose
lease expired), and starts the worker pool; shut-down stops the pool.  Those steps are
:mod:`app.lifespan`'s; this module wires the routes, middleware and spec.
OperationIds are ``<tag>-<name>`` (``datasets-upload``, ``jobs-log-stream`` ...), so
generated clients get readable method names.
"""

from __future__ import annotations

import logging
import signal
import threading
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from fastapi.routing import APIRoute
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from app import ui
from app.api.body_limits import BodyGuard, document_refusals
from app.api.errors import install_error_handlers
from app.api.fast_path import install as install_predict_fast_path
from app.api.log_streams import LogStreams
from app.api.middleware import LivenessProbe, MetricsMiddleware
from app.api.routes import (
    api_keys,
    datasets,
    health,
    jobs,
    logs,
    models,
    registry,
    solvers,
    usage,
    webhooks,
)
from app.core.config import Settings
from app.core.keyring import KeyRing
from app.core.security import (
    API_KEY_HEADER,
    ApiKeys,
    Scope,
    authorize,
    presented_key,
    sees_every_tenant,
)
from app.crud.registry import DirectLookup
from app.db.session import Sessions
from app.lifespan import WebProcess, log_ready, open_database, warm_serial_kernels_in_background
from app.memory import ReleaseMemoryMiddleware
from app.metrics import ServiceMetrics
from app.prediction import ModelCache
from app.schemas import DatasetUpload, PredictBatchRequest, Problem
from app.storage import open_store
from app.uploads import UploadThreads

DESCRIPTION = """\
Train support vector machines on uploaded SVMlight datasets and serve their predictions.

Every resource is under `/api/v1`; the probes, `/metrics` and these docs are at the root, and
a web dashboard built on this API at `/ui/`.
Upload a dataset (`POST /datasets`), queue a training job with a solver from `GET /solvers`
(`POST /jobs`), follow its convergence (`GET /jobs/{job_id}/log`, or live from
`/jobs/{job_id}/log/stream`), then predict with the model it produced (`/models/{model_id}/...`).
Errors are RFC 9457 problems (`application/problem+json`: `type`, `title`, `status`,
`detail`, `instance`, and `line`, `token`, `errors` or `setting` where they apply).
When the service has API keys, every route but `/healthz` and `/readyz` needs one, in the
`X-API-Key` header or as `Authorization: Bearer <key>` (a generated client's
`AuthenticatedClient(token=key)`): scope `read` for GETs and predictions, `train` for uploads
and jobs, `admin` for deletions (401 without a valid key, 403 with a key of too low a scope).
"""

EXTRA_SCHEMAS = (DatasetUpload, PredictBatchRequest, Problem)
"""Models referenced by hand-written parts of the spec (error responses, request bodies)."""


def operation_id(route: APIRoute) -> str:
    """``<tag>-<name>``: ``datasets-upload``, ``models-predict-batch`` ..."""
    return f"{route.tags[0]}-{route.name}"


def _package_version() -> str:
    try:
        return version("svmsvc")
    except PackageNotFoundError:
        return "0+unknown"


def configure_logging(settings: Settings) -> None:
    """The service's log lines (with the process id when there are several web
    processes)."""
    process = " [%(process)d]" if settings.web_processes > 1 else ""
    logging.basicConfig(level=settings.log_level.upper(),
                        format=f"%(asctime)s %(levelname)s %(name)s{process}: %(message)s")


def create_app(settings: Settings | None = None) -> FastAPI:
    """The application; nothing starts until its lifespan does (``svmsvc serve``)."""
    settings = settings or Settings()
    metrics = ServiceMetrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        engine, revision = await open_database(settings)
        sessions = Sessions(engine)
        app.state.sessions = sessions
        app.state.api_keys.attach(sessions)
        app.state.registry_lookup = DirectLookup(engine)  # the fast path's name@alias reads
        app.state.log_streams.sessions = sessions
        process = WebProcess(settings, sessions, app.state.store, metrics)
        dispatcher = await process.take_dispatcher_role()
        metrics.watch(sessions, dispatcher)
        app.state.dispatcher = dispatcher
        process.start_webhook_sender()
        warm_serial_kernels_in_background()
        log_ready(settings, engine, revision, app.state.api_keys)
        try:
            yield
        finally:
            process.cancel_background()
            app.state.registry_lookup.stop()
            app.state.log_streams.close()
            dispatcher.stop()
            engine.dispose()

    app = FastAPI(
        title="svmsvc",
        version=_package_version(),
        description=DESCRIPTION,
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
        docs_url=None,  # /docs and /redoc come from vendored bundles (app.ui.install), not a CDN
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.api_keys = KeyRing(ApiKeys.from_settings(settings), settings.api_key_cache_s)
    app.state.store = open_store(settings.dataset_location)
    app.state.upload_threads = UploadThreads(settings.upload_parse_threads,
                                             settings.upload_nice)
    app.state.model_cache = ModelCache(settings.model_cache_bytes)
    app.state.log_streams = LogStreams(None, settings.max_log_streams,
                                       settings.max_log_streams_per_key)
    metrics.watch_log_streams(app.state.log_streams)
    install_error_handlers(app)
    _add_middleware(app, settings, metrics)
    for module in (datasets, jobs, logs, models, registry, solvers, usage, webhooks,
                   api_keys, health):
        app.include_router(module.router)
    predict_routes = {route.name: route for module in (models, registry)
                      for route in module.router.routes
                      if route.name in ("predict", "predict-alias", "predict-version")}
    install_predict_fast_path(app, predict_routes, metrics,
                              cors=bool(settings.cors_origin_list))
    ui.install(app)
    app.add_route("/metrics", _metrics_route(settings, metrics), include_in_schema=False)
    app.openapi = _openapi_with_extra_schemas(app)
    return app


def _add_middleware(app: FastAPI, settings: Settings, metrics: ServiceMetrics) -> None:
    """The body guard (the key and the body's size, before the router reads a body),
    request metrics, memory release, the liveness probe's own answer (outside them all but
    CORS: :class:`LivenessProbe`) and, when origins are configured, CORS (the last added is
    the outermost)."""
    app.add_middleware(BodyGuard, settings=settings, keys=app.state.api_keys)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(ReleaseMemoryMiddleware)
    app.add_middleware(LivenessProbe)
    if settings.cors_origin_list:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_origin_list,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=[API_KEY_HEADER, "Authorization", "Content-Type", "Accept",
                           "Last-Event-ID"],
            expose_headers=["Location", "Retry-After"])


def _metrics_route(settings: Settings, metrics: ServiceMetrics):
    """``GET /metrics``: Prometheus's text format, behind a read key unless
    ``metrics_public``; the families that name tenants for an admin key only (or on a
    service without keys)."""

    async def prometheus_metrics(request: Request) -> Response:
        keys, key = request.app.state.api_keys, presented_key(request.headers)
        if not settings.metrics_public:
            authorize(keys, key, Scope.read)
        exposed = metrics.exposed if sees_every_tenant(keys, key) else metrics.without_tenants
        body = await run_in_threadpool(generate_latest, exposed)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return prometheus_metrics


def _openapi_with_extra_schemas(app: FastAPI):
    """The spec builder: FastAPI's, with the body guard's answers (408, 413) on every
    operation that takes a body, plus the models that hand-written parts of the spec refer
    to (:data:`EXTRA_SCHEMAS`), built once."""

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = document_refusals(get_openapi(
                title=app.title, version=app.version, description=app.description,
                routes=app.routes))
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in EXTRA_SCHEMAS:
                model_schema = model.model_json_schema(
                    ref_template="#/components/schemas/{model}")
                components.update(model_schema.pop("$defs", {}))
                components.setdefault(model.__name__, model_schema)
            app.openapi_schema = schema
        return app.openapi_schema

    return openapi


def create_web_process_app() -> FastAPI:
    """The application of one of several web processes (``svmsvc serve --web-processes N``;
    uvicorn's supervisor calls this in each process it spawns, settings from the
    environment).  It ends the live log streams as soon as the process is told to stop, as
    ``svmsvc serve``'s single server does: uvicorn waits for every open response to end
    before the application's shutdown runs.  uvicorn loads the application after installing
    its signal handlers, so the handlers found here are its own, and are chained."""
    settings = Settings()
    configure_logging(settings)
    app = create_app(settings)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(sig)
            if callable(previous):
                signal.signal(sig, _closing_log_streams(app, previous))
    return app


def _closing_log_streams(app: FastAPI, previous):
    def handle(sig, frame) -> None:
        previous(sig, frame)
        app.state.log_streams.close_threadsafe()

    return handle
