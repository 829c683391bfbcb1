"""``python -m bench alm``: SVM-ALM (Nie et al. 2014) against LIBLINEAR, in one run.

    python -m bench alm [--part tables|scaling|figure2|start|verify|speed|all]
                              [--limit S] [--repeats R] [--threads T] [--out DIR]

* ``tables`` -- the paper's Tables 1-2 where the data is here: ijcnn1 and w8a at C = 1, p = 1
  (hinge) and p = 2 (squared hinge), the paper's free bias.  Time to relative gaps 1e-2 (the
  paper's 1%), 1e-3 and 1e-6 for ``alm`` exact and inexact (one run each, its trace from the
  monitor, a time limit of ``--limit`` seconds) and LIBLINEAR (black box, one run per eps in
  1e-1..1e-8): ``-s 2 -B 1 -R`` (the free bias exactly; p = 2), and ``-s 1``/``-s 2`` (p = 2)
  or ``-s 3`` (p = 1) with ``-B 1`` -- a regularized bias, a DIFFERENT problem, timed against
  its own optimum -- and with the paper's constant feature ``-B 1000`` (its w and 1000 b
  evaluated on the free-bias problem, against the free-bias optimum: how well the big constant
  stands in for a free bias, and what it does to dual coordinate descent).  ``mfn`` (squared
  hinge, regularized bias) runs on the ``-B 1`` problem.
* ``scaling`` -- Figure 1: time to a relative gap of 1e-3 on nested random subsets (first n
  rows of a seeded permutation) of ijcnn1 and of the SYNTHETIC text-like problem
  ``synthetic-80000x20000`` (:mod:`bench.synthetic`), both variants, p = 1 and 2, C = 1; the
  log-log slope by least squares (``--data`` picks the sets); the plot goes to
  ``alm-<part>-scaling.png`` in ``--out``.
* ``figure2`` -- Figure 2: test accuracy of inexact minus exact over C in {1, 10, ..., 1e4}
  on ijcnn1 (its test file), both stopped by the paper's rules (gradient 0.01, objective
  change 1e-4, 100 iterations).
* ``start`` -- w = 0 against the paper's w = 1: iterations and time to a 1e-6 gap.
* ``speed`` -- the issue's speed goal: time to 1e-2, 1e-3 and 1e-6 of the free-bias squared
  hinge optimum on ijcnn1, a9a, w8a at C in {0.01, 1, 100}, ``alm`` (both variants) against
  LIBLINEAR ``-s 2 -B 1 -R`` in the same process, ``--repeats`` interleaved rounds, medians.
* ``verify`` -- the issue's bar on a9a, w8a, ijcnn1 at C in {0.01, 1, 100}: squared hinge,
  free bias, both variants to a 1e-8 gap within ``--limit`` seconds, against LIBLINEAR
  ``-s 2 -B 1 -R`` (what ``tests/test_alm_large.py`` runs where it is fast enough).

Optima: the free-bias squared hinge from LIBLINEAR ``-s 2 -R -e 1e-12`` (certified by the
problem's duality gap); the others from the best objective of the run or ``alm`` at a 1e-9
gap.  BLAS is pinned to one thread (bench/harness.py explains why).  Prints Markdown and writes
``alm.json`` to ``--out`` (default bench/results/alm).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from bench.anchors import liblinear_trace
from bench.commands import Command, option, out, problems, repeats, threads
from bench.harness import machine_description
from bench.problems import BenchProblem
from solvers import alm
from solvers.alm import ALMParams
from solvers.losses import loss_type
from solvers.monitor import ListMonitor
from solvers.problems import BinaryProblem

GAPS = (1e-2, 1e-3, 1e-6)
EPS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


def problem_of(name: str, loss: str, bias: str, C: float, n_rows=None, scale=1.0):
    ds = BenchProblem(name, n_rows=n_rows).train_dataset()
    return BinaryProblem(ds.X, ds.y, C=C, loss=loss, bias=bias, bias_scale=scale)


def first_time(trace, optimum, gap):
    for seconds, objective in trace:
        if (objective - optimum) / abs(optimum) <= gap:
            return seconds
    return None


def run_alm(problem: BinaryProblem, limit: float, **settings):
    monitor = ListMonitor(time_limit=limit)
    params = ALMParams(C=problem.C, loss=problem.loss, bias=problem.bias,
                       bias_scale=problem.bias_scale, **settings)
    start = time.perf_counter()
    solution = alm.solve(problem, params, monitor)
    seconds = time.perf_counter() - start
    trace = [(r.elapsed, r.objective) for r in monitor.records]
    return trace, seconds, solution


def run_liblinear(problem: BinaryProblem, args: str, evaluate: BinaryProblem, scale=1.0):
    """One LIBLINEAR run per eps (constant feature ``scale`` with -B); the objective of (w,
    intercept) on ``evaluate``."""

    def objective(model):
        w, b = model.get_decfun()
        beta = np.r_[np.asarray(w, dtype=np.float64), b]
        if model.get_labels()[0] != 1:
            beta = -beta
        if "-B" not in args:
            beta[-1] = 0.0
        return evaluate.objective(beta)

    return liblinear_trace(problem.X, problem.y, f"{args} -c {problem.C!r}",
                           scale if "-B" in args else None, EPS, objective)


def liblinear_free_optimum(problem: BinaryProblem) -> float:
    """The free-bias squared-hinge optimum: LIBLINEAR -s 2 -B 1 -R -e 1e-12, certified."""
    from liblinear.liblinearutil import train

    model = train(problem.y, problem.X, f"-s 2 -B 1 -R -c {problem.C!r} -e 1e-12 -q")
    w, b = model.get_decfun()
    beta = np.r_[w, b]
    if model.get_labels()[0] != 1:
        beta = -beta
    assert problem.relative_duality_gap(beta) < 1e-7  # a9a, C = 100: 3.5e-8
    return problem.objective(beta)


def row(label, trace, optimum, seconds, note=""):
    times = [first_time(trace, optimum, g) for g in GAPS]
    final = (trace[-1][1] - optimum) / abs(optimum) if trace else float("nan")
    cells = " | ".join("-" if t is None else f"{t:.3f}" for t in times)
    return f"| {label} | {cells} | {seconds:.2f} | {final:.1e} | {note} |", times


def _emit(log, out, key, bias, traces, optimum, source):
    for label, (trace, seconds, note) in traces.items():
        line, times = row(f"{key} {bias} | {label}", trace, optimum, seconds, note)
        log(line)
        out.append({"problem": key, "bias": bias, "runner": label, "times": times,
                    "seconds": seconds, "note": note, "optimum": optimum,
                    "optimum_source": source})


def tables(limit: float, log) -> list[dict]:
    out = []
    log("| problem | bias | runner | t(1e-2) s | t(1e-3) s | t(1e-6) s | run s | final gap | "
        "note |")
    log("|---|---|---|---|---|---|---|---|---|")
    for name in ("ijcnn1", "w8a"):
        for loss in ("hinge", "squared_hinge"):
            key = f"{name}/{loss}/C=1"
            free = problem_of(name, loss, "free", 1.0)
            traces = {}
            for variant in ("exact", "inexact"):
                trace, seconds, sol = run_alm(free, limit, variant=variant, tol=1e-8)
                traces[f"alm {variant}"] = (trace, seconds, f"{sol.status}, {sol.iterations} it")
            types = loss_type(loss).liblinear_types
            if loss == "squared_hinge":
                trace = run_liblinear(free, "-s 2 -B 1 -R", free)
                traces["liblinear -s 2 -B 1 -R"] = (trace, sum(t for t, _ in trace),
                                                    "eps 1e-1..1e-8")
            for s in types:
                # the paper's constant feature 1e3 (LIBLINEAR's decision bias is the intercept)
                trace = run_liblinear(free, f"-s {s} -B 1000", free, scale=1000.0)
                traces[f"liblinear -s {s} -B 1000"] = (trace, sum(t for t, _ in trace),
                                                       "constant feature 1e3")
            if loss == "squared_hinge":
                optimum, source = liblinear_free_optimum(free), "liblinear -s 2 -R -e 1e-12"
            else:
                optimum = min(o for tr, _, _ in traces.values() for _, o in tr)
                source = "best objective of the run"
            _emit(log, out, key, "free", traces, optimum, source)
            reg = problem_of(name, loss, "regularized", 1.0)
            traces = {}
            for s in types:
                trace = run_liblinear(reg, f"-s {s} -B 1", reg)
                traces[f"liblinear -s {s} -B 1"] = (trace, sum(t for t, _ in trace),
                                                    "eps 1e-1..1e-8")
            trace, seconds, sol = run_alm(reg, limit, variant="exact", tol=1e-8)
            traces["alm exact"] = (trace, seconds, f"{sol.status}, {sol.iterations} it")
            if loss == "squared_hinge":
                from solvers import mfn
                monitor = ListMonitor()
                start = time.perf_counter()
                mfn.solve(reg, None, monitor)
                traces["mfn"] = ([(r.elapsed, r.objective) for r in monitor.records],
                                 time.perf_counter() - start, "defaults")
            optimum = min(o for tr, _, _ in traces.values() for _, o in tr)
            _emit(log, out, key, "regularized (-B 1)", traces, optimum,
                  "best objective of the run")
    return out


SCALING_SIZES = {"ijcnn1": (6250, 12500, 25000, 49990),
                 "synthetic-80000x20000": (10000, 20000, 40000, 80000)}


def scaling(limit: float, log, data=None) -> list[dict]:
    out = []
    log("| data | loss | variant | n | seconds to 1e-3 gap | iterations |")
    log("|---|---|---|---|---|---|")
    for name, ns in SCALING_SIZES.items():
        if data and name not in data:
            continue
        for loss in ("hinge", "squared_hinge"):
            for variant in ("exact", "inexact"):
                points = []
                for n in ns:
                    problem = problem_of(name, loss, "free", 1.0, n_rows=n)
                    _, seconds, sol = run_alm(problem, limit, variant=variant, tol=1e-3)
                    ok = sol.status == "converged"
                    log(f"| {name} | {loss} | {variant} | {n} | "
                        f"{seconds:.3f}{'' if ok else ' (' + str(sol.status) + ')'} | "
                        f"{sol.iterations} |")
                    if ok:
                        points.append((n, seconds))
                slope = float(np.polyfit(np.log([p[0] for p in points]),
                                         np.log([p[1] for p in points]), 1)[0]) \
                    if len(points) >= 2 else float("nan")
                log(f"| {name} | {loss} | {variant} | slope | {slope:.2f} | |")
                out.append({"data": name, "loss": loss, "variant": variant,
                            "points": points, "slope": slope})
    return out


def plot_scaling(results: list[dict], path: Path) -> None:
    """Figure 1's log-log plot (seconds to a 1e-3 gap against n), one panel per data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({r["data"] for r in results})
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for r in results:
            if r["data"] != name or len(r["points"]) < 1:
                continue
            n, seconds = zip(*r["points"], strict=True)
            ax.loglog(n, seconds, "o-", label=f"{r['loss']}, {r['variant']} "
                                             f"(slope {r['slope']:.2f})")
        ax.set_title(f"{name}: time to a 1e-3 gap, C = 1")
        ax.set_xlabel("n (nested subsets)")
        ax.set_ylabel("seconds")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figure2(limit: float, log) -> list[dict]:
    out = []
    log("| loss | C | exact acc. | inexact acc. | difference (points) | iterations e/i |")
    log("|---|---|---|---|---|---|")
    bp = BenchProblem("ijcnn1")
    test = bp.test_dataset()
    for loss in ("hinge", "squared_hinge"):
        for C in (1.0, 10.0, 100.0, 1e3, 1e4):
            problem = problem_of("ijcnn1", loss, "free", C)
            acc = {}
            its = {}
            for variant in ("exact", "inexact"):
                _, _, sol = run_alm(problem, limit, variant=variant, stop_rule="paper",
                                    max_iter=100)
                w, b = problem.split(sol.beta)
                from solvers.core import csr_matvec
                from solvers.models import as_feature_matrix
                scores = csr_matvec(as_feature_matrix(test.X, w.shape[0]), w, b)
                acc[variant] = float(np.mean(np.where(scores > 0, 1.0, -1.0) == test.y))
                its[variant] = sol.iterations
            diff = 100 * (acc["inexact"] - acc["exact"])
            log(f"| {loss} | {C:g} | {100 * acc['exact']:.2f}% | {100 * acc['inexact']:.2f}% "
                f"| {diff:+.2f} | {its['exact']}/{its['inexact']} |")
            out.append({"loss": loss, "C": C, "accuracy": acc, "iterations": its})
    return out


def verify(limit: float, log) -> list[dict]:
    """The issue's large-data bar: squared hinge, free bias, tol = 1e-8, against LIBLINEAR
    -s 2 -B 1 -R -e 1e-12, both variants, within ``limit`` seconds."""
    out = []
    log("| data | C | variant | status | iterations | CG iterations | run s | objective error "
        "| final gap | t(1e-2) | t(1e-3) | t(1e-6) |")
    log("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in ("ijcnn1", "a9a", "w8a"):
        for C in (0.01, 1.0, 100.0):
            problem = problem_of(name, "squared_hinge", "free", C)
            optimum = liblinear_free_optimum(problem)
            for variant in ("exact", "inexact"):
                trace, seconds, sol = run_alm(problem, limit, variant=variant, tol=1e-8)
                times = [first_time(trace, optimum, g) for g in GAPS]
                error = (sol.objective - optimum) / optimum
                cells = " | ".join("-" if t is None else f"{t:.2f}" for t in times)
                log(f"| {name} | {C:g} | {variant} | {sol.status} | {sol.iterations} | "
                    f"{sol.extras.get('cgls_iterations', '-')} | {seconds:.1f} | {error:.1e} | "
                    f"{sol.extras['relative_duality_gap']:.1e} | {cells} |")
                out.append({"data": name, "C": C, "variant": variant, "status": sol.status,
                            "error": error, "times": times})
    return out


SPEED_DATA = ("ijcnn1", "a9a", "w8a")


def speed(limit: float, log, repeats: int = 3, data=None) -> list[dict]:
    """The issue's speed goal: time to relative objective errors 1e-2, 1e-3, 1e-6 for ``alm``
    (both variants, defaults, ``tol=1e-7``) and LIBLINEAR ``-s 2 -B 1 -R`` (the free-bias
    squared hinge exactly; one run per eps, the time to an error is that of the fastest run
    reaching it), squared hinge, free bias, on ijcnn1, a9a and w8a at C in {0.01, 1, 100}.
    ``repeats`` rounds, the runners interleaved within each (in an order that rotates from
    round to round); medians.  ``alm exact, mu
    fixed`` is the exact variant with ``mu_rule="fixed"`` (mu0 throughout), to show what the
    default rule changes.  ``data``: the data sets (default ``SPEED_DATA``); a case without
    a certified LIBLINEAR optimum is reported and skipped."""
    out = []
    log("| data | C | runner | t(1e-2) s | t(1e-3) s | t(1e-6) s | ratio to LIBLINEAR at "
        "1e-2 / 1e-3 / 1e-6 | iterations |")
    log("|---|---|---|---|---|---|---|---|")
    for name in data or SPEED_DATA:
        for C in (0.01, 1.0, 100.0):
            problem = problem_of(name, "squared_hinge", "free", C)
            try:
                optimum = liblinear_free_optimum(problem)
            except AssertionError:
                log(f"| {name} | {C:g} | (no certified LIBLINEAR optimum: skipped) | | | | | |")
                continue
            times = {"liblinear -s 2 -B 1 -R": [], "alm exact": [], "alm exact, mu fixed": [],
                     "alm inexact": []}
            iterations = {"alm exact": [], "alm exact, mu fixed": [], "alm inexact": []}
            runners = [("liblinear -s 2 -B 1 -R", None), ("alm exact", {}),
                       ("alm exact, mu fixed", {"mu_rule": "fixed"}),
                       ("alm inexact", {"variant": "inexact"})]
            for round_ in range(repeats):
                # the order rotates from round to round: the first run after a data set's
                # load or another solver's run finds colder caches
                shift = round_ % len(runners)
                for runner, settings in runners[shift:] + runners[:shift]:
                    if settings is None:
                        trace = run_liblinear(problem, "-s 2 -B 1 -R", problem)
                        times[runner].append(
                            [min((t for t, o in trace if (o - optimum) / optimum <= g),
                                 default=None) for g in GAPS])
                        continue
                    trace, _, sol = run_alm(problem, limit, tol=1e-7, **settings)
                    times[runner].append([first_time(trace, optimum, g) for g in GAPS])
                    iterations[runner].append(sol.iterations)
            medians = {}
            for runner, runs in times.items():
                medians[runner] = [None if any(r[k] is None for r in runs)
                                   else float(np.median([r[k] for r in runs]))
                                   for k in range(len(GAPS))]
            anchor = medians["liblinear -s 2 -B 1 -R"]
            for runner, med in medians.items():
                cells = " | ".join("-" if t is None else f"{t:.3f}" for t in med)
                ratios = " / ".join("-" if t is None or a is None else f"{t / a:.1f}"
                                    for t, a in zip(med, anchor, strict=True))
                its = iterations.get(runner)
                log(f"| {name} | {C:g} | {runner} | {cells} | "
                    f"{ratios if runner.startswith('alm') else ''} | "
                    f"{'' if its is None else int(np.median(its))} |")
                out.append({"data": name, "C": C, "runner": runner, "times": med,
                            "runs": times[runner]})
    return out


def start(limit: float, log) -> list[dict]:
    out = []
    log("| problem | start | iterations | seconds | status |")
    log("|---|---|---|---|---|")
    for name in ("heart_scale", "australian_scale", "ijcnn1", "a9a"):
        for loss in ("hinge", "squared_hinge"):
            problem = problem_of(name, loss, "free", 1.0)
            for initial in ("zero", "one"):
                _, seconds, sol = run_alm(problem, limit, cold_start=initial, tol=1e-6)
                log(f"| {name}/{loss}/C=1 | w = {0 if initial == 'zero' else 1} | "
                    f"{sol.iterations} | {seconds:.3f} | {sol.status} |")
                out.append({"problem": f"{name}/{loss}", "start": initial,
                            "iterations": sol.iterations, "seconds": seconds})
    return out


def run_command(args) -> None:
    if args.threads is not None:
        numba.set_num_threads(args.threads)
    parts = {"tables": tables, "scaling": scaling, "figure2": figure2, "start": start,
             "verify": verify,
             "speed": lambda limit, log: speed(limit, log, args.repeats,
                                               args.problems.split(",") if args.problems else None)}
    chosen = list(parts) if args.part == "all" else [args.part]
    results = {"machine": machine_description(), "load_start": os.getloadavg(),
               "numba_threads": numba.get_num_threads()}
    alm.warm_up()
    with threadpool_limits(limits=1, user_api="blas"):
        for part in chosen:
            print(f"\n### {part}\n", flush=True)
            log = lambda s: print(s, flush=True)  # noqa: E731
            if part == "scaling" and args.problems:
                results[part] = scaling(args.limit, log, args.problems.split(","))
            else:
                results[part] = parts[part](args.limit, log)
    results["load_end"] = os.getloadavg()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"alm-{args.part}.json").write_text(json.dumps(results, indent=1, default=str))
    if "scaling" in results:
        plot_scaling(results["scaling"], out / f"alm-{args.part}-scaling.png")


COMMAND = Command(
    "alm", "alm against LIBLINEAR -R (the paper's tables, scaling, speed)", run_command,
    description=__doc__, options=(
        option("--part", default="all",
               choices=("tables", "scaling", "figure2", "start", "verify", "speed", "all")),
        option("--limit", type=float, default=60.0),
        out("bench/results/alm"),
        problems(None, alias="--data",
                 help="scaling, speed: comma-separated data sets (default: all; speed: "
                      "ijcnn1, a9a, w8a)"),
        repeats(3, help="speed: rounds (medians)"),
        threads(help="Numba threads (default: as configured).  1 compares with "
                "single-threaded LIBLINEAR on one core; on a loaded machine a parallel "
                "region waits for a descheduled worker (bench/history/measurements.json, "
                "alm-threads)")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["alm", *sys.argv[1:]]))
