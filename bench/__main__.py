"""``python -m bench``: the benchmark harness.

    python -m bench list                                  # the suites and what each measures
    python -m bench run --suite NAME [--out FILE.json] [-- ARGS]   # measure, write a record
    python -m bench report [--readme bench/README.md]     # the results section from the records
    python -m bench references [--regenerate [--only TEXT]]  # show / recompute optima

Records go to ``bench/results/NAME-DATE.json`` (committed: the history is the set of records);
``report`` rewrites the results section of ``bench/README.md`` from them.  The suites are
those of :mod:`bench.suites`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.paths import RESULTS_DIR
from bench.references import REFERENCE_PROBLEMS, load_references, regenerate
from bench.report import update_readme
from bench.suites import SUITES, run_suite


def cmd_references(args) -> int:
    if args.regenerate:
        chosen = [p for p in REFERENCE_PROBLEMS if args.only is None or args.only in p.key]
        regenerate(chosen)
        return 0
    for key, entry in sorted(load_references().items()):
        print(f"{key:50s} {entry['objective']:.15g}  {entry['method']}")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:  # arguments for a script suite's own command line
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the suites")
    run = commands.add_parser("run", help="run a benchmark suite, write its JSON record")
    run.add_argument("--suite", choices=list(SUITES), default="quick")
    run.add_argument("--out", type=Path, default=None,
                     help="the record's path (default bench/results/SUITE-DATE.json)")
    report = commands.add_parser("report", help="regenerate the README's results section")
    report.add_argument("--readme", type=Path, default=Path(__file__).with_name("README.md"))
    report.add_argument("--results", type=Path, default=RESULTS_DIR)
    references = commands.add_parser("references", help="reference optima")
    references.add_argument("--regenerate", action="store_true",
                            help="recompute the reference optima (minutes)")
    references.add_argument("--only", help="with --regenerate: keys containing this text")
    args = parser.parse_args(argv)
    if args.command == "list":
        for name, suite in SUITES.items():
            print(f"{name:15s} {suite.description}")
        return 0
    if args.command == "run":
        run_suite(args.suite, extra, args.out)
        return 0
    if args.command == "report":
        changed = update_readme(args.readme, args.results)
        print(f"{args.readme}: {'rewritten' if changed else 'unchanged'}")
        return 0
    return cmd_references(args)


if __name__ == "__main__":
    sys.exit(main())
