"""``/usage``: what the caller's owner stores (datasets, models) and has queued or running,
against each limit (the storage quotas of :mod:`app.quotas`, the queue quota)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from app.api.deps import SessionDep, SettingsDep
from app.api.errors import responses
from app.api.routes import resource_router
from app.api.security import PrincipalDep
from app.errors import Forbidden
from app.quotas import usage
from app.schemas import UsagePublic

router = resource_router("usage")


@router.get("", name="get", response_model=UsagePublic, responses=responses(422))
def get_usage(
    session: SessionDep,
    settings: SettingsDep,
    principal: PrincipalDep,
    owner: Annotated[str | None, Query(
        max_length=64, description="An admin key's: the owner to answer for (default: the "
                                   "key's own owner).  Another key's: its own owner only "
                                   "(403 otherwise).")] = None,
) -> UsagePublic:
    """The bytes and counts of the caller's owner's datasets and models, and its queued and
    running jobs, each against its limit (``limit_bytes`` null: no quota) and the setting
    that sets it.  An admin may ask for any owner (``owner=``; the open service's one owner
    is the empty name)."""
    if owner is not None and owner != principal.owner and not principal.sees_all:
        raise Forbidden("owner: only an admin key may ask for another owner's usage")
    return UsagePublic.model_validate(
        usage(session, principal.owner if owner is None else owner, settings))
