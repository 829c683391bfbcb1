"""Stored evaluations: each ``POST /models/{id}/evaluate`` is kept (the model, the dataset,
when, by whom, the metrics) and listed by ``GET /models/{id}/evaluations``."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.principals import Principal
from app.crud.models import get as get_model
from app.crud.pages import page
from app.db.models import Dataset, Evaluation, TrainedModel
from app.db.session import Sessions
from app.errors import InvalidRequest


def store(sessions: Sessions, model_id: uuid.UUID, dataset_id: uuid.UUID,
          metrics: dict[str, Any], principal: Principal) -> Evaluation:
    """Keep an evaluation (``metrics``: ``EvaluationPublic``'s fields as JSON) of the model on
    the dataset, made by ``principal``; it belongs to the model's owner.  A model or dataset
    deleted since it was computed: :class:`~app.errors.NotFound` /
    :class:`~app.errors.InvalidRequest`, as if it had been gone before."""
    with sessions.write() as session:
        model = get_model(session, model_id, principal)
        name = session.scalar(select(Dataset.name).where(Dataset.id == dataset_id))
        if name is None:
            raise InvalidRequest(f"dataset_id: dataset {dataset_id} not found")
        row = Evaluation(model_id=model.id, dataset_id=dataset_id, dataset_ref=dataset_id,
                         dataset_name=name, owner=model.owner, created_by=principal.owner,
                         metrics=metrics)
        session.add(row)
        session.commit()
        return row


def list_page(session: Session, model: TrainedModel, offset: int,
              limit: int) -> tuple[list[Evaluation], int]:
    """The model's stored evaluations, newest first."""
    return page(session, select(Evaluation).where(Evaluation.model_id == model.id),
                (Evaluation.created_at.desc(), Evaluation.id), offset, limit)
