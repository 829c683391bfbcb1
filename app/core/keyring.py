"""API keys created through ``/api/v1/api-keys``, next to the configured ones.

The configured keys (``SVMSVC_API_KEYS`` / ``SVMSVC_API_KEYS_FILE``,
:class:`~app.core.security.ApiKeys`) are read once at start; the keys an admin creates live
in the ``api_keys`` table, and :class:`KeyRing` answers for both.

**Stored hashed.**  A created key's secret is ``svmsvc_`` and 43 characters of
:func:`secrets.token_urlsafe` (256 random bits); the service keeps only its SHA-256 digest
and shows the secret once, in the creation's answer.  A slow password hash (bcrypt, scrypt,
Argon2) defends *low-entropy* secrets against guessing from a stolen digest; against 2^256
candidates one SHA-256 per guess is already out of reach, while bcrypt would cost some
100 ms of CPU on every request (and a per-key salt would forbid finding the key by its
digest).  Presented keys are compared with :func:`hmac.compare_digest` against every known
digest, without an early exit (as the configured keys are).

**Effective at once in every web process.**  Each process keeps a snapshot of the table
(every row: digest, scope, owner, expiry, revocation) and re-reads it when it is older than
``SVMSVC_API_KEY_CACHE_S`` (1 s by default): one small query a second per process, whatever
the request rate and whatever keys are presented (an unknown key costs no query).  So a key
revoked (or created) through one process is refused (or accepted) by every other within that
time, and by the process that revoked it at once (it drops its snapshot).  With the setting
at 0 every request reads the table.  When the table cannot be read the last snapshot stays
in use (a warning is logged): a key can neither be created nor revoked while the database is
down, and expiries are checked against the clock at each request.

**Keys turn the service on.**  A service with no configured key is open; once a key has
been created through the API (revoked or not: rows are never deleted), every request needs
a key.  Expired and revoked keys are refused with a 401 saying so.  Secrets are never logged
(nor are digests).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from app.core.principals import Principal, Scope
from app.db.models import ApiKey, utcnow

logger = logging.getLogger("svmsvc.keys")

SECRET_PREFIX = "svmsvc_"
"""Created secrets start with this (so that a leaked one is recognisable, e.g. by secret
scanners)."""


def new_secret() -> str:
    """A fresh secret: :data:`SECRET_PREFIX` and 256 random bits, URL-safe base64."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class StoredKey:
    """What a process keeps of one row of ``api_keys``."""

    id: uuid.UUID
    name: str
    scope: Scope
    owner: str
    expires_at: datetime | None
    revoked_at: datetime | None


class KeyRing:
    """The configured keys (``static``, an :class:`~app.core.security.ApiKeys`) and the
    table's, with the interface of the former: :attr:`enabled`, :meth:`principal_of`,
    :meth:`refusal`.  ``sessions`` is attached once the database is open
    (:meth:`attach`); until then only the configured keys count."""

    def __init__(self, static, cache_s: float = 1.0):
        self.static = static
        self.cache_s = cache_s
        self._sessions = None
        self._stored: dict[str, StoredKey] = {}
        self._loaded_at: float | None = None  # time.monotonic() of the snapshot
        self._any_stored = False  # once true, stays true: rows are never deleted
        self._lock = threading.Lock()

    def attach(self, sessions) -> None:
        """Read the table through ``sessions`` from now on."""
        self._sessions = sessions
        self.invalidate()

    def invalidate(self) -> None:
        """Drop the snapshot: the next request reads the table (after a create or revoke)."""
        self._loaded_at = None

    def _snapshot(self) -> dict[str, StoredKey]:
        if self._sessions is None:
            return self._stored
        loaded_at = self._loaded_at
        if loaded_at is not None and time.monotonic() - loaded_at < self.cache_s:
            return self._stored
        with self._lock:
            if self._loaded_at is not None and time.monotonic() - self._loaded_at < self.cache_s:
                return self._stored
            try:
                with self._sessions.read() as session:
                    rows = session.execute(select(
                        ApiKey.digest, ApiKey.id, ApiKey.name, ApiKey.scope, ApiKey.owner,
                        ApiKey.expires_at, ApiKey.revoked_at)).all()
            except SQLAlchemyError as exc:
                logger.warning("cannot read the API keys table (%s); the last snapshot stays "
                               "in use", type(exc).__name__)
                return self._stored
            self._stored = {row.digest: StoredKey(row.id, row.name, Scope[row.scope],
                                                  row.owner, row.expires_at, row.revoked_at)
                            for row in rows}
            self._any_stored = self._any_stored or bool(rows)
            self._loaded_at = time.monotonic()
            return self._stored

    @property
    def enabled(self) -> bool:
        """Whether any key is configured or was ever created (otherwise the service is
        open)."""
        if self.static.enabled:
            return True
        if not self._any_stored:
            self._snapshot()
        return self._any_stored

    def __len__(self) -> int:
        return len(self.static) + sum(1 for key in self._snapshot().values()
                                      if key.revoked_at is None)

    def _stored_match(self, key: str) -> StoredKey | None:
        presented = hashlib.sha256(key.encode()).hexdigest()
        found = None
        for digest, stored in self._snapshot().items():  # no early exit
            if hmac.compare_digest(digest, presented):
                found = stored
        return found

    def principal_of(self, key: str | None) -> Principal | None:
        """The principal of a presented key (configured, or created and neither revoked nor
        expired); None when it is missing or not valid."""
        if not key:
            return None
        principal = self.static.principal_of(key)
        if principal is not None:
            return principal
        stored = self._stored_match(key)
        if stored is None or stored.revoked_at is not None or (
                stored.expires_at is not None and stored.expires_at <= utcnow()):
            return None
        return Principal(owner=stored.owner, scope=stored.scope)

    def refusal(self, key: str) -> str:
        """Why a presented key that :meth:`principal_of` refused is refused."""
        stored = self._stored_match(key)
        if stored is None:
            return "unknown API key"
        if stored.revoked_at is not None:
            return (f"API key {stored.id} ({stored.name}) was revoked at "
                    f"{stored.revoked_at.isoformat(timespec='seconds')}")
        return (f"API key {stored.id} ({stored.name}) expired at "
                f"{stored.expires_at.isoformat(timespec='seconds')}")
