"""Principals: who a request acts for, and whose datasets, jobs and models it sees.

The rules of tenancy, free of the web framework so that the query layer can apply them (the
keys themselves, and how a request presents one, are :mod:`app.core.security`'s).
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass

NO_OWNER = ""
"""The owner of what is created while the service is open (no keys configured)."""

OWNER_SALT = b"svmsvc owner v1\0"
"""Salt of :func:`own_owner`: the stored owner of an unnamed key is not the key's bare
SHA-256 (which anyone holding a guess of the key could match against a database dump without
knowing it is a key of this service), and not the digest that authenticates it."""


class Scope(enum.IntEnum):
    """What a key may do; a higher scope includes the lower ones."""

    read = 1
    train = 2
    admin = 3


def own_owner(digest: str) -> str:
    """The stored owner of a key that is an owner of its own, from the key's SHA-256 hex
    digest: ``key:`` and 16 hex digits of the salted digest (a name cannot contain ``:``, so
    it never equals a named owner)."""
    return "key:" + hashlib.sha256(OWNER_SALT + bytes.fromhex(digest)).hexdigest()[:16]


@dataclass(frozen=True)
class Principal:
    """Who a request acts for: the owner whose things it sees and creates, and the key's
    scope.  ``OPEN`` is every request of a service without keys."""

    owner: str
    scope: Scope

    @property
    def sees_all(self) -> bool:
        """An admin key (and an open service, whose requests are admins) sees every owner's."""
        return self.scope is Scope.admin

    def may_see(self, owner: str | None) -> bool:
        """Whether a row of ``owner`` exists for this principal (otherwise: 404)."""
        return self.sees_all or owner == self.owner


OPEN = Principal(owner=NO_OWNER, scope=Scope.admin)
