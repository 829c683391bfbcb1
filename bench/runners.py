"""The runners a benchmark suite compares: our solvers and every anchor."""

from __future__ import annotations

import solvers
from bench.anchors import Liblinear, ProjectSolver, SklearnLinearKernelSVC, SklearnLinearSVC
from bench.liblinear_multicore import LiblinearMulticore

# Settings a registered solver runs with in the harness (default parameters otherwise): alm's
# default limit (20000 iterations) takes many minutes where it converges slowly (w8a).
HARNESS_SETTINGS = {"alm": {"max_iter": 1000}}


def default_runners() -> list:
    """Every registered linear solver (those that solve the problem of ``docs/design.md`` through
    ``train``'s linear path; kernel solvers solve other problems), and the anchors: LIBLINEAR
    official and multi-core (2 threads), scikit-learn."""
    ours = [ProjectSolver(spec.name, **HARNESS_SETTINGS.get(spec.name, {}))
            for spec in solvers.list_solvers() if spec.run is not None]
    return ours + [Liblinear(1), Liblinear(2), Liblinear(3), LiblinearMulticore(1),
                   LiblinearMulticore(2), LiblinearMulticore(3), SklearnLinearSVC(),
                   SklearnLinearKernelSVC()]
