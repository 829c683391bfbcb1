"""One model trained data-parallel on a Dask cluster against the single process (a
measurement, not a test).

    python -m bench distributed [--problems a9a,w8a] [--solvers mfn,ocas]
                                      [--repeats 2] [--shards 2] [--out FILE]

Same data, same parameters, same machine: the single-process solver with 2 Numba threads
(``solvers.train`` on the whole dataset) against ``solvers.train`` on a
:class:`solvers.distributed.DistributedDataset` of ``--shards`` equal shards (split at line
boundaries) on a ``distributed.LocalCluster`` of 2 worker processes x 1 thread (one Numba
thread each).  Each side runs once to warm up (Numba's cached kernels load in each worker on
first use) and then ``--repeats`` times; the medians are reported with the distributed
run's communication record: rounds (reductions) and bytes moved per iteration and per
round, the latter against the least a round moves (one d-vector out to every partition and
one back: :func:`minimum_round_bytes`), and the
seconds per round beyond the slowest partition's own work (the client-to-worker round trip:
actor calls go to the workers, not through the task graph, so this is where Dask's time
is; the client uses ``direct_to_workers=True``, without which actor calls are proxied
through the scheduler).  ``synthetic-400000x200000`` (the text-like set of
:mod:`bench.synthetic`, about 8 M entries) and ``news20-binary`` (the repository's 20-class
news20, 15,935 x 62,061, groups 1-10 against 11-20: d-vectors of 0.5 MB; OCAS takes about
2,400 iterations, a minute on each side, so it is not in the default problems) are written
to a temporary SVMlight file first.

Prints Markdown and the machine (load average before and after: the figures scale with it).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import solvers
from bench.commands import Command, option, out, problems, repeats
from bench.harness import machine_description
from bench.paths import dataset_path
from bench.problems import news20_binary
from bench.spark_anchor import iterations_to, seconds_to, spark_python, spark_runs
from bench.synthetic import release as release_synthetic
from bench.synthetic import synthetic_dataset
from solvers import config

SOLVERS = {
    "mfn": ("mfn", {}),
    "ocas": ("cutting_plane", {"loss": "hinge", "method": "ocas"}),
    "cpa": ("cutting_plane", {"loss": "hinge", "method": "cpa"}),
    "interior_point": ("interior_point", {"loss": "hinge", "linear_solver": "direct"}),
    # dual coordinate descent: on one process dual_cd's serial descent, on the cluster CoCoA+
    # (solvers.dual_cd.cocoa) with sigma' = the partitions, or 1 (the line search guarding)
    "dual_cd": ("dual_cd", {"loss": "hinge"}),
    "dual_cd-sigma1": ("dual_cd", {"loss": "hinge", "cocoa_sigma": 1.0}),
    "dual_cd-h2": ("dual_cd", {"loss": "hinge", "local_epochs": 2}),
}
C = {"a9a": 1.0, "w8a": 0.01, "news20-binary": 1.0, "synthetic-400000x200000": 1.0}


def _source(name: str, workdir: Path) -> Path:
    """The SVMlight file of ``name`` (a synthetic or derived set written to ``workdir``
    once: a ``--workdir`` kept between runs reuses it)."""
    if name.startswith("synthetic"):
        target = workdir / name
        if not target.exists():
            partial = workdir / f"{name}.partial"
            solvers.write_svmlight(synthetic_dataset(name), partial)
            partial.replace(target)
            release_synthetic()  # the generator's copy (train and held-out rows) goes
        return target
    if name == "news20-binary":
        target = workdir / "news20-binary"
        if not target.exists():
            data = solvers.read_svmlight(dataset_path("news20"))
            solvers.write_svmlight(solvers.Dataset(data.X, news20_binary(data.y)), target)
        return target
    return dataset_path(name)


def _timed(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def shard_files(path: Path, directory: Path, shards: int) -> list[Path]:
    """``path`` split into ``shards`` equal shards in ``directory``, or the shards already
    there when they are ``path``'s bytes (a kept ``--workdir``: a large set is split once)."""
    made = [directory / f"{path.name}.{k}" for k in range(shards)]
    if all(p.exists() for p in made) and \
            sum(p.stat().st_size for p in made) == path.stat().st_size:
        return made
    return solvers.distributed.split_svmlight(path, directory, n_shards=shards)


def warm_up(problem: str, solver: str, options: dict, client, workdir: Path,
            shards: int) -> None:
    """One solve of ``problem`` (a small set whose solve takes the same route: the same d
    for mfn's CGLS) on each side: Numba's cached kernels loaded in this process and in the
    workers the measured solves then run on."""
    path = _source(problem, workdir)
    local = solvers.read_svmlight(path)
    solvers.train(local, solver=solver, **options)
    parts = shard_files(path, workdir / f"{problem}-{shards}", shards)
    data = solvers.distributed.read_svmlight(client, parts, n_features=local.n_features)
    try:
        solvers.train(data, solver=solver, **options)
    finally:
        data.close()


def _process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _worker_cpu() -> float:
    import psutil  # noqa: PLC0415 (a dependency of Dask's workers)

    times = psutil.Process().cpu_times()
    return times.user + times.system


def _thread_id() -> int:
    return threading.get_native_id()


async def _native_thread_id() -> int:
    return threading.get_native_id()


class Profiler:
    """Where a distributed solve's CPU goes: this process's threads (the driver's main
    thread; the event loop's thread, which runs the scheduler of a ``LocalCluster`` and the
    client's messages: pickling the rounds' arguments, unpickling the answers; the rest) and
    the worker processes' CPU (their partitions' work plus Dask's own: the actor calls'
    messages, heartbeats), snapshot before and after."""

    def __init__(self, client):
        self.client = client
        self.scheduler_thread = None
        self.client_thread = None
        with contextlib.suppress(Exception):  # a remote scheduler: its thread is not here
            self.scheduler_thread = client.run_on_scheduler(_thread_id)
        with contextlib.suppress(Exception):
            self.client_thread = client.sync(_native_thread_id)

    def snapshot(self) -> dict:
        import psutil  # noqa: PLC0415

        threads = {t.id: t.user_time + t.system_time for t in psutil.Process().threads()}
        main = threads.get(threading.main_thread().native_id, 0.0)
        loops = {self.scheduler_thread, self.client_thread} - {None}
        loop = sum(threads.get(t, 0.0) for t in loops)
        workers = self.client.run(_worker_cpu)
        return {"wall": time.perf_counter(), "main": main, "loop": loop,
                "process": _process_cpu(), "workers": float(sum(workers.values())),
                "shared_loop": self.scheduler_thread == self.client_thread}

    def since(self, mark: dict) -> dict:
        now = self.snapshot()
        out = {k: now[k] - mark[k] for k in ("wall", "main", "loop", "process", "workers")}
        out["other"] = out["process"] - out["main"] - out["loop"]
        out["shared_loop"] = now["shared_loop"]
        return out


def _last_gap(result) -> float | None:
    """The certified relative gap the solve ended with (the cutting planes': their last
    record's)."""
    gap = result.subproblems[0].extras.get("relative_duality_gap")
    if gap is None and result.log:
        gap = result.log[-1].extras.get("relative_gap", result.log[-1].optimality)
    return None if gap is None else float(gap)


def _profile_row(wall: float, comm: dict, profile: dict, partitions: int) -> dict:
    """The solve's time split (seconds): the rounds (the slowest partition's work, the rest
    of the round: messages, pickling, Dask, waiting for a core), the driver between rounds
    (wall minus the rounds: the reduced QP, CG's vector updates, bookkeeping), and the CPU
    of each party (:class:`Profiler`); workers' Dask overhead = their CPU minus their
    partitions' work."""
    rounds = comm["round_seconds"]
    work = rounds - comm["communication_seconds"]
    return {"wall_seconds": wall, "round_seconds": rounds, "slowest_work_seconds": work,
            "round_overhead_seconds": comm["communication_seconds"],
            "driver_between_rounds_seconds": max(wall - rounds, 0.0),
            "partition_work_seconds": comm["partition_seconds"],
            "driver_main_cpu_seconds": profile["main"],
            "event_loop_cpu_seconds": profile["loop"],
            "shared_loop": profile["shared_loop"],
            "driver_other_cpu_seconds": profile["other"],
            "workers_cpu_seconds": profile["workers"],
            "workers_dask_cpu_seconds": max(profile["workers"] - comm["partition_seconds"],
                                            0.0),
            "partitions": partitions}


def measure(problem: str, solver_key: str, client, workdir: Path, repeats: int,
            shards: int, log=print, overrides: dict | None = None,
            warmup: str | None = None) -> dict:
    solver, options = SOLVERS[solver_key]
    options = {**options, "C": C.get(problem, 1.0), **(overrides or {})}
    path = _source(problem, workdir)
    read_single, local = _timed(lambda: solvers.read_svmlight(path))
    parts = shard_files(path, workdir / f"{problem}-{shards}", shards)
    read_distributed, data = _timed(lambda: solvers.distributed.read_svmlight(
        client, parts, n_features=local.n_features))
    profiler = Profiler(client)
    try:
        if warmup is None:  # the same solve once on each side (kernels loaded, caches warm)
            solvers.train(local, solver=solver, **options)
            solvers.train(data, solver=solver, **options)
        else:  # a small set of the same route, on the same worker processes
            warm_up(warmup, solver, options, client, workdir, shards)
        single, many = [], []
        for _ in range(repeats):
            cpu = _process_cpu()
            seconds, one = _timed(lambda: solvers.train(local, solver=solver, **options))
            single.append((seconds, one, _process_cpu() - cpu))
            before = data.partitions.communication.totals()
            # (getattr: a tree from before the counter, run with this bench for a same-run A/B)
            partition_before = getattr(data.partitions.communication, "partition_seconds", 0.0)
            kinds_before = data.partitions.communication.kinds()
            mark = profiler.snapshot()
            seconds, result = _timed(lambda: solvers.train(data, solver=solver, **options))
            profile = profiler.since(mark)
            after = data.partitions.communication.totals()
            kinds = _kinds_since(data.partitions.communication.kinds(), kinds_before)
            comm = {k: after[k] - before[k] for k in after}
            comm["partition_seconds"] = (
                getattr(data.partitions.communication, "partition_seconds", 0.0)
                - partition_before)
            many.append((seconds, result, comm, kinds, profile))
    finally:
        data.close()
    t1 = statistics.median(s for s, _, _ in single)
    t2 = statistics.median(s for s, _, _, _, _ in many)
    last_seconds, result, comm, kinds, profile = many[-1]
    one, single_cpu = single[-1][1], single[-1][2]
    iterations = max(len(result.log), 1)
    row = {
        "problem": problem, "solver": solver_key, "C": options["C"],
        "n_samples": local.n_samples, "n_features": local.n_features, "nnz": local.nnz,
        "single_seconds": t1, "distributed_seconds": t2, "ratio": t2 / t1,
        "single_iterations": len(one.log), "distributed_iterations": len(result.log),
        "objective_relative_difference": abs(result.objective - one.objective)
        / abs(one.objective),
        "reductions_per_iteration": comm["reductions"] / iterations,
        "bytes_per_iteration": (comm["bytes_sent"] + comm["bytes_received"]) / iterations,
        **round_bytes(comm, local.n_features, shards),
        "round_seconds_per_reduction": comm["round_seconds"] / max(comm["reductions"], 1),
        "communication_seconds_per_reduction":
            comm["communication_seconds"] / max(comm["reductions"], 1),
        "communication_share": comm["communication_seconds"] / last_seconds,
        "partitions": shards,
        "work_seconds_per_iteration":
            (comm["round_seconds"] - comm["communication_seconds"]) / iterations,
        "linear_solver": result.subproblems[0].extras.get("linear_solver"),
        "options": {k: v for k, v in options.items() if not callable(v)},
        "single_objective": one.objective, "distributed_objective": result.objective,
        "gather_breakpoints": config.DISTRIBUTED_GATHER_BREAKPOINTS,
        "read_seconds_single": read_single, "read_seconds_distributed": read_distributed,
        "warmup": warmup,
        "single_cpu_seconds": single_cpu,
        "single_gap": _last_gap(one), "distributed_gap": _last_gap(result),
        "profile": _profile_row(last_seconds, comm, profile, shards),
        "rounds_by_kind": {
            kind: {"rounds": n, "bytes_per_round": (sent + received) / n,
                   "over_minimum": (sent + received) / n
                   / minimum_round_bytes(local.n_features, shards),
                   "ms_per_round": 1e3 * seconds / n}
            for kind, (n, sent, received, seconds) in kinds.items()},
    }
    log(f"{problem} {solver_key}: single {t1:.3f} s, distributed {t2:.3f} s "
        f"(ratio {row['ratio']:.2f}), {row['reductions_per_iteration']:.1f} reductions and "
        f"{row['bytes_per_iteration'] / 1e3:.1f} kB per iteration, "
        f"{1e3 * row['communication_seconds_per_reduction']:.2f} ms per round in "
        f"communication; gaps {row['single_gap']} / {row['distributed_gap']}; reads "
        f"{read_single:.1f} / {read_distributed:.1f} s", flush=True)
    return row


def _spark_file(problem: str, workdir: Path, target: Path) -> Path:
    """The set as a plain SVMlight file Spark's reader takes (no compression, 1-based): the
    file written to ``workdir`` itself (a synthetic or derived set: this library's writer),
    else a copy in ``target``."""
    source = _source(problem, workdir)
    if source.parent == workdir:
        return source
    out = target / problem
    if not out.exists():
        solvers.write_svmlight(solvers.read_svmlight(source), out)
    return out


def spark_anchor_row(python: str, problem: str, path: Path, rows: list[dict],
                     gaps=(1e-2, 1e-3), schedule=None, optimum_tol: float = 1e-9,
                     driver_memory: str = "2g") -> dict:
    """Spark's ``LinearSVC`` on ``problem`` (:mod:`bench.spark_anchor`) beside this run's
    rows of the same problem (hinge, no bias: the C mapping checked by the objective
    values), its time to each relative distance of ``gaps`` from the optimum (this
    library's dual coordinate descent at a certified gap of ``optimum_tol``: at a large set
    1e-6 is enough to place distances of 1e-3 and takes far less than 1e-9)."""
    data = solvers.read_svmlight(path)
    c = C.get(problem, 1.0)
    optimum = solvers.train(data, solver="dual_cd", loss="hinge", bias="none", C=c,
                            tol=optimum_tol).objective
    spark = spark_runs(python, data, path, c, **({} if schedule is None else
                                                 {"schedule": schedule}),
                       driver_memory=driver_memory)
    last = spark["runs"][-1]
    row = {"problem": problem, "C": c, "optimum": optimum, "optimum_tol": optimum_tol,
           "driver_memory": driver_memory, "rows": spark["rows"],
           "read_seconds": spark["read_seconds"], "runs": spark["runs"],
           "objective_mapping": (last["spark_objective_scaled"] / last["objective_here"]
                                 if last["spark_objective_scaled"] else None),
           "last_gap": (last["objective_here"] - optimum) / abs(optimum)}
    for gap in gaps:
        row[f"spark_seconds_{gap:g}"], row[f"spark_max_iter_{gap:g}"] = \
            seconds_to(spark["runs"], optimum, gap)
        row[f"spark_iterations_{gap:g}"], row[f"spark_estimated_seconds_{gap:g}"] = \
            iterations_to(spark["runs"], optimum, gap, c, spark["rows"])
    row["beside"] = [{"solver": r["solver"], "options": r["options"],
                      "single_seconds": r["single_seconds"],
                      "distributed_seconds": r["distributed_seconds"],
                      "single_gap": (r["single_objective"] - optimum) / abs(optimum),
                      "distributed_gap": (r["distributed_objective"] - optimum) / abs(optimum)}
                     for r in rows if r["problem"] == problem
                     and r["options"].get("loss") == "hinge"]  # Spark's problem only
    return row


def spark_markdown(anchors: list[dict]) -> str:
    lines = ["| problem | Spark LinearSVC s to 1e-2 (maxIter; estimate) | to 1e-3 | Spark's "
             "objective x C n / ours | solver here | single s (gap) | distributed s (gap) |",
             "|---|---|---|---|---|---|---|"]
    def spark(a, gap):
        seconds = a[f"spark_seconds_{gap:g}"]
        measured = "not reached" if seconds is None else \
            f"{seconds:.2f} ({a[f'spark_max_iter_{gap:g}']})"
        k = a.get(f"spark_iterations_{gap:g}")
        estimate = "" if k is None else \
            f"; ~{a[f'spark_estimated_seconds_{gap:g}']:.2f} at iteration {k}"
        return measured + estimate

    for a in anchors:
        for b in a["beside"]:
            lines.append(f"| {a['problem']} | {spark(a, 1e-2)} | {spark(a, 1e-3)} | "
                         f"{a['objective_mapping']:.6f} | {b['solver']} | "
                         f"{b['single_seconds']:.3f} ({b['single_gap']:.1e}) | "
                         f"{b['distributed_seconds']:.3f} ({b['distributed_gap']:.1e}) |")
    return "\n".join(lines)


def _kinds_since(now: dict, before: dict) -> dict:
    """Per kind of round, the counts of one solve (``Communication.kinds`` before and
    after)."""
    out = {}
    for kind, entry in now.items():
        old = before.get(kind, [0, 0, 0, 0.0])
        delta = [a - b for a, b in zip(entry, old, strict=True)]
        if delta[0]:
            out[kind] = delta
    return out


def minimum_round_bytes(n_features: int, partitions: int) -> int:
    """The least a round of these methods moves: one parameter vector (d + 1 doubles) out to
    every partition and one back from each (the scalars beside them left out)."""
    return 2 * 8 * (n_features + 1) * partitions


def round_bytes(comm: dict, n_features: int, partitions: int) -> dict:
    """Bytes per round, sent and received, against :func:`minimum_round_bytes`."""
    rounds = max(comm["reductions"], 1)
    moved = (comm["bytes_sent"] + comm["bytes_received"]) / rounds
    minimum = minimum_round_bytes(n_features, partitions)
    return {"bytes_sent_per_round": comm["bytes_sent"] / rounds,
            "bytes_received_per_round": comm["bytes_received"] / rounds,
            "bytes_per_round": moved, "minimum_bytes_per_round": minimum,
            "bytes_over_minimum": moved / minimum}


def markdown(rows: list[dict]) -> str:
    shape = (f"{rows[0].get('workers', 2)} x {rows[0].get('threads_per_worker', 1)}"
             if rows else "2 x 1")
    lines = [f"| problem | solver | single (2 threads) s | distributed ({shape}) s | ratio | "
             "iterations (1 / dist) | reductions / it | kB / it | kB / round (x minimum) | "
             "ms / round (comm) | comm share |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['problem']} | {r['solver']} | {r['single_seconds']:.3f} | "
            f"{r['distributed_seconds']:.3f} | {r['ratio']:.2f} | "
            f"{r['single_iterations']} / {r['distributed_iterations']} | "
            f"{r['reductions_per_iteration']:.1f} | {r['bytes_per_iteration'] / 1e3:.1f} | "
            f"{_per_round(r)} | {1e3 * r['communication_seconds_per_reduction']:.2f} | "
            f"{100 * r['communication_share']:.0f}% |")
    return "\n".join(lines)


def _per_round(row: dict) -> str:
    if "bytes_per_round" not in row:  # a record from before the column
        return "-"
    return f"{row['bytes_per_round'] / 1e3:.1f} ({row['bytes_over_minimum']:.2f})"


def kinds_markdown(rows: list[dict]) -> str:
    """Where each run's bytes go: per kind of round, its count, bytes against the minimum
    and milliseconds."""
    lines = ["| problem | solver | round | rounds | kB / round | x minimum | ms / round |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        for kind, k in sorted(r.get("rounds_by_kind", {}).items()):
            lines.append(f"| {r['problem']} | {r['solver']} | {kind} | {k['rounds']} | "
                         f"{k['bytes_per_round'] / 1e3:.1f} | {k['over_minimum']:.2f} | "
                         f"{k['ms_per_round']:.2f} |")
    return "\n".join(lines)


#: The cost model's assumptions (docs/distributed.md): a 10 Gb/s network, a round's fixed
#: cost (an actor call's round trip, measured 2-3 ms here on an idle machine with 2
#: partitions, plus the network's 0.1 ms), and the driver's cost per partition message.
BANDWIDTH = 10e9 / 8
ROUND_SECONDS = 3e-3
MESSAGE_SECONDS = 0.25e-3


def cost_model(row: dict, workers: int) -> dict:
    """Seconds per iteration at ``workers`` partitions (one per worker) from a measured row:
    the same rounds per iteration; each partition's bytes per round as measured (they are
    d-vectors: they do not shrink with more workers); compute (the partitions' own work,
    measured) divided over the workers.  Flat: the driver sends and receives every
    partition's message itself (as implemented); tree: a binary reduction and broadcast
    (2 log2 P hops of one message each, as MPI's allreduce or Spark's treeAggregate)."""
    rounds = row["reductions_per_iteration"]
    per_partition = row["bytes_per_iteration"] / max(rounds, 1e-300) / row["partitions"]
    work = row["work_seconds_per_iteration"] * row["partitions"]  # one worker's, all rows
    levels = max(np.log2(workers), 1.0)
    flat = rounds * (ROUND_SECONDS + workers * (MESSAGE_SECONDS + per_partition / BANDWIDTH))
    tree = rounds * (levels * ROUND_SECONDS + 2 * levels * per_partition / BANDWIDTH)
    return {"workers": workers, "flat_seconds": flat, "tree_seconds": tree,
            "compute_seconds": work / workers, "bytes_per_round": per_partition}


def model_markdown(rows: list[dict]) -> str:
    lines = ["| problem | solver | kB / partition / round | P | compute s / it | flat comm s / "
             "it | tree comm s / it |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        for workers in (16, 100):
            m = cost_model(r, workers)
            lines.append(f"| {r['problem']} | {r['solver']} | {m['bytes_per_round'] / 1e3:.1f} "
                         f"| {workers} | {m['compute_seconds']:.2e} | {m['flat_seconds']:.3f} | "
                         f"{m['tree_seconds']:.3f} |")
    return "\n".join(lines)


def profile_markdown(rows: list[dict]) -> str:
    """Where each distributed solve's time and CPU went (:func:`_profile_row`)."""
    lines = ["| problem | solver | wall s | rounds s: slowest work + rest | driver between "
             "rounds s | partitions' work s (all) | CPU s: driver main / event loop "
             "(scheduler, client comms) / other threads / workers (of which Dask) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r.get("profile")
        if p is None:
            continue
        lines.append(
            f"| {r['problem']} | {r['solver']} | {p['wall_seconds']:.2f} | "
            f"{p['round_seconds']:.2f}: {p['slowest_work_seconds']:.2f} + "
            f"{p['round_overhead_seconds']:.2f} | {p['driver_between_rounds_seconds']:.2f} | "
            f"{p['partition_work_seconds']:.2f} | {p['driver_main_cpu_seconds']:.2f} / "
            f"{p['event_loop_cpu_seconds']:.2f} / {p['driver_other_cpu_seconds']:.2f} / "
            f"{p['workers_cpu_seconds']:.2f} ({p['workers_dask_cpu_seconds']:.2f}) |")
    return "\n".join(lines)


def model_check(row: dict) -> dict:
    """The cost model (:func:`cost_model`) at the measured row's own partitions against what
    was measured, per iteration: its compute (the slowest partition's work: the model's W /
    P with W the work of all rows) and communication (R rounds of the fixed cost, the
    driver's per-message time and the bytes over the link) against the measured round
    overhead, and the driver's time between rounds, which the model leaves out."""
    iterations = max(row["distributed_iterations"], 1)
    p = row["profile"]
    model = cost_model(row, row["partitions"])
    per_round = model["flat_seconds"] / max(row["reductions_per_iteration"], 1e-300)
    measured = {"wall": p["wall_seconds"] / iterations,
                "work": p["slowest_work_seconds"] / iterations,
                "communication": p["round_overhead_seconds"] / iterations,
                "driver": p["driver_between_rounds_seconds"] / iterations}
    predicted = model["compute_seconds"] + model["flat_seconds"]
    return {"iterations": iterations, "measured": measured,
            "model_compute": model["compute_seconds"],
            "model_communication": model["flat_seconds"], "model_total": predicted,
            "model_round_ms": 1e3 * per_round,
            "measured_round_ms": 1e3 * row["communication_seconds_per_reduction"],
            "wall_over_model": measured["wall"] / max(predicted, 1e-300),
            "communication_over_model": measured["communication"]
            / max(model["flat_seconds"], 1e-300)}


def model_check_markdown(rows: list[dict]) -> str:
    lines = ["| problem | solver | P | s / it measured: wall = work + round rest + driver | "
             "model: compute + comm = total | comm ms / round measured / model | wall / "
             "model | comm / model |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "profile" not in r:
            continue
        c = model_check(r)
        m = c["measured"]
        lines.append(
            f"| {r['problem']} | {r['solver']} | {r['partitions']} | {m['wall']:.4f} = "
            f"{m['work']:.4f} + {m['communication']:.4f} + {m['driver']:.4f} | "
            f"{c['model_compute']:.4f} + {c['model_communication']:.4f} = "
            f"{c['model_total']:.4f} | {c['measured_round_ms']:.1f} / "
            f"{c['model_round_ms']:.1f} | {c['wall_over_model']:.2f} | "
            f"{c['communication_over_model']:.2f} |")
    return "\n".join(lines)


def run_command(args) -> int:
    import distributed  # noqa: PLC0415 (optional: the dask extra)
    import numba  # noqa: PLC0415

    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    if args.gather is not None:  # read on the driver: it sends each partition its share
        config.DISTRIBUTED_GATHER_BREAKPOINTS = args.gather
    if args.no_window:  # every breakpoint up to the gathering limit (before issue 51's)
        config.DISTRIBUTED_NEWTON_WINDOW = config.DISTRIBUTED_OCAS_WINDOW = None
    machine = machine_description()
    rows = []
    overrides = {k: v for k, v in (("tol", args.tol), ("bias", args.bias)) if v is not None}
    spark = spark_python(args.spark_python)
    threads = str(args.threads)
    shards = args.shards if args.shards is not None else args.workers
    anchors = []
    schedule = None if args.spark_schedule is None else \
        tuple(int(m) for m in args.spark_schedule.split(","))
    with contextlib.ExitStack() as stack:
        spark_tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir = args.workdir if args.workdir is not None else \
            Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        spark_files = {}
        with distributed.LocalCluster(n_workers=args.workers,
                                      threads_per_worker=args.threads, processes=True,
                                      dashboard_address=None,
                                      env={"NUMBA_NUM_THREADS": threads,
                                           "OPENBLAS_NUM_THREADS": "1"},
                                      silence_logs=40) as cluster, \
                distributed.Client(cluster, direct_to_workers=True) as client:
            for problem in args.problems.split(","):
                for solver_key in args.solvers.split(","):
                    row = measure(problem, solver_key, client, workdir, args.repeats,
                                  shards, overrides=overrides, warmup=args.warmup)
                    row.update(workers=args.workers, threads_per_worker=args.threads)
                    rows.append(row)
                if spark is not None:  # its file now; its JVM once the cluster is closed
                    spark_files[problem] = _spark_file(problem, workdir, spark_tmp)
        for problem in args.problems.split(",") if spark is not None else ():
            anchors.append(spark_anchor_row(spark, problem, spark_files[problem], rows,
                                            schedule=schedule,
                                            optimum_tol=args.optimum_tol,
                                            driver_memory=args.spark_memory))
    report = {"machine": machine, "load_after": os.getloadavg(), "rows": rows,
              "workers": args.workers, "threads_per_worker": args.threads,
              "gather_breakpoints": config.DISTRIBUTED_GATHER_BREAKPOINTS,
              "newton_window": config.DISTRIBUTED_NEWTON_WINDOW,
              "ocas_window": config.DISTRIBUTED_OCAS_WINDOW, "spark": anchors}
    print(markdown(rows))
    if anchors:
        print()
        print(spark_markdown(anchors))
    print()
    print(kinds_markdown(rows))
    print()
    print(model_markdown(rows))
    print()
    print(profile_markdown(rows))
    print()
    print(model_check_markdown(rows))
    print(f"load average before {machine.get('load_average_at_start')}, after "
          f"{tuple(round(x, 2) for x in os.getloadavg())}")
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1, default=float))
    return 0


COMMAND = Command(
    "distributed", "one model trained data-parallel on Dask workers against one process",
    run_command,
    description=__doc__, options=(
        problems("a9a,w8a"),
        option("--solvers", default="mfn,ocas"),
        repeats(2),
        option("--shards", type=int, default=None,
               help="shards (partitions) of each set; default one per worker"),
        option("--workers", type=int, default=2, help="worker processes"),
        option("--threads", type=int, default=1,
               help="threads per worker (its NUMBA_NUM_THREADS: a partition's kernels run "
                    "on that many Numba threads)"),
        option("--no-window", action="store_true",
               help="the line searches bring back every breakpoint (up to --gather), not "
                    "only those in their window (DISTRIBUTED_NEWTON_WINDOW, "
                    "DISTRIBUTED_OCAS_WINDOW)"),
        option("--gather", type=int, default=None,
               help="DISTRIBUTED_GATHER_BREAKPOINTS for the run (the breakpoints a line "
                    "search brings back at most, over all partitions, instead of a selection "
                    "round)"),
        option("--tol", type=float, default=None, help="every solver's tol"),
        option("--bias", default=None, help="every solver's bias (Spark's anchor: none)"),
        option("--workdir", type=Path, default=None,
               help="where generated sets and shards are written and kept (default a "
                    "temporary directory): a large synthetic set is generated and split "
                    "once and reused by later runs"),
        option("--warmup", default=None,
               help="warm up on this small problem (the same solver, options and workers) "
                    "instead of one solve of each measured problem on each side: at the "
                    "size of synthetic-2000000x100000 a warm-up solve costs minutes; give a "
                    "set of the same route (mfn: the same d, e.g. synthetic-20000x100000)"),
        option("--spark-schedule", default=None,
               help="Spark's maxIter schedule, comma-separated (default "
                    "bench.spark_anchor.SCHEDULE)"),
        option("--spark-memory", default="2g",
               help="spark.driver.memory of the Spark anchor (local[2]: the JVM's heap)"),
        option("--optimum-tol", type=float, default=1e-9,
               help="the certified gap of dual_cd's optimum that Spark's distances are "
                    "measured from"),
        option("--spark-python", default=None,
               help="the interpreter of an environment with pyspark (default "
                    "$SVMSVC_SPARK_PYTHON): Spark's LinearSVC on local[2] beside each problem "
                    "(bench/spark_anchor.py), after the cluster is closed"),
        out(None)))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["distributed", *sys.argv[1:]]))
