"""``python -m bench dual_cd``: dual_cd against LIBLINEAR -s 1 / -s 3, one thread each.

    python -m bench dual_cd [--datasets a9a,w8a,news20-binary] [--Cs 0.01,1]
                                  [--eps 0.1,0.01] [--repeats 3] [--out DIR]

The same method on both sides (Hsieh et al. 2008, LIBLINEAR's ``solve_l2r_l1l2_svc``), so two
pairings compare like with like:

* **same rule**: dual_cd with ``stop_rule="projected_gradient"`` at LIBLINEAR's ``-e eps``
  (the PG spread on the full set within eps): the Numba loop against the C++ one.  LIBLINEAR
  ``-s 1`` at a tight eps switches to its primal Newton method once its dual solver reaches
  1000 iterations, so only loose eps are paired;
* **same gap**: dual_cd with its certified stop ``tol`` = g against LIBLINEAR at the first eps
  of 0.1, 0.01, ... whose point is within g of the optimum (g in {1e-2, 1e-3}; LIBLINEAR's
  point is measured against the optimum, not certified: its time does not include proving it).

Both from scratch per run, timed around the solve only (LIBLINEAR's problem structure is built
once, outside the timing; dual_cd's BinaryProblem likewise).  One warm-up run each (Numba
cache loading), then ``repeats`` rounds, medians.  Relative suboptimality (P - P*)/P*, P* the
stored certified reference (``bench/reference_optima.json``) or the best objective reached.
BLAS and Numba are held to one thread.  Writes ``dual_cd.json`` and ``dual_cd.md`` to
``--out`` (default bench/results/dual_cd) and prints the Markdown; the load average at the
start and end is recorded (other processes distort timings).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import numba
from threadpoolctl import threadpool_limits

from bench.anchors import Liblinear
from bench.commands import Command, c_values, option, out, problems, repeats, tolerances
from bench.harness import machine_description
from bench.problems import BenchProblem
from bench.references import load_references
from solvers import dual_cd
from solvers.dual_cd import DualCDParams
from solvers.losses import loss_type

GAP_TARGETS = (1e-2, 1e-3)


def _median_run(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def bench_problem(bench: BenchProblem, eps_values, repeats: int, log=print) -> dict:
    problem = bench.binary_problem()
    anchor = Liblinear(loss_type(bench.loss).liblinear_types[0])  # LIBLINEAR's dual CD
    reference = load_references().get(bench.key)

    def ours(**settings):
        params = DualCDParams(C=bench.C, loss=bench.loss, max_iter=100_000, **settings)
        return dual_cd.solve(problem, params)

    def theirs(eps):
        return anchor.fit(bench, eps)

    ours(stop_rule="projected_gradient", eps=0.1)  # warm-up (Numba cache)
    theirs(0.1)
    runs = {"same_rule": [], "same_gap": []}
    liblinear_points = {}
    for eps in eps_values:
        t_ll, (_, beta, _) = _median_run(lambda e=eps: theirs(e), repeats)
        liblinear_points[eps] = (t_ll, problem.objective(beta))
        t_us, solution = _median_run(lambda e=eps: ours(stop_rule="projected_gradient", eps=e),
                                     repeats)
        runs["same_rule"].append({"eps": eps, "liblinear_s": t_ll,
                                  "liblinear_objective": liblinear_points[eps][1],
                                  "dual_cd_s": t_us, "dual_cd_objective": solution.objective,
                                  "dual_cd_epochs": solution.iterations})
    best = min([p[1] for p in liblinear_points.values()]
               + [r["dual_cd_objective"] for r in runs["same_rule"]])
    optimum = reference["objective"] if reference is not None else best
    for target in GAP_TARGETS:
        t_us, solution = _median_run(lambda g=target: ours(tol=g), repeats)
        reached = [(eps, t) for eps, (t, f) in sorted(liblinear_points.items(), reverse=True)
                   if (f - optimum) / optimum <= target]
        # the time of the first (loosest) eps whose point reaches the target
        eps_ll, t_ll = reached[0] if reached else (None, None)
        runs["same_gap"].append({"target": target, "dual_cd_s": t_us,
                                 "dual_cd_gap": solution.extras["relative_duality_gap"],
                                 "dual_cd_suboptimality": (solution.objective - optimum)
                                 / optimum,
                                 "liblinear_eps": eps_ll, "liblinear_s": t_ll})
    for row in runs["same_rule"]:
        log(f"{bench.key} eps={row['eps']:g}: dual_cd {row['dual_cd_s']:.3f} s, liblinear "
            f"{row['liblinear_s']:.3f} s, ratio {row['dual_cd_s'] / row['liblinear_s']:.2f}")
    return {"problem": bench.key, "optimum": optimum,
            "optimum_source": "reference" if reference is not None else "best run", **runs}


def markdown(results: list[dict], machine: dict, loads) -> str:
    lines = [f"dual_cd against LIBLINEAR (liblinear-official), one thread each; "
             f"load average {loads[0]:.2f} at the start, {loads[1]:.2f} at the end "
             f"({machine['processor']}, {machine['cpus']} CPUs).", "",
             "Same rule (PG spread within eps on the full set):", "",
             "| problem | eps | dual_cd s | LIBLINEAR s | ratio | dual_cd subopt. | "
             "LIBLINEAR subopt. |", "|---|---|---|---|---|---|---|"]
    for r in results:
        for row in r["same_rule"]:
            lines.append(
                f"| {r['problem']} | {row['eps']:g} | {row['dual_cd_s']:.3f} | "
                f"{row['liblinear_s']:.3f} | {row['dual_cd_s'] / row['liblinear_s']:.2f} | "
                f"{(row['dual_cd_objective'] - r['optimum']) / r['optimum']:.1e} | "
                f"{(row['liblinear_objective'] - r['optimum']) / r['optimum']:.1e} |")
    lines += ["", "Same gap (dual_cd certified at tol; LIBLINEAR's first eps within it):", "",
              "| problem | target | dual_cd s | certified gap | LIBLINEAR eps | LIBLINEAR s | "
              "ratio |", "|---|---|---|---|---|---|---|"]
    for r in results:
        for row in r["same_gap"]:
            ratio = (f"{row['dual_cd_s'] / row['liblinear_s']:.2f}"
                     if row["liblinear_s"] else "n/a (LIBLINEAR's eps never reached it)")
            eps = "-" if row["liblinear_eps"] is None else f"{row['liblinear_eps']:g}"
            ll_s = "-" if row["liblinear_s"] is None else f"{row['liblinear_s']:.3f}"
            lines.append(f"| {r['problem']} | {row['target']:g} | {row['dual_cd_s']:.3f} | "
                         f"{row['dual_cd_gap']:.1e} | {eps} | {ll_s} | {ratio} |")
    return "\n".join(lines) + "\n"


def run_command(args) -> None:
    eps_values = [float(e) for e in args.eps.split(",")]
    loads = [os.getloadavg()[0]]
    results = []
    numba.set_num_threads(1)
    with threadpool_limits(1):
        for name in args.problems.split(","):
            for loss in args.losses.split(","):
                for C in (float(c) for c in args.Cs.split(",")):
                    results.append(bench_problem(BenchProblem(name, loss=loss, C=C),
                                                 eps_values, args.repeats))
    loads.append(os.getloadavg()[0])
    machine = machine_description()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dual_cd.json").write_text(json.dumps(
        {"machine": machine, "load_average": loads, "results": results}, indent=1) + "\n")
    text = markdown(results, machine, loads)
    (args.out / "dual_cd.md").write_text(text)
    print(text)


COMMAND = Command(
    "dual_cd", "dual_cd against LIBLINEAR -s 1/-s 3 at the same stopping rule", run_command,
    description=__doc__, options=(
        problems("a9a,w8a,news20-binary", alias="--datasets"),
        option("--losses", default="squared_hinge,hinge"),
        c_values("0.01,1"),
        tolerances("0.1,0.01"),
        repeats(3),
        out("bench/results/dual_cd")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["dual_cd", *sys.argv[1:]]))
