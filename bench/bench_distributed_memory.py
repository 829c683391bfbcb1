"""A dataset larger than any one worker's memory limit, trained data-parallel (issue 36): a
measurement, not a test.

    python -m bench distributed_memory [--gigabytes 5] [--workers 4] [--memory-limit 2GB]
                                       [--partitions-per-worker 16] [--features 200000]
                                       [--mean-words 100] [--max-iter 3] [--tol 1e-3]
                                       [--compact-max F] [--memory-fraction F]
                                       [--read-only] [--out FILE]

A ``distributed.LocalCluster`` of ``--workers`` worker processes x 1 thread, each with Dask's
``memory_limit``; a synthetic text-like set of about ``--gigabytes`` GB in CSR (8-byte
values, 4-byte column indices, 4-byte row pointers: the bytes the partitions hold) is
*generated on the workers* (``solvers.distributed.read_svmlight`` with
``("call", text_partition, args)`` sources: nothing is written to disk, nothing passes
through the client) and ``--solver`` runs ``--max-iter`` iterations or to ``--tol`` on it at
C = 1: ``mfn`` (squared hinge; Newton iterations) or ``ocas`` (``cutting_plane``, hinge; its
per-example state is the margins only) with the library's defaults: a partition copies its
active rows for CGLS only when the copy fits in ``config.DISTRIBUTED_COMPACT_MEMORY_FRACTION``
of its worker's memory limit (``--memory-fraction``; a copy takes up to the rows' size again),
otherwise CGLS passes over all its rows with the inactive ones weighted zero (``--compact-max
0`` asks for that always: ``config.DISTRIBUTED_COMPACT_MAX_FRACTION``). ``restarts=0``: a
worker lost (the nanny's terminate threshold, 95% of the limit) fails the run instead of hiding
behind a restart.

Recorded: rows, features, stored entries, CSR bytes (total and per worker); per worker the
peak resident set size (the kernel's high-water mark ``VmHWM`` of the worker process, read at
the end, and the peak of a 0.25 s sampling through psutil, with the resident size after the
read); the client process's peak (``ru_maxrss``: it holds the scheduler and the nannies of the
``LocalCluster`` too); the seconds of the read (generation) and of the training; iterations;
whether any worker restarted (the workers' pids and addresses before and after, and the
scheduler's count of workers).

The rows (:func:`text_partition`): documents of log-normal length (``--mean-words``), word
ids from a Zipf law (exponent 1.1) over the vocabulary (the same permutation on every
worker), values the term counts scaled to unit Euclidean norm, labels from a planted linear
separator (Gaussian weights, the same on every worker) with 5% flipped: the text-like rows of
:mod:`bench.synthetic`, made a partition at a time, in chunks, with the rows in non-decreasing
order of length (the row operator then keeps them as they are: no sorted copy).
"""

from __future__ import annotations

import functools
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import solvers
from bench.commands import Command, option, out
from bench.harness import machine_description

SEED = 20261127
ZIPF_EXPONENT = 1.1
LABEL_NOISE = 0.05
CHUNK_ROWS = 20_000


@functools.cache
def _vocabulary(n_features: int):
    """The Zipf law's CDF over ranks, the rank -> word id permutation and the planted
    separator: the same on every worker (fixed seeds)."""
    ranks = np.arange(1, n_features + 1, dtype=np.float64)
    cdf = np.cumsum(ranks ** -ZIPF_EXPONENT)
    cdf /= cdf[-1]
    permutation = np.random.default_rng(SEED).permutation(n_features).astype(np.int64)
    w_true = np.random.default_rng(SEED + 1).standard_normal(n_features)
    return cdf, permutation, w_true


def _chunk(rng, m: int, n_features: int, mean_words: float, cdf, permutation, w_true):
    """m rows: (column indices, values, row lengths, planted scores)."""
    words_per_row = np.maximum(1, rng.lognormal(np.log(mean_words), 0.6, m).astype(np.int64))
    ranks = np.searchsorted(cdf, rng.random(int(words_per_row.sum())), side="right")
    np.minimum(ranks, n_features - 1, out=ranks)
    key = np.repeat(np.arange(m, dtype=np.int64) * n_features, words_per_row)
    key += permutation[ranks]
    del ranks
    key.sort()
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    counts = np.diff(np.append(starts, key.shape[0])).astype(np.float64)
    key = key[starts]
    row = key // n_features
    column = (key - row * n_features).astype(np.int32)
    del key, starts
    norms = np.sqrt(np.bincount(row, weights=counts * counts, minlength=m))
    counts /= norms[row]
    scores = np.bincount(row, weights=counts * w_true[column], minlength=m)
    return column, counts, np.bincount(row, minlength=m), scores


@functools.cache
def _threshold(n_features: int, mean_words: float) -> float:
    """The median planted score of a fixed pilot of 4,000 rows (the same on every worker):
    the classes about balanced (the most frequent words, in nearly every document, would
    otherwise decide most labels)."""
    vocabulary = _vocabulary(n_features)
    scores = _chunk(np.random.default_rng(SEED - 2), 4_000, n_features, mean_words,
                    *vocabulary)[3]
    return float(np.median(scores))


def text_partition(seed: int, n_rows: int, n_features: int, mean_words: float
                   ) -> solvers.Dataset:
    """One partition of the text-like set (module docstring), made in chunks of
    ``CHUNK_ROWS`` rows so that the transient arrays stay small against the rows kept."""
    from solvers.core.sparse import CompactRows  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    vocabulary = _vocabulary(n_features)
    threshold = _threshold(n_features, mean_words)
    indices, values, lengths, labels = [], [], [], []
    for start in range(0, n_rows, CHUNK_ROWS):
        m = min(CHUNK_ROWS, n_rows - start)
        column, counts, length, scores = _chunk(rng, m, n_features, mean_words, *vocabulary)
        y = np.where(scores > threshold, 1.0, -1.0)
        flip = rng.random(m) < LABEL_NOISE
        y[flip] = -y[flip]
        indices.append(column)
        values.append(counts)
        lengths.append(length)
        labels.append(y)
    lengths = np.concatenate(lengths)
    y = np.concatenate(labels)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    X = sp.csr_matrix((np.concatenate(values), np.concatenate(indices), indptr),
                      shape=(n_rows, n_features))
    del indices, values
    # rows in non-decreasing order of length, gathered by the library's own kernel
    order = np.argsort(lengths, kind="stable")
    sorted_rows = CompactRows(X, order)
    del X
    index_type = np.int32 if sorted_rows.indptr[-1] < 2**31 else np.int64
    X = sp.csr_matrix((sorted_rows.data, sorted_rows.indices,
                       sorted_rows.indptr.astype(index_type)), shape=(n_rows, n_features))
    X.has_sorted_indices = True
    return solvers.Dataset(X, y[order])


def csr_bytes(nnz: int, n_rows: int, index_bytes: int = 4) -> int:
    return nnz * (8 + index_bytes) + (n_rows + 1) * index_bytes


class PeakSampler(threading.Thread):
    """The resident sizes of processes (pids), sampled every ``interval`` seconds; the peak
    of each."""

    def __init__(self, pids: dict[str, int], interval: float = 0.25):
        super().__init__(daemon=True)
        import psutil  # noqa: PLC0415

        self.processes = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.interval = interval
        self.peaks = dict.fromkeys(pids, 0)
        self.samples = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.sample()
            self.stopped.wait(self.interval)

    def sample(self) -> dict[str, int]:
        now = {}
        for name, process in self.processes.items():
            try:
                now[name] = process.memory_info().rss
            except Exception:  # noqa: BLE001 (a process gone: its peak so far stays)
                continue
            self.peaks[name] = max(self.peaks[name], now[name])
        self.samples += 1
        return now

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=10)


def high_water_mark(pid: int) -> int | None:
    """The kernel's peak resident set size of a live process (``VmHWM``), in bytes."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def run_command(args) -> int:
    import dask  # noqa: PLC0415 (optional: the dask extra)
    import distributed  # noqa: PLC0415
    from dask.utils import parse_bytes  # noqa: PLC0415

    from solvers import config  # noqa: PLC0415
    from solvers.distributed import read_svmlight  # noqa: PLC0415

    machine = machine_description(reference=False)
    limit = parse_bytes(args.memory_limit)
    target = int(args.gigabytes * 1e9)
    # rows for the target from a pilot chunk made here (a few MB)
    pilot = text_partition(SEED - 1, 5_000, args.features, args.mean_words)
    per_row = csr_bytes(pilot.nnz, pilot.n_samples) / pilot.n_samples
    n_partitions = args.workers * args.partitions_per_worker
    rows_each = int(target / per_row / n_partitions)
    del pilot
    sources = [("call", text_partition, (SEED + k, rows_each, args.features, args.mean_words))
               for k in range(n_partitions)]
    thresholds = {k: dask.config.get(f"distributed.worker.memory.{k}")
                  for k in ("target", "spill", "pause", "terminate")}
    print(f"{n_partitions} partitions of {rows_each} rows (about {per_row:.0f} bytes a row in "
          f"CSR) for {args.gigabytes:g} GB on {args.workers} workers at {args.memory_limit} "
          f"({limit} bytes; Dask's fractions {thresholds})", flush=True)
    row = {"gigabytes_asked": args.gigabytes, "workers": args.workers,
           "memory_limit_bytes": limit, "memory_thresholds": thresholds,
           "partitions": n_partitions, "features": args.features,
           "mean_words": args.mean_words,
           "solver": args.solver, "max_iter": args.max_iter, "tol": args.tol}
    client_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  processes=True, memory_limit=args.memory_limit,
                                  dashboard_address=None,
                                  env={"NUMBA_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                                       # arrays freed go back to the system at once (a
                                       # fixed mmap threshold: glibc's dynamic one would
                                       # serve the next chunks from the heap)
                                       "MALLOC_TRIM_THRESHOLD_": "65536",
                                       "MALLOC_MMAP_THRESHOLD_": "65536"},
                                  silence_logs=30) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client:
        client.wait_for_workers(args.workers, timeout=300)
        pids = client.run(os.getpid)
        sampler = PeakSampler({**pids, "client": os.getpid()})
        row["worker_rss_idle"] = sampler.sample()
        sampler.start()
        data = None
        try:
            start = time.perf_counter()
            data = read_svmlight(client, sources, n_features=args.features, restarts=0)
            row["read_seconds"] = time.perf_counter() - start
            row["worker_rss_after_read"] = sampler.sample()
            n_rows, nnz = data.n_samples, data.nnz
            per_worker = {}
            for (rows_k, nnz_k), where in zip(data.partitions.shapes, data.partitions.workers,
                                              strict=True):
                per_worker[where] = per_worker.get(where, 0) + csr_bytes(nnz_k, rows_k)
            # the bytes the partitions hold (each its own row pointers)
            row.update({"n_samples": n_rows, "nnz": nnz,
                        "csr_bytes": sum(per_worker.values()),
                        "class_counts": data.class_counts.tolist(),
                        "csr_bytes_per_worker": per_worker})
            print(f"read (generated on the workers) in {row['read_seconds']:.1f} s: "
                  f"{n_rows} rows, {nnz} entries, {row['csr_bytes'] / 1e9:.3f} GB in CSR",
                  flush=True)
            if not args.read_only:
                # read on the driver, sent with each round
                if args.compact_max is not None:
                    config.DISTRIBUTED_COMPACT_MAX_FRACTION = args.compact_max
                if args.memory_fraction is not None:
                    config.DISTRIBUTED_COMPACT_MEMORY_FRACTION = (
                        None if args.memory_fraction <= 0 else args.memory_fraction)
                row["compact_max"] = config.DISTRIBUTED_COMPACT_MAX_FRACTION
                row["memory_fraction"] = config.DISTRIBUTED_COMPACT_MEMORY_FRACTION
                start = time.perf_counter()
                options = ({"solver": "mfn"} if args.solver == "mfn" else
                           {"solver": "cutting_plane", "method": "ocas", "loss": "hinge"})
                result = solvers.train(data, C=1.0, max_iter=args.max_iter, tol=args.tol,
                                       **options)
                row["train_seconds"] = time.perf_counter() - start
                row.update({"iterations": len(result.log), "status": str(result.status),
                            "message": result.message, "objective": result.objective,
                            "gap": result.log[-1].optimality if result.log else None,
                            "warnings": result.warnings,
                            "cg_iterations":
                                result.subproblems[0].extras.get("cg_iterations"),
                            "communication": result.model.metadata["distributed"],
                            # per Newton point: partitions whose CGLS passed over all their
                            # rows (the memory rule or --compact-max) instead of a copy
                            "uncompacted_partitions": [
                                r.extras.get("uncompacted_partitions", 0)
                                for r in result.log]})
                print(f"trained in {row['train_seconds']:.1f} s: {row['iterations']} "
                      f"iterations, {row['status']}, gap {row['gap']}", flush=True)
        except Exception as exc:  # noqa: BLE001 (what failed is a result of the study)
            row["error"] = f"{type(exc).__name__}: {exc}"
            print(f"failed: {row['error']}", flush=True)
        finally:
            sampler.stop()
            row["worker_vmhwm"] = {a: high_water_mark(p) for a, p in pids.items()}
            row["worker_rss_peak_sampled"] = {a: sampler.peaks[a] for a in pids}
            row["samples"] = sampler.samples
            try:
                after = client.run(os.getpid)
            except Exception as exc:  # noqa: BLE001
                after = {"error": str(exc)}
            row["workers_after"] = after
            row["worker_restarted"] = after != pids
            if data is not None:
                data.close()
    row["client_rss_peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row["client_rss_peak_before_cluster"] = client_start
    row["client_rss_peak_sampled"] = sampler.peaks["client"]
    report = {"machine": machine, "load_after": os.getloadavg(), "row": row}
    print(markdown(row))
    print(f"load average before {machine.get('load_average_at_start')}, after "
          f"{tuple(round(x, 2) for x in os.getloadavg())}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1, default=float))
    return 0 if "error" not in row else 1


def markdown(row: dict) -> str:
    mb = 1e6
    lines = ["| worker | CSR MB | RSS idle MB | RSS after read MB | peak RSS MB (VmHWM) | "
             "peak sampled MB | peak / limit |", "|---|---|---|---|---|---|---|"]
    limit = row["memory_limit_bytes"]
    for address, hwm in row.get("worker_vmhwm", {}).items():
        csr = row.get("csr_bytes_per_worker", {}).get(address, 0)
        idle = row.get("worker_rss_idle", {}).get(address, 0)
        after = row.get("worker_rss_after_read", {}).get(address, 0)
        sampled = row.get("worker_rss_peak_sampled", {}).get(address, 0)
        lines.append(f"| {address} | {csr / mb:.0f} | {idle / mb:.0f} | {after / mb:.0f} | "
                     f"{(hwm or 0) / mb:.0f} | {sampled / mb:.0f} | "
                     f"{(hwm or 0) / limit:.0%} |")
    return "\n".join(lines)


COMMAND = Command(
    "distributed_memory", "a dataset larger than any worker's memory, trained data-parallel",
    run_command,
    description=__doc__, options=(
        option("--gigabytes", type=float, default=5.0,
               help="the set's size in CSR, total (GB of 10^9 bytes)"),
        option("--workers", type=int, default=4),
        option("--memory-limit", default="2GB", help="each worker's Dask memory_limit"),
        option("--partitions-per-worker", type=int, default=16,
               help="partitions (generated one after the other) per worker"),
        option("--features", type=int, default=200_000),
        option("--mean-words", type=float, default=100.0,
               help="mean words drawn per document (before duplicates merge)"),
        option("--solver", choices=("mfn", "ocas"), default="mfn",
               help="mfn (squared hinge) or ocas (cutting_plane, hinge)"),
        option("--max-iter", type=int, default=3,
               help="the solver's iterations (mfn: Newton iterations)"),
        option("--tol", type=float, default=1e-3, help="the duality-gap stop"),
        option("--compact-max", type=float, default=None,
               help="config.DISTRIBUTED_COMPACT_MAX_FRACTION for the run (0: never copy the "
                    "active rows; default: the library's)"),
        option("--memory-fraction", type=float, default=None,
               help="config.DISTRIBUTED_COMPACT_MEMORY_FRACTION for the run (0: no memory "
                    "rule; default: the library's)"),
        option("--read-only", action="store_true",
               help="generate the partitions and measure, no training"),
        out(None)))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["distributed_memory", *sys.argv[1:]]))
