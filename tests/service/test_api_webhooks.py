"""Job webhooks: a job's end POSTed to its ``callback_url``, signed with the owner's secret,
retried with backoff, every attempt recorded (``GET /jobs/{id}/deliveries``); callback hosts
only from ``SVMSVC_WEBHOOK_ALLOWED_HOSTS``, every address they resolve to checked."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import API_KEY_ENTRIES, API_KEYS, TENANT_KEYS, service_settings
from fastapi.testclient import TestClient
from servicetools import QUICK_PARAMS, create_job, data_path, uploaded_id, wait_for, wait_job

from app.core.config import Settings
from app.errors import InvalidCallback
from app.main import create_app
from app.webhooks import (
    SIGNATURE_HEADER,
    check_callback_url,
    pinned_request,
    signature_header,
    verify_signature,
)

BACKOFF_S = 0.2


class Receiver:
    """An HTTP server on 127.0.0.1 that records every POST and answers the statuses of
    ``answers`` in turn (then 200)."""

    def __init__(self, answers: list[int] | None = None):
        self.answers = list(answers or [])
        self.received: list[tuple[dict, bytes]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the http.server name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                owner.received.append((dict(self.headers), body))
                status = owner.answers.pop(0) if owner.answers else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def hooks_api(backend, tmp_path_factory):
    """A service that allows webhooks to 127.0.0.1, retrying after 0.2 s, 0.4 s, ..."""
    settings = service_settings(
        tmp_path_factory.mktemp(f"hooks-{backend.name}"), backend, api_keys=API_KEY_ENTRIES,
        webhook_allowed_hosts="127.0.0.1", webhook_backoff_s=BACKOFF_S,
        webhook_max_attempts=3, webhook_timeout_s=5)
    with TestClient(create_app(settings), raise_server_exceptions=False,
                    headers={"X-API-Key": API_KEYS["admin"]}) as client:
        yield client


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def deliveries_when(client, job_id: str, state: str) -> dict:
    def reached():
        answer = client.get(f"/api/v1/jobs/{job_id}/deliveries").json()
        return answer if answer["state"] == state else None

    return wait_for(reached, timeout=60)


def test_a_finished_job_is_posted_signed_with_the_owners_secret(hooks_api, receiver):
    heart = uploaded_id(hooks_api, data_path("heart_scale"))
    secret = hooks_api.get("/api/v1/webhook-secret").json()
    assert secret["header"] == SIGNATURE_HEADER and secret["secret"].startswith("whsec_")
    job = create_job(hooks_api, heart, QUICK_PARAMS, callback_url=receiver.url)
    assert job["callback_url"] == receiver.url
    done = wait_job(hooks_api, job["id"])
    answer = deliveries_when(hooks_api, job["id"], "delivered")
    assert answer["attempts"] == 1 and answer["count"] == 1
    assert answer["data"][0]["status_code"] == 200 and answer["data"][0]["error"] is None
    headers, body = receiver.received[0]
    assert verify_signature(secret["secret"], headers[SIGNATURE_HEADER], body)
    assert not verify_signature("whsec_another", headers[SIGNATURE_HEADER], body)
    assert not verify_signature(secret["secret"], headers[SIGNATURE_HEADER], body + b" ")
    assert headers["X-Svmsvc-Event"] == "job.finished"
    event = json.loads(body)
    assert event == answer["event"] and event["id"] == headers["X-Svmsvc-Delivery"]
    assert event["job"]["id"] == job["id"] and event["job"]["kind"] == "train"
    assert event["job"]["status"] == "succeeded"
    assert event["job"]["model_id"] == done["model_id"]
    assert event["job"]["run_s"] >= 0 and event["job"]["queued_s"] >= 0
    # a prediction job's end too, with its model and result
    predicted = hooks_api.post("/api/v1/jobs/predict", json={
        "model_id": done["model_id"], "dataset_id": heart, "callback_url": receiver.url})
    assert predicted.status_code == 202, predicted.text
    deliveries_when(hooks_api, predicted.json()["id"], "delivered")
    event = json.loads(receiver.received[-1][1])
    assert event["job"]["kind"] == "predict" and event["job"]["model_id"] == done["model_id"]
    assert event["job"]["result"]["rows"] == 270
    # rotated: the next event is signed with the new secret only
    rotated = hooks_api.post("/api/v1/webhook-secret").json()["secret"]
    assert rotated != secret["secret"]
    cancelled = create_job(hooks_api, heart, QUICK_PARAMS, callback_url=receiver.url)
    hooks_api.post(f"/api/v1/jobs/{cancelled['id']}/cancel")
    wait_job(hooks_api, cancelled["id"])
    deliveries_when(hooks_api, cancelled["id"], "delivered")
    headers, body = receiver.received[-1]
    assert verify_signature(rotated, headers[SIGNATURE_HEADER], body)
    assert not verify_signature(secret["secret"], headers[SIGNATURE_HEADER], body)


def test_a_failing_receiver_is_retried_with_backoff_until_it_answers(hooks_api):
    receiver = Receiver(answers=[500, 503])
    try:
        heart = uploaded_id(hooks_api, data_path("heart_scale"))
        job = create_job(hooks_api, heart, QUICK_PARAMS, callback_url=receiver.url)
        answer = deliveries_when(hooks_api, job["id"], "delivered")
    finally:
        receiver.close()
    attempts = answer["data"]
    assert [a["status_code"] for a in attempts] == [500, 503, 200]
    assert attempts[0]["error"] == "the receiver answered 500" and attempts[2]["error"] is None
    # exponential: at least 0.2 s, then 0.4 s between the attempts
    from datetime import datetime

    times = [datetime.fromisoformat(a["sent_at"]) for a in attempts]
    assert (times[1] - times[0]).total_seconds() >= BACKOFF_S
    assert (times[2] - times[1]).total_seconds() >= 2 * BACKOFF_S
    # the same event (one id) every time
    assert len({h["X-Svmsvc-Delivery"] for h, _ in receiver.received}) == 1


def test_an_unreachable_receiver_fails_after_the_attempts(hooks_api):
    receiver = Receiver()
    url = receiver.url
    receiver.close()  # nothing listens there any more
    heart = uploaded_id(hooks_api, data_path("heart_scale"))
    job = create_job(hooks_api, heart, QUICK_PARAMS, callback_url=url)
    answer = deliveries_when(hooks_api, job["id"], "failed")
    assert answer["count"] == 3 and answer["next_attempt_at"] is None
    assert all(a["status_code"] is None and a["error"] for a in answer["data"])


@pytest.mark.parametrize("url, fragment", [
    ("http://10.1.2.3/hook", "10.1.2.3 is not inside"),
    ("http://hooks.example.org/hook", "'hooks.example.org' is not listed"),
    ("ftp://127.0.0.1/hook", "not http or https"),
    ("http://user:pw@127.0.0.1/hook", "credentials"),
])
def test_a_disallowed_callback_is_refused_with_a_422_naming_the_setting(hooks_api, url,
                                                                        fragment):
    heart = uploaded_id(hooks_api, data_path("heart_scale"))
    refused = hooks_api.post("/api/v1/jobs", json={"dataset_id": heart, "params": QUICK_PARAMS,
                                                   "callback_url": url})
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["type"] == "urn:svmsvc:problem:invalid-callback"
    assert problem["setting"] == "SVMSVC_WEBHOOK_ALLOWED_HOSTS"
    assert fragment in problem["detail"]


def test_webhooks_are_off_by_default(api):
    heart = uploaded_id(api, data_path("heart_scale"))
    refused = api.post("/api/v1/jobs", json={"dataset_id": heart, "params": QUICK_PARAMS,
                                             "callback_url": "https://hooks.example.org/x"})
    assert refused.status_code == 422
    assert "not enabled on this service" in refused.json()["detail"]


def test_each_owner_has_its_own_secret_and_deliveries(hooks_api):
    mine = hooks_api.get("/api/v1/webhook-secret").json()["secret"]
    bobs = hooks_api.get("/api/v1/webhook-secret",
                         headers={"X-API-Key": TENANT_KEYS["bob"]}).json()["secret"]
    assert mine != bobs
    read = hooks_api.get("/api/v1/webhook-secret", headers={"X-API-Key": API_KEYS["read"]})
    assert read.status_code == 403
    heart = uploaded_id(hooks_api, data_path("heart_scale"))
    job = create_job(hooks_api, heart, QUICK_PARAMS)
    other = hooks_api.get(f"/api/v1/jobs/{job['id']}/deliveries",
                          headers={"X-API-Key": TENANT_KEYS["bob"]})
    assert other.status_code == 404
    assert hooks_api.get(f"/api/v1/jobs/{job['id']}/deliveries").json()["state"] is None


def _settings(allowed: str) -> Settings:
    return Settings(webhook_allowed_hosts=allowed)


def test_every_resolved_address_is_checked_so_dns_cannot_smuggle_a_private_one():
    def resolver(answers):
        return lambda host, port: answers

    public = "93.184.216.34"
    allowed = _settings("hooks.example.org, *.example.net")
    assert check_callback_url("https://hooks.example.org/x", allowed, resolver([public]))
    assert check_callback_url("https://a.example.net/x", allowed, resolver([public]))
    for answers in (["127.0.0.1"], [public, "10.0.0.7"], ["::1"], ["169.254.169.254"],
                    [public, "fd00::1"]):
        with pytest.raises(InvalidCallback, match="loopback, private or reserved"):
            check_callback_url("https://hooks.example.org/x", allowed, resolver(answers))
    # a private address is allowed when its network is listed
    listed = _settings("hooks.internal, 10.0.0.0/8")
    assert check_callback_url("http://hooks.internal/x", listed, resolver(["10.2.3.4"]))
    with pytest.raises(InvalidCallback):
        check_callback_url("http://hooks.internal/x", listed, resolver(["192.168.1.1"]))
    # the sender connects to the address it checked, the Host and TLS name the URL's
    url, headers, extensions = pinned_request("https://hooks.example.org:8443/x?a=1", allowed,
                                              resolver([public]))
    assert url == f"https://{public}:8443/x?a=1"
    assert headers == {"Host": "hooks.example.org:8443"}
    assert extensions == {"sni_hostname": "hooks.example.org"}


def test_a_signature_is_refused_when_stale():
    body = b'{"a":1}'
    header = signature_header("whsec_x", body, timestamp=1_000_000)
    assert verify_signature("whsec_x", header, body, now=1_000_100)
    assert not verify_signature("whsec_x", header, body, now=1_000_400)
    assert not verify_signature("whsec_x", "v1=00", body)


def test_an_event_is_written_once_leased_to_one_sender_and_fenced(tmp_path):
    """What keeps an event when a web process dies mid-delivery: its lease expires and
    another sender takes it (attempt 2); the dead one's late record is refused."""
    from datetime import timedelta

    from sqlalchemy import update

    from app.db.migrate import upgrade_database
    from app.db.models import Dataset, Job, WebhookEvent, utcnow
    from app.db.session import Sessions, create_db_engine
    from app.webhooks import claim_due, enqueue_finished_jobs, record_attempt

    engine = create_db_engine(f"sqlite:///{tmp_path / 'hooks.db'}")
    upgrade_database(engine)
    sessions = Sessions(engine)
    with sessions.write() as session:
        dataset = Dataset(name="d", sha256="0" * 64, has_qid=False, has_sample_weight=False,
                          upload_bytes=1, stored_bytes=1)
        session.add(dataset)
        session.flush()
        session.add(Job(dataset_id=dataset.id, solver="mfn", params={}, status="failed",
                        error="boom", finished_at=utcnow(), owner="tester",
                        callback_url="http://127.0.0.1:9/hook"))
        session.commit()
    with sessions.write() as session:
        assert enqueue_finished_jobs(session) == 1
    with sessions.write() as session:
        assert enqueue_finished_jobs(session) == 0  # one event per job
    with sessions.write() as session:
        first = claim_due(session, lease_s=60)
    assert [d.attempt for d in first] == [1] and first[0].payload["job"]["error"] == "boom"
    with sessions.write() as session:
        assert claim_due(session, lease_s=60) == []  # leased to the first sender
        session.execute(update(WebhookEvent).values(lease_until=utcnow() - timedelta(seconds=1)))
        session.commit()
    with sessions.write() as session:
        second = claim_due(session, lease_s=60)
    assert [d.attempt for d in second] == [2]
    settings = _settings("127.0.0.1")
    with sessions.write() as session:
        assert record_attempt(session, first[0], 200, None, 0.1, settings) is None
    with sessions.write() as session:
        assert record_attempt(session, second[0], 200, None, 0.1, settings) == "delivered"
    engine.dispose()
