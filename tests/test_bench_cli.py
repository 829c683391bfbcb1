"""The bench's one command line: every study a sub-command of ``python -m bench``, declared
by its module, parsed by :mod:`bench.cli` alone."""

import ast
import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from bench import cli
from bench.commands import MODULES

BENCH = Path(cli.__file__).parent


def _scripts() -> list[str]:
    """The modules with a command line of their own: those run as ``__main__``, but for the
    harness itself and the child processes a study starts (a study's internals, not studies:
    ``ab_cutting_plane_child``, and ``prober``, the uploads study's prober process)."""
    return sorted(f"bench.{path.stem}" for path in BENCH.glob("*.py")
                  if path.stem != "__main__" and '__name__ == "__main__"' in path.read_text()
                  and path.stem not in ("cli", "ab_cutting_plane_child", "prober"))


def test_every_script_is_a_sub_command_of_the_harness():
    assert set(_scripts()) <= set(MODULES.values()), \
        sorted(set(_scripts()) - set(MODULES.values()))


@pytest.mark.parametrize("name", sorted(MODULES))
def test_each_sub_command_parses_help_through_the_one_harness(name):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as done:
        cli.main([name, "--help"])
    assert done.value.code == 0
    assert printed.getvalue().startswith(f"usage: python -m bench {name}")
    assert cli.declared(name).name == name


def test_a_study_parses_its_declared_options_and_the_shared_ones():
    parsed = cli.parser(["dual_cd"]).parse_args(
        ["dual_cd", "--datasets", "a9a", "--Cs", "1", "--repeats", "2", "--out", "x"])
    assert (parsed.problems, parsed.Cs, parsed.eps, parsed.repeats, parsed.out) == \
        ("a9a", "1", "0.1,0.01", 2, Path("x"))
    parsed = cli.parser(["service"]).parse_args(["service", "predict", "--rounds", "1"])
    assert (parsed.command, parsed.rounds, parsed.database_url) == ("predict", 1, None)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add((node.module or "").split(".")[0])
    return found


def test_no_bench_module_but_the_harness_command_line_builds_a_parser():
    offenders = sorted(path.name for path in BENCH.rglob("*.py")
                       if not any(part.startswith(".") for part in path.relative_to(BENCH).parts)
                       and path.name != "cli.py" and "argparse" in _imports(path))
    assert not offenders, offenders


def test_a_study_run_as_its_module_is_the_harness_sub_command():
    """``python -m bench.bench_parser ...`` (the older spelling) means
    ``python -m bench parser ...``."""
    done = subprocess.run([sys.executable, "-m", "bench.bench_parser", "--help"],
                          capture_output=True, text=True, timeout=300,
                          cwd=BENCH.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m bench parser")
