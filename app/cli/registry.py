"""``svmsvc registry``: the model registry of a running service (issue 50), over its HTTP API.

The one group of commands that is a client: it talks to the service at ``--url`` (default
``$SVMSVC_URL``, else ``http://127.0.0.1:8000``) with the key of ``$SVMSVC_API_KEY`` (or
``--api-key-file``; never a key on the command line, where ``ps`` shows it).  An error the
service answers is its problem's ``detail`` on one line, exit status 2::

    svmsvc registry list
    svmsvc registry show churn
    svmsvc registry alias churn production 3       # PUT /registry/churn/aliases/production
    svmsvc registry unalias churn staging
    svmsvc registry delete-version churn 1
    svmsvc registry predict churn@production "3:0.5 7:1"    # or churn/3
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import quote

from app.cli.common import CLIError

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT_S = 60.0


def add_registry_command(commands) -> None:
    registry = commands.add_parser(
        "registry", help="named models, versions and aliases of a running service (a client "
                         "of its API: --url or $SVMSVC_URL, key from $SVMSVC_API_KEY)")
    registry.add_argument("--url", default=os.environ.get("SVMSVC_URL", DEFAULT_URL),
                          help=f"the service (default $SVMSVC_URL, else {DEFAULT_URL})")
    registry.add_argument("--api-key-file", help="read the API key from this file (default "
                                                 "$SVMSVC_API_KEY)")
    registry.add_argument("--json", action="store_true", help="print the API's JSON answer")
    actions = registry.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="the registered models: versions and aliases")
    show = actions.add_parser("show", help="a name's versions (metrics) and aliases (history)")
    show.add_argument("name")
    alias = actions.add_parser("alias", help="point an alias at a version (create or move it)")
    for argument in ("name", "alias"):
        alias.add_argument(argument)
    alias.add_argument("version", type=int)
    unalias = actions.add_parser("unalias", help="delete an alias (its history stays)")
    for argument in ("name", "alias"):
        unalias.add_argument(argument)
    delete = actions.add_parser("delete-version",
                                help="delete a version and its model (refused while an alias "
                                     "points at it)")
    delete.add_argument("name")
    delete.add_argument("version", type=int)
    predict = actions.add_parser("predict", help="predict one example by NAME@ALIAS or "
                                                 "NAME/VERSION")
    predict.add_argument("reference", metavar="NAME@ALIAS|NAME/VERSION")
    predict.add_argument("x", metavar="FEATURES", help="SVMlight features: '3:0.5 7:1'")
    registry.set_defaults(handler=cmd_registry)


def _key(args) -> str | None:
    if args.api_key_file:
        path = Path(args.api_key_file)
        if not path.exists():
            raise CLIError(f"{path}: no such file")
        return path.read_text().strip()
    return os.environ.get("SVMSVC_API_KEY") or None


def _call(args, method: str, path: str, **kwargs):
    """The JSON answer of one request (None for 204); the problem's detail as a CLIError."""
    import httpx

    headers = {"X-API-Key": key} if (key := _key(args)) else {}
    try:
        response = httpx.request(method, f"{args.url.rstrip('/')}/api/v1/registry{path}",
                                 headers=headers, timeout=TIMEOUT_S, **kwargs)
    except httpx.HTTPError as exc:
        raise CLIError(f"cannot reach the service at {args.url}: {exc}") from None
    if response.status_code == 204:
        return None
    try:
        body = response.json()
    except ValueError:
        body = {"detail": response.text[:200]}
    if response.status_code >= 400:
        detail = body.get("detail") if isinstance(body, dict) else None
        raise CLIError(f"{response.status_code}: {detail or response.reason_phrase}")
    return body


def _name(text: str) -> str:
    return quote(text, safe="")


def _reference(text: str) -> str:
    """The path of ``name@alias`` or ``name/version``."""
    name, at, alias = text.partition("@")
    if at:
        return f"/{_name(name)}@{_name(alias)}"
    name, slash, version = text.partition("/")
    if not slash or not version.isdigit():
        raise CLIError(f"{text!r}: give NAME@ALIAS or NAME/VERSION")
    return f"/{_name(name)}/{version}"


def cmd_registry(args) -> int:
    action = args.action
    if action == "list":
        answer = _call(args, "GET", "", params={"limit": 1000})
        lines = [f"{'name':24} {'latest':>6} {'versions':>8}  aliases"] + [
            f"{r['name']:24} {r['latest_version']:>6} {r['versions']:>8}  "
            + (", ".join(f"{a}->{v}" for a, v in r["aliases"].items()) or "-")
            for r in answer["data"]]
    elif action == "show":
        answer = _call(args, "GET", f"/{_name(args.name)}")
        lines = _show_lines(answer)
    elif action == "alias":
        answer = _call(args, "PUT", f"/{_name(args.name)}/aliases/{_name(args.alias)}",
                       json={"version": args.version})
        lines = [f"{args.name}@{answer['alias']} -> version {answer['version']} "
                 f"(model {answer['model_id']})"]
    elif action == "unalias":
        answer = _call(args, "DELETE", f"/{_name(args.name)}/aliases/{_name(args.alias)}")
        lines = [f"{args.name}@{args.alias} deleted"]
    elif action == "delete-version":
        answer = _call(args, "DELETE", f"/{_name(args.name)}/{args.version}")
        lines = [f"{args.name} version {args.version} deleted"]
    else:  # predict
        answer = _call(args, "GET", f"{_reference(args.reference)}/predict",
                       params={"x": args.x})
        lines = [json.dumps(answer)]
    print(json.dumps(answer, indent=2) if args.json and answer is not None
          else "\n".join(lines))
    sys.stdout.flush()
    return 0


def _show_lines(answer: dict) -> list[str]:
    lines = [f"{answer['name']}: latest version {answer['latest_version']}", "",
             f"{'version':>7} {'solver':14} {'C':>10} {'objective':>14} {'val. acc.':>9}  "
             f"aliases"]
    for v in answer["versions"]:
        accuracy = (v["metrics"].get("validation") or {}).get("accuracy")
        objective = v["metrics"].get("objective")
        lines.append(f"{v['version']:>7} {v['solver']:14} {v['params'].get('C', '-'):>10} "
                     f"{'-' if objective is None else format(objective, '.8g'):>14} "
                     f"{'-' if accuracy is None else format(accuracy, '.4f'):>9}  "
                     f"{', '.join(v['aliases']) or '-'}")
    for alias in answer["aliases"]:
        where = "deleted" if alias["version"] is None else f"version {alias['version']}"
        lines += ["", f"{answer['name']}@{alias['alias']} -> {where}"]
        for event in alias["history"]:
            before = "(created)" if event["from_version"] is None else event["from_version"]
            after = "(deleted)" if event["to_version"] is None else event["to_version"]
            lines.append(f"  {event['moved_at']}  {event['moved_by'] or '(open)'}: "
                         f"{before} -> {after}")
    return lines
