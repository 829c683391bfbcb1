"""Partitions held on Dask workers and the one way the driver talks to them.

Each partition (one shard of a dataset) lives in a :class:`Partition`, a Dask *actor* pinned
to one worker: its CSR rows, labels and weights, and every per-example vector a solve needs
(outputs, margins, active sets, CGLS residuals, a line search's breakpoints) stay in that
process.  The driver runs one *round* at a time (:meth:`PartitionGroup.map`): the same
module-level function, with the same small arguments (d-vectors and scalars), is applied to
every partition's state at once; the results (again d-vectors and scalars) come back and the
driver reduces them.  A round is what the communication record counts: one reduction, the
bytes sent (the arguments, once per partition) and received (the results), and the seconds
the round took beyond the slowest partition's own work (the network and Dask's dispatch).

Actors rather than tasks: an actor call is one message to the worker and one back, no task
graph (with ``Client(direct_to_workers=True)``; otherwise the scheduler relays it), a round
trip of a few milliseconds on an idle machine, and its state is the natural home of the
n-vectors that must not move.  The price is Dask's
actor semantics: a partition lost with its worker is not recomputed by the scheduler; a round
that meets a lost worker raises :class:`PartitionLostError` with the reason, and a round never
waits longer than :data:`solvers.config.DISTRIBUTED_ROUND_TIMEOUT` seconds.
:meth:`PartitionGroup.recover` then reads the partitions that no longer answer again from their
shards onto the workers left (``solvers.train`` does, and resumes the solve: at most the
dataset's ``restarts`` times).

Dask is imported here and in :mod:`solvers.distributed.dataset` only.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from solvers import config
from solvers.data.dataset import Dataset
from solvers.data.svmlight import SVMLightFormatError, read_svmlight


class PartitionLostError(RuntimeError):
    """A partition's worker was lost (or a round timed out): the solve cannot go on."""


class WorkerMemoryError(MemoryError):
    """The shards do not fit: a worker stayed paused by Dask's memory manager with
    partitions still to read on it."""


def create_partitions(client, futures: list, placed: list[str]) -> list:
    """The actors of ``futures`` (``client.submit(Partition, ..., actor=True)``, partition k
    on worker ``placed[k]``), waited for with one deadline,
    :data:`~solvers.config.DISTRIBUTED_ROUND_TIMEOUT`.  While some are not made, every
    :data:`~solvers.config.DISTRIBUTED_HEARTBEAT_POLL` seconds the scheduler is asked for
    their workers' status: a worker paused by Dask's memory manager (its resident size
    above the pause fraction of its limit: it starts no task, and the partitions it holds
    keep their memory) for :data:`~solvers.config.DISTRIBUTED_PAUSED_TIMEOUT` seconds fails
    the read with :class:`WorkerMemoryError` naming it, its memory and what to do; the
    futures are cancelled."""
    paused_since: dict[str, float] = {}

    def check(k: int) -> None:
        waiting = [placed[j] for j in range(k, len(futures)) if not futures[j].done()]
        _check_paused(client, waiting, paused_since)

    try:
        return await_all(futures, check)
    except BaseException:
        client.cancel(futures)
        raise


def await_all(futures: list, on_wait: Callable[[int], None]) -> list:
    """The results of ``futures`` (Dask futures or actor futures), in order, with one
    deadline for all, :data:`~solvers.config.DISTRIBUTED_ROUND_TIMEOUT` (``TimeoutError``
    past it).  Every :data:`~solvers.config.DISTRIBUTED_HEARTBEAT_POLL` seconds without an
    answer, ``on_wait(k)`` is called with the index of the first future not answered yet:
    it may raise to end the wait with a reason."""
    timeout = config.DISTRIBUTED_ROUND_TIMEOUT
    deadline = time.monotonic() + timeout
    results = []
    for k, future in enumerate(futures):
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0.0:
                raise TimeoutError(f"no answer within DISTRIBUTED_ROUND_TIMEOUT = "
                                   f"{timeout:g} s")
            try:
                results.append(future.result(
                    timeout=min(config.DISTRIBUTED_HEARTBEAT_POLL, remaining)))
                break
            except TimeoutError:
                on_wait(k)
    return results


def _check_paused(client, waiting: list[str], paused_since: dict[str, float]) -> None:
    try:
        info = client.scheduler_info()["workers"]
    except Exception:  # noqa: BLE001 (the deadline still bounds the wait)
        return
    now = time.monotonic()
    for worker in sorted(set(waiting)):
        state = info.get(worker, {})
        if state.get("status") != "paused":
            paused_since.pop(worker, None)
            continue
        since = paused_since.setdefault(worker, now)
        if now - since >= config.DISTRIBUTED_PAUSED_TIMEOUT:
            memory = state.get("metrics", {}).get("memory")
            limit = state.get("memory_limit")
            held = (f"resident {memory / 1e9:.2f} GB of its {limit / 1e9:.2f} GB memory "
                    f"limit" if memory and limit else "at its memory limit")
            raise WorkerMemoryError(
                f"the shards do not fit in the workers' memory: worker {worker} was paused by "
                f"Dask's memory manager ({held}) for {now - since:.0f} s with "
                f"{waiting.count(worker)} partition(s) still to read on it "
                f"(DISTRIBUTED_PAUSED_TIMEOUT = {config.DISTRIBUTED_PAUSED_TIMEOUT:g} s). "
                f"Use more workers or a larger memory limit, or fewer rows")


class Partition:
    """One shard of a distributed dataset, parsed and held on its worker (a Dask actor).

    ``source`` is a local path every worker sees, an fsspec URL (``s3://...``) or, for
    generated data, ``("call", function, args)``: the rows are made on the worker.
    """

    def __init__(self, source, n_features: int | None = None, zero_based: bool = False):
        self.numba_threads = _numba_threads()
        if isinstance(source, tuple) and source and source[0] == "call":
            data = source[1](*source[2])
        else:
            data = _read_shard(source, n_features, zero_based)
        if data.label_values is not None:
            raise ValueError(f"shard {source!r} has string labels; a distributed dataset "
                             f"needs numeric labels")
        self.data: Dataset = data
        self.state: dict[str, Any] = {}  # what solves keep here (problems, n-vectors)
        self.memory_limit = _worker_memory_limit()  # bytes, or None (no limit, no worker)

    def summary(self) -> dict:
        """Shapes, the label set and sums: all the driver ever learns of the rows."""
        d = self.data
        classes, counts = np.unique(d.y, return_counts=True)
        weight = d.sample_weight
        return {"n_samples": d.n_samples, "n_features": d.n_features, "nnz": d.nnz,
                "classes": classes, "class_counts": counts,
                "weight_sum": float(d.n_samples if weight is None else weight.sum()),
                "weighted": weight is not None,
                # canonical CSR (no duplicates): the sum of squares of the stored values, without
                # the copy of the rows X.multiply(X) makes
                "square_norm_sum": float(np.dot(d.X.data, d.X.data)) if d.nnz else 0.0}

    def set_width(self, n_features: int) -> None:
        """Widen the rows to the dataset's ``n_features`` columns (shards see fewer)."""
        if n_features < self.data.n_features:
            raise ValueError(f"a shard has {self.data.n_features} features, more than "
                             f"n_features = {n_features}")
        if n_features != self.data.n_features:
            self.data = self.data.with_n_features(n_features)

    def apply(self, function: Callable, *args):
        """``function(self, *args)`` and the seconds it took (for the communication
        record)."""
        start = time.perf_counter()
        if self.numba_threads is not None:
            numba.set_num_threads(self.numba_threads)  # per thread: the calling one's
        result = function(self, *args)
        return result, time.perf_counter() - start

    async def apply_threaded(self, function: Callable, *args):
        """:meth:`apply` on a thread of the worker's own pool (``threads_per_worker``
        threads) instead of Dask's one actor thread per worker, on which the partitions of a
        worker answer a round one after another: here they answer it at once, each with its
        share of the worker's threads (:meth:`share_threads`).  Dask awaits an actor's
        coroutine on the worker's event loop."""
        import asyncio  # noqa: PLC0415

        from distributed import get_worker  # noqa: PLC0415 (only where Dask runs this)

        executor = get_worker().executors["default"]
        return await asyncio.get_running_loop().run_in_executor(executor, self.apply,
                                                                function, *args)

    def share_threads(self, partitions: int) -> int | None:
        """The Numba threads of each call when ``partitions`` partitions of this worker
        answer a round at once (:meth:`apply_threaded`): the worker's threads divided among
        them, at least 1; more than 1 only under a thread-safe Numba threading layer (TBB
        or OpenMP: the workqueue layer aborts on parallel regions from several threads)."""
        asked = _numba_threads()
        if asked is not None:
            share = max(1, asked // max(partitions, 1))
            if partitions > 1 and share > 1 and not _threadsafe_numba():
                share = 1
            self.numba_threads = share
        return self.numba_threads

    def pid(self) -> int:
        return os.getpid()

    def memory_room(self, fraction: float | None) -> float:
        """Bytes this partition may still allocate: ``fraction`` of its worker's memory
        limit minus the process's resident size now (every partition of the worker and the
        worker itself; the worker runs its actors' calls one at a time, so a partition sees
        its neighbours' allocations of the same round).  Infinite without a limit or a
        fraction."""
        if fraction is None or self.memory_limit is None:
            return float("inf")
        return fraction * self.memory_limit - _resident_bytes()


def _numba_threads() -> int | None:
    """The Numba threads the worker was asked for (``NUMBA_NUM_THREADS`` in its environment,
    e.g. a nanny's ``env``), applied per call with ``numba.set_num_threads``.

    A nanny sets its ``env`` in the spawned worker after the client's ``__main__`` module has
    been imported again there; when that module imports Numba, the thread pool was sized
    from the environment without the variable.  Numba then refuses its next compilation
    (the variable differs from the pool's size), so the variable is made to agree with the
    pool and the count asked for is applied as the threads actually used."""
    asked = os.environ.get("NUMBA_NUM_THREADS")
    if not asked:
        return None
    pool = numba.config.NUMBA_NUM_THREADS
    if int(asked) != pool:
        os.environ["NUMBA_NUM_THREADS"] = str(pool)
    return max(1, min(int(asked), pool))


def _threadsafe_numba() -> bool:
    """Whether Numba's threading layer takes parallel regions from several threads at once:
    TBB or OpenMP, which its default choice prefers when installed (the workqueue layer, the
    fallback, does not)."""
    layer = numba.config.THREADING_LAYER
    if layer in ("tbb", "omp", "threadsafe"):
        return True
    if layer == "workqueue":
        return False
    for pool in ("tbbpool", "omppool"):
        try:
            __import__(f"numba.np.ufunc.{pool}")
            return True
        except ImportError:
            continue
    return False


def _worker_memory_limit() -> int | None:
    """The memory limit of the Dask worker this runs on (bytes), None outside a worker or
    without a limit."""
    try:
        from distributed import get_worker  # noqa: PLC0415 (only where Dask runs this)

        worker = get_worker()
    except (ImportError, ValueError):
        return None
    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
    return int(limit) if limit else None


_PROCESS = None


def _resident_bytes() -> int:
    """This process's resident set size (psutil: a dependency of Dask's workers)."""
    global _PROCESS  # noqa: PLW0603 (one psutil handle per process)
    if _PROCESS is None:
        import psutil  # noqa: PLC0415

        _PROCESS = psutil.Process()
    return int(_PROCESS.memory_info().rss)


def _read_shard(source, n_features, zero_based) -> Dataset:
    """The shard's rows; a shard without data lines (an empty file: a split's share may be
    empty) is a partition of no rows."""
    try:
        return _parse_shard(source, n_features, zero_based)
    except SVMLightFormatError as exc:
        if exc.description != "no data lines":
            raise
        return Dataset(sp.csr_matrix((0, n_features or 0)), np.zeros(0))


def _parse_shard(source, n_features, zero_based) -> Dataset:
    text = str(source)
    if "://" in text and not text.startswith("file://"):
        import fsspec  # noqa: PLC0415 (an optional dependency, for remote shards only)

        with fsspec.open(text, "rb", compression="infer") as stream:
            return read_svmlight(stream, n_features=n_features, zero_based=zero_based)
    if text.startswith("file://"):
        text = text[len("file://"):]
    return read_svmlight(text, n_features=n_features, zero_based=zero_based)


def payload_bytes(value) -> int:
    """Bytes a value takes on the wire, counted as its arrays' and numbers' sizes (pickling
    adds a small constant per message, left out)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (bool, int, float, np.number, type(None))):
        return 8
    if isinstance(value, (list, tuple)):
        return sum(payload_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(payload_bytes(v) for v in value.values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a round's named answer (solvers.problems.newton_rows): its fields
        return sum(payload_bytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, str):
        return len(value)
    if callable(value):
        return 0  # a module-level function pickles by reference (its name)
    return 8


def _round_kind(function, args) -> str:
    """The name of what a round runs (a problem's rounds carry their function after the
    drops and the deferred work: ``DistributedBinaryProblem.round``)."""
    name = getattr(function, "__name__", str(function))
    if name == "_with_pending" and len(args) > 2:
        name = getattr(args[2], "__name__", name)
    return name


@dataclass
class Communication:
    """What the rounds cost: counted since the start, taken per iteration by
    :meth:`take`."""

    reductions: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    seconds: float = 0.0  # rounds' wall time
    overhead_seconds: float = 0.0  # wall time beyond the slowest partition's work
    #: every partition's own work summed (a round of P partitions adds P figures; the
    #: record's work is the slowest one's): set against the workers' CPU time, what Dask
    #: costs on the workers (bench distributed's profile)
    partition_seconds: float = 0.0
    #: per kind of round (the function a round runs): [rounds, bytes sent, bytes received,
    #: seconds], where a method's bytes go (bench distributed records them)
    by_kind: dict = field(default_factory=dict)
    _mark: dict = field(default_factory=dict)

    def count(self, kind: str, sent: int, received: int, seconds: float) -> None:
        entry = self.by_kind.setdefault(kind, [0, 0, 0, 0.0])
        entry[0] += 1
        entry[1] += sent
        entry[2] += received
        entry[3] += seconds

    def kinds(self) -> dict:
        """A copy of :attr:`by_kind` (subtract two to get one solve's)."""
        return {kind: list(entry) for kind, entry in self.by_kind.items()}

    def totals(self) -> dict:
        return {"reductions": self.reductions, "bytes_sent": self.bytes_sent,
                "bytes_received": self.bytes_received, "round_seconds": self.seconds,
                "communication_seconds": self.overhead_seconds}

    def since(self, start: dict) -> dict:
        """The totals counted after ``start`` (an earlier :meth:`totals`): one solve's
        rounds, not every solve's since the dataset was read."""
        now = self.totals()
        return {key: now[key] - start.get(key, 0) for key in now}

    def take(self) -> dict:
        """The counts since the last call (one iteration's), as record extras."""
        now = self.totals()
        delta = {key: now[key] - self._mark.get(key, 0) for key in now}
        self._mark = now
        return {"reductions": int(delta["reductions"]),
                "bytes_moved": int(delta["bytes_sent"] + delta["bytes_received"]),
                "communication_seconds": float(delta["communication_seconds"])}


class PartitionGroup:
    """The actors of one dataset and the rounds over them."""

    def __init__(self, client, actors: list, workers: list[str], sources: list,
                 futures: list | None = None, read_options: dict | None = None):
        self.client = client
        self.actors = actors
        self.futures = futures or []  # the actors' futures: releasing them frees the rows
        self.workers = workers  # the worker each actor lives on
        self.sources = sources
        # how the shards were read (n_features, zero_based) and what each held (n_samples,
        # nnz) and the dataset's width: a partition read again must be the same rows
        self.read_options = dict(read_options or {})
        self.shapes: list[tuple[int, int]] = []
        self.width: int | None = None
        self.communication = Communication()
        #: the partitions answer through :meth:`Partition.apply_threaded` (a worker's
        #: partitions at once on its threads): set by :meth:`share_threads`
        self.threaded = False

    def share_threads(self) -> None:
        """Where a worker has more threads than one and holds several partitions, let them
        answer a round at once on its threads, each with its share of them
        (:meth:`Partition.share_threads`); elsewhere a partition's calls keep Dask's actor
        thread and every thread of its worker for its Numba kernels."""
        try:
            info = self.client.scheduler_info()["workers"]
        except Exception:  # noqa: BLE001 (no scheduler to ask: the actor thread)
            return
        threads = {w: int(info.get(w, {}).get("nthreads", 1) or 1) for w in self.workers}
        held = {w: self.workers.count(w) for w in set(self.workers)}
        self.threaded = any(threads[w] > 1 and held[w] > 1 for w in held)
        if any(t > 1 for t in threads.values()):
            done = [a.share_threads(held[w]) for a, w in zip(self.actors, self.workers,
                                                              strict=True)]
            for d in done:
                d.result(timeout=config.DISTRIBUTED_ROUND_TIMEOUT)

    def __len__(self) -> int:
        return len(self.actors)

    def map(self, function: Callable, *args, per_partition: list | None = None) -> list:
        """One round: ``function(partition, *args)`` on every partition (with
        ``per_partition[k]`` appended for partition k when given); the results in partition
        order."""
        start = time.perf_counter()
        sent = payload_bytes(args) * len(self.actors)
        try:
            futures = []
            for k, actor in enumerate(self.actors):
                extra = () if per_partition is None else (per_partition[k],)
                if per_partition is not None:
                    sent += payload_bytes(per_partition[k])
                call = actor.apply_threaded if self.threaded else actor.apply
                futures.append(call(function, *args, *extra))
            outcomes = self._results(futures)
        except (TimeoutError, OSError, PartitionLostError) as exc:
            raise PartitionLostError(self._lost_reason(function, exc)) from exc
        except Exception as exc:  # a lost actor surfaces as Dask's own error types
            if _is_lost(exc):
                raise PartitionLostError(self._lost_reason(function, exc)) from exc
            raise
        elapsed = time.perf_counter() - start
        results = [r for r, _ in outcomes]
        work = max((s for _, s in outcomes), default=0.0)
        c = self.communication
        received = payload_bytes(results)
        c.reductions += 1
        c.bytes_sent += sent
        c.bytes_received += received
        c.seconds += elapsed
        c.overhead_seconds += max(elapsed - work, 0.0)
        c.partition_seconds += sum(s for _, s in outcomes)
        c.count(_round_kind(function, args), sent, received, elapsed)
        return results

    def _results(self, futures: list) -> list:
        """The round's answers, in partition order.  A round that takes longer than
        :data:`~solvers.config.DISTRIBUTED_HEARTBEAT_POLL` seconds looks at the scheduler's
        view of the workers it still waits on: one gone, or one whose last heartbeat has not
        changed for :data:`~solvers.config.DISTRIBUTED_HEARTBEAT_TIMEOUT` seconds (measured
        on this process's clock: no assumption on the scheduler's), fails the round as lost;
        none waits beyond :data:`~solvers.config.DISTRIBUTED_ROUND_TIMEOUT`."""
        heartbeats: dict[str, tuple[Any, float]] = {}  # worker -> (last_seen, since)
        return await_all(futures,
                         lambda k: self._check_heartbeats(set(self.workers[k:]), heartbeats))

    def _check_heartbeats(self, waited_on: set[str], heartbeats: dict) -> None:
        try:
            info = self.client.scheduler_info()["workers"]
        except Exception:  # noqa: BLE001 (the scheduler does not answer: the round's own
            return  # timeout still bounds the wait)
        now = time.monotonic()
        for worker in sorted(waited_on):
            if worker not in info:
                raise PartitionLostError(f"worker {worker} left the cluster while a round "
                                         f"waited on it")
            seen = info[worker].get("last_seen", info[worker].get("last-seen"))
            if seen is None:
                continue
            last, since = heartbeats.get(worker, (None, now))
            if seen != last:
                heartbeats[worker] = (seen, now)
            elif now - since > config.DISTRIBUTED_HEARTBEAT_TIMEOUT:
                raise PartitionLostError(
                    f"worker {worker} sent no heartbeat for {now - since:.0f} s "
                    f"(DISTRIBUTED_HEARTBEAT_TIMEOUT = "
                    f"{config.DISTRIBUTED_HEARTBEAT_TIMEOUT:g} s): it hangs")

    def _lost_reason(self, function, exc) -> str:
        try:
            alive = set(self.client.scheduler_info().get("workers", {})) \
                if self.client.status == "running" else set()
        except Exception:  # noqa: BLE001 (the scheduler is gone too: every worker is lost)
            alive = set()
        lost = sorted({w for w in self.workers if w not in alive})
        where = f"worker(s) {', '.join(lost)} lost" if lost else "no answer"
        return (f"a round of {getattr(function, '__name__', function)} over "
                f"{len(self.actors)} partitions failed: {where} "
                f"({type(exc).__name__}: {exc}); the partitions on a lost worker are gone "
                f"with it: read the dataset again from its shards and retry")

    def sum(self, function: Callable, *args) -> Any:
        """One round whose results are summed (arrays elementwise, tuples item by item)."""
        return reduce_sum(self.map(function, *args))

    # -- after a lost worker -----------------------------------------------------------------
    def lost_partitions(self) -> list[int]:
        """The partitions that do not answer a probe within
        :data:`~solvers.config.DISTRIBUTED_PROBE_TIMEOUT` (their worker died or hangs; one
        deadline for every probe, sent at once: a hung worker's many partitions cost the
        timeout once)."""
        deadline = time.monotonic() + config.DISTRIBUTED_PROBE_TIMEOUT  # one for all
        probes = []
        for actor in self.actors:
            try:
                probes.append(actor.pid())
            except Exception as exc:  # noqa: BLE001 (the worker is unreachable)
                probes.append(exc)
        lost = []
        for k, probe in enumerate(probes):
            if isinstance(probe, Exception):
                lost.append(k)
                continue
            try:
                probe.result(timeout=max(deadline - time.monotonic(), 0.01))
            except Exception:  # noqa: BLE001 (any failure to answer is a lost partition)
                lost.append(k)
        return lost

    def recover(self) -> dict:
        """Read the partitions whose worker was lost again from their shards, onto the
        workers left (the least loaded first), and widen them to the dataset's width; the
        partitions that answer are kept as they are.  Returns what was done (``lost``: the
        partitions' indices, ``lost_workers``, ``placed``: index -> new worker).  Raises
        :class:`PartitionLostError` with the reason when no worker is left (none joined
        within :data:`~solvers.config.DISTRIBUTED_WORKER_WAIT` seconds) or a shard no longer
        reads as it did.  Every wait is bounded (the probe's, the workers', the read's
        :data:`~solvers.config.DISTRIBUTED_ROUND_TIMEOUT`)."""
        lost = self.lost_partitions()
        if not lost:
            return {"lost": [], "lost_workers": [], "placed": {}}
        dead = {self.workers[k] for k in lost}
        deadline = time.monotonic() + config.DISTRIBUTED_WORKER_WAIT
        while True:
            try:
                alive = set(self.client.scheduler_info()["workers"])
            except Exception as exc:  # noqa: BLE001 (the scheduler itself is gone)
                raise PartitionLostError(
                    f"partitions {lost} were lost with worker(s) {', '.join(sorted(dead))} "
                    f"and the scheduler does not answer ({type(exc).__name__}: {exc}); "
                    f"nothing to read them again on") from exc
            candidates = sorted(alive - dead)
            if candidates:
                break
            if time.monotonic() >= deadline:
                raise PartitionLostError(
                    f"no worker left: partitions {lost} were lost with worker(s) "
                    f"{', '.join(sorted(dead))} and no worker joined within "
                    f"{config.DISTRIBUTED_WORKER_WAIT:g} s to read their shards again")
            # look again shortly: a nanny or an autoscaler may bring one back (the scheduler
            # may also still list the dead ones for a moment)
            time.sleep(min(0.5, max(deadline - time.monotonic(), 0.0)))
        kept = [self.workers[k] for k in range(len(self.actors)) if k not in lost]
        load = {w: kept.count(w) for w in candidates}
        placed = {}
        for k in lost:
            where = min(candidates, key=lambda w: (load[w], w))
            load[where] += 1
            placed[k] = where
        n_features = self.read_options.get("n_features")
        zero_based = self.read_options.get("zero_based", False)
        futures = {k: self.client.submit(Partition, self.sources[k], n_features, zero_based,
                                         actor=True, workers=[where],
                                         allow_other_workers=False, pure=False)
                   for k, where in placed.items()}
        timeout = config.DISTRIBUTED_ROUND_TIMEOUT
        try:
            made = create_partitions(self.client, list(futures.values()),
                                     [placed[k] for k in futures])
            actors = dict(zip(futures, made, strict=True))
            if self.width is not None:
                for done in [a.set_width(self.width) for a in actors.values()]:
                    done.result(timeout=timeout)
            summaries = {k: a.summary() for k, a in actors.items()}
            summaries = {k: s.result(timeout=timeout) for k, s in summaries.items()}
        except Exception as exc:
            self.client.cancel(list(futures.values()))
            raise PartitionLostError(
                f"partitions {lost} were lost with worker(s) {', '.join(sorted(dead))}; "
                f"reading their shards again failed ({type(exc).__name__}: {exc})") from exc
        for k, summary in summaries.items():
            if self.shapes and (summary["n_samples"], summary["nnz"]) != self.shapes[k]:
                self.client.cancel(list(futures.values()))
                raise PartitionLostError(
                    f"shard {self.sources[k]!r} read again holds {summary['n_samples']} rows "
                    f"and {summary['nnz']} entries, not the {self.shapes[k][0]} and "
                    f"{self.shapes[k][1]} it held: it changed since the dataset was read")
        for k in lost:
            self.actors[k] = actors[k]
            if k < len(self.futures):
                self.futures[k] = futures[k]  # the lost actor's future is released
            self.workers[k] = placed[k]
        self.share_threads()  # the workers' shares of partitions changed
        return {"lost": lost, "lost_workers": sorted(dead), "placed": placed}


def _is_lost(exc: BaseException) -> bool:
    name = type(exc).__name__
    text = str(exc)
    return name in ("CommClosedError", "KilledWorker", "CancelledError", "FutureCancelledError",
                    "StreamClosedError") or "lost" in text.lower() or "closed" in text.lower()


def reduce_sum(results: list):
    """Sum of per-partition results: numbers, arrays (elementwise), tuples item by item, None
    items skipped."""
    first = results[0]
    if isinstance(first, tuple):
        return tuple(reduce_sum([r[i] for r in results]) for i in range(len(first)))
    present = [r for r in results if r is not None]
    if not present:
        return None
    if isinstance(present[0], np.ndarray):
        total = present[0].copy()
        for r in present[1:]:
            total += r
        return total
    return sum(present[1:], present[0])


class CommunicationMonitor:
    """A monitor that adds each iteration's communication to its record (extras
    ``reductions``, ``bytes_moved``, ``communication_seconds``: the rounds since the last
    record) and passes it on."""

    def __init__(self, target, communication: Communication):
        self.target = target
        self.communication = communication
        communication.take()  # what came before the first iteration counts for it

    def report(self, record) -> None:
        record.extras.update(self.communication.take())
        self.target.report(record)

    def stop_reason(self) -> str | None:
        return self.target.stop_reason()
