"""L2-SVM-MFN (solvers/mfn.py): Appendix A, its heuristics, beta-seeding, the dual KKT check,
one-vs-rest, on small real data against independent optima."""

from __future__ import annotations

import naive
import numpy as np
import pytest
import scipy.sparse as sp
from shared_data import load, random_csr

import solvers
from bench.references import binary_lbfgs_optimum, liblinear_optimum
from solvers import mfn
from solvers.base import InvalidParametersError, WarmStart
from solvers.core import gram
from solvers.core.gram import NormalEquations
from solvers.mfn import engine as mfn_engine
from solvers.monitor import ListMonitor
from solvers.problems import BinaryProblem, newton_rows

# The bar: objective within 1e-6 (relative) of the independent optimum.
OBJECTIVE_RTOL = 1e-6
# A reference counts as tight when its certified relative duality gap is below this.
REFERENCE_GAP = 1e-9
# Two runs that should reach the same optimum (heuristics on/off, seeded/cold).
SAME_OPTIMUM_RTOL = 1e-9


def binary(name: str) -> tuple:
    ds = load(name)
    return ds.X, np.where(ds.y == ds.classes[1], 1.0, -1.0)


def relative(a: float, b: float) -> float:
    return (a - b) / abs(b)


@pytest.mark.parametrize("name", ["heart_scale", "australian_scale", "diabetes_scale"])
@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
def test_matches_liblinear_on_small_data(name, C):
    X, y = binary(name)
    problem = BinaryProblem(X, y, C=C)
    reference = liblinear_optimum(problem, solver_type=2)
    assert reference.relative_gap <= REFERENCE_GAP, reference
    solution = mfn.solve(problem)
    assert solution.status == "converged", solution.message
    assert abs(relative(solution.objective, reference.objective)) <= OBJECTIVE_RTOL
    assert np.isfinite(solution.extras["dual_kkt_violation"])


@pytest.mark.parametrize("bias_scale", [0.5, 4.0])
def test_bias_scale_is_liblinears_B(bias_scale):
    X, y = binary("heart_scale")
    problem = BinaryProblem(X, y, C=1.0, bias_scale=bias_scale)
    reference = liblinear_optimum(problem, solver_type=2)
    solution = mfn.solve(problem)
    assert abs(relative(solution.objective, reference.objective)) <= OBJECTIVE_RTOL
    np.testing.assert_allclose(problem.split(solution.beta)[1],
                               problem.split(reference.beta)[1], rtol=1e-4)


def test_no_bias_and_sample_weights_match_lbfgs():
    X, y = binary("australian_scale")
    weights = np.random.default_rng(0).uniform(0.2, 3.0, size=y.shape[0])
    for bias in ("none", "regularized"):
        problem = BinaryProblem(X, y, C=0.7, bias=bias, sample_weight=weights)
        reference = binary_lbfgs_optimum(problem)
        solution = mfn.solve(problem)
        assert solution.status == "converged"
        assert relative(solution.objective, reference.objective) <= OBJECTIVE_RTOL
        if bias == "none":
            assert solution.beta[-1] == 0.0


def test_free_bias_and_other_losses_are_refused():
    X, y = binary("heart_scale")
    with pytest.raises(ValueError, match="mfn does not solve binary problems with "
                                         "loss=.squared_hinge., bias=.free.: the paper "
                                         "regularizes b"):
        mfn.solve(BinaryProblem(X, y, bias="free"))
    with pytest.raises(ValueError, match="mfn does not solve binary problems with loss="):
        mfn.solve(BinaryProblem(X, y, loss="least_squares"))
    ds = load("heart_scale")
    with pytest.raises(InvalidParametersError, match="bias"):
        solvers.train(ds, solver="mfn", bias="free")
    with pytest.raises(InvalidParametersError, match="loss"):
        solvers.train(ds, solver="mfn", loss="lp")


def test_heuristics_as_in_appendix_a():
    """Heuristic 1 caps the first CGLS call at 10 iterations, heuristic 2 runs eps = 1e-2 then
    1e-6; switching them off reaches the same optimum (Appendix A's finite termination,
    tol=None: a gap tol stops each run within it, not at the same point)."""
    X, y = binary("a9a")
    problem = BinaryProblem(X, y, C=1.0)
    monitor = ListMonitor()
    with_heuristics = mfn.solve(problem, mfn.MFNParams(linear_solver="cgls", tol=None),
                                monitor)
    records = monitor.records
    assert records[0].extras["cg_iterations"] == 10
    assert all(r.extras["cg_iterations"] <= 5000 for r in records)
    epsilons = [r.extras["epsilon"] for r in records]
    assert epsilons[0] == 1e-2 and epsilons[-1] == 1e-6
    assert epsilons == sorted(epsilons, reverse=True)
    assert [run["epsilon"] for run in with_heuristics.extras["runs"]] == [1e-6]
    plain = mfn.solve(problem, mfn.MFNParams(first_round_epsilon=None, linear_solver="cgls",
                                             initial_cgls_iter=None, tol=None))
    assert abs(relative(plain.objective, with_heuristics.objective)) <= SAME_OPTIMUM_RTOL
    # the records carry docs/design.md's objective and the relative duality gap
    assert records[-1].objective == pytest.approx(with_heuristics.objective, rel=1e-12)
    assert records[-1].optimality <= 1e-8
    objectives = [r.objective for r in records]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(objectives, objectives[1:], strict=False))


def test_itermax_and_monitor_stop():
    X, y = binary("a9a")
    problem = BinaryProblem(X, y, C=1.0)
    limited = mfn.solve(problem, mfn.MFNParams(max_iter=2))
    assert limited.status == "max_iter" and limited.iterations == 2

    class StopAfterTwo(ListMonitor):
        def stop_reason(self):
            return "cancelled" if len(self.records) >= 2 else None

    stopped = mfn.solve(problem, mfn.MFNParams(), StopAfterTwo())
    assert stopped.status == "stopped" and stopped.iterations == 2
    assert "cancelled" in stopped.message


@pytest.mark.parametrize("name, loss, C, c_path_start, linear_solver", [
    ("w8a", "squared_hinge", 1.0, None, "cgls"),  # rows of varied length: in length order
    ("w8a", "squared_hinge", 1.0, None, "cholesky"),
    ("w8a", "modified_huber", 10.0, None, "cholesky"),  # saturated terms: the dual point has q
    ("w8a", "modified_huber", 10.0, None, "cgls"),
    ("a9a", "squared_hinge", 100.0, 10.0, "cgls"),  # stopped on a stage of the C path
])
def test_records_carry_the_duality_gap_of_the_reported_point(name, loss, C, c_path_start,
                                                             linear_solver):
    """The record's gap comes from step 3's pass over the next active set (shared with the
    CGLS warm start); at an unfinished point it must equal P - D of docs/design.md's problem at
    the KKT map, computed independently."""
    X, y = binary(name)
    problem = BinaryProblem(X, y, C=C, loss=loss)

    class StopAfterThree(ListMonitor):
        def stop_reason(self):
            return "enough" if len(self.records) >= 3 else None

    monitor = StopAfterThree()
    solution = mfn.solve(problem, mfn.MFNParams(C=C, loss=loss, c_path_start=c_path_start,
                                                linear_solver=linear_solver), monitor)
    assert solution.status == "stopped"
    record = monitor.records[-1]
    objective = problem.objective(solution.beta)
    assert record.objective == pytest.approx(objective, rel=1e-12)
    gap = problem.duality_gap(solution.beta) / objective
    assert gap > 1e-6  # a point where the check means something
    assert record.optimality == pytest.approx(gap, rel=1e-9)
    if c_path_start is not None:
        assert "path_C" in record.extras


def test_error_exit_when_the_objective_rises(monkeypatch):
    """Step 7: a step that increases f ends the run with an error (forced here by a line
    search that overshoots)."""
    X, y = binary("heart_scale")
    monkeypatch.setattr(newton_rows, "piecewise_linear_root", lambda *args: 25.0)
    problem = BinaryProblem(X, y, C=1.0)
    solution = mfn.solve(problem)
    assert solution.status == "failed"
    assert "objective rose" in solution.message
    # the rejected step is not taken: the solution is the last good point (here the start)
    np.testing.assert_array_equal(solution.beta, problem.zeros())
    assert solution.objective == pytest.approx(problem.objective(problem.zeros()), rel=1e-12)


def test_hinge_homotopy_at_a_numerically_singular_tau_keeps_the_last_good_point():
    """An unattainable hinge gap drives tau down until lambda = 2 tau / C makes the least-
    squares problems singular in floating point; the run then fails with the reason and a
    finite solution no worse than the last round's."""
    X, y = binary("heart_scale")
    problem = BinaryProblem(X, y, C=100.0, loss="hinge")
    monitor = ListMonitor()
    solution = mfn.solve(problem, mfn.MFNParams(C=100.0, loss="hinge", tol=1e-15,
                                                hinge_max_rounds=60), monitor)
    assert solution.status in ("failed", "max_iter"), solution.message
    if solution.status == "failed":
        assert "no finite step" in solution.message or "objective rose" in solution.message
    assert np.all(np.isfinite(solution.beta))
    assert solution.objective == pytest.approx(problem.objective(solution.beta), rel=1e-12)
    assert solution.objective <= min(r.objective for r in monitor.records) * (1 + 1e-9)


def test_seed_from_weights_solves_eqs_8_9():
    X, y = binary("australian_scale")
    problem = BinaryProblem(X, y, C=0.5)
    w_guess = np.random.default_rng(1).standard_normal(X.shape[1])
    active = np.arange(0, y.shape[0], 2)
    beta = mfn.seed_from_weights(problem, w_guess, active, refine=False)
    # (8) directly: minimize lambda/2 (g^2 ||w||^2 + b^2) + 1/2 ||g u + b - t||^2 over I
    lam = 1.0 / (2.0 * problem.C)
    u = X[active] @ w_guess
    A = np.vstack([np.c_[u, np.ones_like(u)], np.sqrt(lam) * np.diag([np.linalg.norm(w_guess),
                                                                      1.0])])
    gamma, b0 = np.linalg.lstsq(A, np.r_[y[active], 0.0, 0.0], rcond=None)[0]
    np.testing.assert_allclose(beta, np.r_[gamma * w_guess, b0], rtol=1e-10)
    # a run started from a guessed w reaches the optimum
    seeded = mfn.solve(problem, start=WarmStart(beta=mfn.seed_from_weights(problem, w_guess)))
    cold = mfn.solve(problem)
    assert abs(relative(seeded.objective, cold.objective)) <= SAME_OPTIMUM_RTOL


def test_beta_seeding_along_a_c_path():
    """Table 1: seeding each C from the previous solution (ini = 1) reaches the same optima as
    cold starts with fewer Newton iterations."""
    X, y = binary("a9a")
    problem = BinaryProblem(X, y, C=1.0)
    Cs = 2.0 ** np.arange(-3, 2) / 2
    seeded = mfn.solve_path(problem, Cs)
    rescaled = mfn.solve_path(problem, Cs, rescale=True)
    cold = mfn.solve_path(problem, Cs, seeding=False)
    for s, r, c in zip(seeded, rescaled, cold, strict=True):
        assert s.status == r.status == c.status == "converged"
        assert abs(relative(s.objective, c.objective)) <= SAME_OPTIMUM_RTOL
        assert abs(relative(r.objective, c.objective)) <= SAME_OPTIMUM_RTOL

    def newton(path):
        return sum(s.iterations for s in path)

    def cg(path):
        return sum(s.extras["cg_iterations"] for s in path)

    # On this narrow grid (C = 1/16..1) seeding saves Newton iterations (16 against 34, each
    # a pass over all the data), not CG iterations (1863 against 1826); the CG saving over
    # the paper's wide grid is test_mfn_tables.py's Table 1 test.
    assert newton(seeded) < newton(cold) / 1.5
    assert newton(rescaled) < newton(cold) / 1.5
    assert cg(seeded) <= 1.1 * cg(cold) and cg(rescaled) <= 1.1 * cg(cold)


def test_cold_start_at_a_large_c_goes_through_a_c_path():
    """A cold start at C far above 1 / mean ||x~||^2 solves C / 10^J, ..., C / 10 first (each at
    eps = 1e-2, seeded with the last), then C; the records report the objective at the C asked
    for; the optimum is that of Appendix A from zero."""
    X, y = binary("a9a")  # mean ||x~_i||^2 = 14.87: stages from 10 / 14.87 = 0.67 up
    problem = BinaryProblem(X, y, C=100.0)
    terms = mfn.binary_terms(problem)
    assert np.mean(terms.square_norms()) == pytest.approx(14.8691072141519, rel=1e-12)
    assert mfn.c_path_stages(100.0, terms, problem.cost, 10.0) == [1.0, 10.0]
    assert mfn.c_path_stages(1.0, terms, problem.cost / 100.0, 10.0) == []
    assert mfn.c_path_stages(100.0, terms, problem.cost, None) == []
    # weights scale the data: half the weight, twice the C before a stage is worth it
    assert mfn.c_path_stages(100.0, terms, 0.5 * problem.cost, 10.0) == [10.0]

    monitor = ListMonitor()
    path = mfn.solve(problem, mfn.MFNParams(C=100.0, linear_solver="cgls", tol=None), monitor)
    assert path.status == "converged"
    assert [run["C"] for run in path.extras["runs"]] == [1.0, 10.0, 100.0]
    assert [run["epsilon"] for run in path.extras["runs"]] == [1e-2, 1e-2, 1e-6]
    staged = [r for r in monitor.records if "path_C" in r.extras]
    assert {r.extras["path_C"] for r in staged} == {1.0, 10.0}
    # the seed from C / 10 is still crude for C: heuristic 2's two rounds, 1e-2 then 1e-6
    final = [r.extras["epsilon"] for r in monitor.records if "path_C" not in r.extras]
    assert final[0] == 1e-2 and final[-1] == 1e-6
    assert all(r.objective >= path.objective for r in staged)
    assert monitor.records[-1].objective == pytest.approx(path.objective, rel=1e-12)
    assert monitor.records[-1].optimality <= 1e-8
    assert [r.iteration for r in monitor.records] == list(range(1, len(monitor.records) + 1))

    plain = mfn.solve(problem, mfn.MFNParams(C=100.0, c_path_start=None,
                                             linear_solver="cgls", tol=None))
    assert [run["C"] for run in plain.extras["runs"]] == [100.0]
    assert abs(relative(path.objective, plain.objective)) <= SAME_OPTIMUM_RTOL
    # a given starting point is not replaced by the path
    seeded = mfn.solve(problem, mfn.MFNParams(C=100.0, linear_solver="cgls"),
                       start=WarmStart(beta=plain.beta))
    assert [run["C"] for run in seeded.extras["runs"]] == [100.0]
    # exact Newton steps (the factorized step 3) go straight to C
    factorized = mfn.solve(problem)
    assert factorized.extras["linear_solver"] == "cholesky"
    assert [run["C"] for run in factorized.extras["runs"]] == [100.0]
    assert abs(relative(factorized.objective, plain.objective)) <= SAME_OPTIMUM_RTOL


def test_dual_recovery_and_kkt_continuation():
    """Section 4.7: alpha recovered from the primal; continuing with smaller eps drives the
    maximum dual KKT violation below the requested tau (section 5's protocol)."""
    X, y = binary("a9a")
    problem = BinaryProblem(X, y, C=1.0)
    loose = mfn.solve(problem, mfn.MFNParams(epsilon=1e-2, first_round_epsilon=None,
                                             linear_solver="cgls"))
    alpha, violation = mfn.dual_kkt_violation(problem, loose.beta)
    np.testing.assert_allclose(alpha, problem.dual_from_primal(loose.beta), rtol=1e-12)
    assert violation == pytest.approx(loose.extras["dual_kkt_violation"])
    assert violation > 1.0
    tau = 1e-5
    driven = mfn.solve(problem, mfn.MFNParams(epsilon=1e-2, first_round_epsilon=None,
                                              dual_kkt_tol=tau, linear_solver="cgls"))
    assert driven.status == "converged" and "dual KKT" in driven.message
    assert driven.extras["dual_kkt_violation"] <= tau
    assert [run["epsilon"] for run in driven.extras["runs"]][1:] == \
        sorted([run["epsilon"] for run in driven.extras["runs"]][1:], reverse=True)
    # near the optimum the dual variables reproduce beta = sum alpha_i t_i x~_i
    alpha, _ = mfn.dual_kkt_violation(problem, driven.beta)
    difference = problem.primal_from_dual(alpha) - driven.beta
    assert np.linalg.norm(difference) <= 1e-5 * np.linalg.norm(driven.beta)


@pytest.mark.parametrize("linear_solver", ["auto", "cgls"])
def test_tol_stops_at_a_certified_gap(linear_solver):
    """tol ends a run at the first Newton iterate whose relative duality gap is within it:
    that record's gap bounds the distance to the exact optimum, and it comes in fewer Newton
    iterations than Appendix A's finite termination (tol=None)."""
    X, y = binary("a9a")
    problem = BinaryProblem(X, y, C=1.0)
    exact = mfn.solve(problem, mfn.MFNParams(linear_solver=linear_solver, tol=None))
    monitor = ListMonitor()
    tol = 1e-3
    early = mfn.solve(problem, mfn.MFNParams(linear_solver=linear_solver, tol=tol), monitor)
    assert early.status == "converged" and "certified relative duality gap" in early.message
    gaps = [r.optimality for r in monitor.records]
    assert gaps[-1] <= tol and all(g > tol for g in gaps[:-1])
    assert exact.objective <= early.objective <= exact.objective / (1 - gaps[-1])
    assert early.iterations < exact.iterations
    # the gap round runs rule (13) at min(1e-4, tol / 10), looser than epsilon = 1e-6
    assert early.extras["runs"][-1]["epsilon"] in (1e-4, 1e-2)


def test_a_gap_round_that_ends_above_the_gap_goes_on_at_epsilon(monkeypatch):
    """Should the loose round end by Appendix A's own test (rule (13), stable sets) with the
    gap still above the tolerance, a round at epsilon follows and ends at the exact optimum
    (forced here by a gap test that never passes)."""
    monkeypatch.setattr(mfn_engine.Engine, "_gap_met", lambda self: False)
    X, y = binary("australian_scale")
    problem = BinaryProblem(X, y, C=1.0)
    exact = mfn.solve(problem, mfn.MFNParams(linear_solver="cgls", tol=None))
    monitor = ListMonitor()
    result = mfn.solve(problem, mfn.MFNParams(linear_solver="cgls", tol=1e-2,
                                              first_round_epsilon=None), monitor)
    rounds = [r.extras["epsilon"] for r in monitor.records]
    assert rounds[0] == 1e-4 and rounds[-1] == 1e-6 and rounds == sorted(rounds, reverse=True)
    assert [run["epsilon"] for run in result.extras["runs"]] == [1e-6]
    assert result.status == "converged" and "index sets are stable" in result.message
    assert result.objective == pytest.approx(exact.objective, rel=1e-9)
    assert result.iterations > 1


def test_tol_is_refused_beside_another_stopping_rule():
    with pytest.raises(ValueError, match="homotopy stops on its certified gap"):
        mfn.MFNParams(loss="hinge", tol=None)
    with pytest.raises(ValueError, match="give one"):
        mfn.MFNParams(tol=1e-3, dual_kkt_tol=1e-3)
    # dual_kkt_tol alone replaces the gap rule
    assert mfn.MFNParams(dual_kkt_tol=1e-3).tol is None


@pytest.mark.parametrize("options", [{"preconditioning": 0.01},
                                     {"cgls_rule": "gradient_bound", "epsilon": 1e-8}])
def test_cgls_options_reach_the_optimum(options):
    X, y = binary("w8a")
    problem = BinaryProblem(X, y, C=1.0)
    reference = liblinear_optimum(problem, solver_type=2)
    solution = mfn.solve(problem, mfn.MFNParams(linear_solver="cgls", **options))
    assert solution.status == "converged"
    assert abs(relative(solution.objective, reference.objective)) <= OBJECTIVE_RTOL


@pytest.mark.slow
def test_auto_preconditioning(monkeypatch):
    """LIBLINEAR's alpha = 0.01 where the active rows outnumber the parameters (a9a) and on
    fewer rows of equal norms; none on fewer rows of unequal norms (raw word counts), none when
    CGLS only checks a factorized step."""
    calls = []
    original = newton_rows.cgls_compact

    def recording(A, *args, **kwargs):
        calls.append((A.n_rows, kwargs["precondition"], kwargs["max_iter"]))
        return original(A, *args, **kwargs)

    monkeypatch.setattr(newton_rows, "cgls_compact", recording)
    X, y = binary("a9a")
    mfn.solve(BinaryProblem(X, y, C=1.0), mfn.MFNParams(linear_solver="cgls"))
    assert calls and all(alpha == 0.01 for _, alpha, _ in calls)
    calls.clear()
    mfn.solve(BinaryProblem(X, y, C=1.0), mfn.MFNParams(linear_solver="cholesky"))
    assert calls[0][1:] == (0.01, 10)  # heuristic 1's CGLS call
    assert all(alpha == 0.0 for _, alpha, _ in calls[1:])
    # text-like, more features than rows: word counts (row norms from 1 to hundreds) ...
    wide, labels = _word_counts()
    norms = np.asarray(wide.multiply(wide).sum(axis=1)).ravel() + 1.0
    assert norms.std() > 0.5 * norms.mean()
    calls.clear()
    mfn.solve(BinaryProblem(wide, labels, C=1.0))
    assert calls and all(alpha == 0.0 for _, alpha, _ in calls)
    # ... and the same rows scaled to unit norm
    unit = sp.diags(1.0 / np.sqrt(norms - 1.0)) @ wide
    calls.clear()
    mfn.solve(BinaryProblem(sp.csr_matrix(unit), labels, C=1.0))
    assert calls and all(alpha == 0.01 for _, alpha, _ in calls)
    calls.clear()
    mfn.solve(BinaryProblem(X, y, C=1.0), mfn.MFNParams(linear_solver="cgls",
                                                         preconditioning=0.0))
    assert all(alpha == 0.0 for _, alpha, _ in calls)


# -- step 3 by factorization (linear_solver="cholesky", what "auto" picks for few features) -----


@pytest.mark.parametrize("name, C, bias, weighted", [
    ("a9a", 1.0, "regularized", False),
    ("w8a", 100.0, "regularized", False),
    ("australian_scale", 0.7, "none", True),
])
def test_factorized_step_reaches_the_cgls_optimum(name, C, bias, weighted):
    X, y = binary(name)
    weights = np.random.default_rng(0).uniform(0.2, 3.0, y.shape[0]) if weighted else None
    problem = BinaryProblem(X, y, C=C, bias=bias, sample_weight=weights)
    # both to Appendix A's finite termination (tol=None): the same point, not two points
    # within a gap tolerance
    appendix_a = mfn.solve(problem, mfn.MFNParams(C=C, bias=bias, linear_solver="cgls",
                                                  c_path_start=None, tol=None))
    monitor = ListMonitor()
    factorized = mfn.solve(problem, mfn.MFNParams(C=C, bias=bias, linear_solver="cholesky",
                                                  tol=None), monitor)
    assert factorized.status == appendix_a.status == "converged", factorized.message
    # the records say which step 3 ran: heuristic 1's CGLS first, then factorizations
    assert [r.extras["factorized"] for r in monitor.records[:2]] == [False, True]
    assert factorized.extras["linear_solver"] == "cholesky"
    assert factorized.extras["factorizations"] >= factorized.iterations - 1
    # heuristic 1's 10 iterations, then CGLS only checks rule (13) at the solved point
    assert factorized.extras["cg_iterations"] <= 10 + factorized.iterations
    assert abs(relative(factorized.objective, appendix_a.objective)) <= SAME_OPTIMUM_RTOL
    if bias == "none":
        assert factorized.beta[-1] == 0.0


@pytest.mark.parametrize("linear_solver", ["cgls", "cholesky"])
def test_repeated_entries_count_as_their_sum(linear_solver):
    """A CSR matrix may store a column of a row twice (SciPy sums them); the problem keeps a
    canonical copy, so the Gram matrix sees (a + b)^2 and not a^2 + ab + b^2."""
    X, y = binary("heart_scale")
    split = sp.csr_matrix((np.repeat(0.5 * X.data, 2), np.repeat(X.indices, 2), 2 * X.indptr),
                          shape=X.shape)  # every entry stored as two halves
    assert not split.has_canonical_format
    params = mfn.MFNParams(linear_solver=linear_solver)
    whole = mfn.solve(BinaryProblem(X, y), params)
    repeated = mfn.solve(BinaryProblem(split, y), params)
    assert abs(relative(repeated.objective, whole.objective)) <= 1e-12
    assert not split.has_canonical_format  # the caller's matrix is left as it was


def test_gram_matrix_follows_the_active_set():
    """Updated by the terms that enter and leave, G stays the Gram matrix of the active terms;
    past the churn bound it is rebuilt."""
    X, y = binary("heart_scale")
    weights = np.random.default_rng(1).uniform(0.5, 2.0, y.shape[0])
    terms = mfn.binary_terms(BinaryProblem(X, y, C=1.0, sample_weight=weights))
    normal = NormalEquations(terms, terms.cost / 1.0)
    n = terms.X.shape[0]

    def fresh(active):
        return naive.gram(terms.X, active, normal.weight[active], terms.extra_value)

    rng = np.random.default_rng(2)
    active = np.sort(rng.choice(n, 150, replace=False))
    normal.update(active)
    assert normal.updates == 0  # the first set is built
    for _ in range(3):
        changed = rng.choice(n, 10, replace=False)
        mask = np.isin(np.arange(n), active) ^ np.isin(np.arange(n), changed)
        active = np.flatnonzero(mask)
        normal.update(active)
        np.testing.assert_allclose(np.tril(normal.G), np.tril(fresh(active)), rtol=1e-10,
                                   atol=1e-10)
    assert 0 < normal.updates <= 30
    active = np.sort(rng.choice(n, 40, replace=False))  # more changed than remain: rebuilt
    normal.update(active)
    assert normal.updates == 0
    np.testing.assert_allclose(np.tril(normal.G), np.tril(fresh(active)), rtol=1e-12,
                               atol=1e-12)
    rhs = rng.standard_normal(terms.n_params)
    M = fresh(active) + 0.3 * np.eye(terms.n_params)
    np.testing.assert_allclose(normal.solve(active, 0.3, rhs), np.linalg.solve(M, rhs),
                               rtol=1e-9)


def test_auto_factorizes_only_when_it_is_cheap():
    a9a = mfn.binary_terms(BinaryProblem(*binary("a9a"), C=1.0))
    pays = mfn_engine.normal_equations_pay
    assert newton_rows.LocalNewtonRows(a9a, None, 1.0).choose_normal_equations("auto", pays)
    assert not newton_rows.LocalNewtonRows(a9a, None, 1.0).choose_normal_equations("cgls", pays)
    # text-like: many more features than a dense factorization can afford
    wide = random_csr(2000, 20000, 0.001, seed=3)
    y = np.where(np.arange(2000) % 2 == 0, 1.0, -1.0)
    problem = BinaryProblem(wide, y, C=1.0)
    solution = mfn.solve(problem)
    assert solution.extras["linear_solver"] == "cgls"
    with pytest.raises(ValueError, match="use 'cgls' or 'auto'"):
        mfn.solve(problem, mfn.MFNParams(linear_solver="cholesky"))


def test_a_failed_factorization_falls_back_to_cgls(monkeypatch):
    X, y = binary("a9a")
    problem = BinaryProblem(X, y, C=1.0)
    expected = mfn.solve(problem, mfn.MFNParams(linear_solver="cgls"))
    monkeypatch.setattr(gram, "cholesky_solve", lambda M, rhs: None)
    solution = mfn.solve(problem, mfn.MFNParams(linear_solver="cholesky"))
    assert solution.status == "converged"
    assert solution.extras["factorizations"] == 0
    assert solution.extras["cg_iterations"] > 100
    assert abs(relative(solution.objective, expected.objective)) <= SAME_OPTIMUM_RTOL


def test_one_vs_rest_matches_liblinear_per_class():
    """Multi-class: train runs one binary problem per class; each matches LIBLINEAR."""
    ds = load("dna.scale")
    result = solvers.train(ds, solver="mfn", C=0.1)
    assert result.status == "converged"
    assert [s.label for s in result.subproblems] == ["1", "2", "3"]
    for k, c in enumerate(ds.classes):
        problem = BinaryProblem(ds.X, np.where(ds.y == c, 1.0, -1.0), C=0.1)
        reference = liblinear_optimum(problem, solver_type=2)
        assert abs(relative(result.subproblems[k].objective, reference.objective)) \
            <= OBJECTIVE_RTOL
    test = load("dna.scale.t", n_features=ds.n_features)
    accuracy = np.mean(result.model.predict(test.X) == test.y)
    assert accuracy > 0.9
    assert solvers.load_model(result.model.to_bytes()).predict(test.X).tolist() == \
        result.model.predict(test.X).tolist()


# -- step 3 in the active rows' space (linear_solver="dual_cg", what "auto" picks on text) ------


def _word_counts():
    """Text-like: 1,000 rows of raw word counts over 10,000 features (row norms from 1 to
    hundreds), more features than rows.  (2,000 x 20,000 at half the density said the same
    and took 2.5 minutes a loss of the row-space test on a loaded machine, 20 s now.)"""
    rng = np.random.default_rng(4)
    wide = random_csr(1000, 10000, 0.002, seed=4)
    wide.data = np.floor(rng.pareto(1.0, wide.nnz) + 1.0)
    labels = np.where(np.arange(1000) % 3 == 0, 1.0, -1.0)
    return wide, labels


@pytest.mark.slow  # 10-15 s each; test_mfn_core tests the row-space CG
@pytest.mark.parametrize("loss", ["squared_hinge", "modified_huber"])
def test_row_space_step_reaches_the_cgls_optimum(loss):
    """At a large C on word counts "auto" solves step 3 in the active rows' space (after
    heuristic 1's capped CGLS call) and ends at CGLS's optimum, with the record saying which
    form each step took; "dual_cg" everywhere does too."""
    X, y = _word_counts()
    problem = BinaryProblem(X, y, C=10.0, loss=loss)
    results = {}
    for linear_solver in ("cgls", "auto", "dual_cg"):
        monitor = ListMonitor()
        solution = mfn.solve(problem, mfn.MFNParams(C=10.0, loss=loss, tol=None,
                                                    linear_solver=linear_solver), monitor)
        assert solution.status == "converged", solution.message
        assert monitor.records[-1].optimality <= 1e-9
        results[linear_solver] = (solution, monitor.records)
    cgls_solution, cgls_records = results["cgls"]
    assert cgls_solution.extras["row_space_solves"] == 0
    assert not any(r.extras["row_space"] for r in cgls_records)
    for linear_solver in ("auto", "dual_cg"):
        solution, records = results[linear_solver]
        assert solution.extras["row_space_solves"] > 0
        assert sum(r.extras["row_space"] for r in records) == \
            solution.extras["row_space_solves"]
        assert not records[0].extras["row_space"]  # heuristic 1's call stays CGLS
        assert relative(solution.objective, cgls_solution.objective) == \
            pytest.approx(0.0, abs=SAME_OPTIMUM_RTOL)
    assert results["auto"][0].extras["cg_iterations"] < cgls_solution.extras["cg_iterations"]


def test_auto_keeps_cgls_where_the_row_space_does_not_pay():
    """"auto" keeps CGLS when lambda is large against the active rows' norms (small C), and
    when the active rows outnumber the parameters (a9a with step 3 by CGLS)."""
    X, y = _word_counts()
    solution = mfn.solve(BinaryProblem(X, y, C=0.01), mfn.MFNParams(C=0.01))
    assert solution.status == "converged"
    assert solution.extras["row_space_solves"] == 0
    X, y = binary("a9a")
    problem = BinaryProblem(X, y, C=1.0)
    solution = mfn.solve(problem, mfn.MFNParams(linear_solver="cgls"))
    assert solution.extras["row_space_solves"] == 0
    # forced on more rows than parameters it is slower but reaches the same optimum
    forced = mfn.solve(problem, mfn.MFNParams(linear_solver="dual_cg"))
    assert forced.status == "converged"
    assert forced.extras["row_space_solves"] > 0
    reference = liblinear_optimum(problem, solver_type=2)
    assert abs(relative(forced.objective, reference.objective)) <= OBJECTIVE_RTOL


def test_dual_cg_is_refused_where_it_does_not_apply():
    with pytest.raises(ValueError, match="dual_cg"):
        mfn.MFNParams(task="ordinal", linear_solver="dual_cg")
    with pytest.raises(ValueError, match="dual_cg"):
        mfn.MFNParams(linear_solver="dual_cg", cgls_rule="gradient_bound")
