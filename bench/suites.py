"""The benchmark suites ``python -m bench run --suite NAME`` runs, each writing one JSON record.

Two kinds:

* harness suites (``quick``, ``linear``, ``scaling``, ``full``): problems measured side by side
  by :func:`bench.harness.measure_problem`, each with the runners it lists (ours and the
  anchors of :mod:`bench.anchors`); the record holds every summary and the ratio of each of
  our solvers' time to a relative gap to the fastest anchor's, from the same run;
* script suites (``mfn``, ``dual_cd``, ``alm``, ...): a family's own study, run as its
  sub-command of the one command line (:mod:`bench.cli`: ``python -m bench mfn ...``) with the
  arguments the suite names (extra arguments after ``--`` are appended); the record holds the
  JSON files the study wrote and what it printed.

Every record starts with the machine fingerprint of :func:`bench.harness.machine_description`
(date, git commit, CPU model, load average) and the load average at the end.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import cli
from bench.anchors import (
    ClarabelHinge,
    Liblinear,
    ProjectSolver,
    SklearnLinearKernelSVC,
)
from bench.commands import MODULES, Command, option, out
from bench.fingerprint import MOVE_THRESHOLD, compare_records, last_of_suite, warnings
from bench.harness import GAPS, as_json, machine_description, measure_problem, time_to_gap
from bench.paths import RESULTS_DIR
from bench.problems import BenchProblem, load_dataset
from bench.report import load_records, scaling_plot
from bench.runners import default_runners

SYNTHETIC = "synthetic-300000x100000"
SYNTHETIC_QUICK = "synthetic-100000x50000"
"""The synthetic problem of issue 38 (400,000 x 200,000, squared hinge, C = 1) at a quarter of
its rows and features: mfn against LIBLINEAR -s 2 in well under a minute."""


@dataclass(frozen=True)
class Case:
    """A problem and the runners measured on it (ours first, then the anchors)."""

    problem: BenchProblem
    runners: Callable[[], list]


@dataclass(frozen=True)
class HarnessSuite:
    name: str
    description: str
    cases: Callable[[], list[Case]]
    repeats: int
    scaling: tuple[str, ...] = ()
    service_predict: bool = False  # also GET predict against a server (see service_predict)
    #: each runner runs once, discarded, on each problem before its timed runs; False: the
    #: process is warmed up once (every kernel of solvers.warmup) and each run counts
    warm_up_each: bool = True

    def run(self, extra: list[str], log=print) -> dict:
        if extra:
            raise SystemExit(f"suite {self.name} takes no extra arguments: {extra}")
        if not self.warm_up_each:
            from solvers.warmup import warm_up

            warm_up()
        results = [measure_problem(case.problem, case.runners(), self.repeats, log,
                                   self.warm_up_each) for case in self.cases()]
        scaling = [scaling_study(dataset, default_runners(), log) for dataset in self.scaling]
        body = {"kind": "harness", "repeats": self.repeats, "problems": as_json(results),
                "ratios": {r.problem: ratios(r) for r in results}, "scaling": scaling}
        if self.service_predict:
            body["service_predict"] = service_predict(log)
        return body


def service_predict(log=print, requests: int = 2000, seconds: float = 5.0) -> dict:
    """GET predict of a linear model (mfn on a9a) against ``svmsvc serve`` of this tree, one
    round of :func:`bench.bench_service.predict_ab`: ``requests`` sequential requests, then
    ``wrk`` (8 connections) for ``seconds``; the server's CPU time per request of each."""
    import tempfile

    from bench.bench_service import predict_ab
    from bench.paths import REPOSITORY

    with tempfile.TemporaryDirectory(prefix="svmsvc-bench-") as directory:
        summary = predict_ab(Path(directory), {"this": str(REPOSITORY)}, rounds=1,
                             requests=requests, seconds=seconds, connections=8,
                             database_url=None)
    log(f"  GET predict: {json.dumps(summary)}")
    return {"requests": requests, "wrk_seconds": seconds, "summary": summary}


@dataclass(frozen=True)
class ScriptSuite:
    name: str
    description: str
    command: str  # its sub-command of python -m bench
    argv: tuple[str, ...] = ()
    out_flag: str | None = "--out"  # how the study is told where to write (None: it prints)
    out_is_file: bool = False
    directory: Path | None = None  # where the study writes (default bench/results/NAME)

    def run(self, extra: list[str], log=print) -> dict:
        directory = self.directory or RESULTS_DIR / self.name
        directory.mkdir(parents=True, exist_ok=True)
        argv = list(self.argv)
        if self.out_flag:
            argv += [self.out_flag,
                     str(directory / f"{self.name}.json" if self.out_is_file else directory)]
        argv += extra
        log(f"python -m bench {self.command} {' '.join(argv)}")
        started = time.time()
        printed = io.StringIO()
        with contextlib.redirect_stdout(_Tee(printed, sys.stdout)):
            status = cli.run(self.command, argv)
        outputs = {str(p.relative_to(directory)): json.loads(p.read_text())
                   for p in sorted(directory.rglob("*.json")) if p.stat().st_mtime >= started}
        # "module": the study's module, as records before the one command line named it
        return {"kind": "script", "module": MODULES[self.command], "argv": argv,
                "status": status or 0, "outputs": outputs, "stdout": printed.getvalue()}


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self):
        for stream in self.streams:
            stream.flush()


def ratios(result) -> dict[str, dict[str, float | None]]:
    """Each of our runners' time to each gap over the fastest anchor's, from one result."""
    return {s.runner: {f"{g:g}": result.ratio_to_best_anchor(s.runner, g) for g in GAPS}
            for s in result.summaries if not s.anchor}


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
    return {"title": f"nested subsets of {dataset}", "dataset": dataset, "points": points,
            "slopes": slopes}


def _ours(*names: str) -> list:
    return [ProjectSolver(name) for name in names]


def quick_cases() -> list[Case]:
    """One small real problem per linear family, each against its single-core anchors."""
    return [
        Case(BenchProblem("a9a", "squared_hinge", "regularized", 1.0),
             lambda: _ours("mfn") + [Liblinear(2)]),
        Case(BenchProblem("w8a", "squared_hinge", "regularized", 0.01),
             lambda: _ours("dual_cd", "mfn") + [Liblinear(1), Liblinear(2)]),
        Case(BenchProblem("w8a", "hinge", "regularized", 0.01),
             lambda: _ours("dual_cd", "cutting_plane") + [Liblinear(3)]),
        Case(BenchProblem("mushrooms", "hinge", "regularized", 1.0),
             lambda: _ours("cutting_plane", "interior_point", "mfn")
             + [Liblinear(3), ClarabelHinge()]),
        Case(BenchProblem("australian_scale", "hinge", "free", 1.0),
             lambda: _ours("interior_point", "alm")
             + [SklearnLinearKernelSVC(), ClarabelHinge()]),
        Case(BenchProblem(SYNTHETIC_QUICK, "squared_hinge", "regularized", 1.0),
             lambda: _ours("mfn") + [Liblinear(2)]),
    ]


#: The portfolio suite's problems (issue 31's table): the benchmark's binary sets, their raw
#: copies and the synthetic text-like problem, both losses, C in {0.01, 1, 100}.
PORTFOLIO_DATASETS = ("a9a", "w8a", "ijcnn1", "news20-binary", "mushrooms",
                      "australian-unscaled", "breast-cancer-unscaled")
PORTFOLIO_SYNTHETIC = "synthetic-400000x200000"


def portfolio_cases() -> list[Case]:
    """``auto`` (a schedule of tolerances, each run from scratch) against LIBLINEAR's settings
    for the loss, single-threaded and multi-core on 2 threads: the fastest of them is the
    bar."""
    from bench.anchors import ProjectSolverSchedule
    from bench.liblinear_multicore import LiblinearMulticore

    def runners():
        return [ProjectSolverSchedule("auto")] + [
            anchor(s) for anchor in (Liblinear, LiblinearMulticore) for s in (1, 2, 3)]

    problems = [BenchProblem(d, loss, "regularized", C) for d in PORTFOLIO_DATASETS
                for loss in ("squared_hinge", "hinge") for C in (0.01, 1.0, 100.0)]
    problems += [BenchProblem(PORTFOLIO_SYNTHETIC, loss, "regularized", 1.0)
                 for loss in ("squared_hinge", "hinge")]
    return [Case(p, runners) for p in problems]


#: The logistic suite's problems (issue 47): LIBLINEAR's -s 0 and -s 7 against newton and
#: dual_cd, logistic loss, regularized bias, C in {0.01, 1, 100}.
LOGISTIC_DATASETS = ("a9a", "w8a", "ijcnn1")


def logistic_cases() -> list[Case]:
    """newton and dual_cd (one traced run each, to a certified 1e-9) against LIBLINEAR -s 0
    and -s 7 (each eps of the schedule a run from scratch)."""
    def runners():
        return [ProjectSolver("newton", tol=1e-9), ProjectSolver("dual_cd", tol=1e-9),
                Liblinear(0), Liblinear(7)]

    return [Case(BenchProblem(d, "logistic", "regularized", C), runners)
            for d in LOGISTIC_DATASETS for C in (0.01, 1.0, 100.0)]


def linear_cases() -> list[Case]:
    return [Case(BenchProblem(d, "squared_hinge", "regularized", 1.0), default_runners)
            for d in ("a9a", "w8a", "ijcnn1", "mushrooms")]


def full_cases() -> list[Case]:
    problems = ([BenchProblem(d, "squared_hinge", "regularized", C)
                 for d in ("a9a", "w8a", "ijcnn1", "mushrooms", "news20-binary")
                 for C in (0.01, 1.0, 100.0)]
                + [BenchProblem(SYNTHETIC, "squared_hinge", "regularized", 1.0),
                   BenchProblem("a9a", "hinge", "regularized", 1.0)])
    return [Case(p, default_runners) for p in problems]


SUITES: dict[str, HarnessSuite | ScriptSuite] = {s.name: s for s in (
    HarnessSuite("quick", "a minute or two: mfn against LIBLINEAR -s 2 on a9a (squared "
                 "hinge, C = 1); dual_cd and mfn against -s 1/-s 2 on w8a (squared hinge, "
                 "C = 0.01); dual_cd and cutting_plane against -s 3 on w8a "
                 "(hinge, C = 0.01); cutting_plane, interior_point and mfn against -s 3 and "
                 "Clarabel on mushrooms (hinge, C = 1); interior_point and alm against LIBSVM "
                 "and Clarabel on australian (hinge, free bias, C = 1); mfn against -s 2 on "
                 f"{SYNTHETIC_QUICK} (squared hinge, C = 1); 3 repeats; then GET predict "
                 "against a server of this tree (one round of python -m bench service predict)",
                 quick_cases, repeats=3, service_predict=True),
    HarnessSuite("linear", "a few minutes: every registered linear solver against LIBLINEAR "
                 "(official and multi-core, -s 1/2/3) and scikit-learn, squared hinge, C = 1 on "
                 "a9a, w8a, ijcnn1 and mushrooms; 3 repeats", linear_cases, repeats=3),
    HarnessSuite("scaling", "a few minutes: time to 1e-6 against n on nested subsets of a9a "
                 "and of the synthetic text-like problem", lambda: [], repeats=1,
                 scaling=("a9a", SYNTHETIC)),
    HarnessSuite("full", "hours: squared hinge for C in {0.01, 1, 100} on a9a, w8a, ijcnn1, "
                 "mushrooms and news20 (groups 1-10 against 11-20), the synthetic problem of "
                 "300,000 x 100,000 (~5.7M entries), the hinge at C = 1 on a9a, and the scaling "
                 "study; 5 repeats", full_cases, repeats=5, scaling=("a9a", SYNTHETIC)),
    HarnessSuite("portfolio", "about 20 minutes: solver='auto' (each tolerance of 1e-2, 1e-3, "
                 "1e-6 a run from scratch) against LIBLINEAR -s 1/2/3, official and multi-core "
                 "(-m 2), on a9a, w8a, ijcnn1, news20 made binary, mushrooms, raw copies of "
                 "australian and breast-cancer (hinge and squared hinge, C in {0.01, 1, 100}) "
                 f"and {PORTFOLIO_SYNTHETIC} (C = 1); 1 repeat after one warm-up of the process",
                 portfolio_cases, repeats=1, warm_up_each=False),
    HarnessSuite("logistic", "a few minutes: logistic regression, newton and dual_cd against "
                 "LIBLINEAR -s 0 and -s 7 on a9a, w8a and ijcnn1, C in {0.01, 1, 100}; 3 "
                 "repeats", logistic_cases, repeats=3),
    ScriptSuite("mfn", "mfn against LIBLINEAR (both builds) on the paper's problems, with "
                "its profile", "mfn", ("--quick",)),
    ScriptSuite("dual_cd", "dual_cd against LIBLINEAR -s 1/-s 3 at the same stopping rule",
                "dual_cd"),
    ScriptSuite("cutting_plane", "cutting-plane methods against LIBLINEAR, scikit-learn and "
                "Clarabel (binary, Crammer-Singer, Arnosti's variants)",
                "cutting_plane", ("--quick",)),
    ScriptSuite("interior_point", "interior_point against Clarabel, LIBSVM and LIBLINEAR",
                "interior_point", ("tables", "anchors")),
    ScriptSuite("alm", "alm against LIBLINEAR -R", "alm", ("--part", "speed")),
    ScriptSuite("lssvm", "the least-squares family against dense direct solves and LIBSVM",
                "lssvm", ("--quick",)),
    ScriptSuite("smo", "smo against LIBSVM (scikit-learn SVC, RBF kernel)", "smo",
                ("--quick",)),
    ScriptSuite("regression", "linear SVR and logistic regression (mfn, dual_cd, newton, auto) "
                "against LIBLINEAR -s 0/7/11/12/13 at gaps 1e-2, 1e-3, 1e-6", "regression"),
    ScriptSuite("smo_anchors", "smo against LIBSVM (scikit-learn SVC) and oneDAL "
                "(scikit-learn-intelex SVC, an interpreter of its own: --onedal-python) on the "
                "whole dna, letter, svmguide1 and a9a at C = 1 and 10, held-out accuracy",
                "smo_anchors"),
    ScriptSuite("race", "solver='auto' (the race on certified progress) on held-out problems "
                "against each of its candidates alone, LIBLINEAR (one thread and multi-core "
                "-m 2, oracle-stopped) and Snap ML (n_jobs 1 and 2; --snapml-python or "
                "$SVMSVC_SNAPML_PYTHON)", "race", out_is_file=True),
    ScriptSuite("smo_tasks", "smo's epsilon-SVR, nu-SVR, one-class and nu-SVC against LIBSVM "
                "(scikit-learn SVR, NuSVR, OneClassSVM, NuSVC on CSR and dense input) at "
                "tolerances 1e-2, 1e-3 and 1e-6, one thread each", "smo_tasks"),
    ScriptSuite("lowrank", "the low-rank kernel path (Nystrom, incomplete Cholesky) against "
                "exact LIBSVM (scikit-learn SVC, RBF)", "lowrank", ("--quick",)),
    ScriptSuite("cv", "cross-validated C search against LIBLINEAR -C and scikit-learn",
                "cv", ("--quick",)),
    ScriptSuite("auto", "the solver portfolio's measurements", "auto",
                ("measure",)),
    ScriptSuite("onnx", "onnxruntime serving exported models (linear a9a, smo one-vs-one with "
                "probabilities on dna, Nystrom one-vs-rest on letter) beside the library's and "
                "the service's predict: one row and a batch of 10,000", "onnx",
                out_is_file=True),
    ScriptSuite("batch_predict", "a batch prediction job over 1,000,000 synthetic sparse rows: "
                "the worker's peak RSS against the dataset's size, rows/s against the "
                "library's predict (and the library writing the same CSV)", "batch_predict",
                out_is_file=True),
    ScriptSuite("parser", "the SVMlight reader against scikit-learn's", "parser",
                ("--repeats", "3"), out_is_file=True),
    ScriptSuite("service", "the service under load (needs wrk for --wrk-connections)",
                "service", ("load",), out_flag=None),
    ScriptSuite("predict", "GET predict served by one web process and by two (svmsvc serve "
                "--web-processes 2), interleaved round by round (needs wrk)",
                "service", ("predict", "--web-processes", "2"), out_flag=None),
    ScriptSuite("registry", "GET predict by id, by name@alias and by name/version on one "
                "server, interleaved round by round (needs wrk; --database-url for PostgreSQL), "
                "and what an alias change costs its writer",
                "service", ("registry",), out_flag=None),
    ScriptSuite("uploads", "/healthz and GET predict latency (p50, p99), probed from a "
                "process of their own, while 4 clients upload 1.4 MB files, 3 rounds, beside "
                "an idle server's (the floor) (-- --baseline TREE: against another tree, "
                "interleaved; --probers process,thread: also from the bench's threads)",
                "service", ("uploads",), out_flag=None),
    ScriptSuite("startup", "svmsvc serve to /readyz ready and to the first a9a model (auto), "
                "on a cold Numba cache and warm",
                "service", ("startup",), out_flag=None),
    ScriptSuite("dask", "jobs through a Dask cluster (needs PostgreSQL and dask.distributed)",
                "dask", (), out_flag=None),
    ScriptSuite("distributed", "one model trained data-parallel on 2 Dask worker processes x 1 "
                "thread (--workers, --threads) against the single process with 2 threads (a9a, "
                "w8a; mfn and OCAS): time ratio, reductions and bytes per iteration, Spark's "
                "LinearSVC beside with --spark-python (needs dask.distributed)",
                "distributed", (), out_is_file=True),
    ScriptSuite("distributed_memory", "a text-like set of about 5 GB in CSR generated on 4 Dask "
                "workers at a 2 GB memory limit, mfn on it: peak memory per worker, the "
                "client's, restarts (needs dask.distributed and psutil; minutes)",
                "distributed_memory", (), out_is_file=True),
)}


def record_path(suite: str, machine: dict) -> Path:
    stamp = machine["date"].replace(":", "").replace("-", "")
    return RESULTS_DIR / f"{suite}-{stamp}.json"


def run_suite(name: str, extra: list[str] = (), out: Path | None = None, log=print,
              suites=None) -> Path:
    """Run suite ``name``; write its record (default ``bench/results/NAME-DATE.json``)."""
    suite = (suites or SUITES)[name]
    machine = machine_description()
    log(f"suite {name}: {suite.description}; load average "
        f"{machine['load_average_at_start']:.2f}")
    start = time.perf_counter()
    body = suite.run(list(extra), log)
    record = {"suite": name, "machine": machine, **body,
              "seconds": time.perf_counter() - start,
              "load_average_at_end": os.getloadavg()[0]}
    out = Path(out) if out is not None else record_path(name, machine)
    previous = last_of_suite([r for r in load_records(out.parent) if r["file"] != out.name],
                             name)
    if previous is not None:
        record["comparison"] = compare_records(previous, record)
        for line in warnings(record["comparison"]):
            log(line)
        log(f"compared {record['comparison']['compared']} normalized figures with "
            f"{record['comparison']['previous']}: {len(record['comparison']['moved'])} moved "
            f"by more than {100 * MOVE_THRESHOLD:.0f}%")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=str) + "\n")
    for entry in record.get("scaling", []):
        scaling_plot(entry["points"], entry["slopes"], entry["title"],
                     out.with_name(f"{out.stem}-scaling-{entry['dataset']}.png"))
    log(f"done in {record['seconds']:.0f} s; record {out}")
    return out


def _list(args) -> int:
    for name, suite in SUITES.items():
        print(f"{name:15s} {suite.description}")
    return 0


def _run(args) -> int:
    run_suite(args.suite, args.extra, args.out)
    return 0


COMMANDS = (
    Command("list", "the suites", _list),
    Command("run", "run a benchmark suite, write its JSON record (a script suite's own "
            "arguments after --)", _run, options=(
                option("--suite", choices=list(SUITES), default="quick"),
                out(None, help="the record's path (default bench/results/SUITE-DATE.json)"))),
)
