"""The scikit-learn estimator, also reachable as ``solvers.estimators.SVMClassifier``."""

from solvers.sklearn import EXPECTED_FAILED_CHECKS, SVMClassifier

__all__ = ["EXPECTED_FAILED_CHECKS", "SVMClassifier"]
