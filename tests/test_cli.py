"""The svmsvc command line, run as a user would (a subprocess) and in-process."""

from __future__ import annotations

import enum
import json
import subprocess
import sys
import types
import typing

import pydantic
import pytest
from shared_data import data_path

from app.cli import build_parser, main, solver_params
from solvers.registry import get_solver, list_solvers


def _svmsvc(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True,
                          text=True, timeout=300, **kwargs)


def test_train_predict_export_round_trip(tmp_path):
    train_file = data_path("heart_scale")
    model = tmp_path / "model.npz"
    done = _svmsvc("train", str(train_file), "--solver", "mfn", "--C", "2",
                   "--model-out", str(model))
    assert done.returncode == 0, done.stderr
    assert "iter    1" in done.stderr and "objective" in done.stderr
    predicted = tmp_path / "labels.txt"
    done = _svmsvc("predict", str(model), str(train_file), "--output", str(predicted))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("accuracy: ")
    labels = predicted.read_text().split()
    assert len(labels) == 270 and set(labels) <= {"-1", "1"}
    done = _svmsvc("export", str(model))
    assert done.returncode == 0 and done.stdout.startswith("solver_type L2R_L2LOSS_SVC")


def test_info_json(capsys):
    assert main(["info", str(data_path("heart_scale")), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["n_samples"] == 270 and stats["n_features"] == 13
    assert stats["class_counts"] == {"-1": 150, "1": 120}


@pytest.mark.parametrize("args, message", [
    (["train", "MISSING", "--solver", "mfn"], "MISSING: no such file"),
    (["train", "{heart}", "--solver", "nope"], "unknown solver 'nope'"),
    (["train", "{heart}", "--solver", "mfn", "--C", "-3"], "C: Input should be greater than 0"),
    (["predict", "{heart}", "{heart}"], "not a model archive"),
    (["info", "{bad}"], "line 2"),
])
def test_errors_are_one_line_with_status_2(tmp_path, capsys, args, message):
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:0.5\n-1 2:x\n")
    args = [a.format(heart=data_path("heart_scale"), bad=bad) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("svmsvc: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_solver_options_come_from_the_parameter_model(capsys):
    with pytest.raises(SystemExit):
        main(["train", "x", "--solver", "mfn", "--help"])
    out = capsys.readouterr().out
    for option in ("--C", "--loss", "--epsilon", "--first-round-epsilon", "--max-iter"):
        assert option in out


@pytest.mark.parametrize("solver", [spec.name for spec in list_solvers()])
def test_every_solvers_help_renders(solver, capsys):
    """argparse %-formats help text: a description with a '%' in it must still print."""
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "x", "--solver", solver, "--help"])
    assert exit_info.value.code == 0
    assert f"parameters of solver '{solver}'" in capsys.readouterr().out


def test_solvers_listing(capsys):
    assert main(["solvers"]) == 0
    out = capsys.readouterr().out
    assert "mfn:" in out
    assert "warm-started C paths: binary, ovr, crammer_singer" in out
    assert "warm-started C paths: none" in out  # auto: a search resolves it to one solver


# -- every option of every solver, from the command line to the validated parameters ------------
#
# The values come from each field's annotation, so a new solver or field is covered without
# touching this file: every member of a union (each literal choice, a number, none), both
# booleans, and a number or an integer other than the default that the parameter model accepts.

_NUMBERS = (0.5, 0.25, 1.5, 2.0, 3.0, 7.5, 0.0, -1.5, 1e-3, 1e5)
_INTEGERS = (2, 3, 1, 5, 100, 0, -1)

# Values valid only together with another field's: (solver, field, value) -> other fields.
_TOGETHER = {
    ("relaxed_lssvm", "loss", "squared_hinge"): {"variant": "sesquismo"},
    ("auto", "multiclass", "crammer_singer"): {"loss": "hinge"},
    ("dual_cd", "multiclass", "crammer_singer"): {"loss": "hinge"},
}
# Fields whose only valid value is the default: another value must reach the model (which
# rejects it), proving the option passed it on.
_ONLY_DEFAULT = {("relaxed_lssvm", "bias_scale"): "set A instead of bias_scale"}


def _members(annotation) -> list[tuple]:
    """The values to try for each member of ``annotation``, one tuple per member (a literal
    choice or an enum member is a member of its own)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    if origin is typing.Literal:
        return [(choice,) for choice in typing.get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [(member,) for member in annotation]
    if annotation is bool:
        return [(True,), (False,)]
    if annotation is int:
        return [_INTEGERS]
    if annotation is float:
        return [_NUMBERS]
    if annotation is type(None):
        return [(None,)]
    raise AssertionError(f"no test values for a parameter of type {annotation!r}")


def _as_text(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    return repr(value) if isinstance(value, float) else str(value)


def _valid(spec, values: dict) -> bool:
    try:
        spec.params_model.model_validate({"solver": spec.name, **values})
    except pydantic.ValidationError:
        return False
    return True


def _fields(spec):
    """(name, field) of every parameter the command line sets for ``spec``."""
    return [(name, field) for name, field in spec.params_model.model_fields.items()
            if name != "solver" and (spec.name, name) not in _ONLY_DEFAULT]


def _field_values(spec, name: str, field) -> list[tuple]:
    """(value, other fields) for each member of the field's annotation; for a number, the
    first candidate other than the default that the model accepts."""
    values = []
    for candidates in _members(field.annotation):
        others = [v for v in candidates if v != field.default or len(candidates) == 1]
        chosen = [v for v in others
                  if _valid(spec, {name: v, **_TOGETHER.get((spec.name, name, v), {})})]
        assert chosen, f"{spec.name}.{name}: no valid value among {candidates}"
        values.append((chosen[0], _TOGETHER.get((spec.name, name, chosen[0]), {})))
    return values


def _option_cases():
    return [pytest.param(spec, name, value, others, id=f"{spec.name}-{name}-{_as_text(value)}")
            for spec in list_solvers() for name, field in _fields(spec)
            for value, others in _field_values(spec, name, field)]


def _train_args(spec, values: dict) -> list[str]:
    args = ["train", "FILE", "--solver", spec.name]
    for name, value in values.items():
        args += ["--" + name.replace("_", "-"), _as_text(value)]
    return args


@pytest.mark.parametrize("spec, name, value, others", _option_cases())
def test_every_option_reaches_the_parameters(spec, name, value, others):
    args = build_parser(spec).parse_args(_train_args(spec, {name: value, **others}))
    params = solver_params(spec, args)
    got = getattr(params, name)
    assert got == value and type(got) is type(value), f"--{name} {value!r} became {got!r}"
    assert params == spec.params_model(solver=spec.name, **{name: value, **others})


@pytest.mark.parametrize("solver, name", sorted(_ONLY_DEFAULT))
def test_a_field_with_one_valid_value_passes_other_values_on(solver, name):
    spec = get_solver(solver)
    field = spec.params_model.model_fields[name]
    value = next(v for m in _members(field.annotation) for v in m if v != field.default)
    args = build_parser(spec).parse_args(_train_args(spec, {name: value}))
    with pytest.raises(ValueError, match=_ONLY_DEFAULT[(solver, name)]):
        solver_params(spec, args)


@pytest.mark.parametrize("solver", [spec.name for spec in list_solvers()])
def test_every_option_is_in_the_help_with_its_allowed_values(solver, capsys):
    spec = get_solver(solver)
    with pytest.raises(SystemExit):
        main(["train", "x", "--solver", solver, "--help"])
    out = capsys.readouterr().out
    blocks = {block.split()[0]: " ".join(block.split())
              for block in ("\n" + out.split(f"parameters of solver '{solver}':")[1])
              .split("\n  --")[1:]}
    for name, field in spec.params_model.model_fields.items():
        if name == "solver":
            continue
        text = blocks[name.replace("_", "-")]
        assert "Allowed: " in text and "(default: " in text, text
        for member in _members(field.annotation):
            if member is _NUMBERS or member is _INTEGERS:
                assert ("a number" if member is _NUMBERS else "an integer") in text, text
            else:
                assert all(_as_text(v) in text for v in member), (member, text)


@pytest.mark.parametrize("args, message", [
    (["--solver", "mfn", "--preconditioning", "fast"], "expected a number >= 0 or auto"),
    (["--solver", "mfn", "--max-iter", "2.5"], "expected an integer >= 1"),
    (["--solver", "mfn", "--loss", "lp"], "expected squared_hinge, modified_huber or hinge"),
    (["--solver", "relaxed_lssvm", "--sumt", "maybe"], "expected true or false"),
])
def test_a_value_of_no_allowed_kind_is_refused_naming_the_allowed(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "x", *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_train_with_a_literal_member_of_a_numeric_union():
    """The option that was refused: ``--preconditioning auto``, whose field is a number or
    'auto'."""
    heart = str(data_path("heart_scale"))
    assert main(["train", heart, "--solver", "mfn", "--preconditioning", "auto", "--quiet"]) == 0
    assert main(["train", heart, "--solver", "mfn", "--preconditioning", "0", "--quiet"]) == 0


# -- svmsvc cv -----------------------------------------------------------------------------------


def test_grids():
    from app.cli import CLIError, parse_grid

    assert parse_grid("2^-2:2^1") == [0.25, 0.5, 1.0, 2.0]
    assert parse_grid("0.1, 2^3,5") == [0.1, 8.0, 5.0]
    for bad in ("1:2", "2^3:2^1", "0,1", "x", ""):
        with pytest.raises(CLIError):
            parse_grid(bad)


def test_cv_prints_the_table_refits_and_plots(tmp_path, capsys):
    heart = str(data_path("heart_scale"))
    model = tmp_path / "best.npz"
    plot = tmp_path / "cv.png"
    status = main(["cv", heart, "--solver", "mfn", "--C", "2^-2:2^0", "--folds", "3",
                   "--epsilon", "1e-8", "--model-out", str(model), "--plot", str(plot)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    lines = captured.out.splitlines()
    assert lines[0].split()[:2] == ["C", "accuracy"]
    assert [float(line.split()[0]) for line in lines[1:4]] == [0.25, 0.5, 1.0]
    assert "warm-started" in lines[-1] and "best C =" in lines[-1]
    assert "certified relative gap of 0.001 (tol)" in lines[-1]
    assert "3/9" in captured.err and "9/9" in captured.err  # the progress bar
    assert model.stat().st_size > 0 and plot.stat().st_size > 0
    assert main(["predict", str(model), heart]) == 0
    # --fit-gap 0: every fit to mfn's own (exact) rule
    assert main(["cv", heart, "--solver", "mfn", "--C", "1", "--folds", "3", "--quiet",
                 "--fit-gap", "0"]) == 0
    assert "each fit to the solver's own rule" in capsys.readouterr().out
    # --jobs 1: the folds one after another (the line then says nothing of folds at once)
    assert main(["cv", heart, "--solver", "mfn", "--C", "1", "--folds", "3", "--quiet",
                 "--jobs", "1"]) == 0
    assert "at once" not in capsys.readouterr().out
    # --cold: every point from scratch, and the last line says so
    assert main(["cv", heart, "--solver", "cutting_plane", "--C", "0.5,1", "--folds", "3",
                 "--quiet", "--cold"]) == 0
    assert "(3-fold, cold C path" in capsys.readouterr().out
    assert main(["cv", heart, "--solver", "mfn", "--C", "1", "--jobs", "0"]) == 2
    assert "n_jobs must be at least 1" in capsys.readouterr().err


def test_cv_refuses_a_gamma_grid_for_a_linear_solver(capsys):
    heart = str(data_path("heart_scale"))
    assert main(["cv", heart, "--solver", "mfn", "--gamma", "1"]) == 2
    assert "no kernel gamma" in capsys.readouterr().err
