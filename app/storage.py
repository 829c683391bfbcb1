"""Content-addressed storage of dataset arrays, behind one interface (:class:`DatasetStorage`):
a directory (:class:`DatasetStore`: ``data_dir/datasets`` by default, or a shared mount every
cluster worker sees) or an object store through fsspec (:class:`ObjectDatasetStore`: S3 and
whatever else fsspec reaches).  :func:`open_store` picks one from a location.

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
from collections.abc import Container, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol

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


class DatasetStorage(Protocol):
    """What the service and the workers need from wherever dataset files live; beside the
    datasets, the results of batch prediction jobs (``predictions/<job id>.<format>``)."""

    lock: threading.Lock

    def save(self, dataset, digest: str) -> tuple[int, bool]: ...

    def load(self, digest: str): ...

    def open_dataset(self, digest: str) -> BinaryIO: ...

    def delete(self, digest: str) -> None: ...

    def sweep(self, known_digests: Container[str], grace_s: float) -> tuple[int, int]: ...

    def write_result(self, name: str) -> AbstractContextManager[BinaryIO]: ...

    def open_result(self, name: str) -> BinaryIO: ...

    def delete_result(self, name: str) -> None: ...


RESULTS = "predictions"
"""The folder of the store that holds batch prediction results (no digest is this name)."""


def result_name(job_id, extension: str) -> str:
    """The stored name of a prediction job's result."""
    return f"{RESULTS}/{job_id}.{extension}"


def _member_offsets(file: BinaryIO) -> dict[str, tuple[int, np.dtype, tuple[int, ...]]]:
    """Where each array of a stored (uncompressed) ``.npz`` starts in the file, its dtype
    and shape: the zip's central directory, each member's local header, then its ``.npy``
    header (``np.savez`` stores members uncompressed, so an array is a plain byte range)."""
    import struct
    import zipfile

    offsets = {}
    with zipfile.ZipFile(file) as archive:
        members = archive.infolist()
    for member in members:
        if member.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{member.filename}: a compressed member cannot be read in "
                             f"pieces")
        file.seek(member.header_offset)
        header = file.read(30)
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        file.seek(member.header_offset + 30 + name_length + extra_length)
        version = np.lib.format.read_magic(file)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0(file) if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0(file))
        if fortran and len(shape) > 1:
            raise ValueError(f"{member.filename}: a Fortran-ordered array")
        offsets[member.filename.removesuffix(".npy")] = (file.tell(), dtype, shape)
    return offsets


def _read_range(file: BinaryIO, where: tuple[int, np.dtype, tuple[int, ...]], start: int,
                stop: int) -> np.ndarray:
    """Elements ``start:stop`` of the array at ``where``, read from the file (a fresh,
    writable array of just those elements)."""
    offset, dtype, _ = where
    out = np.empty(stop - start, dtype=dtype)
    file.seek(offset + start * dtype.itemsize)
    view = memoryview(out).cast("B")
    read = 0
    while read < view.nbytes:
        got = file.readinto(view[read:])
        if not got:
            raise ValueError("the stored dataset file ends early")
        read += got
    return out


def iter_row_chunks(file: BinaryIO, rows: int,
                    n_features: int | None = None) -> Iterator[tuple[int, int, sp.csr_matrix]]:
    """The rows of a stored dataset ``rows`` at a time, read from its open file without
    loading it: ``(first row, number of rows in all, CSR matrix of the chunk)``, the matrix
    ``n_features`` wide (default: the dataset's width; a wider one pads columns).  Memory
    is that of one chunk, whatever the dataset's size."""
    arrays = _member_offsets(file)
    shape = tuple(int(n) for n in _read_range(file, arrays["shape"], 0, 2))
    total, width = shape
    width = width if n_features is None else max(width, n_features)
    for start in range(0, total, rows):
        stop = min(start + rows, total)
        indptr = _read_range(file, arrays["indptr"], start, stop + 1)
        first, last = int(indptr[0]), int(indptr[-1])
        indices = _read_range(file, arrays["indices"], first, last)
        data = _read_range(file, arrays["data"], first, last)
        indptr -= indptr[0]
        yield start, total, sp.csr_matrix((data, indices, indptr), shape=(stop - start, width))


def open_store(location: str | Path) -> DatasetStorage:
    """The store at ``location``: a directory path (or ``file://`` URL) is a
    :class:`DatasetStore` (atomic renames, fsync: right for a local disk and for a shared POSIX
    mount), any other URL (``s3://bucket/prefix``, ``memory://...``) an
    :class:`ObjectDatasetStore` through fsspec."""
    location = str(location)
    if location.startswith("file://"):
        location = location[len("file://"):]
    if "://" not in location:
        return DatasetStore(Path(location))
    return ObjectDatasetStore(location)


def _archive_arrays(dataset) -> dict[str, np.ndarray]:
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
    return arrays


def archive_bytes(dataset) -> int:
    """The bytes of the arrays a store writes for ``dataset`` (its ``.npz`` is uncompressed:
    the file takes these and a few hundred bytes of headers)."""
    return sum(array.nbytes for array in _archive_arrays(dataset).values())


def _dataset_from_archive(file):
    from solvers import Dataset
    from solvers.data.dataset import integral_labels

    with np.load(file, allow_pickle=False) as archive:
        shape = tuple(int(n) for n in archive["shape"])
        X = sp.csr_matrix((archive["data"], archive["indices"], archive["indptr"]),
                          shape=shape)
        qid = archive["qid"] if "qid" in archive.files else None
        weights = archive["sample_weight"] if "sample_weight" in archive.files else None
        return Dataset(X, integral_labels(archive["y"]), qid=qid, sample_weight=weights)


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
        with _atomic_file(target) as file:
            np.savez(file, **_archive_arrays(dataset))
        return target.stat().st_size, True

    def load(self, digest: str):
        """The stored :class:`solvers.Dataset`."""
        return _dataset_from_archive(self.path(digest))

    def open_dataset(self, digest: str) -> BinaryIO:
        """The stored file, open for reading (:func:`iter_row_chunks` reads it in pieces)."""
        return open(self.path(digest), "rb")  # noqa: SIM115 (the caller closes it)

    @contextmanager
    def write_result(self, name: str) -> Iterator[BinaryIO]:
        """A file to write a result to: written under a temporary name, synced and renamed
        into place when the block ends without error (else removed): a reader never sees a
        partial result."""
        with _atomic_file(self.root / name) as file:
            yield file

    def open_result(self, name: str) -> BinaryIO:
        """A stored result, open for reading (FileNotFoundError when there is none)."""
        return open(self.root / name, "rb")  # noqa: SIM115 (the caller closes it)

    def delete_result(self, name: str) -> None:
        """Remove a stored result (if it is there)."""
        (self.root / name).unlink(missing_ok=True)

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


class ObjectDatasetStore:
    """Dataset files in an object store through fsspec, at ``url/ab/abcdef....npz``.

    An object appears whole or not at all when its upload completes (S3 and its kin), so no
    temporary name is needed; ``sweep`` removes objects without a dataset row, older than the
    grace, when the store reports modification times.
    """

    def __init__(self, url: str, **storage_options):
        from fsspec.core import url_to_fs

        self.url = url.rstrip("/")
        self.fs, self.root = url_to_fs(self.url, **storage_options)
        self.root = self.root.rstrip("/")
        self.lock = threading.Lock()

    def key(self, digest: str) -> str:
        """The object of the dataset with this digest (a path inside the file system)."""
        return f"{self.root}/{digest[:2]}/{digest}.npz"

    def save(self, dataset, digest: str) -> tuple[int, bool]:
        """Upload the arrays unless an object with this digest exists."""
        import io

        key = self.key(digest)
        if self.fs.exists(key):
            return int(self.fs.size(key)), False
        buffer = io.BytesIO()
        np.savez(buffer, **_archive_arrays(dataset))
        data = buffer.getvalue()
        self.fs.makedirs(f"{self.root}/{digest[:2]}", exist_ok=True)
        self.fs.pipe_file(key, data)
        return len(data), True

    def load(self, digest: str):
        """The stored :class:`solvers.Dataset` (read whole, then parsed)."""
        import io

        return _dataset_from_archive(io.BytesIO(self.fs.cat_file(self.key(digest))))

    def open_dataset(self, digest: str) -> BinaryIO:
        """The stored object, open for ranged reads (:func:`iter_row_chunks`)."""
        return self.fs.open(self.key(digest), "rb")

    @contextmanager
    def write_result(self, name: str) -> Iterator[BinaryIO]:
        """An object to write a result to, streamed up in parts (multipart on S3); it
        appears whole when the block ends, and a failed write is removed."""
        key = f"{self.root}/{name}"
        self.fs.makedirs(key.rsplit("/", 1)[0], exist_ok=True)
        try:
            with self.fs.open(key, "wb") as file:
                yield file
        except BaseException:
            self.delete_result(name)
            raise

    def open_result(self, name: str) -> BinaryIO:
        """A stored result, open for reading (FileNotFoundError when there is none)."""
        return self.fs.open(f"{self.root}/{name}", "rb")

    def delete_result(self, name: str) -> None:
        """Remove a stored result (if it is there)."""
        try:
            self.fs.rm_file(f"{self.root}/{name}")
        except FileNotFoundError:
            pass

    def delete(self, digest: str) -> None:
        """Remove the object (if it is there)."""
        try:
            self.fs.rm_file(self.key(digest))
        except FileNotFoundError:
            pass

    def sweep(self, known_digests: Container[str], grace_s: float) -> tuple[int, int]:
        """Remove objects without a dataset row older than ``grace_s`` seconds."""
        if not self.fs.exists(self.root):
            return 0, 0
        cutoff = time.time() - grace_s
        removed = 0
        for key, info in self.fs.find(self.root, detail=True).items():
            name = key.rsplit("/", 1)[-1]
            if not name.endswith(".npz") or name[:-4] in known_digests:
                continue
            modified = _modified_time(info)
            if modified is not None and modified < cutoff:
                try:
                    self.fs.rm_file(key)
                    removed += 1
                except FileNotFoundError:
                    pass
        return 0, removed


def _modified_time(info: dict) -> float | None:
    """An fsspec listing entry's modification time as a POSIX timestamp (the backends name
    it differently: ``mtime``, ``LastModified``, ``created``); None when it has none."""
    import datetime

    for name in ("mtime", "LastModified", "last_modified", "created"):
        value = info.get(name)
        if value is None:
            continue
        if isinstance(value, datetime.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=datetime.UTC)
            return value.timestamp()
        try:
            return float(value)
        except (TypeError, ValueError):
            continue
    return None


@contextmanager
def _atomic_file(target: Path) -> Iterator[BinaryIO]:
    """A file written to a temporary name beside ``target`` (swept as an upload's when a crash
    leaves it), synced, renamed into place and the directory synced when the block ends
    without error; removed otherwise."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".upload-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
        _sync_directory(target.parent)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (fsync of the directory itself)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
