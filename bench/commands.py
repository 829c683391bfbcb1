"""What a benchmark's command line is, declared once: the sub-commands of ``python -m bench``.

Every benchmark module declares a :class:`Command` (its name, help, options and the function
that runs it with the parsed arguments); :mod:`bench.cli`, the one module that builds a
parser, makes it a sub-command: ``python -m bench mfn --quick``.  The options every study
shares (problems, C values, tolerances, threads, repeats, output path, ``--quick``) are the
factories below: their flag, type and help are written here once, a study gives its default.

This module imports no parser (so that a benchmark module declaring its command needs none)
and no benchmark module (:data:`MODULES` names them; :mod:`bench.cli` imports the one asked
for, by name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Option:
    """One ``add_argument(*flags, **settings)`` of a parser."""

    flags: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)


def option(*flags: str, **settings: Any) -> Option:
    return Option(tuple(flags), settings)


@dataclass(frozen=True)
class Command:
    """A sub-command of ``python -m bench``: ``run(args)`` with the arguments parsed from
    ``options`` (and, with ``subcommands``, those of the one given, which ``args.command``
    names; a sub-command's ``run`` is not used: its parent's reads ``args.command``)."""

    name: str
    help: str
    run: Callable[[Any], int | None] | None = None
    options: tuple[Option, ...] = ()
    subcommands: tuple[Command, ...] = ()
    description: str | None = None


# The options shared by the studies: one definition each; a study passes its default (and,
# where its command line always called it so, the other flag it keeps answering to).

def quick(help: str = "a smaller, faster version of the study") -> Option:
    return option("--quick", action="store_true", help=help)


def repeats(default: int | None, help: str = "timed rounds (medians)") -> Option:
    return option("--repeats", type=int, default=default, help=help)


def out(default: str | Path | None,
        help: str = "where the results are written (a directory, or the JSON file)") -> Option:
    return option("--out", type=Path, default=None if default is None else Path(default),
                  help=help)


def problems(default: str | None, help: str = "comma-separated datasets",
             alias: str | None = None) -> Option:
    """``--problems`` (``alias``: the name a study's command line has always taken too)."""
    flags = ("--problems",) if alias is None else ("--problems", alias)
    return option(*flags, dest="problems", default=default, help=help)


def c_values(default: str, help: str = "comma-separated values of C") -> Option:
    return option("--Cs", default=default, help=help)


def tolerances(default: str, help: str = "comma-separated stopping tolerances") -> Option:
    return option("--eps", default=default, help=help)


def threads(help: str = "Numba threads (default: as configured)") -> Option:
    return option("--threads", type=int, default=None, help=help)


def database_url() -> Option:
    return option("--database-url", default=None,
                  help="the service's database (default: SQLite in a temporary directory)")


MODULES: dict[str, str] = {
    "list": "bench.suites",
    "run": "bench.suites",
    "report": "bench.report",
    "references": "bench.references",
    "ab_cutting_plane": "bench.ab_cutting_plane",
    "alm": "bench.bench_alm",
    "auto": "bench.bench_auto",
    "batch_predict": "bench.bench_batch_predict",
    "busy_process": "bench.bench_busy_process",
    "cutting_plane": "bench.bench_cutting_plane",
    "cv": "bench.bench_cv",
    "dask": "bench.bench_dask",
    "distributed": "bench.bench_distributed",
    "distributed_memory": "bench.bench_distributed_memory",
    "dual_cd": "bench.bench_dual_cd",
    "interior_point": "bench.bench_interior_point",
    "lowrank": "bench.bench_lowrank",
    "lssvm": "bench.bench_lssvm",
    "mfn": "bench.bench_mfn",
    "onnx": "bench.bench_onnx",
    "parser": "bench.bench_parser",
    "race": "bench.bench_race",
    "regression": "bench.bench_regression",
    "regression_stages": "bench.regression_stages",
    "service": "bench.bench_service",
    "smo": "bench.bench_smo",
    "smo_anchors": "bench.bench_smo_anchors",
    "smo_tasks": "bench.bench_smo_tasks",
}
"""Sub-command -> the module that declares it (as ``COMMAND``, or ``COMMANDS`` by name)."""
