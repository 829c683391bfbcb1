"""``svmsvc registry``: the registry of a running service from the command line (a client of
its API): list, show, alias, unalias, predict, delete-version, and the service's refusals as
one line with exit status 2."""

from __future__ import annotations

import json
import uuid

import pytest
from servicetools import QUICK_PARAMS, create_job, data_path, uploaded_id, wait_job

from app.cli import main

pytestmark = pytest.mark.embedded_database_only  # a client: the API tests cover both backends


def test_the_registry_commands_drive_a_running_service(live_server, capsys, monkeypatch):
    monkeypatch.delenv("SVMSVC_API_KEY", raising=False)
    client = live_server.client
    heart = uploaded_id(client, data_path("heart_scale"))
    name = f"cli-{uuid.uuid4().hex[:6]}"
    for C in (1.0, 0.01):
        done = wait_job(client, create_job(client, heart, {**QUICK_PARAMS, "C": C},
                                           model_name=name)["id"])
        assert done["status"] == "succeeded", done

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(["registry", "--url", live_server.url, *argv])
        out, err = capsys.readouterr()
        return status, out, err

    status, out, _ = run("alias", name, "production", "1")
    assert status == 0 and out.startswith(f"{name}@production -> version 1")
    assert run("alias", name, "production", "2")[0] == 0
    status, out, _ = run("list")
    assert status == 0 and any(line.split()[:3] == [name, "2", "2"] and "production->2" in line
                               for line in out.splitlines())
    status, out, _ = run("show", name)
    assert status == 0 and f"{name}@production -> version 2" in out
    assert "(created) -> 1" in out and "1 -> 2" in out
    status, out, _ = run("--json", "show", name)
    assert [v["version"] for v in json.loads(out)["versions"]] == [2, 1]
    status, by_alias, _ = run("predict", f"{name}@production", "1:0.5 3:-1")
    status_version, by_version, _ = run("predict", f"{name}/2", "1:0.5 3:-1")
    assert status == status_version == 0 and by_alias == by_version
    assert json.loads(by_alias)["label"] in (-1, 1)
    status, _, err = run("delete-version", name, "2")
    assert status == 2 and err.startswith("svmsvc: error: 409: ") and "production" in err
    assert run("unalias", name, "production")[0] == 0
    assert run("delete-version", name, "2")[0] == 0
    status, _, err = run("show", f"none-{name}")
    assert status == 2 and "404" in err and "not found" in err
    status, _, err = run("predict", name, "1:0.5")
    assert status == 2 and "NAME@ALIAS or NAME/VERSION" in err
    assert main(["registry", "--url", "http://127.0.0.1:9", "list"]) == 2
    assert "cannot reach the service" in capsys.readouterr().err
