"""scikit-learn estimators over :func:`solvers.train`: ``SVMClassifier``,
``LogisticRegression`` (the logistic loss, whose probabilities are its own), ``SVMRegressor``
(support vector regression, by default smo's epsilon-SVR) and ``SVMOneClass`` (smo's one-class
SVM, as ``OneClassSVM``).

It fits through the same path as the service and the CLI (parameters validated by the solver's
model, feature scaling, class weights, ``auto``), and keeps the labels' own type in
``classes_`` and in ``predict`` (strings, ints).  It works in a ``Pipeline`` and in
``GridSearchCV`` (its parameters are ``get_params``/``set_params`` ones), on dense and sparse
input, and ``fit`` takes a :class:`solvers.Dataset` as well as (X, y).

``solver_params`` (a dict) carries a solver's own settings (``{"max_iter": 50}``); scikit-learn
clones an estimator from the arguments of ``__init__``, which must be named, so there is no
``**solver_params``.

``sklearn.utils.estimator_checks.check_estimator`` passes (``tests/test_sklearn.py`` runs it),
except the checks listed in :data:`EXPECTED_FAILED_CHECKS` and
:data:`ONE_CLASS_EXPECTED_FAILED_CHECKS`, each with the reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, OutlierMixin, RegressorMixin
from sklearn.utils._available_if import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from solvers.data.dataset import Dataset
from solvers.registry import get_solver
from solvers.train import train

#: check_estimator's checks that this estimator is expected to fail, and why (the way
#: scikit-learn's own LinearSVC declares the same two)
_WEIGHTS_AND_REPEATS = (
    "a fit stops at a certified relative duality gap (tol, 1e-6 by default), so a fit with "
    "integer sample weights and a fit on the rows repeated reach the same optimum only to "
    "that accuracy (decision values within about 1e-4 relative), not to the check's rtol "
    "1e-7; with tol=1e-12 the check passes (tests/test_sklearn.py)")
EXPECTED_FAILED_CHECKS: dict[str, str] = {
    "check_sample_weight_equivalence_on_dense_data": _WEIGHTS_AND_REPEATS,
    "check_sample_weight_equivalence_on_sparse_data": _WEIGHTS_AND_REPEATS,
}

#: the estimator's parameters that, left None, take the solver's own default
SOLVER_DEFAULTED = ("loss", "bias", "tol", "multiclass", "kernel", "gamma")


_BOUNDARY_SIGNS = (
    "the free support vectors lie on the support's boundary, where the decision function is 0 "
    "up to round-off (1e-11 here), and a fit with integer weights and one on repeated rows "
    "(the same problem, solved to 1e-12) round some of them to opposite signs: their +1/-1 "
    "differ; the decision values agree")
#: the same for :class:`SVMOneClass` (:class:`SVMRegressor` fails none; with the default
#: gamma="scale", 1 / (n_features Var(X)), repeated rows change gamma, so the sample-weight
#: checks need a numeric gamma)
ONE_CLASS_EXPECTED_FAILED_CHECKS: dict[str, str] = {
    "check_sample_weight_equivalence_on_dense_data": _BOUNDARY_SIGNS,
    "check_sample_weight_equivalence_on_sparse_data": _BOUNDARY_SIGNS,
}


class _SolversEstimator:
    """What the estimators share: rows read as at fit (CSR or dense, or a Dataset's) and
    sparse input declared."""

    def _features(self, X):
        if isinstance(X, Dataset):
            return X.X
        return validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _fit_dataset(estimator, X, y, sample_weight, **validation) -> Dataset:
    """The training set of (X, y) validated as scikit-learn asks (or a :class:`Dataset`,
    with ``sample_weight`` if given); ``y=None``: rows alone (labels zero, unread)."""
    if isinstance(X, Dataset):
        estimator.n_features_in_ = X.n_features
        return X if sample_weight is None else X.with_sample_weight(sample_weight)
    if y is None:
        X = validate_data(estimator, X, accept_sparse="csr", dtype=np.float64)
        y = np.zeros(X.shape[0])
    else:
        X, y = validate_data(estimator, X, y, accept_sparse="csr", dtype=np.float64,
                             **validation)
    if sample_weight is not None:
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
    return Dataset(X, y, sample_weight=sample_weight)


class SVMClassifier(_SolversEstimator, ClassifierMixin, BaseEstimator):
    """A linear (or kernel) SVM classifier trained by :func:`solvers.train`.

    Parameters
    ----------
    solver : str, default "auto"
        A registered solver (``solvers.list_solvers()``), or "auto" to let the library choose.
    C : float, default 1.0
        1/2||w||^2 + C sum loss (``docs/design.md``).
    probability : bool, default False
        Fit Platt's sigmoids (5 more fits) so that ``predict_proba`` exists.
    kernel, gamma : default None
        The kernel of a kernel solver (``smo``, the least-squares family) or of the low-rank
        path (``solver_params={"approximation": "nystrom"}``), as ``SVC(kernel=, gamma=)``;
        refused for a linear solver without an approximation (it would be ignored).  With
        ``solver="auto"``, a kernel other than linear (or a gamma alone: SVC's default kernel
        is the RBF) trains the exact kernel SVM, ``smo``, as ``SVC`` does; ``auto``'s own
        candidates are linear, and it does not choose the low-rank path by itself (ask for it
        with ``solver_params={"approximation": "nystrom"}``).
    loss, bias, tol, multiclass : default None
        As every solver's parameters (``solvers.base.SolverParams``); None takes the solver's
        own default (smo: the hinge, a free bias, one-vs-one; mfn: the squared hinge, a
        regularized bias, one-vs-rest), the same as the library, the CLI and the service.
    scale, class_weight :
        As every solver's parameters; ``class_weight`` a mapping label -> weight or
        "balanced".
    solver_params : dict, optional
        The solver's own settings, passed to it unchanged (``probability``, ``kernel`` and
        the other parameters above are refused there: give them to the estimator).
    """

    def __init__(self, solver: str = "auto", C: float = 1.0, loss: str | None = None,
                 bias: str | None = None, class_weight=None, tol: float | None = None,
                 scale: str = "none", multiclass: str | None = None,
                 probability: bool = False, kernel: str | None = None, gamma=None,
                 solver_params: dict[str, Any] | None = None):
        self.solver = solver
        self.C = C
        self.loss = loss
        self.bias = bias
        self.class_weight = class_weight
        self.tol = tol
        self.scale = scale
        self.multiclass = multiclass
        self.probability = probability
        self.kernel = kernel
        self.gamma = gamma
        self.solver_params = solver_params

    def _params(self) -> dict[str, Any]:
        """The parameters handed to :func:`solvers.train`: ``solver_params``, then the
        estimator's own (the None ones left to the solver); ValueError for what the estimator
        would not honour."""
        params = dict(self.solver_params or {})
        own = ("C", "probability", "scale", "class_weight", *SOLVER_DEFAULTED)
        doubled = sorted(set(params) & set(own))
        if doubled:
            raise ValueError(f"solver_params: {', '.join(doubled)} "
                             f"{'is' if len(doubled) == 1 else 'are'} the estimator's own "
                             f"parameter{'s' if len(doubled) > 1 else ''}: give "
                             f"{'it' if len(doubled) == 1 else 'them'} as "
                             f"SVMClassifier({doubled[0]}=...)")
        params.update(C=self.C, scale=self.scale, probability=bool(self.probability))
        params.update({name: getattr(self, name) for name in SOLVER_DEFAULTED
                       if getattr(self, name) is not None})
        if self.class_weight is not None:
            params["class_weight"] = (self.class_weight if isinstance(self.class_weight, str)
                                      else dict(self.class_weight))
        if (self.kernel is not None or self.gamma is not None) and self.solver != "auto":
            if not get_solver(self.solver).params_model.own_kernel and \
                    params.get("approximation", "none") == "none":
                raise ValueError(f"kernel/gamma: solver {self.solver!r} is linear and would "
                                 f"ignore them; use a kernel solver (smo) or "
                                 f"solver_params={{'approximation': 'nystrom'}}")
        return params

    def _solver(self) -> str:
        """The solver :meth:`fit` trains with: ``solver``, except ``auto`` asked for a kernel
        (``kernel`` other than linear, or ``gamma``) without an approximation, which is the
        exact kernel SVM, ``smo``: every candidate of ``auto`` is linear, and it used to
        train a linear model and ignore the kernel (issue 48: an estimator refuses what it
        will not honour)."""
        if self.solver != "auto" or (self.solver_params or {}).get("approximation",
                                                                   "none") != "none":
            return self.solver
        kernel = self.kernel if self.kernel is not None else (
            "rbf" if self.gamma is not None else "linear")
        return "smo" if kernel != "linear" else "auto"

    def fit(self, X, y=None, sample_weight=None):
        """Train on (X, y) or on a :class:`solvers.Dataset` (its ``cost:`` weights, unless
        ``sample_weight`` is given)."""
        if isinstance(X, Dataset):
            dataset = X
            if sample_weight is not None:
                dataset = dataset.with_sample_weight(sample_weight)
            self.n_features_in_ = dataset.n_features
        else:
            X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
            check_classification_targets(y)
            if sample_weight is not None:
                sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
                if not np.any(sample_weight > 0):
                    raise ValueError("sample_weight is zero for every example: nothing to fit")
            dataset = Dataset(X, y, sample_weight=sample_weight)
        if dataset.classes.shape[0] < 2:
            raise ValueError("Classifier can't train when only one class is present.")
        solver, params = self._solver(), self._params()
        try:
            self.result_ = train(dataset, solver=solver, params=params)
        except ValueError as error:
            if solver == self.solver:
                raise
            raise ValueError(f"kernel={self.kernel or 'rbf'!r} with solver='auto' trains the "
                             f"exact kernel SVM (solver 'smo'): {error}") from None
        self.model_ = self.result_.model
        self.classes_ = np.asarray(self.model_.classes_)
        if not isinstance(X, Dataset) and np.asarray(y).dtype.kind == "O":
            self.classes_ = self.classes_.astype(object)
        self.coef_ = getattr(self.model_, "coef_", None)
        self.intercept_ = getattr(self.model_, "intercept_", None)
        return self

    def decision_function(self, X) -> np.ndarray:
        """Scores: (n,) for two classes (positive favours ``classes_[1]``), (n, k) otherwise."""
        check_is_fitted(self, "model_")
        return self.model_.decision_function(self._features(X))

    def predict(self, X) -> np.ndarray:
        """The labels, in their own type (``classes_``)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.int64)]
        return self.classes_[np.argmax(scores, axis=1)]

    @available_if(lambda self: self.probability)
    def predict_proba(self, X) -> np.ndarray:
        """Platt's probabilities (``probability=True``), columns in ``classes_``'s order."""
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(self._features(X))

    def score(self, X, y=None, sample_weight=None) -> float:
        if isinstance(X, Dataset):
            y = X.labels
        return super().score(X, y, sample_weight=sample_weight)


class LogisticRegression(SVMClassifier):
    """L2-regularized logistic regression trained by :func:`solvers.train`: 1/2 ||w||^2 + C
    sum_i log(1 + exp(-y_i f(x_i))), LIBLINEAR's ``-s 0`` / ``-s 7`` problem and C.

    As :class:`SVMClassifier` with ``loss="logistic"``, and ``predict_proba`` always: the
    model's own probabilities, sigma(f) for two classes and the one-vs-rest sigmoids
    normalized for more (LIBLINEAR's ``predict_probability``; no Platt step).

    Parameters
    ----------
    solver : str, default "newton"
        "newton" (the truncated Newton method, LIBLINEAR ``-s 0``), "dual_cd" (Yu, Huang &
        Lin's dual coordinate descent, ``-s 7``) or "auto".
    bias : str, default "regularized"
        "regularized" (LIBLINEAR's ``-B 1``), "none", or "free" (an unregularized intercept,
        scikit-learn's ``LogisticRegression``'s; newton only).
    C, class_weight, tol, scale, multiclass, solver_params :
        As :class:`SVMClassifier`'s.
    """

    #: fixed: what makes it logistic regression (not parameters: scikit-learn clones from
    #: ``__init__``'s arguments alone)
    loss = "logistic"
    probability = True
    kernel = None  # linear (a kernel through solver_params' approximation, as SVMClassifier)
    gamma = None

    def __init__(self, solver: str = "newton", C: float = 1.0, bias: str = "regularized",
                 class_weight=None, tol: float = 1e-6, scale: str = "none",
                 multiclass: str = "ovr", solver_params: dict[str, Any] | None = None):
        self.solver = solver
        self.C = C
        self.bias = bias
        self.class_weight = class_weight
        self.tol = tol
        self.scale = scale
        self.multiclass = multiclass
        self.solver_params = solver_params

    def predict_proba(self, X) -> np.ndarray:
        """P(class | x), columns in ``classes_``'s order: the model's own probabilities."""
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(self._features(X))

    def predict_log_proba(self, X) -> np.ndarray:
        return np.log(self.predict_proba(X))


def _kernel_params(solver: str, kernel: str, gamma, extra: dict[str, Any]) -> dict[str, Any]:
    """``kernel`` and ``gamma`` for a solver with kernels of its own (smo, the least-squares
    family); a linear solver takes them as its approximation's, so only when it asks for one
    (``solver_params``)."""
    if get_solver(solver).params_model.own_kernel or "approximation" in extra:
        return {"kernel": kernel, "gamma": gamma}
    return {}


class SVMRegressor(_SolversEstimator, RegressorMixin, BaseEstimator):
    """Support vector regression trained by :func:`solvers.train` with ``task="regression"``:
    by default ``smo``'s epsilon-SVR (LIBSVM's ``-s 3``, scikit-learn's ``SVR``); any solver
    that declares regression (``dual_cd``, ``mfn``: linear) through ``solver``.

    Parameters
    ----------
    solver : str, default "smo"
    C : float, default 1.0
        1/2||w||^2 + C sum_i max(0, |y_i - f(x_i)| - epsilon) (the loss's, ``loss``).
    epsilon : float, default 0.1
        The insensitive tube's half width (LIBSVM's and LIBLINEAR's -p).
    loss : str, optional
        The solver's residual loss (its default when None: smo's epsilon_insensitive).
    kernel, gamma :
        smo's kernel (``linear``, ``rbf``, ``polynomial``, ``sigmoid``) and gamma (a number,
        "scale" or "auto").
    tol, scale :
        As every solver's parameters.
    solver_params : dict, optional
        The solver's own settings (smo: ``svm_type="nu_svr"`` with ``nu``, ``degree``, ...).
    """

    def __init__(self, solver: str = "smo", C: float = 1.0, epsilon: float = 0.1,
                 loss: str | None = None, kernel: str = "rbf", gamma="scale",
                 tol: float = 1e-6, scale: str = "none",
                 solver_params: dict[str, Any] | None = None):
        self.solver = solver
        self.C = C
        self.epsilon = epsilon
        self.loss = loss
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.scale = scale
        self.solver_params = solver_params

    def _params(self) -> dict[str, Any]:
        params = dict(self.solver_params or {})
        params.update(task="regression", C=self.C, epsilon=self.epsilon, tol=self.tol,
                      scale=self.scale,
                      **_kernel_params(self.solver, self.kernel, self.gamma, params))
        if self.loss is not None:
            params["loss"] = self.loss
        return params

    def fit(self, X, y=None, sample_weight=None):
        """Train on (X, y) with real-valued y, or on a :class:`solvers.Dataset`."""
        dataset = _fit_dataset(self, X, y, sample_weight, y_numeric=True)
        self.result_ = train(dataset, solver=self.solver, params=self._params())
        self.model_ = self.result_.model
        self.coef_ = getattr(self.model_, "coef_", None)
        self.intercept_ = getattr(self.model_, "intercept_", None)
        return self

    def predict(self, X) -> np.ndarray:
        """The real values f(x)."""
        check_is_fitted(self, "model_")
        return self.model_.predict(self._features(X))


class SVMOneClass(_SolversEstimator, OutlierMixin, BaseEstimator):
    """One-class SVM (Schölkopf et al. 2001) trained by ``smo`` with
    ``svm_type="one_class"``, as scikit-learn's ``OneClassSVM``: ``predict`` +1 inside the
    estimated support and -1 outside, ``decision_function`` the signed score
    ``score_samples(X) - offset_``.

    Parameters
    ----------
    nu : float, default 0.5
        In (0, 1]: an upper bound on the fraction of training rows outside, a lower bound on
        the fraction of support vectors.
    kernel, gamma, tol, scale :
        As ``smo``'s.
    solver_params : dict, optional
        smo's own settings (``degree``, ``coef0``, ``cache_mb``, ...).
    """

    def __init__(self, nu: float = 0.5, kernel: str = "rbf", gamma="scale", tol: float = 1e-6,
                 scale: str = "none", solver_params: dict[str, Any] | None = None):
        self.nu = nu
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.scale = scale
        self.solver_params = solver_params

    def fit(self, X, y=None, sample_weight=None):
        """Estimate the support of the rows ``X`` (``y`` is not read)."""
        dataset = _fit_dataset(self, X, None, sample_weight)
        params = dict(self.solver_params or {})
        params.update(svm_type="one_class", nu=self.nu, kernel=self.kernel, gamma=self.gamma,
                      tol=self.tol, scale=self.scale)
        self.result_ = train(dataset, solver="smo", params=params)
        self.model_ = self.result_.model
        self.offset_ = -float(self.model_.intercept_[0])
        return self

    def score_samples(self, X) -> np.ndarray:
        """sum_j alpha_j k(sv_j, x), the score before the offset rho."""
        check_is_fitted(self, "model_")
        return self.model_.decision_function(self._features(X)) + self.offset_

    def decision_function(self, X) -> np.ndarray:
        """The signed score ``score_samples(X) - offset_``: positive inside the estimated
        support (the model's decision function, computed through score_samples so that the
        two agree to the last bit, as scikit-learn's checks ask)."""
        return self.score_samples(X) - self.offset_

    def predict(self, X) -> np.ndarray:
        """+1 inside the estimated support, -1 outside."""
        return np.where(self.decision_function(X) > 0, 1, -1)
