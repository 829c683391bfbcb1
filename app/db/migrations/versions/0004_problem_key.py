"""Jobs: the normalized problem key (dataset + the problem the parameters pose), backfilled.

Create Date: 2026-11-23

The backfill computes each stored job's key with :func:`app.problem.stored_problem_key`, the
function new jobs get theirs from, so old and new jobs group together; a job whose parameters
the solver no longer accepts, and a tuning job, keep no key.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from app.problem import stored_problem_key

revision = "0004"
down_revision = "0003"

BATCH = 1000


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("problem_key", sa.String(512), nullable=True))
        batch.create_index("ix_jobs_problem_key", ["problem_key"])
    jobs = sa.table("jobs", sa.column("id", sa.Uuid()), sa.column("dataset_id", sa.Uuid()),
                    sa.column("solver", sa.String()), sa.column("params", sa.JSON()),
                    sa.column("tuning", sa.JSON()), sa.column("problem_key", sa.String()))
    connection = op.get_bind()
    rows = connection.execute(sa.select(jobs.c.id, jobs.c.dataset_id, jobs.c.solver,
                                        jobs.c.params, jobs.c.tuning)).all()
    keys = [{"job_id": row.id, "key": key} for row in rows
            if (key := stored_problem_key(row.dataset_id, row.solver, row.params or {},
                                          row.tuning)) is not None]
    update = (jobs.update().where(jobs.c.id == sa.bindparam("job_id"))
              .values(problem_key=sa.bindparam("key")))
    for start in range(0, len(keys), BATCH):
        connection.execute(update, keys[start:start + BATCH])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_problem_key")
        batch.drop_column("problem_key")
