"""Stored interior_point parameters: ``gamma`` becomes ``pcg_gamma``.

The interior-point method's PCG selection parameter (Gertz & Griffin's rule (15)) was named
``gamma`` until every solver gained the kernel's ``gamma`` (the low-rank path); it is
``pcg_gamma`` now.  A job stored before keeps its meaning: validated again by its worker, its
number would otherwise be read as the kernel's gamma and its PCG parameter lost.  The models'
stored parameters (shown with the model) are renamed alike.

Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"


def _rename(table_name: str, old: str, new: str) -> None:
    bind = op.get_bind()
    table = sa.table(table_name, sa.column("id"), sa.column("solver"),
                     sa.column("params", sa.JSON))
    rows = bind.execute(sa.select(table.c.id, table.c.params)
                        .where(table.c.solver == "interior_point")).all()
    for row_id, params in rows:
        if isinstance(params, dict) and old in params and new not in params:
            renamed = {(new if key == old else key): value for key, value in params.items()}
            bind.execute(table.update().where(table.c.id == row_id).values(params=renamed))


def upgrade() -> None:
    for table_name in ("jobs", "models"):
        _rename(table_name, "gamma", "pcg_gamma")


def downgrade() -> None:
    for table_name in ("jobs", "models"):
        _rename(table_name, "pcg_gamma", "gamma")
