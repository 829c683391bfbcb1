"""Trained models: list, get, delete, their stored archives."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.crud.pages import page
from app.db.models import TrainedModel
from app.db.session import Sessions
from app.errors import NotFound


def list_page(session: Session, dataset_id: uuid.UUID | None, solver: str | None,
              offset: int, limit: int) -> tuple[list[TrainedModel], int]:
    """Models, newest first, optionally only those of one dataset or solver."""
    query = select(TrainedModel)
    if dataset_id is not None:
        query = query.where(TrainedModel.dataset_id == dataset_id)
    if solver is not None:
        query = query.where(TrainedModel.solver == solver)
    return page(session, query, (TrainedModel.created_at.desc(), TrainedModel.id), offset,
                limit)


def artifact(sessions: Sessions, model_id: uuid.UUID) -> bytes | None:
    """The model's ``.npz`` archive (None if there is no such model)."""
    with sessions.read() as session:
        return session.scalar(select(TrainedModel.artifact).where(TrainedModel.id == model_id))


def delete(session: Session, model_id: uuid.UUID) -> None:
    """Delete a model (its job stays, without a model); :class:`NotFound` if there is none."""
    model = session.get(TrainedModel, model_id)
    if model is None:
        raise NotFound(f"model {model_id} not found")
    session.delete(model)
    session.commit()
