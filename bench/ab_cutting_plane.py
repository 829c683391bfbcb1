"""Before/after of the cutting-plane family, side by side with LIBLINEAR, in one run.

    python -m bench ab_cutting_plane --before DIR --after DIR [--rounds R] [--cases a,b]
                                     [--out FILE]
    python -m bench ab_cutting_plane --summarize FILE.json

``DIR`` is a source tree of the project (e.g. ``git archive <commit> | tar -x -C DIR``); like
a checkout it reads the datasets it carries in ``DIR/data`` (a tree older than the committed
data read ``DIR/../shared/data``: link ``../shared`` beside it).  For
every round and case the parent starts one child process per tree, alternating which goes
first, with ``PYTHONPATH`` set to that tree; the child (``bench/ab_cutting_plane_child.py
CASE``, run as a file) imports the tree's ``solvers``, runs our methods and LIBLINEAR in the
same process, and prints JSON.
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

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.commands import Command, option, out

GAPS = (1e-2, 1e-3, 1e-6)
CHILD = Path(__file__).resolve().with_name("ab_cutting_plane_child.py")
DEFAULT_CASES = ("ijcnn1:0.01", "ijcnn1:1", "mushrooms:0.01", "mushrooms:1", "a9a:0.01",
                 "a9a:1", "w8a:0.01", "w8a:1", "a9a:100", "cs-dna.scale:1", "cs-letter.scale:1")


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


def run_command(args) -> int:
    if args.summarize:
        from bench.references import load_references

        print(summarize(json.loads(Path(args.summarize).read_text()), load_references()))
        return 0
    if not (args.before and args.after):
        raise SystemExit("python -m bench ab_cutting_plane: error: give --before and --after "
                         "(source trees), or --summarize")
    trees = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    for name, tree in trees.items():
        # each tree reads the datasets it carries (bench/paths.py), an older one ../shared/data
        if not (tree / "solvers").is_dir():
            raise SystemExit(f"python -m bench ab_cutting_plane: error: --{name} {tree}: not a "
                             "source tree of the project (no solvers/)")
        if not ((tree / "data" / "SHA256SUMS").is_file()
                or (tree.parent / "shared" / "data").is_dir()):
            raise SystemExit(f"python -m bench ab_cutting_plane: error: --{name} {tree}: it "
                             "carries no data/ and has no ../shared/data beside it; link one: "
                             f"ln -s /path/to/shared {tree.parent / 'shared'}")
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
                proc = subprocess.run([sys.executable, str(CHILD), case], env=env,
                                      capture_output=True,
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


COMMAND = Command(
    "ab_cutting_plane", "the cutting-plane family before and after a change, interleaved",
    run_command, description=__doc__, options=(
        option("--before", help="a source tree of the project"),
        option("--after", help="a source tree of the project"),
        option("--rounds", type=int, default=3),
        option("--cases", default=",".join(DEFAULT_CASES)),
        out(None, help="the summary (FILE, or FILE.md when FILE is .json) and the rounds so "
            "far (FILE.json)"),
        option("--summarize", help="a JSON file of an earlier (partial) run")))


if __name__ == "__main__":
    from bench import cli

    sys.exit(cli.main(["ab_cutting_plane", *sys.argv[1:]]))
