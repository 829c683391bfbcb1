"""The model registry (issue 50; MLflow's model registry as the reference): named models of an
owner, their numbered versions, and aliases that point at one version each.

Numbering.  A successful job with a ``model_name`` registers its model as the next version in
the transaction that stores the model and the job's ``succeeded`` state
(:func:`register_version`, called by :func:`app.jobs.state.finish_job`): the name's row in
``registered_models`` is created if missing (``INSERT ... ON CONFLICT DO NOTHING``) and its
``latest_version`` incremented by an ``UPDATE ... RETURNING``.  On PostgreSQL that update
holds the row's lock until the commit, and a concurrent finisher's update waits for it and
then reads the committed counter (READ COMMITTED re-evaluates an updated row); on SQLite the
write session's ``BEGIN IMMEDIATE`` serializes the writers.  Counter and version commit or
roll back together, so the numbers have no gaps (a deleted version leaves its number behind,
as in MLflow: numbers are never reused).

Aliases.  Moving an alias (:func:`move_alias`) or deleting one, and deleting a version, lock
the name's row first (``SELECT ... FOR UPDATE`` on PostgreSQL), so each is atomic against the
others; every move is recorded in ``model_alias_events`` in the same transaction.  A version an
alias points at cannot be deleted (:class:`~app.errors.Conflict`; the foreign key of
``model_aliases`` refuses it too).

Tenants.  A name belongs to an owner: every lookup is by ``(principal.owner, name)``, so
another owner's names do not exist for a caller (404), an admin's included: a name means
something within one owner only.

Resolving.  :func:`resolve` turns ``name@alias`` or ``name/version`` into a model id with one
primary-key lookup (the routes: every request).  :class:`DirectLookup` is the predict fast
path's: the same read without SQLAlchemy's per-statement machinery, its answers kept in a
per-process cache that is trusted only while a check far cheaper than the read says nothing
changed, so that a moved alias is still what every web process uses from its next request:
on SQLite ``PRAGMA data_version`` of the lookup's own connection (it changes whenever
another connection commits to the database file); on PostgreSQL a listener
(:class:`AliasListener`, ``LISTEN`` on a connection of its own) that empties the cache at
every change, and writers that change what a name resolves to (:func:`commit_announced`)
``NOTIFY`` in their transaction and, after the commit, wait until every listener has
acknowledged, so that the answer to the ``PUT`` leaves no web process with a stale entry.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
import uuid
from typing import Any

from sqlalchemy import Engine, select, text, true, update
from sqlalchemy.orm import Session

from app.core.principals import Principal
from app.db.models import (
    AliasEvent,
    ModelAlias,
    ModelVersion,
    RegisteredModel,
    TrainedModel,
    utcnow,
)
from app.errors import Conflict, InvalidRequest, NotFound

SLUG_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
"""A model name or an alias: 1-64 lowercase letters, digits, ``_`` and ``-``, starting with a
letter or a digit (so that neither can contain the ``@`` or ``/`` of the paths)."""

_SLUG = re.compile(SLUG_PATTERN)

logger = logging.getLogger(__name__)

SCALAR_METRICS = ("accuracy", "balanced_accuracy", "precision_macro", "recall_macro",
                  "f1_macro", "roc_auc", "average_precision", "log_loss", "mean_absolute_error",
                  "mean_squared_error", "r2", "mean_absolute_rank_error", "n_samples")
"""The validation metrics a version records (those the evaluation has), next to the training
ones: the numbers compared side by side between versions."""


def check_slug(value: str, what: str) -> str:
    """``value`` if it is a slug, else :class:`InvalidRequest` naming ``what``."""
    if not _SLUG.fullmatch(value):
        raise InvalidRequest(f"{what} {value[:80]!r} is not a slug: 1-64 lowercase letters, "
                             f"digits, '_' and '-', starting with a letter or a digit")
    return value


def version_metrics(model: TrainedModel) -> dict[str, Any]:
    """What a version records of its model's training and validation."""
    metrics: dict[str, Any] = {"objective": model.objective,
                               "solver_status": model.solver_status,
                               "iterations": model.iterations,
                               "training_seconds": model.training_seconds}
    if model.validation:
        metrics["validation"] = {key: model.validation[key] for key in SCALAR_METRICS
                                 if isinstance(model.validation.get(key), int | float)}
        metrics["validation"]["dataset_id"] = model.validation.get("dataset_id")
    return metrics


def _insert_if_missing(session: Session, owner: str, name: str) -> None:
    """The name's row, created if there is none (concurrent creators: one row)."""
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    now = utcnow()
    session.execute(insert(RegisteredModel).values(
        owner=owner, name=name, latest_version=0, created_at=now, updated_at=now)
        .on_conflict_do_nothing())


def register_version(session: Session, model: TrainedModel, name: str,
                     created_by: str) -> ModelVersion:
    """Add ``model`` (its row not flushed yet, its ``owner`` set) as the next version of its
    owner's ``name``, in the caller's transaction (see the module docstring: the counter's
    update is the lock); the caller commits."""
    _insert_if_missing(session, model.owner, name)
    number = session.execute(
        update(RegisteredModel)
        .where(RegisteredModel.owner == model.owner, RegisteredModel.name == name)
        .values(latest_version=RegisteredModel.latest_version + 1, updated_at=utcnow())
        .returning(RegisteredModel.latest_version)).scalar_one()
    if model.id is None:
        model.id = uuid.uuid4()
    session.add(model)
    session.flush()  # the model's row first: the version refers to it
    version = ModelVersion(owner=model.owner, name=name, version=number, model_id=model.id,
                           job_id=model.job_id, dataset_id=model.dataset_id,
                           solver=model.solver, params=model.params,
                           metrics=version_metrics(model), created_by=created_by,
                           created_at=utcnow())
    session.add(version)
    return version


def resolve(engine: Engine, owner: str, name: str, alias: str | None = None,
            version: int | None = None) -> uuid.UUID | None:
    """The model id of ``name@alias`` (or of version ``version`` of ``name``) of ``owner``,
    None when there is none: one primary-key lookup, read on a connection of its own (the
    predict path calls it for every request)."""
    if alias is not None:
        query = select(ModelAlias.model_id).where(
            ModelAlias.owner == owner, ModelAlias.name == name, ModelAlias.alias == alias)
    else:
        query = select(ModelVersion.model_id).where(
            ModelVersion.owner == owner, ModelVersion.name == name,
            ModelVersion.version == version)
    with engine.connect() as connection:
        return connection.execute(query).scalar()


def _libpq_url(engine: Engine) -> str:
    """The engine's PostgreSQL URL as libpq takes it (psycopg's own connections)."""
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


NOTIFY_CHANNEL = "svmsvc_registry"
"""Where a writer that changes what a name resolves to announces it (:func:`commit_announced`;
PostgreSQL's ``NOTIFY``, delivered at the commit)."""

ACK_CHANNEL = "svmsvc_registry_ack"
"""Where each :class:`AliasListener` acknowledges an announcement: ``"<token> <pid>"``, the
writer's token and the backend pid of the listening connection (``"* <pid>"``: a listener
that has just started, with an empty cache)."""

LISTENER_APPLICATION = "svmsvc registry listener"
"""The ``application_name`` of the listening connections: how a writer finds, in
``pg_stat_activity``, the listeners whose acknowledgement it waits for."""

ACK_TIMEOUT_S = 10.0
"""How long a writer waits for the listeners' acknowledgements before answering anyway (a
listener's process stalled that long; logged as a warning)."""


def _live_listeners(engine: Engine) -> set[int]:
    """The backend pids of the :class:`AliasListener` connections to this database."""
    with engine.connect() as connection:
        return set(connection.execute(text(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = :name"), {"name": LISTENER_APPLICATION}).scalars())


def commit_announced(session: Session) -> None:
    """Commit the caller's transaction, which changes what some ``name@alias`` or
    ``name/version`` resolves to, so that no web process's :class:`DirectLookup` answers from
    a stale entry afterwards.  SQLite: a plain commit (every lookup sees the database's
    ``data_version`` change).  PostgreSQL: before the commit, listen on
    :data:`ACK_CHANNEL` (a connection of this call's own) and ``NOTIFY``
    :data:`NOTIFY_CHANNEL` with a fresh token in the transaction (delivered at the commit,
    not at all on a rollback); after it, wait until every listener that ``pg_stat_activity``
    shows (:data:`LISTENER_APPLICATION`) has acknowledged the token, or has started since
    (``*``), or is gone, for at most :data:`ACK_TIMEOUT_S`.  A listener acknowledges after
    emptying its cache, so when this returns (and the route answers) every live web process
    reads the database again at its next request."""
    engine = session.get_bind()
    if engine.dialect.name != "postgresql":
        session.commit()
        return
    import psycopg

    token = uuid.uuid4().hex
    with psycopg.connect(_libpq_url(engine), autocommit=True,
                         application_name="svmsvc registry writer") as waiter:
        waiter.execute(f"LISTEN {ACK_CHANNEL}")
        session.execute(text("SELECT pg_notify(:channel, :token)"),
                        {"channel": NOTIFY_CHANNEL, "token": token})
        session.commit()
        # the waiter's connection does nothing but wait for notifications (a query on it
        # meanwhile could drop one, psycopg < 3.3); each look at pg_stat_activity is a
        # transaction of its own (a transaction keeps its first snapshot of the statistics)
        waiting = _live_listeners(engine)
        deadline = time.monotonic() + ACK_TIMEOUT_S
        while waiting:
            for notify in waiter.notifies(timeout=0.05, stop_after=len(waiting)):
                acknowledged, _, pid = notify.payload.partition(" ")
                if acknowledged in (token, "*") and pid.isdigit():
                    waiting.discard(int(pid))
            if waiting:  # a listener gone (its process ended) acknowledges nothing
                waiting &= _live_listeners(engine)
            if waiting and time.monotonic() > deadline:
                logger.warning("registry change announced, but listener(s) %s did not "
                               "acknowledge within %.0f s", sorted(waiting), ACK_TIMEOUT_S)
                return


class AliasListener:
    """The PostgreSQL half of :class:`DirectLookup`'s cache: a daemon thread that ``LISTEN``\\ s
    on :data:`NOTIFY_CHANNEL` on a connection of its own (``application_name``
    :data:`LISTENER_APPLICATION`), empties the lookup's cache at every announcement, then
    acknowledges it on :data:`ACK_CHANNEL` from a second connection (the first one is held
    by the wait for notifications).  The cache is trusted only while the listener is
    ``live``: it is emptied and distrusted from the moment the connection fails (the lookup
    then reads the database for every request, as without a cache) until a new connection
    listens again, and started empty then (it may have missed announcements)."""

    WAKE_S = 0.5
    """How often the thread looks whether it is to stop."""

    def __init__(self, lookup: DirectLookup):
        self.lookup = lookup
        self.live = False
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="registry-listener", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._listen()
            except Exception as exc:  # the connection lost or refused: no cache meanwhile
                logger.info("registry listener: %s; the fast path reads every name until "
                            "it listens again", exc)
            self.live = False
            self.lookup.invalidate()
            self.stopping.wait(1.0)

    def _listen(self) -> None:
        import psycopg

        url = _libpq_url(self.lookup.engine)
        with psycopg.connect(url, autocommit=True,
                             application_name=LISTENER_APPLICATION) as listening, \
                psycopg.connect(url, autocommit=True,
                                application_name="svmsvc registry ack") as acknowledging:
            pid = listening.info.backend_pid
            listening.execute(f"LISTEN {NOTIFY_CHANNEL}")
            self.lookup.invalidate()
            self.live = True
            acknowledge = "SELECT pg_notify(%s, %s)"
            acknowledging.execute(acknowledge, (ACK_CHANNEL, f"* {pid}"))
            while not self.stopping.is_set():
                for notify in listening.notifies(timeout=self.WAKE_S):
                    self.lookup.invalidate()
                    acknowledging.execute(acknowledge, (ACK_CHANNEL, f"{notify.payload} {pid}"))

    def stop(self) -> None:
        self.stopping.set()


class DirectLookup:
    """:func:`resolve` for the predict fast path, at a fraction of its cost.  The read is
    the same two primary-key lookups, as plain SQL on one DBAPI connection of the engine kept
    by the thread that asks (the event loop's), in autocommit mode (each read its own
    snapshot: it holds no transaction open between requests, and never waits for a writer:
    SQLite's WAL, PostgreSQL's MVCC); through SQLAlchemy's ``Connection`` the read cost the
    web process 0.3 ms of CPU (a pool checkout, the transaction events, the result
    machinery), more than the rest of a prediction.  An error drops the connection (the
    next call opens another) and answers None: the caller lets the route answer, with its
    usual errors.

    Its answers (model ids found; a name not found is not kept) are cached, and the cache
    trusted only after a check that nothing changed since it was filled (see the module
    docstring): on SQLite ``PRAGMA data_version`` on the thread's connection before every
    answer (a different value: another connection committed, the cache is emptied); on
    PostgreSQL, while the :class:`AliasListener` listens, with :func:`commit_announced`
    making the writers wait for it.  A cache hit costs no read at all, which is what makes
    a prediction by name as cheap as by id (``python -m bench service registry``)."""

    MAX_ENTRIES = 4096
    """The cache is emptied when it would hold more (names a client asks for by the
    thousand)."""

    def __init__(self, engine: Engine, listen: bool = True):
        self.engine = engine
        self.local = threading.local()
        self.postgresql = engine.dialect.name == "postgresql"
        mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        self.alias_sql = (f"SELECT model_id FROM model_aliases WHERE owner = {mark} AND "
                          f"name = {mark} AND alias = {mark}")
        self.version_sql = (f"SELECT model_id FROM model_versions WHERE owner = {mark} AND "
                            f"name = {mark} AND version = {mark}")
        self._async_free: list = []  # model_id_async's idle connections (PostgreSQL)
        self._async_open = 0
        self._async_ready = asyncio.Event()  # a connection was given back
        self.cache: dict = {}  # PostgreSQL: (owner, name, alias, version) -> model id
        self.listener = AliasListener(self) if self.postgresql and listen else None

    def invalidate(self) -> None:
        """Empty the PostgreSQL cache (a new dict: a read that started before, still
        filling the old one, fills a dict nobody reads)."""
        self.cache = {}

    def _driver(self):
        """This thread's driver connection (sqlite3's or psycopg's), checked out of the
        engine's pool once and kept."""
        connection = getattr(self.local, "connection", None)
        if connection is None:
            connection = self.engine.raw_connection()
            if self.postgresql:
                connection.driver_connection.autocommit = True
            # SQLite's connections already are (isolation_level None: app.db.session)
            self.local.connection = connection
            self.local.cache, self.local.data_version = {}, None
        return connection.driver_connection

    def _trusted_cache(self, driver=None) -> dict | None:
        """The cache that may be answered from now, None when none may (PostgreSQL: the
        listener is not listening).  SQLite: this thread's, emptied if the database's
        ``data_version`` on ``driver`` (this thread's connection) moved since the last
        look (a failed look raises)."""
        if self.postgresql:
            return self.cache if self.listener is not None and self.listener.live else None
        data_version = driver.execute("PRAGMA data_version").fetchone()[0]
        if data_version != self.local.data_version:
            self.local.cache, self.local.data_version = {}, data_version
        return self.local.cache

    def _statement(self, owner: str, name: str, alias: str | None,
                   version: int | None) -> tuple[str, tuple]:
        """The read of ``name@alias`` or ``name/version`` and its parameters."""
        return ((self.alias_sql, (owner, name, alias)) if alias is not None
                else (self.version_sql, (owner, name, version)))

    def _keep(self, cache: dict | None, key: tuple, model_id: uuid.UUID | None) -> None:
        if cache is not None and model_id is not None:
            if len(cache) >= self.MAX_ENTRIES:
                cache.clear()
            cache[key] = model_id

    def model_id(self, owner: str, name: str, alias: str | None = None,
                 version: int | None = None) -> uuid.UUID | None:
        """The model id of ``name@alias`` or ``name/version`` of ``owner``; None when there
        is none, or when the read failed."""
        key = (owner, name, alias, version)
        try:
            driver = self._driver()
            cache = self._trusted_cache(driver)
            if cache is not None and (found := cache.get(key)) is not None:
                return found
            # both drivers' Connection.execute: a cursor made, executed and returned
            row = driver.execute(*self._statement(*key)).fetchone()
        except Exception:  # a connection gone (server restart ...): the route answers
            self.close()
            return None
        if row is None:
            return None
        value = row[0]  # PostgreSQL: a UUID; SQLite: its 32 hex digits (SQLAlchemy's Uuid)
        found = value if isinstance(value, uuid.UUID) else uuid.UUID(value)
        self._keep(cache, key, found)
        return found

    async def model_id_async(self, owner: str, name: str, alias: str | None = None,
                             version: int | None = None) -> uuid.UUID | None:
        """:meth:`model_id` for the event loop.  A cache hit is answered at once.  On a miss
        on PostgreSQL the read is a round trip to the server (0.1-0.4 ms on this project's
        machine): made blocking, the event loop would wait through it and one process would
        answer a third as many predictions by alias as by id under ``wrk`` (measured); so it
        is awaited on one of at most ``ASYNC_CONNECTIONS`` asynchronous connections of this
        loop, in autocommit mode, while the loop serves other requests.  On SQLite (no
        server: a read of the file's pages) it is :meth:`model_id`."""
        if not self.postgresql:
            return self.model_id(owner, name, alias, version)
        key = (owner, name, alias, version)
        cache = self._trusted_cache()
        if cache is not None and (found := cache.get(key)) is not None:
            return found
        sql, parameters = self._statement(*key)
        connection = await self._async_connection()
        if connection is None:
            return None
        try:
            cursor = await connection.execute(sql, parameters)
            row = await cursor.fetchone()
        except Exception:  # a connection gone, or made on another loop: the route answers
            await self._discard(connection)
            return None
        self._async_free.append(connection)
        self._async_ready.set()
        found = None if row is None else row[0]
        self._keep(cache, key, found)
        return found

    ASYNC_CONNECTIONS = 4
    """The most asynchronous connections :meth:`model_id_async` opens (per process)."""

    async def _async_connection(self):
        """A free asynchronous connection, a new one while fewer than ``ASYNC_CONNECTIONS``
        are open, else the next one given back; None if none can be opened."""
        import psycopg

        while not self._async_free and self._async_open >= self.ASYNC_CONNECTIONS:
            self._async_ready.clear()
            await self._async_ready.wait()
        if self._async_free:
            return self._async_free.pop()
        self._async_open += 1
        try:
            return await psycopg.AsyncConnection.connect(_libpq_url(self.engine),
                                                         autocommit=True)
        except Exception:
            self._async_open -= 1
            return None

    async def _discard(self, connection) -> None:
        self._async_open -= 1
        self._async_ready.set()
        try:
            await connection.close()
        except Exception:
            pass

    def close(self) -> None:
        """Give this thread's connection back (closed: it was in autocommit mode), and drop
        the asynchronous ones (their sockets close with them)."""
        connection = getattr(self.local, "connection", None)
        self.local.connection = None
        self.local.cache, self.local.data_version = {}, None
        if connection is not None:
            try:
                connection.invalidate()
            except Exception:
                pass
        for pending in self._async_free:
            try:
                pending.pgconn.finish()
            except Exception:
                pass
        self._async_free, self._async_open = [], 0

    def stop(self) -> None:
        """:meth:`close`, and stop the listener (the application's end)."""
        if self.listener is not None:
            self.listener.stop()
        self.close()


def resolve_or_404(engine: Engine, principal: Principal, name: str, alias: str | None = None,
                   version: int | None = None) -> uuid.UUID:
    """:func:`resolve` for ``principal``'s owner, :class:`NotFound` saying what is missing."""
    model_id = resolve(engine, principal.owner, name, alias, version)
    if model_id is None:
        what = f"alias {alias!r}" if alias is not None else f"version {version}"
        raise NotFound(f"registered model {name!r} has no {what}")
    return model_id


def list_names(session: Session, principal: Principal, offset: int,
               limit: int) -> tuple[list[tuple[RegisteredModel, int, dict[str, int]]], int]:
    """The caller's registered models by name: each with how many versions it has and its
    aliases (alias: version)."""
    from app.crud.pages import page

    query = select(RegisteredModel).where(RegisteredModel.owner == principal.owner)
    rows, count = page(session, query, (RegisteredModel.name,), offset, limit)
    names = [row.name for row in rows]
    versions: dict[str, int] = {}
    for name, in session.execute(select(ModelVersion.name).where(
            ModelVersion.owner == principal.owner, ModelVersion.name.in_(names))):
        versions[name] = versions.get(name, 0) + 1
    aliases: dict[str, dict[str, int]] = {}
    for alias in session.scalars(select(ModelAlias).where(
            ModelAlias.owner == principal.owner, ModelAlias.name.in_(names))
            .order_by(ModelAlias.alias)):
        aliases.setdefault(alias.name, {})[alias.alias] = alias.version
    return [(row, versions.get(row.name, 0), aliases.get(row.name, {})) for row in rows], count


def get_name(session: Session, principal: Principal, name: str) -> RegisteredModel:
    """The caller's registered model ``name`` (:class:`NotFound` if there is none)."""
    row = session.get(RegisteredModel, (principal.owner, name))
    if row is None:
        raise NotFound(f"registered model {name!r} not found")
    return row


def versions_of(session: Session, row: RegisteredModel) -> list[ModelVersion]:
    """The versions of a registered model, newest first."""
    return list(session.scalars(select(ModelVersion).where(
        ModelVersion.owner == row.owner, ModelVersion.name == row.name)
        .order_by(ModelVersion.version.desc())))


def aliases_of(session: Session, row: RegisteredModel) -> list[tuple[ModelAlias,
                                                                     list[AliasEvent]]]:
    """The aliases of a registered model, each with its history, newest move first."""
    events: dict[str, list[AliasEvent]] = {}
    for event in session.scalars(select(AliasEvent).where(
            AliasEvent.owner == row.owner, AliasEvent.name == row.name)
            .order_by(AliasEvent.id.desc())):
        events.setdefault(event.alias, []).append(event)
    aliases = list(session.scalars(select(ModelAlias).where(
        ModelAlias.owner == row.owner, ModelAlias.name == row.name)
        .order_by(ModelAlias.alias)))
    return [(alias, events.get(alias.alias, [])) for alias in aliases]


def deleted_aliases(session: Session, row: RegisteredModel) -> dict[str, list[AliasEvent]]:
    """The history of the aliases of a registered model that no longer exist."""
    current = {alias for alias, in session.execute(select(ModelAlias.alias).where(
        ModelAlias.owner == row.owner, ModelAlias.name == row.name))}
    events: dict[str, list[AliasEvent]] = {}
    for event in session.scalars(select(AliasEvent).where(
            AliasEvent.owner == row.owner, AliasEvent.name == row.name,
            AliasEvent.alias.not_in(current) if current else true())
            .order_by(AliasEvent.id.desc())):
        events.setdefault(event.alias, []).append(event)
    return events


def get_version(session: Session, principal: Principal, name: str,
                version: int) -> ModelVersion:
    """Version ``version`` of the caller's ``name`` (:class:`NotFound` if there is none)."""
    row = session.get(ModelVersion, (principal.owner, name, version))
    if row is None:
        raise NotFound(f"registered model {name!r} has no version {version}")
    return row


def lock_name(session: Session, principal: Principal, name: str) -> RegisteredModel:
    """The caller's registered model ``name``, its row locked for the transaction (PostgreSQL;
    SQLite's write transaction holds the database's write lock already)."""
    row = session.scalars(select(RegisteredModel).where(
        RegisteredModel.owner == principal.owner, RegisteredModel.name == name)
        .with_for_update()).first()
    if row is None:
        raise NotFound(f"registered model {name!r} not found")
    return row


def move_alias(session: Session, principal: Principal, name: str, alias: str,
               version: int) -> ModelAlias:
    """Point ``alias`` of the caller's ``name`` at ``version`` (creating the alias), recording
    the move, in one transaction; a move to the version it already points at changes and
    records nothing.  :class:`NotFound` for the name, :class:`InvalidRequest` for a version
    that does not exist."""
    check_slug(alias, "alias")
    registered = lock_name(session, principal, name)
    target = session.get(ModelVersion, (registered.owner, name, version))
    if target is None:
        raise InvalidRequest(f"version: registered model {name!r} has no version {version}")
    row = session.get(ModelAlias, (registered.owner, name, alias))
    if row is not None and row.version == version:
        session.commit()
        return row
    previous = None if row is None else row.version
    now = utcnow()
    if row is None:
        row = ModelAlias(owner=registered.owner, name=name, alias=alias)
        session.add(row)
    row.version, row.model_id = version, target.model_id
    row.updated_by, row.updated_at = principal.owner, now
    session.add(AliasEvent(owner=registered.owner, name=name, alias=alias,
                           from_version=previous, to_version=version,
                           moved_by=principal.owner, moved_at=now))
    registered.updated_at = now
    commit_announced(session)
    return row


def delete_alias(session: Session, principal: Principal, name: str, alias: str) -> None:
    """Delete an alias, recording it (a move to no version); :class:`NotFound` if none."""
    registered = lock_name(session, principal, name)
    row = session.get(ModelAlias, (registered.owner, name, alias))
    if row is None:
        raise NotFound(f"registered model {name!r} has no alias {alias!r}")
    now = utcnow()
    session.add(AliasEvent(owner=registered.owner, name=name, alias=alias,
                           from_version=row.version, to_version=None,
                           moved_by=principal.owner, moved_at=now))
    session.delete(row)
    registered.updated_at = now
    commit_announced(session)


def aliases_pointing_at(session: Session, owner: str, name: str, version: int) -> list[str]:
    """The aliases of ``owner``'s ``name`` that point at ``version``."""
    return list(session.scalars(select(ModelAlias.alias).where(
        ModelAlias.owner == owner, ModelAlias.name == name, ModelAlias.version == version)
        .order_by(ModelAlias.alias)))


def refuse_if_aliased(session: Session, owner: str, name: str, version: int) -> None:
    """:class:`Conflict` naming the aliases that point at the version, if any."""
    aliases = aliases_pointing_at(session, owner, name, version)
    if aliases:
        listed = ", ".join(f"{name}@{alias}" for alias in aliases)
        raise Conflict(f"version {version} of registered model {name!r} is what {listed} "
                       f"point(s) at; move or delete the alias first "
                       f"(PUT or DELETE /api/v1/registry/{name}/aliases/{aliases[0]})")


def delete_version(session: Session, principal: Principal, name: str,
                   version: int) -> uuid.UUID:
    """Delete a version and its model, returning the model's id (:class:`NotFound` if none;
    :class:`Conflict` while an alias points at it).  Its number is not given again."""
    registered = lock_name(session, principal, name)
    row = session.get(ModelVersion, (registered.owner, name, version))
    if row is None:
        raise NotFound(f"registered model {name!r} has no version {version}")
    refuse_if_aliased(session, registered.owner, name, version)
    model = session.get(TrainedModel, row.model_id)
    session.delete(row)
    if model is not None:
        session.delete(model)
    registered.updated_at = utcnow()
    commit_announced(session)
    return row.model_id
