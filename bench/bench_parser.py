"""``python -m bench parser``: our SVMlight reader against scikit-learn's.

For every dataset the repository carries (``data/``, or the files of ``--data-dir``),
:func:`solvers.data.read_svmlight` and :func:`sklearn.datasets.load_svmlight_file` each read
the file once to warm up (Numba compilation or cache loading, the page cache; discarded), then
``--repeats`` times, the two alternating and the one going first changing from one repeat to
the next. The figures are medians: throughput in MB/s (10**6 bytes of file per second, wall
clock) and the speed-up (scikit-learn's median time over ours), in wall-clock and in CPU time
(steadier when the machine is busy). The "all files" row divides the total size by the sum of
the medians. Both readers get 1-based indices (``zero_based=False``), so scikit-learn skips its
index-base detection pass.

    python -m bench parser [--repeats 5] [--data-dir DIR] [--out results.json] [names...]
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from sklearn.datasets import load_svmlight_file

from bench.commands import Command, option, out, repeats
from bench.paths import dataset_names, dataset_path
from solvers.data import read_svmlight


def ours(path: Path) -> None:
    read_svmlight(path)


def scikit_learn(path: Path) -> None:
    load_svmlight_file(str(path), zero_based=False)


READERS = {"ours": ours, "sklearn": scikit_learn}


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def timed(reader, path: Path) -> dict[str, float]:
    """Wall-clock and CPU (process) seconds of one read; both readers are single-threaded, so
    the CPU time is the steadier figure on a busy machine."""
    start = {clock: read() for clock, read in CLOCKS.items()}
    reader(path)
    return {clock: read() - start[clock] for clock, read in CLOCKS.items()}


def summary(name: str, size: int, medians: dict[str, dict[str, float]]) -> dict:
    """``medians[clock][reader]`` seconds -> throughputs (MB/s) and speed-ups per clock."""
    return {
        "file": name,
        "bytes": size,
        "median_seconds": medians,
        "mb_per_second": {
            clock: {reader: size / 1e6 / t for reader, t in by_reader.items()}
            for clock, by_reader in medians.items()
        },
        "speedup": {clock: t["sklearn"] / t["ours"] for clock, t in medians.items()},
    }


def measure(path: Path, repeats: int) -> dict:
    for reader in READERS.values():  # warm-up
        reader(path)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in READERS}
    names = list(READERS)
    for repeat in range(repeats):
        for name in names[repeat % 2 :] + names[: repeat % 2]:
            runs[name].append(timed(READERS[name], path))
    medians = {
        clock: {name: statistics.median(run[clock] for run in runs[name]) for name in READERS}
        for clock in CLOCKS
    }
    return summary(path.name, path.stat().st_size, medians) | {"runs": runs}


def total_row(rows: list[dict]) -> dict:
    medians = {
        clock: {name: sum(row["median_seconds"][clock][name] for row in rows) for name in READERS}
        for clock in CLOCKS
    }
    return summary("all files", sum(row["bytes"] for row in rows), medians)


def markdown(rows: list[dict]) -> str:
    lines = [
        "| file | MB | ours (MB/s) | scikit-learn (MB/s) | speed-up | speed-up in CPU time |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        rate = row["mb_per_second"]["wall"]
        speedup = row["speedup"]
        lines.append(
            f"| {row['file']} | {row['bytes'] / 1e6:.2f} | {rate['ours']:.0f} | "
            f"{rate['sklearn']:.1f} | {speedup['wall']:.1f}x | {speedup['cpu']:.1f}x |"
        )
    return "\n".join(lines)


def machine() -> dict:
    import numba
    import numpy
    import sklearn

    return {
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "scikit-learn": sklearn.__version__,
    }


def run_command(args) -> int:

    if args.data_dir is None:
        names = args.names or dataset_names()
        path_of = dataset_path
    elif not args.data_dir.is_dir():
        print(f"no datasets folder at {args.data_dir}", file=sys.stderr)
        return 1
    else:
        names = args.names or sorted(p.name for p in args.data_dir.iterdir()
                                     if p.is_file() and p.name != "README.md")
        path_of = args.data_dir.joinpath
    load_before = os.getloadavg()[0]
    rows = []
    for name in names:
        row = measure(path_of(name), args.repeats)
        rows.append(row)
        print(f"{name}: {row['speedup']['wall']:.1f}x", file=sys.stderr)
    table_rows = rows + [total_row(rows)]
    load = (load_before, os.getloadavg()[0])
    print(markdown(table_rows))
    print(
        f"\n{args.repeats} repeats; 1-minute load average {load[0]:.1f} before, {load[1]:.1f} after"
    )
    if args.out:
        results = {
            "machine": machine(),
            "repeats": args.repeats,
            "load_average_before_after": load,
            "rows": table_rows,
        }
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


COMMAND = Command(
    "parser", "the SVMlight reader against scikit-learn's", run_command, description=__doc__,
    options=(
        option("names", nargs="*", help="files to read (default: all of them)"),
        option("--data-dir", type=Path, default=None,
               help="read the files of this folder (default: the repository's data/)"),
        repeats(5),
        out(None, help="also write the results as JSON here")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["parser", *sys.argv[1:]]))
