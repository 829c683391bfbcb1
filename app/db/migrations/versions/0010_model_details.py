"""Models: ``details``, what a model's own metadata says beyond the columns (the low-rank
approximation's landmarks and rank, the scaling, auto's choice, the warnings, the probability
sigmoids), so ``GET /models/{id}`` answers it without loading the artifact.  Models written
before have none (null).

Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"


def upgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.add_column(sa.Column("details", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.drop_column("details")
