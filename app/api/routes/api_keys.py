"""``/api-keys``: API keys managed by admins: create (the secret answered once), list
(without secrets), revoke.  Every route needs the admin scope.  See :mod:`app.core.keyring`
for how they are stored and how every web process learns of a change."""

from __future__ import annotations

import uuid

from fastapi import Request, Response, status

from app.api import API_PREFIX
from app.api.deps import LimitQuery, OffsetQuery, SessionDep, WriteSessionDep
from app.api.errors import responses
from app.api.pages import bounded_page
from app.api.routes import resource_router
from app.api.security import ADMIN, PrincipalDep
from app.crud import api_keys as crud_api_keys
from app.db.models import ApiKey, utcnow
from app.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyPublic, ApiKeysPublic

router = resource_router("api-keys")


def _public(row: ApiKey, model: type[ApiKeyPublic] = ApiKeyPublic, **extra) -> ApiKeyPublic:
    active = row.revoked_at is None and (row.expires_at is None or row.expires_at > utcnow())
    return model(id=row.id, name=row.name, scope=row.scope, owner=row.owner,
                 created_by=row.created_by, created_at=row.created_at,
                 expires_at=row.expires_at, revoked_at=row.revoked_at, active=active, **extra)


@router.post("", name="create", status_code=status.HTTP_201_CREATED, dependencies=[ADMIN],
             response_model=ApiKeyCreated, responses=responses(422))
def create_api_key(body: ApiKeyCreate, session: WriteSessionDep,
                   principal: PrincipalDep, request: Request,
                   response: Response) -> ApiKeyCreated:
    """Create a key of a scope for a tenant (``owner``; none: the key is its own owner),
    optionally expiring: the answer holds its ``secret``, shown this once (only its SHA-256
    digest is stored).  Every web process accepts it within SVMSVC_API_KEY_CACHE_S.  On a
    service without keys, the first key created closes it: every request then needs a key.
    """
    row, secret = crud_api_keys.create(session, body, principal)
    request.app.state.api_keys.invalidate()
    response.headers["Location"] = f"{API_PREFIX}/api-keys/{row.id}"
    return _public(row, ApiKeyCreated, secret=secret)


@router.get("", name="list", dependencies=[ADMIN], response_model=ApiKeysPublic,
            responses=responses(422))
def list_api_keys(request: Request, session: SessionDep, offset: OffsetQuery = 0,
                  limit: LimitQuery = 100) -> ApiKeysPublic:
    """The keys created through the API, newest first, revoked and expired ones included;
    never their secrets (keys configured by SVMSVC_API_KEYS or its file are not listed)."""
    rows, count = crud_api_keys.list_page(session, offset, limit)
    return ApiKeysPublic(**bounded_page(request, [_public(row) for row in rows], count, offset))


@router.delete("/{key_id}", name="delete", status_code=status.HTTP_204_NO_CONTENT,
               dependencies=[ADMIN], responses=responses(404, 422))
def revoke_api_key(key_id: uuid.UUID, session: WriteSessionDep, request: Request) -> None:
    """Revoke a key: refused (401) at once by this web process, by every other within
    SVMSVC_API_KEY_CACHE_S.  Its row stays (listed as revoked)."""
    crud_api_keys.revoke(session, key_id)
    request.app.state.api_keys.invalidate()

