"""Cross-validation over a C grid: ``solvers.model_selection.cross_validate`` against
LIBLINEAR's own warm-started C search (``-C``) and scikit-learn's ``GridSearchCV(LinearSVC)``.

    python -m bench cv [--quick | --problems a9a,w8a] [--folds 5] [--repeats 1]
                             [--liblinear-eps 0.01]
                             [--loss squared_hinge|hinge] [--fit-quality]
                             [--out bench/results/cv]

Squared hinge, regularized bias (LIBLINEAR -s 2 -B 1; LinearSVC's default), 5 folds, C = 2^-5
.. 2^5 (11 values) on a9a, w8a, ijcnn1 and news20 made binary (``--quick``: a9a and w8a).

* ours: mfn with its defaults, each fold's C path warm-started (beta-seeding), stratified folds,
  every point to cross-validation's default certified gap (1e-3), and again with every point
  exact (``fit_gap=None``: mfn's finite termination, objectives to ~1e-10); the folds two
  at a time (one per Numba thread, the default), and again one after another (``n_jobs=1``);
* LIBLINEAR ``-s 2 -B 1 -C -v 5 -c 2^-5``: its own random folds, and its own grid: from the
  given start doubling up to C = 1024 (hard-coded in ``find_parameter_C``) until no fold's
  weights change for five C values in a row (the warm start already meets its eps), so it may
  solve more or fewer C values than ours (the table says how many); its default eps (0.01),
  or each of ``--liblinear-eps``;
* scikit-learn: ``GridSearchCV(LinearSVC(), {"C": grid}, cv=PredefinedSplit(our folds))``,
  cold fits, LinearSVC's defaults (tol 1e-4).

``--loss hinge`` (LIBLINEAR's ``-C`` refuses ``-s 3``): the cutting planes (OCAS) with each
fold's C path carrying its cuts, and every point cold (``warm_start=False``); mfn's Huber
homotopy, seeded along C; the interior-point method (its default free bias) from an interior
point near the last C's solution, and every point cold; scikit-learn's
``GridSearchCV(LinearSVC(loss="hinge"))``.

Each is timed once per repeat, interleaved, in this process (BLAS held to one thread); the
table gives medians, the best C each found and its CV accuracy.

``--fit-quality`` times nothing: on the first fold, for every C, it gives how far above the
optimum LIBLINEAR's fits (at each eps) and ours (at fit_gap) end, (P - P*) / P*.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

import solvers
from bench.commands import Command, option, out, problems, quick, repeats
from bench.harness import machine_description
from bench.problems import BenchProblem
from solvers.model_selection import CV_FIT_GAP, cross_validate
from solvers.train import validate_params

GRID = [2.0 ** k for k in range(-5, 6)]


def ours(dataset, folds, solver="mfn", fit_gap=CV_FIT_GAP, **options):
    result = cross_validate(dataset, solver, C=GRID, folds=folds, seed=0, fit_gap=fit_gap,
                            **options)
    best = max(result.scores, key=lambda r: (r.mean, -r.C))
    return result.best_C, best.mean, len(GRID)


def liblinear_search(dataset, folds, eps: float = 0.01):
    from liblinear.liblinearutil import problem, train

    prob = problem(dataset.y, dataset.X)
    with _c_stdout() as printed:
        best_C, _, best_rate = train(prob, f"-s 2 -B 1 -C -v {folds} -c {GRID[0]} -e {eps:g}")
    # one line per C it cross-validated (it stops once no fold's weights change)
    return best_C, best_rate, printed().count("log2c=")


@contextlib.contextmanager
def _c_stdout():
    """What C code prints to file descriptor 1 meanwhile (LIBLINEAR's log), as a callable."""
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 1)
        text = ""
        try:
            yield lambda: text
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode(errors="replace")


def sklearn_search(dataset, folds, loss="squared_hinge"):
    from sklearn.model_selection import GridSearchCV, PredefinedSplit
    from sklearn.svm import LinearSVC

    split = PredefinedSplit(dataset.stratified_folds(folds, seed=0))
    search = GridSearchCV(LinearSVC(loss=loss), {"C": GRID}, cv=split, n_jobs=1)
    with warnings.catch_warnings():  # its default max_iter at large C on news20: known
        warnings.simplefilter("ignore")
        search.fit(dataset.X, dataset.y)
    return search.best_params_["C"], search.best_score_, len(GRID)


OURS = f"ours (mfn, warm C path, fit_gap {CV_FIT_GAP:g})"
OURS_HINGE = f"ours (cutting_plane ocas, warm C path, fit_gap {CV_FIT_GAP:g})"


def runners(liblinear_eps=(0.01,), loss="squared_hinge") -> dict:
    """The timed runners, in order, the first the reference of the ratios.  Squared hinge: ours
    three ways, LIBLINEAR's -C at each eps (0.01, its default for -s 2, is labelled plain
    "LIBLINEAR -C"), scikit-learn.  Hinge (LIBLINEAR's -C refuses -s 3): the cutting planes
    warm and cold, mfn's hinge homotopy, the interior-point method warm and cold,
    scikit-learn."""
    if loss == "hinge":
        return {OURS_HINGE: functools.partial(ours, solver="cutting_plane"),
                "ours, cutting_plane every point cold (warm_start=False)":
                    functools.partial(ours, solver="cutting_plane", warm_start=False),
                "ours, mfn (hinge homotopy, warm C path)": functools.partial(ours, loss="hinge"),
                "ours, interior_point (warm C path, free bias)":
                    functools.partial(ours, solver="interior_point"),
                "ours, interior_point every point cold":
                    functools.partial(ours, solver="interior_point", warm_start=False),
                "sklearn GridSearchCV": functools.partial(sklearn_search, loss="hinge")}
    anchors = {("LIBLINEAR -C" if eps == 0.01 else f"LIBLINEAR -C -e {eps:g}"):
               functools.partial(liblinear_search, eps=eps) for eps in liblinear_eps}
    return {OURS: ours, "ours, one fold at a time (n_jobs=1)": functools.partial(ours, n_jobs=1),
            "ours, every point exact (fit_gap=None)": functools.partial(ours, fit_gap=None),
            **anchors, "sklearn GridSearchCV": sklearn_search}


def fit_quality(dataset, folds: int, liblinear_eps=(0.01,)) -> list[dict]:
    """How close to the optimum each search's fits are: on the first of our folds, for every C
    of the grid, the relative excess objective (P - P*) / P* of LIBLINEAR ``-s 2 -B 1`` at
    each eps of ``liblinear_eps`` (0.01 is its default; cold: ``-C`` warm-starts its fits but
    stops them by the same rule, the gradient's norm below eps times its norm at w = 0) and of
    mfn at cross-validation's certified gap; P* is mfn's default solve (certified to
    ~1e-10)."""
    from liblinear.liblinearutil import problem, train

    split = dataset.stratified_folds(folds, seed=0)
    fold = dataset.subset(np.flatnonzero(split != 0))
    y = np.where(fold.y == fold.classes[1], 1.0, -1.0)
    anchor = problem(y, fold.X)
    rows = []
    for C in GRID:
        best = solvers.train(fold, solver="mfn", C=C).objective
        ours_fit = solvers.train(fold, solver="mfn", C=C, tol=CV_FIT_GAP)
        same_problem = validate_params("mfn", {}, C=C)[1].binary_problem(
            fold.X, y, fold.sample_weight)  # the regularized bias of -B 1
        row = {"C": C, "optimum": best, "ours": (ours_fit.objective - best) / best}
        for eps in liblinear_eps:
            model = train(anchor, f"-s 2 -B 1 -c {C} -e {eps:g} -q")
            weights, bias = model.get_decfun()
            if model.get_labels()[0] != 1:  # LIBLINEAR's first label is its positive class
                weights, bias = [-v for v in weights], -bias
            beta = same_problem.join(np.asarray(weights), bias)
            row[eps] = (same_problem.objective(beta) - best) / best
        rows.append(row)
    return rows


def run_command(args) -> int:
    names = ("a9a", "w8a") if args.quick else ("a9a", "w8a", "ijcnn1", "news20-binary")
    if args.problems:
        names = tuple(args.problems.split(","))
    solvers.warm_up()
    eps_values = [float(v) for v in args.liblinear_eps.split(",")]
    timed = runners(eps_values, args.loss)
    reference = next(iter(timed))
    if args.fit_quality:
        lines = ["| problem | C | P* | " + " | ".join(
            f"LIBLINEAR -s 2 -e {eps:g}" for eps in eps_values)
            + f" | ours (fit_gap {CV_FIT_GAP:g}) |",
            "|---|---:|---:|" + "---:|" * (len(eps_values) + 1)]
        for name in names:
            for row in fit_quality(BenchProblem(name).train_dataset(), args.folds,
                                   eps_values):
                lines.append(f"| {name} | {row['C']:g} | {row['optimum']:.6g} | " + " | ".join(
                    f"{row[eps]:.2e}" for eps in eps_values) + f" | {row['ours']:.2e} |")
                print(lines[-1], flush=True)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "cv_fit_quality.md").write_text("\n".join(lines) + "\n")
        return 0
    rows = []
    with threadpool_limits(1):
        for name in names:
            dataset = BenchProblem(name).train_dataset()
            times = {runner: [] for runner in timed}
            found = {}
            for _ in range(args.repeats):
                for runner, run in timed.items():
                    start = time.perf_counter()
                    found[runner] = run(dataset, args.folds)
                    times[runner].append(time.perf_counter() - start)
            ours_time = float(np.median(times[reference]))
            for runner in timed:
                seconds = float(np.median(times[runner]))
                best_C, accuracy, n_C = found[runner]
                rows.append({"problem": name, "runner": runner, "seconds": seconds,
                             "ours / this": ours_time / seconds, "best_C": best_C,
                             "cv_accuracy": accuracy, "C_values": n_C})
                print(f"{name:14} {runner:58} {seconds:8.2f} s  best C {best_C:<8g} "
                      f"CV accuracy {100 * accuracy:.2f}%  ({n_C} C values)", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.loss == "squared_hinge" else f"_{args.loss}"
    (out / f"cv{suffix}.json").write_text(
        json.dumps({"machine": machine_description(), "loss": args.loss, "rows": rows},
                   indent=1))
    lines = ["| problem | runner | seconds | ours / runner | C values | best C | CV accuracy |",
             "|---|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['problem']} | {r['runner']} | {r['seconds']:.2f} | {r['ours / this']:.2f} "
              f"| {r['C_values']} | {r['best_C']:g} | {100 * r['cv_accuracy']:.2f}% |"
              for r in rows]
    (out / f"cv{suffix}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


COMMAND = Command(
    "cv", "cross-validated C search against LIBLINEAR -C and scikit-learn", run_command,
    description=__doc__, options=(
        quick("a9a and w8a only"),
        problems(None, help="comma-separated benchmark problems (default a9a, w8a, ijcnn1, "
                            "news20-binary)"),
        option("--folds", type=int, default=5),
        repeats(1),
        out("bench/results/cv"),
        option("--liblinear-eps", default="0.01",
               help="LIBLINEAR's eps values, comma-separated (default its own, 0.01): one -C "
                    "runner each, one column each of --fit-quality"),
        option("--loss", choices=("squared_hinge", "hinge"), default="squared_hinge",
               help="hinge: the cutting planes and the interior-point method warm and cold, "
                    "mfn's homotopy and scikit-learn (LIBLINEAR's -C has no hinge)"),
        option("--fit-quality", action="store_true",
               help="instead of timing: how far above the optimum LIBLINEAR's fits (default "
                    "eps) and ours (fit_gap) end, on the first fold")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["cv", *sys.argv[1:]]))
