"""Trained models: list, get, delete, their stored archives."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from sqlalchemy import LargeBinary, func, literal_column, select
from sqlalchemy.orm import Session

from app.core.principals import Principal
from app.crud.pages import owned, page, visible
from app.crud.registry import commit_announced, lock_name, refuse_if_aliased
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


ARTIFACT_CHUNK_BYTES = 4 << 20
"""Bytes of a model's archive read from the database at a time by a download."""


def artifact_chunks(sessions: Sessions, model_id: uuid.UUID, size: int,
                    chunk: int | None = None) -> Iterator[bytes]:
    """The model's ``.npz`` archive of ``size`` bytes, ``chunk`` bytes at a time (default
    :data:`ARTIFACT_CHUNK_BYTES`), never the whole archive in this process: on SQLite through
    the driver's incremental blob I/O (``blobopen``: SQLite's ``substr`` reads the whole value
    for every slice, 106 s for the 128 chunks of a 134 MB archive), on PostgreSQL each chunk
    a ``substr`` of the column by itself (a value stored out of line is read a slice at a
    time).  The caller has checked that the model is the principal's; a model deleted
    meanwhile ends the archive short."""
    chunk = chunk or ARTIFACT_CHUNK_BYTES
    if sessions.engine.dialect.name == "sqlite":
        yield from _sqlite_blob_chunks(sessions, model_id, chunk)
        return
    for offset in range(0, size, chunk):
        with sessions.read() as session:
            piece = session.scalar(
                select(func.substr(TrainedModel.artifact, offset + 1, chunk,
                                   type_=LargeBinary))
                .where(TrainedModel.id == model_id))
        if not piece:
            return
        yield bytes(piece)


def _sqlite_blob_chunks(sessions: Sessions, model_id: uuid.UUID,
                        chunk: int) -> Iterator[bytes]:
    """The archive read through ``sqlite3.Connection.blobopen``, in one read transaction
    (WAL: writers go on meanwhile)."""
    with sessions.read() as session:
        rowid = session.scalar(select(literal_column("rowid"))
                               .select_from(TrainedModel).where(TrainedModel.id == model_id))
        if rowid is None:
            return
        driver = session.connection().connection.driver_connection
        with driver.blobopen(TrainedModel.__tablename__, "artifact", rowid,
                             readonly=True) as blob:
            while piece := blob.read(chunk):
                yield piece


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
    if model.version is not None:  # name/version resolved to it: no fast path may keep it
        commit_announced(session)
    else:
        session.commit()


def set_tags(session: Session, model_id: uuid.UUID, patch: dict[str, str | None],
             principal: Principal) -> TrainedModel:
    """Merge ``patch`` into the model's tags (:func:`app.tags.merged`)."""
    model = get(session, model_id, principal)
    model.tags = merged(model.tags, patch)
    session.commit()
    return model
