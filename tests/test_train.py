"""The one entry point: parameter validation, label mapping, one-vs-rest, monitors."""

from __future__ import annotations

import time

import numpy as np
import pydantic
import pytest
from shared_data import load

import solvers
from solvers.monitor import ListMonitor
from solvers.registry import get_solver, list_solvers, params_union


def test_registry_lists_only_real_solvers_with_schemas():
    names = [spec.name for spec in list_solvers()]
    assert "mfn" in names
    for spec in list_solvers():
        description = spec.describe()
        assert description["params_schema"]["properties"]["solver"]["const"] == spec.name
        assert description["losses"] and description["bias_modes"]
    union = pydantic.TypeAdapter(params_union())
    for spec in list_solvers():  # the API's union picks each solver's model by its name
        assert type(union.validate_python({"solver": spec.name})) is spec.params_model


def test_unknown_solver_lists_the_known_ones():
    with pytest.raises(solvers.UnknownSolverError, match="available: .*mfn"):
        get_solver("svm-magic")


@pytest.mark.parametrize("params, message", [
    ({"C": -1}, "C: Input should be greater than or equal to"),
    ({"loss": "least_squares"}, "mfn' does not solve binary problems with "
                                "loss='least_squares', bias='regularized' .it solves: loss "
                                "'squared_hinge' or 'modified_huber' or 'hinge' with bias "
                                "'regularized' or 'none'"),
    ({"bias": "free"}, "bias='free': the paper regularizes b"),
    ({"loss": "cauchy"}, "loss: Input should be"),
    ({"colour": "red"}, "colour: Extra inputs are not permitted"),
    ({"max_iter": "many"}, "max_iter: Input should be a valid integer"),
])
def test_bad_parameters_raise_clear_errors(params, message):
    ds = load("heart_scale")
    with pytest.raises(solvers.InvalidParametersError, match=message):
        solvers.train(ds, solver="mfn", **params)


def test_single_class_is_refused():
    ds = load("heart_scale")
    one_class = ds.subset(ds.y == 1)
    with pytest.raises(ValueError, match="at least two distinct labels"):
        solvers.train(one_class, solver="mfn")


def test_binary_labels_map_classes_1_to_plus_one():
    """svmguide1 uses labels 0/1: label 1 must be the positive class."""
    ds = load("svmguide1")
    result = solvers.train(ds, solver="mfn", C=1.0)
    scores = result.model.decision_function(ds.X)
    positive_rate = np.mean(scores[ds.y == 1] > 0)
    assert positive_rate > 0.8
    np.testing.assert_array_equal(result.model.classes_, [0.0, 1.0])
    assert result.status == "converged"
    assert result.model.metadata["solver"] == "mfn"
    assert result.model.metadata["params"]["C"] == 1.0


def test_one_vs_rest_numbers_records_consecutively():
    ds = load("dna.scale")
    monitor = ListMonitor()
    result = solvers.train(ds, solver="mfn", C=0.1, monitor=monitor)
    iterations = [r.iteration for r in result.log]
    assert iterations == list(range(1, len(iterations) + 1))
    assert [r.iteration for r in monitor.records] == iterations
    assert {r.extras["class"] for r in result.log} == {"1", "2", "3"}
    # each record names its class ("class k of K") and is timed on the run's clock
    assert all(r.extras["n_classes"] == r.extras["n_subproblems"] == 3 for r in result.log)
    assert [r.extras["class_index"] for r in result.log] == sorted(
        r.extras["subproblem"] for r in result.log)
    assert all(r.extras["class"] == str(r.extras["class_index"] + 1) for r in result.log)
    elapsed = [r.elapsed for r in result.log]
    assert elapsed == sorted(elapsed)
    last = [r for r in result.log if r.extras["class_index"] == 2]
    assert last[0].extras["subproblem_elapsed"] < last[0].elapsed  # its own clock restarted
    assert len(result.subproblems) == 3 and result.model.coef_.shape == (3, 180)
    assert result.objective == pytest.approx(sum(s.objective for s in result.subproblems))
    test = load("dna.scale.t")
    accuracy = np.mean(result.model.predict(test.X) == test.y)
    assert accuracy > 0.9


class _StopAfter:
    def __init__(self, n):
        self.n = n
        self.seen = 0

    def report(self, record):
        self.seen += 1

    def stop_reason(self):
        return "cancelled by test" if self.seen >= self.n else None


def test_monitor_can_stop_a_run():
    ds = load("dna.scale")
    result = solvers.train(ds, solver="mfn", C=1.0, monitor=_StopAfter(2))
    assert result.status == "stopped"
    assert "cancelled by test" in result.message
    assert len(result.subproblems) == 1  # later classes never started


def test_time_limit_stops_a_run():
    ds = load("a9a")
    monitor = ListMonitor(time_limit=0.0)
    result = solvers.train(ds, solver="mfn", C=1.0, monitor=monitor)
    assert result.status == "stopped" and "time limit" in result.message


def test_params_model_instance_is_accepted():
    ds = load("heart_scale")
    params = get_solver("mfn").params_model(C=0.5)
    result = solvers.train(ds, solver="mfn", params=params)
    assert result.params.C == 0.5
    result = solvers.train(ds, solver="mfn", params=params, C=2.0)
    assert result.params.C == 2.0


def test_sample_weights_scale_the_loss():
    """Weight 2 on every example is the same problem as C doubled."""
    ds = load("heart_scale")
    weighted = solvers.Dataset(ds.X, ds.y, sample_weight=np.full(ds.n_samples, 2.0))
    a = solvers.train(weighted, solver="mfn", C=0.5)
    b = solvers.train(ds, solver="mfn", C=1.0)
    np.testing.assert_allclose(a.model.coef_, b.model.coef_, rtol=1e-6, atol=1e-9)
    assert a.objective == pytest.approx(b.objective, rel=1e-10)


def test_library_warm_up_runs_every_solvers_hook_and_times_itself():
    """The warm-up trains nothing: it runs the shared layers' steps and the ``warm_up`` hook
    of every registered solver that has one, and returns the seconds it took."""
    ended: list[str] = []

    def heard(done: int, total: int, what: str) -> None:
        if not what.startswith(("compiling ", "waiting ")):  # a step that ended: its name
            ended.append(what)

    start = time.perf_counter()
    seconds = solvers.warm_up(parallel=False, progress=heard)
    assert 0.0 < seconds <= time.perf_counter() - start
    hooks = {f"solver {spec.name}" for spec in list_solvers() if spec.warm_up is not None}
    assert hooks and hooks <= set(ended)
    assert {"core kernels", "losses", "problem layer", "prediction"} <= set(ended)


HELD_OUT_ACCURACY = 0.8
"""The held-out third of heart_scale (90 examples) labelled by a linear SVM at C = 1: 0.87
by scikit-learn's LinearSVC, 0.84-0.87 by the solvers here; the majority label alone 0.56."""


@pytest.mark.parametrize("spec", list_solvers(), ids=lambda spec: spec.name)
def test_every_registered_solver_learns_heart_scale(spec):
    """Every registered solver, with its defaults (a linear kernel where it has a kernel),
    trained on two thirds of heart_scale, converges and labels the held-out third as a linear
    SVM does (``test_architecture`` checks every solver's objective at its model)."""
    heart = load("heart_scale")
    folds = heart.stratified_folds(3, seed=0)
    train_set, test_set = heart.subset(np.flatnonzero(folds != 0)), \
        heart.subset(np.flatnonzero(folds == 0))
    extra = {"kernel": "linear"} if "kernel" in spec.params_model.model_fields else {}
    result = solvers.train(train_set, solver=spec.name, **extra)
    assert result.status == "converged", result.message
    accuracy = np.mean(result.model.predict(test_set.X) == test_set.labels)
    assert accuracy >= HELD_OUT_ACCURACY, accuracy


def test_a_run_of_many_binary_problems_says_the_counts_and_the_worst():
    """Issue 48: a one-vs-one job's message was about 30 KB (one clause per each of 325 pairs).
    Beyond a few problems the message is the count of each status and the worst one's own
    message; the per-problem messages stay in the subproblems."""
    from solvers.base import SubproblemResult, Termination
    from solvers.train import SPELLED_OUT_SUBPROBLEMS, summary_message

    def sub(label, status, gap):
        return SubproblemResult(label, 1.0, status, f"{status} at gap {gap:g}", 10,
                                {"relative_duality_gap": gap})

    many = [sub(str(k), Termination.CONVERGED, 1e-7 * (k + 1)) for k in range(300)]
    many[17] = sub("17", Termination.MAX_ITER, 1e-3)
    message = summary_message(many)
    assert message == ("300 binary problems: 299 converged, 1 max_iter; the worst, class 17: "
                       "max_iter at gap 0.001")
    converged = many[:17]
    assert summary_message(converged).endswith("class 16: converged at gap 1.7e-06")
    few = many[:SPELLED_OUT_SUBPROBLEMS]
    assert summary_message(few) == "; ".join(f"class {s.label}: {s.message}" for s in few)
