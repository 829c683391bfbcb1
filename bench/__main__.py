"""``python -m bench``: the benchmark harness, one command line (:mod:`bench.cli`).

    python -m bench list                                  # the suites and what each measures
    python -m bench run --suite NAME [--out FILE.json] [-- ARGS]   # measure, write a record
    python -m bench report [--readme bench/README.md]     # the results section from the records
    python -m bench references [--regenerate [--only TEXT]]  # show / recompute optima
    python -m bench STUDY [OPTIONS]                       # one study: mfn, dual_cd, service, ...
    python -m bench STUDY --help                          # its options

Records go to ``bench/results/NAME-DATE.json`` (committed: the history is the set of records);
``report`` rewrites the results section of ``bench/README.md`` from them.  The suites are
those of :mod:`bench.suites`; the sub-commands those :data:`bench.commands.MODULES` names.
"""

import sys

from bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
