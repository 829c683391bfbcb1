"""``python -m bench auto``: the measurements ``solver="auto"`` is fitted to, and its check.

    python -m bench auto measure [--datasets a9a,w8a] [--losses L] [--resume | --replace]
                                 [--threads N] [--out FILE]
    python -m bench auto fit [--measurements FILE]
    python -m bench auto check [--measurements FILE] [--held-back DATASETS]

``measure`` runs every candidate of :data:`solvers.registry.AUTO_CANDIDATES` that solves each
problem (the real datasets, hinge and squared hinge, regularized bias, C in {0.01, 1, 100}),
once for each target of :data:`solvers.auto.MEASURED_TOLERANCES`, with its gap tolerance set to
the target (``Candidate.params_for``; its other settings at their defaults), and records how
long it took to stop converged. Each run has a time cap: ``CAP_FACTOR`` times the fastest
candidate so far on the problem at that target (candidates run in the order of ``CANDIDATES``
on the first problem, then fastest first on the previous problem of the same loss), within
[``MIN_CAP``, ``MAX_CAP``]; a run that did not converge within it is recorded with ``seconds:
null``. A run under a second is repeated: for ``calls_for(first)`` calls in all (at least
:data:`MIN_CALLS`, at most :data:`MAX_CALLS`, about :data:`CALL_BUDGET_SECONDS` of calls), and
the time recorded is the median of the fastest quarter of them (``calls`` in the run's entry;
the scheduler's 4-6 ms quanta on a loaded machine make a plain median of a millisecond run the
load's, and the fastest quarter the solver's; until 2026-12-08 it was the median of three,
which ranked the small regression and logistic problems measured at load 17 by noise). Every
candidate first runs once at each target on heart_scale (bodyfat for the regression losses) for
every loss measured (discarded: Numba's compilations and cache loads; until 2026-12-08 on its
first loss only, so a family's first run of another loss, its first-measured cell, was timed
with its compilation). Each run's final relative gap to the problem's optimum (the stored
reference optimum when there is one, else the best objective any run reached) is recorded too,
as a check of the certificates. The file is rewritten after every problem, so ``--resume``
continues an interrupted measurement; ``--replace`` measures the selected problems
(``--datasets`` and ``--losses``) again, each entry replaced where it stands, the others kept.

``fit`` (also the last step of ``measure``) chooses the number of voting neighbours per loss:
the k whose choices, with each dataset left out in turn, have the lowest geometric mean of
time over the fastest's.  ``check`` prints, for every measured problem with its dataset held
back from the rule (leave-one-dataset-out), what ``auto`` would choose and its measured time
against the fastest candidate's, and per loss what always choosing one candidate would give.
``tests/test_auto.py`` does the same on :data:`HELD_BACK`, with k fitted without them.
"""

from __future__ import annotations

import datetime
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numba
from threadpoolctl import threadpool_limits

import solvers
from bench.commands import Command, option, out, problems
from bench.harness import machine_description, relative_gap
from bench.problems import REGRESSION_SETS, BenchProblem
from bench.references import load_references
from solvers.auto import (
    MEASURED_TOLERANCES,
    MEASUREMENTS,
    NEIGHBOUR_CHOICES,
    Candidate,
    DatasetShape,
    effective_seconds,
    eligible_candidates,
    fitted_neighbours,
    rank_candidates,
    tolerance_key,
)
from solvers.monitor import ListMonitor
from solvers.registry import AUTO_CANDIDATES as CANDIDATES
from solvers.train import supports_task

AutoParams = solvers.get_solver("auto").params_model

DATASETS = ("heart_scale", "breast-cancer_scale", "australian_scale", "diabetes_scale",
            "svmguide1", "mushrooms", "a9a", "ijcnn1", "w8a", "news20-binary",
            "australian-unscaled", "breast-cancer-unscaled")
LOSSES = ("squared_hinge", "hinge", "logistic")
#: The regression sets (bench.problems.REGRESSION_SETS) and their residual losses.
REGRESSION_DATASETS = REGRESSION_SETS
REGRESSION_LOSSES = ("squared_epsilon_insensitive", "epsilon_insensitive")
CS = (0.01, 1.0, 100.0)
CAP_FACTOR = 10.0
MIN_CAP = 2.0
MAX_CAP = 30.0
REPEAT_BELOW_SECONDS = 1.0
#: A repeated run's calls: about this many seconds of them, within [MIN_CALLS, MAX_CALLS].
CALL_BUDGET_SECONDS = 2.0
MIN_CALLS = 4
MAX_CALLS = 40

#: The datasets the test holds back: the rule is fitted without them and must choose, on each
#: of their problems, a candidate measured within 20% of the fastest.
HELD_BACK = ("australian_scale", "w8a")


def candidates_for(problem: BenchProblem) -> list[Candidate]:
    """The candidates ``auto`` would consider for the problem (the same eligibility test)."""
    ds = problem.train_dataset()
    params = AutoParams(loss=problem.loss, bias=problem.bias, C=problem.C, **problem.posed)
    eligible = eligible_candidates(params, DatasetShape.of(ds), solvers.get_solver,
                                   supports_task)
    return [candidate for candidate, spec, _ in eligible if spec.run is not None]


def run_candidate(candidate: Candidate, problem: BenchProblem, tol: float, cap: float):
    """One run: (trace of (seconds, objective), total seconds, status)."""
    monitor = ListMonitor(time_limit=cap)
    start = time.perf_counter()
    result = solvers.train(problem.train_dataset(), solver=candidate.solver, C=problem.C,
                           loss=problem.loss, bias=problem.bias, monitor=monitor,
                           **problem.posed,
                           **candidate.params_for(solvers.get_solver(candidate.solver), tol))
    total = time.perf_counter() - start
    trace = [(r.elapsed, r.objective) for r in result.log]
    return trace, total, str(result.status)


def calls_for(first_seconds: float) -> int:
    """How many calls a run that took ``first_seconds`` once is timed over (the first
    included): one if it took a second or more."""
    if first_seconds >= REPEAT_BELOW_SECONDS:
        return 1
    return int(min(MAX_CALLS, max(MIN_CALLS, CALL_BUDGET_SECONDS // max(first_seconds, 1e-9))))


def fastest_quarter(values) -> float:
    """The median of the fastest quarter (at least one) of ``values``."""
    ordered = sorted(values)
    return statistics.median(ordered[:max(1, len(ordered) // 4)])


#: (loss, tol) -> candidate names, fastest first, on the last problem measured: the next
#: problem runs them in that order, so that its cap is set by a likely fast run early
_LAST_ORDER: dict[tuple[str, float], list[str]] = {}


def measure_problem(problem: BenchProblem, log=print) -> dict:
    candidates = candidates_for(problem)
    ds = problem.train_dataset()
    entry = {
        "problem": problem.key, "dataset": problem.dataset, "loss": problem.loss,
        "bias": problem.bias, "C": problem.C, "n_samples": ds.n_samples,
        "n_features": ds.n_features, "nnz": ds.nnz,
        "features": list(DatasetShape.of(ds).features(problem.C)),
        "runs": {},
    }
    finals: list[tuple[str, str, dict, float]] = []
    for tol in MEASURED_TOLERANCES:
        runs = entry["runs"][tolerance_key(tol)] = {}
        fastest = math.inf
        order = _LAST_ORDER.get((problem.loss, tol), [])
        ordered = sorted(candidates, key=lambda c: order.index(c.name) if c.name in order
                         else len(order))
        for candidate in ordered:
            cap = MAX_CAP if math.isinf(fastest) else \
                min(MAX_CAP, max(MIN_CAP, CAP_FACTOR * fastest))
            attempts = [run_candidate(candidate, problem, tol, cap)]
            attempts += [run_candidate(candidate, problem, tol, cap)
                         for _ in range(calls_for(attempts[0][1]) - 1)]
            converged = all(status == "converged" for *_, status in attempts)
            seconds = fastest_quarter(total for _, total, _ in attempts) if converged \
                else None
            if seconds is not None:
                fastest = min(fastest, seconds)
            trace, total, status = attempts[len(attempts) // 2]
            runs[candidate.name] = {"seconds": seconds, "cap": cap, "status": status,
                                    "calls": len(attempts)}
            if trace:
                finals.append((tolerance_key(tol), candidate.name, runs[candidate.name],
                               trace[-1][1]))
            log(f"  {problem.key:42s} tol {tol:g} {candidate.name:28s} {total:8.3f} s "
                f"(cap {cap:.1f} s) {status}")
        _LAST_ORDER[(problem.loss, tol)] = sorted(
            runs, key=lambda name, runs=runs: effective_seconds(runs[name]))
    reference = min(objective for *_, objective in finals)
    stored = load_references().get(problem.key)
    if stored is not None:
        reference = min(reference, stored["objective"])
    entry["reference_objective"] = reference
    for _, _, run, objective in finals:
        run["final_gap"] = relative_gap(objective, reference)
    return entry


def problems_of(datasets, losses=None) -> list[BenchProblem]:
    """The problems of ``datasets``: the classification sets with :data:`LOSSES`, the
    regression sets with :data:`REGRESSION_LOSSES` (``losses``: only those of them)."""
    return [BenchProblem(d, loss, "regularized", C)
            for d in datasets
            for loss in (REGRESSION_LOSSES if d in REGRESSION_DATASETS else LOSSES)
            if losses is None or loss in losses
            for C in CS]


def measure(datasets, out, resume: bool, log=print, losses=None, replace: bool = False
            ) -> None:
    """Measure the problems of ``datasets`` (``losses``: only those) into ``out``: all anew,
    or (``resume``) those not in it yet, or (``replace``) each of them again in its place."""
    document = {"problems": []}
    if (resume or replace) and out.exists():
        document = json.loads(out.read_text())
    selected = problems_of(datasets, losses)
    done = {m["problem"] for m in document["problems"]}
    if replace:  # the file's date and machine stay its first measurement's; this one listed
        done -= {problem.key for problem in selected}
        document.setdefault("remeasured", []).append({
            "machine": machine_description(), "statistic": "fastest quarter",
            "problems": sorted(problem.key for problem in selected)})
    else:
        document["generated"] = datetime.date.today().isoformat()
        document["machine"] = machine_description()
    document["candidates"] = [c.name for c in CANDIDATES]
    document["method"] = __doc__.split("\n\n")[1]
    measured_losses = {problem.loss for problem in selected}
    with threadpool_limits(limits=1, user_api="blas"):
        for candidate in CANDIDATES:  # compile / load caches, discarded: every loss measured
            for loss in (*LOSSES, *REGRESSION_LOSSES):  # (a family's kernels differ by loss)
                problem = BenchProblem("bodyfat" if loss in REGRESSION_LOSSES
                                       else "heart_scale", loss, "regularized", 1.0)
                if loss in measured_losses and candidate in candidates_for(problem):
                    for tol in MEASURED_TOLERANCES:
                        run_candidate(candidate, problem, tol, MAX_CAP)
        for problem in selected:
            if problem.key in done:
                continue
            entry = measure_problem(problem, log)
            keys = [m["problem"] for m in document["problems"]]
            if problem.key in keys:
                document["problems"][keys.index(problem.key)] = entry
            else:
                document["problems"].append(entry)
            write_document(document, out)
    document["neighbours"] = fit_neighbours(document["problems"])
    write_document(document, out)


def write_document(document: dict, out) -> None:
    partial = out.with_suffix(".partial")
    partial.write_text(json.dumps(document, indent=1) + "\n")
    partial.replace(out)  # readers never see half a file


def fit_neighbours(measurements, exclude_datasets=()) -> dict[str, int]:
    """Per loss, the k of :data:`NEIGHBOUR_CHOICES` whose rule, with each dataset left out in
    turn, chooses candidates with the lowest geometric mean of time over the fastest's (ties:
    the smaller k), on the measurements of the datasets not in ``exclude_datasets``."""
    kept = [m for m in measurements if m["dataset"] not in exclude_datasets]
    fitted = {}
    for loss in sorted({m["loss"] for m in kept}):
        quality = {}
        for k in NEIGHBOUR_CHOICES:
            rows = [r for r in held_back_evaluation(kept, neighbours={loss: k})
                    if r["loss"] == loss]
            quality[k] = geometric_mean(r["ratio"] for r in rows)
        fitted[loss] = min(NEIGHBOUR_CHOICES, key=lambda k, q=quality: (q[k], k))
    return fitted


def held_back_evaluation(measurements, held_back=None, tolerances=MEASURED_TOLERANCES,
                         neighbours: dict[str, int] | None = None) -> list[dict]:
    """For each measured problem and target (of the ``held_back`` datasets, or of every
    dataset, each left out in turn), what the rule fitted without that dataset chooses, and
    its measured time against the fastest candidate's (a run cut off counts as
    ``CENSORED_FACTOR`` caps, as in the rule).  ``neighbours``: k per loss (default: the
    stored fit)."""
    rows = []
    for m in measurements:
        if held_back is not None and m["dataset"] not in held_back:
            continue
        leave_out = frozenset(held_back) if held_back is not None else frozenset({m["dataset"]})
        for tol in tolerances:
            runs = m["runs"][tolerance_key(tol)]
            k = (neighbours or {}).get(m["loss"]) or fitted_neighbours(m["loss"])
            scores, nearest = rank_candidates(
                tuple(m["features"]), m["loss"], tol, list(runs), measurements, k,
                exclude=lambda other, leave_out=leave_out: other["dataset"] in leave_out)
            if not scores:
                continue
            chosen = min(scores, key=scores.get)
            best = min(runs, key=lambda name, runs=runs: effective_seconds(runs[name]))
            rows.append({"problem": m["problem"], "loss": m["loss"], "tol": tol, "k": k,
                         "chosen": chosen, "best": best,
                         "chosen_seconds": effective_seconds(runs[chosen]),
                         "best_seconds": effective_seconds(runs[best]),
                         "ratio": effective_seconds(runs[chosen])
                         / effective_seconds(runs[best]),
                         "neighbours": [n["problem"] for n in nearest]})
    return rows


def geometric_mean(values) -> float:
    values = list(values)
    return math.exp(statistics.fmean(map(math.log, values))) if values else math.nan


def summary_by_loss(measurements, rows) -> dict[str, dict[str, float]]:
    """Per loss: the rule's geometric mean ratio to the fastest over ``rows``, the share within
    20%, and each fixed candidate's geometric mean ratio over the same problems (what always
    choosing it would give)."""
    by_problem = {m["problem"]: m for m in measurements}
    summary = {}
    for loss in sorted({by_problem[r["problem"]]["loss"] for r in rows}):
        mine = [r for r in rows if by_problem[r["problem"]]["loss"] == loss]
        fixed: dict[str, list[float]] = {}
        for r in mine:
            runs = by_problem[r["problem"]]["runs"][tolerance_key(r["tol"])]
            for name, run in runs.items():
                fixed.setdefault(name, []).append(effective_seconds(run) / r["best_seconds"])
        summary[loss] = {
            "rule": geometric_mean(r["ratio"] for r in mine),
            "within_20_percent": sum(r["ratio"] <= 1.2 for r in mine) / len(mine),
            "problems": len(mine),
            **{f"always {name}": geometric_mean(v) for name, v in fixed.items()
               if len(v) == len(mine)},
        }
    return summary


def run_command(args) -> None:
    if args.command == "measure":
        if args.threads:
            numba.set_num_threads(args.threads)
        measure(args.problems.split(","), args.out, args.resume,
                losses=args.losses.split(",") if args.losses else None, replace=args.replace)
        return
    if args.command == "fit":
        document = json.loads(args.measurements.read_text())
        document["neighbours"] = fit_neighbours(document["problems"])
        write_document(document, args.measurements)
        print(document["neighbours"])
        return
    measurements = json.loads(open(args.measurements).read())["problems"]
    held = args.held_back.split(",") if args.held_back else None
    rows = held_back_evaluation(measurements, held)
    print("| problem | tol | auto chose | s | fastest | s | ratio |")
    print("|---|---|---|---:|---|---:|---:|")
    for r in rows:
        print(f"| {r['problem']} | {r['tol']:g} | {r['chosen']} | {r['chosen_seconds']:.3g} | "
              f"{r['best']} | {r['best_seconds']:.3g} | {r['ratio']:.2f} |")
    for loss, figures in summary_by_loss(measurements, rows).items():
        print(f"\n{loss}: {figures['problems']} problem-targets, "
              f"{figures['within_20_percent']:.0%} within 20% of the fastest; geometric mean "
              f"of the time over the fastest's: auto {figures['rule']:.3f}, " + ", ".join(
                  f"{k} {v:.3f}" for k, v in figures.items() if k.startswith("always")))


COMMAND = Command(
    "auto", "the solver portfolio: measure, fit, check", run_command, description=__doc__,
    subcommands=(
        Command("measure", "time every candidate on every problem", options=(
            problems(",".join((*DATASETS, *REGRESSION_DATASETS)), alias="--datasets"),
            out(MEASUREMENTS),
            option("--resume", action="store_true"),
            option("--threads", type=int, default=None,
                   help="Numba threads (default: Numba's; the machine description records "
                        "them)"),
            option("--replace", action="store_true",
                   help="measure the selected problems again, each in its place in the "
                        "file (the others kept)"),
            option("--losses", default=None,
                   help="comma-separated losses to measure (default: every loss of each "
                        "set)"))),
        Command("fit", "choose k per loss again (measure does it at the end)", options=(
            option("--measurements", type=Path, default=MEASUREMENTS),)),
        Command("check", "held-back evaluation of the rule", options=(
            option("--measurements", default=str(MEASUREMENTS)),
            option("--held-back", default=None,
                   help="comma-separated datasets (default: leave each dataset out in "
                        "turn)")))))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["auto", *sys.argv[1:]]))
