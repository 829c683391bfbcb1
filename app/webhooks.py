"""Job webhooks: a job with a ``callback_url`` has its end POSTed there as a signed JSON event.

What may be called.  ``SVMSVC_WEBHOOK_ALLOWED_HOSTS`` lists host names (``hooks.example.org``,
or ``*.example.org`` for its subdomains), IP addresses and networks (``10.0.0.0/8``); empty
(the default), no webhook is accepted.  A ``callback_url`` is an ``http`` or ``https`` URL
without credentials whose host is listed (a name, or an IP literal inside a listed address or
network), and **every** address the host resolves to must be public (``ipaddress``'s
``is_global``) or inside a listed address or network: loopback, private, link-local and
reserved ranges only when the operator lists them.  :func:`check_callback_url` refuses
anything else at job creation (a 422 naming the setting); the sender checks again before each
delivery and connects to the address it checked (the ``Host`` header and TLS server name stay
the URL's), so a DNS answer that changes after the check cannot smuggle a private address in.
Redirects are not followed.

The event (:func:`event_payload`): ``{"type": "job.finished", "id", "created_at", "job": {id,
kind, status, model_id, dataset_id, solver, error, created_at, started_at, finished_at,
queued_s, run_s, result}}``, signed as Stripe signs its events::

    X-Svmsvc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>

with the owner's secret (``GET /api/v1/webhook-secret``; ``POST`` rotates it);
:func:`verify_signature` is what a receiver does.  ``X-Svmsvc-Event`` carries the type and
``X-Svmsvc-Delivery`` the event id (the same on every retry: a receiver can drop repeats).

How it is delivered, and why nothing is lost.  The event is a row (``webhook_events``), written
once a job is finished -- whatever ended it: its worker, the dispatcher, a cancel, the
recovery of a lease -- by :func:`enqueue_finished_jobs`, which every web process's
:class:`WebhookSender` runs every :data:`POLL_S` (the unique job id makes one event per
job).  The sender, a background task of each web process (never a worker: a slow receiver
holds no job slot), claims due events under a lease (``lease_until``, conditional update,
attempt + 1), POSTs them with ``SVMSVC_WEBHOOK_TIMEOUT_S``, and records every attempt
(``webhook_deliveries``: attempt, time, status code, error; ``GET /jobs/{id}/deliveries``).
A 2xx delivers the event; anything else retries after ``SVMSVC_WEBHOOK_BACKOFF_S`` x 2^(n-1)
(at most ``SVMSVC_WEBHOOK_BACKOFF_MAX_S``) until ``SVMSVC_WEBHOOK_MAX_ATTEMPTS``, then the
event is ``failed``.  A process that dies mid-delivery leaves a lease that expires: another
process (or the restarted one) sends the event again.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import logging
import secrets
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import exists, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.core.config import Settings
from app.db.models import (
    FINISHED_STATES,
    Job,
    JobKind,
    TrainedModel,
    WebhookDelivery,
    WebhookEvent,
    WebhookSecret,
    utcnow,
)
from app.db.session import Sessions
from app.errors import InvalidCallback, setting_variable

logger = logging.getLogger("svmsvc.webhooks")

SIGNATURE_HEADER = "X-Svmsvc-Signature"
EVENT_HEADER = "X-Svmsvc-Event"
DELIVERY_HEADER = "X-Svmsvc-Delivery"
EVENT_TYPE = "job.finished"

POLL_S = 1.0
"""How often a web process's sender looks for finished jobs and due events (seconds)."""

LEASE_MARGIN_S = 30.0
"""A claimed delivery's lease: the receiver's timeout plus this (the sender records the
attempt well within it; past it another process may send the event again)."""

BATCH = 20
"""Events one sender claims at a time."""

Resolver = Callable[[str, int], list[str]]


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({info[4][0] for info in infos})


@dataclass(frozen=True)
class AllowedHosts:
    """``SVMSVC_WEBHOOK_ALLOWED_HOSTS`` parsed: names (``*.`` for subdomains) and networks."""

    names: frozenset[str]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    @classmethod
    def from_settings(cls, settings: Settings) -> AllowedHosts:
        names, networks = set(), []
        for entry in settings.webhook_allowed_host_list:
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                names.add(entry.rstrip("."))
        return cls(frozenset(names), tuple(networks))

    def listed_name(self, host: str) -> bool:
        """Whether the host name is listed (exactly, or under a ``*.`` entry)."""
        host = host.rstrip(".")
        return host in self.names or any(
            name.startswith("*.") and host.endswith(name[1:]) for name in self.names)

    def listed_address(self, address: str) -> bool:
        """Whether the address is inside a listed address or network."""
        ip = ipaddress.ip_address(address.split("%")[0])
        return any(ip.version == network.version and ip in network
                   for network in self.networks)


def checked_addresses(url: str, settings: Settings,
                      resolver: Resolver = resolve) -> tuple[Any, list[str]]:
    """The parsed URL and the addresses of its host, every one of them allowed; raises
    :class:`~app.errors.InvalidCallback` (naming the setting) otherwise."""
    variable = setting_variable("webhook_allowed_hosts")
    allowed = AllowedHosts.from_settings(settings)

    def refuse(why: str) -> InvalidCallback:
        return InvalidCallback(f"callback_url: {why}", setting=variable)

    if not allowed.names and not allowed.networks:
        raise refuse(f"webhooks are not enabled on this service ({variable} lists no host); "
                     f"ask the operator to list the receiver's host")
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise refuse(f"{url!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise refuse(f"the scheme of {url!r} is not http or https")
    if parts.username is not None or parts.password is not None:
        raise refuse("credentials in the URL are not accepted (the event is signed: verify "
                     "the X-Svmsvc-Signature header instead)")
    host = (parts.hostname or "").lower()
    if not host:
        raise refuse(f"{url!r} names no host")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None and not allowed.listed_address(host):
        raise refuse(f"the address {host} is not inside an address or network of {variable}")
    if literal is None and not allowed.listed_name(host):
        raise refuse(f"the host {host!r} is not listed in {variable} (the hosts the operator "
                     f"allows webhooks to)")
    try:
        addresses = [host] if literal is not None else resolver(host, port)
    except OSError as exc:
        raise refuse(f"the host {host!r} does not resolve ({exc})") from None
    if not addresses:
        raise refuse(f"the host {host!r} resolves to no address")
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%")[0])
        if not ip.is_global and not allowed.listed_address(address):
            raise refuse(f"the host {host!r} resolves to {address}, a loopback, private or "
                         f"reserved address that {variable} does not list")
    return parts, addresses


def check_callback_url(url: str, settings: Settings, resolver: Resolver = resolve) -> str:
    """The URL, if the service may call it (see the module docstring), else
    :class:`~app.errors.InvalidCallback`."""
    checked_addresses(url, settings, resolver)
    return url


# -- signing ---------------------------------------------------------------------------------

def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``"<timestamp>." + body`` under ``secret``."""
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body,
                    hashlib.sha256).hexdigest()


def signature_header(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The ``X-Svmsvc-Signature`` value of ``body``: ``t=<unix>,v1=<hex>``."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    return f"t={timestamp},v1={signature(secret, timestamp, body)}"


def verify_signature(secret: str, header: str, body: bytes, tolerance_s: float = 300.0,
                     now: float | None = None) -> bool:
    """What a receiver checks: a ``v1`` signature of ``body`` under ``secret`` whose
    timestamp is within ``tolerance_s`` of now (a replayed old event fails), compared in
    constant time."""
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        fields.setdefault(key, []).append(value)
    try:
        timestamp = int(fields["t"][0])
    except (KeyError, ValueError):
        return False
    now = time.time() if now is None else now
    if abs(now - timestamp) > tolerance_s:
        return False
    expected = signature(secret, timestamp, body)
    return any(hmac.compare_digest(expected, given) for given in fields.get("v1", []))


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` and 32 random bytes in hex."""
    return "whsec_" + secrets.token_hex(32)


def owner_secret(session: Session, owner: str) -> WebhookSecret:
    """The owner's secret row, created (and committed) on first use."""
    row = session.get(WebhookSecret, owner)
    if row is not None:
        return row
    row = WebhookSecret(owner=owner, secret=new_secret())
    session.add(row)
    try:
        session.commit()
    except IntegrityError:  # created meanwhile by another request
        session.rollback()
        row = session.get(WebhookSecret, owner)
    return row


def rotate_secret(session: Session, owner: str) -> WebhookSecret:
    """A new secret for the owner: events sent from now on are signed with it."""
    row = owner_secret(session, owner)
    row.secret, row.created_at = new_secret(), utcnow()
    session.commit()
    return row


# -- events ----------------------------------------------------------------------------------

def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else (end - start).total_seconds()


def event_payload(job: Job, model_id: uuid.UUID | None, event_id: uuid.UUID) -> dict:
    """The JSON event of a finished job."""
    result = None
    if job.result is not None:
        result = {key: job.result.get(key) for key in ("format", "rows", "bytes")}
        result["download"] = f"/api/v1/jobs/{job.id}/predictions"
    def stamp(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()

    return {
        "type": EVENT_TYPE, "id": str(event_id), "created_at": utcnow().isoformat(),
        "job": {
            "id": str(job.id), "kind": job.kind, "status": job.status,
            "model_id": None if model_id is None else str(model_id),
            "dataset_id": str(job.dataset_id), "solver": job.solver, "error": job.error,
            "created_at": stamp(job.created_at), "started_at": stamp(job.started_at),
            "finished_at": stamp(job.finished_at),
            "queued_s": _seconds(job.created_at, job.started_at or job.finished_at),
            "run_s": _seconds(job.started_at, job.finished_at),
            "result": result,
        },
    }


def _unwritten():
    return (Job.callback_url.is_not(None), Job.status.in_(FINISHED_STATES),
            ~exists().where(WebhookEvent.job_id == Job.id))


def _due(now: datetime):
    return (WebhookEvent.state == "pending", WebhookEvent.next_attempt_at <= now,
            (WebhookEvent.lease_until.is_(None)) | (WebhookEvent.lease_until < now))


def work_waiting(session: Session) -> tuple[bool, bool]:
    """Whether a finished job waits for its event to be written, and whether an event is due
    (a read: the sender's look before it takes a write transaction)."""
    unwritten = session.scalar(select(Job.id).where(*_unwritten()).limit(1)) is not None
    due = session.scalar(select(WebhookEvent.id).where(*_due(utcnow())).limit(1)) is not None
    session.rollback()
    return unwritten, due


def enqueue_finished_jobs(session: Session, limit: int = 100) -> int:
    """Write the event of every finished job with a callback URL that has none yet (up to
    ``limit``); returns how many.  Several processes may race: the unique job id keeps one,
    the loser's transaction is rolled back and it finds nothing to do next time."""
    jobs = list(session.scalars(
        select(Job).where(*_unwritten()).order_by(Job.finished_at).limit(limit)))
    for job in jobs:
        model_id = job.predict_model_id if job.kind == JobKind.predict else session.scalar(
            select(TrainedModel.id).where(TrainedModel.job_id == job.id))
        event_id = uuid.uuid4()
        session.add(WebhookEvent(id=event_id, job_id=job.id, owner=job.owner,
                                 url=job.callback_url,
                                 payload=event_payload(job, model_id, event_id),
                                 state="pending", attempts=0, next_attempt_at=utcnow()))
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        return 0
    return len(jobs)


@dataclass(frozen=True)
class Due:
    """An event claimed for one delivery attempt."""

    event_id: uuid.UUID
    job_id: uuid.UUID
    attempt: int
    url: str
    payload: dict
    secret: str


def claim_due(session: Session, lease_s: float, limit: int = BATCH) -> list[Due]:
    """Claim the pending events that are due and not leased (attempt + 1, a lease)."""
    now = utcnow()
    rows = session.execute(
        select(WebhookEvent.id, WebhookEvent.attempts).where(*_due(now))
        .order_by(WebhookEvent.next_attempt_at).limit(limit)).all()
    claimed = []
    for row in rows:
        won = session.execute(
            update(WebhookEvent).where(WebhookEvent.id == row.id,
                                       WebhookEvent.attempts == row.attempts,
                                       WebhookEvent.state == "pending")
            .values(attempts=row.attempts + 1,
                    lease_until=now + timedelta(seconds=lease_s))).rowcount
        if won == 1:
            claimed.append((row.id, row.attempts + 1))
    session.commit()
    due = []
    for event_id, attempt in claimed:
        event = session.get(WebhookEvent, event_id)
        secret = owner_secret(session, event.owner).secret
        due.append(Due(event_id, event.job_id, attempt, event.url, event.payload, secret))
    return due


def backoff_s(attempt: int, settings: Settings) -> float:
    """The wait after failed attempt ``attempt`` (1-based): exponential, capped."""
    return min(settings.webhook_backoff_s * 2 ** (attempt - 1), settings.webhook_backoff_max_s)


def record_attempt(session: Session, due: Due, status_code: int | None, error: str | None,
                   duration_s: float, settings: Settings) -> str | None:
    """Record one delivery attempt and move its event on: ``delivered`` on a 2xx,
    ``failed`` when the attempts are used up, else pending again after the backoff.  Fenced
    by the attempt (a process whose lease expired and was overtaken records nothing);
    returns the event's state, or None."""
    delivered = status_code is not None and 200 <= status_code < 300
    if delivered:
        values: dict[str, Any] = {"state": "delivered"}
    elif due.attempt >= settings.webhook_max_attempts:
        values = {"state": "failed"}
    else:
        values = {"state": "pending",
                  "next_attempt_at": utcnow() + timedelta(seconds=backoff_s(due.attempt,
                                                                            settings))}
    owned = session.execute(
        update(WebhookEvent).where(WebhookEvent.id == due.event_id,
                                   WebhookEvent.attempts == due.attempt,
                                   WebhookEvent.state == "pending")
        .values(lease_until=None, **values)).rowcount
    if owned != 1:
        session.rollback()
        return None
    session.add(WebhookDelivery(event_id=due.event_id, attempt=due.attempt, job_id=due.job_id,
                                status_code=status_code, error=error, duration_s=duration_s))
    session.commit()
    return values["state"]


def deliveries(session: Session, job_id: uuid.UUID) -> tuple[WebhookEvent | None,
                                                              list[WebhookDelivery]]:
    """A job's event (None before its end) and its delivery attempts, oldest first."""
    event = session.scalar(select(WebhookEvent).where(WebhookEvent.job_id == job_id))
    rows = list(session.scalars(select(WebhookDelivery).where(
        WebhookDelivery.job_id == job_id).order_by(WebhookDelivery.attempt)))
    return event, rows


# -- the sender ------------------------------------------------------------------------------

def pinned_request(url: str, settings: Settings,
                   resolver: Resolver = resolve) -> tuple[str, dict[str, str], dict]:
    """The URL to connect to (the host replaced by the address just checked), the ``Host``
    header and the request extensions (the TLS server name stays the URL's host)."""
    parts, addresses = checked_addresses(url, settings, resolver)
    address = addresses[0]
    literal = f"[{address}]" if ":" in address else address
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    host_header = parts.netloc.rpartition("@")[2]
    extensions = {"sni_hostname": parts.hostname} if parts.scheme == "https" else {}
    return urlunsplit(parts._replace(netloc=netloc)), {"Host": host_header}, extensions


class WebhookSender:
    """A web process's background task: events enqueued, claimed, sent, recorded."""

    def __init__(self, settings: Settings, sessions: Sessions, resolver: Resolver = resolve):
        self._settings = settings
        self._sessions = sessions
        self._resolver = resolver

    async def run(self) -> None:
        """Every :data:`POLL_S` until cancelled: one round."""
        import httpx
        from anyio import to_thread

        async with httpx.AsyncClient(timeout=self._settings.webhook_timeout_s,
                                     follow_redirects=False, trust_env=False) as client:
            while True:
                try:
                    due = await to_thread.run_sync(self._claim)
                    if due:
                        await asyncio.gather(*(self._deliver(client, item) for item in due))
                except Exception:  # a database hiccup: the next round tries again
                    logger.exception("webhook round failed; retrying")
                await asyncio.sleep(POLL_S)

    def _claim(self) -> list[Due]:
        # looked at in a read first: an idle service takes no write lock (SQLite's is one
        # for the whole database, shared with the workers)
        with self._sessions.read() as session:
            unwritten, due = work_waiting(session)
        if unwritten:
            with self._sessions.write() as session:
                enqueue_finished_jobs(session)
        if not (due or unwritten):
            return []
        with self._sessions.write() as session:
            return claim_due(session, self._settings.webhook_timeout_s + LEASE_MARGIN_S)

    def _record(self, due: Due, status_code: int | None, error: str | None,
                duration: float) -> str | None:
        with self._sessions.write() as session:
            return record_attempt(session, due, status_code, error, duration, self._settings)

    async def _deliver(self, client, due: Due) -> None:
        from anyio import to_thread

        body = json.dumps(due.payload, separators=(",", ":")).encode()
        started = time.perf_counter()
        status_code, error = None, None
        try:
            url, headers, extensions = await to_thread.run_sync(
                pinned_request, due.url, self._settings, self._resolver)
            response = await client.post(url, content=body, extensions=extensions, headers={
                **headers, "Content-Type": "application/json", "User-Agent": "svmsvc-webhook",
                EVENT_HEADER: EVENT_TYPE, DELIVERY_HEADER: str(due.event_id),
                SIGNATURE_HEADER: signature_header(due.secret, body)})
            status_code = response.status_code
            if not 200 <= status_code < 300:
                error = f"the receiver answered {status_code}"
        except InvalidCallback as exc:
            error = exc.detail
        except Exception as exc:  # refused, reset, timed out, TLS: recorded, retried
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        duration = time.perf_counter() - started
        state = await to_thread.run_sync(self._record, due, status_code, error, duration)
        logger.info("webhook of job %s attempt %d -> %s (%s)", due.job_id, due.attempt,
                    status_code if error is None else error, state or "lost")
