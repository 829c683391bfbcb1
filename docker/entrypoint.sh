#!/bin/sh
# Entrypoint of the svmsvc image.
#
#   docker run IMAGE                  -> svmsvc migrate, then svmsvc serve --host 0.0.0.0
#   docker run IMAGE --workers 4      -> svmsvc serve --host 0.0.0.0 --workers 4
#   docker run IMAGE migrate          -> svmsvc migrate (any svmsvc subcommand passes through)
#
# The service applies the database migrations itself at start-up; settings come from the
# SVMSVC_* environment (see docs/service.md).  Listening on 0.0.0.0, it refuses to start
# without API keys (SVMSVC_API_KEYS or SVMSVC_API_KEYS_FILE) unless SVMSVC_ALLOW_OPEN=true.
set -e
if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
    svmsvc migrate  # prestart: the schema is current before the service starts
    set -- serve --host 0.0.0.0 "$@"
fi
exec svmsvc "$@"
