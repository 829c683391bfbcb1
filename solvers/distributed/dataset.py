"""A dataset whose rows stay on Dask workers: shards parsed where they are held."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from solvers import config
from solvers.distributed.cluster import Partition, PartitionGroup, create_partitions


@dataclass
class DistributedDataset:
    """Rows partitioned over Dask workers (one :class:`~solvers.distributed.cluster.
    Partition` actor per shard, its CSR rows, labels and weights in the worker's memory).

    The driver knows the shapes, the label set and sums only: ``n_samples``, ``n_features``,
    ``nnz``, ``classes`` (numeric labels, sorted), ``class_counts``, the partitions' sizes.
    The row operator of a posed problem (:mod:`solvers.distributed.problem`) appends the
    bias column on the workers, as :class:`solvers.problems.BinaryProblem` does.
    """

    partitions: PartitionGroup
    n_samples: int
    n_features: int
    nnz: int
    classes: np.ndarray
    class_counts: np.ndarray
    partition_sizes: list[int]
    weighted: bool
    square_norm_sum: float
    #: restarts of a solve after a lost worker (``solvers.train``: the lost partitions read
    #: again from their shards, the solve resumed); None: ``config.DISTRIBUTED_RESTARTS``
    restarts: int | None = None

    @property
    def max_restarts(self) -> int:
        return config.DISTRIBUTED_RESTARTS if self.restarts is None else int(self.restarts)

    @property
    def client(self):
        return self.partitions.client

    @property
    def class_labels(self) -> np.ndarray:
        """The classes in their own type (integral floats as ints, as ``Dataset``)."""
        if np.all(self.classes == np.round(self.classes)):
            return self.classes.astype(np.int64)
        return self.classes

    @property
    def n_partitions(self) -> int:
        return len(self.partitions)

    def __repr__(self) -> str:
        return (f"DistributedDataset(n_samples={self.n_samples}, n_features={self.n_features}, "
                f"nnz={self.nnz}, classes={len(self.classes)}, "
                f"partitions={self.partition_sizes})")

    def stats(self) -> dict:
        return {"n_samples": self.n_samples, "n_features": self.n_features, "nnz": self.nnz,
                "n_classes": int(len(self.classes)), "partitions": list(self.partition_sizes)}

    def close(self) -> None:
        """Release the partitions (the actors' memory on the workers)."""
        futures, self.partitions.futures = self.partitions.futures, []
        self.partitions.actors = []
        if futures:
            self.client.cancel(futures)


def read_svmlight(client, paths, n_features: int | None = None, zero_based: bool = False,
                  workers: list[str] | None = None, restarts: int | None = None
                  ) -> DistributedDataset:
    """Parse SVMlight shards on the workers (the library's own parser,
    :func:`solvers.data.read_svmlight`, runs in the worker process) and keep them there.

    ``paths``: local paths every worker can read, fsspec URLs (``s3://bucket/part-0.svm``:
    fsspec and its filesystem package on the workers), or ``("call", function, args)``
    triples whose function makes the shard's :class:`~solvers.data.Dataset` on the worker.
    Shard k goes to worker k mod the number of workers (``workers``: the addresses to use,
    default all the client's), in the order the scheduler lists them.  ``n_features``: the
    width (default: the largest index over the shards, found from their summaries).  Only
    each shard's shape, label set and sums come back to the client.  ``restarts``: how many
    times a solve on the dataset may resume after losing a worker (its partitions read again
    from these sources onto the workers left; default ``config.DISTRIBUTED_RESTARTS``).
    """
    if restarts is not None and restarts < 0:
        raise ValueError(f"restarts must be >= 0, got {restarts}")
    sources = [p if isinstance(p, tuple) else os.fspath(p) for p in paths]
    if not sources:
        raise ValueError("read_svmlight needs at least one shard")
    addresses = list(workers) if workers else sorted(client.scheduler_info()["workers"])
    if not addresses:
        raise ValueError("the Dask cluster has no workers")
    placed = [addresses[k % len(addresses)] for k in range(len(sources))]
    futures = [client.submit(Partition, source, n_features, zero_based, actor=True,
                             workers=[where], allow_other_workers=False, pure=False)
               for source, where in zip(sources, placed, strict=True)]
    timeout = config.DISTRIBUTED_ROUND_TIMEOUT  # every wait bounded (a worker may die)
    actors = create_partitions(client, futures, placed)
    group = PartitionGroup(client, actors, placed, sources, futures,
                           {"n_features": n_features, "zero_based": zero_based})
    summaries = [a.summary() for a in actors]
    summaries = [s.result(timeout=timeout) for s in summaries]
    width = max(s["n_features"] for s in summaries)
    if n_features is not None:
        width = max(width, int(n_features))
    if any(s["n_features"] != width for s in summaries):
        for done in [a.set_width(width) for a in actors]:
            done.result(timeout=timeout)
    group.width = int(width)
    group.shapes = [(int(s["n_samples"]), int(s["nnz"])) for s in summaries]
    group.share_threads()  # a worker's partitions at once on its threads
    classes = np.unique(np.concatenate([s["classes"] for s in summaries]))
    counts = np.zeros(classes.shape[0], dtype=np.int64)
    for s in summaries:
        counts[np.searchsorted(classes, s["classes"])] += s["class_counts"]
    return DistributedDataset(
        partitions=group,
        n_samples=int(sum(s["n_samples"] for s in summaries)),
        n_features=int(width),
        nnz=int(sum(s["nnz"] for s in summaries)),
        classes=classes,
        class_counts=counts,
        partition_sizes=[int(s["n_samples"]) for s in summaries],
        weighted=any(s["weighted"] for s in summaries),
        square_norm_sum=float(sum(s["square_norm_sum"] for s in summaries)),
        restarts=restarts,
    )


def split_svmlight(path, out_dir, fractions=None, n_shards: int | None = None,
                   prefix: str | None = None) -> list[Path]:
    """Split one SVMlight file into shards at line boundaries, without parsing it.

    ``fractions``: each shard's share of the file's bytes (they are normalized; a 0 makes an
    empty shard), or ``n_shards`` equal shares.  A cut falls at the first line end at or after
    its byte offset, so every line lands whole in exactly one shard and the shards, in order,
    are the file.  The file is streamed (1 MiB at a time): it need not fit in memory.
    Returns the shards' paths (``out_dir/<prefix>.<k>``).
    """
    path = Path(path)
    if fractions is None:
        if not n_shards or n_shards < 1:
            raise ValueError("give fractions or a positive n_shards")
        fractions = [1.0] * n_shards
    shares = np.asarray(fractions, dtype=np.float64)
    if shares.ndim != 1 or shares.size == 0 or np.any(shares < 0) or not shares.sum() > 0:
        raise ValueError("fractions must be non-negative with a positive sum")
    size = path.stat().st_size
    bounds = np.floor(np.cumsum(shares) / shares.sum() * size).astype(np.int64)
    bounds[-1] = size
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = prefix or path.name
    outputs = [out_dir / f"{prefix}.{k}" for k in range(len(shares))]
    with open(path, "rb") as source:
        position = 0
        for k, target in enumerate(outputs):
            with open(target, "wb") as sink:
                end = int(bounds[k])
                if end <= position and k < len(outputs) - 1:
                    continue  # an empty shard (or its cut fell inside an earlier line)
                # copy up to the offset, then to the end of the line it falls in
                while position < end:
                    chunk = source.read(min(1 << 20, end - position))
                    if not chunk:
                        break
                    sink.write(chunk)
                    position += len(chunk)
                if k == len(outputs) - 1:
                    while chunk := source.read(1 << 20):
                        sink.write(chunk)
                        position += len(chunk)
                    break
                if position > 0:
                    source.seek(position - 1)
                    if source.read(1) != b"\n":
                        rest = source.readline()
                        sink.write(rest)
                        position += len(rest)
    return outputs
