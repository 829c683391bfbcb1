"""The rounds of the distributed solves (solvers.distributed), counted in this process.

An in-process stand-in for a Dask client runs the partitions' calls here (the same
:class:`~solvers.distributed.Partition` objects, the same :class:`PartitionGroup` rounds and
communication record; no worker processes), so the tests can count rounds and name their
functions quickly.  tests/test_distributed.py runs the same solves on a real cluster.

* the exact line search's selection (:func:`solvers.distributed.breakpoint_root`): every
  path (breakpoints gathered in the first round, one selection round, several, a jump over
  zero at a value many breakpoints share) returns the single machine's root;
* mfn keeps each partition's Gram matrix of the active rows up to date by the rows that
  entered and left (the single machine's upkeep), and makes its trial round with the
  factorized step's round;
* OCAS makes 2-3 rounds per iteration and CPA one, with the single machine's iterates.
"""

from __future__ import annotations

import numpy as np
import pytest
from distributed_helpers import assert_same_records
from distributed_helpers import beta_of as _beta
from distributed_helpers import relative as _relative
from shared_data import data_path

import solvers
from solvers import config, mfn
from solvers.core.gram import weighted_gram
from solvers.core.linesearch import piecewise_linear_root, piecewise_linear_root_jumps
from solvers.cutting_plane.search import hinge_ray_breakpoints
from solvers.distributed import (
    DistributedBinaryProblem,
    Partition,
    PartitionGroup,
    breakpoint_root,
    keep_breakpoints,
)
from solvers.distributed import dataset as distributed_dataset
from solvers.distributed import newton_rows as partitioned_rows
from solvers.distributed.cluster import payload_bytes
from solvers.interior_point import InteriorPointParams, mpc
from solvers.interior_point.distributed import PartitionedMPCRows, PredictorAnswer, SetupAnswer
from solvers.losses.kernels import clipped_loss_breakpoints
from solvers.mfn import engine as mfn_engine
from solvers.monitor import ListMonitor, Reporter
from solvers.problems import BinaryProblem
from solvers.problems.newton_rows import TrialAnswer, combine


class _Done:
    def __init__(self, value):
        self.value = value

    def result(self, timeout=None):
        return self.value


class _Actor:
    """An actor's interface over an object of this process: every call returns a future."""

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        method = getattr(self._target, name)
        return lambda *args, **kwargs: _Done(method(*args, **kwargs))


class InProcessClient:
    """What :func:`solvers.distributed.read_svmlight` asks of a Dask client, in process."""

    status = "running"

    def scheduler_info(self):
        return {"workers": {"in-process": {}}}

    def submit(self, cls, *args, actor=False, **kwargs):
        return _Done(_Actor(cls(*args)))

    def cancel(self, futures):
        pass


def _rows(data, rows):
    return lambda: solvers.Dataset(data.X[rows], data.y[rows])


def in_process(data, fractions):
    """``data`` split into contiguous partitions of the given shares (0: an empty one)."""
    bounds = np.floor(np.cumsum([0, *fractions]) / sum(fractions) * data.n_samples)
    sources = [("call", _rows(data, np.arange(int(lo), int(hi))), ())
               for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    return distributed_dataset.read_svmlight(InProcessClient(), sources,
                                             n_features=data.n_features)


def record_rounds(group: PartitionGroup) -> list[str]:
    """The name of every round's function from now on (a problem's rounds by the function
    they carry)."""
    names = []
    original = group.map

    def map(function, *args, **kwargs):
        name = function.__name__
        if name == "_with_pending":
            name = args[2].__name__
        names.append(name)
        return original(function, *args, **kwargs)

    group.map = map
    return names


@pytest.fixture(scope="module")
def a9a():
    data = solvers.read_svmlight(data_path("a9a"))
    return solvers.Dataset(data.X[:3000], data.y[:3000])


# -- the line search's selection ---------------------------------------------------------------


def _local_group(count: int):
    parts = [Partition(("call", lambda: solvers.Dataset(np.zeros((0, 1)), np.zeros(0)), ()))
             for _ in range(count)]
    return PartitionGroup(None, [_Actor(p) for p in parts], ["in-process"] * count,
                          [None] * count), parts


def _hinge_rays(rng, sizes, ties):
    """OCAS's line: per partition (slope, breakpoints, jumps) of random margins on a ray."""
    out = []
    for n in sizes:
        mb = rng.normal(1.0, 1.0, n)
        mt = rng.normal(1.0, 2.0, n)
        if ties:  # half of them cross at mu = 1/3 (duplicated rows): 1 - 0 = mu (3 - 0)
            mb[: n // 2] = 0.0
            mt[: n // 2] = 3.0
        slope, bp, jump = hinge_ray_breakpoints(mb, mt, np.full(n, 0.5))
        out.append((slope, slope, bp, jump, jump))
    return out


def _squared_hinge_rays(rng, sizes):
    """Appendix A's line: per partition (l0, r0, breakpoints, dl, dr) of random slacks."""
    out = []
    for n in sizes:
        xi0 = rng.normal(0.0, 1.0, n)
        xi1 = rng.normal(0.0, 1.0, n)
        out.append(clipped_loss_breakpoints(xi0, xi1, np.full(n, 0.7), 0.0, np.inf))
    return out


def _root(pieces, reg_l, reg_r, jumps, quantiles=None, window=None, answers=None):
    """(the distributed root, the rounds it took, the single machine's root); ``answers``
    (a list) receives the partitions' first answers."""
    group, parts = _local_group(len(pieces))
    small = max(config.DISTRIBUTED_GATHER_BREAKPOINTS // len(pieces), 1)
    first = [keep_breakpoints(part, *piece[2:], quantiles or config.DISTRIBUTED_PIVOTS, small,
                              window=window)
             for part, piece in zip(parts, pieces, strict=True)]
    if answers is not None:
        answers.extend(first)
    l0 = reg_l + sum(p[0] for p in pieces)
    r0 = reg_r + sum(p[1] for p in pieces)
    before = group.communication.reductions
    root = breakpoint_root(group, first, l0, r0, jumps=jumps,
                           lines=[(p[0], p[1]) for p in pieces])
    finish = piecewise_linear_root_jumps if jumps else piecewise_linear_root
    single = finish(l0, r0, *(np.concatenate([p[i] for p in pieces]) for i in (2, 3, 4)))
    return root, group.communication.reductions - before, single


@pytest.mark.parametrize("jumps", [True, False])
def test_breakpoints_few_enough_are_gathered_with_the_first_round(jumps):
    rng = np.random.default_rng(1)
    sizes = [700, 0, 1200]
    pieces = _hinge_rays(rng, sizes, False) if jumps else _squared_hinge_rays(rng, sizes)
    reg = (-0.5, 3.0) if jumps else (-2.0, 40.0)
    root, rounds, single = _root(pieces, *reg, jumps)
    assert rounds == 0  # 1900 breakpoints <= DISTRIBUTED_GATHER_BREAKPOINTS: no selection
    assert root == pytest.approx(single, rel=1e-13, abs=1e-15) and 0.0 < root


@pytest.mark.parametrize("jumps", [True, False])
def test_one_selection_round_finds_the_single_machines_root(jumps, monkeypatch):
    """More breakpoints than are gathered: the first round's points bound the slope, the
    driver narrows the bracket, and one round brings the breakpoints inside it."""
    monkeypatch.setattr(config, "DISTRIBUTED_GATHER_BREAKPOINTS", 4096)
    rng = np.random.default_rng(2)
    sizes = [20000, 15000, 0]
    pieces = _hinge_rays(rng, sizes, False) if jumps else _squared_hinge_rays(rng, sizes)
    reg = (-0.5, 3.0) if jumps else (-2.0, 40.0)
    root, rounds, single = _root(pieces, *reg, jumps)
    assert rounds == 1
    assert root == pytest.approx(single, rel=1e-13, abs=1e-15) and 0.0 < root
    # the same root from the gathered path (every breakpoint sent with the first round)
    monkeypatch.setattr(config, "DISTRIBUTED_GATHER_BREAKPOINTS", 10 ** 6)
    gathered, rounds, _ = _root(pieces, *reg, jumps)
    assert rounds == 0 and gathered == pytest.approx(root, rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("jumps", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_several_selection_rounds_find_the_single_machines_root(jumps, seed, monkeypatch):
    """A small gathering limit (few points a round): the bracket narrows over several
    rounds, each bounded by the partitions' points, to the same root."""
    monkeypatch.setattr(config, "DISTRIBUTED_GATHER_BREAKPOINTS", 24)
    rng = np.random.default_rng(10 + seed)
    sizes = [int(s) for s in rng.integers(0, 3000, 3)]
    pieces = _hinge_rays(rng, sizes, seed % 2 == 0) if jumps else \
        _squared_hinge_rays(rng, sizes)
    reg = (-rng.uniform(0.1, 5.0), rng.uniform(0.5, 60.0))
    root, rounds, single = _root(pieces, *reg, jumps, quantiles=4)
    assert rounds >= 1
    assert root == pytest.approx(single, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("jumps", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_a_window_brings_back_only_its_breakpoints_and_finds_the_same_root(jumps, seed):
    """The first answer holds the breakpoints in [0, window] only (and a few points above
    it): no further round when the root is inside, one selection round or more when it is
    above; the single machine's root either way, for fewer bytes than every breakpoint."""
    rng = np.random.default_rng(40 + seed)
    sizes = [int(s) for s in rng.integers(500, 4000, 3)] + [0]
    pieces = _hinge_rays(rng, sizes, seed % 2 == 0) if jumps else \
        _squared_hinge_rays(rng, sizes)
    reg = (-rng.uniform(0.1, 5.0), rng.uniform(0.5, 60.0))
    gathered, answers_all = [], []
    root, rounds, single = _root(pieces, *reg, jumps, answers=answers_all)
    assert rounds == 0 and root == pytest.approx(single, rel=1e-12, abs=1e-15)
    everything = payload_bytes(answers_all)
    for window, inside in ((2.0 * root + 1e-3, True), (0.5 * root, False)):
        answers = []
        windowed, rounds, _ = _root(pieces, *reg, jumps, window=window, answers=answers)
        assert windowed == pytest.approx(single, rel=1e-12, abs=1e-15)
        assert (rounds == 0) == inside
        kept = sum(a.exact[0].shape[0] for a in answers)
        total = sum(p[2].shape[0] for p in pieces)
        assert kept == sum(int((p[2] <= window).sum()) for p in pieces) < total
        gathered.append(payload_bytes(answers))
    assert max(gathered) < everything


@pytest.mark.parametrize("jumps", [True, False])
def test_a_window_too_full_for_one_partition_mixes_with_the_others(jumps, monkeypatch):
    """A partition whose window holds more than it may send answers with points over the
    whole ray; the others' windows are read as points too, and the root is the same."""
    monkeypatch.setattr(config, "DISTRIBUTED_GATHER_BREAKPOINTS", 600)  # 300 a partition
    rng = np.random.default_rng(77)
    pieces = _hinge_rays(rng, [200, 5000], False) if jumps else \
        _squared_hinge_rays(rng, [200, 5000])
    reg = (-0.5, 3.0) if jumps else (-2.0, 40.0)
    answers = []
    root, rounds, single = _root(pieces, *reg, jumps, window=1e6, answers=answers)
    assert [type(a).__name__ for a in answers] == ["WindowAnswer", "tuple"]
    assert rounds >= 1 and root == pytest.approx(single, rel=1e-12, abs=1e-15)


def test_jumps_updates_are_sent_once():
    """OCAS's breakpoints move the slope's line in parallel (dl = dr, a jump): one array of
    updates goes back, 16 bytes a breakpoint, not 24."""
    rng = np.random.default_rng(5)
    (slope, _, bp, jump, _), = _hinge_rays(rng, [2000], False)
    part = _local_group(1)[1][0]
    answer = keep_breakpoints(part, bp, jump, jump, 64, 10 ** 6)
    assert answer[3][2] is None and payload_bytes(answer) == 16 * bp.shape[0] + 40
    windowed = keep_breakpoints(part, bp, jump, jump, 64, 10 ** 6, window=0.5)
    assert windowed.exact[2] is None


@pytest.mark.parametrize("jumps", [True, False])
def test_a_window_answer_sorts_only_what_goes_back_and_answers_as_the_sorted_set(jumps):
    """With a window nothing is sorted but the window's breakpoints (the set is kept as
    made); the points above the window, by selection, carry the sorted set's sums below and
    at each, and a later round's answer is the sorted set's (issue 51: on 2 M rows the
    whole set's sort was work the single machine's O(m) selection does not do)."""
    rng = np.random.default_rng(11)
    (_, _, bp, dl, dr), = _hinge_rays(rng, [5000], False) if jumps else \
        _squared_hinge_rays(rng, [5000])
    if jumps:
        dr = dl
    window = float(np.quantile(bp, 0.3))
    part = _local_group(1)[1][0]
    answer = keep_breakpoints(part, bp, dl, dr, 64, 10 ** 6, window=window)
    assert type(part.state["breakpoints"]).__name__ == "_Unsorted"
    # what the sorted set answers, as before the deferral
    reference = _local_group(1)[1][0]
    keep_breakpoints(reference, bp, dl, dr, 64, 10 ** 6)
    kept = reference.state["breakpoints"]
    inside = (kept[0] > 0.0) & (kept[0] <= window)
    assert np.array_equal(answer.exact[0], kept[0][inside])
    assert np.array_equal(answer.exact[1], kept[1][inside])
    passed, count, stats, few = answer.beyond
    assert passed == (0.0, 0.0) and count == int((bp > window).sum()) and few is None
    values, lt_l, lt_r, le_l, le_r = stats
    lo = int(np.searchsorted(kept[0], window, side="right"))
    left = np.searchsorted(kept[0], values, side="left")
    right = np.searchsorted(kept[0], values, side="right")
    sums_l, sums_r = kept[3], kept[4]
    scale = float(np.abs(dl).sum() + np.abs(dr).sum())
    for mine, theirs in ((lt_l, sums_l[left] - sums_l[lo]), (lt_r, sums_r[left] - sums_r[lo]),
                         (le_l, sums_l[right] - sums_l[lo]),
                         (le_r, sums_r[right] - sums_r[lo])):
        assert np.allclose(mine, theirs, rtol=0.0, atol=1e-12 * scale)
    # a later round (the root above the window) answers from the unsorted set as the sorted
    # one does: the sums passed, then the bracket's breakpoints in order
    from solvers.distributed.problem import _bracket_summary, _summary
    x, y = (float(v) for v in np.quantile(bp, [0.5, 0.6]))
    mine = _bracket_summary(part, window, x, y, 64, 10 ** 6)
    theirs = _summary(kept, window, x, y, 64, 10 ** 6)
    assert np.allclose(mine[0], theirs[0], rtol=1e-12, atol=1e-12 * scale)
    assert mine[1] == theirs[1] and all(
        (u is None and v is None) or np.array_equal(u, v)
        for u, v in zip(mine[3], theirs[3], strict=True))
    # and keeps only that bracket's breakpoints for the next
    assert part.state["breakpoints"].bp.shape[0] == mine[1]


@pytest.mark.parametrize("blocks", [1, 3])
def test_cgls_recurrence_products_are_the_two_pass_products(a9a, blocks):
    """A partition's CGLS round in one pass over its rows (issue 51) gives the two-pass
    form's z and q bit for bit and its sums and A'q to round-off, on a9a's active rows with
    a bias column, with one block and with several."""
    from solvers.core.linalg import cgls_recurrence_products
    from solvers.core.rows import BinaryRows
    from solvers.core.sparse import CompactRows

    rng = np.random.default_rng(3)
    X = a9a.X.tocsr()
    terms = BinaryRows(X, np.where(a9a.y > 0, 1.0, -1.0), np.full(X.shape[0], 0.5), 0.7)
    active = np.sort(rng.choice(X.shape[0], 1700, replace=False))
    A = CompactRows(terms.X, active, n_blocks=blocks)
    sqrt_c = np.sqrt(rng.uniform(0.1, 2.0, active.shape[0]))
    z0 = rng.normal(size=active.shape[0])
    q0 = rng.normal(size=active.shape[0])
    p = rng.normal(size=X.shape[1] + 1)
    gamma = 0.37
    # the two-pass form the partitions made until issue 51
    z = z0 - gamma * q0
    q = sqrt_c * terms.compact_forward(A, p)
    atq = terms.compact_adjoint(A, sqrt_c * q)
    mine_z = z0.copy()
    qq, zq, zz, mine_atq, mine_q = cgls_recurrence_products(A, sqrt_c, mine_z, q0.copy(),
                                                            gamma, p, bias_scale=0.7)
    assert np.array_equal(mine_z, z) and np.array_equal(mine_q, q)
    assert qq == pytest.approx(float(q @ q), rel=1e-13)
    assert zq == pytest.approx(float(z @ q), rel=1e-12)
    assert zz == pytest.approx(float(z @ z), rel=1e-13)
    assert np.allclose(mine_atq, atq, rtol=1e-13, atol=1e-13 * np.abs(atq).max())
    # no previous q: z is left as it is
    again_z = z0.copy()
    _, _, zz0, _, _ = cgls_recurrence_products(A, sqrt_c, again_z, None, gamma, p,
                                               bias_scale=0.7)
    assert np.array_equal(again_z, z0) and zz0 == pytest.approx(float(z0 @ z0), rel=1e-13)


def test_ocas_cut_at_interpolated_margins_sends_no_point(a9a):
    """OCAS's cut at w_c is taken from the margins interpolated on the workers: the round
    sends no parameter vector (its length is all the kernel reads), only the cut comes
    back; the iterates are the single machine's."""
    data = in_process(a9a, [2, 1])
    options = {"loss": "hinge", "method": "ocas", "max_iter": 6}
    one = solvers.train(a9a, solver="cutting_plane", **options)
    before = data.partitions.communication.kinds()
    many = solvers.train(data, solver="cutting_plane", **options)
    assert_same_records(one, many, 6)
    rounds, sent, received, _ = data.partitions.communication.kinds()["_oracle"]
    rounds -= before.get("_oracle", [0])[0]
    sent -= before.get("_oracle", [0, 0])[1]
    d = (a9a.n_features + 1) * 8
    # the first cut (at w_best = 0, margins made there) sends beta to both partitions; the
    # 6 iterations' cuts send none (names and scalars: before, beta again each)
    assert rounds == 7 and 2 * d <= sent < 3 * d


def test_a_jump_over_zero_at_a_value_every_breakpoint_shares(monkeypatch):
    """Thousands of breakpoints at one value (duplicated rows) more than are gathered: the
    bracket cannot narrow below them; the slope jumps over zero there."""
    monkeypatch.setattr(config, "DISTRIBUTED_GATHER_BREAKPOINTS", 100)
    pieces = [(-1.0, -1.0, np.full(n, 0.25), np.full(n, 1.0), np.full(n, 1.0))
              for n in (3000, 2000)]
    root, rounds, single = _root(pieces, 0.0, 0.5, True)
    assert root == single == 0.25 and rounds == 0  # the bounds are exact at the extremes


# -- mfn: the Gram matrix kept up to date on the partitions --------------------------------------


def test_mfn_partitions_update_their_gram_matrix_by_the_rows_that_changed(a9a):
    problem = BinaryProblem(a9a.X, np.where(a9a.y > 0, 1.0, -1.0), C=1.0)
    part = Partition(("call", lambda: a9a, ()))
    part.state["problem"] = problem
    solution = solvers.train(a9a, solver="mfn", tol=None, epsilon=1e-8)
    beta = _beta(solution.model)
    partitioned_rows._start(part, np.zeros(problem.n_features + 1))
    terms, weight = part.state["terms"], part.state["weight"]
    lower = np.tril_indices(terms.n_params)
    total = np.zeros((terms.n_params, terms.n_params))  # the driver's sum of the changes
    for k, point in enumerate((None, 1.0, 0.98, 0.97)):  # all rows active, then near the optimum
        if point is not None:
            part.state["outputs_bar"] = terms.outputs(point * beta)
        result = partitioned_rows._point(part, None if point is None else "accept",
                                         "squared_hinge", False, True)
        change = result.gram
        if change.columns is None:
            total[lower] += change.packed
        else:
            rows, cols = np.tril_indices(change.columns.size)
            total[change.columns[rows], change.columns[cols]] += change.packed
        active = part.state["active"]
        expected = weighted_gram(terms.X, weight[active], rows=active,
                                 extra_value=terms.extra_value)
        assert np.allclose(total[lower], expected[lower], rtol=1e-12, atol=1e-12)
        if k == 0:
            assert change.columns is None  # the first: the whole triangle
        if k >= 2:  # a few rows entered or left: updated, not rebuilt, and the change sent
            # on their columns only
            assert part.state["normal"].updates > 0
            assert change.columns is not None and change.columns.size < terms.n_params


def test_mfn_makes_its_trial_round_with_the_factorized_step(a9a):
    local = a9a
    data = in_process(local, [3, 1, 0, 2])
    names = record_rounds(data.partitions)
    options = {"tol": None, "epsilon": 1e-10}
    one = solvers.train(local, solver="mfn", **options)
    many = solvers.train(data, solver="mfn", **options)
    assert many.subproblems[0].extras["linear_solver"] == "cholesky"
    assert many.objective == pytest.approx(one.objective, rel=1e-9)
    assert _relative(_beta(one.model), _beta(many.model)) <= 1e-9
    newton = len(many.log)
    factorized = names.count("_factor_step")
    kinds = data.partitions.communication.kinds()  # the record by kind of round
    assert kinds["_factor_step"][0] == factorized and kinds["_point"][0] == names.count("_point")
    assert sum(k[1] + k[2] for k in kinds.values()) == \
        data.partitions.communication.bytes_sent + data.partitions.communication.bytes_received
    # a trial round of its own only where CGLS moved beta_bar (heuristic 1's capped call, a
    # factorized step rule (13) rejected); the rest came with the factorized step
    moved = sum(1 for r in many.log if r.extras["cg_iterations"] > 0)
    assert factorized >= newton - 1
    assert names.count("_trial") == moved
    # one at each run's start and one per Newton iteration
    assert names.count("_point") == newton + len(many.subproblems[0].extras["runs"])


# -- mfn: one loop over local or partitioned rows ---------------------------------------------


def _iterates(monkeypatch, solve, *args, **kwargs):
    """The Newton iterates (beta at every record) and the records of one mfn solve: the loop's
    own record call wrapped (every iterate the loop reports, local or partitioned)."""
    iterates = []
    report = mfn_engine.Engine._report

    def recording(self, beta, *rest):
        iterates.append(beta.copy())
        return report(self, beta, *rest)

    monkeypatch.setattr(mfn_engine.Engine, "_report", recording)
    solution = solve(*args, **kwargs)
    monkeypatch.setattr(mfn_engine.Engine, "_report", report)
    return iterates, solution


FRACTIONS = [[3, 1], [1, 0, 2], [5, 1, 0, 2, 3, 1, 4]]  # 2, 3 and 7 shards, an empty one


def _problems(a9a, fractions, params):
    y = np.where(a9a.y > 0, 1.0, -1.0)
    local = BinaryProblem(a9a.X, y, C=params.C, loss=params.loss)
    partitioned = DistributedBinaryProblem(in_process(a9a, fractions), 1.0, C=params.C,
                                           loss=params.loss)
    return local, partitioned


@pytest.mark.parametrize("fractions", FRACTIONS)
@pytest.mark.parametrize("loss", ["squared_hinge", "modified_huber"])
def test_mfn_takes_the_same_iterates_on_local_and_partitioned_rows(a9a, fractions, loss,
                                                                     monkeypatch):
    """The one loop over LocalNewtonRows and over PartitionedNewtonRows: the same Newton
    iterates to 1e-9 relative on 2, 3 and 7 unequal shards with an empty one, by the
    factorized step (auto's choice on a9a; heuristic 1's capped CGLS left out: see the next
    test).  The partitions' sums differ from one process's in the order of additions only."""
    params = mfn.MFNParams(tol=None, epsilon=1e-10, loss=loss, linear_solver="cholesky",
                           initial_cgls_iter=None)
    local, partitioned = _problems(a9a, fractions, params)
    one, solved = _iterates(monkeypatch, mfn.solve, local, params)
    many, distributed = _iterates(monkeypatch, mfn.solve_distributed, partitioned, params)
    assert len(one) == len(many) > 3
    for a, b in zip(one, many, strict=True):
        assert _relative(a, b) <= 1e-9
    assert distributed.objective == pytest.approx(solved.objective, rel=1e-12)
    assert distributed.extras["runs"] == solved.extras["runs"]
    assert distributed.extras["factorizations"] == solved.extras["factorizations"]


@pytest.mark.parametrize("fractions", FRACTIONS)
def test_mfn_runs_the_same_c_path_and_reaches_the_same_optimum_by_cgls(a9a, fractions,
                                                                       monkeypatch):
    """CGLS's iterates are not reproducible across summation orders: finite-precision CG
    amplifies a rounding difference (measured on these rows: 3.6e-7 after heuristic 1's 10
    iterations on ONE partition, from A'(z - gamma q) against A'z - gamma A'q alone; 1.9e-5 on
    two), so the CGLS path is pinned by its structure (the same C path's stages, the same
    runs) and its end: the same optimum to 1e-9."""
    params = mfn.MFNParams(tol=None, epsilon=1e-10, C=30.0, linear_solver="cgls")
    local, partitioned = _problems(a9a, fractions, params)
    one, solved = _iterates(monkeypatch, mfn.solve, local, params)
    many, distributed = _iterates(monkeypatch, mfn.solve_distributed, partitioned, params)
    runs = [(r["C"], r["status"]) for r in solved.extras["runs"]]
    assert len(runs) > 1  # a C path ran
    assert [(r["C"], r["status"]) for r in distributed.extras["runs"]] == runs
    assert distributed.objective == pytest.approx(solved.objective, rel=1e-9)
    assert _relative(one[-1], many[-1]) <= 1e-6


# -- the interior point: one loop over local or partitioned rows -------------------------------


def _mpc_iterates(rows, params, start=None):
    """The MPC iterates ((w, b) at every record) and the records of the one loop
    (:func:`solvers.interior_point.mpc.solve_rows`) over ``rows``."""
    iterates = []
    monitor = ListMonitor()
    solution = mpc.solve_rows(rows, params, Reporter(monitor, "relative_duality_gap"), start,
                              on_record=lambda parameters: iterates.append(parameters.copy()))
    return iterates, monitor.records, solution


@pytest.mark.parametrize("fractions", FRACTIONS)
@pytest.mark.parametrize(("loss", "bias"), [("hinge", "free"), ("hinge", "none"),
                                            ("hinge", "regularized"),
                                            ("squared_hinge", "free")])
def test_interior_point_takes_the_same_iterates_on_local_and_partitioned_rows(
        a9a, fractions, loss, bias):
    """mpc.py's one loop over LocalMPCRows and over PartitionedMPCRows (linear_solver
    "direct": the partitions' Gram shares summed and factorized by the same DirectSolver):
    the same MPC iterates to 1e-9 relative on 2, 3 and 7 unequal shards with an empty one,
    every bias mode, the same records and the same certified gap.  The partitions' sums
    differ from one process's in the order of additions only (and the corrector's right-hand
    side is summed as its two parts in sigma mu).

    Where the linear algebra is not direct (``pcg``) there is no partitioned run to compare:
    the partitions declare no matrix-free M (rule (15) selects rows by a global threshold,
    and each PCG iteration would be a round), so the parameters refuse it; PCG's inexact
    solves (rtol = min(0.1, 0.1 mu)) take other iterates than direct's in one process too,
    and are pinned by their optimum (tests/test_interior_point.py)."""
    params = InteriorPointParams(C=0.5, loss=loss, bias=bias, linear_solver="direct",
                                 tol=1e-9)
    y = np.where(a9a.y > 0, 1.0, -1.0)
    local = BinaryProblem(a9a.X, y, C=0.5, loss=loss, bias=bias)
    partitioned = DistributedBinaryProblem(in_process(a9a, fractions), 1.0, C=0.5, loss=loss,
                                           bias=bias)
    one, records_one, solved = _mpc_iterates(mpc.LocalMPCRows(local, params), params)
    many, records_many, distributed = _mpc_iterates(PartitionedMPCRows(partitioned), params)
    assert solved.status == distributed.status == "converged"
    assert len(one) == len(many) > 10
    for a, b in zip(one, many, strict=True):
        assert _relative(a, b) <= 1e-9
    for a, b in zip(records_one, records_many, strict=True):
        assert b.objective == pytest.approx(a.objective, rel=1e-9)
        assert abs(b.optimality - a.optimality) <= 1e-9 * max(1.0, abs(a.optimality))
        assert b.extras["step_length"] == pytest.approx(a.extras["step_length"], rel=1e-9,
                                                        nan_ok=True)
    assert distributed.objective == pytest.approx(solved.objective, rel=1e-12)
    assert distributed.extras["mpc_iterations"] == solved.extras["mpc_iterations"]
    assert abs(distributed.extras["relative_duality_gap"]
               - solved.extras["relative_duality_gap"]) <= 1e-9
    # what the partitioned rows do not offer, the parameters refuse; local rows offer it
    pcg = params.model_copy(update={"linear_solver": "pcg"})
    assert "not distributed" in pcg.rows_refusal(PartitionedMPCRows.capabilities,
                                                 a9a.n_features)
    assert pcg.rows_refusal(mpc.LocalMPCRows.capabilities, a9a.n_features) is None


def test_interior_point_warm_start_takes_the_same_iterates_on_partitioned_rows(a9a):
    """A warm start (the resume after a lost worker) over either rows: the same iterates
    from the same interior point near (w, b), the free bias's KKT point balanced on the
    partitions."""
    params = InteriorPointParams(C=1.0, loss="hinge", bias="free", linear_solver="direct",
                                 tol=1e-9)
    y = np.where(a9a.y > 0, 1.0, -1.0)
    local = BinaryProblem(a9a.X, y, C=1.0, loss="hinge", bias="free")
    start = mpc.run(local.with_C(0.5), params.model_copy(update={"C": 0.5})).beta
    partitioned = DistributedBinaryProblem(in_process(a9a, FRACTIONS[2]), 1.0, C=1.0,
                                           loss="hinge", bias="free")
    one, _, solved = _mpc_iterates(mpc.LocalMPCRows(local, params), params, start)
    many, _, distributed = _mpc_iterates(PartitionedMPCRows(partitioned), params, start)
    assert solved.extras["start"] == distributed.extras["start"] == "warm"
    assert len(one) == len(many) > 3
    for a, b in zip(one, many, strict=True):
        assert _relative(a, b) <= 1e-9


def test_a_rounds_named_answer_is_counted_by_its_fields():
    """The communication record counts a dataclass answer by its arrays and numbers (one CGLS
    round's answer: three scalars and the d-vector A'q)."""
    d = 124
    answer = partitioned_rows.CGProducts(1.0, 2.0, 3.0, np.zeros(d))
    assert payload_bytes(answer) == 3 * 8 + 8 * d
    trial = TrialAnswer(True, 0.5, 1.5, None)
    assert payload_bytes([partitioned_rows.FactorAnswer(np.zeros(d), 1.0, trial)]) == \
        8 * d + 8 + 4 * 8


def test_the_partitions_answers_combine_field_by_field():
    """combine(): arrays and numbers summed (None skipped), 'max' / 'min' the extreme of the
    present ones, 'all' and-ed, 'list' kept per partition (what the rounds' named answers of
    mfn and the interior-point method declare)."""
    total = combine([SetupAnswer(2.0, 3), SetupAnswer(5.0, 0), SetupAnswer(1.0, 4)])
    assert (total.data_max, total.n) == (5.0, 7)
    total = combine([PredictorAnswer("d0", 0.5, np.array([1.0, 2.0, 3.0])),
                     PredictorAnswer("d1"),  # a partition with no step bound (no rows)
                     PredictorAnswer("d2", 0.25, np.array([0.5, 0.5, 0.5]))])
    assert total.dual == ["d0", "d1", "d2"] and total.ratio == 0.25
    np.testing.assert_array_equal(total.coefficients, [1.5, 2.5, 3.5])
    assert total.a0 is None
    trial = combine([TrialAnswer(True, 1.0, 2.0, "s0"), TrialAnswer(False, 0.5, 0.5, "s1")])
    assert trial.holds is False and (trial.l0, trial.r0) == (1.5, 2.5)
    assert trial.summaries == ["s0", "s1"]


def test_mfn_error_exit_on_partitioned_rows_keeps_the_last_good_point(a9a, monkeypatch):
    """Step 7's error exit over partitioned rows (a line search forced to overshoot): the
    rejected step's outputs, moved on the workers with the point round, are given back (a
    fresh product at the kept beta with the next round)."""
    monkeypatch.setattr(partitioned_rows, "breakpoint_root", lambda *args, **kwargs: 25.0)
    made = []
    original = partitioned_rows.PartitionedNewtonRows.__init__

    def keep(self, problem, on_start=None):
        original(self, problem, on_start)
        made.append(self)

    monkeypatch.setattr(partitioned_rows.PartitionedNewtonRows, "__init__", keep)
    params = mfn.MFNParams(tol=None, linear_solver="cgls")
    _, problem = _problems(a9a, [3, 1], params)
    solution = mfn.solve_distributed(problem, params)
    assert solution.status == "failed" and "objective rose" in solution.message
    np.testing.assert_array_equal(solution.beta, problem.zeros())
    (rows,) = made
    assert solution.objective == pytest.approx(
        problem.regularizer(problem.zeros()) + rows.loss_sum(problem.zeros()), rel=1e-12)
    # the next point round puts the outputs back at beta = 0: xi = 1 on every row
    context = mfn_engine.Engine(rows, 1.0, params, None).context(problem.loss_function)
    point = rows.point(context)
    assert point.n_active == a9a.n_samples
    assert point.loss_sum == pytest.approx(float(a9a.n_samples), rel=1e-12)


# -- the cutting planes: rounds per iteration ---------------------------------------------------


@pytest.mark.parametrize(("gather", "window"), [(10 ** 6, None), (10 ** 6, 1.0), (64, None)])
def test_ocas_makes_two_or_three_rounds_an_iteration_on_the_single_machines_path(
        a9a, gather, window, monkeypatch):
    monkeypatch.setattr(config, "DISTRIBUTED_GATHER_BREAKPOINTS", gather)
    monkeypatch.setattr(config, "DISTRIBUTED_OCAS_WINDOW", window)
    data = in_process(a9a, [3, 1, 0, 2])
    names = record_rounds(data.partitions)
    options = {"loss": "hinge", "method": "ocas", "max_iter": 12}
    one = solvers.train(a9a, solver="cutting_plane", **options)
    many = solvers.train(data, solver="cutting_plane", **options)
    assert_same_records(one, many, 12)
    # the partitions' sums differ from the single machine's in the order of additions only;
    # with this split the paths part to 1.8e-9 by iteration 12 (the same before the rounds
    # were fused: the fused rounds compute the same numbers)
    assert _relative(_beta(one.model), _beta(many.model)) <= 5e-9
    # the rounds: _pose, the cut and F at w_best = 0; then each iteration the margins at w_t
    # with the breakpoints, the selection's rounds when they are more than are gathered, the
    # cut with F(w_best)
    assert names[:2] == ["_pose", "_oracle"]
    iterations, current = [], []
    for name in names[2:]:
        current.append(name)
        if name == "_oracle":
            iterations.append(current)
            current = []
    assert len(iterations) == 12 and not current
    for rounds, record in zip(iterations, many.log, strict=True):
        selection = len(rounds) - 2
        assert rounds == ["_hinge_ray", *["_bracket_summary"] * selection, "_oracle"]
        if record.iteration > 1:
            assert record.extras["reductions"] == len(rounds)
        if gather == 10 ** 6:  # gathered: none; windowed: one when mu is above the window
            assert selection == (0 if window is None else selection) <= 1
    if gather == 64:  # 16 breakpoints a partition gathered: the selection ran
        assert any(len(rounds) > 2 for rounds in iterations)


def test_cpa_makes_one_round_an_iteration(a9a):
    data = in_process(a9a, [1, 1])
    options = {"loss": "hinge", "method": "cpa", "max_iter": 8}
    one = solvers.train(a9a, solver="cutting_plane", **options)
    many = solvers.train(data, solver="cutting_plane", **options)
    for a, b in zip(one.log, many.log, strict=True):
        assert b.objective == pytest.approx(a.objective, rel=1e-9)
    assert [r.extras["reductions"] for r in many.log[1:]] == [1] * 7


@pytest.mark.parametrize("method", ["ocas", "cpa"])
def test_the_workers_keep_a_bounded_number_of_vectors_however_long_the_solve(a9a, method):
    """A RemoteVector collected on the driver is dropped on the workers with the next round:
    the per-example vectors a partition keeps do not grow with the iterations (they did, by
    about 3 margins vectors per OCAS iteration: the driver swapped the list the handles'
    finalizers append to)."""
    kept = []
    for max_iter in (5, 30):
        data = in_process(a9a, [2, 1])
        solvers.train(data, solver="cutting_plane", method=method, loss="hinge", C=1.0,
                      max_iter=max_iter, tol=1e-12)
        kept.append(max(len(actor._target.state["vectors"])
                        for actor in data.partitions.actors))
    assert kept[1] <= kept[0] + 1 and kept[1] <= 6, kept


def test_a_models_communication_record_counts_its_own_training(a9a):
    """The dataset's counter runs on over every solve on it; a model's metadata and its
    subproblems' extras count the rounds of their own training only."""
    data = in_process(a9a, [1, 1])
    first = solvers.train(data, solver="mfn", C=1.0)
    second = solvers.train(data, solver="mfn", C=1.0)
    one, two = (r.model.metadata["distributed"] for r in (first, second))
    assert one["reductions"] == two["reductions"] > 0
    assert one["bytes_sent"] == two["bytes_sent"] > 0
    assert second.subproblems[0].extras["reductions"] == two["reductions"]
    assert data.partitions.communication.reductions == 2 * one["reductions"]
