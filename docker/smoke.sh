#!/bin/sh
# Smoke test of the compose deployment, for real: builds the wheels and the image, brings the
# whole stack up (API, Dask scheduler, two Dask workers, PostgreSQL), and runs docker/smoke.py
# against it: upload a dataset, train on the Dask workers, predict, kill the worker container
# that runs a long job and check the job is retried or failed with a reason, never stuck
# running; scale the workers out, and train one model data-parallel across all of them on the
# dataset registered from shards in the shared volume (issue 36).  Then it tears everything
# down (containers, network, volumes), pass or fail.
#
#   docker/smoke.sh                       # python:3.11-slim and postgres:16 from a registry
#   LOCAL_BASES=1 docker/smoke.sh         # no registry: build-local-bases.sh's Debian images
#   COMPOSE=docker-compose docker/smoke.sh   # compose v1 where the v2 plugin is installed too
#
# Settings (environment):
#   COMPOSE               the compose command: "docker compose" (v2, the CLI plugin) or
#                         "docker-compose" (v1); default: v2 when `docker compose version`
#                         answers, else docker-compose
#   LOCAL_BASES=1         build and use svmsvc-local/python:3.11 and svmsvc-local/postgres:15
#   BASE_IMAGE, POSTGRES_IMAGE   base images (override LOCAL_BASES's)
#   SMOKE_EXECUTOR        dask (default) or local (the API's own process pool; no worker kill)
#   SMOKE_DATASET         SVMlight file to upload (default: the repository's data/mushrooms.xz; uploads may be compressed)
#   SMOKE_SKIP_WHEELS=1   reuse dist/wheels as they are
#   SMOKE_KEEP=1          leave the stack up afterwards (tear it down with the printed command)
#   SMOKE_SCALE           Dask workers to scale out to at the end, then shards of the
#                         data-parallel job (default 3; 0: neither)
#   PYTHON                Python 3.11 with pip, for the wheels (default python3)
# Exit status: 0 passed, 1 failed, 77 skipped (no Docker engine or no compose).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")

if ! docker info >/dev/null 2>&1; then
    echo "SKIP: no Docker engine answers (docker info failed); install Docker and start dockerd"
    exit 77
fi
if [ -n "${COMPOSE:-}" ]; then
    # The tester's choice: a failure to answer is a failure, not a skip.
    if ! $COMPOSE version >/dev/null 2>&1; then
        echo "FAILED: COMPOSE='$COMPOSE' does not answer '$COMPOSE version'"
        exit 1
    fi
elif docker compose version >/dev/null 2>&1; then
    COMPOSE="docker compose"
elif command -v docker-compose >/dev/null 2>&1; then
    COMPOSE="docker-compose"
else
    echo "SKIP: neither 'docker compose' nor 'docker-compose' is installed"
    exit 77
fi

if [ "${LOCAL_BASES:-0}" = 1 ]; then
    "$HERE/build-local-bases.sh"
    : "${BASE_IMAGE:=svmsvc-local/python:3.11}"
    : "${POSTGRES_IMAGE:=svmsvc-local/postgres:15}"
fi
export BASE_IMAGE="${BASE_IMAGE:-python:3.11-slim}"
export POSTGRES_IMAGE="${POSTGRES_IMAGE:-postgres:16}"
export SVMSVC_EXECUTOR="${SMOKE_EXECUTOR:-dask}"
export SVMSVC_IMAGE="svmsvc:smoke"
export SVMSVC_LEASE_S="${SVMSVC_LEASE_S:-15}"
export SVMSVC_MAX_ATTEMPTS="${SVMSVC_MAX_ATTEMPTS:-2}"
SVMSVC_PUBLISH_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export SVMSVC_PUBLISH_PORT
KEY="smoke-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export SVMSVC_API_KEYS="admin:$KEY"
unset SVMSVC_ALLOW_OPEN
DATASET=${SMOKE_DATASET:-$ROOT/data/mushrooms.xz}
PROJECT="svmsvc-smoke-$$"
DC="$COMPOSE -f $ROOT/docker/docker-compose.yml -p $PROJECT"

echo "== smoke: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== compose: $COMPOSE ($($COMPOSE version --short 2>/dev/null || $COMPOSE version | head -n 1))," \
     "engine $(docker version -f '{{.Server.Version}}')"
echo "== images: BASE_IMAGE=$BASE_IMAGE POSTGRES_IMAGE=$POSTGRES_IMAGE; executor $SVMSVC_EXECUTOR"

if [ "${SMOKE_SKIP_WHEELS:-0}" != 1 ]; then
    echo "== wheels"
    WHEEL_LOG=$(mktemp /tmp/svmsvc-smoke-wheels.XXXXXX)
    if ! "$HERE/build-wheels.sh" > "$WHEEL_LOG" 2>&1; then
        tail -n 40 "$WHEEL_LOG"
        echo "FAILED: the wheels did not build (log: $WHEEL_LOG)"
        exit 1
    fi
    tail -n 1 "$WHEEL_LOG"
    rm -f "$WHEEL_LOG"
fi
echo "== image build (offline: the wheels only)"
started=$(date +%s)
BUILD_LOG=$(mktemp /tmp/svmsvc-smoke-build.XXXXXX)
if ! $DC build scheduler > "$BUILD_LOG" 2>&1; then
    tail -n 40 "$BUILD_LOG"
    echo "FAILED: the image did not build (log: $BUILD_LOG)"
    exit 1
fi
grep -E '^Successfully (built|tagged)' "$BUILD_LOG" || tail -n 3 "$BUILD_LOG"
rm -f "$BUILD_LOG"
echo "   built $SVMSVC_IMAGE in $(( $(date +%s) - started )) s"

teardown() {
    status=$?
    if [ "$status" -ne 0 ]; then
        echo "== logs (last lines of each service)"
        $DC logs --no-color --tail=40 2>&1 || true
    fi
    if [ "${SMOKE_KEEP:-0}" = 1 ]; then
        echo "== left up: $DC down -v"
    else
        echo "== teardown"
        $DC down -v --remove-orphans 2>&1 | tail -n 3
    fi
    exit "$status"
}
trap teardown EXIT
trap 'exit 1' INT TERM

echo "== up"
started=$(date +%s)
$DC up -d --no-build 2>&1 | grep -v '^$' | tail -n 6
$DC ps
python3 "$HERE/smoke.py" --url "http://127.0.0.1:$SVMSVC_PUBLISH_PORT" --key "$KEY" \
    --compose "$DC" --executor "$SVMSVC_EXECUTOR" --dataset "$DATASET" \
    --max-attempts "$SVMSVC_MAX_ATTEMPTS" --scale "${SMOKE_SCALE:-3}"
echo "== smoke passed in $(( $(date +%s) - started )) s after up"
