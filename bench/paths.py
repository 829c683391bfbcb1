"""Where the benchmarks and the tests find things: the one definition of the shared data path.

The real datasets live beside the checkout, in ``../shared/data`` (see its README); bench
scripts, the harness and the tests all read them from :data:`DATA_DIR`.  This module imports
nothing of the project, so the service's tests can use it without loading the library.
"""

from __future__ import annotations

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPOSITORY / "bench" / "results"


def shared_data_dir(repository: Path = REPOSITORY) -> Path:
    """The shared datasets of the checkout ``repository``: ``repository/../shared/data``."""
    return repository.parent / "shared" / "data"


DATA_DIR = shared_data_dir()
