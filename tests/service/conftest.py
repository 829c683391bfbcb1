"""Fixtures of the service tests: every test runs on SQLite and on PostgreSQL.

The database backend is a session-scoped parameter: ``sqlite`` (a file in a temporary
directory) and ``postgresql`` (the server on 127.0.0.1:5432; a fresh database per test run,
named at random and dropped at the end, with one schema per service instance inside it).
``SVMSVC_TEST_DB=sqlite`` or ``=postgresql`` runs one of them only; PostgreSQL tests skip,
saying why, when the server cannot be reached.

``api`` is an in-process application (TestClient, lifespan and worker pool included);
``live_server`` is a real ``svmsvc serve`` process for the tests that kill, stop and restart
processes.
"""

from __future__ import annotations

import os
import uuid
import warnings
from pathlib import Path

import pytest
from servicetools import LIVE_GRACE_S, ServerProcess

from app.core.config import Settings
from app.main import create_app

# Starlette's TestClient wants the httpx2 fork; plain httpx works and is what we ship with.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from fastapi.testclient import TestClient  # noqa: E402

POSTGRES_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=3"
POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/{database}"


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    """Every kernel a worker warms up, compiled once into Numba's on-disk cache before any
    service starts.  On a fresh clone the cache is cold, and otherwise every worker of the first
    servers compiles all of them itself, two at a time, which on a busy 2-core machine outlasts
    the readiness ceiling (seen: 300 s at load average 11)."""
    from solvers import warm_up
    warm_up()


class SQLiteBackend:
    name = "sqlite"

    def database_url(self, directory: Path) -> str:
        directory.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{directory / 'svmsvc.db'}"

    def close(self) -> None:
        pass


class PostgresBackend:
    """A database of its own on the local server; one schema per service instance."""

    name = "postgresql"

    def __init__(self):
        import psycopg

        self._psycopg = psycopg
        self.database = f"svmsvc_test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(POSTGRES_DSN, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{self.database}"')

    @classmethod
    def or_skip(cls) -> PostgresBackend:
        """A new database, or the test skipped when the server cannot be reached."""
        try:
            return cls()
        except Exception as exc:
            pytest.skip(f"PostgreSQL at 127.0.0.1:5432 is not reachable: {exc}")

    def _connect(self, database: str):
        dsn = POSTGRES_DSN.replace("dbname=test", f"dbname={database}")
        return self._psycopg.connect(dsn, autocommit=True)

    def database_url(self, directory: Path) -> str:
        directory.mkdir(parents=True, exist_ok=True)
        schema = f"s_{uuid.uuid4().hex[:12]}"
        with self._connect(self.database) as connection:
            connection.execute(f'CREATE SCHEMA "{schema}"')
        url = POSTGRES_URL.format(database=self.database)
        return f"{url}?options=-csearch_path%3D{schema}"

    def close(self) -> None:
        with self._connect("test") as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


def _backends() -> list:
    choice = os.environ.get("SVMSVC_TEST_DB", "all").lower()
    backends = [pytest.param("sqlite"), pytest.param("postgresql", marks=pytest.mark.postgres)]
    return [b for b in backends if choice in ("all", b.values[0])]


def pytest_collection_modifyitems(config, items):
    """Tests marked ``embedded_database_only`` run on SQLite only: what they check lies above
    the database (a client generated from the spec drives the API; a worker's watchdog or
    process lifetime; a prediction's size), and the query layer under them is tested on both
    backends by the API tests."""
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("backend") if callspec is not None else None
        if backend == "postgresql" and item.get_closest_marker("embedded_database_only"):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session", params=_backends())
def backend(request):
    if request.param == "sqlite":
        instance = SQLiteBackend()
    else:
        instance = PostgresBackend.or_skip()
    yield instance
    instance.close()


def service_settings(directory: Path, backend, **overrides) -> Settings:
    """Settings for a test instance: its own data directory and database (or schema)."""
    values = dict(data_dir=directory, database_url=backend.database_url(directory), workers=1,
                  threads_per_worker=1, max_upload_bytes=4 * 2**20, max_predict_bytes=2**20,
                  cancel_grace_s=LIVE_GRACE_S)
    values.update(overrides)
    return Settings(**values)


API_KEYS = {"admin": "test-admin-key", "train": "test-train-key", "read": "test-read-key"}
"""The keys of the in-process service, by scope; all three are keys of one owner, ``tester``."""

TENANT_KEYS = {"alice": "test-alice-key", "alice-read": "test-alice-read-key",
               "bob": "test-bob-key", "own": "test-own-key"}
"""More keys of the in-process service (tenancy): a train and a read key of the owner
``alice``, a train key of ``bob``, and a train key that is an owner of its own."""

API_KEY_ENTRIES = ",".join(
    [f"{scope}:tester:{key}" for scope, key in API_KEYS.items()]
    + [f"train:alice:{TENANT_KEYS['alice']}", f"read:alice:{TENANT_KEYS['alice-read']}",
       f"train:bob:{TENANT_KEYS['bob']}", f"train:{TENANT_KEYS['own']}"])


@pytest.fixture(scope="session")
def api(backend, tmp_path_factory):
    """An in-process service (one worker) shared by the API tests of a backend; it has API
    keys of every scope, and the client sends the admin key unless a test sends another."""
    settings = service_settings(
        tmp_path_factory.mktemp(f"api-{backend.name}"), backend,
        api_keys=API_KEY_ENTRIES)
    with TestClient(create_app(settings), raise_server_exceptions=False,
                    headers={"X-API-Key": API_KEYS["admin"]}) as client:
        yield client


@pytest.fixture(scope="session")
def live_server(backend, tmp_path_factory):
    """A real ``svmsvc serve`` process with two workers, shared by the process tests."""
    directory = tmp_path_factory.mktemp(f"live-{backend.name}")
    server = ServerProcess(directory, backend.database_url(directory), workers=2,
                           cancel_grace_s=LIVE_GRACE_S)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


RESTART_LEASE_S = 3.0
"""Lease of the restarted services: a crashed service's jobs are taken back this long after
its last renewal (30 s by default)."""


@pytest.fixture
def server_factory(backend, tmp_path):
    """Start ``svmsvc serve`` processes on one data directory and database (restarts)."""
    database_url = backend.database_url(tmp_path / "data")
    servers: list[ServerProcess] = []

    def start(**settings) -> ServerProcess:
        settings.setdefault("lease_s", RESTART_LEASE_S)
        server = ServerProcess(tmp_path / "data", database_url, **settings)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
