"""The svmsvc command line, run as a user would (a subprocess) and in-process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from shared_data import data_path

from app.cli import main
from solvers.registry import list_solvers


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
    assert "mfn:" in capsys.readouterr().out
