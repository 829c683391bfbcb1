"""One router per resource."""

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, status

from app.api import API_PREFIX
from app.api.errors import responses
from app.api.security import ADMIN, READ


def resource_router(resource: str, tag: str | None = None) -> APIRouter:
    """The router of ``/api/v1/RESOURCE``: every route needs the read scope at least and may
    answer 401, 403 (the key) and 503 (the database busy); ``tag``: its section of the
    OpenAPI document (default the resource)."""
    return APIRouter(prefix=f"{API_PREFIX}/{resource}", tags=[tag or resource],
                     dependencies=[READ], responses=responses(401, 403, 503))


def item_get(router: APIRouter, path: str, model: type) -> Callable[[Any], Any]:
    """The route (``name="get"``) that answers one item of the resource as ``model``, or 404
    (not found, or another owner's) and 422 (an id that is not a UUID)."""
    return router.get(path, name="get", response_model=model, responses=responses(404, 422))


def item_delete(router: APIRouter, path: str, *errors: int) -> Callable[[Any], Any]:
    """The route (``name="delete"``) that deletes one item of the resource: the admin scope's,
    answered 204 No Content; 404 and 422 as :func:`item_get`, and ``errors`` (409: refused
    while something uses it)."""
    return router.delete(path, name="delete", status_code=status.HTTP_204_NO_CONTENT,
                         dependencies=[ADMIN], responses=responses(*sorted({404, 422, *errors})))
