#!/bin/sh
# Build the wheels the image installs (docker/Dockerfile): the project and every dependency of
# its service, PostgreSQL and Dask extras, into dist/wheels.  Run it from anywhere, with the
# Python (3.11, the image's) whose pip may reach your package index; the image build itself
# then needs no network.  PYTHON overrides the interpreter (default: python3).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$version" != 3.11 ]; then
    echo "build-wheels: $PYTHON is Python $version; the image runs 3.11 and needs its wheels" >&2
    exit 1
fi
rm -f "$ROOT"/dist/wheels/svmsvc-*.whl  # a stale wheel of the project must not be installed
cd "$ROOT"
"$PYTHON" -m pip wheel ".[service,postgres,distributed]" -w dist/wheels
rm -rf "$ROOT/build"
ls "$ROOT/dist/wheels" | wc -l | xargs echo "wheels in dist/wheels:"
