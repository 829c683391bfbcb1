"""API keys: who may call what.

Keys come from ``SVMSVC_API_KEYS`` (comma-separated ``scope:key`` pairs) and/or the file named
by ``SVMSVC_API_KEYS_FILE`` (one ``scope:key`` pair a line, or ``scope:sha256:<hex digest of
the key>`` so that the file need not hold the key itself; blank lines and ``#`` comments are
skipped).  Only SHA-256 digests of the keys are kept in memory.  A request sends its key in the
``X-API-Key`` header or as a bearer token, ``Authorization: Bearer <key>`` (both are declared in
the OpenAPI spec, so a generated client's ``AuthenticatedClient(token=key)`` works as it is);
when both come, ``X-API-Key`` is the one checked.

Scopes are ordered: ``read`` (GETs, predictions, evaluations) < ``train`` (uploads, jobs,
cancellations) < ``admin`` (deletions); a key of a scope may do everything the lower scopes
may.  A missing or unknown key is a 401, a key whose scope is too low a 403.  With no key
configured the service is open (every request allowed), and says so at start-up.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import re
from pathlib import Path
from typing import Annotated

from fastapi import Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from app.errors import Forbidden, Unauthenticated

API_KEY_HEADER = "X-API-Key"

_api_key = APIKeyHeader(
    name=API_KEY_HEADER, scheme_name="ApiKey", auto_error=False,
    description="An API key of scope read (GETs, predictions), train (uploads, jobs) or admin "
                "(deletions); configured with SVMSVC_API_KEYS or SVMSVC_API_KEYS_FILE.")

_bearer = HTTPBearer(
    scheme_name="Bearer", auto_error=False,
    description="The same API key as a bearer token: Authorization: Bearer <key>.")

_HASHED = re.compile(r"sha256:([0-9a-fA-F]{64})")


class Scope(enum.IntEnum):
    """What a key may do; a higher scope includes the lower ones."""

    read = 1
    train = 2
    admin = 3


class KeyConfigError(ValueError):
    """The configured keys cannot be read (the service refuses to start)."""


def key_digest(key: str) -> str:
    """The SHA-256 hex digest under which a key is kept."""
    return hashlib.sha256(key.encode()).hexdigest()


def _parse_pair(text: str, where: str) -> tuple[str, Scope]:
    scope_name, colon, secret = text.strip().partition(":")
    if not colon or not secret:
        raise KeyConfigError(f"{where}: expected scope:key, got {text.strip()[:20]!r}...")
    try:
        scope = Scope[scope_name.strip()]
    except KeyError:
        raise KeyConfigError(f"{where}: unknown scope {scope_name.strip()!r} "
                             f"(read, train or admin)") from None
    hashed = _HASHED.fullmatch(secret.strip())
    return (hashed.group(1).lower() if hashed else key_digest(secret.strip())), scope


class ApiKeys:
    """The configured keys, as digest -> scope."""

    def __init__(self, scopes: dict[str, Scope]):
        self._scopes = scopes

    @classmethod
    def from_settings(cls, settings) -> ApiKeys:
        scopes: dict[str, Scope] = {}
        if settings.api_keys:
            for number, pair in enumerate(settings.api_keys.split(","), start=1):
                if pair.strip():
                    digest, scope = _parse_pair(pair, f"SVMSVC_API_KEYS pair {number}")
                    scopes[digest] = max(scope, scopes.get(digest, scope))
        if settings.api_keys_file is not None:
            path = Path(settings.api_keys_file)
            try:
                lines = path.read_text().splitlines()
            except OSError as exc:
                raise KeyConfigError(f"SVMSVC_API_KEYS_FILE: cannot read {path}: {exc}") from None
            for number, line in enumerate(lines, start=1):
                if line.strip() and not line.lstrip().startswith("#"):
                    digest, scope = _parse_pair(line, f"{path} line {number}")
                    scopes[digest] = max(scope, scopes.get(digest, scope))
        return cls(scopes)

    @property
    def enabled(self) -> bool:
        """Whether any key is configured (otherwise the service is open)."""
        return bool(self._scopes)

    def __len__(self) -> int:
        return len(self._scopes)

    def scope_of(self, key: str | None) -> Scope | None:
        """The scope of a presented key; None when it is missing or unknown."""
        if not key:
            return None
        presented = key_digest(key)
        found = None
        for digest, scope in self._scopes.items():  # no early exit: the same work for any key
            if hmac.compare_digest(digest, presented):
                found = scope
        return found


def authorize(keys: ApiKeys, key: str | None, needed: Scope) -> Scope | None:
    """The key's scope if it may do what needs ``needed``; raises 401 / 403 otherwise.

    Returns None (allowed) when no key is configured.
    """
    if not keys.enabled:
        return None
    scope = keys.scope_of(key)
    if scope is None:
        message = (f"missing API key: send it in the {API_KEY_HEADER} header or as "
                   f"Authorization: Bearer <key>" if not key else "unknown API key")
        raise Unauthenticated(message)
    if scope < needed:
        raise Forbidden(f"this API key has scope {scope.name}; this needs {needed.name}")
    return scope


def presented_key(headers) -> str | None:
    """The key a request presents: its X-API-Key header, else its bearer token (for routes
    outside the dependency system, such as /metrics)."""
    key = headers.get(API_KEY_HEADER)
    if key:
        return key
    scheme, _, token = (headers.get("Authorization") or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def require(needed: Scope):
    """A dependency (use with ``Security``) that lets through keys of scope ``needed`` or
    higher; it returns the key's digest (None when the service is open), for quotas."""

    async def check(request: Request, key: Annotated[str | None, Security(_api_key)],
                    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)]
                    ) -> str | None:
        # async: a few microseconds of hashing, not worth a hop to the thread pool
        keys: ApiKeys = request.app.state.api_keys
        if not key and bearer is not None:
            key = bearer.credentials
        authorize(keys, key, needed)
        return key_digest(key) if keys.enabled else None

    check.__name__ = f"require_{needed.name}"
    return check


_require_read = require(Scope.read)
_require_train = require(Scope.train)
READ = Security(_require_read)
TRAIN = Security(_require_train)
ADMIN = Security(require(Scope.admin))
ReadKey = Annotated[str | None, Security(_require_read)]
"""The digest of a read-scope key (None when the service is open), for per-key caps."""
TrainKey = Annotated[str | None, Security(_require_train)]
"""The digest of a train-scope key (None when the service is open), for per-key quotas."""
