"""``svmsvc migrate``, and the Docker image's entrypoint run as a plain process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from servicetools import PATIENCE_S, START_PATIENCE_S, free_port, svmsvc_command, wait_for

from app.db.migrate import head_revision

ENTRYPOINT = Path(__file__).resolve().parents[2] / "docker" / "entrypoint.sh"


def clean_environment() -> dict[str, str]:
    """The environment without SVMSVC_* settings, with the virtualenv's scripts on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVMSVC_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.slow
def test_migrate_creates_then_keeps_the_schema(backend, tmp_path):
    env = dict(clean_environment(), SVMSVC_DATABASE_URL=backend.database_url(tmp_path))
    command = [*svmsvc_command(), "migrate", "--data-dir", str(tmp_path)]
    head = head_revision()
    first = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert first.stdout == f"database upgraded from empty to revision {head}\n"
    again = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert again.stdout == f"database already at revision {head}\n"


@pytest.mark.slow
def test_entrypoint_passes_subcommands_through(tmp_path):
    result = subprocess.run(["sh", str(ENTRYPOINT), "solvers"], env=clean_environment(),
                            cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "mfn:" in result.stdout


@pytest.mark.slow
def test_entrypoint_refuses_to_serve_open_on_all_interfaces(tmp_path):
    """The image listens on 0.0.0.0: without API keys (or the explicit opt-out) it refuses."""
    result = subprocess.run(["sh", str(ENTRYPOINT), "--port", str(free_port())],
                            env=clean_environment(), cwd=tmp_path, capture_output=True,
                            text=True, timeout=PATIENCE_S)
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0 without API keys" in result.stderr
    assert "SVMSVC_ALLOW_OPEN=true" in result.stderr


@pytest.mark.slow
def test_entrypoint_serves_with_zero_configuration_but_the_opt_out(tmp_path):
    """No settings but SVMSVC_ALLOW_OPEN: SQLite and datasets under ./var, listening on all
    interfaces, and saying loudly that the service is open."""
    port = free_port()
    log = open(tmp_path / "server.log", "wb")
    process = subprocess.Popen(["sh", str(ENTRYPOINT), "--port", str(port), "--workers", "1"],
                               env=dict(clean_environment(), SVMSVC_ALLOW_OPEN="true"),
                               cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        def ready():
            try:
                return httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200
            except httpx.TransportError:
                assert process.poll() is None, (tmp_path / "server.log").read_text()
                return False

        wait_for(ready, timeout=START_PATIENCE_S, interval=0.2, what="the service to be ready")
        assert (tmp_path / "var" / "svmsvc.db").exists()
        assert "Uvicorn running on http://0.0.0.0:" in (tmp_path / "server.log").read_text()
        assert "NO API KEYS CONFIGURED: THE SERVICE IS OPEN" in \
            (tmp_path / "server.log").read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(PATIENCE_S)
        log.close()
    assert "Application shutdown complete" in (tmp_path / "server.log").read_text()
