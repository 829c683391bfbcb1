"""Tags of jobs and models: a small ``str -> str`` dict the user sets, to group and find runs
(as MLflow's run tags).  Set at a job's creation and changed by ``PATCH /jobs/{id}`` or
``PATCH /models/{id}`` (a JSON merge patch: a null value removes the tag); a model gets its
job's tags as they are when it is stored.  Lists filter on them with ``?tag=key:value``
(repeated: every one must match)."""

from __future__ import annotations

import re
from typing import Any

from app.errors import InvalidRequest

MAX_TAGS = 32
"""Tags one job or model may have."""
MAX_KEY_LENGTH = 64
MAX_VALUE_LENGTH = 256
KEY_PATTERN = r"^[A-Za-z0-9_.\-/]+$"
"""A tag's key: letters, digits and ``_ . - /`` (no colon: ``?tag=key:value`` splits on the
first one)."""
_KEY = re.compile(KEY_PATTERN)


def check_count(tags: dict[str, Any]) -> dict[str, Any]:
    """``tags`` if there are at most :data:`MAX_TAGS`; ValueError otherwise."""
    if len(tags) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags, not {len(tags)}")
    return tags


def merged(current: dict[str, str] | None, patch: dict[str, str | None]) -> dict[str, str]:
    """``current`` with ``patch`` applied (RFC 7396: a null removes the key);
    :class:`InvalidRequest` past :data:`MAX_TAGS`."""
    result = dict(current or {})
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    if len(result) > MAX_TAGS:
        raise InvalidRequest(f"tags: the patch would leave {len(result)} tags, more than "
                             f"{MAX_TAGS}")
    return result


FILTER_PATTERN = r"^[A-Za-z0-9_.\-/]{1,64}:[^\x00]*$"
"""A ``?tag=`` filter: a key, a colon, the value (anything but NUL, which PostgreSQL's text
cannot hold: such a filter was a 500 there, found by the stateful schemathesis run)."""


def parse_filters(filters: list[str] | None) -> list[tuple[str, str]]:
    """The ``?tag=key:value`` filters as (key, value) pairs; :class:`InvalidRequest` for one
    that is not ``key:value`` with a valid key (two values of one key match nothing)."""
    wanted = []
    for text in filters or ():
        key, colon, value = text.partition(":")
        if not colon or not _KEY.match(key) or len(key) > MAX_KEY_LENGTH:
            raise InvalidRequest(f"tag: expected key:value with a key of 1-{MAX_KEY_LENGTH} "
                                 f"letters, digits and _ . - /, got {text[:80]!r}")
        wanted.append((key, value))
    return wanted


def where_tagged(query, column, wanted: list[tuple[str, str]]):
    """``query`` narrowed to the rows whose ``column`` (a JSON tags column) has every
    ``wanted`` tag (SQLite's json_extract, PostgreSQL's ->>)."""
    for key, value in wanted:
        query = query.where(column[key].as_string() == value)
    return query
