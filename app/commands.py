"""The service subcommands of ``svmsvc``: ``serve`` and ``migrate``.

Importing this module is cheap (``svmsvc --help`` must stay fast): the web stack is imported
when a command runs.  Command-line options override the ``SVMSVC_*`` environment.
"""

from __future__ import annotations

import argparse
import logging
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
    parser.set_defaults(handler=serve)


def serve(args: argparse.Namespace) -> int:
    """Run the service until it is stopped (SIGINT or SIGTERM)."""
    import uvicorn

    from app.main import create_app

    settings = _settings(host=args.host, port=args.port, data_dir=args.data_dir,
                         workers=args.workers)
    logging.basicConfig(level=settings.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    refusal = open_service_refusal(settings)
    if refusal:
        sys.stderr.write(f"svmsvc: error: {refusal}\n")
        return 2
    _apply_migrations(settings)  # prestart: the schema is current before the app starts
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
