"""The API keys on the routes: the security schemes of the OpenAPI spec and the dependencies
that read a request's key and check its scope (the keys themselves, and the rules, are
:mod:`app.core.security`'s)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from app.core.principals import Principal, Scope
from app.core.security import API_KEY_HEADER, authorize, check_scope

_api_key = APIKeyHeader(
    name=API_KEY_HEADER, scheme_name="ApiKey", auto_error=False,
    description="An API key of scope read (GETs, predictions), train (uploads, jobs) or admin "
                "(deletions); configured with SVMSVC_API_KEYS or SVMSVC_API_KEYS_FILE.")

_bearer = HTTPBearer(
    scheme_name="Bearer", auto_error=False,
    description="The same API key as a bearer token: Authorization: Bearer <key>.")


async def current_principal(
        request: Request, key: Annotated[str | None, Security(_api_key)],
        bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)]) -> Principal:
    """The request's principal (401 for a missing or unknown key); computed once a request
    (FastAPI caches a dependency's value), however many dependencies ask for it."""
    # async: a few microseconds of hashing, not worth a hop to the thread pool
    if not key and bearer is not None:
        key = bearer.credentials
    return authorize(request.app.state.api_keys, key, Scope.read)


PrincipalDep = Annotated[Principal, Depends(current_principal)]
"""Who the request acts for (:data:`OPEN` when the service has no keys)."""


def require(needed: Scope):
    """A dependency (use with ``Security``) that lets through keys of scope ``needed`` or
    higher (403 otherwise); it returns the request's principal."""

    async def check(principal: PrincipalDep) -> Principal:
        return check_scope(principal, needed)

    check.__name__ = f"require_{needed.name}"
    return check


READ = Security(require(Scope.read))
TRAIN = Security(require(Scope.train))
ADMIN = Security(require(Scope.admin))
