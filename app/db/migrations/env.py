"""Alembic environment: the service's metadata, batch mode (SQLite and PostgreSQL alike).

Programmatic runs (``app.db.migrate``) hand over an open connection in
``config.attributes["connection"]``; the ``alembic`` command line connects with the URL from
the service settings (``SVMSVC_DATABASE_URL`` or the SQLite file under ``SVMSVC_DATA_DIR``).
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context

from app.core.config import Settings
from app.db.migrate import migration_connection
from app.db.models import Base
from app.db.session import create_db_engine

config = context.config
target_metadata = Base.metadata


def run_migrations(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_migrations(connection)
        return
    if config.config_file_name is not None:
        fileConfig(config.config_file_name)
    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = create_db_engine(settings.sqlalchemy_url)
    try:
        with migration_connection(engine) as connection:
            run_migrations(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run them against a database")
run_migrations_online()
