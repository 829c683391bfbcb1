"""Apply the Alembic migrations (``app/db/migrations/``, shipped in the package) to a database.

The web process calls :func:`upgrade_database` once at start-up, before the worker pool
starts; ``svmsvc migrate`` does the same on demand.  The migrations use batch mode, so one
set serves SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def _alembic_config() -> Config:
    if not (MIGRATIONS_DIR / "env.py").exists():
        raise RuntimeError(f"the migrations are missing: {MIGRATIONS_DIR} has no env.py")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


@contextmanager
def migration_connection(engine: Engine) -> Iterator[Connection]:
    """A connection for migrations, in one transaction.

    On SQLite, with the foreign keys off meanwhile (and checked before the commit): batch
    mode rebuilds a table that others reference (drop, copy, rename), which an enforced
    ``ON DELETE RESTRICT`` forbids at the drop, deferred or not.  The pragma only works
    outside a transaction, so it is set on the driver's connection before SQLAlchemy begins
    one (Alembic's own advice for batch mode on SQLite)."""
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        driver = connection.connection.driver_connection
        if sqlite:
            driver.execute("PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                yield connection
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise RuntimeError(f"the migration broke foreign keys: {broken[:5]}")
        finally:
            if sqlite:
                driver.execute("PRAGMA foreign_keys=ON")


def upgrade_database(engine: Engine, revision: str = "head") -> str:
    """Bring the database to ``revision`` (the newest by default); returns the newest
    revision."""
    config = _alembic_config()
    with migration_connection(engine) as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    return head_revision()


def downgrade_database(engine: Engine, revision: str) -> None:
    """Take the database back to ``revision``."""
    config = _alembic_config()
    with migration_connection(engine) as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def head_revision() -> str:
    """The newest revision of the migrations."""
    return ScriptDirectory.from_config(_alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None before the first migration)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
