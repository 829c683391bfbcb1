"""Apply the Alembic migrations (``app/db/migrations/``, shipped in the package) to a database.

The web process calls :func:`upgrade_database` once at start-up, before the worker pool
starts; ``svmsvc migrate`` does the same on demand.  The migrations use batch mode, so one
set serves SQLite and PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def _alembic_config() -> Config:
    if not (MIGRATIONS_DIR / "env.py").exists():
        raise RuntimeError(f"the migrations are missing: {MIGRATIONS_DIR} has no env.py")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def upgrade_database(engine: Engine) -> str:
    """Bring the database to the newest revision; returns that revision."""
    config = _alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    return head_revision()


def head_revision() -> str:
    """The newest revision of the migrations."""
    return ScriptDirectory.from_config(_alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None before the first migration)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
