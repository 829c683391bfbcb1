"""The benchmark harness and the stored reference optima."""

from __future__ import annotations

import itertools
import json
import os

import pytest

from bench.anchors import Liblinear, ProjectSolver, ProjectSolverSchedule
from bench.harness import as_json, measure_problem, relative_gap, time_to_gap
from bench.problems import BenchProblem
from bench.references import (
    REFERENCE_FILE,
    REFERENCE_PROBLEMS,
    compute_reference,
    load_references,
)
from bench.report import markdown_table, write_outputs

# A stored optimum must come with a certificate at least this tight.
CERTIFIED_RELATIVE_GAP = 1e-7


def test_time_to_gap_takes_the_first_point_within_the_gap():
    trace = [(0.1, 2.0), (0.2, 1.005), (0.3, 1.0000001), (0.4, 1.0)]
    assert time_to_gap(trace, 1.0, 1e-2) == 0.2
    assert time_to_gap(trace, 1.0, 1e-6) == 0.3
    assert time_to_gap(trace, 0.5, 1e-6) is None
    assert relative_gap(1.5, 1.0) == 0.5


def test_every_reference_problem_is_stored_with_a_certificate():
    references = load_references()
    missing = [p.key for p in REFERENCE_PROBLEMS if p.key not in references]
    assert not missing, f"run 'python -m bench references --regenerate': {missing}"
    for key, entry in references.items():
        certificate = entry["certificate"]
        assert entry["method"] and entry["objective"] > 0, key
        if "relative_duality_gap" in certificate:
            assert certificate["relative_duality_gap"] <= CERTIFIED_RELATIVE_GAP, key
        else:
            assert certificate["gradient_norm"] <= 1e-8 * entry["objective"], key


@pytest.mark.parametrize("key", ["heart_scale/squared_hinge/regularized/C=1",
                                 "heart_scale/hinge/free/C=1",
                                 "heart_scale/modified_huber/regularized/C=0.1"])
def test_stored_references_are_reproducible(key):
    stored = json.loads(REFERENCE_FILE.read_text())
    entry = next(e for e in stored if e["key"] == key)
    problem = BenchProblem(entry["dataset"], entry["loss"], entry["bias"], entry["C"],
                           entry["bias_scale"])
    assert compute_reference(problem)["objective"] == pytest.approx(entry["objective"],
                                                                    rel=1e-8)


def test_harness_measures_side_by_side_and_reports(tmp_path):
    problem = BenchProblem("heart_scale", "squared_hinge", "regularized", 1.0)
    runners = [ProjectSolver("mfn"), Liblinear(1), Liblinear(2)]
    result = measure_problem(problem, runners, repeats=2, log=lambda *_: None)
    assert result.reference_source.startswith("LIBLINEAR")
    names = [s.runner for s in result.summaries]
    assert names == ["mfn", "liblinear -s 1", "liblinear -s 2"]
    for s in result.summaries:
        assert s.time_to_gap["1e-06"] is not None, s.runner
        assert abs(s.final_gap) < 1e-6
    assert result.ratio_to_best_anchor("mfn", 1e-6) > 0
    table = markdown_table([result])
    assert table.count("\n") == 2 + len(runners)
    write_outputs([result], [], {"cpus": 2}, tmp_path)
    assert (tmp_path / "results.json").exists() and (tmp_path / "results.md").exists()
    assert list(tmp_path.glob("convergence-*.png"))


def test_auto_runs_from_scratch_at_each_tolerance_and_says_what_it_chose():
    """The portfolio suite's runner: one timed run of auto per tolerance (its choice depends
    on it), each certified to its tolerance against LIBLINEAR's optimum."""
    problem = BenchProblem("heart_scale", "hinge", "regularized", 1.0)
    schedule = (1e-2, 1e-6)
    runner = ProjectSolverSchedule("auto", tol_schedule=schedule)
    assert runner.supports(problem)
    run = runner.run(problem)
    reference = load_references()[problem.key]["objective"]
    assert len(run.trace) == len(schedule)
    for (seconds, objective), tol in zip(run.trace, schedule, strict=True):
        assert seconds > 0 and relative_gap(objective, reference) <= tol
    choices = run.extras["choices"]
    assert set(choices) == {"0.01", "1e-06"}
    for choice in choices.values():
        assert choice["status"] == "converged" and choice["winner"] in choice["runs"]


# mfn stops on a relative duality gap of 1e-6 by default; at 1e-7 its hinge objective is
# within 1e-6 of the optimum (the gap bounds the error).
_SOLVER_SETTINGS = {
    "squared_hinge": ("mfn", {}, 1e-6),
    "modified_huber": ("mfn", {}, 1e-6),
    "hinge": ("mfn", {"tol": 1e-7}, 1e-6),
}
_SMALL = ("heart_scale", "australian_scale", "breast-cancer_scale", "diabetes_scale",
          "svmguide1")


@pytest.mark.parametrize("key", sorted(k for k in load_references()
                                       if k.split("/")[0] in _SMALL
                                       and k.split("/")[1] in _SOLVER_SETTINGS
                                       and k.split("/")[1] != "least_squares"
                                       and k.split("/")[2] != "free"))
def test_solvers_reach_the_stored_optima(key):
    """mfn against the stored, independently certified optima (small sets; the large ones
    are checked in tests/test_mfn_liblinear.py; mfn has no free bias)."""
    import solvers

    entry = load_references()[key]
    problem = BenchProblem(entry["dataset"], entry["loss"], entry["bias"], entry["C"],
                           entry["bias_scale"])
    solver, extra, rtol = _SOLVER_SETTINGS[entry["loss"]]
    result = solvers.train(problem.train_dataset(), solver=solver, C=entry["C"],
                           loss=entry["loss"], bias=entry["bias"], **extra)
    assert result.status == "converged", result.message
    assert result.objective == pytest.approx(entry["objective"], rel=rtol)


def test_mfn_profile_splits_time_into_named_phases():
    """The profile attributes time by function name: every name it looks for must exist, and a
    factorized run must show time in the factorization."""
    import solvers.core.linalg
    import solvers.core.linesearch
    import solvers.losses.kernels
    from bench import bench_mfn

    core = (solvers.core.linalg, solvers.core.linesearch, solvers.losses.kernels)
    for name in bench_mfn._PHASES:
        assert any(hasattr(module, name) for module in core), name
    result = bench_mfn.profile(BenchProblem("mushrooms", C=1.0))
    assert result["linear_solver"] == "cholesky"
    assert result["phases"]["factorization"] > 0.0
    assert result["phases"]["CGLS"] > 0.0  # heuristic 1's first call


def test_mfn_suite_filter_keeps_the_named_problems():
    """``--only`` keeps the problems whose key matches one of its patterns, in suite order,
    with news20 at C = 100 still run once."""
    from bench import bench_mfn

    kept = bench_mfn.suite(False, "news20*, w8a/*/C=1")
    keys = [problem.key for problem, _ in kept]
    assert keys == ["w8a/squared_hinge/regularized/C=1",
                    "news20-binary/squared_hinge/regularized/C=0.01",
                    "news20-binary/squared_hinge/regularized/C=1",
                    "news20-binary/squared_hinge/regularized/C=100"]
    assert [repeats for _, repeats in kept] == [None, None, None, 1]
    assert len(bench_mfn.suite(False)) == 16 and len(bench_mfn.suite(True)) == 4


@pytest.mark.slow
def test_mfn_anchors_include_both_liblinear_builds():
    """Every squared-hinge problem is measured against LIBLINEAR -s 1 and -s 2 of the official
    build and, where its environment exists, of the multi-core build at -m 1 and -m 2."""
    from bench import bench_mfn
    from bench.liblinear_multicore import LiblinearMulticore

    runners = bench_mfn.runners_for(BenchProblem("news20-binary", C=100.0))
    names = [runner.name for runner in runners]
    assert {"liblinear -s 1", "liblinear -s 2"} <= set(names)
    multicore = [r for r in runners if isinstance(r, LiblinearMulticore)]
    if multicore:
        assert sorted(r.name for r in multicore) == sorted(
            f"liblinear-multicore -s {s} -m {m}" for s in (1, 2) for m in (1, 2))
        assert all(r.eps_schedule == bench_mfn.SHORT_LIBLINEAR_SCHEDULE for r in multicore)


def test_cv_fit_quality_measures_liblinear_and_ours_against_the_optimum():
    """bench_cv --fit-quality: LIBLINEAR's fits read back with its label order and bias
    mapped onto our problem (-s 2 -B 1 is the regularized bias), so a tighter eps ends no
    further from the optimum and none ends below it; ours within the certified 1e-3."""
    from shared_data import load

    from bench.bench_cv import GRID, fit_quality

    rows = fit_quality(load("heart_scale"), 3, liblinear_eps=(0.1, 1e-6))
    assert [row["C"] for row in rows] == GRID
    for row in rows:
        assert -1e-9 <= row[1e-6] <= 1e-6, row
        assert -1e-9 <= row[1e-6] <= row[0.1] + 1e-9, row
        assert -1e-9 <= row["ours"] <= 1e-3, row


def test_cv_hinge_runners_search_warm_and_cold_with_scikit_learn_beside():
    """bench_cv --loss hinge: the cutting planes' warm path first (the ratios' reference), the
    same search cold, mfn's homotopy, the interior-point method warm and cold, and
    scikit-learn; each returns (best C, accuracy, how many C values), each cold and warm pair
    scoring within a few examples of each other."""
    from shared_data import load

    from bench.bench_cv import GRID, OURS_HINGE, runners

    timed = runners(loss="hinge")
    assert next(iter(timed)) == OURS_HINGE and len(timed) == 6
    heart = load("heart_scale")
    found = {name: run(heart, 3) for name, run in timed.items()}
    for best_C, accuracy, n_C in found.values():
        assert best_C in GRID and 0.7 < accuracy <= 1.0 and n_C == len(GRID)
    results = list(found.values())
    for warm, cold in (results[0:2], results[3:5]):
        assert abs(warm[1] - cold[1]) <= 3 / heart.n_samples


def _tiny_suite():
    from bench.suites import Case, HarnessSuite

    problem = BenchProblem("heart_scale", "squared_hinge", "regularized", 1.0)
    return HarnessSuite("tiny", "mfn against LIBLINEAR -s 2 on heart",
                        lambda: [Case(problem, lambda: [ProjectSolver("mfn"), Liblinear(2)])],
                        repeats=1)


def test_a_suite_writes_a_record_with_the_fingerprint_and_the_ratios(tmp_path, monkeypatch):
    from bench.suites import run_suite

    # the machine's load as it was read at the start and at the end of the suite
    loads = itertools.chain([(0.5, 0.4, 0.3)], itertools.repeat((1.5, 1.0, 0.5)))
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    out = run_suite("tiny", out=tmp_path / "tiny.json", log=lambda *_: None,
                    suites={"tiny": _tiny_suite()})
    record = json.loads(out.read_text())
    assert record["suite"] == "tiny" and record["kind"] == "harness"
    machine = record["machine"]
    assert machine["date"].startswith("20") and machine["date"].endswith("Z")
    assert len(machine["git_commit"]) == 40 and isinstance(machine["git_dirty"], bool)
    assert machine["cpu_model"] and machine["cpus"] >= 1
    assert machine["load_average_at_start"] == 0.5 and record["load_average_at_end"] == 1.5
    assert record["seconds"] > 0
    [problem] = record["problems"]
    assert [s["runner"] for s in problem["summaries"]] == ["mfn", "liblinear -s 2"]
    ratio = record["ratios"]["heart_scale/squared_hinge/regularized/C=1"]["mfn"]["1e-06"]
    assert ratio > 0
    assert "liblinear -s 2" not in record["ratios"][problem["problem"]]  # anchors have none


def test_a_suite_compares_its_record_with_the_last_one_of_the_suite(tmp_path):
    """A record carries the reference workloads it is normalized by, and the comparison with
    the previous record of its suite in the same directory (which figures moved is a matter
    of timing: tested on made-up records below)."""
    from bench.suites import run_suite

    first = json.loads(run_suite("tiny", out=tmp_path / "tiny-1.json", log=lambda *_: None,
                                 suites={"tiny": _tiny_suite()}).read_text())
    reference = first["machine"]["reference"]
    assert reference["memory_bandwidth_gbs"] > 0 and reference["liblinear_s"] > 0
    assert reference["python_s"] > 0 and "comparison" not in first
    lines = []
    second = json.loads(run_suite("tiny", out=tmp_path / "tiny-2.json", log=lines.append,
                                  suites={"tiny": _tiny_suite()}).read_text())
    comparison = second["comparison"]
    assert comparison["previous"] == "tiny-1.json" and comparison["threshold"] == 0.25
    assert comparison["compared"] >= 1 and set(comparison["moved"]) <= set(
        comparison["figures"])
    assert any(line.startswith("compared ") for line in lines)
    warned = [line for line in lines if line.startswith("WARNING")]
    assert len(warned) == len(comparison["moved"])


def _record(liblinear_s: float, python_s: float, seconds: float, ratio: float,
            cpu_ms: float, per_s: float) -> dict:
    """A record with one problem (ours and an anchor), a ratio and a GET predict summary."""
    summaries = [{"runner": "mfn", "median_seconds": seconds,
                  "time_to_gap": {"0.01": seconds / 4, "1e-06": seconds}},
                 {"runner": "liblinear -s 2", "median_seconds": 0.001,
                  "time_to_gap": {"0.01": 0.001, "1e-06": None}}]
    return {"suite": "quick", "file": f"quick-{seconds}.json",
            "machine": {"date": "2026-01-01T00:00:00Z",
                        "reference": {"liblinear_s": liblinear_s, "python_s": python_s}},
            "problems": [{"problem": "a9a/squared_hinge/regularized/C=1",
                          "summaries": summaries}],
            "ratios": {"a9a/squared_hinge/regularized/C=1": {"mfn": {"1e-06": ratio}}},
            "service_predict": {"summary": {"this": {"sequential_cpu_ms": cpu_ms,
                                                     "wrk_cpu_ms": cpu_ms,
                                                     "wrk_per_s": per_s}}}}


def test_normalized_figures_divide_by_the_reference_workloads():
    from bench.fingerprint import normalized_figures

    figures = normalized_figures(_record(0.5, 0.01, 2.0, 0.8, 0.4, 2500.0))
    key = "a9a/squared_hinge/regularized/C=1 mfn"
    assert figures[f"{key} median_seconds / liblinear_s"] == pytest.approx(4.0)
    assert figures[f"{key} time_to_1e-06 / liblinear_s"] == pytest.approx(4.0)
    assert figures[f"{key} time to 1e-06 / fastest anchor's"] == pytest.approx(0.8)
    assert figures["GET predict this sequential_cpu_ms / python_s"] == pytest.approx(0.04)
    assert figures["GET predict this wrk_per_s * python_s"] == pytest.approx(25.0)
    # the anchor's millisecond is noise (MIN_SECONDS), its missing time has no figure
    assert not any("liblinear -s 2" in name for name in figures)
    # a record without reference workloads (older ones) keeps only its ratios
    bare = _record(0.5, 0.01, 2.0, 0.8, 0.4, 2500.0)
    del bare["machine"]["reference"]
    assert list(normalized_figures(bare)) == [f"{key} time to 1e-06 / fastest anchor's"]


def test_a_figure_moves_when_its_normalized_ratio_leaves_the_threshold():
    from bench.fingerprint import compare_records, last_of_suite, moved, warnings

    before = _record(0.5, 0.01, 2.0, 0.8, 0.4, 2500.0)
    # a machine twice as slow at everything: the normalized figures do not move
    slow_machine = _record(1.0, 0.02, 4.0, 0.8, 0.8, 1250.0)
    same = compare_records(before, slow_machine)
    assert same["compared"] == 6 and same["moved"] == [] and warnings(same) == []
    assert all(entry["ratio"] == pytest.approx(1.0) for entry in same["figures"].values())
    # the same machine, mfn 1.3x slower and GET predict at 1.2x the CPU: only mfn moved
    regressed = _record(0.5, 0.01, 2.6, 1.04, 0.48, 2500.0 / 1.2)
    comparison = compare_records(before, regressed)
    assert sorted(comparison["moved"]) == sorted(
        [name for name in comparison["figures"] if name.startswith("a9a")])
    lines = warnings(comparison)
    assert len(lines) == 3 and all(line.startswith("WARNING: a9a") for line in lines)
    assert "1.30x since quick-2.0.json" in lines[0]
    assert moved(1.26) and moved(0.79) and not moved(1.25) and not moved(0.81)
    older, newer = {"suite": "quick", "n": 1}, {"suite": "quick", "n": 2}
    assert last_of_suite([older, {"suite": "mfn"}, newer, {"suite": "linear"}],
                         "quick") is newer
    assert last_of_suite([older], "mfn") is None


def test_a_script_suite_records_what_its_study_wrote(tmp_path):
    from bench.suites import ScriptSuite, run_suite

    suite = ScriptSuite("parser", "the reader on heart", "parser",
                        ("--repeats", "1", "heart_scale"), out_is_file=True,
                        directory=tmp_path / "parser")
    out = run_suite("parser", out=tmp_path / "parser.json", log=lambda *_: None,
                    suites={"parser": suite})
    record = json.loads(out.read_text())
    assert record["kind"] == "script" and record["status"] == 0
    assert record["argv"][-2:] == ["--out", str(tmp_path / "parser" / "parser.json")]
    assert list(record["outputs"]) == ["parser.json"]
    assert "heart_scale" in record["stdout"]


def test_the_report_regenerates_the_readme_section_from_the_records(tmp_path):
    """Two records of one suite: the section shows the later one's table and a history row
    per record; rewriting again changes nothing (a function of the records alone)."""
    from bench.harness import machine_description
    from bench.report import BEGIN, END, update_readme
    from bench.suites import ratios

    problem = BenchProblem("heart_scale", "squared_hinge", "regularized", 1.0)
    result = measure_problem(problem, [ProjectSolver("mfn"), Liblinear(2)], repeats=1,
                             log=lambda *_: None)
    results = tmp_path / "results"
    results.mkdir()
    for day, commit in (("2026-01-01", "a" * 40), ("2026-01-02", "b" * 40)):
        machine = {**machine_description(), "date": f"{day}T00:00:00Z", "git_commit": commit}
        record = {"suite": "tiny", "kind": "harness", "machine": machine, "repeats": 1,
                  "problems": as_json([result]), "ratios": {result.problem: ratios(result)},
                  "scaling": [], "seconds": 1.0, "load_average_at_end": 0.5}
        (results / f"tiny-{day}.json").write_text(json.dumps(record))
    (results / "unrelated.json").write_text("[1, 2]")  # not a record: passed over
    readme = tmp_path / "README.md"
    readme.write_text(f"# Bench\n\nprose\n\n{BEGIN}\nstale\n{END}\n\nafter\n")
    assert update_readme(readme, results)
    text = readme.read_text()
    assert text.startswith("# Bench\n\nprose\n\n") and text.endswith(f"{END}\n\nafter\n")
    assert "stale" not in text
    assert "tiny-2026-01-02.json" in text and "bbbbbbbbbb" in text
    ratio = ratios(result)["mfn"]["1e-06"]
    history = [line for line in text.splitlines() if line.startswith("| 2026-01-0")]
    assert len(history) == 2 and all(line.endswith(f"| {ratio:.2f} |") for line in history)
    assert "| heart_scale/squared_hinge/regularized/C=1 | mfn |" in text
    assert not update_readme(readme, results)
    assert readme.read_text() == text


def test_the_bench_readme_shows_the_committed_records():
    """bench/README.md's results section is what ``python -m bench report`` makes of the
    committed records (run it after adding one)."""
    from bench.paths import REPOSITORY, RESULTS_DIR
    from bench.report import BEGIN, END, load_records, results_section

    text = (REPOSITORY / "bench" / "README.md").read_text()
    section = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert section == f"\n\n{results_section(load_records(RESULTS_DIR))}\n"


def test_lowrank_routing_problems_hold_out_disjoint_rows_and_take_seeded_subsets():
    """``bench lowrank --routing``'s sets without a test file hold a seeded fifth out (no row
    on both sides), and ``NAME:ROWS`` keeps that many training rows, the same ones each run."""
    import numpy as np

    from bench.bench_lowrank import problem

    train, test = problem("mushrooms", quick=False)
    assert (train.n_samples, test.n_samples) == (8124 - 8124 // 5, 8124 // 5)
    rows = {tuple(r) for r in np.hstack([train.X.toarray(), train.y[:, None]])}
    assert not rows & {tuple(r) for r in np.hstack([test.X.toarray(), test.y[:, None]])}
    subset, same_test = problem("mushrooms:1000", quick=False)
    again, _ = problem("mushrooms:1000", quick=False)
    assert subset.n_samples == 1000 and same_test.n_samples == test.n_samples
    assert (subset.X != again.X).nnz == 0 and np.array_equal(subset.y, again.y)
