"""Trained models: list, get, delete, their stored archives."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.principals import Principal
from app.crud.pages import owned, page, visible
from app.crud.registry import lock_name, refuse_if_aliased
from app.db.models import TrainedModel
from app.db.session import Sessions
from app.tags import merged, where_tagged


def list_page(session: Session, principal: Principal, dataset_id: uuid.UUID | None,
              solver: str | None, offset: int, limit: int,
              tags: list[tuple[str, str]] | None = None) -> tuple[list[TrainedModel], int]:
    """The models ``principal`` sees, newest first, optionally only those of one dataset or
    solver, or with every tag of ``tags``."""
    query = where_tagged(visible(select(TrainedModel), TrainedModel, principal),
                         TrainedModel.tags, tags or [])
    if dataset_id is not None:
        query = query.where(TrainedModel.dataset_id == dataset_id)
    if solver is not None:
        query = query.where(TrainedModel.solver == solver)
    return page(session, query, (TrainedModel.created_at.desc(), TrainedModel.id), offset,
                limit)


def artifact(sessions: Sessions, model_id: uuid.UUID,
             principal: Principal) -> tuple[bytes, str] | None:
    """The model's ``.npz`` archive and its owner, or None if there is no such model for
    ``principal``: the ownership is part of the query, so another owner's archive is never
    read (nor loaded, nor cached) before the 404."""
    with sessions.read() as session:
        query = visible(select(TrainedModel.artifact, TrainedModel.owner)
                        .where(TrainedModel.id == model_id), TrainedModel, principal)
        row = session.execute(query).first()
        return None if row is None else (row.artifact, row.owner)


def get(session: Session, model_id: uuid.UUID, principal: Principal) -> TrainedModel:
    """The model, if ``principal`` sees it (:class:`NotFound` otherwise)."""
    return owned(session, TrainedModel, model_id, "model", principal)


def delete(session: Session, model_id: uuid.UUID, principal: Principal) -> None:
    """Delete a model (its job stays, without a model; its registry version goes with it);
    :class:`NotFound` if there is none for ``principal``, :class:`Conflict` while a registry
    alias points at its version."""
    model = get(session, model_id, principal)
    if model.version is not None:  # a registered version goes with its model, unless aliased
        version = model.version
        lock_name(session, Principal(version.owner, principal.scope), version.name)
        refuse_if_aliased(session, version.owner, version.name, version.version)
    session.delete(model)
    session.commit()


def set_tags(session: Session, model_id: uuid.UUID, patch: dict[str, str | None],
             principal: Principal) -> TrainedModel:
    """Merge ``patch`` into the model's tags (:func:`app.tags.merged`)."""
    model = get(session, model_id, principal)
    model.tags = merged(model.tags, patch)
    session.commit()
    return model
