"""Figures comparable across days and machines: reference workloads, normalized figures, and
the comparison of a record with the last one of its suite.

A benchmark's seconds depend on the machine and on how busy it is: the same commit gave
GET predict 3,008/s on one 2-core machine and 1,208/s on another of the same kind, and mfn
on the synthetic problem 5.0 s and 9.8 s (issue 38).  So every record carries, beside the CPU
model and the cores (:func:`bench.harness.machine_description`), the times of fixed
reference workloads measured in the same process (:func:`reference_workloads`):

* ``memory_bandwidth_gbs``: one ``np.copyto`` pass over a :data:`BANDWIDTH_MB` MB array
  (bytes read + bytes written over the best time of :data:`REFERENCE_REPEATS`): what bounds
  the sparse products of the linear solvers;
* ``liblinear_s``: LIBLINEAR ``-s 2 -c 1 -e 0.01 -B 1`` on a9a (the best of
  :data:`REFERENCE_REPEATS` runs, its data converted once outside the timing): one fixed
  solver run, compiled C, one thread;
* ``python_s``: a fixed pure-Python loop (string splits, dict and integer operations: what a
  request costs the web process), the best of :data:`REFERENCE_REPEATS`.

:func:`normalized_figures` divides a record's solver seconds by ``liblinear_s`` and the
service's CPU per request by ``python_s`` (its throughput is multiplied by it); ratios to an
anchor measured in the same run are taken as they are.  :func:`compare_records` sets each
figure beside the same figure of the previous record of the suite and lists those whose ratio
moved by more than :data:`MOVE_THRESHOLD` (current / previous above 1.25 or below 1 / 1.25);
``python -m bench run`` prints a ``WARNING`` line for each and stores the comparison in the
record (``comparison``).  All of this but :func:`reference_workloads` is pure: a function of
the records.
"""

from __future__ import annotations

import functools
import math
import time

import numpy as np

BANDWIDTH_MB = 256
REFERENCE_REPEATS = 5
MOVE_THRESHOLD = 0.25
"""A figure moved when current / previous > 1 + this, or < 1 / (1 + this)."""
MIN_SECONDS = 0.02
"""Solver times below this (in either record) are left out of the comparison: a few
milliseconds are timer and scheduler noise, not the solver."""


def memory_bandwidth_gbs(megabytes: int = BANDWIDTH_MB,
                         repeats: int = REFERENCE_REPEATS) -> float:
    """GB/s of one copy pass over a ``megabytes`` MB float64 array (read + write), best of
    ``repeats``; the destination is touched first, so no page faults are timed."""
    source = np.ones(megabytes * 2**20 // 8)
    target = np.zeros_like(source)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return 2 * source.nbytes / best / 1e9


def liblinear_seconds(repeats: int = REFERENCE_REPEATS) -> float:
    """Seconds of LIBLINEAR ``-s 2 -c 1 -e 0.01 -B 1`` on a9a, best of ``repeats``."""
    from liblinear.liblinear import problem as ll_problem

    from bench.anchors import liblinear_train
    from bench.problems import load_dataset

    train = load_dataset("a9a")
    prob = ll_problem(train.y, train.X)
    prob.set_bias(1.0)
    return min(liblinear_train(prob, "-s 2 -c 1 -e 0.01 -B 1")[0] for _ in range(repeats))


def _python_work() -> int:
    total = 0
    table: dict[int, float] = {}
    for i in range(60_000):
        index, _, value = f"{i % 997}:{i}".partition(":")
        table[int(index)] = float(value)
        total += len(table) ^ i
    return total


def python_seconds(repeats: int = REFERENCE_REPEATS) -> float:
    """Seconds of a fixed pure-Python loop (:func:`_python_work`), best of ``repeats``."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        _python_work()
        best = min(best, time.perf_counter() - start)
    return best


@functools.cache
def reference_workloads() -> dict:
    """The reference workloads' figures on this machine now (measured once a process)."""
    return {"memory_bandwidth_gbs": memory_bandwidth_gbs(), "liblinear_s": liblinear_seconds(),
            "python_s": python_seconds(),
            "method": f"best of {REFERENCE_REPEATS}: np.copyto over {BANDWIDTH_MB} MB; "
                      f"LIBLINEAR -s 2 -c 1 -e 0.01 -B 1 on a9a; bench.fingerprint._python_work"}


def normalized_figures(record: dict) -> dict[str, float]:
    """The figures of a record that can be compared across machines, by name.

    Harness records: each runner's median seconds and time to 1e-6 per problem, over the
    record's ``liblinear_s`` (left out when the record has no reference workloads), and our
    runners' ratios to the fastest anchor (unchanged).  A ``service_predict`` part: server CPU
    milliseconds per request over ``python_s``, and predictions per second times ``python_s``.
    Solver times under :data:`MIN_SECONDS` are left out.
    """
    reference = record.get("machine", {}).get("reference") or {}
    solver_unit = reference.get("liblinear_s")
    python_unit = reference.get("python_s")
    figures: dict[str, float] = {}
    for problem in record.get("problems", []):
        for summary in problem["summaries"]:
            if solver_unit:
                times = {"median_seconds": summary["median_seconds"],
                         "time_to_1e-06": summary["time_to_gap"].get("1e-06")}
                for name, seconds in times.items():
                    if seconds is not None and seconds >= MIN_SECONDS:
                        figures[f"{problem['problem']} {summary['runner']} {name} / "
                                f"liblinear_s"] = seconds / solver_unit
    for problem, by_runner in record.get("ratios", {}).items():
        for runner, by_gap in by_runner.items():
            if by_gap.get("1e-06") is not None:
                figures[f"{problem} {runner} time to 1e-06 / fastest anchor's"] = by_gap["1e-06"]
    service = record.get("service_predict")
    if service and python_unit:
        for variant, summary in service.get("summary", {}).items():
            for key in ("sequential_cpu_ms", "wrk_cpu_ms"):
                if summary.get(key):
                    figures[f"GET predict {variant} {key} / python_s"] = (
                        summary[key] / 1e3 / python_unit)
            if summary.get("wrk_per_s"):
                figures[f"GET predict {variant} wrk_per_s * python_s"] = (
                    summary["wrk_per_s"] * python_unit)
    return figures


def moved(ratio: float, threshold: float = MOVE_THRESHOLD) -> bool:
    """Whether current / previous = ``ratio`` moved by more than ``threshold``."""
    return ratio > 1 + threshold or ratio < 1 / (1 + threshold)


def compare_records(previous: dict, current: dict,
                    threshold: float = MOVE_THRESHOLD) -> dict:
    """The normalized figures of ``current`` beside those of ``previous`` (the figures both
    have): each with its ratio current / previous, and the names of those that moved."""
    before, after = normalized_figures(previous), normalized_figures(current)
    figures = {name: {"previous": before[name], "current": after[name],
                      "ratio": after[name] / before[name]}
               for name in sorted(before.keys() & after.keys()) if before[name] > 0}
    return {"previous": previous.get("file") or previous.get("machine", {}).get("date"),
            "threshold": threshold,
            "compared": len(figures),
            "moved": [name for name, entry in figures.items()
                      if moved(entry["ratio"], threshold)],
            "figures": figures}


def last_of_suite(records: list[dict], suite: str) -> dict | None:
    """The latest record of ``suite`` among ``records`` (oldest first, as
    :func:`bench.report.load_records` gives them), or None."""
    same = [r for r in records if r.get("suite") == suite]
    return same[-1] if same else None


def warnings(comparison: dict) -> list[str]:
    """One ``WARNING`` line per figure that moved."""
    lines = []
    for name in comparison["moved"]:
        entry = comparison["figures"][name]
        lines.append(f"WARNING: {name} moved {entry['ratio']:.2f}x since "
                     f"{comparison['previous']} ({entry['previous']:.4g} -> "
                     f"{entry['current']:.4g}, normalized)")
    return lines
