"""Real-valued labels (issue 47): ``datasets.label_summary``, what every uploaded dataset's
labels are (distinct values, range, mean, whether all are integers), so that a regression
dataset whose distinct values outnumber ``SVMSVC_MAX_CLASSES`` is stored (its
``class_counts`` then null: they are not classes) and a job knows what its labels are.

Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_taskservice"
down_revision = "0012"


def upgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("label_summary", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.drop_column("label_summary")
