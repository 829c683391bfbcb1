"""Pagination and tenancy shared by the queries."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from app.core.principals import Principal
from app.errors import InvalidRequest, NotFound


def visible(query: Select, row_kind, principal: Principal) -> Select:
    """``query`` narrowed to the rows ``principal`` sees (its owner's, or all)."""
    return query if principal.sees_all else query.where(row_kind.owner == principal.owner)


def owned(session: Session, row_kind, row_id, noun: str, principal: Principal,
          field: str | None = None):
    """The row if it exists for ``principal``; otherwise :class:`NotFound` naming it, or for
    an id the request names in ``field`` (a body or query field, not the path) an
    :class:`InvalidRequest`.  Another owner's row is answered exactly as a missing one."""
    row = session.get(row_kind, row_id)
    if row is None or not principal.may_see(row.owner):
        missing = f"{noun} {row_id} not found"
        raise NotFound(missing) if field is None else InvalidRequest(f"{field}: {missing}")
    return row


def page(session: Session, query: Select, order_by: tuple, offset: int,
         limit: int) -> tuple[list[Any], int]:
    """The rows of ``query`` in ``order_by`` order from ``offset`` (at most ``limit``), and
    how many rows it has in all."""
    count = session.scalar(select(func.count()).select_from(query.subquery()))
    rows = list(session.scalars(query.order_by(*order_by).offset(offset).limit(limit)))
    return rows, count
