"""List answers bounded in bytes as well as in items (issue 49).

``limit`` bounds a page's items, not its bytes: a job's ``params`` and ``message``, a model's
metadata or an item's tags make items of very different sizes, so a page of 1,000 could be
many megabytes.  :func:`bounded_page` ends a page before the item that would take its items'
JSON past ``SVMSVC_MAX_LIST_BYTES`` (the first item is always sent, so that every page makes
progress), and gives the page a ``next`` link, the same request with ``offset`` moved past
the items sent, whenever rows are left (cut by the bytes or by ``limit``); the last page's
``next`` is null.  The link is relative (path and query), so it holds behind a proxy.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel
from starlette.requests import Request


def bounded_page(request: Request, items: Sequence[BaseModel], count: int, offset: int) -> dict:
    """The fields of a page (``data``, ``count``, ``next``) of ``items``, the rows of a list
    from ``offset`` of ``count`` in all, cut to the application's ``max_list_bytes``."""
    budget = request.app.state.settings.max_list_bytes
    kept, size = [], 2  # the brackets
    for item in items:
        size += len(item.model_dump_json()) + 1  # the item and its comma
        if kept and size > budget:
            break
        kept.append(item)
    following = offset + len(kept)
    link = None
    if following < count:
        url = request.url.include_query_params(offset=following)
        link = f"{url.path}?{url.query}"
    return {"data": kept, "count": count, "next": link}
