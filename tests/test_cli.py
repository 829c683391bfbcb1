"""The svmsvc command line, run as a user would (a subprocess) and in-process."""

from __future__ import annotations

import enum
import json
import re
import subprocess
import sys
import types
import typing

import numpy as np
import pydantic
import pytest
from shared_data import data_path

import solvers
from app.cli import build_parser, main
from app.cli.solver_options import solver_params
from solvers.registry import get_solver, list_solvers


def _svmsvc(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True,
                          text=True, timeout=300, **kwargs)


@pytest.mark.slow
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
    assert done.stdout.startswith("Accuracy = ") and done.stdout.endswith("(classification)\n")
    labels = predicted.read_text().split()
    assert len(labels) == 270 and set(labels) <= {"-1", "1"}
    done = _svmsvc("export", str(model))
    assert done.returncode == 0 and done.stdout.startswith("solver_type L2R_L2LOSS_SVC")


def test_an_smo_kernel_model_exports_to_libsvms_format(tmp_path, capsys):
    model = tmp_path / "model.npz"
    assert main(["train", str(data_path("heart_scale")), "--solver", "smo", "--kernel", "rbf",
                 "--model-out", str(model)]) == 0
    capsys.readouterr()
    assert main(["export", str(model)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("svm_type c_svc\nkernel_type rbf\ngamma ")
    assert "label 1 -1" in text and "\nSV\n" in text


def test_a_low_rank_train_says_how_it_chose_the_rank_and_factored(tmp_path, capsys):
    """The factorization's records have no objective: the progress lines say what it does
    ("choosing the rank: 64 of at most 270 landmarks", "factorized: rank r of r") with the
    residual trace, not "objective=nan"."""
    model = tmp_path / "heart.npz"
    assert main(["train", str(data_path("heart_scale")), "--solver", "dual_cd", "--loss",
                 "hinge", "--approximation", "nystrom", "--gamma", "0.1",
                 "--model-out", str(model)]) == 0
    err = capsys.readouterr().err
    assert "choosing the rank: 64 of at most 270 landmarks" in err
    assert re.search(r"factorized: rank \d+ of \d+ .*residual trace", err), err
    assert "objective=nan" not in err


def test_export_as_onnx_runs_in_onnxruntime_with_the_models_labels_and_scores(tmp_path, capsys):
    onnxruntime = pytest.importorskip("onnxruntime")
    model_file, onnx_file = tmp_path / "model.npz", tmp_path / "model.onnx"
    assert main(["train", str(data_path("dna.scale")), "--solver", "mfn",
                 "--model-out", str(model_file)]) == 0
    assert main(["export", str(model_file), "--format", "onnx", "--output", str(onnx_file)]) == 0
    capsys.readouterr()
    model = solvers.load_model(model_file)
    test = solvers.read_svmlight(data_path("dna.scale.t"), n_features=180)
    session = onnxruntime.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    label, scores = session.run(["label", "scores"], {"X": model.onnx_input(test.X)})
    np.testing.assert_array_equal(label, model.predict(test.X))
    np.testing.assert_allclose(scores, model.decision_function(test.X), rtol=1e-6, atol=0)


def test_export_of_a_model_onnx_cannot_hold_names_the_reason(tmp_path, capsys, monkeypatch):
    model_file = tmp_path / "model.npz"
    assert main(["train", str(data_path("heart_scale")), "--solver", "mfn",
                 "--model-out", str(model_file)]) == 0
    capsys.readouterr()

    def refuse(self):
        raise solvers.ModelExportError("this model kind has no ONNX form")

    monkeypatch.setattr(type(solvers.load_model(model_file)), "to_onnx", refuse)
    assert main(["export", str(model_file), "--format", "onnx"]) != 0
    assert "this model kind has no ONNX form" in capsys.readouterr().err


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path):
    """``svmsvc info FILE | head -1``: the reader is gone before the command writes (its end of
    the pipe is closed at once), so every write fails with EPIPE; the command ends with 141
    (128 + SIGPIPE, as a shell reports it) and says nothing on stderr."""
    command = subprocess.Popen([sys.executable, "-m", "app.cli", "info",
                                str(data_path("heart_scale"))],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    command.stdout.close()
    _, stderr = command.communicate(timeout=300)
    assert command.returncode == 141, stderr
    assert stderr == b""


def test_info_json(capsys):
    assert main(["info", str(data_path("heart_scale")), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["n_samples"] == 270 and stats["n_features"] == 13
    assert stats["class_counts"] == {"-1": 150, "1": 120}


@pytest.mark.parametrize("args, message", [
    (["train", "MISSING", "--solver", "mfn"], "MISSING: no such file"),
    (["train", "{heart}", "--solver", "nope"], "unknown solver 'nope'"),
    (["train", "{heart}", "--solver", "mfn", "--C", "-3"],
     "C: Input should be greater than or equal to"),
    (["predict", "{heart}", "{heart}"], "not a model file"),
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
    # a linear solver's one-vs-one is the low-rank path's strategy
    **{(solver, "multiclass", "ovo"): {"approximation": "nystrom"}
       for solver in ("mfn", "alm", "cutting_plane", "interior_point", "dual_cd", "auto",
                      "newton")},
    # the residual losses are regression's, and regression takes them
    **{(solver, field, value): other
       for solver in ("mfn", "dual_cd", "auto")
       for field, value, other in (
           ("loss", "squared_epsilon_insensitive", {"task": "regression"}),
           ("loss", "epsilon_insensitive", {"task": "regression"}),
           ("task", "regression", {"loss": "squared_epsilon_insensitive"}))},
    # smo's regression is LIBSVM's epsilon-SVR (svm_type decides the task and the loss)
    ("smo", "loss", "epsilon_insensitive"): {"task": "regression"},
    # a scaler folds into a linear-kernel model only
    **{("smo", "scale", value): {"kernel": "linear"} for value in ("maxabs", "standard")},
}
# Fields whose only valid value is the default: another value must reach the model (which
# rejects it), proving the option passed it on.
_ONLY_DEFAULT = {("relaxed_lssvm", "bias_scale"): "set A instead of bias_scale",
                 ("smo", "approximation"): "smo solves the exact kernel problem",
                 ("relaxed_lssvm", "approximation"): "a low-rank factor does not make it smaller"}


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
            if name not in ("solver", "class_weight")  # -w / --class-weight: tested below
            and (spec.name, name) not in _ONLY_DEFAULT]


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
        if name in ("solver", "class_weight"):
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
    (["--solver", "mfn", "--loss", "lp"],
     "expected squared_hinge, modified_huber, hinge or squared_epsilon_insensitive"),
    (["--solver", "relaxed_lssvm", "--sumt", "maybe"], "expected true or false"),
])
def test_a_value_of_no_allowed_kind_is_refused_naming_the_allowed(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "x", *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_train_with_a_literal_member_of_a_numeric_union(tmp_path, monkeypatch):
    """The option that was refused: ``--preconditioning auto``, whose field is a number or
    'auto'."""
    monkeypatch.chdir(tmp_path)  # without --model-out the model is written here
    heart = str(data_path("heart_scale"))
    assert main(["train", heart, "--solver", "mfn", "--preconditioning", "auto", "--quiet"]) == 0
    assert main(["train", heart, "--solver", "mfn", "--preconditioning", "0", "--quiet"]) == 0


# -- svmsvc cv -----------------------------------------------------------------------------------


def test_grids():
    from app.cli.common import CLIError, parse_grid

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


# -- LIBLINEAR's habits ------------------------------------------------------------------------


def _liblinear_predict(test, model_file) -> float:
    from liblinear.liblinearutil import load_model, predict, svm_read_problem

    y, x = svm_read_problem(str(test))
    _, (accuracy, _, _), _ = predict(y, x, load_model(str(model_file)), "-q")
    return accuracy


def _liblinear_predict_output(test, model_file) -> str:
    """What LIBLINEAR's predict (its Python binding) prints for ``model_file`` on ``test``."""
    import contextlib
    import io

    from liblinear.liblinearutil import load_model, predict, svm_read_problem

    y, x = svm_read_problem(str(test))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        predict(y, x, load_model(str(model_file)))
    return printed.getvalue()


def _correct(stdout: str) -> int:
    """The examples predicted correctly, from 'Accuracy = 84.9456% (13830/16281)
    (classification)'."""
    return int(stdout.split("(")[1].split("/")[0])


@pytest.mark.slow
def test_liblinear_habits_as_a_user_types_them(tmp_path):
    """``svmsvc train FILE`` writes FILE.model here (solver auto), ``svmsvc predict TEST MODEL
    OUTPUT`` in LIBLINEAR's order, a ``--format liblinear`` model read back by ``predict`` and
    by LIBLINEAR's own ``predict`` with the same accuracy, ``--version``, a clear error for a
    file that is no model."""
    train_file, test_file = data_path("a9a"), data_path("a9a.t")
    done = _svmsvc("train", str(train_file), "--quiet", "--C", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "writing the model to a9a.model" in done.stderr
    assert "auto:" in done.stderr  # --solver defaults to auto
    # the default file is LIBLINEAR's text, which its predict and a user's scripts read
    assert (tmp_path / "a9a.model").read_text().startswith("solver_type ")
    out = tmp_path / "out.txt"
    done = _svmsvc("predict", str(test_file), "a9a.model", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    npz_accuracy = float(done.stdout.split()[2].rstrip("%"))
    assert set(out.read_text().split()) == {"-1", "1"} and len(out.read_text().split()) == 16281
    # a LIBLINEAR-format model file: svmsvc's predict and LIBLINEAR's agree to the line
    text_model = tmp_path / "a9a.liblinear"
    done = _svmsvc("train", str(train_file), str(text_model), "--solver", "mfn", "--C", "1",
                   "--format", "liblinear", "--quiet", "--tol", "1e-10")
    assert done.returncode == 0, done.stderr
    done = _svmsvc("predict", str(test_file), str(text_model), str(tmp_path / "o2"))
    assert done.returncode == 0, done.stderr
    accuracy = float(done.stdout.split()[2].rstrip("%"))
    # line for line what LIBLINEAR's predict prints for the same model file
    assert done.stdout == _liblinear_predict_output(test_file, text_model)
    assert accuracy == pytest.approx(npz_accuracy, abs=0.05)
    # LIBLINEAR's own model file, read by svmsvc's predict: the same accuracy
    from liblinear.liblinearutil import save_model, svm_read_problem
    from liblinear.liblinearutil import train as ll_train

    y, x = svm_read_problem(str(train_file))
    theirs = tmp_path / "theirs.model"
    save_model(str(theirs), ll_train(y, x, "-s 2 -B 1 -c 1 -q"))
    done = _svmsvc("predict", str(test_file), str(theirs), str(tmp_path / "o3"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == _liblinear_predict_output(test_file, theirs)
    # no model: a clear one-line error, no NumPy message about pickles
    done = _svmsvc("predict", str(test_file), str(test_file), str(tmp_path / "o4"))
    assert done.returncode == 2
    assert "not a model file" in done.stderr and "pickle" not in done.stderr
    done = _svmsvc("--version")
    assert done.returncode == 0 and done.stdout.startswith("svmsvc ")


def test_liblinear_multiclass_model_files_predict_as_liblinear(tmp_path):
    from liblinear.liblinearutil import save_model, svm_read_problem
    from liblinear.liblinearutil import train as ll_train

    train_file, test_file = data_path("dna.scale"), data_path("dna.scale.t")
    y, x = svm_read_problem(str(train_file))
    for options in ("-s 1 -B 1 -c 0.1", "-s 4 -c 0.1", "-s 3 -c 0.1 -B 2"):
        model_file = tmp_path / "m"
        save_model(str(model_file), ll_train(y, x, options + " -q"))
        assert main(["predict", str(test_file), str(model_file), str(tmp_path / "o")]) == 0
        ours = (tmp_path / "o").read_text().split()
        from liblinear.liblinearutil import load_model, predict

        yt, xt = svm_read_problem(str(test_file))
        labels, _, _ = predict(yt, xt, load_model(str(model_file)), "-q")
        assert ours == [str(int(v)) for v in labels], options


def test_class_weight_options(capsys):
    spec = get_solver("mfn")
    parser = build_parser(spec)
    args = parser.parse_args(["train", "x", "--solver", "mfn", "-w", "1=2^3", "-w-1=0.5"])
    assert solver_params(spec, args).class_weight == {"1": 8.0, "-1": 0.5}
    args = parser.parse_args(["train", "x", "--solver", "mfn", "--class-weight", "balanced"])
    assert solver_params(spec, args).class_weight == "balanced"
    heart = str(data_path("heart_scale"))
    assert main(["train", heart, "--solver", "mfn", "-w", "7=2", "--quiet"]) == 2
    assert "7 is no label of the data" in capsys.readouterr().err


def test_predict_b1_writes_libsvm_probability_output(tmp_path):
    heart = str(data_path("heart_scale"))
    model = tmp_path / "m.npz"
    assert main(["train", heart, str(model), "--solver", "mfn", "--probability", "true",
                 "--quiet"]) == 0
    out = tmp_path / "out"
    assert main(["predict", "-b", "1", heart, str(model), str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "labels -1 1" and len(lines) == 271
    import solvers

    expected = solvers.load_model(model).predict_proba(solvers.read_svmlight(heart).X)
    rows = np.array([[float(v) for v in line.split()[1:]] for line in lines[1:]])
    np.testing.assert_allclose(rows, expected, rtol=1e-5)
    assert main(["predict", "-b", "1", heart, str(tmp_path / "m.npz")]) == 0
    plain = tmp_path / "plain.npz"
    assert main(["train", heart, str(plain), "--solver", "mfn", "--quiet"]) == 0
    assert main(["predict", "-b", "1", heart, str(plain)]) == 2


# -- LIBLINEAR's short options of train ----------------------------------------------------------

_LIBLINEAR_SCRIPT = """
import sys
from liblinear.liblinearutil import load_model, predict, save_model, svm_read_problem, train
command, options, train_file = sys.argv[1], sys.argv[2], sys.argv[3]
y, x = svm_read_problem(train_file)
if command == "cv":
    print(train(y, x, options + " -q"))
else:
    model_file, test_file = sys.argv[4], sys.argv[5]
    save_model(model_file, train(y, x, options + " -q"))
    yt, xt = svm_read_problem(test_file)
    labels, _, _ = predict(yt, xt, load_model(model_file), "-q")
    print(" ".join(str(int(v)) for v in labels))
"""


def _liblinear(*args) -> str:
    """LIBLINEAR (liblinear-official's Python binding of its C library) in a subprocess, as its
    own train/predict would run: the predicted labels, or the -v accuracy."""
    done = subprocess.run([sys.executable, "-c", _LIBLINEAR_SCRIPT, *args],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(("train_name", "test_name", "options"), [
    ("a9a", "a9a.t", "-s 3 -c 1 -e 0.0001 -B 1"),  # hinge, regularized bias feature 1
    ("a9a", "a9a.t", "-s 1 -c 2^-2 -e 0.0001"),  # squared hinge, no bias (LIBLINEAR's -B -1)
    ("a9a", "a9a.t", "-s 3 -c 0.5 -e 0.0001 -B 4"),  # bias feature of value 4, regularized
    ("a9a", "a9a.t", "-s 1 -c 1 -e 0.0001 -B 1 -w1 2"),  # -wi: C of label 1 doubled
    ("dna.scale", "dna.scale.t", "-s 4 -c 0.1 -e 0.0001"),  # Crammer-Singer
    ("dna.scale", "dna.scale.t", "-s 1 -c 0.1 -e 0.0001 -B 1"),  # one-vs-rest
])
@pytest.mark.slow
def test_liblinear_short_options_train_what_liblinear_trains(tmp_path, train_name, test_name,
                                                              options):
    """``svmsvc train`` with LIBLINEAR's options solves LIBLINEAR's problem by the same dual
    coordinate descent and stopping rule: at -e 1e-4 the accuracy on the test file is
    LIBLINEAR's train/predict's on the same files to within two examples (measured: equal);
    the two runs' random permutations stop at different points of the same tolerance, so a
    few labels of examples near the boundary differ (a9a -s 3: 42 of 16,281; at most 0.5%)."""
    train_file, test_file = str(data_path(train_name)), str(data_path(test_name))
    model = tmp_path / "ours.model"
    done = _svmsvc("train", *options.split(), "-q", train_file, str(model))
    assert done.returncode == 0, done.stderr
    done = _svmsvc("predict", test_file, str(model), str(tmp_path / "ours.out"))
    assert done.returncode == 0, done.stderr
    ours = (tmp_path / "ours.out").read_text().split()
    plain = " ".join(repr(2.0 ** float(w[2:])) if w.startswith("2^") else w
                     for w in options.split())  # LIBLINEAR reads no 2^k
    theirs = _liblinear("train", plain, train_file, str(tmp_path / "theirs.model"),
                        test_file).split()
    truth = [line.split()[0].lstrip("+") for line in open(test_file)]
    correct = lambda labels: sum(a == b for a, b in zip(labels, truth, strict=True))  # noqa: E731
    differ = sum(a != b for a, b in zip(ours, theirs, strict=True))
    print(options, correct(ours), correct(theirs), differ)  # the figures in docs/service.md
    assert abs(correct(ours) - correct(theirs)) <= 2 and differ <= 0.005 * len(truth), (
        correct(ours), correct(theirs), differ)


@pytest.mark.slow
def test_liblinear_v_and_C_print_liblinears_lines(tmp_path):
    """-v k prints LIBLINEAR's line, the pooled accuracy (correct over all examples) of the
    library's stratified folds; -C its "Best C" line; LIBLINEAR's own -v on other (random)
    folds lands within two points."""
    heart = str(data_path("heart_scale"))
    done = _svmsvc("train", "-s", "3", "-c", "1", "-v", "5", "-q", heart, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith("Cross Validation Accuracy = ") and line.endswith("%"), line
    ours = float(line.split("= ")[1].rstrip("%"))
    from solvers.model_selection import cross_validate

    ds = solvers_read(heart)
    expected = cross_validate(ds, "dual_cd", C=[1.0], folds=5, fit_gap=None, loss="hinge",
                              bias="none", stop_rule="projected_gradient", eps=0.1)
    sizes = np.bincount(ds.stratified_folds(5, 0), minlength=5)
    assert ours == pytest.approx(100 * np.dot(expected.scores[0].fold_scores, sizes) / 270,
                                 abs=1e-4)
    theirs = float(_liblinear("cv", "-s 3 -c 1 -v 5", heart).splitlines()[-1])
    assert abs(ours - theirs) <= 2.0, (ours, theirs)
    assert list(tmp_path.iterdir()) == []  # -v writes no model
    done = _svmsvc("train", "-s", "2", "-C", "--C-grid", "2^-3:2^1", "-q", heart, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    best = done.stdout.strip()
    assert best.startswith("Best C = ") and "  CV accuracy = " in best and best.endswith("%")
    assert float(best.split()[3]) in [2.0 ** k for k in range(-3, 2)]


def solvers_read(path):
    import solvers

    return solvers.read_svmlight(path)


@pytest.mark.parametrize(("options", "message"), [
    ("-s 6", "-s 6: L1-regularized logistic regression: no solver here has an L1 "
             "regularizer; the types that map here are -s 0, -s 1, -s 2, -s 3, -s 4, -s 7, "
             "-s 11, -s 12, -s 13"),
    ("-s 5", "-s 5: L1-regularized L2-loss SVC: no solver here has an L1 regularizer"),
    ("-s 1 -p 0.5", "-p is the epsilon of LIBLINEAR's support vector regression"),
    ("-s 12 -p -1", "-p -1: epsilon must be >= 0"),
    ("-s 99", "-s 99: LIBLINEAR has no such solver type"),
    ("-s x", "LIBLINEAR's solver type is a number"),
    ("-s 2 -e 0.01", "-e with -s 2: LIBLINEAR's primal stopping rule"),
    ("-e 0.01 --solver mfn", "-e is LIBLINEAR's stopping rule: give it with -s 0, 1, 3, 4, "
                             "7, 12 or 13"),
    ("-s 1 -B 0", "-B 0: a bias feature of value 0 is no bias"),
    ("-s 1 --solver mfn", "give LIBLINEAR's -s or --solver, not both"),
    ("-s 1 -c 0", "-c 0: C must be positive"),
    ("-s 1 -c 2^x", "expected a number or 2^k"),
    ("-s 1 -v 1", "-v 1: cross-validation needs at least 2 folds"),
    ("-s 1 -w1", "-w1: give the weight after it"),
])
def test_liblinear_options_that_do_not_map_are_one_line_errors(capsys, options, message):
    heart = str(data_path("heart_scale"))
    try:
        status = main(["train", heart, *options.split()])
    except SystemExit as exc:  # argparse's own usage error (a bad number)
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


def test_liblinear_options_set_the_parameters():
    """-s's problem, -c, -e, -B and -wi as the parameters they pose (2^k numbers accepted)."""
    from app.cli import solver_spec_from_argv
    from app.cli.liblinear import liblinear_argv, liblinear_params

    argv = liblinear_argv(["train", "-s", "3", "-c", "2^3", "-e", "2^-10", "-B", "2",
                           "-w1", "2", "-w-1", "0.5", "x"])
    spec = solver_spec_from_argv(argv)
    args = build_parser(spec).parse_args(argv)
    params = solver_params(spec, args).model_dump()
    params.update(liblinear_params(args, spec))
    assert spec.name == "dual_cd"
    assert (params["loss"], params["stop_rule"], params["C"], params["eps"]) == (
        "hinge", "projected_gradient", 8.0, 2.0 ** -10)
    assert (params["bias"], params["bias_scale"]) == ("regularized", 2.0)
    assert params["class_weight"] == {"1": 2.0, "-1": 0.5}
    args = build_parser(spec).parse_args(["train", "-s", "3", "-B", "-1", "x"])
    assert liblinear_params(args, spec)["bias"] == "none"
    args = build_parser(spec).parse_args(["train", "-s", "3", "x"])
    assert liblinear_params(args, spec)["bias"] == "none"  # LIBLINEAR's default -B -1
    argv = ["train", "-s", "4", "x"]
    spec = solver_spec_from_argv(argv)
    assert liblinear_params(build_parser(spec).parse_args(argv), spec)["multiclass"] == \
        "crammer_singer"
    for argv, expected in ((["train", "-s", "0", "x"], ("newton", "gradient", 0.01)),
                           (["train", "-s", "7", "x"], ("dual_cd", "projected_gradient", 0.1)),
                           (["train", "-s", "0", "-e", "1e-4", "x"],
                            ("newton", "gradient", 1e-4))):
        spec = solver_spec_from_argv(argv)
        params = liblinear_params(build_parser(spec).parse_args(argv), spec)
        assert (spec.name, params["stop_rule"], params["eps"]) == expected
        assert params["loss"] == "logistic"


def test_train_takes_libsvms_b_and_writes_the_text_format_where_it_holds_the_model(tmp_path,
                                                                                    capsys):
    """Issue 48: ``-b 1`` at training as LIBSVM's train takes it (probability estimates, which
    predict -b 1 prints); ``--format auto`` (the default) writes LIBLINEAR's text unless the
    model holds what that format has no place for, and then says why it wrote npz."""
    heart = str(data_path("heart_scale"))
    plain, calibrated = tmp_path / "plain.model", tmp_path / "calibrated.model"
    assert main(["train", heart, str(plain), "--solver", "dual_cd", "-q"]) == 0
    assert "in LIBLINEAR's format" in capsys.readouterr().err
    assert plain.read_text().startswith("solver_type ")
    assert main(["train", heart, str(calibrated), "--solver", "dual_cd", "-b", "1", "-q"]) == 0
    assert "as an npz archive (LIBLINEAR's file has no place for the model's probability " \
        "sigmoids)" in capsys.readouterr().err
    assert solvers.load_model(calibrated).calibrated
    output = tmp_path / "out"
    assert main(["predict", "-b", "1", heart, str(calibrated), str(output)]) == 0
    assert capsys.readouterr().out.startswith("Accuracy = ")
    assert output.read_text().startswith("labels 1 -1") or \
        output.read_text().startswith("labels -1 1")
    assert main(["train", heart, str(plain), "--solver", "dual_cd", "-b", "1", "-q",
                 "--format", "liblinear"]) == 2
    assert "--format liblinear: LIBLINEAR's file has no place" in capsys.readouterr().err


@pytest.mark.parametrize("s", ["11", "12", "13"])
def test_liblinear_regression_types_train_and_predict_as_liblinear(tmp_path, capsys, s):
    """-s 11/12/13 -p EPS train the regression LIBLINEAR's types train (mfn, dual_cd), and
    predict prints LIBLINEAR's two regression lines and writes the values."""
    housing = str(data_path("regression/housing_scale"))
    model, output = tmp_path / "h.model", tmp_path / "h.out"
    assert main(["train", "-s", s, "-c", "2", "-p", "0.5", "-B", "1", "-e" if s != "11"
                 else "--tol", "0.0001" if s != "11" else "1e-10", "-q", "--format", "npz",
                 housing, str(model)]) == 0
    loaded = solvers.load_model(model)
    assert loaded.task == "regression"
    params = loaded.metadata["params"]
    assert (params["C"], params["bias"], params["loss"]) == (
        2.0, "regularized", "epsilon_insensitive" if s == "13" else
        "squared_epsilon_insensitive")
    assert params["insensitivity" if s == "11" else "epsilon"] == 0.5  # mfn: its own name
    capsys.readouterr()
    assert main(["predict", housing, str(model), str(output)]) == 0
    lines = capsys.readouterr().out.splitlines()
    data = solvers.read_svmlight(housing)
    values = loaded.predict(data.X)
    mse = float(np.mean((values - data.y) ** 2))
    assert lines[0] == f"Mean squared error = {mse:g} (regression)"
    assert lines[1].startswith("Squared correlation coefficient = ")
    assert lines[1].endswith(" (regression)")
    np.testing.assert_array_equal(np.loadtxt(output), values)


def test_logistic_regression_as_liblinear_trains_and_predicts_it(tmp_path, capsys):
    """``svmsvc train -s 0`` / ``-s 7`` then ``svmsvc predict -b 1``: a 'labels ...' header
    and each label with its probabilities, LIBLINEAR's -b 1 to the printed digits (LIBLINEAR
    trained at the same -e, its rule); held-out svmguide1.t."""
    from liblinear import liblinearutil

    train_file, test_file = data_path("svmguide1"), data_path("svmguide1.t")
    train_set, test_set = solvers.read_svmlight(train_file), solvers.read_svmlight(test_file)
    theirs = liblinearutil.train(train_set.y.astype(float).tolist(), train_set.X,
                                 "-s 0 -c 1 -B 1 -e 1e-8 -q")
    labels, _, probabilities = liblinearutil.predict(test_set.y.astype(float).tolist(),
                                                     test_set.X, theirs, "-b 1 -q")
    column = {label: j for j, label in enumerate(theirs.get_labels())}
    for solver_type in ("0", "7"):
        model, out = tmp_path / f"m{solver_type}", tmp_path / f"out{solver_type}"
        assert main(["train", str(train_file), str(model), "-s", solver_type, "-c", "1",
                     "-B", "1", "-e", "1e-8", "-q"]) == 0
        assert main(["predict", "-b", "1", str(test_file), str(model), str(out)]) == 0
        lines = out.read_text().splitlines()
        assert lines[0] == "labels 0 1"
        assert len(lines) == 1 + test_set.n_samples
        rows = [line.split() for line in lines[1:]]
        assert [float(r[0]) for r in rows] == labels
        ours = np.array([[float(v) for v in r[1:]] for r in rows])
        expected = np.array(probabilities)[:, [column[0.0], column[1.0]]]
        np.testing.assert_allclose(ours, expected, atol=1e-5, rtol=0)
    capsys.readouterr()
