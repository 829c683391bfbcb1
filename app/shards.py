"""Shards of a sharded dataset (``POST /datasets/sharded``): checked before a row names them.

A sharded dataset is a list of SVMlight files that the Dask workers parse where they are
(``solvers.distributed.read_svmlight``); the API process never reads them.  What a client may
name is bounded by two settings, so that no request makes the service read a file the
operator did not offer:

* a local path (or ``file://`` URL) must be absolute and, symbolic links resolved, inside one
  of the directories of ``SVMSVC_SHARD_ROOTS`` (none by default: local shards refused), and
  be a regular file there (checked here, in the API process, which must see the same
  filesystem as the workers: a shared mount);
* a URL's scheme must be one of ``SVMSVC_SHARD_SCHEMES`` (object stores by default; the
  workers read them with their own credentials);
* no shard may be an fsspec chain (``a::b``, links joined by ``::``: fsspec opens every link
  of ``s3://bucket/x::file:///etc/passwd``, so a check of the first scheme alone would let
  any file through): chains are refused whole, wherever the ``::`` stands.

Each refusal is an :class:`~app.errors.InvalidShard` naming the shard (its index) and, when a
setting decides, the setting.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from app.core.config import Settings
from app.errors import InvalidShard, setting_variable

#: what joins the links of an fsspec chained URL (``simplecache::s3://...``)
CHAIN_SEPARATOR = "::"


def _local(index: int, text: str, settings: Settings) -> str:
    """The resolved path of a local shard, if the settings allow it and it is a file."""
    roots_variable = setting_variable("shard_roots")
    roots = settings.shard_root_list
    if not roots:
        raise InvalidShard(f"shards[{index}]: local shards are not enabled on this service "
                           f"({roots_variable} names no directory); use a URL of an allowed "
                           f"scheme, or ask the operator to set {roots_variable}",
                           setting=roots_variable)
    if not os.path.isabs(text):
        raise InvalidShard(f"shards[{index}]: a local shard must be an absolute path, "
                           f"got {text!r}")
    try:
        resolved = Path(text).resolve()
    except (OSError, RuntimeError) as exc:  # a name too long, a loop of symbolic links
        raise InvalidShard(f"shards[{index}]: {text!r} cannot be resolved "
                           f"({getattr(exc, 'strerror', None) or exc})") from None
    if not any(resolved.is_relative_to(root) for root in roots):
        raise InvalidShard(f"shards[{index}]: {text!r} is not inside a directory of "
                           f"{roots_variable} (the directories the operator allows shards "
                           f"in)", setting=roots_variable)
    try:
        regular = resolved.is_file()
        what = "is not a regular file" if resolved.exists() else "does not exist"
    except OSError as exc:
        raise InvalidShard(f"shards[{index}]: {text!r} cannot be read "
                           f"({exc.strerror or exc})") from None
    if not regular:
        raise InvalidShard(f"shards[{index}]: {text!r} {what}")
    return str(resolved)


def check_shards(shards: list[str], settings: Settings) -> list[str]:
    """The shards as stored (local paths resolved, URLs as given), or :class:`InvalidShard`
    for the first one not allowed; the same shard twice is refused (its rows would count
    twice)."""
    schemes_variable = setting_variable("shard_schemes")
    checked: list[str] = []
    for index, shard in enumerate(shards):
        text = shard.strip()
        if not text or "\x00" in text:
            raise InvalidShard(f"shards[{index}]: empty or not a path")
        if CHAIN_SEPARATOR in text:
            raise InvalidShard(f"shards[{index}]: {text!r} is an fsspec chain (links joined by "
                               f"{CHAIN_SEPARATOR!r}, each opened as its own filesystem); "
                               f"chains are not accepted: name one file or one object")
        scheme, separator, rest = text.partition("://")
        if not separator:
            checked.append(_local(index, text, settings))
        elif scheme.lower() == "file":
            checked.append(_local(index, rest, settings))
        elif scheme.lower() in settings.shard_scheme_list:
            if not rest.strip("/"):
                raise InvalidShard(f"shards[{index}]: {text!r} names no object")
            checked.append(text)
        else:
            allowed = ", ".join(settings.shard_scheme_list) or "none"
            raise InvalidShard(f"shards[{index}]: the scheme {scheme!r} of {text!r} is not "
                               f"allowed (allowed by {schemes_variable}: {allowed})",
                               setting=schemes_variable)
        if checked[-1] in checked[:-1]:
            raise InvalidShard(f"shards[{index}]: {text!r} is listed twice (its rows would "
                               f"count twice)")
    return checked


def shards_digest(shards: list[str], n_features: int | None, zero_based: bool) -> str:
    """The address of a sharded dataset among its owner's datasets: the same shards read the
    same way are the same dataset (registered again, the existing row answers)."""
    header = {"kind": "sharded", "shards": shards, "n_features": n_features,
              "zero_based": zero_based}
    return hashlib.sha256(json.dumps(header, sort_keys=True).encode()).hexdigest()
