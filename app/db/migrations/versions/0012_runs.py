"""What an MLflow user expects of runs (issue 48): ``tags`` on jobs and models, stored
``evaluations`` of models on datasets, and ``api_keys`` created through the admin API (their
SHA-256 digests only).

Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0010_batch_webhooks"

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    for table in ("jobs", "models"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("tags", sa.JSON(), nullable=True))
    op.create_table(
        "evaluations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("model_id", sa.Uuid(), nullable=False),
        sa.Column("dataset_id", sa.Uuid(), nullable=True),
        sa.Column("dataset_ref", sa.Uuid(), nullable=False),
        sa.Column("dataset_name", sa.String(255), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("created_by", sa.String(64), nullable=False, server_default=""),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["model_id"], ["models.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("evaluations") as batch:
        batch.create_index("ix_evaluations_model_created_at", ["model_id", "created_at"])
        batch.create_index("ix_evaluations_dataset_id", ["dataset_id"])
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("scope", sa.String(8), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("created_by", sa.String(64), nullable=False, server_default=""),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=True),
        sa.Column("revoked_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("digest"),
    )


def downgrade() -> None:
    op.drop_table("api_keys")
    op.drop_table("evaluations")
    for table in ("models", "jobs"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("tags")
