"""Jobs: tuning jobs (cross-validation over a grid, then a refit at the best point).

Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("tuning", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("cross_validation", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("cross_validation")
        batch.drop_column("tuning")
