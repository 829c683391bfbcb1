"""One router per resource."""

from fastapi import APIRouter

from app.api import API_PREFIX
from app.api.errors import responses
from app.core.security import READ


def resource_router(resource: str, tag: str | None = None) -> APIRouter:
    """The router of ``/api/v1/RESOURCE``: every route needs the read scope at least and may
    answer 401, 403 (the key) and 503 (the database busy); ``tag``: its section of the
    OpenAPI document (default the resource)."""
    return APIRouter(prefix=f"{API_PREFIX}/{resource}", tags=[tag or resource],
                     dependencies=[READ], responses=responses(401, 403, 503))
