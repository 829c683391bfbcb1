"""Where the benchmarks and the tests find things: the datasets the repository carries.

The real datasets are committed xz-compressed in ``data/`` (see its README for their provenance)
with the sha256 of every file uncompressed in ``data/SHA256SUMS``. :func:`dataset_path` hands out
a plain copy, decompressed once into ``.cache/data/`` and checked against that sum, so every
reader (the bench, the harness, the tests, a browser upload in the dashboard's tests) gets the
same bytes whatever it does with a path. This module imports nothing of the project, so the
service's tests can use it without loading the library.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPOSITORY / "bench" / "results"
DATA_DIR = REPOSITORY / "data"
CACHE_DIR = REPOSITORY / ".cache" / "data"
CHECKSUMS = DATA_DIR / "SHA256SUMS"


class DatasetNotFound(FileNotFoundError):
    """A dataset the repository does not carry."""


def checksums() -> dict[str, str]:
    """The sha256 of every committed dataset uncompressed, by name (``regression/...`` for the
    regression sets)."""
    sums = {}
    for line in CHECKSUMS.read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            sums[name.strip()] = digest
    return sums


def dataset_names(folder: str = "") -> list[str]:
    """The datasets committed in ``data/`` (``folder="regression"``: those in its subfolder)."""
    prefix = f"{folder}/" if folder else ""
    return sorted(name for name in checksums()
                  if name.startswith(prefix) and "/" not in name[len(prefix):])


def dataset_path(name: str) -> Path:
    """A plain (uncompressed) copy of the committed dataset ``name``, checked against its sha256.

    Decompressed on first use into :data:`CACHE_DIR` through a temporary file and an atomic
    rename, so concurrent test processes never read a half-written copy.
    """
    sums = checksums()
    if name not in sums:
        raise DatasetNotFound(f"the repository carries no dataset {name!r} (data/SHA256SUMS "
                              f"lists {', '.join(sorted(sums))})")
    target = CACHE_DIR / name
    if target.exists() and target.stat().st_mtime >= (DATA_DIR / f"{name}.xz").stat().st_mtime:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as sink, lzma.open(DATA_DIR / f"{name}.xz") as source:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
                sink.write(chunk)
        if digest.hexdigest() != sums[name]:
            raise ValueError(f"data/{name}.xz does not decompress to the sha256 that "
                             f"data/SHA256SUMS records ({digest.hexdigest()} != {sums[name]})")
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
