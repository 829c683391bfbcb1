"""Pagination shared by the list queries."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session


def page(session: Session, query: Select, order_by: tuple, offset: int,
         limit: int) -> tuple[list[Any], int]:
    """The rows of ``query`` in ``order_by`` order from ``offset`` (at most ``limit``), and
    how many rows it has in all."""
    count = session.scalar(select(func.count()).select_from(query.subquery()))
    rows = list(session.scalars(query.order_by(*order_by).offset(offset).limit(limit)))
    return rows, count
