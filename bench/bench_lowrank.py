"""``python -m bench lowrank``: the low-rank kernel path (``approximation="nystrom" |
"icf"`` under a linear solver) against exact LIBSVM (scikit-learn's SVC) at the same C and
gamma, in one run.

    python -m bench lowrank [--quick] [--problems a9a,ijcnn1,letter] [--ranks 256,512,1024]
                                  [--strategies ovo,crammer_singer] [--out DIR]
    python -m bench lowrank --routing [--problems a9a,ijcnn1,w8a,mushrooms] [--ranks 256,chosen]

Problems: a9a (32,561 rows, 123 binary features), ijcnn1 (49,990 rows, 22 features in
[-1, 1]) and letter (15,000 rows, 16 features, 26 classes), their shipped test files (a9a.t
and ijcnn1.t: the first 10,000 rows); w8a (49,749 rows, 300 sparse binary features) and
mushrooms (8,124 rows, 112 binary features), which ship no test file, hold a seeded fifth of
their rows out; news20 made binary (groups 1-10 against 11-20; 15,935 rows, 62,061 features,
its test file); ``NAME:ROWS`` a seeded subset of ROWS training rows (``a9a:8000``);
``--quick``: seeded subsets of 5,000 training rows.

``--routing`` asks where the path pays against the project's own exact kernel SVM rather
than LIBSVM: ``smo`` at the default certified gap and at LIBSVM's stop, then ``dual_cd`` on
the Nystrom factor at each rank, with the support-vector fraction of a 2,000-row probe.
RBF kernel, C = 1, gamma = scikit-learn's "scale" computed once on the training rows and passed
as a number to both sides.

* ``SVC``: scikit-learn's SVC (LIBSVM inside: the exact C-SVC, free bias, one-vs-one for
  letter), ``tol=1e-3`` (LIBSVM's default), ``cache_size=200``;
* the rank curve: ``dual_cd`` (hinge, regularized bias, certified relative gap ``tol=1e-3``)
  on the Nystrom factor with uniform landmarks, at each rank of ``--ranks``;
* at the largest rank: Nystrom with k-means landmarks, and the incomplete Cholesky (the
  landmarks question of issue 33: which to use, measured);
* on a multi-class problem (letter), at each rank: ``dual_cd`` with each multi-class strategy
  of ``--strategies`` besides the curve's one-vs-rest (``ovo``: one-vs-one on the factor,
  325 pairs for letter, as LIBSVM; ``crammer_singer``: dual_cd's native multi-class problem);
* at the middle rank (uniform Nystrom): every linear family on the same factor (mfn:
  squared hinge, its native loss; alm, cutting_plane, interior_point, dual_cd: the hinge), to
  say which is fastest on the factor.

Every low-rank time is the whole ``solvers.train`` call (factor + solver + model) on
the worker's threads; LIBSVM is single-threaded.  One run each (this is a curve, not a
timing duel; the machine is shared: the load average at start and end is recorded).

Writes ``lowrank.json`` and ``lowrank.md`` to ``--out`` (default bench/results/lowrank) and
prints the Markdown.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.svm import SVC

import solvers
from bench.commands import Command, option, out, problems, quick
from bench.harness import machine_description
from bench.paths import dataset_path
from bench.problems import LABELLINGS
from solvers.core.kernels import scale_gamma

C = 1.0
PROBLEMS = {  # name: (train file, test file or None: a seeded fifth held out, n_features)
    "a9a": ("a9a", "a9a.t", 123),
    "ijcnn1": ("ijcnn1", "ijcnn1.t", 22),
    "letter": ("letter.scale", "letter.scale.t", 16),
    "w8a": ("w8a", None, 300),
    "mushrooms": ("mushrooms", None, 112),
    "news20-binary": ("news20", "news20.t", 62061),  # groups 1-10 against 11-20
}
#: the rows of the support-vector-fraction probe (``--routing``)
PROBE_ROWS = 2_000
TEST_ROWS = 10_000
QUICK_ROWS = 5_000
LOWRANK_TOL = 1e-3
FAMILIES = (("dual_cd", {"loss": "hinge"}), ("mfn", {"loss": "squared_hinge"}),
            ("alm", {"loss": "hinge"}), ("cutting_plane", {"loss": "hinge"}),
            ("interior_point", {"loss": "hinge"}))


def problem(name: str, quick: bool):
    """The training and test sets of ``name``: a key of :data:`PROBLEMS`, or ``KEY:ROWS`` for
    a seeded subset of ``ROWS`` of its training rows (the size curve of one distribution)."""
    key, _, rows = name.partition(":")
    file, test_file, d = PROBLEMS[key]
    train = solvers.read_svmlight(dataset_path(file), n_features=d)
    if key in LABELLINGS:
        train = solvers.Dataset(train.X, LABELLINGS[key](train.y))
    if test_file is None:  # no shipped test file: a seeded fifth of the rows held out
        order = np.random.default_rng(0).permutation(train.n_samples)
        held = train.n_samples // 5
        train, test = train.subset(np.sort(order[held:])), train.subset(np.sort(order[:held]))
    else:
        test = solvers.read_svmlight(dataset_path(test_file), n_features=d)
        if key in LABELLINGS:
            test = solvers.Dataset(test.X, LABELLINGS[key](test.y))
    if rows:
        keep = np.random.default_rng(0).permutation(train.n_samples)[:int(rows)]
        train = train.subset(np.sort(keep))
    if quick and train.n_samples > QUICK_ROWS:
        keep = np.sort(np.random.default_rng(0).permutation(train.n_samples)[:QUICK_ROWS])
        train = train.subset(keep)
    if test.n_samples > TEST_ROWS:
        test = test.subset(np.arange(TEST_ROWS))
    return train, test


def run_svc(train, test, gamma: float) -> dict:
    clock = time.perf_counter()
    svc = SVC(C=C, kernel="rbf", gamma=gamma, tol=1e-3, cache_size=200)
    svc.fit(train.X, train.y)
    seconds = time.perf_counter() - clock
    accuracy = float(np.mean(svc.predict(test.X) == test.y))
    return {"runner": "SVC (LIBSVM)", "seconds": seconds, "accuracy": accuracy,
            "n_support": int(svc.support_.shape[0])}


def run_lowrank(train, test, gamma: float, solver: str, approximation: str, rank: int | None,
                landmarks: str = "uniform", **params) -> dict:
    clock = time.perf_counter()
    result = solvers.train(train, solver=solver, C=C, approximation=approximation, rank=rank,
                           landmarks=landmarks, kernel="rbf", gamma=gamma, tol=LOWRANK_TOL,
                           **params)
    seconds = time.perf_counter() - clock
    accuracy = float(np.mean(result.model.predict(test.X) == test.y))
    info = result.model.metadata["approximation"]
    method = approximation if approximation == "icf" else f"nystrom/{landmarks}"
    strategy = f" {params['multiclass']}" if "multiclass" in params else ""
    chosen = " (rank chosen)" if rank is None else ""
    return {"runner": f"{solver} {params.get('loss', '')}{strategy} on {method}{chosen}"
            .replace("  ", " "),
            "rank": info["rank"], "seconds": seconds, "factor_seconds": info["seconds"],
            "accuracy": accuracy, "status": str(result.status),
            "residual_trace": info["residual_trace"] / info["kernel_trace"]}


def run_smo(train, test, gamma: float, stop_rule: str) -> dict:
    """The project's exact kernel SVM (``smo``, C-SVC, free bias) at ``stop_rule``: "gap" is
    the product's default (certified relative gap 1e-6), "kkt" LIBSVM's m - M <= 1e-3."""
    clock = time.perf_counter()
    result = solvers.train(train, solver="smo", C=C, kernel="rbf", gamma=gamma,
                           stop_rule=stop_rule)
    seconds = time.perf_counter() - clock
    accuracy = float(np.mean(result.model.predict(test.X) == test.y))
    return {"runner": f"smo ({stop_rule} stop)", "seconds": seconds, "accuracy": accuracy,
            "n_support": int(sum(s.extras.get("n_support", 0) for s in result.subproblems)),
            "status": str(result.status)}


def support_fraction_probe(train, gamma: float) -> dict:
    """The share of support vectors of smo (LIBSVM's stop) on a seeded sample of
    :data:`PROBE_ROWS` rows, and what the probe cost: a cheap look at how much of the kernel
    matrix the exact dual touches, which decides whether a low-rank factor can pay."""
    rows = np.sort(np.random.default_rng(0).permutation(train.n_samples)[:PROBE_ROWS])
    sample = train.subset(rows)
    clock = time.perf_counter()
    result = solvers.train(sample, solver="smo", C=C, kernel="rbf", gamma=gamma,
                           stop_rule="kkt")
    support = sum(s.extras.get("n_support", 0) for s in result.subproblems)
    return {"rows": int(sample.n_samples), "support_fraction": support / sample.n_samples,
            "seconds": time.perf_counter() - clock}


def measure_routing(name: str, quick: bool, ranks: list[int], log=print) -> dict:
    """Where the low-rank path pays against the exact smo (issue 53): smo at the default gap
    and at LIBSVM's stop, then ``dual_cd`` (hinge, tol 1e-3) on a uniform Nystrom factor at
    each rank, all timed as whole ``solvers.train`` calls with held-out accuracy; and the
    support-vector fraction of a small probe, the feature a routing rule could read."""
    train, test = problem(name, quick)
    gamma = scale_gamma(train.X)
    log(f"{name}: {train.n_samples} rows, gamma={gamma:.6g}")
    rows = [run_smo(train, test, gamma, "gap"), run_smo(train, test, gamma, "kkt")]
    for row in rows:
        log(f"  {row}")
    for rank in ranks:
        row = run_lowrank(train, test, gamma, "dual_cd", "nystrom", rank, loss="hinge")
        log(f"  {row}")
        rows.append(row)
    probe = support_fraction_probe(train, gamma)
    log(f"  probe: {probe}")
    return {"problem": name, "n_samples": train.n_samples, "gamma": gamma, "rows": rows,
            "probe": probe, "reference": "smo (gap stop)"}


def measure(name: str, quick: bool, ranks: list[int], families=FAMILIES[1:],
            variants=(("nystrom", "kmeans"), ("icf", "uniform")), strategies=(),
            chosen: bool = False, log=print) -> dict:
    train, test = problem(name, quick)
    gamma = scale_gamma(train.X)
    log(f"{name}: {train.n_samples} rows, gamma={gamma:.6g}")
    rows = []
    exact = run_svc(train, test, gamma)
    log(f"  {exact}")
    rows.append(exact)
    for rank in ranks:
        row = run_lowrank(train, test, gamma, "dual_cd", "nystrom", rank, loss="hinge")
        log(f"  {row}")
        rows.append(row)
        for strategy in strategies if train.classes.shape[0] > 2 else ():
            row = run_lowrank(train, test, gamma, "dual_cd", "nystrom", rank, loss="hinge",
                              multiclass=strategy)
            log(f"  {row}")
            rows.append(row)
    if chosen:  # the rank chosen from the residual trace, beside the curve
        row = run_lowrank(train, test, gamma, "dual_cd", "nystrom", None, loss="hinge")
        log(f"  {row}")
        rows.append(row)
    top = ranks[-1]
    for approximation, landmarks in variants:
        row = run_lowrank(train, test, gamma, "dual_cd", approximation, top, landmarks,
                          loss="hinge")
        log(f"  {row}")
        rows.append(row)
    middle = ranks[len(ranks) // 2]
    for solver, params in families:
        row = run_lowrank(train, test, gamma, solver, "nystrom", middle, **params)
        log(f"  {row}")
        rows.append(row)
    return {"problem": name, "n_samples": train.n_samples, "gamma": gamma, "rows": rows,
            "reference": "SVC"}


def warm_up(name: str) -> None:
    """Compile every runner's Numba code (one run each on 300 rows, discarded)."""
    train, test = problem(name, True)
    train, test = train.subset(np.arange(300)), test.subset(np.arange(300))
    gamma = scale_gamma(train.X)
    for approximation, landmarks in (("nystrom", "uniform"), ("nystrom", "kmeans"),
                                     ("icf", "uniform")):
        run_lowrank(train, test, gamma, "dual_cd", approximation, 50, landmarks, loss="hinge")
    for solver, params in FAMILIES[1:]:
        run_lowrank(train, test, gamma, solver, "nystrom", 50, **params)
    letter = problem("letter", True)[0].subset(np.arange(300))  # multi-class code paths
    for strategy in ("ovo", "crammer_singer"):
        run_lowrank(letter, letter, scale_gamma(letter.X), "dual_cd", "nystrom", 50,
                    loss="hinge", multiclass=strategy)
    for stop_rule in ("gap", "kkt"):
        run_smo(train, test, gamma, stop_rule)


def markdown(results: list[dict]) -> str:
    lines = []
    for result in results:
        exact, reference = result["rows"][0], result.get("reference", "SVC")
        probe = result.get("probe")
        probe_text = (f"; support-vector fraction of a {probe['rows']}-row probe "
                      f"{probe['support_fraction']:.2f} ({probe['seconds']:.2f} s)"
                      if probe else "")
        lines += [f"**{result['problem']}** ({result['n_samples']} rows, gamma = "
                  f"{result['gamma']:.4g}, C = {C:g}{probe_text})", "",
                  f"| runner | rank | seconds | x {reference} time | accuracy | "
                  f"- {reference} accuracy | trace(K - GG')/trace(K) |",
                  "|---|---|---|---|---|---|---|"]
        for row in result["rows"]:
            rank = row.get("rank", "exact")
            residual = f"{row['residual_trace']:.2e}" if "residual_trace" in row else ""
            lines.append(f"| {row['runner']} | {rank} | {row['seconds']:.1f} | "
                         f"{row['seconds'] / exact['seconds']:.2f} | {row['accuracy']:.4f} | "
                         f"{100 * (row['accuracy'] - exact['accuracy']):+.2f} pt | "
                         f"{residual} |")
        lines.append("")
    return "\n".join(lines)


def run_command(args) -> int:
    given = [r for r in args.ranks.split(",") if r]
    numbers = sorted(int(r) for r in given if r != "chosen")
    # "chosen": rank=None, the rank chosen from the residual trace (measured after the
    # curve; the variants and families use the curve's ranks)
    chosen = [None] if "chosen" in given else []
    ranks = numbers or chosen
    machine = machine_description()
    machine["load_average_at_start"] = os.getloadavg()[0]
    warm_up(args.problems.split(",")[0])
    families = [f for f in FAMILIES[1:] if f[0] in args.families.split(",")]
    variants = [v for v in (("nystrom", "kmeans"), ("icf", "uniform"))
                if (v[1] if v[0] == "nystrom" else v[0]) in args.variants.split(",")]
    strategies = [s for s in args.strategies.split(",") if s]
    if args.routing:
        results = [measure_routing(name, args.quick, numbers + chosen)
                   for name in args.problems.split(",")]
    else:
        results = [measure(name, args.quick, ranks, families, variants, strategies,
                           chosen=bool(chosen and numbers))
                   for name in args.problems.split(",")]
    machine["load_average_at_end"] = os.getloadavg()[0]
    text = f"Machine: {machine}\n\n" + markdown(results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lowrank.json").write_text(json.dumps({"machine": machine, "results": results},
                                                 indent=1))
    (out / "lowrank.md").write_text(text)
    print(text)
    return 0


COMMAND = Command(
    "lowrank", "the low-rank kernel path against exact LIBSVM", run_command, description=__doc__,
    options=(
        quick(),
        problems("a9a,ijcnn1,letter"),
        option("--ranks", default="256,512,1024",
               help="the ranks of the curve (comma-separated); 'chosen' adds the rank "
                    "chosen from the residual trace (rank=None)"),
        option("--families", default=",".join(f for f, _ in FAMILIES[1:]),
               help="the linear families compared with dual_cd at the middle rank "
                    "(comma-separated; empty: none)"),
        option("--variants", default="kmeans,icf",
               help="the landmark variants at the largest rank (kmeans, icf; empty: none)"),
        option("--strategies", default="",
               help="multi-class strategies of dual_cd on the factor besides ovr, at every "
                    "rank, on multi-class problems (comma-separated: ovo, crammer_singer; "
                    "empty: none)"),
        option("--routing", action="store_true",
               help="the low-rank path against the project's exact smo (default gap and "
                    "LIBSVM's stop) at every rank, with a support-vector-fraction probe: "
                    "where the path pays (issue 53)"),
        out(Path(__file__).parent / "results" / "lowrank")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["lowrank", *sys.argv[1:]]))
