"""Before/after of the cutting-plane family, side by side with LIBLINEAR, in one run.

    python bench/ab_cutting_plane.py --before DIR --after DIR [--rounds R] [--cases a,b]
                                     [--out FILE]
    python bench/ab_cutting_plane.py --summarize FILE.json

``DIR`` is a source tree of the project (e.g. ``git archive <commit> | tar -x -C DIR``); like
a checkout it reads the datasets from ``DIR/../shared/data`` (link ``../shared`` beside it).  For
every round and case the parent starts one child process per tree, alternating which goes
first, with ``PYTHONPATH`` set to that tree; the child (this file, ``--child CASE``) imports
the tree's ``solvers``, runs our methods and LIBLINEAR in the same process, and prints JSON.
So both versions are measured under the same load, interleaved, each next to its own
LIBLINEAR run.  Only APIs present in both trees are used (``solve``, ``solve_crammer_singer``,
``CuttingPlaneParams``, the solution's ``time_*`` extras).

Cases: ``<dataset>:<C>[:<method>...]`` binary hinge with a regularized bias (``-B 1``; f* the
certified stored optimum of ``bench/reference_optima.json``, else the best objective reached),
``cs-<file>:<C>`` Crammer-Singer (f* the best objective any run reached). Ours (unless methods
are named): cpa, ocas, gca2, tca at tol 1e-6 (Crammer-Singer: ocas, gca2 and tca at tol 1e-3),
stopped after ``TIME_LIMIT`` s; LIBLINEAR ``-s 3`` / ``-s 4`` once per eps of a schedule (time
to a gap: the first run of the schedule that reaches it, as :mod:`bench.harness`). Reported per
case: medians over the rounds of the time to relative gaps 1e-2 and 1e-3 (and 1e-6, binary), the
best method's profile (oracle, QP, line search) and the ratio best-of-ours / LIBLINEAR.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TIME_LIMIT = 60.0
BINARY_METHODS = ("cpa", "ocas", "gca2", "tca")
CS_METHODS = ("ocas", "gca2", "tca")
GAPS = (1e-2, 1e-3, 1e-6)
DEFAULT_CASES = ("ijcnn1:0.01", "ijcnn1:1", "mushrooms:0.01", "mushrooms:1", "a9a:0.01",
                 "a9a:1", "w8a:0.01", "w8a:1", "a9a:100", "cs-dna.scale:1", "cs-letter.scale:1")
LL_EPS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8)


# -- the child: one tree, one case --------------------------------------------------------------


def _child(case: str) -> dict:
    import numpy as np
    from liblinear.liblinear import parameter
    from liblinear.liblinear import problem as ll_problem
    from liblinear.liblinearutil import train as ll_train
    from threadpoolctl import threadpool_limits

    import solvers
    from bench.problems import DATA_DIR, BenchProblem
    from solvers.cutting_plane import CuttingPlaneParams, solve, solve_crammer_singer
    from solvers.monitor import ListMonitor
    from solvers.problems import CrammerSingerProblem

    name, C, *only = case.split(":")
    C = float(C)
    out = {"case": case, "load": os.getloadavg()[0], "ours": {}, "liblinear": []}
    with threadpool_limits(limits=1, user_api="blas"):
        if name.startswith("cs-"):
            ds = solvers.read_svmlight(DATA_DIR / name[3:])
            labels = np.searchsorted(ds.classes, ds.y)
            problem = CrammerSingerProblem(ds.X, labels, ds.classes.shape[0], C=C)
            runner, methods, tol, flag = solve_crammer_singer, CS_METHODS, 1e-3, 4
            X, y = ds.X, ds.y
            from bench.anchors import liblinear_crammer_singer_weights

            def ll_objective(model):
                return problem.objective(liblinear_crammer_singer_weights(
                    model, ds.classes, problem.n_features))
        else:
            bench_problem = BenchProblem(name, "hinge", "regularized", C)
            problem = bench_problem.binary_problem()
            runner, methods, tol, flag = solve, BINARY_METHODS, 1e-6, 3
            train = bench_problem.train_dataset()
            X, y = train.X, train.y
            from bench.anchors import liblinear_beta

            def ll_objective(model):
                return problem.objective(liblinear_beta(model, problem.n_features))
        # compile / load the cache of every kernel (the QP solvers too) before timing
        runner(problem, CuttingPlaneParams(C=C, max_iter=30))
        for method in (only or methods):
            monitor = ListMonitor(time_limit=TIME_LIMIT)
            start = time.perf_counter()
            solution = runner(problem, CuttingPlaneParams(C=C, method=method, tol=tol),
                              monitor)
            seconds = time.perf_counter() - start
            e = solution.extras
            out["ours"][method] = {
                "trace": [(r.elapsed, r.objective) for r in monitor.records],
                "seconds": seconds, "iterations": solution.iterations,
                "status": str(solution.status), "lower_bound": e["lower_bound"],
                "oracle": e["time_oracle"], "qp": e["time_qp"],
                "line_search": e["time_line_search"]}
        prob = ll_problem(y, X)
        prob.set_bias(1.0)
        for eps in LL_EPS:
            param = parameter(f"-s {flag} -c {C!r} -e {eps!r} -B 1 -q")
            start = time.perf_counter()
            model = ll_train(prob, param)
            seconds = time.perf_counter() - start
            out["liblinear"].append((seconds, ll_objective(model)))
    out["load_end"] = os.getloadavg()[0]
    return out


# -- the parent ---------------------------------------------------------------------------------


def _time_to_gap(trace, reference, gap):
    for seconds, objective in trace:
        if (objective - reference) / abs(reference) <= gap:
            return seconds
    return None


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt(value, digits=3):
    return "-" if value is None else f"{value:.{digits}g}"


def summarize(results: dict, references: dict) -> str:
    """Markdown tables from {tree: {case: [child outputs]}}."""
    lines = []
    for case in next(iter(results.values())):
        runs = {tree: results[tree][case] for tree in results}
        if not all(runs.values()):
            continue  # a run cut short before this case
        binary = not case.startswith("cs-")
        name, C = case.split(":")[:2]
        key = f"{name}/hinge/regularized/C={float(C):g}"
        if binary and key in references:
            fstar, source = references[key]["objective"], "stored"
        else:
            fstar = min(obj for rs in runs.values() for run in rs
                        for trace in [run["liblinear"]] + [m["trace"] for m in
                                                           run["ours"].values()]
                        for _, obj in trace)
            source = "best reached"
        gaps = GAPS if binary else GAPS[:2]
        loads = [run["load"] for rs in runs.values() for run in rs]
        lines.append(f"**{case}** (f* {fstar:.10g}, {source}; load average {min(loads):.1f}-"
                     f"{max(loads):.1f})")
        lines.append("")
        lines.append("| tree | runner | " + " | ".join(f"t({g:g}) s" for g in gaps)
                     + " | iterations | oracle / QP / search s |")
        lines.append("|---|---|" + "---:|" * len(gaps) + "---:|---|")
        for tree, rs in runs.items():
            for method in rs[0]["ours"]:
                times = [_median([_time_to_gap(r["ours"][method]["trace"], fstar, g)
                                  for r in rs]) for g in gaps]
                its = _median([r["ours"][method]["iterations"] for r in rs])
                prof = "/".join(_fmt(_median([r["ours"][method][k] for r in rs]), 2)
                                for k in ("oracle", "qp", "line_search"))
                lines.append(f"| {tree} | {method} | " + " | ".join(_fmt(t) for t in times)
                             + f" | {its:g} | {prof} |")
            ll = [_median([_time_to_gap(r["liblinear"], fstar, g) for r in rs]) for g in gaps]
            lines.append(f"| {tree} | liblinear | " + " | ".join(_fmt(t) for t in ll)
                         + " | | |")
        lines.append("")
        lines.append("Ratio best of ours / LIBLINEAR (each tree against the LIBLINEAR runs of "
                     "its own processes): " + "; ".join(
                         f"{tree}: " + ", ".join(
                             f"{g:g} {_ratio(rs, fstar, g)}" for g in gaps)
                         for tree, rs in runs.items()))
        lines.append("")
    return "\n".join(lines)


def _ratio(rs, fstar, gap):
    ours = _median([min((t for t in (_time_to_gap(m["trace"], fstar, gap)
                                     for m in r["ours"].values()) if t is not None),
                        default=None) for r in rs])
    ll = _median([_time_to_gap(r["liblinear"], fstar, gap) for r in rs])
    return "-" if ours is None or ll is None else f"{ours / ll:.2f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench/ab_cutting_plane.py")
    parser.add_argument("--child")
    parser.add_argument("--before")
    parser.add_argument("--after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES))
    parser.add_argument("--out", default=None)
    parser.add_argument("--summarize", help="a JSON file of an earlier (partial) run")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child)))
        return 0
    # this tree's bench package (the script runs as a file, not as a module)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.paths import shared_data_dir

    if args.summarize:
        from bench.references import load_references

        print(summarize(json.loads(Path(args.summarize).read_text()), load_references()))
        return 0
    if not (args.before and args.after):
        parser.error("give --before and --after (source trees), or --child, or --summarize")
    trees = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    for name, tree in trees.items():
        # each tree reads the datasets from its ../shared/data (bench/paths.py)
        data = shared_data_dir(tree)
        if not (tree / "solvers").is_dir():
            parser.error(f"--{name} {tree}: not a source tree of the project (no solvers/)")
        if not data.is_dir():
            parser.error(f"--{name} {tree}: the datasets are read from {data}, which does not "
                         f"exist; link it: ln -s /path/to/shared {tree.parent / 'shared'}")
    cases = args.cases.split(",")
    # the rounds so far as JSON (FILE.json) and the summary (FILE, or FILE.md when FILE is
    # itself .json), so that neither overwrites the other
    out_json = out_text = None
    if args.out:
        out = Path(args.out)
        out_json = out.with_suffix(".json")
        out_text = out.with_suffix(".md") if out.suffix == ".json" else out
    results: dict = {tree: {case: [] for case in cases} for tree in trees}
    start_load = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for rnd in range(args.rounds):
        for case in cases:
            order = list(trees) if rnd % 2 == 0 else list(trees)[::-1]
            for tree in order:
                env = dict(os.environ, PYTHONPATH=str(trees[tree]))
                proc = subprocess.run([sys.executable, str(Path(__file__).resolve()),
                                       "--child", case], env=env, capture_output=True,
                                      text=True, cwd=trees[tree], check=True)
                out = json.loads(proc.stdout.strip().splitlines()[-1])
                results[tree][case].append(out)
                best = min(m["seconds"] for m in out["ours"].values())
                print(f"round {rnd} {case} {tree}: fastest method {best:.3f} s, load "
                      f"{out['load']:.1f}", file=sys.stderr, flush=True)
                if out_json:  # what is done so far, in case the run is cut short
                    out_json.write_text(json.dumps(results) + "\n")
    sys.path.insert(0, str(trees["after"]))
    from bench.references import load_references

    text = (f"# cutting_plane before/after, {started}; load average {start_load:.1f} at the "
            f"start, {os.getloadavg()[0]:.1f} at the end; {args.rounds} rounds, medians\n\n"
            + summarize(results, load_references()))
    print(text)
    if out_text:
        out_text.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
