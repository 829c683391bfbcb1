"""``python -m bench cutting_plane``: the cutting-plane family against its anchors, in one
run, and Arnosti's experiments.

    python -m bench cutting_plane [--parts binary,cs,arnosti,scaling] [--repeats R]
                                        [--quick] [--out DIR]

* binary: the hinge loss with a regularized bias (``-B 1``), ``docs/design.md``'s C, C in
  {0.01, 1} on a9a, w8a, ijcnn1 and mushrooms (quick: C = 1 on a9a and mushrooms) through
  :func:`bench.harness.measure_problem` (a warm-up run, then ``repeats`` rounds with the
  runner order rotating; medians; f* the certified stored optimum).  Runners: our
  ``cutting_plane`` with each method at tol = 1e-6 (one run gives the whole curve: every
  iteration reports F(w_best)), LIBLINEAR ``-s 3`` (dual CD; eps schedule 1e-1..1e-8, one run
  per eps), ``mfn`` on the hinge (Huber homotopy, ``tol=1e-7`` so it reaches
  1e-6) and Clarabel through cvxpy (one run at tol 1e-7, its own solve time: its times to
  1e-2 and 1e-3 are that of the 1e-6 run, upper bounds).
* cs: Crammer-Singer on dna (C = 1), letter (C = 1) and news20.t (C = 0.1; the 20-class test
  file: the training file's cut buffer at 1e-6 would not fit in memory), our methods at
  tol = 1e-6 against LIBLINEAR ``-s 4`` (eps schedule) and scikit-learn's
  ``LinearSVC(multi_class="crammer_singer")`` (tol schedule); f* the best objective reached,
  checked against our certified lower bound (the bound <= every objective); our runs are
  stopped after 60 s.
* arnosti: his setting (C = 1, eps = 0.01, libocas' C) on letter (16 features), dna (180) and
  news20 (62,061; C = 1, the training file), Crammer-Singer: iterations, total time, the
  share of the line search, oracle and QP, for OCAS, GCA2, TCA, and OCAS with section V's
  fixes (mu = 0.02 in the first 5 iterations; mu = 0.02 whenever the search returns 0); the
  same on the binary sets (C = 1).
* scaling: nested subsets of a9a and ijcnn1 (:func:`run_scaling`), OCAS and TCA against
  LIBLINEAR ``-s 3``; not in the default ``--parts``.

Writes ``cutting_plane.json`` and ``cutting_plane.md`` to ``--out`` (default
bench/results/cutting_plane) and prints the Markdown.  Load averages at start and end are
recorded: other processes distort timings.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import solvers
from bench.anchors import (
    ClarabelHinge,
    Liblinear,
    ProjectSolver,
    liblinear_crammer_singer_weights,
    liblinear_trace,
)
from bench.commands import Command, option, out, quick, repeats
from bench.harness import GAPS, as_json, machine_description, measure_problem, time_to_gap
from bench.paths import dataset_path
from bench.problems import BenchProblem
from solvers.cutting_plane import CuttingPlaneParams, solve, solve_crammer_singer
from solvers.monitor import ListMonitor
from solvers.problems import CrammerSingerProblem

METHODS = ("ocas", "gca2", "tca", "cpa")


# -- binary -------------------------------------------------------------------------------------


def binary_runners():
    ours = [ProjectSolver("cutting_plane", method=m, tol=1e-6) for m in METHODS]
    return ours + [Liblinear(3), ProjectSolver("mfn", tol=1e-7),
                   ClarabelHinge(tol_schedule=(1e-7,))]


def run_binary(quick: bool, repeats: int, log) -> list:
    if quick:
        problems = [BenchProblem(d, "hinge", "regularized", 1.0) for d in ("a9a", "mushrooms")]
    else:
        problems = [BenchProblem(d, "hinge", "regularized", C)
                    for d in ("a9a", "w8a", "ijcnn1", "mushrooms") for C in (0.01, 1.0)]
    runners = binary_runners()
    return [measure_problem(p, runners, repeats, log) for p in problems]


def binary_table(results) -> str:
    lines = ["| problem | runner | t(1e-2) s | t(1e-3) s | t(1e-6) s | final gap |",
             "|---|---|---|---|---|---|"]
    for result in results:
        for s in result.summaries:
            cells = [_fmt(s.time_to_gap[f"{g:g}"]) for g in GAPS]
            lines.append(f"| {result.problem} | {s.runner} | " + " | ".join(cells)
                         + f" | {s.final_gap:.1e} |")
    lines += ["", "Ratios (best cutting-plane method / fastest anchor):", "",
              "| problem | 1e-2 | 1e-3 | 1e-6 |", "|---|---|---|---|"]
    for result in results:
        cells = []
        for g in GAPS:
            key = f"{g:g}"
            ours = [s.time_to_gap[key] for s in result.summaries
                    if s.runner.startswith("cutting_plane") and s.time_to_gap[key] is not None]
            anchors = [s.time_to_gap[key] for s in result.summaries
                       if s.anchor and s.time_to_gap[key] is not None]
            cells.append(f"{min(ours) / min(anchors):.2f}" if ours and anchors else "-")
        lines.append(f"| {result.problem} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- Crammer-Singer -----------------------------------------------------------------------------


def cs_problem(name: str, C: float) -> tuple[solvers.Dataset, CrammerSingerProblem]:
    ds = solvers.read_svmlight(dataset_path(name))
    labels = np.searchsorted(ds.classes, ds.y)
    return ds, CrammerSingerProblem(ds.X, labels, ds.classes.shape[0], C=C)


def liblinear_cs_runs(ds, problem, C, eps_schedule=(1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8)):
    return liblinear_trace(ds.X, ds.y, f"-s 4 -c {C!r} -B 1", 1.0, eps_schedule,
                           lambda model: problem.objective(liblinear_crammer_singer_weights(
                               model, ds.classes, problem.n_features)))


def sklearn_cs_runs(ds, problem, C, tol_schedule=(1e-2, 1e-3, 1e-4, 1e-6)):
    import warnings

    from sklearn.svm import LinearSVC

    trace = []
    for tol in tol_schedule:
        model = LinearSVC(multi_class="crammer_singer", C=C, tol=tol, max_iter=100_000)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(ds.X, ds.y)
        seconds = time.perf_counter() - start
        W = np.c_[model.coef_, model.intercept_]
        trace.append((seconds, problem.objective(W)))
    return trace


CS_TIME_LIMIT = 60.0  # seconds per run of ours (news20.t does not reach 1e-6 in minutes)


def ours_cs_run(problem, params):
    monitor = ListMonitor(time_limit=CS_TIME_LIMIT)
    start = time.perf_counter()
    solution = solve_crammer_singer(problem, params, monitor)
    seconds = time.perf_counter() - start
    trace = [(r.elapsed, r.objective) for r in monitor.records]
    return trace, seconds, solution


def run_cs(quick: bool, repeats: int, log) -> list:
    cases = [("dna.scale", 1.0), ("letter.scale", 1.0)] if quick else \
        [("dna.scale", 1.0), ("letter.scale", 1.0), ("news20.t", 0.1)]
    out = []
    for name, C in cases:
        ds, problem = cs_problem(name, C)
        traces: dict[str, list] = {}
        bounds = []
        for repeat in range(repeats + 1):  # the first round warms up
            for method in METHODS[:3]:
                trace, seconds, solution = ours_cs_run(
                    problem, CuttingPlaneParams(C=C, method=method, tol=1e-6, max_iter=3000))
                bounds.append(solution.extras["lower_bound"])
                log(f"  {name} C={C:g} {method}: {seconds:.2f} s, {solution.iterations} it, "
                    f"{solution.status}")
                if repeat:
                    traces.setdefault(f"cutting_plane {method}", []).append(trace)
            if repeat:
                traces.setdefault("liblinear -s 4", []).append(liblinear_cs_runs(ds, problem, C))
                traces.setdefault("sklearn LinearSVC(crammer_singer)", []).append(
                    sklearn_cs_runs(ds, problem, C))
        best = min(obj for runs in traces.values() for tr in runs for _, obj in tr)
        bound = max(bounds)
        rows = []
        for runner, runs in traces.items():
            times = {}
            for g in GAPS:
                reached = [time_to_gap(tr, best, g) for tr in runs]
                reached = [t for t in reached if t is not None]
                times[f"{g:g}"] = statistics.median(reached) if len(reached) * 2 > len(runs) \
                    else None
            final = min(obj for _, obj in runs[0])
            rows.append({"runner": runner, "time_to_gap": times,
                         "final_gap": (final - best) / best})
        out.append({"problem": f"{name}/crammer_singer/C={C:g}", "best_objective": best,
                    "certified_lower_bound": bound, "rows": rows})
        log(f"  {name}: best {best:.10g}, certified lower bound {bound:.10g} "
            f"(gap {(best - bound) / best:.1e})")
    return out


def cs_table(results) -> str:
    lines = ["| problem | runner | t(1e-2) s | t(1e-3) s | t(1e-6) s | final gap |",
             "|---|---|---|---|---|---|"]
    for result in results:
        for row in result["rows"]:
            cells = [_fmt(row["time_to_gap"][f"{g:g}"]) for g in GAPS]
            lines.append(f"| {result['problem']} | {row['runner']} | " + " | ".join(cells)
                         + f" | {row['final_gap']:.1e} |")
    lines += ["", "f* = the best objective reached; our certified lower bound (the largest over "
              "our runs) is at most f* by:", ""]
    for result in results:
        gap = (result["best_objective"] - result["certified_lower_bound"]) / \
            result["best_objective"]
        lines.append(f"* {result['problem']}: {gap:.1e}")
    return "\n".join(lines)


# -- Arnosti's experiments ----------------------------------------------------------------------


ARNOSTI_VARIANTS = {
    "ocas": {"method": "ocas"},
    "gca2": {"method": "gca2"},
    "tca": {"method": "tca"},
    "ocas, mu=0.02 first 5": {"method": "ocas", "force_mu_iterations": 5},
    "ocas, mu=0.02 when 0": {"method": "ocas", "force_mu_when_zero": True},
}


def run_arnosti(quick: bool, repeats: int, log) -> list:
    cs_cases = [("letter.scale", 1.0), ("dna.scale", 1.0)] + ([] if quick else
                                                             [("news20", 1.0)])
    binary_cases = [] if quick else [BenchProblem(d, "hinge", "regularized", 1.0)
                                     for d in ("a9a", "ijcnn1")]
    out = []
    for label, make in [(f"{n}/crammer_singer/C={C:g}", (lambda n=n, C=C: cs_problem(n, C)[1]))
                        for n, C in cs_cases] + \
            [(p.key, (lambda p=p: p.binary_problem())) for p in binary_cases]:
        problem = make()
        runner = solve_crammer_singer if isinstance(problem, CrammerSingerProblem) else solve
        for variant, options in ARNOSTI_VARIANTS.items():
            params = CuttingPlaneParams(C=problem.C, tol=0.01, **options)
            runs = []
            for _ in range(repeats + 1):
                start = time.perf_counter()
                solution = runner(problem, params)
                runs.append((time.perf_counter() - start, solution))
            runs = runs[1:]
            seconds, solution = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
            e = solution.extras
            row = {"problem": label, "variant": variant, "iterations": solution.iterations,
                   "seconds": seconds, "line_search": e["time_line_search"],
                   "oracle": e["time_oracle"], "qp": e["time_qp"],
                   "mu_zero": e["mu_zero_iterations"], "objective": solution.objective,
                   "status": str(solution.status)}
            out.append(row)
            log(f"  {label} {variant}: {solution.iterations} it, {seconds:.2f} s, search "
                f"{e['time_line_search']:.2f} s, mu=0 x{e['mu_zero_iterations']}")
    return out


def arnosti_table(rows) -> str:
    lines = ["| problem | variant | iterations | total s | search % | oracle % | QP % | "
             "mu = 0 | objective |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        total = r["seconds"]
        lines.append(
            f"| {r['problem']} | {r['variant']} | {r['iterations']} | {total:.2f} | "
            f"{100 * r['line_search'] / total:.0f} | {100 * r['oracle'] / total:.0f} | "
            f"{100 * r['qp'] / total:.0f} | {r['mu_zero']} | {r['objective']:.8g} |")
    return "\n".join(lines)


# -- scaling on nested subsets ------------------------------------------------------------------


SCALING_SETS = {"a9a": (1000, 2000, 4000, 8000, 16000, 32561),
                "ijcnn1": (1562, 3125, 6250, 12500, 25000, 49990)}
SCALING_METHODS = ("ocas", "tca")


def run_scaling(quick: bool, repeats: int, log) -> list:
    """Nested subsets (the first n rows of one seeded permutation, ``BenchProblem.n_rows``),
    Joachims' convention of a fixed C_s = C n (here C = n_full / n: C = 1 on the whole set,
    the same per-example weight C_s / n as in the papers' scaling experiments), hinge with a
    regularized bias.  f* of each subset: the smaller of our tol = 1e-6 run's objective
    (certified within 1e-6) and LIBLINEAR's at eps = 1e-8; times to 1e-2 and 1e-3 from our
    monitor's curve and LIBLINEAR's eps schedule, medians of ``repeats`` interleaved rounds."""
    rows = []
    sets = {"a9a": SCALING_SETS["a9a"][1::2]} if quick else SCALING_SETS
    liblinear = Liblinear(3)
    for name, sizes in sets.items():
        n_full = SCALING_SETS[name][-1]
        for n in sizes:
            problem = BenchProblem(name, "hinge", "regularized", n_full / n,
                                   n_rows=None if n == n_full else n)
            bp = problem.binary_problem()
            traces: dict[str, list] = {}
            iterations: dict[str, list] = {}
            bounds = []
            for repeat in range(repeats + 1):  # the first round warms up
                for method in SCALING_METHODS:
                    monitor = ListMonitor(time_limit=CS_TIME_LIMIT)
                    solution = solve(bp, CuttingPlaneParams(C=problem.C, method=method,
                                                            tol=1e-6), monitor)
                    bounds.append(solution.extras["lower_bound"])
                    if repeat:
                        traces.setdefault(method, []).append(
                            [(r.elapsed, r.objective) for r in monitor.records])
                        iterations.setdefault(method, []).append(solution.iterations)
                if repeat:
                    traces.setdefault("liblinear -s 3", []).append(liblinear.run(problem).trace)
            best = min(obj for runs in traces.values() for tr in runs for _, obj in tr)
            row = {"set": name, "n": n, "C": problem.C, "best_objective": best,
                   "certified_gap": (best - max(bounds)) / best}
            for runner, runs in traces.items():
                for g in GAPS[:2]:
                    reached = [t for t in (time_to_gap(tr, best, g) for tr in runs)
                               if t is not None]
                    row[f"{runner} t({g:g})"] = statistics.median(reached) \
                        if len(reached) * 2 > len(runs) else None
                if runner in iterations:
                    row[f"{runner} iterations"] = statistics.median(iterations[runner])
            rows.append(row)
            log(f"  {name}[:{n}] C={problem.C:.4g}: " + ", ".join(
                f"{k} {_fmt(v)}" for k, v in row.items() if " t(" in k))
    return rows


def scaling_table(rows) -> str:
    runners = list(SCALING_METHODS) + ["liblinear -s 3"]
    lines = ["| set | n | C | " + " | ".join(f"{r} t(1e-2) / t(1e-3) s" for r in runners)
             + " | ocas iterations | best / LIBLINEAR at 1e-2 |",
             "|---|---:|---:|" + "---|" * len(runners) + "---:|---:|"]
    for row in rows:
        cells = [f"{_fmt(row.get(f'{r} t(0.01)'))} / {_fmt(row.get(f'{r} t(0.001)'))}"
                 for r in runners]
        ours = [row.get(f"{m} t(0.01)") for m in SCALING_METHODS]
        ours = [t for t in ours if t is not None]
        ll = row.get("liblinear -s 3 t(0.01)")
        ratio = f"{min(ours) / ll:.2f}" if ours and ll else "-"
        lines.append(f"| {row['set']} | {row['n']} | {row['C']:.3g} | " + " | ".join(cells)
                     + f" | {_fmt(row.get('ocas iterations'))} | {ratio} |")
    return "\n".join(lines)


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def run_command(args) -> int:
    parts = args.parts.split(",")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    record = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "machine": machine_description(), "repeats": args.repeats}
    md = [f"# cutting_plane, {record['date']}", "",
          f"load average at start {os.getloadavg()[0]:.1f}", ""]
    if "binary" in parts:
        results = run_binary(args.quick, args.repeats, log)
        record["binary"] = as_json(results)
        md += ["## Binary hinge", "", binary_table(results), ""]
    if "cs" in parts:
        results = run_cs(args.quick, args.repeats, log)
        record["crammer_singer"] = results
        md += ["## Crammer-Singer", "", cs_table(results), ""]
    if "arnosti" in parts:
        rows = run_arnosti(args.quick, args.repeats, log)
        record["arnosti"] = rows
        md += ["## Arnosti's experiments (eps = 0.01)", "", arnosti_table(rows), ""]
    if "scaling" in parts:
        rows = run_scaling(args.quick, args.repeats, log)
        record["scaling"] = rows
        md += ["## Scaling on nested subsets (C = n_full / n)", "", scaling_table(rows), ""]
    record["load_average_at_end"] = os.getloadavg()[0]
    md += [f"load average at end {record['load_average_at_end']:.1f}"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cutting_plane.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    text = "\n".join(md) + "\n"
    (out / "cutting_plane.md").write_text(text)
    print(text)
    return 0


COMMAND = Command(
    "cutting_plane", "cutting-plane methods against LIBLINEAR, scikit-learn and Clarabel",
    run_command,
    description=__doc__, options=(
        option("--parts", default="binary,cs,arnosti"),
        repeats(1),
        quick(),
        out(Path(__file__).with_name("results") / "cutting_plane")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["cutting_plane", *sys.argv[1:]]))
