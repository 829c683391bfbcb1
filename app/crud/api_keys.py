"""API keys created through ``/api/v1/api-keys``: create (the secret returned once, its
digest stored), list, revoke (:mod:`app.core.keyring` explains the choices)."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.keyring import new_secret
from app.core.principals import Principal, own_owner
from app.core.security import key_digest
from app.crud.pages import page
from app.db.models import ApiKey, utcnow
from app.errors import InvalidRequest, NotFound


def create(session: Session, body, principal: Principal) -> tuple[ApiKey, str]:
    """A new key of an ``ApiKeyCreate`` and its secret (returned this once): 422 for an
    expiry in the past."""
    now = utcnow()
    if body.expires_at is not None:
        if body.expires_at.tzinfo is None:
            raise InvalidRequest("expires_at: give a time zone (e.g. 2027-01-31T00:00:00Z)")
        if body.expires_at <= now:
            raise InvalidRequest(f"expires_at: {body.expires_at.isoformat()} is not in the "
                                 f"future")
    secret = new_secret()
    digest = key_digest(secret)
    row = ApiKey(name=body.name, digest=digest, scope=body.scope,
                 owner=body.owner if body.owner is not None else own_owner(digest),
                 created_by=principal.owner, created_at=now, expires_at=body.expires_at)
    session.add(row)
    session.commit()
    return row, secret


def list_page(session: Session, offset: int, limit: int) -> tuple[list[ApiKey], int]:
    """The keys created through the API, newest first (revoked ones too)."""
    return page(session, select(ApiKey), (ApiKey.created_at.desc(), ApiKey.id), offset, limit)


def revoke(session: Session, key_id: uuid.UUID) -> ApiKey:
    """Revoke a key (again: nothing changes); :class:`NotFound` if there is none."""
    row = session.get(ApiKey, key_id)
    if row is None:
        raise NotFound(f"API key {key_id} not found (keys configured by SVMSVC_API_KEYS or "
                       f"its file are revoked there)")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        session.commit()
    return row
