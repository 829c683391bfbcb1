"""What a solver solves is declared once (``solvers.base.Solves``) and everything derives from it.

* Declared means solvable: every (task, loss, bias) combination of every registered spec,
  ``auto`` included, trains on real data and gives a model that predicts.
* The parameter models' choices, the runtime guards, ``auto``'s declaration and the service's
  listing are the declaration's (pinned here), and a refusal says why.
* The loss layer names each loss once (``solvers.losses.canonical``).
"""

from __future__ import annotations

import typing

import numpy as np
import pytest
from shared_data import load

import solvers
from solvers.base import TASKS, InvalidParametersError, Solves
from solvers.losses import LOSS_TYPES, LOSSES, canonical, get_loss
from solvers.problems import BinaryProblem
from solvers.registry import AUTO_CANDIDATES

SPECS = solvers.list_solvers()


def _data(task: str) -> solvers.Dataset:
    """A small real dataset posing ``task``: heart_scale (two labels) for binary problems,
    the first 150 rows of dna (three labels, which are also ranks 1..3) otherwise."""
    if task == "binary":
        return load("heart_scale").subset(np.arange(120))
    if task == "regression":
        return load("regression/housing_scale").subset(np.arange(150))
    dna = load("dna.scale")
    rows = np.concatenate([np.flatnonzero(dna.y == c)[:50] for c in dna.classes])
    return dna.subset(rows)


def _params(combination, spec) -> dict:
    params = {"loss": combination.loss, "bias": combination.bias, "C": 0.5}
    if combination.loss == "lp":
        params["p"] = 1.5
    if combination.task in ("ordinal", "regression", "one_class"):
        params["task"] = combination.task
    if combination.task == "regression" and spec.params_model.own_kernel:
        # a kernel SVR's |coef_j| <= C: at C = 0.5 housing's RBF fit stays near the median
        params["C"] = 10.0
    elif combination.task in ("crammer_singer", "ovo"):
        params["multiclass"] = combination.task
    if combination.task == "ovo" and not spec.params_model.own_kernel:
        # a linear solver's one-vs-one is the low-rank path's strategy
        params.update(approximation="nystrom", rank=60, kernel="rbf")
    return params


CASES = [pytest.param(spec.name, c, id=f"{spec.name}-{c.task}-{c.loss}-{c.bias}")
         for spec in SPECS for c in spec.solves.combinations]


@pytest.mark.parametrize(("solver", "combination"), CASES)
def test_every_declared_combination_trains(solver, combination):
    data = _data(combination.task)
    result = solvers.train(data, solver=solver,
                           **_params(combination, solvers.get_solver(solver)))
    assert result.status in ("converged", "max_iter"), result.message
    assert np.isfinite(result.objective)
    predictions = result.model.predict(data.X)
    if combination.task == "regression":  # real values, closer to the labels than their mean
        assert np.mean((predictions - data.y) ** 2) < 0.5 * np.var(data.y)
    elif combination.task == "one_class":  # +1 inside the support, -1 for at most ~nu = 0.5
        assert set(np.unique(predictions)) <= {-1, 1}
        assert 0.0 < np.mean(predictions == -1) <= 0.55
    else:
        assert set(np.unique(predictions)) <= set(data.classes)
        assert np.mean(predictions == data.y) > 0.5
    if result.choice is not None:  # auto: the solver it chose declares the combination too
        chosen = solvers.get_solver(result.choice.solver)
        assert chosen.solves.allows(combination.task, combination.loss, combination.bias)


@pytest.mark.parametrize("spec", [s for s in SPECS if not s.portfolio], ids=lambda s: s.name)
def test_parameter_models_and_listing_derive_from_the_declaration(spec):
    solves = spec.solves
    model = spec.params_model
    assert model.solves is solves
    for field, values in (("loss", solves.losses), ("bias", solves.bias_modes)):
        assert set(typing.get_args(model.model_fields[field].annotation)) == set(values)
    listing = spec.describe()
    assert listing["solves"] == solves.as_list()
    assert listing["losses"] == list(solves.losses)
    assert set(listing["tasks"]) <= set(TASKS)
    schema = listing["params_schema"]["properties"]
    assert set(schema["loss"].get("enum", [schema["loss"].get("const")])) == set(solves.losses)


def test_auto_declares_what_its_candidates_solve():
    """auto's declaration is the union of its candidates': nothing more (no candidate solves
    modified Huber with a free bias, or least squares without a bias, so auto refuses them
    with the reason instead of failing inside train).  The candidates are the registry's:
    every spec that declares ``auto_candidates`` races with them, so a family's new solver,
    loss or task flows into auto's declaration by its own."""
    from solvers import auto

    racing = [s for s in SPECS if s.auto_candidates]
    assert set(AUTO_CANDIDATES) == set(auto.candidates_of(racing))
    assert {c.solver for c in AUTO_CANDIDATES} == {s.name for s in racing}
    assert solvers.get_solver("auto").params_model.candidates == AUTO_CANDIDATES
    union = set()
    for name in {c.solver for c in AUTO_CANDIDATES}:
        union |= set(solvers.get_solver(name).solves.combinations)
    assert set(solvers.get_solver("auto").solves.combinations) == union
    data = _data("binary")
    for loss, bias in (("modified_huber", "free"), ("least_squares", "none")):
        with pytest.raises(InvalidParametersError, match="auto.*does not solve"):
            solvers.train(data, solver="auto", loss=loss, bias=bias)


def test_refusals_name_the_reason():
    data = _data("binary")
    with pytest.raises(InvalidParametersError, match="first reduced problems are unbounded"):
        solvers.train(data, solver="cutting_plane", bias="free")
    with pytest.raises(InvalidParametersError, match="thresholds of ordinal regression"):
        solvers.train(_data("ordinal"), solver="mfn", task="ordinal", loss="hinge")
    with pytest.raises(InvalidParametersError, match="does not solve Crammer-Singer"):
        solvers.train(_data("ovr"), solver="mfn", multiclass="crammer_singer")
    # the families' own guards, on a problem handed to the engine directly, say the same
    from solvers import cutting_plane, mfn

    X, y = data.X, np.where(data.y == data.classes[1], 1.0, -1.0)
    with pytest.raises(ValueError, match="unbounded"):
        cutting_plane.solve(BinaryProblem(X, y, loss="hinge", bias="free"))
    with pytest.raises(ValueError, match="mfn does not solve binary problems "
                                         "with loss='least_squares'"):
        mfn.solve(BinaryProblem(X, y, loss="least_squares"))


def test_lp_at_the_ends_of_its_range_is_the_hinge_or_the_squared_hinge():
    assert canonical("lp", 1.0) == ("hinge", 1.0)
    assert canonical("lp", 2.0) == ("squared_hinge", 2.0)
    assert canonical("lp", 1.5) == ("lp", 1.5)
    assert canonical("hinge", 2.0) == ("hinge", 1.0)  # p is lp's alone
    assert get_loss("lp", 1.0) is get_loss("hinge")
    assert get_loss("lp", 2.0).code == get_loss("squared_hinge").code
    data = _data("binary")
    # a solver without lp of its own takes lp with p = 1 as the hinge it declares
    posed = solvers.train(data, solver="cutting_plane", loss="lp", p=1.0)
    assert posed.params.loss == "hinge"
    problem = BinaryProblem(data.X, np.where(data.y == data.classes[1], 1.0, -1.0),
                            loss="lp", p=1.0)
    assert problem.loss == "hinge" and problem.loss_function is get_loss("hinge")
    # the problem key is canonical: alm's lp at p = 1 and the cutting planes' hinge compare
    alm = solvers.get_solver("alm").params_model(loss="lp", p=1.0)
    assert alm.problem_fields()["loss"] == "hinge"


def test_the_loss_layer_names_every_loss_once():
    assert LOSSES == tuple(LOSS_TYPES)
    assert LOSSES == ("hinge", "squared_hinge", "lp", "modified_huber", "least_squares",
                      "logistic", "epsilon_insensitive", "squared_epsilon_insensitive")
    for name in LOSSES:
        loss = get_loss(name, 1.5)
        assert loss.name == canonical(name, 1.5)[0]
    with pytest.raises(ValueError, match="unknown loss"):
        canonical("cauchy")


def test_a_declaration_refuses_what_it_does_not_name():
    solves = Solves.product(("binary",), ("hinge",), ("none",)).refusing(
        "no bias here", bias="regularized")
    assert solves.allows("binary", "lp", "none", p=1.0)
    assert not solves.allows("ovr", "hinge", "none")
    assert solves.refusal("binary", "hinge", "regularized", solver="x").endswith("no bias here")
    assert "one-vs-rest" in solves.refusal("ovr", "hinge", "none", solver="x")
    with pytest.raises(ValueError, match="unknown task"):
        Solves.product(("clustering",), ("hinge",), ("none",))
