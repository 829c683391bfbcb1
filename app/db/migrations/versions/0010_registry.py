"""The model registry (issue 50): named models, their versions and aliases, and the aliases'
history; ``jobs.model_name`` names the registered model a job's model becomes a version of.

``registered_models`` holds one row per (owner, name) with the last version number given (the
row is the name's lock, see ``app.crud.registry``); ``model_versions`` one row per version,
deleted with its model; ``model_aliases`` points an alias at a version (a foreign key that
refuses to delete an aliased version) and copies its model id; ``model_alias_events`` records
every move.

Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_registry"
down_revision = "0010"

NAME = sa.String(length=64)


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("model_name", NAME, nullable=True))

    op.create_table(
        "registered_models",
        sa.Column("owner", NAME, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("latest_version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("owner", "name"),
    )
    op.create_table(
        "model_versions",
        sa.Column("owner", NAME, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("model_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("solver", NAME, nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("created_by", NAME, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("owner", "name", "version"),
        sa.ForeignKeyConstraint(["owner", "name"],
                                ["registered_models.owner", "registered_models.name"],
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["model_id"], ["models.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="RESTRICT"),
        sa.UniqueConstraint("model_id", name="uq_model_versions_model_id"),
    )
    op.create_table(
        "model_aliases",
        sa.Column("owner", NAME, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("alias", NAME, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Uuid(), nullable=False),
        sa.Column("updated_by", NAME, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("owner", "name", "alias"),
        sa.ForeignKeyConstraint(["owner", "name", "version"],
                                ["model_versions.owner", "model_versions.name",
                                 "model_versions.version"],
                                ondelete="RESTRICT", name="fk_model_aliases_version"),
    )
    op.create_table(
        "model_alias_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("owner", NAME, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("alias", NAME, nullable=False),
        sa.Column("from_version", sa.Integer(), nullable=True),
        sa.Column("to_version", sa.Integer(), nullable=True),
        sa.Column("moved_by", NAME, nullable=False),
        sa.Column("moved_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_model_alias_events_name", "model_alias_events",
                    ["owner", "name", "alias", "id"])


def downgrade() -> None:
    op.drop_index("ix_model_alias_events_name", table_name="model_alias_events")
    for table in ("model_alias_events", "model_aliases", "model_versions",
                  "registered_models"):
        op.drop_table(table)
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("model_name")
