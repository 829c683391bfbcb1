"""Injected dependencies as ``Annotated`` aliases.

The getters of application state are ``async def``: FastAPI runs a plain ``def`` dependency
in the thread pool, a hop that cost more than a whole single-example prediction.  Sessions
are function-scoped: the transaction ends when the path operation returns, before
the response is sent.  ``SessionDep`` reads; ``WriteSessionDep`` is for path operations that
change rows, which look their rows up in that same session (through the query layer, for
the caller's principal).  The ``DatasetDep`` / ``JobDep`` / ``ModelDep`` lookups (404 when
missing or another owner's) are for reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from pydantic import Field
from sqlalchemy.orm import Session

from app.api.security import PrincipalDep
from app.core.config import Settings
from app.crud import datasets as crud_datasets
from app.crud import jobs as crud_jobs
from app.crud import models as crud_models
from app.db.models import Dataset, Job, TrainedModel
from app.db.session import Sessions
from app.jobs.dispatcher import Dispatcher
from app.prediction import ModelCache
from app.storage import DatasetStorage
from app.tags import FILTER_PATTERN

MAX_POSITION = 2**31 - 1
"""Largest ``offset`` / ``after`` accepted: iterations are 32-bit integer columns (on
PostgreSQL a larger value cannot even be compared with them), and no list is longer."""

OffsetQuery = Annotated[int, Query(ge=0, le=MAX_POSITION,
                                   description="Items to skip (at most 2147483647).")]
LimitQuery = Annotated[int, Query(ge=1, le=1000, description="Items per page.")]
TagQuery = Annotated[list[Annotated[str, Field(pattern=FILTER_PATTERN)]] | None, Query(
    max_length=32, description="Only the items with this tag, as key:value (repeat it: every "
                               "one must match).")]
AfterQuery = Annotated[int, Query(ge=0, le=MAX_POSITION,
                                  description="Records after this iteration.")]


async def get_settings(request: Request) -> Settings:
    """The application's settings."""
    return request.app.state.settings


async def get_sessions(request: Request) -> Sessions:
    """The session factories, for path operations that open their own short sessions."""
    return request.app.state.sessions


def get_read_session(request: Request) -> Iterator[Session]:
    """A read session for the path operation."""
    with request.app.state.sessions.read() as session:
        yield session


def get_write_session(request: Request) -> Iterator[Session]:
    """A write session for the path operation."""
    with request.app.state.sessions.write() as session:
        yield session


async def get_store(request: Request) -> DatasetStorage:
    """The dataset file store."""
    return request.app.state.store


async def get_dispatcher(request: Request) -> Dispatcher:
    """The dispatcher (to wake it, or to inspect its executor's slots)."""
    return request.app.state.dispatcher


async def get_model_cache(request: Request) -> ModelCache:
    """The cache of loaded models."""
    return request.app.state.model_cache


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionsDep = Annotated[Sessions, Depends(get_sessions)]
SessionDep = Annotated[Session, Depends(get_read_session, scope="function")]
WriteSessionDep = Annotated[Session, Depends(get_write_session, scope="function")]
StoreDep = Annotated[DatasetStorage, Depends(get_store)]
DispatcherDep = Annotated[Dispatcher, Depends(get_dispatcher)]
ModelCacheDep = Annotated[ModelCache, Depends(get_model_cache)]


def get_dataset(dataset_id: Annotated[uuid.UUID, Path()], session: SessionDep,
                principal: PrincipalDep) -> Dataset:
    """The dataset named in the path (404 if none, or another owner's)."""
    return crud_datasets.get(session, dataset_id, principal)


def get_job(job_id: Annotated[uuid.UUID, Path()], session: SessionDep,
            principal: PrincipalDep) -> Job:
    """The job named in the path (404 if none, or another owner's)."""
    return crud_jobs.get(session, job_id, principal)


def get_model(model_id: Annotated[uuid.UUID, Path()], session: SessionDep,
              principal: PrincipalDep) -> TrainedModel:
    """The model named in the path (404 if none, or another owner's)."""
    return crud_models.get(session, model_id, principal)


DatasetDep = Annotated[Dataset, Depends(get_dataset)]
JobDep = Annotated[Job, Depends(get_job)]
ModelDep = Annotated[TrainedModel, Depends(get_model)]
