"""The service subcommands of ``svmsvc``: ``serve`` and ``migrate``.

Importing this module is cheap (``svmsvc --help`` must stay fast): the web stack is imported
when a command runs.  Command-line options override the ``SVMSVC_*`` environment.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys


def _settings(**overrides):
    from app.core.config import Settings

    return Settings(**{name: value for name, value in overrides.items() if value is not None})


def add_serve_command(commands) -> None:
    """Add ``svmsvc serve`` to the subcommands."""
    parser = commands.add_parser(
        "serve", help="run the REST service",
        description="Run the REST service (uvicorn) with its worker pool. Settings come from "
                    "SVMSVC_* environment variables; these options override them.")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8000)")
    parser.add_argument("--data-dir", help="datasets and the SQLite database (default ./var)")
    parser.add_argument("--workers", type=int, help="worker processes for training (default 2)")
    parser.add_argument("--web-processes", type=int,
                        help="web processes serving requests on the one socket; one of them "
                             "also runs the dispatcher and the worker pool (default 1)")
    parser.set_defaults(handler=serve)


def serve(args: argparse.Namespace) -> int:
    """Run the service until it is stopped (SIGINT or SIGTERM)."""
    import uvicorn

    from app.main import configure_logging, create_app

    settings = _settings(host=args.host, port=args.port, data_dir=args.data_dir,
                         workers=args.workers, web_processes=args.web_processes)
    configure_logging(settings)
    refusal = open_service_refusal(settings) or _shared_data_dir_refusal(settings)
    if refusal:
        sys.stderr.write(f"svmsvc: error: {refusal}\n")
        return 2
    _apply_migrations(settings)  # prestart: the schema is current before the app starts
    if settings.web_processes > 1:
        return _serve_processes(settings)
    app = create_app(settings)

    class Server(uvicorn.Server):
        """Ends the live log streams as soon as the server is told to stop: uvicorn waits
        for every open response to end before the application's shutdown runs."""

        def handle_exit(self, sig, frame) -> None:
            super().handle_exit(sig, frame)
            app.state.log_streams.close_threadsafe()

    Server(uvicorn.Config(app, host=settings.host, port=settings.port,
                          log_level=settings.log_level.lower(),
                          access_log=settings.access_log)).run()
    return 0


WORKER_HEALTHCHECK_S = 30
"""Seconds uvicorn's supervisor waits for a web process to answer its health ping before it
kills and replaces it (uvicorn's default, 5 s, is within reach of a healthy process on a
loaded 2-core machine, and the process may be the one running the worker pool)."""


def _serve_processes(settings) -> int:
    """``serve`` with several web processes (:mod:`app.web_processes`): uvicorn's supervisor
    spawns them and replaces those that die; each listens on a socket of its own on the
    service's port (``SO_REUSEPORT``: the kernel spreads the connections) and builds the
    application from the environment, which carries the command line's settings."""
    import shutil

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from app.web_processes import METRICS_DIR, listening_sockets

    try:
        reserved, sockets = listening_sockets(settings.host, settings.port)
    except OSError as exc:
        sys.stderr.write(f"svmsvc: error: cannot listen on {settings.host}:{settings.port}: "
                         f"{exc}\n")
        return 1
    port = reserved.getsockname()[1]
    data_dir = settings.data_dir.resolve()
    metrics_dir = data_dir / METRICS_DIR
    shutil.rmtree(metrics_dir, ignore_errors=True)  # counts of a previous run
    metrics_dir.mkdir()
    os.environ.update({
        "SVMSVC_HOST": settings.host, "SVMSVC_PORT": str(port),
        "SVMSVC_DATA_DIR": str(data_dir), "SVMSVC_WORKERS": str(settings.workers),
        "SVMSVC_WEB_PROCESSES": str(settings.web_processes),
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)})
    config = uvicorn.Config("app.main:create_web_process_app", factory=True,
                            host=settings.host, port=port,
                            workers=settings.web_processes,
                            log_level=settings.log_level.lower(),
                            access_log=settings.access_log,
                            log_config=_log_config_with_process_ids(),
                            timeout_worker_healthcheck=WORKER_HEALTHCHECK_S)
    with reserved:
        logging.getLogger("svmsvc").info(
            "svmsvc on http://%s:%d with %d web processes (Press CTRL+C to quit)",
            settings.host, port, settings.web_processes)
        Multiprocess(config, sockets=sockets).run()
    return 0


def _log_config_with_process_ids() -> dict:
    """uvicorn's logging configuration, its lines (the access log's too) saying which
    process wrote them, as the service's own lines do (``configure_logging``)."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    for formatter in config["formatters"].values():
        formatter["fmt"] = formatter["fmt"].replace("%(levelprefix)s ",
                                                    "%(levelprefix)s [%(process)d] ", 1)
    return config


def _shared_data_dir_refusal(settings) -> str | None:
    """Why several web processes must not start on this data directory: another service
    with several web processes runs on it (its dispatcher process holds the lock)."""
    if settings.web_processes == 1:
        return None
    from app.web_processes import LOCK_FILE, DispatcherLock

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    lock = DispatcherLock(settings.data_dir / LOCK_FILE)
    if lock.try_acquire():
        lock.release()
        return None
    holder = lock.path.read_text().strip() or "unknown"
    return (f"another svmsvc serve runs on the data directory {settings.data_dir.resolve()} "
            f"(its dispatcher process is pid {holder}): give this one a data directory of "
            f"its own")


LOOPBACK = ("127.0.0.1", "::1", "localhost")


def open_service_refusal(settings) -> str | None:
    """Why ``serve`` must not start: listening beyond this machine without API keys (unless
    ``SVMSVC_ALLOW_OPEN`` opts out of authentication), or keys that cannot be read."""
    from app.core.security import ApiKeys, KeyConfigError

    try:
        keys = ApiKeys.from_settings(settings)
    except KeyConfigError as exc:
        return str(exc)
    if keys.enabled or settings.allow_open or settings.host in LOOPBACK:
        return None
    return (f"refusing to listen on {settings.host} without API keys: set SVMSVC_API_KEYS "
            f"or SVMSVC_API_KEYS_FILE, or SVMSVC_ALLOW_OPEN=true to serve without "
            f"authentication")


def add_migrate_command(commands) -> None:
    """Add ``svmsvc migrate`` to the subcommands."""
    parser = commands.add_parser(
        "migrate", help="apply the database migrations",
        description="Bring the database (SVMSVC_DATABASE_URL, or the SQLite file in the data "
                    "directory) to the newest schema. The service also does this at start-up.")
    parser.add_argument("--data-dir", help="data directory (default ./var)")
    parser.set_defaults(handler=migrate)


def migrate(args: argparse.Namespace) -> int:
    """Apply the migrations and say which revision the database is at."""
    before, after = _apply_migrations(_settings(data_dir=args.data_dir))
    change = "already at" if before == after else f"upgraded from {before or 'empty'} to"
    sys.stdout.write(f"database {change} revision {after}\n")
    return 0


def _apply_migrations(settings) -> tuple[str | None, str]:
    """Bring the database of ``settings`` to the newest revision: (before, after)."""
    from app.db.migrate import current_revision, upgrade_database
    from app.db.session import create_db_engine

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = create_db_engine(settings.sqlalchemy_url)
    try:
        before = current_revision(engine)
        after = upgrade_database(engine)
    finally:
        engine.dispose()
    return before, after
