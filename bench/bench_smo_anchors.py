"""``python -m bench smo_anchors``: ``smo`` against LIBSVM (scikit-learn's ``SVC``) and Intel's
oneDAL (scikit-learn-intelex's ``SVC``) side by side in one run, on the whole training files.

    python -m bench smo_anchors [--problems dna,letter,svmguide1,a9a] [--Cs 1,10]
        [--repeats R] [--onedal-python PATH] [--runners smo kkt,oneDAL,...] [--out DIR]

Problems: the shipped training and test files, every row (a9a 32,561, letter's training split
15,000 with 26 classes, dna 2,000 with 3, svmguide1 3,089), columns scaled to [-1, 1] by their
largest |x| (:func:`bench.bench_smo.problem`).  RBF kernel with gamma = 1 / (d Var X) of the
scaled training matrix (scikit-learn's ``"scale"``) passed to every library as a number, the
same C, ``cache_mb`` = 256 MB everywhere, one-vs-one for several classes (all three).

Runners:

* ``smo kkt``: ``stop_rule="kkt"``, ``kkt_tol=1e-3``, LIBSVM's own rule and tolerance;
* ``smo gap``: the default, a certified relative duality gap of 1e-6;
* ``smo kkt pairs``: ``smo kkt`` with ``working_set="pair"``, LIBSVM's two-variable working
  sets where ``"auto"`` chooses ThunderSVM's many-variable ones (C-SVC on 10,000 rows or
  more: a9a), the scheme before issue 53's change, in the same run;
* ``smo kkt unpolished``, ``smo gap unpolished``: ``smo kkt`` and ``smo gap`` with
  ``polish=False``, SMO's own tail where the default polishes the free variables after a KKT
  stage (:mod:`solvers.smo.polish`), in the same run;
* ``LIBSVM``: scikit-learn's ``SVC`` (LIBSVM 3.x inside), ``tol=1e-3``, shrinking on, in this
  process;
* ``oneDAL``: scikit-learn-intelex's ``SVC`` (oneDAL's Thunder-style solver, threaded), same
  parameters, in a subprocess of the interpreter ``--onedal-python`` (default
  ``$SVMSVC_ONEDAL_PYTHON``; an environment of its own: ``python -m venv DIR &&
  DIR/bin/pip install scikit-learn-intelex``), which reads the scaled problem from a
  temporary ``.npz`` and times only ``fit``.  Without such an interpreter the column is left
  out and the output says so.

Each (problem, C): ``smo`` compiles on 300 of its rows first (discarded), then ``repeats``
rounds with the runners' order rotating; the median wall-clock time of ``fit`` is reported
beside its CPU time (the process's, oneDAL's subprocess's own; on a loaded machine a threaded
library's wall time moves most), the held-out accuracy and the number of support vectors.
The ratios are ``smo kkt`` and ``smo gap`` over the faster anchor.  Load averages at start
and end are recorded: the machine is shared and timings move with it.

Writes ``smo_anchors.json`` and ``smo_anchors.md`` to ``--out`` (default
bench/results/smo_anchors) and prints the Markdown.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.svm import SVC

import solvers
from bench.bench_smo import PROBLEMS as SMO_PROBLEMS
from bench.bench_smo import _load, _scaled
from bench.commands import Command, c_values, option, out, problems, repeats
from bench.harness import machine_description
from bench.interpreter import interpreter, run_worker, save_problem
from solvers.core.kernels import scale_gamma

CACHE_MB = 256.0
PROBLEMS = {  # name: (train file, test file, n_features)
    "dna": ("dna.scale", "dna.scale.t", 180),
    "letter": ("letter.scale", "letter.scale.t", 16),
    "svmguide1": ("svmguide1", "svmguide1.t", 4),
    "a9a": ("a9a", "a9a.t", 123),
}
assert all(SMO_PROBLEMS[k][0] == v[0] for k, v in PROBLEMS.items() if k in SMO_PROBLEMS)

# Runs inside the oneDAL environment: argv = .npz path, C, gamma, cache MB; prints
# {"seconds", "cpu_seconds", "accuracy", "n_support"}.
_WORKER = r"""
import json, sys, time
import numpy as np, scipy.sparse as sp
from sklearnex.svm import SVC
path, C, gamma, cache = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
z = np.load(path)
X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
Xt = sp.csr_matrix((z["t_data"], z["t_indices"], z["t_indptr"]), shape=tuple(z["t_shape"]))
svc = SVC(C=C, kernel="rbf", gamma=gamma, tol=1e-3, cache_size=cache)
start, cpu = time.perf_counter(), time.process_time()
svc.fit(X, z["y"])
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu,
                  "accuracy": float(np.mean(svc.predict(Xt) == z["t_y"])),
                  "n_support": int(np.sum(svc.n_support_))}))
"""


def _timed(fit):
    start, cpu = time.perf_counter(), time.process_time()
    fitted = fit()
    return fitted, time.perf_counter() - start, time.process_time() - cpu


def run_smo(train, test, C, gamma, **params):
    params = {"cache_mb": CACHE_MB, **params}
    result, seconds, cpu = _timed(lambda: solvers.train(
        train, solver="smo", C=C, kernel="rbf", gamma=gamma, **params))
    return {"seconds": seconds, "cpu_seconds": cpu,
            "accuracy": float(np.mean(result.model.predict(test.X) == test.y)),
            "n_support": int(result.model.n_support),
            "iterations": sum(s.extras["smo_iterations"] for s in result.subproblems),
            **_polish_counters(result.subproblems)}


def _polish_counters(subproblems) -> dict:
    """The polishing's counters summed over the binary problems (none when it was off)."""
    extras = [s.extras for s in subproblems if "polish_calls" in s.extras]
    if not extras:
        return {}
    return {"polish_calls": sum(e["polish_calls"] for e in extras),
            "polish_solves": sum(e["polish_solves"] for e in extras),
            "polish_seconds": sum(e["polish_seconds"] for e in extras),
            "polish_free_largest": max(e["polish_free"] for e in extras)}


def run_libsvm(train, test, C, gamma):
    svc, seconds, cpu = _timed(lambda: SVC(C=C, kernel="rbf", gamma=gamma, tol=1e-3,
                                           cache_size=CACHE_MB).fit(train.X, train.y))
    return {"seconds": seconds, "cpu_seconds": cpu,
            "accuracy": float(np.mean(svc.predict(test.X) == test.y)),
            "n_support": int(np.sum(svc.n_support_)),
            "iterations": int(np.sum(svc.n_iter_))}


def run_onedal(python: str, train, test, C, gamma, npz: Path):
    return run_worker(python, _WORKER, npz, repr(C), repr(gamma), repr(CACHE_MB))[-1]


RUNNERS = {  # (train, test, C, gamma, npz) -> measures; oneDAL's takes its interpreter first
    "smo kkt": lambda tr, te, C, g, _: run_smo(tr, te, C, g, stop_rule="kkt", kkt_tol=1e-3),
    "smo gap": lambda tr, te, C, g, _: run_smo(tr, te, C, g),
    "smo kkt pairs": lambda tr, te, C, g, _: run_smo(tr, te, C, g, stop_rule="kkt",
                                                     kkt_tol=1e-3, working_set="pair"),
    "smo kkt unpolished": lambda tr, te, C, g, _: run_smo(tr, te, C, g, stop_rule="kkt",
                                                          kkt_tol=1e-3, polish=False),
    "smo gap unpolished": lambda tr, te, C, g, _: run_smo(tr, te, C, g, polish=False),
    "LIBSVM": lambda tr, te, C, g, _: run_libsvm(tr, te, C, g),
    "oneDAL": run_onedal,
}


def _onedal_python(args) -> str | None:
    return interpreter(args.onedal_python, "SVMSVC_ONEDAL_PYTHON")


def run_command(args) -> int:
    machine = machine_description()
    python = _onedal_python(args)
    names = args.problems.split(",")
    Cs = [float(c) for c in args.Cs.split(",")]
    chosen = args.runners.split(",") if args.runners else list(RUNNERS)
    if "smo kkt" not in chosen or not {"LIBSVM", "oneDAL"} & set(chosen) or \
            not set(chosen) <= set(RUNNERS):
        raise SystemExit(f"--runners: 'smo kkt' and an anchor of {sorted(RUNNERS)}")
    unknown = [n for n in names if n not in PROBLEMS]
    if unknown:
        raise SystemExit(f"unknown problems {unknown}; known: {sorted(PROBLEMS)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            train, test = problem(name)
            gamma = scale_gamma(train.X)
            npz = Path(tmp) / f"{name}.npz"
            save_problem(npz, train, test)
            _compile(train, test, gamma)
            for C in Cs:
                case = (train, test, C, gamma, npz)
                runners = {r: run for r, run in RUNNERS.items()
                           if r != "oneDAL" and r in chosen}
                if python is not None and "oneDAL" in chosen:
                    runners["oneDAL"] = lambda *c: run_onedal(python, *c)
                order = list(runners)
                results = {r: [] for r in order}
                for repeat in range(args.repeats):
                    for r in order[repeat % len(order):] + order[:repeat % len(order)]:
                        results[r].append(runners[r](*case))
                        print(name, C, r, f"{results[r][-1]['seconds']:.2f} s", flush=True)
                for r, runs in results.items():
                    rows.append({"problem": name, "C": C, "rows": train.n_samples,
                                 "runner": r, "gamma": gamma,
                                 "seconds": statistics.median(x["seconds"] for x in runs),
                                 "cpu_seconds": statistics.median(x["cpu_seconds"]
                                                                  for x in runs),
                                 "times": [x["seconds"] for x in runs],
                                 **{k: v for k, v in runs[-1].items()
                                    if k not in ("seconds", "cpu_seconds")}})
    machine["load_average_at_end"] = os.getloadavg()[0]
    return publish(args, machine, rows, python)


def _compile(train, test, gamma) -> None:
    """Numba's compilation, before any timed run, on 300 rows of the problem itself (the
    kernel rows' sparse or dense form follows its density) with both working-set schemes: the
    sets of many variables are what ``working_set='auto'`` takes from 10,000 rows on, so a
    small problem alone left their compilation inside a9a's first timed run (17.6 s against
    4.5 s, cold cache, 2026-12-07)."""
    rows = np.sort(np.random.default_rng(0).permutation(train.n_samples)[:300])
    for working_set in ("pair", 16):
        run_smo(train.subset(rows), test, 1.0, gamma, stop_rule="kkt", kkt_tol=1e-3,
                working_set=working_set)
        # the certified gap with polishing, on a cache of 20 rows: the free variables' block
        # computed over their own rows, the gradient from rows loaded in blocks
        run_smo(train.subset(rows), test, 10.0, gamma, working_set=working_set,
                cache_mb=20 * 8 * 300 / 2**20)


def problem(name: str):
    file, test_file, d = PROBLEMS[name]
    return _scaled(_load(file, d), _load(test_file, d))


def publish(args, machine: dict, rows: list[dict], python: str | None) -> int:
    """The table, the ratios ``smo kkt`` / faster anchor with their geometric mean, printed
    and written to ``args.out``."""
    seconds = {(r["problem"], r["C"], r["runner"]): r["seconds"] for r in rows}
    cases = list(dict.fromkeys((r["problem"], r["C"]) for r in rows))
    anchors = [a for a in ("LIBSVM", "oneDAL") if any(r["runner"] == a for r in rows)]
    def over_anchor(runner):
        """{case: runner's time over the faster anchor's}, their geometric mean."""
        found = {}
        for p, C in cases:
            if (p, C, runner) in seconds:
                faster = min(seconds[p, C, a] for a in anchors)
                found[f"{p} C={C:g}"] = seconds[p, C, runner] / faster
        mean = math.exp(statistics.mean(math.log(v) for v in found.values())) \
            if found else math.nan
        return found, mean

    ratios, geomean = over_anchor("smo kkt")
    gap_ratios, gap_geomean = over_anchor("smo gap")
    lines = [f"Machine: {machine}", ""]
    if python is None:
        lines += ["oneDAL: no interpreter given (--onedal-python / SVMSVC_ONEDAL_PYTHON); "
                  "the column is left out.", ""]
    lines += ["| problem | C | rows | runner | median s | CPU s | test acc. | SVs | iterations |",
              "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['problem']} | {r['C']:g} | {r['rows']} | {r['runner']} | "
              f"{r['seconds']:.3f} | {r['cpu_seconds']:.3f} | {100 * r['accuracy']:.2f}% | "
              f"{r['n_support']} | {r.get('iterations', '')} |" for r in rows]
    lines += ["", "smo kkt / faster anchor: "
              + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items())
              + f"; geometric mean {geomean:.2f}"]
    if gap_ratios:
        lines += ["", "smo gap / faster anchor: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in gap_ratios.items())
                  + f"; geometric mean {gap_geomean:.2f}"]
    text = "\n".join(lines)
    target = Path(args.out)
    target.mkdir(parents=True, exist_ok=True)
    (target / "smo_anchors.json").write_text(json.dumps(
        {"machine": machine, "rows": rows, "ratios": ratios, "geomean": geomean,
         "gap_ratios": gap_ratios, "gap_geomean": gap_geomean}, indent=1))
    (target / "smo_anchors.md").write_text(text + "\n")
    print(text)
    return 0


COMMAND = Command(
    "smo_anchors", "smo against LIBSVM and oneDAL (scikit-learn-intelex) on whole files, "
    "C = 1 and 10", run_command, description=__doc__,
    options=(
        problems("dna,letter,svmguide1,a9a"),
        c_values("1,10"),
        repeats(3),
        option("--onedal-python", default=None,
               help="an interpreter with scikit-learn-intelex (default: "
                    "$SVMSVC_ONEDAL_PYTHON)"),
        option("--runners", default=None,
               help="comma-separated runners (default: all); 'smo kkt' and an anchor "
                    "at least"),
        out(Path(__file__).parent / "results" / "smo_anchors")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["smo_anchors", *sys.argv[1:]]))
