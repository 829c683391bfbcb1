"""Measure solvers side by side: interleaved repeats, medians, time to relative gaps.

For each problem every runner is run once to warm up (compilation, caches; discarded), then
``repeats`` times, the order of the runners rotating from one repeat to the next so that no
runner always runs first.  A rotation keeps each runner's predecessor, so before every timed
run both cores are kept busy for 0.1 s (:func:`settle`): a process idle for a second or more
(while a subprocess anchor ran) made the next Numba-threaded run slower, whichever it was
(the measurement: ``bench/history/measurements.json``, ``harness-settle``).

From each run's objective-versus-time trace the time to reach a relative gap
g = (f - f*)/|f*| is the first trace time with gap <= g (missing when the run never gets
there); the reported figure is the median over repeats.  f* is the stored reference optimum
of the problem when there is one (see :mod:`bench.references`), otherwise the best objective
any runner reached.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from bench.anchors import Run
from bench.paths import REPOSITORY
from bench.problems import BenchProblem
from bench.references import load_references

GAPS = (1e-2, 1e-3, 1e-6)


@dataclass
class RunnerSummary:
    runner: str
    anchor: bool
    time_to_gap: dict[str, float | None]  # gap -> median seconds (None: never reached)
    median_seconds: float
    final_gap: float
    accuracy: float | None
    note: str
    trace: list[tuple[float, float]]  # the median run's trace, for plots


@dataclass
class ProblemResult:
    problem: str
    reference_objective: float
    reference_source: str
    summaries: list[RunnerSummary]

    @classmethod
    def from_json(cls, entry: dict) -> ProblemResult:
        """A result back from a record (the inverse of :func:`as_json`)."""
        summaries = [RunnerSummary(**{**s, "trace": [tuple(p) for p in s["trace"]]})
                     for s in entry["summaries"]]
        return cls(entry["problem"], entry["reference_objective"], entry["reference_source"],
                   summaries)

    def ratio_to_best_anchor(self, runner: str, gap: float) -> float | None:
        """Our runner's time to ``gap`` divided by the fastest anchor's (None if either never
        reached it)."""
        key = f"{gap:g}"
        ours = next(s for s in self.summaries if s.runner == runner).time_to_gap[key]
        anchors = [s.time_to_gap[key] for s in self.summaries
                   if s.anchor and s.time_to_gap[key] is not None]
        if ours is None or not anchors:
            return None
        return ours / min(anchors)


def relative_gap(objective: float, reference: float) -> float:
    return (objective - reference) / max(abs(reference), 1e-300)


def time_to_gap(trace, reference: float, gap: float) -> float | None:
    for seconds, objective in trace:
        if relative_gap(objective, reference) <= gap:
            return seconds
    return None


@numba.njit(parallel=True, cache=True)
def _spin(n: int, threads: int) -> float:
    sums = np.zeros(threads)
    for thread in numba.prange(sums.shape[0]):
        acc = 0.0
        for i in range(n):
            acc += (i % 7) * 1e-9
        sums[thread] = acc
    return sums.sum()


def settle(seconds: float = 0.1) -> None:
    """Keep every Numba thread busy for ``seconds`` (the module docstring says why)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        _spin(1_000_000, numba.get_num_threads())


def measure_problem(problem: BenchProblem, runners, repeats: int, log=print,
                    warm_up: bool = True) -> ProblemResult:
    """Run ``runners`` on ``problem`` (see the module docstring) with BLAS on one thread;
    ``warm_up``: each runner once first, discarded (a suite that warms the process up once
    instead passes False).

    None of the runners needs BLAS threads (LIBLINEAR, LIBSVM and our linear solvers use none),
    but NumPy calls between runs (the anchors' objective evaluations) leave OpenBLAS's worker
    threads spinning for tens of milliseconds, on the core the next runner's second thread
    needs (``bench/history/measurements.json``, ``harness-blas-threads``)."""
    with threadpool_limits(limits=1, user_api="blas"):
        return _measure_problem(problem, runners, repeats, log, warm_up)


def _measure_problem(problem: BenchProblem, runners, repeats: int, log,
                     warm_up: bool) -> ProblemResult:
    runners = [r for r in runners if r.supports(problem)]
    runs: dict[str, list[Run]] = {r.name: [] for r in runners}
    for r in runners if warm_up else ():
        r.run(problem)  # warm-up
    for repeat in range(repeats):
        shift = repeat % len(runners)
        for r in runners[shift:] + runners[:shift]:
            settle()
            run = r.run(problem)
            runs[r.name].append(run)
            log(f"  {problem.key:45s} {r.name:22s} {run.seconds:9.3f} s  "
                f"objective {run.objective:.12g}")
    references = load_references()
    if problem.key in references:
        reference = references[problem.key]["objective"]
        source = references[problem.key]["method"]
    else:
        reference = min(run.objective for rs in runs.values() for run in rs)
        source = "best objective reached in this run"
    summaries = []
    for r in runners:
        rs = runs[r.name]
        times = {}
        for gap in GAPS:
            reached = [time_to_gap(run.trace, reference, gap) for run in rs]
            reached = [t for t in reached if t is not None]
            # the median over repeats counts only if most repeats got there
            times[f"{gap:g}"] = statistics.median(reached) if len(reached) * 2 > len(rs) \
                else None
        median_run = sorted(rs, key=lambda run: run.seconds)[len(rs) // 2]
        summaries.append(RunnerSummary(
            r.name, r.anchor, times, statistics.median(run.seconds for run in rs),
            relative_gap(median_run.objective, reference), median_run.accuracy,
            median_run.note, median_run.trace,
        ))
    return ProblemResult(problem.key, reference, source, summaries)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=REPOSITORY, capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def machine_description(reference: bool = True) -> dict:
    """The fingerprint every record carries: when, which commit (and whether the tree had
    uncommitted changes to tracked files), which CPU and how many cores this process may use,
    how busy the machine was, which versions, and (``reference``) the figures of the fixed
    reference workloads of :func:`bench.fingerprint.reference_workloads` (a memory-bandwidth
    pass, one LIBLINEAR run, a Python loop; measured once a process), by which
    :mod:`bench.fingerprint` normalizes figures from different days and machines."""
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    description = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": None if dirty is None else bool(dirty),
        "cpu_model": _cpu_model(),
        "machine": platform.machine(),
        "processor": platform.processor() or "unknown",
        "cpus": os.cpu_count(),
        "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "load_average_at_start": os.getloadavg()[0],
    }
    if reference:
        from bench.fingerprint import reference_workloads

        description["reference"] = reference_workloads()
    return description


def as_json(results: list[ProblemResult]) -> list[dict]:
    return [asdict(r) for r in results]
