#!/bin/sh
# Build the two base images of the compose deployment from Debian's packages, for a machine
# that reaches a Debian mirror but no image registry (python:3.11-slim and postgres:16, the
# defaults, cannot be pulled there).
#
#   sudo docker/build-local-bases.sh            # builds svmsvc-local/python:3.11
#                                               #    and svmsvc-local/postgres:15
#   BASE_IMAGE=svmsvc-local/python:3.11 POSTGRES_IMAGE=svmsvc-local/postgres:15 \
#       docker compose -f docker/docker-compose.yml up --build    # or docker-compose (v1)
#
# Run here on 2026-12-07 (Debian bookworm, debootstrap 1.0.128, Docker engine 20.10.24), cold:
# 205 s for the python base and 200 s for the postgres one, 94 s of CPU in all; again with
# FORCE=1 and the packages in DEBOOTSTRAP_CACHE, 49 s and 60 s (the rest is the download).
# Both stacks ran on them, with Compose v2 2.26.1 and v1 1.29.2 (docker/smoke.sh).  A second
# call without FORCE skips both images (under a second).
#
# Each image is a `debootstrap --variant=minbase` root file system of Debian bookworm turned
# into an image with `docker import`:
#   - python:   Debian's python3 (3.11) and python3-venv; the project's Dockerfile makes its
#               own virtual environment, so it works on python:3.11-slim and on this image.
#               Also libgomp1, GNU OpenMP: with it Numba's threading layer is OpenMP, which
#               several threads may use at once (cross-validation fits its folds in
#               parallel); without it (python:3.11-slim) Numba falls back to its workqueue
#               layer and the folds run one after another.
#   - postgres: Debian's postgresql (15) plus docker/local-bases/postgres-entrypoint.sh, which
#               behaves like the official image for what the compose file uses
#               (POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB, data in
#               /var/lib/postgresql/data, initdb on first start, pg_isready on the PATH).
#
# Needs root (debootstrap), debootstrap and a running Docker engine.  The mirror defaults to
# the first Debian mirror of the host's apt sources; override with DEBIAN_MIRROR.  An image
# that already exists is kept unless FORCE=1.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
SUITE=${DEBIAN_SUITE:-bookworm}
PYTHON_IMAGE=${PYTHON_IMAGE:-svmsvc-local/python:3.11}
POSTGRES_IMAGE=${POSTGRES_IMAGE:-svmsvc-local/postgres:15}
CACHE=${DEBOOTSTRAP_CACHE:-/var/cache/svmsvc-debootstrap}
WORK=$(mktemp -d /tmp/svmsvc-bases.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if [ -z "${DEBIAN_MIRROR:-}" ]; then
    DEBIAN_MIRROR=$(grep -rhoE '(https?://[^ ]+/debian)( |$)' \
        /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -n 1 | tr -d ' ')
fi
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
echo "mirror: $DEBIAN_MIRROR ($SUITE)"

have_image() { [ "${FORCE:-0}" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; }
started=$(date +%s)
took() { echo "built $1 in $(( $(date +%s) - started )) s"; started=$(date +%s); }

# rootfs NAME PACKAGES: a minimal Debian tree with PACKAGES, apt's caches emptied.
rootfs() {
    dir="$WORK/$1"
    mkdir -p "$CACHE"
    debootstrap --variant=minbase --cache-dir="$CACHE" --include="$2" \
        "$SUITE" "$dir" "$DEBIAN_MIRROR"
    # Software installed later in the image comes from the same mirror (the image's own apt
    # sources), never from a registry.
    echo "deb $DEBIAN_MIRROR $SUITE main" > "$dir/etc/apt/sources.list"
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/archives/*.deb \
        "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/tmp/*
}

if have_image "$PYTHON_IMAGE"; then
    echo "$PYTHON_IMAGE exists (FORCE=1 rebuilds it)"
else
    rootfs python python3,python3-venv,ca-certificates,netbase,libgomp1
    tar -C "$WORK/python" -c . | docker import \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["python3"]' \
        --message "Debian $SUITE minbase + python3 (built by docker/build-local-bases.sh)" \
        - "$PYTHON_IMAGE"
    rm -rf "$WORK/python"
    took "$PYTHON_IMAGE"
fi

if have_image "$POSTGRES_IMAGE"; then
    echo "$POSTGRES_IMAGE exists (FORCE=1 rebuilds it)"
else
    rootfs postgres postgresql
    # The package's post-install made a cluster (15/main) the entrypoint does not use.
    rm -rf "$WORK"/postgres/var/lib/postgresql/* "$WORK"/postgres/etc/postgresql/*/main
    tar -C "$WORK/postgres" -c . | docker import \
        --message "Debian $SUITE minbase + postgresql (built by docker/build-local-bases.sh)" \
        - "$POSTGRES_IMAGE-rootfs"
    rm -rf "$WORK/postgres"
    docker build -t "$POSTGRES_IMAGE" --build-arg ROOTFS="$POSTGRES_IMAGE-rootfs" \
        -f "$HERE/local-bases/postgres.Dockerfile" "$HERE/local-bases"
    took "$POSTGRES_IMAGE"
fi

docker image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -F svmsvc-local/
