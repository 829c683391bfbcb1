"""The one command line of the benchmarks: ``python -m bench COMMAND ...``.

The only module of the bench that builds a parser.  Its sub-commands are the
:class:`bench.commands.Command` declarations of the modules :data:`bench.commands.MODULES`
names: the harness's own (``list``, ``run``, ``report``, ``references``) and one per study
(``mfn``, ``dual_cd``, ``service``, ...).  A module is imported only when its command is the
one asked for (all of them for the overall ``--help``), so that ``python -m bench list`` does
not load every study's dependencies.

    python -m bench --help
    python -m bench mfn --help
    python -m bench mfn --quick --out /tmp/mfn
"""

from __future__ import annotations

import argparse
import importlib
import sys

from bench.commands import MODULES, Command


def declared(name: str) -> Command:
    """The command ``name`` as its module declares it."""
    module = importlib.import_module(MODULES[name])
    if hasattr(module, "COMMANDS"):
        return next(c for c in module.COMMANDS if c.name == name)
    return module.COMMAND


def _add(parsers, command: Command) -> argparse.ArgumentParser:
    parser = parsers.add_parser(command.name, help=command.help,
                                description=command.description or command.help,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for option in command.options:
        parser.add_argument(*option.flags, **option.settings)
    if command.subcommands:  # the command's run reads which one from args.command
        below = parser.add_subparsers(dest="command", required=True)
        for sub in command.subcommands:
            _add(below, sub)
    return parser


def parser(names=None) -> argparse.ArgumentParser:
    """The parser with the sub-commands ``names`` (default: every one)."""
    top = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    commands = top.add_subparsers(dest="name", required=True, metavar="COMMAND")
    for name in names or MODULES:
        command = declared(name)
        _add(commands, command).set_defaults(_command=command)
    return top


def main(argv=None) -> int:
    """Parse ``argv`` (default the process's) and run the command it names."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if argv[:1] == ["run"] and "--" in argv:  # a script suite's arguments, passed on as given
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    # the one module asked for; every module only for the overall help or an unknown name
    names = [argv[0]] if argv and argv[0] in MODULES else None
    args = parser(names).parse_args(argv)
    args.extra = extra
    return args._command.run(args) or 0


def run(name: str, argv) -> int:
    """Command ``name`` with ``argv`` (what a script suite runs)."""
    return main([name, *argv])


if __name__ == "__main__":
    sys.exit(main())
