"""The ``svmsvc`` command line.

Library commands (``info``, ``train``, ``cv``, ``predict``, ``export``, ``solvers``) need only
the solver library; the service commands import the web stack when they run.  Every failure
the user can cause is one line on stderr (``svmsvc: error: ...``) and exit status 2; never a
traceback.

One module per command group, each adding its parsers (``add_*_command``, whose
``handler`` runs the command): :mod:`app.cli.info` (``info``, ``solvers``),
:mod:`app.cli.train` (``train``, with LIBLINEAR's options from :mod:`app.cli.liblinear`),
:mod:`app.cli.cv`, :mod:`app.cli.models` (``predict``, ``export``),
:mod:`app.cli.registry` (``registry``: a client of a running service's model registry) and
:mod:`app.commands` (``serve``, ``migrate``); a solver's options come from its parameter
model (:mod:`app.cli.solver_options`), what the commands share from :mod:`app.cli.common`.
"""

from __future__ import annotations

import argparse
import os
import sys

from app.cli.common import EXIT_USAGE, CLIError
from app.cli.cv import add_cv_command
from app.cli.info import add_info_command, add_solvers_command
from app.cli.liblinear import liblinear_argv, liblinear_type
from app.cli.models import add_export_command, add_predict_command
from app.cli.registry import add_registry_command
from app.cli.train import add_train_command

#: The status of a command whose reader closed the pipe (128 + SIGPIPE, as a shell reports it).
EXIT_BROKEN_PIPE = 141


def build_parser(solver_spec=None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svmsvc", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"svmsvc {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    add_info_command(commands)
    add_train_command(commands, solver_spec)
    add_cv_command(commands, solver_spec)
    add_predict_command(commands)
    add_export_command(commands)
    add_solvers_command(commands)
    add_registry_command(commands)

    for add_service_command in SERVICE_COMMANDS:
        add_service_command(commands)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("svmsvc")
    except PackageNotFoundError:
        return "0.1.0 (source tree)"


# Service subcommands (serve, migrate) register here: each is a function taking the
# subparsers object and adding a parser whose defaults include ``handler=callable(args)``.
SERVICE_COMMANDS: list = []


def _add_serve_command(commands) -> None:
    from app.commands import add_serve_command

    add_serve_command(commands)


def _add_migrate_command(commands) -> None:
    from app.commands import add_migrate_command

    add_migrate_command(commands)


SERVICE_COMMANDS += [_add_serve_command, _add_migrate_command]


def solver_spec_from_argv(argv: list[str]):
    """The solver named by ``--solver`` (or, for train, LIBLINEAR's ``-s``) in a train or cv
    command line, if any and known."""
    if not argv or argv[0] not in ("train", "cv"):
        return None
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--solver")
    if argv[0] == "train":
        pre.add_argument("-s", dest="ll_type")
    known, _ = pre.parse_known_args(argv[1:])
    import solvers

    ll_type = getattr(known, "ll_type", None)
    if ll_type is not None:
        try:
            number = int(ll_type)
        except ValueError:
            raise CLIError(f"-s {ll_type!r}: LIBLINEAR's solver type is a number") from None
        if known.solver is not None:
            raise CLIError("give LIBLINEAR's -s or --solver, not both")
        return solvers.get_solver(liblinear_type(number).solver)
    if known.solver is None:
        return solvers.get_solver("auto")

    return solvers.get_solver(known.solver)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("train", "cv"):
            argv = liblinear_argv(argv)
        spec = solver_spec_from_argv(argv)
        args = build_parser(spec).parse_args(argv)
        return args.handler(args)
    except BrokenPipeError:
        # the reader of our output closed it (`svmsvc export ... | head -3`): end quietly, as
        # the C tools do; stdout goes to /dev/null so the interpreter's final flush is silent
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (CLIError, ValueError, OSError) as exc:
        # SVMLightFormatError, InvalidParametersError, UnknownSolverError, ModelFormatError
        # are ValueErrors with messages written for the user.
        print(f"svmsvc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("svmsvc: interrupted", file=sys.stderr)
        return 130
