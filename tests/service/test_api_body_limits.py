"""Bodies bounded before they are read, the key checked before the body, and SVMlight
prediction lines parsed as they arrive (issue 49): the middleware alone (how much of a body
it lets the application read), through the in-process service, and against a real
``svmsvc serve`` process, whose resident memory stays bounded."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest
from servicetools import PATIENCE_S, create_job, random_svmlight, upload, wait_job

from app.api.body_limits import BodyGuard
from app.core.config import Settings
from app.core.security import ApiKeys
from app.errors import ContentTooLarge
from app.prediction import PredictionLines, label_unlabelled_lines

KEY = "guard-train-key"


class Recorder:
    """The ASGI side of one request: a body in chunks handed out on ``receive`` (counted),
    and the messages the application sends."""

    def __init__(self, chunks: list[bytes]):
        self.chunks = list(chunks)
        self.received = 0
        self.sent: list[dict] = []

    async def receive(self) -> dict:
        self.received += 1
        body = self.chunks.pop(0) if self.chunks else b""
        return {"type": "http.request", "body": body, "more_body": bool(self.chunks)}

    async def send(self, message: dict) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return self.sent[0]["status"]

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])


async def reading_app(scope, receive, send) -> None:
    """An application that reads its whole body, then answers 200 with its length."""
    length = 0
    while True:
        message = await receive()
        length += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(length).encode()})


def guarded(keys: str | None = f"train:{KEY}", **settings) -> BodyGuard:
    values = {"max_json_body_bytes": 100, "max_predict_bytes": 1000, "api_keys": keys,
              **settings}
    settings = Settings(**values)
    return BodyGuard(reading_app, settings=settings, keys=ApiKeys.from_settings(settings))


def call(guard: BodyGuard, path: str, chunks: list[bytes], *, key: str | None = KEY,
         length: int | None = None, method: str = "POST") -> Recorder:
    headers = [(b"content-type", b"application/json")]
    if key is not None:
        headers.append((b"x-api-key", key.encode()))
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    else:
        headers.append((b"transfer-encoding", b"chunked"))
    scope = {"type": "http", "method": method, "path": path, "root_path": "",
             "query_string": b"", "headers": headers, "app": None}
    recorder = Recorder(chunks)
    anyio.run(guard, scope, recorder.receive, recorder.send)
    return recorder


def test_a_body_without_a_valid_key_is_a_401_before_any_of_it_is_read():
    guard = guarded()
    for key in (None, "not-a-key"):
        for length in (10**9, None):  # declared, or chunked
            answer = call(guard, "/api/v1/solvers/pose", [b"{}"] * 5, key=key, length=length)
            assert answer.status == 401 and answer.received == 0
            assert b"urn:svmsvc:problem:unauthenticated" in answer.body
    assert call(guard, "/api/v1/jobs", [b"{}"], length=2).status == 200
    open_service = guarded(keys=None)  # no keys configured: nothing to check
    assert call(open_service, "/api/v1/jobs", [b"{}"], key=None, length=2).status == 200


def test_a_declared_length_past_the_route_limit_is_a_413_naming_its_setting_unread():
    guard = guarded()
    for path, setting, limit in (("/api/v1/jobs", "SVMSVC_MAX_JSON_BODY_BYTES", 100),
                                 ("/api/v1/solvers/pose", "SVMSVC_MAX_JSON_BODY_BYTES", 100),
                                 ("/api/v1/models/m-1/predict", "SVMSVC_MAX_PREDICT_BYTES",
                                  1000)):
        refused = call(guard, path, [b"x" * (limit + 1)], length=limit + 1)
        assert refused.status == 413 and refused.received == 0, path
        assert setting.encode() in refused.body
        assert call(guard, path, [b"x" * limit], length=limit).body == str(limit).encode()


def test_a_body_without_length_is_cut_at_the_first_chunk_past_the_limit():
    guard = guarded()
    answer = call(guard, "/api/v1/jobs", [b"x" * 40] * 1000)
    assert answer.status == 413 and answer.received == 3  # 120 bytes > 100
    assert b"SVMSVC_MAX_JSON_BODY_BYTES" in answer.body
    assert [m["type"] for m in answer.sent] == ["http.response.start", "http.response.body"]
    assert call(guard, "/api/v1/jobs", [b"x" * 50] * 2).body == b"100"


def test_a_body_that_stalls_is_a_408_naming_its_setting():
    """A client that stops sending mid-body waited forever; the guard gives it
    SVMSVC_BODY_READ_TIMEOUT_S from its last byte, also on an upload."""
    guard = guarded(body_read_timeout_s=0.2)

    class Stalled(Recorder):
        async def receive(self) -> dict:
            self.received += 1
            if self.received > 2:
                await anyio.sleep_forever()  # the client sends nothing more
            return {"type": "http.request", "body": b"{", "more_body": True}

    for path in ("/api/v1/jobs", "/api/v1/datasets"):
        stalled = Stalled([])
        scope = {"type": "http", "method": "POST", "path": path, "root_path": "",
                 "query_string": b"", "app": None,
                 "headers": [(b"x-api-key", KEY.encode()), (b"content-length", b"100")]}
        anyio.run(guard, scope, stalled.receive, stalled.send)
        assert stalled.status == 408, path
        assert b"SVMSVC_BODY_READ_TIMEOUT_S" in stalled.body
        assert b"urn:svmsvc:problem:body-timeout" in stalled.body


def test_uploads_keep_their_own_streaming_caps():
    guard = guarded()
    body = [b"x" * 500] * 3  # past the JSON limit, far within max_upload_bytes
    assert call(guard, "/api/v1/datasets", body, length=1500).body == b"1500"
    assert call(guard, "/api/v1/datasets", body).body == b"1500"


def test_a_json_body_past_the_limit_is_a_413_in_the_service_not_fastapis_400(api):
    """FastAPI turns an error while it reads a body into a 400 'There was an error parsing
    the body': the 413 replaces it."""
    limit = api.app.state.settings.max_json_body_bytes

    def chunked():  # no Content-Length: counted as it arrives
        yield b'{"x": ['
        for _ in range(limit // 999 + 10):
            yield b"{}," * 333
        yield b"{}]}"

    for path in ("/api/v1/jobs", "/api/v1/solvers/pose"):
        response = api.post(path, content=chunked(), headers={"content-type": "application/json"})
        assert response.status_code == 413, response.text
        assert response.json()["setting"] == "SVMSVC_MAX_JSON_BODY_BYTES"
        assert response.headers["content-type"] == "application/problem+json"
    unauthenticated = api.post("/api/v1/jobs", content=chunked(),
                               headers={"content-type": "application/json", "X-API-Key": ""})
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["www-authenticate"]


def test_unlabelled_lines_get_the_label_zero_and_keep_their_numbers():
    text = (b"1 1:1\n3:0.5 7:1\n  \t2:1\n#1:1 comment\n\n:1\n-1 qid:3 1:1\n\r4:1\n"
            b"  -1 2:2\n5:1")
    assert label_unlabelled_lines(text).split(b"\n") == [
        b"1 1:1", b"0 3:0.5 7:1", b"0   \t2:1", b"#1:1 comment", b"", b"0 :1",
        b"-1 qid:3 1:1", b"0 \r4:1", b"  -1 2:2", b"0 5:1"]
    assert label_unlabelled_lines(b"") == b""
    assert label_unlabelled_lines(b"\n" * 5) == b"\n" * 5


def test_prediction_lines_are_parsed_across_pieces_and_stop_at_the_row_cap():
    lines = PredictionLines(n_features=3, zero_based=False, max_rows=10)
    for piece in (b"1:0.5 2:", b"1\n-1 3:1\n", b"", b"2:2", b"\n3:3"):  # lines cut anywhere
        lines.feed(piece)
    X = lines.finish()
    assert X.toarray().tolist() == [[0.5, 1, 0], [0, 0, 1], [0, 2, 0], [0, 0, 3]]
    capped = PredictionLines(n_features=3, zero_based=False, max_rows=10)
    capped.feed(b"1:1\n" * 10)
    with pytest.raises(ContentTooLarge, match="SVMSVC_MAX_PREDICT_ROWS"):
        capped.feed(b"1:1\n")  # the 11th row: refused as it is parsed, not at the end


def peak_rss_mb(pid: int) -> float:
    """The peak resident memory (VmHWM) of a process since :func:`reset_peak`, in MB."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


def reset_peak(pid: int) -> float:
    """Start a new peak of the process's resident memory; its resident memory now, in MB."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return peak_rss_mb(pid)


def repeated(head: bytes, item: bytes, size: int, tail: bytes = b""):
    """A body of about ``size`` bytes, ``head``, ``item`` repeated, ``tail``, generated a
    64 KiB piece at a time (the test itself holds none of it)."""
    piece = item * (65536 // len(item))

    def chunks():
        yield head
        for _ in range(size // len(piece)):
            yield piece
        yield tail

    return chunks()


UNREAD_GROWTH_MB = 32
"""How far above its resident memory before a request the web process's peak may go while it
refuses a JSON body it does not read (no key) or stops reading at 1 MiB (measured: 0-1 MB).
Before the guard, 21 MB to pose without a key took it from 332 MB to 849 MB, 200 MB to
POST /jobs to 5.3 GB (issue 49, a loaded 2-core machine).  The issue's bound, 300 MB in all,
is about what the process holds idle (240-350 MB, as far as its serial kernels are loaded):
the growth is what these requests cost."""

PARSED_GROWTH_MB = 100
"""The same for SVMlight prediction lines it parses as they arrive, a megabyte at a time
(measured: about 50 MB); 16 MB of newlines took 9-32 s and 1.7 GB before."""


@pytest.mark.slow
@pytest.mark.embedded_database_only
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_hostile_bodies_are_refused_before_they_cost_the_web_process(server_factory):
    """Issue 49's reproducers against a real server with keys: each is refused with the
    setting (or the key) it meets, the web process's peak resident memory stays within
    UNREAD_GROWTH_MB (JSON) or PARSED_GROWTH_MB (prediction lines) of where it was, and
    nothing is stored."""
    server = server_factory(workers=1, api_keys=f"train:tester:{KEY},read:tester:guard-read")
    server.wait_ready()
    client = server.client
    client.headers["X-API-Key"] = KEY
    dataset = upload(client, random_svmlight(n_rows=60, seed=49001)).json()["id"]
    model_id = wait_job(client, create_job(client, dataset, {"solver": "mfn"})["id"])["model_id"]
    del client.headers["X-API-Key"]
    pid = server.process.pid
    json_body = {"content-type": "application/json"}
    read_text = {"content-type": "text/plain", "X-API-Key": "guard-read"}
    cases = [
        ("/api/v1/solvers/pose", repeated(b'{"x":[', b"{},", 21 * 10**6, b"{}]}"),
         json_body, 401, "unauthenticated", UNREAD_GROWTH_MB),
        ("/api/v1/jobs", repeated(b'{"x":[', b"{},", 200 * 10**6, b"{}]}"), json_body, 401,
         "unauthenticated", UNREAD_GROWTH_MB),
        ("/api/v1/jobs", repeated(b'{"x":[', b"{},", 200 * 10**6, b"{}]}"),
         {**json_body, "X-API-Key": KEY}, 413, "SVMSVC_MAX_JSON_BODY_BYTES", UNREAD_GROWTH_MB),
        (f"/api/v1/models/{model_id}/predict", repeated(b"", b"\n", 16 * 2**20 - 2**16),
         read_text, 422, "no data lines", PARSED_GROWTH_MB),
        (f"/api/v1/models/{model_id}/predict", repeated(b"", b"1\n", 4 * 10**6), read_text,
         413, "SVMSVC_MAX_PREDICT_ROWS", PARSED_GROWTH_MB),
    ]
    for path, body, headers, status, named, bound in cases:
        before = reset_peak(pid)
        start = time.monotonic()
        response = client.post(path, content=body, headers=headers, timeout=PATIENCE_S)
        took = time.monotonic() - start
        peak = peak_rss_mb(pid)
        print(f"{path} {status}: {took:.1f} s, {before:.0f} MB -> peak {peak:.0f} MB")
        assert response.status_code == status, response.text[:300]
        assert named in response.text
        assert peak - before < bound, (path, before, peak)
    client.headers["X-API-Key"] = KEY
    assert [d["id"] for d in client.get("/api/v1/datasets").json()["data"]] == [dataset]
    assert len(client.get("/api/v1/jobs").json()["data"]) == 1


@pytest.mark.slow
@pytest.mark.embedded_database_only
def test_an_upload_that_stalls_halfway_is_a_408_and_stores_nothing(server_factory):
    """An upload that stopped halfway used to wait forever (issue 49); the real server ends
    it once SVMSVC_BODY_READ_TIMEOUT_S pass without a byte of it."""
    import socket

    timeout_s = 2.0
    server = server_factory(workers=1, api_keys=f"train:tester:{KEY}",
                            body_read_timeout_s=timeout_s)
    server.wait_ready()
    half = (b'--b\r\nContent-Disposition: form-data; name="file"; filename="x.svm"\r\n\r\n'
            + random_svmlight(n_rows=200, seed=49002))
    head = (f"POST /api/v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {KEY}\r\n"
            f"Content-Type: multipart/form-data; boundary=b\r\n"
            f"Content-Length: {2 * len(half)}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S) as client:
        start = time.monotonic()
        client.sendall(head + half)  # then nothing: the client stalls
        answer = b""
        while b"SVMSVC_BODY_READ_TIMEOUT_S" not in answer:
            received = client.recv(65536)
            assert received, f"the connection closed after {answer!r}"
            answer += received
        waited = time.monotonic() - start
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert waited >= timeout_s
    datasets = server.client.get("/api/v1/datasets", headers={"X-API-Key": KEY})
    assert datasets.json()["data"] == []
