"""What every command of ``svmsvc`` shares: the one-line error, the exit statuses, reading
an SVMlight file, and numbers and grids written ``2^k``."""

from __future__ import annotations

import argparse
from pathlib import Path

EXIT_USAGE = 2
EXIT_SOLVER_FAILED = 1


class CLIError(Exception):
    """An error to report in one line."""


def read_dataset(path: str, n_features: int | None = None, zero_based: bool = False):
    """The dataset of an SVMlight file (a missing file is one line, not a traceback)."""
    import solvers

    if not Path(path).exists():
        raise CLIError(f"{path}: no such file")
    return solvers.read_svmlight(path, n_features=n_features, zero_based=zero_based)


def existing_file(path: str) -> str:
    """``path``, if there is such a file."""
    if not Path(path).exists():
        raise CLIError(f"{path}: no such file")
    return path


def parse_number(text: str) -> float:
    """A number, or a power of two written ``2^k``."""
    item = text.strip()
    try:
        return 2.0 ** float(item[2:]) if item.startswith("2^") else float(item)
    except ValueError:
        raise CLIError(f"expected a number or 2^k, got {text!r}") from None


def parse_grid(text: str) -> list[float]:
    """A grid of positive values: a comma-separated list whose items are numbers or powers of
    two written ``2^k``, or a range of powers of two ``2^a:2^b`` (every integer k from a to b).
    """
    def value(item: str) -> float:
        item = item.strip()
        if item.startswith("2^"):
            return 2.0 ** float(item[2:])
        return float(item)

    try:
        if ":" in text:
            low, high = text.split(":")
            if not (low.strip().startswith("2^") and high.strip().startswith("2^")):
                raise ValueError
            a, b = int(low.strip()[2:]), int(high.strip()[2:])
            if b < a:
                raise ValueError
            grid = [2.0 ** k for k in range(a, b + 1)]
        else:
            grid = [value(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise CLIError(f"cannot read the grid {text!r}: write numbers or 2^k separated by "
                       "commas, or a range 2^a:2^b") from None
    if not grid or min(grid) <= 0:
        raise CLIError(f"the grid {text!r} must hold positive values")
    return grid


def add_data_options(parser: argparse.ArgumentParser, widen: bool = True) -> None:
    """How to read the data file: its feature indices' base and (``widen``) a width."""
    if widen:
        parser.add_argument("--n-features", type=int, default=None,
                            help="widen the feature matrix to this many columns")
    parser.add_argument("--zero-based", action="store_true",
                        help="feature indices in the file start at 0")
