"""``python -m bench interior_point``: Gertz & Griffin's interior-point method measured.

    python -m bench interior_point [tables] [starts] [clarabel_iterations] [solvers]
        [anchors] [squared_hinge] [news20] [--out DIR]

* ``tables``: the paper's Tables 1-2 where the data is here: Adult = a9a at tau = 0.05 and
  Website = w8a at tau = 1, free bias, the paper's stopping test (mu and the scaled residual
  at 1e-6): MPC iterations of SVM-Direct and SVM-PCG, PCG iterations per MPC iteration (the
  start's solve included, as the paper counts), seconds, and the relative gap to the optimum
  (Clarabel at 1e-10) at the stop, with both starts.
* ``starts``: MPC iterations with ``cold_start="scaled"`` (default) and
  ``cold_start="ooqp"`` (OOQP's 1e3 shift) on the small sets, a9a and w8a.
* ``clarabel_iterations``: MPC iterations to a certified 1e-8 gap against Clarabel's.
* ``solvers``: direct against pcg against auto on sparse (a9a, w8a, mushrooms) and denser data
  (dna and letter one-vs-rest, and dense synthetic rows: Gaussian features, a planted
  separator, 5% flipped labels -- generated, not real -- subsampled in rows and features as
  the paper's Tables 3-4 subsample Faces), time to the paper's stopping test, and the cost
  model's choice.
* ``anchors``: time to relative gaps 1e-2, 1e-3, 1e-6 against LIBSVM (scikit-learn
  ``SVC(kernel="linear")``, the same free-bias problem), Clarabel through cvxpy (the same
  problem) and LIBLINEAR ``-s 3`` (hinge, ``-B 1``: the REGULARIZED bias, another problem,
  compared with our ``bias="regularized"`` runs against that problem's optimum).  Black-box
  anchors are run from scratch at each tolerance of a loose-to-tight schedule; our trace is
  the per-iteration records (seconds since the start, docs/design.md's objective), the stop at
  mu <= 1e-10 so that 1e-6 is reached.
* ``squared_hinge``: the extension against mfn (regularized bias, C = 1).
* ``news20``: the refusal beyond the dense limit and the diagonal-preconditioned PCG.

Each of our runs is preceded by a discarded warm-up run (compilation).  Writes
``interior_point.json`` and ``interior_point.md`` to ``--out`` (default
bench/results/interior_point).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

import solvers
from bench.anchors import ClarabelHinge, Liblinear, SklearnLinearKernelSVC
from bench.commands import Command, option, out
from bench.harness import GAPS, machine_description, relative_gap, time_to_gap
from bench.paths import dataset_path
from bench.problems import BenchProblem, load_dataset
from bench.references import hinge_clarabel, reference_optimum
from solvers import mfn
from solvers.interior_point import InteriorPointParams, linear_solver_costs, run
from solvers.monitor import ListMonitor
from solvers.problems import BinaryProblem

SMALL = ("heart_scale", "australian_scale", "breast-cancer_scale", "diabetes_scale",
         "svmguide1", "mushrooms")
PAPER = {  # Table 2: MPC iterations direct, PCG, average PCG iterations, seconds
    "a9a": {"tau": 0.05, "direct": 35, "pcg": 36, "avg_pcg": 12.3, "s_direct": 5.21,
            "s_pcg": 6.84},
    "w8a": {"tau": 1.0, "direct": 93, "pcg": 93, "avg_pcg": 12.9, "s_direct": 28.5,
            "s_pcg": 30.9},
}
TIGHT = {"stop_rule": "paper", "mu_tol": 1e-10, "residual_tol": 1e-8}


def binary(name: str):
    ds = load_dataset(name)
    classes = np.unique(ds.y)
    return ds.X, np.where(ds.y == classes[1], 1.0, -1.0)


def problem_of(name: str, C: float, loss: str = "hinge", bias: str = "free") -> BinaryProblem:
    X, y = binary(name)
    return BinaryProblem(X, y, C=C, loss=loss, bias=bias)


def ours(problem: BinaryProblem, warm_up: bool = True, **params):
    """(solution, records, seconds) of one run, after a discarded warm-up run (the paper's
    stopping tests unless a gap ``tol`` is given)."""
    params.setdefault("stop_rule", "gap" if "tol" in params else "paper")
    prm = InteriorPointParams(C=problem.C, bias=problem.bias, bias_scale=problem.bias_scale,
                              **params)
    if warm_up:
        run(problem, prm)
    monitor = ListMonitor()
    start = time.perf_counter()
    solution = run(problem, prm, monitor)
    return solution, monitor.records, time.perf_counter() - start


_OPTIMA: dict = {}


def optimum(name: str, C: float, bias: str = "free") -> dict:
    key = (name, C, bias)
    if key not in _OPTIMA:
        _OPTIMA[key] = hinge_clarabel(problem_of(name, C, bias=bias),
                                      tol=1e-10)
    return _OPTIMA[key]


def tables(log) -> dict:
    out = {}
    rows = ["| data | tau | solver | start | MPC its (paper) | avg PCG its (paper) | "
            "s (paper's s) | rel. gap at stop | status |", "|---|---|---|---|---|---|---|---|---|"]
    for name, paper in PAPER.items():
        problem = problem_of(name, paper["tau"])
        best = optimum(name, paper["tau"])["objective"]
        for start in ("scaled", "ooqp"):
            for linear_solver in ("direct", "pcg"):
                solution, records, seconds = ours(problem, linear_solver=linear_solver,
                                                  cold_start=start)
                gap = relative_gap(solution.objective, best)
                avg = solution.extras["pcg_per_mpc_iteration"]
                out[f"{name}/{linear_solver}/{start}"] = {
                    "iterations": solution.iterations, "avg_pcg": avg, "seconds": seconds,
                    "relative_gap": gap, "status": str(solution.status)}
                paper_avg = f"{avg:.1f} ({paper['avg_pcg']})" if linear_solver == "pcg" \
                    else "-"
                rows.append(f"| {name} | {paper['tau']:g} | {linear_solver} | {start} | "
                            f"{solution.iterations} ({paper[linear_solver]}) | {paper_avg} | "
                            f"{seconds:.2f} ({paper['s_' + linear_solver]}) | {gap:.1e} | "
                            f"{solution.status} |")
                log(rows[-1])
    return {"results": out, "markdown": rows}


def starts(log) -> dict:
    out = {}
    rows = ["| data | C | scaled: MPC its | ooqp: MPC its | scaled: rel. gap | ooqp: rel. gap |",
            "|---|---|---|---|---|---|"]
    for name, C in [(s, 1.0) for s in SMALL] + [("a9a", 0.05), ("w8a", 1.0)]:
        problem = problem_of(name, C)
        best = optimum(name, C)["objective"]
        entry = {}
        for start in ("scaled", "ooqp"):
            solution, _, _ = ours(problem, warm_up=False, linear_solver="direct",
                                  cold_start=start)
            entry[start] = (solution.iterations, relative_gap(solution.objective, best),
                            str(solution.status))
        out[f"{name}/C={C:g}"] = entry
        rows.append(f"| {name} | {C:g} | {entry['scaled'][0]} | {entry['ooqp'][0]} | "
                    f"{entry['scaled'][1]:.1e} | {entry['ooqp'][1]:.1e} |")
        log(rows[-1])
    return {"results": out, "markdown": rows}


def dense_synthetic(n_rows: int, n_features: int, seed: int = 7):
    """Dense Gaussian rows (values scaled to [-1, 1] like svm-scale), planted separator,
    5% flipped labels: SYNTHETIC."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features))
    X /= np.abs(X).max()
    y = np.where(X @ rng.standard_normal(n_features) > 0, 1.0, -1.0)
    flip = rng.random(n_rows) < 0.05
    y[flip] = -y[flip]
    return solvers.Dataset(X, y)


def solver_cases():
    """(label, dataset, C) for the direct / pcg / auto comparison."""
    base = dense_synthetic(20000, 400)
    cases = [("a9a", load_dataset("a9a"), 0.05), ("w8a", load_dataset("w8a"), 1.0),
             ("mushrooms", load_dataset("mushrooms"), 1.0),
             ("dna (ovr, 3 classes)", _dna(), 1.0),
             ("letter (ovr, 26 classes)", _letter(), 1.0)]
    for n in (5000, 10000, 20000):  # Table 3: rows sampled
        cases.append((f"synthetic dense {n}x400", base.subset(np.arange(n)), 1.0))
    for m in (50, 150):  # Table 4: features sampled
        cases.append((f"synthetic dense 20000x{m}",
                      solvers.Dataset(base.X[:, :m], base.y), 1.0))
    return cases


def _dna():
    return solvers.read_svmlight(dataset_path("dna.scale"))


def _letter():
    return solvers.read_svmlight(dataset_path("letter.scale"))


def compare_solvers(log) -> dict:
    out = {}
    rows = ["| data | n x m | nnz/row | direct s | pcg s | auto s (choice) | MPC its d/p | "
            "avg PCG its |", "|---|---|---|---|---|---|---|---|"]
    for label, ds, C in solver_cases():
        times, iterations, avg = {}, {}, 0.0
        for linear_solver in ("direct", "pcg", "auto"):
            solvers.train(ds, "interior_point", C=C, loss="hinge", bias="free",
                          linear_solver=linear_solver, stop_rule="paper")  # warm-up
            start = time.perf_counter()
            result = solvers.train(ds, "interior_point", C=C, loss="hinge", bias="free",
                                   linear_solver=linear_solver, stop_rule="paper")
            times[linear_solver] = time.perf_counter() - start
            iterations[linear_solver] = sum(s.iterations for s in result.subproblems)
            if linear_solver == "pcg":
                total = sum(s.extras["pcg_iterations"] for s in result.subproblems)
                avg = total / max(iterations["pcg"], 1)
            if linear_solver == "auto":
                choice = result.subproblems[0].extras["linear_solver"]
        costs = linear_solver_costs(ds.X, False)
        out[label] = {"seconds": times, "iterations": iterations, "avg_pcg": avg,
                      "auto_choice": choice, "model": costs}
        n, m = ds.X.shape
        rows.append(f"| {label} | {n} x {m} | {ds.X.nnz / n:.1f} | {times['direct']:.2f} | "
                    f"{times['pcg']:.2f} | {times['auto']:.2f} ({choice}) | "
                    f"{iterations['direct']}/{iterations['pcg']} | {avg:.1f} |")
        log(rows[-1])
    return {"results": out, "markdown": rows}


def anchors(log) -> dict:
    out = {}
    rows = ["| problem | solver | t(1e-2) s | t(1e-3) s | t(1e-6) s | final rel. gap |",
            "|---|---|---|---|---|---|"]
    for name, C in ANCHOR_PROBLEMS:
        for bias in ("free", "regularized"):
            bp = problem_of(name, C, bias=bias)
            reference = optimum(name, C, bias)["objective"]
            problem = BenchProblem(name, "hinge", bias, C)
            runners = {
                f"interior_point (auto, bias={bias})": lambda bp=bp: [
                    (r.elapsed, r.objective)
                    for r in ours(bp, linear_solver="auto", **TIGHT)[1]],
                "clarabel (cvxpy)": lambda bp=bp: ClarabelHinge((1e-3, 1e-6, 1e-8)).trace(bp),
            }
            if bias == "free":
                svc = SklearnLinearKernelSVC(tol_schedule=(1e-1, 1e-3, 1e-5))
                runners["LIBSVM (sklearn SVC linear)"] = \
                    lambda svc=svc, problem=problem: svc.run(problem).trace
            else:
                runners["liblinear -s 3 (-B 1)"] = \
                    lambda problem=problem: Liblinear(3).run(problem).trace
            for runner, make_trace in runners.items():
                trace = make_trace()
                times = {f"{g:g}": time_to_gap(trace, reference, g) for g in GAPS}
                final = relative_gap(trace[-1][1], reference)
                out[f"{name}/{bias}/C={C:g}/{runner}"] = {"time_to_gap": times,
                                                          "final_gap": final}

                def cell(t):
                    return "-" if t is None else f"{t:.3f}"

                rows.append(f"| {name} hinge {bias} C={C:g} | {runner} | "
                            + " | ".join(cell(times[f'{g:g}']) for g in GAPS)
                            + f" | {final:.1e} |")
                log(rows[-1])
    return {"results": out, "markdown": rows}


def clarabel_iterations(log) -> dict:
    """MPC iterations to a certified relative gap of 1e-8 against Clarabel's at 1e-8."""
    out = {}
    rows = ["| data | C | Clarabel | ours, scaled start | ours, OOQP start |",
            "|---|---|---|---|---|"]
    for name, C in [(s, 1.0) for s in SMALL] + [("a9a", 0.05)]:
        problem = problem_of(name, C)
        counts = [hinge_clarabel(problem, tol=1e-8)["iterations"]]
        for start in ("scaled", "ooqp"):
            counts.append(run(problem, InteriorPointParams(
                C=C, linear_solver="direct", cold_start=start, tol=1e-8)).iterations)
        out[f"{name}/C={C:g}"] = counts
        rows.append(f"| {name} | {C:g} | " + " | ".join(map(str, counts)) + " |")
        log(rows[-1])
    return {"results": out, "markdown": rows}


def squared_hinge(log) -> dict:
    """The squared-hinge extension against mfn, regularized bias, C = 1."""
    out = {}
    rows = ["| data | interior_point (auto) s | MPC its | rel. gap | mfn s |",
            "|---|---|---|---|---|"]
    for name in ("a9a", "w8a", "mushrooms"):
        problem = problem_of(name, 1.0, "squared_hinge", "regularized")
        best = reference_optimum(BenchProblem(name, "squared_hinge", "regularized", 1.0))
        solution, _, seconds = ours(problem, tol=1e-6)
        mfn.solve(problem)
        start = time.perf_counter()
        mfn.solve(problem)
        mfn_seconds = time.perf_counter() - start
        gap = relative_gap(solution.objective, best["objective"])
        out[name] = {"seconds": seconds, "iterations": solution.iterations, "gap": gap,
                     "mfn_seconds": mfn_seconds}
        rows.append(f"| {name} | {seconds:.2f} | {solution.iterations} | {gap:.1e} | "
                    f"{mfn_seconds:.2f} |")
        log(rows[-1])
    return {"results": out, "markdown": rows}


def news20(log) -> dict:
    """news20 made binary at C = 1: direct and auto refuse; pcg runs with the diagonal
    preconditioner (240 s time limit)."""
    bp = BenchProblem("news20-binary", "hinge", "free", 1.0).binary_problem()
    out = {}
    for linear_solver in ("direct", "auto"):
        try:
            run(bp, InteriorPointParams(linear_solver=linear_solver))
        except ValueError as error:
            out[linear_solver] = str(error)
            log(f"{linear_solver}: {error}")
    monitor = ListMonitor(time_limit=240.0)
    solution = run(bp, InteriorPointParams(linear_solver="pcg", tol=1e-6), monitor)
    out["pcg"] = {"status": str(solution.status), "iterations": solution.iterations,
                  "relative_duality_gap": solution.extras["relative_duality_gap"],
                  "seconds": monitor.records[-1].elapsed}
    rows = [f"pcg (diagonal): {out['pcg']}"]
    log(rows[0])
    return {"results": out, "markdown": rows}


ANCHOR_PROBLEMS = (("australian_scale", 1.0), ("mushrooms", 1.0), ("a9a", 0.05), ("w8a", 1.0))

SECTIONS = {"tables": tables, "starts": starts, "clarabel_iterations": clarabel_iterations,
            "solvers": compare_solvers, "anchors": anchors, "squared_hinge": squared_hinge,
            "news20": news20}


def run_command(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d"), "machine": machine_description()}
    markdown = []
    with threadpool_limits(limits=1, user_api="blas"):
        for section in args.sections:
            print(f"## {section}", flush=True)
            result = SECTIONS[section](lambda line: print(line, flush=True))
            report[section] = result["results"]
            markdown += [f"### {section}", ""] + result["markdown"] + [""]
    report["load_average_at_end"] = os.getloadavg()[0]
    (out / "interior_point.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "interior_point.md").write_text("\n".join(markdown))
    return 0


COMMAND = Command(
    "interior_point", "interior_point against Clarabel, LIBSVM and LIBLINEAR", run_command,
    description=__doc__, options=(
        option("sections", nargs="*", default=list(SECTIONS)),
        out("bench/results/interior_point")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["interior_point", *sys.argv[1:]]))
