#!/bin/sh
# Entrypoint of the svmsvc image.
#
#   docker run IMAGE                  -> svmsvc migrate, then svmsvc serve --host 0.0.0.0
#   docker run IMAGE --workers 4      -> svmsvc migrate, then svmsvc serve --host 0.0.0.0 --workers 4
#   docker run IMAGE migrate          -> svmsvc migrate (any svmsvc subcommand passes through)
#   docker run IMAGE dask scheduler   -> a Dask scheduler of the same code
#   docker run IMAGE dask worker tcp://scheduler:8786 ...
#                                     -> a Dask worker that can import the project
#
# Settings come from the SVMSVC_* environment (docs/service.md, docs/deploy.md).  Listening on
# 0.0.0.0, the service refuses to start without API keys (SVMSVC_API_KEYS or
# SVMSVC_API_KEYS_FILE) unless SVMSVC_ALLOW_OPEN=true.
set -e
if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
    svmsvc migrate  # prestart: the schema is current before the service starts
    set -- serve --host 0.0.0.0 "$@"
fi
case "$1" in
    dask|python|python3|sh|bash) exec "$@" ;;
esac
exec svmsvc "$@"
