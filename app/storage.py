"""Content-addressed storage of dataset arrays under ``data_dir/datasets``.

A dataset is stored once, as an uncompressed ``.npz`` (CSR arrays, labels, optional query ids
and sample weights; never pickled), named by the SHA-256 of its canonical arrays: the same
data uploaded twice -- even once gzipped, or with numbers spelled differently -- is one file
and one dataset.  Files are written to a temporary name in the same directory, synced and
renamed into place, and the directory is synced after the rename, so a reader never sees half
a file, a failed write leaves nothing and a stored file survives a power cut.  What a crash
leaves (a temporary file, a file whose database row was never committed) is removed by
:meth:`DatasetStore.sweep` when the service starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Container
from pathlib import Path

import numpy as np
import scipy.sparse as sp

FORMAT = {"format": "svmsvc-dataset", "version": 1}


def dataset_digest(dataset) -> str:
    """SHA-256 (hex) of a :class:`solvers.Dataset`'s canonical arrays.

    Index arrays are hashed as little-endian int64 and values as little-endian float64,
    whatever their width in memory, so the digest depends on the data only.
    """
    X = dataset.X
    header = dict(FORMAT, shape=list(X.shape), qid=dataset.qid is not None,
                  sample_weight=dataset.sample_weight is not None)
    digest = hashlib.sha256(json.dumps(header, sort_keys=True).encode())
    parts = [X.indptr.astype("<i8"), X.indices.astype("<i8"), X.data.astype("<f8"),
             dataset.y.astype("<f8")]
    if dataset.qid is not None:
        parts.append(dataset.qid.astype("<i8"))
    if dataset.sample_weight is not None:
        parts.append(dataset.sample_weight.astype("<f8"))
    for part in parts:
        data = np.ascontiguousarray(part).tobytes()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class DatasetStore:
    """Dataset files under ``root``, addressed by digest (``root/ab/abcdef....npz``)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        # Held by whoever pairs a file with its database row (uploads, deletions), so that a
        # deletion never removes the file of a row that an upload is creating.
        self.lock = threading.Lock()

    def path(self, digest: str) -> Path:
        """The file of the dataset with this digest."""
        return self.root / digest[:2] / f"{digest}.npz"

    def save(self, dataset, digest: str) -> tuple[int, bool]:
        """Write the arrays unless a file with this digest exists.

        Returns (file size in bytes, whether this call wrote the file).
        """
        target = self.path(digest)
        if target.exists():
            return target.stat().st_size, False
        target.parent.mkdir(parents=True, exist_ok=True)
        arrays = {
            "shape": np.asarray(dataset.X.shape, dtype=np.int64),
            "indptr": dataset.X.indptr,
            "indices": dataset.X.indices,
            "data": dataset.X.data,
            "y": dataset.y,
        }
        if dataset.qid is not None:
            arrays["qid"] = dataset.qid
        if dataset.sample_weight is not None:
            arrays["sample_weight"] = dataset.sample_weight
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".upload-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                np.savez(file, **arrays)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
            _sync_directory(target.parent)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return target.stat().st_size, True

    def load(self, digest: str):
        """The stored :class:`solvers.Dataset`."""
        from solvers import Dataset

        with np.load(self.path(digest), allow_pickle=False) as archive:
            shape = tuple(int(n) for n in archive["shape"])
            X = sp.csr_matrix((archive["data"], archive["indices"], archive["indptr"]),
                              shape=shape)
            qid = archive["qid"] if "qid" in archive.files else None
            weights = archive["sample_weight"] if "sample_weight" in archive.files else None
            return Dataset(X, archive["y"], qid=qid, sample_weight=weights)

    def delete(self, digest: str) -> None:
        """Remove the file (if it is there)."""
        self.path(digest).unlink(missing_ok=True)

    def sweep(self, known_digests: Container[str], grace_s: float) -> tuple[int, int]:
        """Remove what a crash left: temporary upload files, and stored files whose digest
        has no dataset row, both older than ``grace_s`` seconds (younger ones may belong to
        an upload in progress).  Returns (temporary files, orphan files) removed."""
        if not self.root.is_dir():
            return 0, 0
        cutoff = time.time() - grace_s
        removed = [0, 0]
        for path in self.root.glob("*/*"):
            temporary = path.name.startswith(".upload-") and path.suffix == ".tmp"
            orphan = path.suffix == ".npz" and path.stem not in known_digests
            if not (temporary or orphan):
                continue
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed[0 if temporary else 1] += 1
            except FileNotFoundError:
                pass  # removed meanwhile
        return removed[0], removed[1]


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (fsync of the directory itself)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
