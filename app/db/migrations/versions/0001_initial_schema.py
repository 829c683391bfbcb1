"""Initial schema: datasets, jobs, the convergence log and models.

Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "datasets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("n_samples", sa.BigInteger(), nullable=False),
        sa.Column("n_features", sa.BigInteger(), nullable=False),
        sa.Column("nnz", sa.BigInteger(), nullable=False),
        sa.Column("density", sa.Float(), nullable=False),
        sa.Column("class_counts", sa.JSON(), nullable=False),
        sa.Column("has_qid", sa.Boolean(), nullable=False),
        sa.Column("has_sample_weight", sa.Boolean(), nullable=False),
        sa.Column("upload_bytes", sa.BigInteger(), nullable=False),
        sa.Column("stored_bytes", sa.BigInteger(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("sha256"),
    )
    with op.batch_alter_table("datasets") as batch_op:
        batch_op.create_index("ix_datasets_created_at", ["created_at"])

    op.create_table(
        "jobs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("validation_dataset_id", sa.Uuid(), nullable=True),
        sa.Column("solver", sa.String(length=64), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("time_limit_s", sa.Float(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("cancel_requested_at", TIMESTAMP, nullable=True),
        sa.Column("iteration", sa.Integer(), nullable=True),
        sa.Column("elapsed", sa.Float(), nullable=True),
        sa.Column("objective", sa.Float(), nullable=True),
        sa.Column("optimality", sa.Float(), nullable=True),
        sa.Column("solver_status", sa.String(length=16), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("started_at", TIMESTAMP, nullable=True),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["validation_dataset_id"], ["datasets.id"], ondelete="RESTRICT"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.create_index("ix_jobs_dataset_id", ["dataset_id"])
        batch_op.create_index("ix_jobs_validation_dataset_id", ["validation_dataset_id"])
        batch_op.create_index("ix_jobs_status_created_at", ["status", "created_at"])

    op.create_table(
        "job_log",
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("iteration", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("elapsed", sa.Float(), nullable=False),
        sa.Column("objective", sa.Float(), nullable=True),
        sa.Column("optimality", sa.Float(), nullable=True),
        sa.Column("extras", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job_id", "iteration"),
    )

    op.create_table(
        "models",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("solver", sa.String(length=64), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("classes", sa.JSON(), nullable=False),
        sa.Column("n_features", sa.BigInteger(), nullable=False),
        sa.Column("objective", sa.Float(), nullable=True),
        sa.Column("solver_status", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("iterations", sa.Integer(), nullable=False),
        sa.Column("training_seconds", sa.Float(), nullable=False),
        sa.Column("training_data", sa.JSON(), nullable=False),
        sa.Column("subproblems", sa.JSON(), nullable=False),
        sa.Column("validation", sa.JSON(), nullable=True),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("artifact", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job_id"),
    )
    with op.batch_alter_table("models") as batch_op:
        batch_op.create_index("ix_models_created_at", ["created_at"])
        batch_op.create_index("ix_models_dataset_id", ["dataset_id"])


def downgrade() -> None:
    op.drop_table("models")
    op.drop_table("job_log")
    op.drop_table("jobs")
    op.drop_table("datasets")
