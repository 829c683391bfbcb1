"""docs/service.md's curl session, run against a live ``svmsvc serve`` as it is written.

The session's ``console`` block is parsed into commands (``$ ...``) and the output printed
under each; every command runs in bash (curl and jq, as a reader would) in a temporary
directory holding ``heart_scale``, ``heart_scale.gz`` and ``a9a``, against a fresh service
(two workers, no keys), with ``ROOT`` and ``BASE`` set and the variables the session assigns
(``DATASET=$(...)``) carried from one command to the next.  Each answer must have the
documented shape, ids and timings aside:

* JSON (a document, or one per line): the same keys, recursively, and the same types (numbers
  are numbers, whether written 1 or 1.0; a null is a null), lists element by element;
* ``curl -i``: the status line exactly, the same header names, the body as JSON;
* other text (CSV, the event stream, LIBLINEAR's format, metrics): line by line, every number,
  UUID and timestamp a wildcard and the rest literal (a line cut by ``cut -c1-150`` is
  compared on its start).

A changed response (a field added, removed or retyped, a status, a header, a line) fails the
test, naming the command.  Read-only commands are retried until their answer has its shape
(a job that is still running answers nulls where the documented one has values) while their
answer still changes.

``SVMSVC_DOC_SESSION=write`` rewrites the block with the live answers instead (review the diff:
ids, timings and values then come from that run).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from servicetools import PATIENCE_S, ServerProcess, data_path

DOC = Path(__file__).resolve().parents[2] / "docs" / "service.md"
SECTION = "## A session with curl"
WRITE = os.environ.get("SVMSVC_DOC_SESSION") == "write"

pytestmark = pytest.mark.slow
if shutil.which("curl") is None or shutil.which("jq") is None:
    pytest.skip("the session needs curl and jq on PATH", allow_module_level=True)


def session_block(text: str) -> tuple[int, int]:
    """Character offsets of the console block's body in the session section."""
    section = text.index(SECTION)
    start = text.index("```console\n", section) + len("```console\n")
    return start, text.index("```", start)


def parse_session(body: str) -> list[tuple[str, str]]:
    """(command, documented output) pairs; outputs end at the blank line before the next
    command (an output's own blank lines, as in an event stream, are kept)."""
    pairs: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        elif pairs:
            pairs[-1][1].append(line)
        else:
            assert not line.strip(), f"text before the first command: {line!r}"
    return [(command, "\n".join(output).rstrip("\n")) for command, output in pairs]


# -- shapes ----------------------------------------------------------------------------------

def kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def shape_differences(documented, live, where: str = "$") -> list[str]:
    if kind(documented) != kind(live):
        return [f"{where}: documented {kind(documented)}, answered {kind(live)} ({live!r:.80})"]
    if isinstance(documented, dict):
        out = []
        if set(documented) != set(live):
            out.append(f"{where}: keys {sorted(documented)} documented, {sorted(live)} answered")
        for key in set(documented) & set(live):
            out += shape_differences(documented[key], live[key], f"{where}.{key}")
        return out
    if isinstance(documented, list):
        if not documented or not live:
            return [] if not documented and not live else [
                f"{where}: {len(documented)} items documented, {len(live)} answered"]
        # a documented list's items set its items' shape (any length: ROC points, rows)
        return [d for i, item in enumerate(live) for d in
                shape_differences(documented[min(i, len(documented) - 1)], item,
                                  f"{where}[{i}]")]
    return []


def as_json(text: str):
    """The output as JSON: one document, or a list of one per line; None if it is not."""
    try:
        return ("document", json.loads(text))
    except ValueError:
        pass
    try:
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        return None
    return ("lines", lines) if lines else None


WILDCARDS = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
     r"[0-9a-f-]{36}"),
    (re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z?"), r"[\dT:.Z-]+"),
    (re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"), r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"),
]
CUT = 150  # the session cuts the event stream's lines at 150 characters


def line_pattern(line: str, cut: bool) -> re.Pattern:
    if cut and len(line) >= CUT:
        line = line[:CUT - 25]  # a cut line ends wherever the numbers before it made it end
    pieces, position = [], 0
    tokens = sorted(((m.start(), m.end(), pattern) for regex, pattern in WILDCARDS
                     for m in regex.finditer(line)), key=lambda t: (t[0], -(t[1] - t[0])))
    for start, end, pattern in tokens:
        if start < position:
            continue
        pieces += [re.escape(line[position:start]), pattern]
        position = end
    pieces.append(re.escape(line[position:]))
    return re.compile("".join(pieces) + ("" if cut else r"\Z"))


def text_differences(documented: str, live: str, cut: bool) -> list[str]:
    doc_lines, live_lines = documented.splitlines(), live.splitlines()
    if len(doc_lines) != len(live_lines):
        return [f"{len(doc_lines)} lines documented, {len(live_lines)} answered"]
    return [f"line {i + 1}: {got!r} is not like {want!r}"
            for i, (want, got) in enumerate(zip(doc_lines, live_lines, strict=True))
            if not line_pattern(want, cut).match(got)]


def http_differences(documented: str, live: str) -> list[str]:
    """``curl -i``: the status line, the header names, the body's shape."""
    def split(text):
        head, _, body = text.replace("\r\n", "\n").partition("\n\n")
        status, *headers = head.splitlines()
        return status, {h.split(":", 1)[0].lower() for h in headers}, body.strip()
    (doc_status, doc_headers, doc_body), (status, headers, body) = split(documented), split(live)
    out = [] if doc_status.strip() == status.strip() else [f"status {status!r}, "
                                                          f"documented {doc_status!r}"]
    if doc_headers != headers:
        out.append(f"headers {sorted(headers)}, documented {sorted(doc_headers)}")
    return out + shape_differences(json.loads(doc_body), json.loads(body))


def differences(command: str, documented: str, live: str) -> list[str]:
    if documented.startswith("HTTP/"):
        return http_differences(documented, live)
    if not documented:
        return [] if not live.strip() else [f"answered {live[:200]!r}, documented nothing"]
    if re.fullmatch(r"\d{3}", documented):  # curl -w "%{http_code}": the status itself
        return [] if live.strip() == documented else [f"status {live!r}, documented "
                                                      f"{documented}"]
    doc_json = as_json(documented)
    if doc_json is not None:
        live_json = as_json(live)
        if live_json is None or live_json[0] != doc_json[0]:
            return [f"not JSON like the documented answer: {live[:300]!r}"]
        if doc_json[0] == "lines" and len(doc_json[1]) != len(live_json[1]):
            return [f"{len(doc_json[1])} JSON lines documented, {len(live_json[1])} answered"]
        return shape_differences(doc_json[1], live_json[1])
    return text_differences(documented, live, cut=f"cut -c1-{CUT}" in command)


# -- running ---------------------------------------------------------------------------------

RETRY_S = 120.0
"""How long a read-only command is asked again while its answer is not the documented one (a
job still queued or running on a busy machine); only a session that drifted waits it out."""

ASSIGNMENT = re.compile(r"^([A-Z][A-Z0-9_]*)=\$\(")


def run(command: str, env: dict[str, str], cwd: Path) -> str:
    """The command's standard output (bash, the session's variables set); an assignment's
    value is kept in ``env``."""
    assigned = ASSIGNMENT.match(command)
    script = command if assigned is None else f'{command}\nprintf "\\0%s" "${assigned[1]}"'
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=PATIENCE_S)
    assert done.returncode == 0 or "grep" in command, (command, done.stderr)
    output = done.stdout
    if assigned is not None:
        output, _, value = output.rpartition("\0")
        assert value and value != "null", f"{command}: assigned {value!r}"
        env[assigned[1]] = value
    return output.rstrip("\n")


def read_only(command: str) -> bool:
    return not re.search(r"-X |\s-F |file=@|\$\(", command)


@pytest.fixture
def session_dir(tmp_path):
    heart = data_path("heart_scale").read_bytes()
    (tmp_path / "heart_scale").write_bytes(heart)
    (tmp_path / "heart_scale.gz").write_bytes(gzip.compress(heart, mtime=0))
    (tmp_path / "a9a").symlink_to(data_path("a9a"))
    return tmp_path


def test_the_curl_session_of_docs_service_md_answers_as_documented(session_dir, backend,
                                                                   tmp_path_factory):
    text = DOC.read_text()
    start, end = session_block(text)
    pairs = parse_session(text[start:end])
    assert len(pairs) >= 20 and any(c.startswith("curl -s -i") for c, _ in pairs)
    directory = tmp_path_factory.mktemp("doc-session")
    server = ServerProcess(directory, backend.database_url(directory), workers=2)
    try:
        server.wait_ready()
        env = dict(os.environ, ROOT=server.url, BASE=f"{server.url}/api/v1")
        env["PATH"] = f"{Path(server.process.args[0]).parent}:{env['PATH']}"  # svmsvc
        answers, failures = [], []
        for command, documented in pairs:
            deadline = time.monotonic() + RETRY_S
            while True:
                live = run(command, env, session_dir)
                found = differences(command, documented, live)
                if not found or not read_only(command) or time.monotonic() > deadline \
                        or WRITE:
                    break
                # not the documented shape yet: a job still queued or running (the same answer
                # twice in a row proves nothing on a busy machine); ask until the deadline
                time.sleep(0.5)
            answers.append((command, live))
            failures += [f"$ {command}\n    {d}" for d in found]
    finally:
        server.stop()
    if WRITE:
        block = "\n\n".join(f"$ {c}" + (f"\n{o}" if o else "") for c, o in answers) + "\n"
        DOC.write_text(text[:start] + block + text[end:])
        return
    assert not failures, "docs/service.md's session answers otherwise now:\n" + \
        "\n".join(failures)


def test_the_comparison_tells_a_changed_answer_from_other_values():
    """What the session test accepts and refuses, on the doc's own answers: other ids, numbers
    and timestamps pass; a field gone, added or retyped, another status or another line fail."""
    text = DOC.read_text()
    pairs = dict(parse_session(text[slice(*session_block(text))]))
    job_cmd = next(c for c in pairs if c.startswith("curl -s $BASE/jobs/$JOB | jq"))
    documented = json.loads(pairs[job_cmd])
    same = json.loads(json.dumps(documented))
    same["progress"]["iteration"] += 7
    same["model_id"] = "00000000-0000-4000-8000-000000000000"
    assert differences(job_cmd, pairs[job_cmd], json.dumps(same)) == []
    for change in (lambda d: d["progress"].pop("stage"),
                   lambda d: d.update(extra=1),
                   lambda d: d.update(attempts="1"),
                   lambda d: d.update(solver_status=None)):
        changed = json.loads(json.dumps(documented))
        change(changed)
        assert differences(job_cmd, pairs[job_cmd], json.dumps(changed)), change
    http = next(c for c in pairs if c.startswith("curl -s -i"))
    assert differences(http, pairs[http], pairs[http]) == []
    assert differences(http, pairs[http], pairs[http].replace("202 Accepted", "200 OK"))
    csv_cmd = next(c for c in pairs if "text/csv" in c)
    other_numbers = re.sub(r"\d", "7", pairs[csv_cmd])
    assert differences(csv_cmd, pairs[csv_cmd], other_numbers) == []
    assert differences(csv_cmd, pairs[csv_cmd], pairs[csv_cmd].replace("elapsed", "time"))
    code = next(c for c in pairs if "%{http_code}" in c)
    assert differences(code, pairs[code], "200") == [] and differences(code, pairs[code], "201")
