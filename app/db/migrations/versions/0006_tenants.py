"""Tenants: every dataset, job and model has an owner (``app.core.security``).

``datasets.owner`` and ``models.owner`` are new; ``jobs.owner`` held the bare SHA-256 of the
key that queued the job and now holds the owner (:func:`app.core.security.own_owner` of that
digest: a key configured as ``scope:key`` keeps its jobs), ``""`` for what was created while
the service was open.  A dataset's content digest is unique per owner, not overall: two owners
uploading the same file get a row each (the stored arrays stay one file).  Models take their
job's owner; datasets the owner of the first job that used them, else ``""`` (only admins see
those once keys are on).

Create Date: 2026-11-26
"""

from __future__ import annotations

import hashlib
import re

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"

# a copy of app.core.security.OWNER_SALT as it was at this revision: a migration must not
# change meaning when the application's code does
OWNER_SALT = b"svmsvc owner v1\0"
HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
UNIQUE_NAMES = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _own_owner(digest: str) -> str:
    return "key:" + hashlib.sha256(OWNER_SALT + bytes.fromhex(digest)).hexdigest()[:16]


def upgrade() -> None:
    bind = op.get_bind()
    jobs = sa.table("jobs", sa.column("id"), sa.column("owner"), sa.column("dataset_id"),
                    sa.column("created_at"))
    for job_id, owner in bind.execute(sa.select(jobs.c.id, jobs.c.owner)).all():
        if owner is None or HEX_DIGEST.fullmatch(owner):
            bind.execute(jobs.update().where(jobs.c.id == job_id).values(
                owner="" if owner is None else _own_owner(owner)))
    with op.batch_alter_table("jobs") as batch:
        batch.alter_column("owner", existing_type=sa.String(length=64), nullable=False,
                           server_default="")

    with op.batch_alter_table("models") as batch:
        batch.add_column(sa.Column("owner", sa.String(length=64), nullable=False,
                                   server_default=""))
        batch.create_index("ix_models_owner_created_at", ["owner", "created_at"])
    models = sa.table("models", sa.column("job_id"), sa.column("owner"))
    bind.execute(models.update().values(owner=sa.select(jobs.c.owner).where(
        jobs.c.id == models.c.job_id).scalar_subquery()).where(models.c.job_id.is_not(None)))

    postgres = bind.dialect.name == "postgresql"
    with op.batch_alter_table("datasets", naming_convention=UNIQUE_NAMES) as batch:
        batch.add_column(sa.Column("owner", sa.String(length=64), nullable=False,
                                   server_default=""))
        # PostgreSQL named the unnamed constraint of 0001 itself; SQLite's batch copy
        # reflects it under the naming convention
        batch.drop_constraint("datasets_sha256_key" if postgres else "uq_datasets_sha256",
                              type_="unique")
        batch.create_unique_constraint("uq_datasets_owner_sha256", ["owner", "sha256"])
        batch.create_index("ix_datasets_owner_created_at", ["owner", "created_at"])
    datasets = sa.table("datasets", sa.column("id"), sa.column("owner"))
    first_user = (sa.select(jobs.c.owner).where(jobs.c.dataset_id == datasets.c.id)
                  .order_by(jobs.c.created_at).limit(1).scalar_subquery())
    bind.execute(datasets.update().values(owner=sa.func.coalesce(first_user, "")))


def downgrade() -> None:
    with op.batch_alter_table("datasets", naming_convention=UNIQUE_NAMES) as batch:
        batch.drop_index("ix_datasets_owner_created_at")
        batch.drop_constraint("uq_datasets_owner_sha256", type_="unique")
        batch.create_unique_constraint("uq_datasets_sha256", ["sha256"])
        batch.drop_column("owner")
    with op.batch_alter_table("models") as batch:
        batch.drop_index("ix_models_owner_created_at")
        batch.drop_column("owner")
    with op.batch_alter_table("jobs") as batch:
        batch.alter_column("owner", existing_type=sa.String(length=64), nullable=True,
                           server_default=None)
