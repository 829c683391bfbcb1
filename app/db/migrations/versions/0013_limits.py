"""The model bytes a queued or running job reserves against its owner's model quota (issue
49): ``jobs.reserved_model_bytes``, estimated from the model's shape at admission
(:mod:`app.quotas`).  Jobs admitted before this revision reserve nothing (null).

Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_limits"
down_revision = "0013_taskservice"


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("reserved_model_bytes", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("reserved_model_bytes")
