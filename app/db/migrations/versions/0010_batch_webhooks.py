"""Batch prediction jobs and job webhooks.

Jobs gain ``kind`` (``train``, or ``predict``: a batch prediction job), the model a prediction
job scores with (``predict_model_id``), its stored ``result`` and progress in rows
(``rows_done`` / ``rows_total``), and an optional ``callback_url``.  Three tables hold the
webhooks: each owner's signing secret, each finished job's event, and each delivery attempt.

The revision id says what it adds (another branch adds a migration beside it; the merge
re-chains ``down_revision``).

Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_batch_webhooks"
down_revision = "0010_registry"

UTC_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False,
                                   server_default="train"))
        batch.add_column(sa.Column("predict_model_id", sa.Uuid(), nullable=True))
        batch.add_column(sa.Column("result", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("rows_done", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("rows_total", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("callback_url", sa.String(2048), nullable=True))
        batch.create_foreign_key("fk_jobs_predict_model_id_models", "models",
                                 ["predict_model_id"], ["id"], ondelete="SET NULL")
        batch.create_index("ix_jobs_predict_model_id", ["predict_model_id"])
    op.create_table(
        "webhook_secrets",
        sa.Column("owner", sa.String(64), primary_key=True),
        sa.Column("secret", sa.String(128), nullable=False),
        sa.Column("created_at", UTC_TIME, nullable=False),
    )
    op.create_table(
        "webhook_events",
        sa.Column("id", sa.Uuid(), primary_key=True),
        sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"),
                  nullable=False, unique=True),
        sa.Column("owner", sa.String(64), nullable=False, server_default=""),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTC_TIME, nullable=False),
        sa.Column("lease_until", UTC_TIME, nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
    )
    op.create_index("ix_webhook_events_state_next", "webhook_events",
                    ["state", "next_attempt_at"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("event_id", sa.Uuid(),
                  sa.ForeignKey("webhook_events.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("attempt", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("job_id", sa.Uuid(), sa.ForeignKey("jobs.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("sent_at", UTC_TIME, nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=False),
    )
    op.create_index("ix_webhook_deliveries_job_id", "webhook_deliveries", ["job_id"])


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_events")
    op.drop_table("webhook_secrets")
    # prediction jobs have no place in the old schema
    jobs = sa.table("jobs", sa.column("kind"))
    op.get_bind().execute(jobs.delete().where(jobs.c.kind == "predict"))
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_predict_model_id")
        batch.drop_constraint("fk_jobs_predict_model_id_models", type_="foreignkey")
        for name in ("callback_url", "rows_total", "rows_done", "result", "predict_model_id",
                     "kind"):
            batch.drop_column(name)
