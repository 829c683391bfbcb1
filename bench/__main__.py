"""``python -m bench``: the benchmark harness.

    python -m bench run --suite quick|full --out DIR   # measure, write JSON/Markdown/PNG
    python -m bench references [--regenerate [--only TEXT]]  # show / recompute optima

Suites:

* ``quick`` (a few minutes): squared hinge, regularized bias, C = 1 on a9a, w8a, ijcnn1 and
  mushrooms, against LIBLINEAR -s 1/-s 2 and scikit-learn; 3 repeats; no scaling study.
* ``scaling``: only the scaling study of the full suite (a few minutes).
* ``full``: squared hinge for C in {0.01, 1, 100} on a9a, w8a, ijcnn1, mushrooms and news20
  (groups 1-10 against 11-20), a synthetic text-like problem of 300,000 rows x 100,000
  features (~5.7M stored entries), the hinge loss at C = 1 on a9a, and the scaling study
  (time to 1e-6 against n on nested subsets of a9a and of the synthetic problem); 5 repeats.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from bench.harness import machine_description, measure_problem, time_to_gap
from bench.problems import BenchProblem, load_dataset
from bench.references import REFERENCE_PROBLEMS, load_references, regenerate
from bench.report import markdown_table, scaling_plot, write_outputs
from bench.runners import default_runners

SYNTHETIC = "synthetic-300000x100000"

SUITES = {
    "quick": {
        "problems": [BenchProblem(d, "squared_hinge", "regularized", 1.0)
                     for d in ("a9a", "w8a", "ijcnn1", "mushrooms")],
        "repeats": 3,
        "scaling": [],
    },
    "scaling": {"problems": [], "repeats": 1, "scaling": ["a9a", SYNTHETIC]},
    "full": {
        "problems": (
            [BenchProblem(d, "squared_hinge", "regularized", C)
             for d in ("a9a", "w8a", "ijcnn1", "mushrooms", "news20-binary")
             for C in (0.01, 1.0, 100.0)]
            + [BenchProblem(SYNTHETIC, "squared_hinge", "regularized", 1.0),
               BenchProblem("a9a", "hinge", "regularized", 1.0)]
        ),
        "repeats": 5,
        "scaling": ["a9a", SYNTHETIC],
    },
}


def scaling_study(dataset: str, runners, log) -> dict:
    """Time to relative gap 1e-6 against n on nested subsets (1/8, 1/4, 1/2, all) of
    ``dataset``, squared hinge, C = 1; the reference optimum of each subset is the best
    objective any solver reached on it.  Slopes are least-squares fits in log-log."""
    n_total = load_dataset(dataset).n_samples
    points: dict[str, list[tuple[int, float]]] = {}
    # one discarded run per runner first (Numba cache loads, first-call allocations), as in
    # measure_problem: otherwise the smallest subset pays them
    smallest = BenchProblem(dataset, "squared_hinge", "regularized", 1.0, n_rows=n_total // 8)
    for r in runners:
        if r.supports(smallest):
            r.run(smallest)
    for fraction in (8, 4, 2, 1):
        problem = BenchProblem(dataset, "squared_hinge", "regularized", 1.0,
                               n_rows=n_total // fraction)
        runs = {r.name: r.run(problem) for r in runners if r.supports(problem)}
        reference = min(run.objective for run in runs.values())
        for runner, run in runs.items():
            t = time_to_gap(run.trace, reference, 1e-6)
            if t is not None:
                points.setdefault(runner, []).append((problem.n_rows, t))
        log(f"  scaling {problem.key}: " + ", ".join(
            f"{name} {run.seconds:.3f}s" for name, run in runs.items()))
    slopes = {runner: float(np.polyfit(np.log([p[0] for p in series]),
                                       np.log([p[1] for p in series]), 1)[0])
              for runner, series in points.items() if len(series) >= 2}
    return {"title": f"nested subsets of {dataset}", "points": points, "slopes": slopes}


def cmd_run(args) -> int:
    suite = SUITES[args.suite]
    out = Path(args.out)
    runners = default_runners()
    machine = machine_description()
    log = print
    log(f"suite {args.suite}: {len(suite['problems'])} problems, {suite['repeats']} repeats; "
        f"load average {machine['load_average_at_start']:.2f}")
    start = time.perf_counter()
    results = [measure_problem(p, runners, suite["repeats"], log) for p in suite["problems"]]
    scaling = []
    if suite["scaling"]:
        for dataset in suite["scaling"]:
            entry = scaling_study(dataset, runners, log)
            scaling.append(entry)
            out.mkdir(parents=True, exist_ok=True)
            scaling_plot(entry["points"], entry["slopes"], entry["title"],
                         out / f"scaling-{dataset}.png")
    write_outputs(results, scaling, machine, out)
    print(markdown_table(results))
    print(f"done in {time.perf_counter() - start:.0f} s; results in {out}")
    return 0


def cmd_references(args) -> int:
    if args.regenerate:
        chosen = [p for p in REFERENCE_PROBLEMS if args.only is None or args.only in p.key]
        regenerate(chosen)
        return 0
    for key, entry in sorted(load_references().items()):
        print(f"{key:50s} {entry['objective']:.15g}  {entry['method']}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a benchmark suite")
    run.add_argument("--suite", choices=sorted(SUITES), default="quick")
    run.add_argument("--out", default="bench/results", help="output directory")
    references = commands.add_parser("references", help="reference optima")
    references.add_argument("--regenerate", action="store_true",
                            help="recompute the reference optima (minutes)")
    references.add_argument("--only", help="with --regenerate: keys containing this text")
    args = parser.parse_args(argv)
    return cmd_run(args) if args.command == "run" else cmd_references(args)


if __name__ == "__main__":
    sys.exit(main())
