"""Keerthi & DeCoste's tables where the data is here.

* Tables 4 and 5: 10-fold cross-validation error of L2-SVM-MFN on a9a ("Adult-9") and w8a
  ("Web-8") over the paper's 12 values of C.  The paper's C multiplies sum xi_i^2 / 2, ours
  sum xi_i^2, so C_ours = C_paper / 2.  As in section 5, each solve is driven to a maximum dual
  KKT violation of 1e-3 (eps = 1e-3 first, smaller if needed), and within a fold the C grid
  is walked upwards with beta-seeding.  Folds are ours (stratified, seeded), and a9a is
  LIBSVM's copy (123 features; the paper's Adult had 120), so the figures agree to about 0.1
  percentage point on a9a and 0.01 on w8a rather than exactly.
* Table 1: the 21 values C_paper = sqrt(2)^k, k = -10..10, solved in increasing order with
  beta-seeding against cold starts with both heuristics: the same optima, with less work.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from shared_data import load

from solvers import mfn
from solvers.problems import BinaryProblem

# Tables 4 and 5, column L2-SVM-MFN CV%: log2 C_paper -> error in percent.
TABLE_4_ADULT9 = dict(zip(np.arange(-4.5, 1.01, 0.5),
                          [15.30, 15.26, 15.22, 15.21, 15.21, 15.23, 15.23, 15.22, 15.22,
                           15.23, 15.23, 15.23], strict=True))
TABLE_5_WEB8 = dict(zip(np.arange(-0.5, 5.01, 0.5),
                        [1.34, 1.34, 1.33, 1.33, 1.33, 1.33, 1.33, 1.34, 1.34, 1.34, 1.34, 1.34],
                        strict=True))
# How far our CV errors may lie from the paper's, in percentage points (see the docstring).
CV_TOLERANCE = {"a9a": 0.25, "w8a": 0.05}
# The paper's own ends, not the certified gap (tol=None): section 5's KKT rule, and for Table 1
# the exact end of Appendix A, so seeded and cold paths meet at the same optimum to 1e-9.
SECTION_5 = mfn.MFNParams(epsilon=1e-3, dual_kkt_tol=1e-3, tol=None)
EXACT = mfn.MFNParams(tol=None)
SAME_OPTIMUM_RTOL = 1e-9


def binary(name: str) -> tuple:
    ds = load(name)
    return ds, np.where(ds.y == ds.classes[1], 1.0, -1.0)


def cross_validation_errors(name: str, log2_c_paper: np.ndarray, folds: int = 10):
    ds, y = binary(name)
    fold = ds.stratified_folds(folds, seed=0)
    Cs = 2.0 ** log2_c_paper / 2.0
    wrong = np.zeros(Cs.shape[0])
    for k in range(folds):
        train, test = fold != k, fold == k
        problem = BinaryProblem(ds.X[train], y[train], C=Cs[0])
        path = mfn.solve_path(problem, Cs, SECTION_5)
        for j, solution in enumerate(path):
            assert solution.status == "converged", solution.message
            assert solution.extras["dual_kkt_violation"] <= 1e-3
            scores = ds.X[test] @ solution.beta[:-1] + solution.beta[-1]
            wrong[j] += np.sum(np.where(scores > 0, 1.0, -1.0) != y[test])
    return 100.0 * wrong / ds.n_samples


@pytest.mark.slow
@pytest.mark.parametrize("name, table", [("a9a", TABLE_4_ADULT9), ("w8a", TABLE_5_WEB8)],
                         ids=["table4-adult9", "table5-web8"])
def test_cross_validation_tables(name, table):
    log2_c = np.array(sorted(table))
    errors = cross_validation_errors(name, log2_c)
    paper = np.array([table[c] for c in log2_c])
    print(f"\n{name} 10-fold CV error (%), log2 C_paper: ours / paper")
    for c, ours, theirs in zip(log2_c, errors, paper, strict=True):
        print(f"  {c:5.1f}  {ours:6.2f} / {theirs:6.2f}")
    assert np.all(np.abs(errors - paper) <= CV_TOLERANCE[name])
    # the curve is flat around its minimum, as in the paper
    assert errors.max() - errors.min() <= 0.1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["a9a", "w8a"])
def test_table1_beta_seeding(name):
    ds, y = binary(name)
    problem = BinaryProblem(ds.X, y)
    Cs = np.sqrt(2.0) ** np.arange(-10, 11) / 2.0
    start = time.perf_counter()
    seeded = mfn.solve_path(problem, Cs, EXACT)
    seeded_seconds = time.perf_counter() - start
    start = time.perf_counter()
    cold = mfn.solve_path(problem, Cs, EXACT, seeding=False)
    cold_seconds = time.perf_counter() - start
    for s, c in zip(seeded, cold, strict=True):
        assert s.status == c.status == "converged"
        assert abs(s.objective - c.objective) <= SAME_OPTIMUM_RTOL * c.objective

    def total(path, key):
        return sum(s.extras[key] if key != "newton" else s.iterations for s in path)

    print(f"\n{name}: 21 values of C, seconds seeded {seeded_seconds:.2f} / cold "
          f"{cold_seconds:.2f}; CG iterations {total(seeded, 'cg_iterations')} / "
          f"{total(cold, 'cg_iterations')}; Newton iterations {total(seeded, 'newton')} / "
          f"{total(cold, 'newton')}")
    assert total(seeded, "cg_iterations") < total(cold, "cg_iterations")
    assert total(seeded, "newton") < total(cold, "newton")
