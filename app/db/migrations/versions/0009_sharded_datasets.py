"""Datasets: ``kind`` (``uploaded`` or ``sharded``) and a sharded dataset's ``source``.

A sharded dataset is registered from shard paths or URLs that the Dask workers parse where
they are (``POST /datasets/sharded``); nothing is stored by the service but its row.  Its
statistics are unknown until a job first reads the shards on the cluster, so they become
nullable (an uploaded dataset always has them).

Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"

STATISTICS = (("n_samples", sa.BigInteger()), ("n_features", sa.BigInteger()),
              ("nnz", sa.BigInteger()), ("density", sa.Float()), ("class_counts", sa.JSON()))


def upgrade() -> None:
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False,
                                   server_default="uploaded"))
        batch.add_column(sa.Column("source", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("scanned_at", sa.DateTime(timezone=True), nullable=True))
        for name, type_ in STATISTICS:
            batch.alter_column(name, existing_type=type_, nullable=True)


def downgrade() -> None:
    # sharded datasets cannot be kept by the old schema: their jobs and models go with them
    bind = op.get_bind()
    sharded = sa.select(sa.column("id")).select_from(sa.table("datasets", sa.column("id"),
                                                              sa.column("kind"))) \
        .where(sa.column("kind") == "sharded")
    ids = [row[0] for row in bind.execute(sharded)]
    if ids:
        for table, column in (("models", "dataset_id"), ("jobs", "dataset_id")):
            t = sa.table(table, sa.column(column))
            bind.execute(t.delete().where(t.c[column].in_(ids)))
        t = sa.table("datasets", sa.column("id"))
        bind.execute(t.delete().where(t.c.id.in_(ids)))
    with op.batch_alter_table("datasets") as batch:
        for name, type_ in STATISTICS:
            batch.alter_column(name, existing_type=type_, nullable=False)
        batch.drop_column("scanned_at")
        batch.drop_column("source")
        batch.drop_column("kind")
