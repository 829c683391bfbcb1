"""``python -m bench regression``: linear support vector regression against LIBLINEAR, one
thread each, side by side in one run.

    python -m bench regression [--datasets cpusmall,abalone,...] [--Cs 0.1,1,10]
                               [--gaps 1e-2,1e-3,1e-6] [--repeats 3] [--out DIR]
                               [--statistic median|fastest-quarter]

For each regression set of ``data/regression`` (epsilon = 0.1 std(y), bias -B 1) and C:

* L2 loss: mfn and dual_cd (which switches to mfn's Newton method at 300 outer iterations,
  as -s 12 switches to -s 11) with ``tol`` = g, against LIBLINEAR -s 11 and -s 12 at the first
  -e of 1e-1, 1e-2, ... 1e-10 whose point is within g of the optimum (LIBLINEAR's time does
  not include proving it; ours is certified);
* L1 loss: dual_cd against LIBLINEAR -s 13, the same way (P* for the L1 loss is the best
  objective either reached, dual_cd's certified one when it converged).

The optimum P* of the L2 loss is LIBLINEAR -s 11's at -e 1e-10 (its Newton method ends at
round-off on these sets). From scratch per run, timed around the solve only (LIBLINEAR's
problem structure and our RegressionProblem built once outside); one warm-up run each, then
``repeats`` rounds, medians (``--statistic fastest-quarter``: the median of the fastest quarter
of up to 40 calls, every time of the run alike, for a loaded machine). Writes
``regression.json`` and ``regression.md`` to ``--out`` (default bench/results/regression) and
prints the Markdown with the load average at the start and end (other processes distort
timings).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import numba
import numpy as np
from threadpoolctl import threadpool_limits

import solvers
from bench.anchors import liblinear_train
from bench.commands import Command, c_values, option, out, problems, repeats
from bench.harness import machine_description
from bench.paths import dataset_path
from bench.problems import BenchProblem
from solvers import read_svmlight
from solvers.dual_cd import DualCDParams
from solvers.dual_cd import solve_regression as dual_cd_regression
from solvers.mfn import MFNParams
from solvers.mfn import solve_regression as mfn_regression
from solvers.problems import RegressionProblem
from solvers.registry import mfn_newton

LIBLINEAR_EPS = tuple(10.0 ** -k for k in range(1, 11))


#: ``--statistic``: "median" of ``repeats`` calls, or "fastest-quarter": the median of the
#: fastest quarter of ``calls_for`` calls (at least ``repeats``; about
#: :data:`CALL_BUDGET_SECONDS` of them, at most :data:`MAX_CALLS`), for ours and LIBLINEAR
#: alike: a run of a millisecond at load 3-20 is preempted in some of its calls (the
#: scheduler's 4-6 ms quanta), and the median of three then reads the load.
STATISTIC = {"name": "median"}
CALL_BUDGET_SECONDS = 0.5
MAX_CALLS = 40


def calls_for(first_seconds: float, repeats: int) -> int:
    if STATISTIC["name"] != "fastest-quarter":
        return repeats
    return max(repeats, min(MAX_CALLS, int(CALL_BUDGET_SECONDS // max(first_seconds, 1e-9))))


def summarize(times) -> float:
    times = sorted(times)
    if STATISTIC["name"] == "fastest-quarter":
        return statistics.median(times[:max(1, len(times) // 4)])
    return statistics.median(times)


def _median(fn, repeats: int):
    start = time.perf_counter()
    fn()  # warm-up (Numba's cache, LIBLINEAR's first touch)
    calls = calls_for(time.perf_counter() - start, repeats)
    times, result = [], None
    for _ in range(calls):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return summarize(times), result


def _liblinear_point(prob, s: int, C: float, epsilon: float, eps: float, n_features: int):
    seconds, model = liblinear_train(prob, f"-s {s} -c {C!r} -p {epsilon!r} -e {eps!r} -B 1")
    return seconds, np.ctypeslib.as_array(model.w, shape=(n_features + 1,)).copy()


def _liblinear_time_to(prob, problem, s, gap, optimum, repeats):
    """(median seconds, eps) of the first -e whose point is within ``gap`` of ``optimum``."""
    for eps in LIBLINEAR_EPS:
        first, w = _liblinear_point(prob, s, problem.C, problem.epsilon, eps,
                                    problem.n_features)
        if (problem.objective(w) - optimum) / optimum <= gap:
            seconds = summarize(
                _liblinear_point(prob, s, problem.C, problem.epsilon, eps,
                                 problem.n_features)[0]
                for _ in range(calls_for(first, repeats)))
            return seconds, eps
    return None, None


def bench_problem(name: str, C: float, gaps, repeats: int, log=print) -> list[dict]:
    from liblinear.liblinear import problem as ll_problem

    data = read_svmlight(dataset_path(f"regression/{name}_scale"))
    epsilon = 0.1 * float(np.std(data.y))
    prob = ll_problem(data.y, data.X)
    prob.set_bias(1.0)
    rows = []
    for loss, ours, anchors in (
            ("squared_epsilon_insensitive", ("mfn", "dual_cd", "auto"), (11, 12)),
            ("epsilon_insensitive", ("dual_cd", "auto"), (13,))):
        problem = RegressionProblem(data.X, data.y, C=C, loss=loss, epsilon=epsilon)
        runs = {}
        for solver in ours:
            for gap in gaps:
                if solver == "auto":  # what a user runs: train's dispatch, the race
                    def fit(gap=gap, loss=loss):
                        return solvers.train(data, solver="auto", task="regression",
                                             loss=loss, C=C, epsilon=epsilon, tol=gap)
                elif solver == "mfn":
                    def fit(gap=gap, problem=problem):
                        return mfn_regression(problem, MFNParams(
                            task="regression", C=C, epsilon=epsilon, tol=gap))
                else:
                    def fit(gap=gap, problem=problem, loss=loss):
                        return dual_cd_regression(problem, DualCDParams(
                            task="regression", loss=loss, C=C, epsilon=epsilon, tol=gap),
                            newton=mfn_newton)
                runs[(solver, gap)] = _median(fit, repeats)
        if loss == "squared_epsilon_insensitive":
            optimum = problem.objective(_liblinear_point(prob, 11, C, epsilon, 1e-10,
                                                         data.n_features)[1])
        else:
            reached = [s.objective for _, s in runs.values()]
            reached.append(problem.objective(_liblinear_point(prob, 13, C, epsilon, 1e-10,
                                                              data.n_features)[1]))
            optimum = min(reached)
        for gap in gaps:
            row = {"dataset": name, "n": data.n_samples, "C": C, "loss": loss, "gap": gap}
            for solver in ours:
                seconds, solution = runs[(solver, gap)]
                row[solver] = {"seconds": seconds, "status": str(solution.status),
                               "suboptimality": (solution.objective - optimum) / optimum}
            for s in anchors:
                seconds, eps = _liblinear_time_to(prob, problem, s, gap, optimum, repeats)
                row[f"liblinear -s {s}"] = {"seconds": seconds, "eps": eps}
            rows.append(row)
            log(json.dumps(row))
    return rows


def _liblinear_binary_point(prob, s: int, C: float, eps: float, n_features: int):
    """(seconds, w~) of LIBLINEAR on +-1 labels, w~ oriented to label +1 (LIBLINEAR's w
    scores its first label, which is the first row's)."""
    seconds, model = liblinear_train(prob, f"-s {s} -c {C!r} -e {eps!r} -B 1")
    w = np.ctypeslib.as_array(model.w, shape=(n_features + 1,)).copy()
    return seconds, (w if model.get_labels()[0] == 1 else -w)


def bench_logistic(name: str, C: float, gaps, repeats: int, log=print) -> list[dict]:
    """Logistic regression (bias -B 1): auto, dual_cd (-s 7, switching to newton after 300
    outer iterations) and newton (-s 0) against LIBLINEAR -s 0 and -s 7, each at the first
    -e of 1e-1 .. 1e-10 whose point is within the gap of the optimum (the lowest objective
    of LIBLINEAR -s 0 at -e 1e-10 and ours)."""
    from liblinear.liblinear import problem as ll_problem

    bench = BenchProblem(name, "logistic", "regularized", C)
    data = bench.train_dataset()
    problem = bench.binary_problem()
    prob = ll_problem(data.y, data.X)
    prob.set_bias(1.0)
    runs = {}
    for solver in ("auto", "dual_cd", "newton"):
        for gap in gaps:
            def fit(gap=gap, solver=solver):
                return solvers.train(data, solver=solver, loss="logistic", C=C, tol=gap)
            runs[(solver, gap)] = _median(fit, repeats)
    reached = [r.objective for _, r in runs.values()]
    reached.append(problem.objective(
        _liblinear_binary_point(prob, 0, C, 1e-10, data.n_features)[1]))
    optimum = min(reached)
    rows = []
    for gap in gaps:
        row = {"dataset": name, "n": data.n_samples, "C": C, "loss": "logistic", "gap": gap}
        for solver in ("auto", "dual_cd", "newton"):
            seconds, result = runs[(solver, gap)]
            row[solver] = {"seconds": seconds, "status": str(result.status),
                           "suboptimality": (result.objective - optimum) / optimum}
        for s in (0, 7):
            row[f"liblinear -s {s}"] = {"seconds": None, "eps": None}
            for eps in LIBLINEAR_EPS:
                first, w = _liblinear_binary_point(prob, s, C, eps, data.n_features)
                if (problem.objective(w) - optimum) / optimum <= gap:
                    row[f"liblinear -s {s}"] = {"seconds": summarize(
                        _liblinear_binary_point(prob, s, C, eps, data.n_features)[0]
                        for _ in range(calls_for(first, repeats))), "eps": eps}
                    break
        rows.append(row)
        log(json.dumps(row))
    return rows


OURS = ("mfn", "dual_cd", "newton", "auto")


def auto_ratios(rows) -> list[float]:
    """auto's seconds over LIBLINEAR's best setting's, per row where both reached the gap."""
    ratios = []
    for row in rows:
        timed = [v["seconds"] for k, v in row.items()
                 if k.startswith("liblinear") and v["seconds"] is not None]
        if timed and "auto" in row:
            ratios.append(row["auto"]["seconds"] / min(timed))
    return ratios


def markdown(rows, machine, loads) -> str:
    lines = [f"# Linear SVR against LIBLINEAR ({machine.get('cpu_model', '')}; load average "
             f"{loads[0]:.2f} -> {loads[-1]:.2f})", "",
             "| set | C | loss | gap | ours (s) | LIBLINEAR (s, -e) | ratio | auto (s) | "
             "auto ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        ours = {k: v for k, v in row.items() if k in OURS and k != "auto"}
        theirs = {k: v for k, v in row.items() if k.startswith("liblinear")}
        best_ours = min(ours.items(), key=lambda kv: kv[1]["seconds"])
        timed = [(k, v) for k, v in theirs.items() if v["seconds"] is not None]
        best_theirs = min(timed, key=lambda kv: kv[1]["seconds"]) if timed else None
        ll = "-" if best_theirs is None else \
            f"{best_theirs[1]['seconds']:.4f} ({best_theirs[0][-5:]}, {best_theirs[1]['eps']:g})"
        ratio = "-" if best_theirs is None else \
            f"{best_ours[1]['seconds'] / best_theirs[1]['seconds']:.2f}"
        auto_ratio = "-" if best_theirs is None else \
            f"{row['auto']['seconds'] / best_theirs[1]['seconds']:.2f}"
        lines.append(f"| {row['dataset']} | {row['C']:g} | {row['loss']} | {row['gap']:g} | "
                     f"{best_ours[1]['seconds']:.4f} ({best_ours[0]}) | {ll} | {ratio} | "
                     f"{row['auto']['seconds']:.4f} | {auto_ratio} |")
    lines.append("")
    for loss in dict.fromkeys(row["loss"] for row in rows):
        for gap in dict.fromkeys(row["gap"] for row in rows):
            ratios = auto_ratios([r for r in rows if r["loss"] == loss and r["gap"] == gap])
            if ratios:
                lines.append(f"- {loss}, gap {gap:g}: auto over LIBLINEAR's best setting, "
                             f"geometric mean {geometric_mean(ratios):.2f} over "
                             f"{len(ratios)} problems")
        ratios = auto_ratios([r for r in rows if r["loss"] == loss])
        if ratios:
            lines.append(f"- **{loss}, all gaps: {geometric_mean(ratios):.2f}**")
    return "\n".join(lines) + "\n"


def geometric_mean(values) -> float:
    return float(np.exp(np.mean(np.log(values))))


def run_command(args) -> None:
    STATISTIC["name"] = args.statistic
    gaps = [float(g) for g in args.gaps.split(",")]
    loads = [os.getloadavg()[0]]
    rows = []
    numba.set_num_threads(1)
    with threadpool_limits(1):
        for name in args.problems.split(","):
            for C in (float(c) for c in args.Cs.split(",")):
                rows += bench_problem(name, C, gaps, args.repeats)
        for name in filter(None, args.logistic.split(",")):
            for C in (float(c) for c in args.Cs.split(",")):
                rows += bench_logistic(name, C, gaps, args.repeats)
    loads.append(os.getloadavg()[0])
    machine = machine_description()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "regression.json").write_text(json.dumps(
        {"machine": machine, "load_average": loads, "statistic": args.statistic,
         "results": rows}, indent=1) + "\n")
    text = markdown(rows, machine, loads)
    (args.out / "regression.md").write_text(text)
    print(text)


COMMAND = Command(
    "regression", "linear SVR (mfn, dual_cd) against LIBLINEAR -s 11/12/13", run_command,
    description=__doc__, options=(
        problems("cpusmall,abalone,space_ga,housing,mg,bodyfat", alias="--datasets"),
        c_values("0.1,1,10"),
        option("--gaps", default="1e-2,1e-3,1e-6"),
        option("--logistic", default="heart_scale,australian_scale,diabetes_scale,svmguide1",
               help="comma-separated classification sets for logistic regression"),
        repeats(3),
        option("--statistic", default="median", choices=("median", "fastest-quarter"),
               help="each time: the median of --repeats calls, or the median of the "
                    "fastest quarter of up to 40 (about 0.5 s of calls, at least --repeats): "
                    "what a loaded machine's run should use"),
        out("bench/results/regression")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["regression", *sys.argv[1:]]))
