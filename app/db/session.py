"""Engines and sessions for SQLite and PostgreSQL.

Sessions come in two kinds, :meth:`Sessions.read` and :meth:`Sessions.write`; every
transaction is short.  On SQLite this is what makes several processes writing at once safe
(the web process and every worker), together with write-ahead logging, a 30 s busy timeout
and foreign keys on:

* a read session opens a deferred transaction: a snapshot, which in WAL mode never waits
  for writers and never makes them wait;
* a write session opens ``BEGIN IMMEDIATE``: it takes the write lock up front, queueing
  behind other writers under the busy timeout, instead of failing with "database is locked"
  when a transaction that has read tries to write.

On PostgreSQL both are ordinary transactions; writes rely on conditional updates.
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import sessionmaker

SQLITE_BUSY_TIMEOUT_S = 30.0
_WRITES = "svmsvc_writes"


def create_db_engine(url: str, *, pool_size: int = 5) -> Engine:
    """An engine for ``url`` with the SQLite settings above when it is a SQLite URL."""
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S},
            pool_size=pool_size,
        )
        event.listen(engine, "connect", _configure_sqlite_connection)
        event.listen(engine, "begin", _begin_sqlite_transaction)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=pool_size)


def _configure_sqlite_connection(dbapi_connection, connection_record) -> None:
    # The driver must not open transactions itself: _begin_sqlite_transaction does.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _begin_sqlite_transaction(connection) -> None:
    writes = connection.get_execution_options().get(_WRITES, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN DEFERRED")


class Sessions:
    """Session factories of one engine: ``read()`` for queries, ``write()`` for any
    transaction that changes rows.  Objects stay readable after commit."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.read = sessionmaker(engine, expire_on_commit=False)
        self.write = sessionmaker(engine.execution_options(**{_WRITES: True}),
                                  expire_on_commit=False)
