"""mfn's solve time in a fresh process against a process that did other work first (issue 38).

    python -m bench busy_process run --history fresh|liblinear [--size 400000x200000]
        [--solves 2] [--env NAME=VALUE ...]
    python -m bench busy_process ab [--size ...] [--rounds 3] [--env NAME=VALUE ...]

A worker builds a user's problem and may run other solvers before mfn: issue 38 measured
mfn on the synthetic 400,000 x 200,000 problem (squared hinge, C = 1) at 9.8 s in a process
that only loaded the data, and 15.6 s in one that had built the problem and run LIBLINEAR on
it.  ``run`` does one of the two in this process and prints one JSON line:

* ``fresh``: the problem is read from an ``.npz`` cache of :mod:`bench.synthetic`'s draw
  (written the first time), then mfn solves it ``--solves`` times;
* ``liblinear``: the problem is generated here (:func:`bench.synthetic.generate`), LIBLINEAR
  ``-s 2 -e 0.01`` runs on it (its structures kept alive, as an anchor's are), then mfn.

Each solve reports wall seconds, the process's CPU seconds, minor page faults
(``getrusage``), the transparent huge pages of the process (``AnonHugePages`` of
``/proc/self/smaps_rollup``) and the index dtypes of the matrix; ``ab`` runs the two
histories in fresh subprocesses, alternating, ``--rounds`` times each, and prints the medians
with the load average.  ``--env`` sets variables for the subprocesses (``MALLOC_ARENA_MAX=1``,
``NUMBA_THREADING_LAYER=omp`` ...) to test a cause.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.commands import Command, option

SIZE = "400000x200000"


def _anon_huge_kb() -> int:
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def _cache_path(size: str) -> Path:
    return Path(tempfile.gettempdir()) / f"svmsvc-synthetic-{size}.npz"


def _fresh_problem(size: str):
    import scipy.sparse as sp

    path = _cache_path(size)
    if not path.exists():  # written by a subprocess, so this process stays fresh
        subprocess.run([sys.executable, "-m", "bench", "busy_process", "write", "--size",
                        size], check=True)
    with np.load(path) as archive:
        X = sp.csr_matrix((archive["data"], archive["indices"], archive["indptr"]),
                          shape=tuple(archive["shape"]))
        return X, archive["y"]


def write_cache(size: str) -> None:
    from bench.synthetic import generate

    rows, features = map(int, size.split("x"))
    X, y = generate(rows, features)
    np.savez(_cache_path(size), data=X.data, indices=X.indices, indptr=X.indptr,
             shape=np.array(X.shape), y=y)


def run(history: str, size: str, solves: int) -> dict:
    import numba

    import solvers

    started = time.perf_counter()
    keep = None
    if history == "fresh":
        X, y = _fresh_problem(size)
    else:
        from liblinear.liblinear import problem as ll_problem

        from bench.anchors import liblinear_train
        from bench.synthetic import generate

        rows, features = map(int, size.split("x"))
        X, y = generate(rows, features)
        keep = ll_problem(y, X)
        keep.set_bias(1.0)
        liblinear_s = liblinear_train(keep, "-s 2 -c 1 -e 0.01 -B 1")[0]
    dataset = solvers.Dataset(X, y)
    figures = {"history": history, "size": size, "setup_s": time.perf_counter() - started,
               "indices": str(dataset.X.indices.dtype), "indptr": str(dataset.X.indptr.dtype),
               "threading_layer": None, "env": {k: v for k, v in os.environ.items()
                                                 if k.startswith(("MALLOC_", "NUMBA_",
                                                                  "OMP_", "SVMSVC_"))},
               "solves": []}
    if keep is not None:
        figures["liblinear_s"] = liblinear_s
    for _ in range(solves):
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = time.process_time()
        start = time.perf_counter()
        result = solvers.train(dataset, solver="mfn", C=1.0, loss="squared_hinge")
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
        figures["solves"].append({
            "seconds": seconds, "cpu_s": time.process_time() - cpu,
            "minor_faults": after.ru_minflt - usage.ru_minflt,
            "iterations": result.iterations, "objective": result.objective,
            "anon_huge_mb": _anon_huge_kb() / 1024, "load": os.getloadavg()[0]})
    try:
        figures["threading_layer"] = numba.threading_layer()
    except ValueError:
        pass
    return figures


def ab(size: str, rounds: int, env: dict[str, str], solves: int) -> dict:
    """Both histories in fresh subprocesses, alternating; the medians of the first solve."""
    results: dict[str, list[dict]] = {"fresh": [], "liblinear": []}
    _fresh_problem(size)  # the cache, outside the timing
    for round_ in range(rounds):
        order = ["fresh", "liblinear"] if round_ % 2 == 0 else ["liblinear", "fresh"]
        for history in order:
            out = subprocess.run(
                [sys.executable, "-m", "bench", "busy_process", "run", "--history", history,
                 "--size", size, "--solves", str(solves)],
                check=True, capture_output=True, text=True, env={**os.environ, **env}).stdout
            figures = json.loads(out.strip().splitlines()[-1])
            results[history].append(figures)
            print(json.dumps(figures), flush=True)
    return {history: {"first_solve_s": statistics.median(r["solves"][0]["seconds"]
                                                        for r in runs),
                      "last_solve_s": statistics.median(r["solves"][-1]["seconds"]
                                                       for r in runs),
                      "first_solve_cpu_s": statistics.median(r["solves"][0]["cpu_s"]
                                                            for r in runs)}
            for history, runs in results.items()}


def run_command(args) -> int:
    if args.command == "write":
        write_cache(args.size)
    elif args.command == "run":
        print(json.dumps(run(args.history, args.size, args.solves)))
    else:
        env = dict(setting.split("=", 1) for setting in args.env)
        print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
              f"{os.getloadavg()[0]:.2f}, env {env}")
        summary = ab(args.size, args.rounds, env, args.solves)
        print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
              f"{os.getloadavg()[0]:.2f}")
        print(json.dumps(summary, indent=1))
    return 0


def _size_and_solves(solves: bool) -> tuple:
    size = (option("--size", default=SIZE),)
    return size + (option("--solves", type=int, default=2),) if solves else size


COMMAND = Command(
    "busy_process", "mfn's solve time in a fresh process against a busy one (issue 38)",
    run_command,
    description=__doc__, subcommands=(
        Command("run", "one history in this process", options=(
            option("--history", choices=["fresh", "liblinear"], required=True),
            *_size_and_solves(True))),
        Command("ab", "both histories in subprocesses, alternating", options=(
            option("--rounds", type=int, default=3),
            option("--env", action="append", default=[], metavar="NAME=VALUE"),
            *_size_and_solves(True))),
        Command("write", "write the problem's .npz cache", options=_size_and_solves(False))))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["busy_process", *sys.argv[1:]]))
