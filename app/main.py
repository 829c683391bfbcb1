"""The FastAPI application: :func:`create_app` builds it from :class:`Settings`.

Start-up (the lifespan) creates the data directory, applies the migrations, removes what a
crash left in the dataset store, settles the jobs a previous process left running (those whose
lease expired), and starts the worker pool; shut-down stops the pool.
OperationIds are ``<tag>-<name>`` (``datasets-upload``, ``jobs-log-stream`` ...), so
generated clients get readable method names.
"""

from __future__ import annotations

import asyncio
import logging
import os
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
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from app import ui
from app.api.errors import install_error_handlers
from app.api.fast_path import install as install_predict_fast_path
from app.api.log_streams import LogStreams
from app.api.routes import datasets, health, jobs, logs, models, solvers
from app.core.config import Settings
from app.core.security import API_KEY_HEADER, ApiKeys, Scope, authorize, presented_key
from app.db.migrate import upgrade_database
from app.db.models import Dataset
from app.db.session import Sessions, create_db_engine
from app.jobs.dispatcher import Dispatcher
from app.jobs.state import recover_interrupted_jobs
from app.memory import ReleaseMemoryMiddleware, configure_allocator
from app.metrics import MetricsMiddleware, ServiceMetrics
from app.prediction import ModelCache
from app.schemas import DatasetUpload, PredictBatchRequest, Problem
from app.storage import open_store
from app.web_processes import (
    CONTEND_INTERVAL_S,
    MIGRATE_LOCK_FILE,
    SharedDispatcher,
    exclusively,
)

logger = logging.getLogger("svmsvc")

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


def _warm_serial_kernels() -> None:
    from solvers import warm_up

    seconds = warm_up(serving=True)  # parsing and serial prediction: the web process trains nothing
    logger.info("serial kernels ready for predictions (%.1f s)", seconds)


def configure_logging(settings: Settings) -> None:
    """The service's log lines (with the process id when there are several web
    processes)."""
    process = " [%(process)d]" if settings.web_processes > 1 else ""
    logging.basicConfig(level=settings.log_level.upper(),
                        format=f"%(asctime)s %(levelname)s %(name)s{process}: %(message)s")


def _upgrade(engine, settings: Settings) -> str:
    """Apply the migrations; one process at a time when there are several (Alembic upgrading
    one database from two processes at once fails on SQLite and PostgreSQL alike)."""
    if settings.web_processes == 1:
        return upgrade_database(engine)
    with exclusively(settings.data_dir / MIGRATE_LOCK_FILE):
        return upgrade_database(engine)


def create_app(settings: Settings | None = None) -> FastAPI:
    """The application; nothing starts until its lifespan does (``svmsvc serve``)."""
    settings = settings or Settings()
    metrics = ServiceMetrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        configure_allocator()
        engine = create_db_engine(settings.sqlalchemy_url)
        shared = settings.web_processes > 1
        revision = await run_in_threadpool(_upgrade, engine, settings)
        sessions = Sessions(engine)

        def sweep() -> None:
            with sessions.read() as session:
                digests = set(session.scalars(select(Dataset.sha256)))
            temporary, orphans = app.state.store.sweep(digests, settings.orphan_grace_s)
            if temporary or orphans:
                logger.warning("removed %d temporary upload file(s) and %d stored dataset "
                               "file(s) without a database row, left by a crash", temporary,
                               orphans)

        async def sweep_periodically() -> None:
            # a crash of an upload's request (not of the process) leaves its temporary file
            # too: sweep while running, not only at start
            while True:
                await asyncio.sleep(settings.orphan_sweep_interval_s)
                try:
                    await run_in_threadpool(sweep)
                except Exception:  # a sweep that fails (a database hiccup) waits for the next
                    logger.exception("the periodic sweep of orphaned files failed")

        def start_dispatcher(wake_socket=None) -> Dispatcher:
            """What one process of the service does: sweep, take back the jobs a previous
            process left running, start the dispatcher and its pool."""
            sweep()
            with sessions.write() as session:
                requeued, cancelled, failed = recover_interrupted_jobs(
                    session, settings.max_attempts, settings.lease_s)
            if requeued or cancelled or failed:
                logger.warning("jobs left running by the previous process: %d re-queued, "
                               "%d cancelled, %d failed", requeued, cancelled, failed)
            dispatcher = Dispatcher(settings, sessions, metrics, wake_socket=wake_socket)
            dispatcher.start()
            return dispatcher

        loop = asyncio.get_running_loop()
        background: list[asyncio.Task] = []
        app.state.sessions = sessions
        app.state.log_streams.sessions = sessions
        if shared:
            dispatcher = SharedDispatcher(settings.data_dir.resolve())

            async def contend() -> None:
                # the dispatcher process may die (uvicorn replaces it): take over its role
                while True:
                    await asyncio.sleep(CONTEND_INTERVAL_S)
                    try:
                        if await run_in_threadpool(dispatcher.lead, start_dispatcher):
                            break
                    except Exception:
                        logger.exception("could not take over the dispatcher; retrying")
                logger.warning("web process %d took over the dispatcher", os.getpid())
                background.append(loop.create_task(sweep_periodically()))

            if await run_in_threadpool(dispatcher.lead, start_dispatcher):
                background.append(loop.create_task(sweep_periodically()))
            else:
                logger.info("web process %d serves requests; another runs the dispatcher",
                            os.getpid())
                background.append(loop.create_task(contend()))
        else:
            dispatcher = await run_in_threadpool(start_dispatcher)
            background.append(loop.create_task(sweep_periodically()))
        metrics.watch(sessions, dispatcher)
        app.state.dispatcher = dispatcher
        threading.Thread(target=_warm_serial_kernels, name="svmsvc-warm-up",
                         daemon=True).start()
        logger.info("svmsvc ready: database %s at revision %s, data in %s",
                    engine.url.render_as_string(hide_password=True), revision,
                    settings.data_dir.resolve())
        if app.state.api_keys.enabled:
            logger.info("API keys: %d configured; every route but /healthz and /readyz "
                        "needs one (X-API-Key)", len(app.state.api_keys))
        else:
            logger.warning("NO API KEYS CONFIGURED: THE SERVICE IS OPEN to anyone who can "
                           "reach %s:%d (set SVMSVC_API_KEYS or SVMSVC_API_KEYS_FILE)",
                           settings.host, settings.port)
        try:
            yield
        finally:
            for task in background:
                task.cancel()
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
    app.state.api_keys = ApiKeys.from_settings(settings)
    app.state.store = open_store(settings.dataset_location)
    app.state.model_cache = ModelCache(settings.model_cache_bytes)
    app.state.log_streams = LogStreams(None, settings.max_log_streams,
                                       settings.max_log_streams_per_key)
    metrics.watch_log_streams(app.state.log_streams)
    install_error_handlers(app)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(ReleaseMemoryMiddleware)
    if settings.cors_origin_list:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_origin_list,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=[API_KEY_HEADER, "Authorization", "Content-Type", "Accept",
                           "Last-Event-ID"],
            expose_headers=["Location", "Retry-After"])
    for module in (datasets, jobs, logs, models, solvers, health):
        app.include_router(module.router)
    install_predict_fast_path(
        app, next(route for route in models.router.routes if route.name == "predict"), metrics,
        cors=bool(settings.cors_origin_list))
    ui.install(app)

    async def prometheus_metrics(request: Request) -> Response:
        if not settings.metrics_public:
            authorize(app.state.api_keys, presented_key(request.headers), Scope.read)
        body = await run_in_threadpool(generate_latest, metrics.exposed)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    app.add_route("/metrics", prometheus_metrics, include_in_schema=False)

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version,
                                 description=app.description, routes=app.routes)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in EXTRA_SCHEMAS:
                model_schema = model.model_json_schema(
                    ref_template="#/components/schemas/{model}")
                components.update(model_schema.pop("$defs", {}))
                components.setdefault(model.__name__, model_schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
    return app


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
