"""``python -m bench mfn``: L2-SVM-MFN against LIBLINEAR -s 1 and -s 2, in one run.

    python -m bench mfn [--quick] [--repeats R] [--out DIR] [--only KEYS]
                              [--no-appendix-a] [--no-profile]

Problems: the squared hinge with a regularized bias (``-B 1``), ``docs/design.md``'s C.

* full: C in {0.01, 1, 100} on a9a, w8a, ijcnn1, mushrooms and news20 made binary (groups 1-10
  against 11-20), and C = 1 on ``synthetic-300000x100000`` -- a SYNTHETIC text-like problem
  from :mod:`bench.synthetic` (Zipf word frequencies, unit-normalized rows, a planted
  separator with 5% label noise; 300,000 rows, 100,000 features, 5.7M stored entries);
* quick: C = 1 on a9a, w8a, ijcnn1 and mushrooms, 2 repeats.

Runners:

* ``mfn``: default parameters (the paper's eps = 1e-6, both heuristics, rule (13); step 3
  factorized where features are few, ``linear_solver="auto"``; CGLS's diagonal preconditioner
  where active rows outnumber features, ``preconditioning="auto"``; with CGLS, a C path for a
  cold start at a large C, ``c_path_start``; see solvers/mfn.py).  Its objective-versus-time
  curve comes from the monitor: every Newton iteration reports the seconds since the solver
  was called and the primal objective, so one run gives the curve.
  Runs at a loosened final eps (as LIBLINEAR gets below) were tried and dropped: the curve
  already holds every Newton iterate, and a schedule of runs at eps = 1e-2, 1e-3, 1e-4, 1e-6
  reached 1e-6 only 0-20% sooner (a9a, w8a, ijcnn1, mushrooms at C = 1) for four times the
  benchmark time.
* ``mfn cgls``: the defaults with step 3 by CGLS throughout (``linear_solver="cgls"``): where
  "auto" factorizes, the factorization's gain; on news20 and the synthetic problem, the
  default before the row-space step 3 (``linear_solver="dual_cg"``, which "auto" takes there
  per Newton step).
* ``mfn exact loose rounds``: the defaults without the inexact Newton steps of the loose
  rounds (``newton_forcing=None``: rule (13) alone in every CGLS call), the default before
  2026-11-23's forcing term.
* ``mfn appendix A``: Appendix A as written: CGLS unpreconditioned, from zero at every C
  (``linear_solver="cgls", preconditioning=0, c_path_start=None, newton_forcing=None``).
* LIBLINEAR ``-s 1`` (dual coordinate descent) and ``-s 2`` (trust-region Newton with
  preconditioned CG) through :class:`bench.anchors.Liblinear`, and the same two of the
  multi-core build at ``-m 1`` and ``-m 2`` (:class:`bench.liblinear_multicore.
  LiblinearMulticore`, its own environment, left out where it cannot be made): black boxes,
  one run from
  scratch per eps in 1e-1..1e-8; the time to a gap is that of the first eps whose objective
  reaches it; data conversion happens once, outside the timing.

Measurement (:func:`bench.harness.measure_problem`): one warm-up run per runner (Numba
compilation and cache loading, discarded), then ``repeats`` rounds with the runner order
rotating; medians.  Relative gap (f - f*)/f*, f* the stored reference optimum
(``bench/reference_optima.json``) or the best objective of any run.  news20 at C = 100 is run
once with a shortened LIBLINEAR schedule (each of its runs takes minutes there) and a time
limit on the mfn runs (Appendix A from zero ends with status ``max_iter`` there).

Profile: one more default ``mfn`` run per problem under cProfile, its time split into the
CGLS kernel, the factorization (Gram matrix updates and Cholesky), the line search
(breakpoints and root), the other sparse products (outputs over all rows, compaction of the
active rows, the duality gap of each record) and the rest (NumPy bookkeeping over m-vectors
and Python), with Newton and CG iterations and the mean active fraction.

Writes ``mfn.json``, ``mfn.md`` and convergence plots to ``--out`` (default
bench/results/mfn) and prints the Markdown.  Load averages at start and end are recorded:
other processes distort timings.
"""

from __future__ import annotations

import cProfile
import fnmatch
import json
import os
import pstats
import sys
import time
from pathlib import Path

import numpy as np

from bench.anchors import LIBLINEAR_EPS_SCHEDULE, Liblinear, Run
from bench.commands import Command, option, out, quick, repeats
from bench.harness import GAPS, as_json, machine_description, measure_problem
from bench.liblinear_multicore import LiblinearMulticore
from bench.problems import BenchProblem
from bench.report import convergence_plot, markdown_table, slug
from solvers import mfn
from solvers.monitor import ListMonitor

SYNTHETIC = "synthetic-300000x100000"
REAL = ("a9a", "w8a", "ijcnn1", "mushrooms", "news20-binary")
SHORT_LIBLINEAR_SCHEDULE = (1e-1, 1e-2, 1e-3)
DEFAULT_TIME_LIMIT = 120.0  # seconds, mfn's default run on news20 at C = 100
CGLS_BY_DEFAULT = ("news20-binary", SYNTHETIC)  # too many features to factorize
MULTICORE_THREADS = (1, 2)  # liblinear-multicore's -m (its own environment, made on first use)


class MFNRunner:
    """mfn on a benchmark problem with the given parameters."""

    anchor = False

    def __init__(self, name: str, time_limit: float | None = None, **params):
        self.name = name
        self.time_limit = time_limit
        self.params = params

    def supports(self, problem: BenchProblem) -> bool:
        return problem.loss == "squared_hinge"

    def run(self, problem: BenchProblem) -> Run:
        bp = problem.binary_problem()
        test = problem.test_dataset()
        monitor = ListMonitor(self.time_limit)
        start = time.perf_counter()
        solution = mfn.solve(bp, mfn.MFNParams(C=problem.C, **self.params), monitor)
        seconds = time.perf_counter() - start
        trace = [(r.elapsed, r.objective) for r in monitor.records]
        w, intercept = bp.split(solution.beta)
        accuracy = None
        if test is not None:
            X = test.X[:, :w.shape[0]] if test.X.shape[1] > w.shape[0] else test.X
            scores = X @ w[:X.shape[1]] + intercept
            accuracy = float(np.mean(np.where(scores > 0, 1.0, -1.0) == test.y))
        return Run(self.name, trace, seconds, solution.objective, accuracy, solution.status,
                   {"iterations": solution.iterations,
                    "cg_iterations": solution.extras["cg_iterations"]})


_PHASES = {
    "_cgls_kernel": "CGLS",
    "_gram_kernel": "factorization",
    "_potrf_potrs": "factorization",
    "piecewise_linear_root": "line search",
    "clipped_loss_breakpoints": "line search",
}


def profile(problem: BenchProblem) -> dict:
    """One default mfn run under cProfile, its time split by phase."""
    bp = problem.binary_problem()
    monitor = ListMonitor(DEFAULT_TIME_LIMIT)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    solution = mfn.solve(bp, mfn.MFNParams(C=problem.C), monitor)
    profiler.disable()
    total = time.perf_counter() - start
    phases = {"CGLS": 0.0, "factorization": 0.0, "line search": 0.0, "products": 0.0}
    for (filename, _, function), row in pstats.Stats(profiler).stats.items():
        own = row[2]
        if function in _PHASES:
            phases[_PHASES[function]] += own
        elif filename.endswith(os.path.join("core", "sparse.py")):
            phases["products"] += own
    phases["other"] = total - sum(phases.values())
    active = [r.extras["active"] / bp.n_samples for r in monitor.records]
    return {
        "problem": problem.key,
        "seconds": total,
        "status": solution.status,
        "newton_iterations": solution.iterations,
        "cg_iterations": solution.extras["cg_iterations"],
        "linear_solver": solution.extras["linear_solver"],
        "mean_active_fraction": float(np.mean(active)) if active else 0.0,
        "phases": phases,
    }


def suite(quick: bool, only: str | None = None) -> list[tuple[BenchProblem, int | None]]:
    """(problem, repeats override) pairs; ``only`` keeps the problems whose key matches one of
    its comma-separated shell patterns (e.g. "news20*,w8a/*/C=1")."""
    if quick:
        problems = [(BenchProblem(d, C=1.0), None) for d in REAL[:4]]
    else:
        problems = [(BenchProblem(d, C=C), None) for d in REAL for C in (0.01, 1.0, 100.0)]
        problems = [(p, 1 if (p.dataset == "news20-binary" and p.C == 100.0) else r)
                    for p, r in problems]
        problems += [(BenchProblem(SYNTHETIC, C=1.0), None)]
    if only:
        parts = [part.strip() for part in only.split(",") if part.strip()]
        problems = [(p, r) for p, r in problems
                    if any(fnmatch.fnmatchcase(p.key, part) for part in parts)]
    return problems


def runners_for(problem: BenchProblem, appendix_a: bool = True,
                eps_min: float | None = None) -> list:
    hard = problem.dataset == "news20-binary" and problem.C == 100.0
    schedule = SHORT_LIBLINEAR_SCHEDULE if hard else None
    if eps_min is not None and not hard:
        schedule = tuple(eps for eps in LIBLINEAR_EPS_SCHEDULE if eps >= eps_min)
    limit = DEFAULT_TIME_LIMIT if hard else None
    runners = [MFNRunner("mfn", time_limit=limit),
               MFNRunner("mfn cgls", time_limit=limit, linear_solver="cgls"),
               MFNRunner("mfn exact loose rounds", time_limit=limit, newton_forcing=None)]
    if appendix_a:
        runners.append(MFNRunner("mfn appendix A", time_limit=limit, linear_solver="cgls",
                                 preconditioning=0.0, c_path_start=None, newton_forcing=None))
    anchors = [Liblinear(s, schedule) if schedule else Liblinear(s) for s in (1, 2)]
    for threads in MULTICORE_THREADS:
        anchors += [LiblinearMulticore(s, threads, schedule) if schedule
                    else LiblinearMulticore(s, threads) for s in (1, 2)]
    return [r for r in runners if r.supports(problem)] + \
        [a for a in anchors if a.supports(problem)]


def profile_table(profiles: list[dict]) -> str:
    lines = ["| problem | step 3 | mfn s | Newton its | CG its | mean active | CGLS | "
             "factorization | line search | products | other |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in profiles:
        share = {k: 100 * v / p["seconds"] for k, v in p["phases"].items()}
        lines.append(
            f"| {p['problem']} | {p['linear_solver']} | {p['seconds']:.3f} | "
            f"{p['newton_iterations']} | {p['cg_iterations']} | "
            f"{100 * p['mean_active_fraction']:.0f}% | {share['CGLS']:.0f}% | "
            f"{share['factorization']:.0f}% | {share['line search']:.0f}% | "
            f"{share['products']:.0f}% | {share['other']:.0f}% |")
    return "\n".join(lines) + "\n"


def run_command(args) -> int:
    repeats = args.repeats or (2 if args.quick else 3)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    machine = machine_description()
    print(f"load average at start {os.getloadavg()}")
    results, profiles = [], []
    for problem, override in suite(args.quick, args.only):
        runners = runners_for(problem, not args.no_appendix_a, args.eps_min)
        results.append(measure_problem(problem, runners, override or repeats))
        if not args.no_profile:
            profiles.append(profile(problem))
        convergence_plot(results[-1], out / f"convergence-{slug(results[-1].problem)}.png")
    machine["load_average_at_end"] = os.getloadavg()[0]
    table = markdown_table(results) + "\n" + profile_table(profiles)
    (out / "mfn.md").write_text(
        f"Load average {machine['load_average_at_start']:.2f} at start, "
        f"{machine['load_average_at_end']:.2f} at end; gaps {', '.join(map(str, GAPS))}.\n\n"
        + table)
    (out / "mfn.json").write_text(json.dumps(
        {"machine": machine, "problems": as_json(results), "profiles": profiles}, indent=1))
    print(table)
    print(f"results in {out}")
    return 0


COMMAND = Command(
    "mfn", "mfn against LIBLINEAR (both builds), with its profile",
    run_command, description=__doc__,
    options=(
        quick("C = 1 on four datasets"),
        repeats(None, help="timed rounds per problem (default 3, quick 2)"),
        out("bench/results/mfn", help="output directory"),
        option("--only", default=None,
               help="comma-separated shell patterns of the problem keys to keep, e.g. "
                    "'news20*,w8a/*/C=1'"),
        option("--no-appendix-a", action="store_true",
               help="leave out the 'mfn appendix A' runner"),
        option("--eps-min", type=float, default=None,
               help="end LIBLINEAR's eps schedule here (e.g. 1e-6: the times to a 1e-6 gap "
                    "need no smaller eps; the default goes to 1e-8)"),
        option("--no-profile", action="store_true",
               help="skip the cProfile run of each problem")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["mfn", *sys.argv[1:]]))
