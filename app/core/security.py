"""API keys: who may call what, and whose things they see.

Keys come from ``SVMSVC_API_KEYS`` (comma-separated entries) and/or the file named by
``SVMSVC_API_KEYS_FILE``, and from an admin's ``POST /api/v1/api-keys`` (those are
:mod:`app.core.keyring`'s) (one entry a line; blank lines and ``#`` comments are skipped).  An
entry is ``scope:owner:key`` (a key of the named owner: several keys, of any scopes, can share
one owner) or ``scope:key`` (a key that is an owner of its own); in either, the key can be
given as ``sha256:<hex digest of the key>`` so that the file need not hold the key itself.
An owner's name is 1-64 letters, digits and ``_ . @ -``, starting with a letter or digit; a
key that contains a colon needs the ``scope:owner:key`` form.  Only SHA-256 digests of the
keys are kept in memory.

**Tenants.** Every dataset, job and model belongs to the owner of the key that created it:
other owners get a 404 for it and do not see it in listings; a key of scope ``admin`` sees and
may act on everything.  The stored owner is the owner's name, or for a key that is its own
owner ``key:`` and 16 hex digits of a salted digest of the key (:func:`own_owner`), never the
key's bare hash.  With no key configured (one user on 127.0.0.1) there are no owners: things
are stored with the empty owner ``""``, and when keys are turned on later only admins see
them.  A request sends its key in the
``X-API-Key`` header or as a bearer token, ``Authorization: Bearer <key>`` (both are declared in
the OpenAPI spec, so a generated client's ``AuthenticatedClient(token=key)`` works as it is);
when both come, ``X-API-Key`` is the one checked.  This module knows no web framework: the
routes' dependencies that read the key from a request are :mod:`app.api.security`'s.

Scopes are ordered: ``read`` (GETs, predictions, evaluations) < ``train`` (uploads, jobs,
cancellations) < ``admin`` (deletions); a key of a scope may do everything the lower scopes
may.  A missing or unknown key is a 401, a key whose scope is too low a 403.  With no key
configured the service is open (every request allowed), and says so at start-up.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path

from app.core.principals import OPEN, Principal, Scope, own_owner
from app.errors import Forbidden, Unauthenticated

API_KEY_HEADER = "X-API-Key"

_HASHED = re.compile(r"sha256:([0-9a-fA-F]{64})")
_OWNER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")


class KeyConfigError(ValueError):
    """The configured keys cannot be read (the service refuses to start)."""


def key_digest(key: str) -> str:
    """The SHA-256 hex digest under which a key is kept."""
    return hashlib.sha256(key.encode()).hexdigest()


def _parse_entry(text: str, where: str) -> tuple[str, Scope, str | None]:
    """(key digest, scope, owner name or None for a key of its own) of one entry."""
    scope_name, colon, rest = text.strip().partition(":")
    if not colon or not rest.strip():
        raise KeyConfigError(f"{where}: expected scope:key or scope:owner:key, got "
                             f"{text.strip()[:20]!r}...")
    try:
        scope = Scope[scope_name.strip()]
    except KeyError:
        raise KeyConfigError(f"{where}: unknown scope {scope_name.strip()!r} "
                             f"(read, train or admin)") from None
    rest = rest.strip()
    owner: str | None = None
    if not _HASHED.fullmatch(rest):
        first, colon, second = rest.partition(":")
        if colon:
            if not _OWNER_NAME.fullmatch(first):
                raise KeyConfigError(
                    f"{where}: owner {first[:20]!r} is not a name of 1-64 letters, digits and "
                    f"_ . @ - starting with a letter or digit")
            if not second:
                raise KeyConfigError(f"{where}: owner {first!r} has an empty key")
            owner, rest = first, second
    hashed = _HASHED.fullmatch(rest)
    return (hashed.group(1).lower() if hashed else key_digest(rest)), scope, owner


class ApiKeys:
    """The configured keys, as digest -> (scope, stored owner)."""

    def __init__(self, keys: dict[str, tuple[Scope, str]]):
        self._keys = keys

    @classmethod
    def from_settings(cls, settings) -> ApiKeys:
        entries: list[tuple[str, str]] = []
        if settings.api_keys:
            entries += [(pair, f"SVMSVC_API_KEYS entry {number}") for number, pair
                        in enumerate(settings.api_keys.split(","), start=1) if pair.strip()]
        if settings.api_keys_file is not None:
            path = Path(settings.api_keys_file)
            try:
                lines = path.read_text().splitlines()
            except OSError as exc:
                raise KeyConfigError(f"SVMSVC_API_KEYS_FILE: cannot read {path}: {exc}") from None
            entries += [(line, f"{path} line {number}") for number, line
                        in enumerate(lines, start=1)
                        if line.strip() and not line.lstrip().startswith("#")]
        keys: dict[str, tuple[Scope, str]] = {}
        for text, where in entries:
            digest, scope, name = _parse_entry(text, where)
            owner = own_owner(digest) if name is None else name
            if digest in keys:
                known_scope, known_owner = keys[digest]
                if known_owner != owner:
                    raise KeyConfigError(f"{where}: this key is configured for two owners "
                                         f"({known_owner!r} and {owner!r})")
                scope = max(scope, known_scope)
            keys[digest] = (scope, owner)
        return cls(keys)

    @property
    def enabled(self) -> bool:
        """Whether any key is configured (otherwise the service is open)."""
        return bool(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def principal_of(self, key: str | None) -> Principal | None:
        """The principal of a presented key; None when it is missing or unknown."""
        if not key:
            return None
        presented = key_digest(key)
        found = None
        for digest, entry in self._keys.items():  # no early exit: the same work for any key
            if hmac.compare_digest(digest, presented):
                found = entry
        if found is None:
            return None
        scope, owner = found
        return Principal(owner=owner, scope=scope)

    def refusal(self, key: str) -> str:
        """Why a presented key that :meth:`principal_of` refused is refused."""
        return "unknown API key"


def check_scope(principal: Principal, needed: Scope) -> Principal:
    """``principal`` if its scope allows what needs ``needed``; 403 otherwise."""
    if principal.scope < needed:
        raise Forbidden(f"this API key has scope {principal.scope.name}; this needs "
                        f"{needed.name}")
    return principal


def authorize(keys, key: str | None, needed: Scope) -> Principal:
    """The key's principal if it may do what needs ``needed``; raises 401 / 403 otherwise.
    ``keys``: an :class:`ApiKeys` or the :class:`~app.core.keyring.KeyRing` of a service.

    Returns :data:`OPEN` when no key is configured.
    """
    if not keys.enabled:
        return OPEN
    principal = keys.principal_of(key)
    if principal is None:
        message = (f"missing API key: send it in the {API_KEY_HEADER} header or as "
                   f"Authorization: Bearer <key>" if not key else keys.refusal(key))
        raise Unauthenticated(message)
    return check_scope(principal, needed)


def sees_every_tenant(keys, key: str | None) -> bool:
    """Whether a caller presenting ``key`` (None: none) may see what belongs to tenants --
    job ids, owners' names -- on a route that answers without a key (``/readyz``, a public
    ``/metrics``): an admin key, or anyone on a service without keys (one user, an admin)."""
    if not keys.enabled:
        return True
    principal = keys.principal_of(key) if key else None
    return principal is not None and principal.sees_all


def presented_key(headers) -> str | None:
    """The key a request presents: its X-API-Key header, else its bearer token (for routes
    outside the dependency system, such as /metrics)."""
    key = headers.get(API_KEY_HEADER)
    if key:
        return key
    scheme, _, token = (headers.get("Authorization") or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
