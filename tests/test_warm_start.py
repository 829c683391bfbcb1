"""One warm-start argument for every family: ``start=WarmStart(...)`` (``solvers.base``).

* every family that warm-starts takes ``WarmStart(beta=...)`` in its spec's ``run`` and gives
  the iterates the old spelling (``start=`` as a bare vector) gave, which still works for one
  release with a ``DeprecationWarning`` naming the new spelling;
* the fields a family reads beyond beta (alm's and dual_cd's dual point, the cutting planes'
  carried cuts, the one-vs-rest fit's model) and the ones it ignores;
* the families' old keywords (``beta0``, ``w_guess`` and ``active_guess``, ``lambda0``,
  ``alpha``, ``resume``, ``start_model``) warn, name the new spelling and start where they
  did; one given with a ``start`` that holds the same field is refused;
* the distributed solves take the same argument, and their checkpoint is a WarmStart.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from shared_data import load

# the in-process stand-in for a Dask client (the partitions' calls run in this process)
from test_distributed_rounds import in_process

import solvers
from solvers import alm, cutting_plane, dual_cd, mfn
from solvers.base import WarmStart
from solvers.cutting_plane import PathCarry
from solvers.distributed import DistributedBinaryProblem
from solvers.interior_point import distributed as interior_point_distributed
from solvers.monitor import ListMonitor
from solvers.multiclass import fit_linear_one_vs_rest
from solvers.problems import BinaryProblem, CrammerSingerProblem, OrdinalProblem
from solvers.train import fit_handler

DEPRECATED = DeprecationWarning

#: each family that warm-starts, with settings that make its records reproducible
#: (dual_cd: LIBLINEAR's rule, whose checks are not scheduled by timing)
FAMILY_SETTINGS = {
    "mfn": {"loss": "squared_hinge"},
    "alm": {"loss": "squared_hinge", "bias": "free"},
    "dual_cd": {"loss": "hinge", "stop_rule": "projected_gradient", "eps": 1e-4},
    "cutting_plane": {"loss": "hinge"},
    "interior_point": {"loss": "hinge", "bias": "free", "linear_solver": "direct"},
    "lssvm": {"kernel": "linear"},
    "proximal_svm": {"kernel": "linear"},
    "newton": {"loss": "logistic"},
}


def heart():
    data = load("heart_scale")
    return data.X, np.where(data.y == data.classes[1], 1.0, -1.0)


def recorded(call, *args, **kwargs):
    """(solution, records) of ``call(*args, monitor, **kwargs)``."""
    monitor = ListMonitor()
    return call(*args, monitor, **kwargs), monitor.records


def assert_same_iterates(first, second) -> None:
    """Two runs (solution, records) that made the same iterations to the same point."""
    (a, a_records), (b, b_records) = first, second
    assert a.iterations == b.iterations
    assert [r.objective for r in b_records] == pytest.approx(
        [r.objective for r in a_records], rel=1e-12)
    np.testing.assert_allclose(b.beta, a.beta, rtol=1e-12, atol=1e-14)


def test_every_family_that_warm_starts_is_covered():
    warm = {spec.name for spec in solvers.list_solvers() if spec.warm_start and spec.run}
    assert warm == set(FAMILY_SETTINGS)


@pytest.mark.parametrize("name", sorted(FAMILY_SETTINGS))
def test_run_starts_from_a_warm_start_as_from_the_old_bare_vector(name):
    """The spec's ``run`` from the solution at C = 0.5 to the problem at C = 1: the same
    iterates as the old ``start=beta`` (which warns), to the cold start's optimum."""
    spec = solvers.get_solver(name)
    X, y = heart()
    near = spec.params_model(C=0.5, **FAMILY_SETTINGS[name])
    nearby = spec.run(near.binary_problem(X, y), near, None).beta
    params = spec.params_model(C=1.0, **FAMILY_SETTINGS[name])
    problem = params.binary_problem(X, y)
    warm = recorded(spec.run, problem, params, start=WarmStart(beta=nearby))
    with pytest.warns(DEPRECATED, match=r"pass start=WarmStart\(beta=\.\.\.\)"):
        old = recorded(spec.run, problem, params, start=nearby)
    assert_same_iterates(warm, old)
    cold = spec.run(problem, params, None)
    assert warm[0].objective == pytest.approx(cold.objective, rel=1e-5)


def test_a_start_of_another_type_is_refused():
    X, y = heart()
    problem = BinaryProblem(X, y, C=1.0)
    with pytest.raises(TypeError, match="start must be a WarmStart, not dict"):
        mfn.run(problem, mfn.MFNParams(), None, start={"beta": problem.zeros()})


# -- mfn: beta0, w_guess and active_guess; the ordinal solve ------------------------------------


def test_mfn_old_keywords_warn_and_start_where_they_did():
    X, y = heart()
    problem = BinaryProblem(X, y, C=1.0)
    params = mfn.MFNParams(linear_solver="cgls")
    nearby = mfn.solve(problem.with_C(0.5), params.model_copy(update={"C": 0.5})).beta
    for continuation in (False, True):
        new = recorded(mfn.solve, problem, params, start=WarmStart(beta=nearby),
                       continuation=continuation)
        with pytest.warns(DEPRECATED, match=r"beta0= is deprecated .* start=WarmStart\(beta="):
            old = recorded(mfn.solve, problem, params, beta0=nearby, continuation=continuation)
        assert_same_iterates(new, old)
    w = nearby[:-1]
    active = np.flatnonzero(problem.margins(nearby) < 1.0)
    seeded = WarmStart(beta=mfn.seed_from_weights(problem, w, active))
    new = recorded(mfn.solve, problem, params, start=seeded)
    with pytest.warns(DEPRECATED, match=r"w_guess= .*=seed_from_weights\(problem, w_guess"):
        old = recorded(mfn.solve, problem, params, w_guess=w, active_guess=active)
    assert_same_iterates(new, old)
    with pytest.warns(DEPRECATED), pytest.raises(ValueError, match="give start= alone"):
        mfn.solve(problem, params, start=WarmStart(beta=nearby), beta0=nearby)


def test_mfn_ordinal_beta0_is_the_warm_starts_beta():
    data = load("heart_scale")
    ranks = np.searchsorted(data.classes, data.y) + 1
    problem = OrdinalProblem(data.X, ranks, 2, C=1.0)
    params = mfn.MFNParams(task="ordinal", linear_solver="cgls")
    nearby = mfn.solve_ordinal(OrdinalProblem(data.X, ranks, 2, C=0.5),
                               params.model_copy(update={"C": 0.5})).beta
    new = recorded(mfn.solve_ordinal, problem, params, start=WarmStart(beta=nearby),
                   continuation=True)
    with pytest.warns(DEPRECATED, match=r"beta0= .* start=WarmStart\(beta=\.\.\.\)"):
        old = recorded(mfn.solve_ordinal, problem, params, beta0=nearby, continuation=True)
    assert_same_iterates(new, old)


def test_mfn_ignores_a_dual_point():
    """A primal method: a warm start with only a dual point is the cold start."""
    X, y = heart()
    problem = BinaryProblem(X, y, C=1.0)
    params = mfn.MFNParams()
    assert_same_iterates(recorded(mfn.run, problem, params),
                         recorded(mfn.run, problem, params,
                                  start=WarmStart(dual=np.ones(problem.n_samples))))


# -- alm: beta0, w_guess, lambda0 ----------------------------------------------------------------


def test_alm_reads_the_dual_point_as_its_multipliers_and_old_keywords_warn():
    """``WarmStart(dual=alpha)`` is lambda = -y alpha: the old ``lambda0`` = -y alpha starts
    the same iterations; ``beta0`` is ``start.beta``, ``w_guess`` is (w, 0)."""
    X, y = heart()
    problem = BinaryProblem(X, y, C=1.0, loss="squared_hinge", bias="free")
    params = alm.ALMParams(loss="squared_hinge", bias="free", tol=1e-8)
    nearby = alm.solve(problem.with_C(0.5), params.model_copy(update={"C": 0.5})).beta
    alpha = problem.balance(problem.dual_from_primal(nearby))
    new = recorded(alm.solve, problem, params, start=WarmStart(beta=nearby, dual=alpha))
    with pytest.warns(DEPRECATED) as warned:
        old = recorded(alm.solve, problem, params, beta0=nearby, lambda0=-problem.y * alpha)
    assert_same_iterates(new, old)
    assert [str(w.message).split("=")[0] for w in warned] == ["beta0", "lambda0"]
    assert "start=WarmStart(dual=alpha), alpha = -y lambda0" in str(warned[1].message)
    # the dual alone: the cold (w, b) with those multipliers
    new = recorded(alm.solve, problem, params, start=WarmStart(dual=alpha))
    with pytest.warns(DEPRECATED, match="lambda0="):
        old = recorded(alm.solve, problem, params, lambda0=-problem.y * alpha)
    assert_same_iterates(new, old)
    new = recorded(alm.solve, problem, params,
                   start=WarmStart(beta=problem.join(nearby[:-1], 0.0)))
    with pytest.warns(DEPRECATED, match=r"problem\.join\(w_guess, 0\.0\)"):
        old = recorded(alm.solve, problem, params, w_guess=nearby[:-1])
    assert_same_iterates(new, old)
    with pytest.warns(DEPRECATED), pytest.raises(ValueError, match="give start= alone"):
        alm.solve(problem, params, beta0=nearby, w_guess=nearby[:-1])


# -- dual_cd: alpha -------------------------------------------------------------------------------


def test_dual_cd_takes_the_dual_point_before_the_primal_one_and_alpha_warns():
    X, y = heart()
    problem = BinaryProblem(X, y, C=1.0, loss="hinge")
    params = dual_cd.DualCDParams(loss="hinge", stop_rule="projected_gradient")
    nearby = dual_cd.solve(problem.with_C(0.5), params.model_copy(update={"C": 0.5}))
    alpha = problem.dual_from_primal(nearby.beta)
    new = recorded(dual_cd.solve, problem, params, start=WarmStart(dual=alpha))
    both = recorded(dual_cd.solve, problem, params,
                    start=WarmStart(beta=np.zeros_like(nearby.beta), dual=alpha))
    assert_same_iterates(new, both)
    with pytest.warns(DEPRECATED, match=r"alpha= .* start=WarmStart\(dual=\.\.\.\)"):
        old = recorded(dual_cd.solve, problem, params, alpha=alpha)
    assert_same_iterates(new, old)


def test_dual_cd_crammer_singer_alpha_is_the_warm_starts_dual():
    data = load("dna.scale").subset(np.arange(300))
    labels = np.searchsorted(data.classes, data.y)
    problem = CrammerSingerProblem(data.X, labels, data.classes.shape[0], C=1.0)
    params = dual_cd.DualCDParams(loss="hinge", multiclass="crammer_singer",
                                  stop_rule="projected_gradient", max_iter=3)
    _, alpha = dual_cd.solve_crammer_singer(problem, params)
    params = params.model_copy(update={"max_iter": 1000})
    new, new_alpha = dual_cd.solve_crammer_singer(problem, params,
                                                  start=WarmStart(dual=alpha.copy()))
    with pytest.warns(DEPRECATED, match=r"alpha= .* start=WarmStart\(dual=\.\.\.\)"):
        old, old_alpha = dual_cd.solve_crammer_singer(problem, params, alpha=alpha.copy())
    assert new.iterations == old.iterations
    np.testing.assert_array_equal(new_alpha, old_alpha)


# -- the cutting planes: the carried cuts -----------------------------------------------------


def test_the_cutting_planes_state_carries_the_cuts_as_the_path_does():
    """``solve(start=WarmStart(state=carry))`` at each C in turn is the C path: every cut
    carried and rescaled, the same iterations; a lone beta starts with no cuts."""
    X, y = heart()
    problem = BinaryProblem(X, y, C=1.0, loss="hinge")
    params = cutting_plane.CuttingPlaneParams(tol=1e-6)
    Cs = [0.25, 0.5, 1.0]
    path = cutting_plane.solve_path(problem, Cs, params)
    carry = PathCarry()
    for C, on_path in zip(Cs, path, strict=True):
        solution = cutting_plane.solve(problem.with_C(C), params.model_copy(update={"C": C}),
                                       start=WarmStart(state=carry))
        assert solution.iterations == on_path.iterations
        assert solution.objective == pytest.approx(on_path.objective, rel=1e-12)
    assert carry.C == 1.0 and carry.buffer.m > 0
    lone = cutting_plane.solve(problem, params, start=WarmStart(beta=path[1].beta))
    assert lone.iterations > path[2].iterations


# -- the one-vs-rest fit: start_model ------------------------------------------------------------


def test_the_one_vs_rest_fit_starts_each_problem_from_a_models_row():
    data = load("dna.scale").subset(np.arange(600))
    spec = solvers.get_solver("dual_cd")
    params = dual_cd.DualCDParams(loss="squared_hinge", stop_rule="projected_gradient")
    handler = fit_handler(spec, params, data)
    assert handler is fit_linear_one_vs_rest
    # a tighter solve's model: from its rows each problem ends within a pass or two
    first = handler(data, spec, params.model_copy(update={"eps": 1e-4}), ListMonitor())
    new = handler(data, spec, params, ListMonitor(), start=WarmStart(model=first.model))
    with pytest.warns(DEPRECATED, match=r"start_model= .* start=WarmStart\(model=\.\.\.\)"):
        old = handler(data, spec, params, ListMonitor(), start_model=first.model)
    with pytest.warns(DEPRECATED, match="start_model="):  # given by position, as before
        positional = handler(data, spec, params, ListMonitor(), first.model)
    cold = handler(data, spec, params, ListMonitor())
    for fit in (old, positional):
        np.testing.assert_array_equal(fit.model.coef_, new.model.coef_)
        assert [s.iterations for s in fit.subproblems] == \
            [s.iterations for s in new.subproblems]
    assert sum(s.iterations for s in new.subproblems) < \
        sum(s.iterations for s in cold.subproblems)


# -- the distributed solves: resume -----------------------------------------------------------


@pytest.fixture(scope="module")
def partitioned():
    data = load("heart_scale")
    return data, in_process(data, [2, 1])


@pytest.mark.parametrize("solve, params", [
    (mfn.solve_distributed, mfn.MFNParams()),
    (interior_point_distributed.solve,
     solvers.get_solver("interior_point").params_model(loss="hinge", linear_solver="direct")),
])
def test_the_distributed_solves_take_the_warm_start_and_resume_warns(partitioned, solve,
                                                                    params):
    data, remote = partitioned
    positive = data.classes[1]

    def problem():
        return DistributedBinaryProblem(remote, positive, C=1.0, loss=params.loss,
                                        bias=params.bias)

    cold_problem = problem()
    cold = solve(cold_problem, params)
    assert isinstance(cold_problem.checkpoint, WarmStart)
    np.testing.assert_array_equal(cold_problem.checkpoint.beta, cold.beta)
    nearby = cold.beta * 0.9
    new = solve(problem(), params, start=WarmStart(beta=nearby))
    with pytest.warns(DEPRECATED, match=r"resume= .* start=WarmStart\(beta=\.\.\.\)"):
        old = solve(problem(), params, resume=nearby)
    assert new.iterations == old.iterations
    np.testing.assert_array_equal(new.beta, old.beta)


def test_the_distributed_cutting_planes_resume_from_their_checkpoints_cuts(partitioned):
    data, remote = partitioned
    spec = solvers.get_solver("cutting_plane")
    params = spec.params_model(loss="hinge", max_iter=4)

    def problem():
        return DistributedBinaryProblem(remote, data.classes[1], C=1.0, loss="hinge")

    first = problem()
    spec.distributed(first, params, None)
    checkpoint = first.checkpoint
    assert isinstance(checkpoint, WarmStart) and checkpoint.state.buffer.m > 0
    params = params.model_copy(update={"max_iter": 100})
    new = spec.distributed(problem(), params, None, start=copy.deepcopy(checkpoint))
    with pytest.warns(DEPRECATED, match=r"resume= .* start=WarmStart\(state=\.\.\.\)"):
        old = spec.distributed(problem(), params, None,
                               resume=copy.deepcopy(checkpoint.state))
    assert new.iterations == old.iterations
    assert new.objective == pytest.approx(old.objective, rel=1e-12)
