#!/bin/sh
# Entrypoint of the local PostgreSQL image (docker/local-bases/postgres.Dockerfile): on the
# first start, initdb the data directory with POSTGRES_USER as the superuser (password
# POSTGRES_PASSWORD, scram-sha-256 over TCP) and create POSTGRES_DB; then run the server as
# the postgres user, listening on every address.
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
: "${PGDATA:=/var/lib/postgresql/data}"
if [ "${1:-postgres}" != postgres ]; then
    exec "$@"
fi
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "POSTGRES_PASSWORD is required" >&2
    exit 1
fi
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 0700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    chown postgres "$pwfile"
    as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        # A server on the socket only, to create the database before it takes connections.
        as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
        as_postgres createdb -U "$POSTGRES_USER" -O "$POSTGRES_USER" "$POSTGRES_DB"
        as_postgres pg_ctl -D "$PGDATA" -m fast -w stop
    fi
fi
if [ "$#" -gt 0 ]; then shift; fi
exec setpriv --reuid=postgres --regid=postgres --init-groups \
    postgres -D "$PGDATA" -c listen_addresses='*' "$@"
