"""The dataset type every solver, the CLI and the service share.

A :class:`Dataset` is a CSR feature matrix with float64 values, the labels exactly as the user
gave them, and the optional SVMlight side information (query ids, per-example costs).  It never
copies data it does not have to: a CSR matrix with float64 values, sorted indices and no
duplicates is taken as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvers.core.sparse import column_max_abs as _column_max_abs
from solvers.core.sparse import row_norms_squared as _row_norms_squared

_INT32_MAX = np.iinfo(np.int32).max


def as_csr(X, n_features: int | None = None) -> sp.csr_matrix:
    """Convert ``X`` to a canonical CSR matrix: float64 values, sorted unique indices.

    Indices are int32 when both the number of stored entries and the number of columns fit,
    int64 otherwise.  ``n_features`` widens the matrix (it may not narrow it).  A matrix
    already in that form is returned as it is (its values checked finite): every problem a
    ``train`` poses passes its dataset's matrix through here, and rebuilding the object was
    most of the 30-40 us a call cost a small set (issue 47).
    """
    if _canonical(X) and (n_features is None or n_features == X.shape[1]):
        if not np.all(np.isfinite(X.data)):
            raise ValueError("X holds NaN or infinite values")
        return X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
    else:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got shape {X.shape}")
        X = sp.csr_matrix(X)
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if n_features is not None:
        if n_features < X.shape[1]:
            raise ValueError(
                f"n_features={n_features} is smaller than the data's {X.shape[1]} columns"
            )
        if n_features > X.shape[1]:
            X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # also sorts the indices
    wide = X.nnz > _INT32_MAX or X.shape[1] > _INT32_MAX
    index_dtype = np.int64 if wide else np.int32
    if X.indices.dtype != index_dtype or X.indptr.dtype != index_dtype:
        X = sp.csr_matrix(
            (X.data, X.indices.astype(index_dtype), X.indptr.astype(index_dtype)),
            shape=X.shape,
        )
    if not np.all(np.isfinite(X.data)):
        raise ValueError("X holds NaN or infinite values")
    return X


def _canonical(X) -> bool:
    """Whether ``X`` is already what :func:`as_csr` makes: a ``csr_matrix`` (not a subclass or
    a ``csr_array``) with float64 values, sorted unique indices (scipy's cached flag) and the
    index width :func:`as_csr` would choose."""
    if type(X) is not sp.csr_matrix or X.dtype != np.float64:
        return False
    wide = X.nnz > _INT32_MAX or X.shape[1] > _INT32_MAX
    index_dtype = np.int64 if wide else np.int32
    return (X.indices.dtype == index_dtype and X.indptr.dtype == index_dtype
            and bool(X.has_canonical_format))


@dataclass(frozen=True)
class DatasetStats:
    n_samples: int
    n_features: int
    nnz: int
    density: float
    class_counts: dict[str, int]

    def as_dict(self) -> dict:
        return {
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "nnz": self.nnz,
            "density": self.density,
            "class_counts": dict(self.class_counts),
        }


def label_key(label) -> str:
    """A label as text: integers without a decimal point (``-1``, ``4``), other numbers as
    repr, strings as they are."""
    if isinstance(label, (str, np.str_)):
        return str(label)
    label = float(label)
    return str(int(label)) if label.is_integer() else repr(label)


def label_value(label):
    """A label as a JSON-able Python value of its own type: int, float or str."""
    if isinstance(label, (str, np.str_)):
        return str(label)
    if isinstance(label, (int, np.integer)) and not isinstance(label, bool):
        return int(label)
    return float(label)


def integral_labels(y) -> np.ndarray:
    """Float labels that are all integers (an SVMlight file's ``1``, ``-1``, ``14``) as int64,
    so a model trained on them predicts ``14``, not ``14.0``; anything else unchanged (a
    label -0.0 too: an int would lose its sign, and the reader keeps every number's bits)."""
    y = np.asarray(y)
    if (y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))
            and (y.size == 0 or np.max(np.abs(y)) < 2.0 ** 53)
            and not np.any((y == 0) & np.signbit(y))):
        return y.astype(np.int64)
    return y


def _encode_labels(y) -> tuple[np.ndarray, np.ndarray | None, np.dtype]:
    """(float64 values the solvers train on, the sorted distinct labels when they are not
    numbers (the values are then their indices), the labels' own dtype)."""
    y = np.asarray(y).ravel()
    if y.dtype.kind == "O":
        if all(isinstance(v, (str, np.str_)) for v in y):
            y = y.astype(str)
        else:
            try:
                y = y.astype(np.float64)
            except (TypeError, ValueError):
                y = y.astype(str)
    if y.dtype.kind in "US":
        y = y.astype(str)
        values, codes = np.unique(y, return_inverse=True)
        return codes.astype(np.float64), values, values.dtype
    if y.dtype.kind == "b":
        y = y.astype(np.int64)
    if y.dtype.kind in "iu":
        return y.astype(np.float64), None, np.dtype(np.int64)
    try:
        return y.astype(np.float64), None, np.dtype(np.float64)
    except (TypeError, ValueError):
        raise ValueError("labels must be numbers or strings") from None


class RowMatrix:
    """The shape of an object whose rows are ``self.X`` (a dataset, a problem posed on one)."""

    __slots__ = ()  # a Dataset keeps its slots
    X: sp.csr_matrix

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]


class Dataset(RowMatrix):
    """A labelled sparse dataset.

    Parameters
    ----------
    X : scipy sparse matrix or array-like, shape (n_samples, n_features)
        Converted to CSR with float64 values (see :func:`as_csr`).
    y : array-like, shape (n_samples,)
        Labels as given: numbers (any finite floats or ints: +1/-1, 0/1, 2/4, 1..p ...) or
        strings.  The solvers train on ``y`` as float64 (strings: their index among the sorted
        distinct strings); :attr:`class_labels` and :attr:`labels` give them back in their own
        type (ints stay ints, strings strings), and ``train`` gives the model those classes.
    qid : array-like of int64, optional
        SVMlight query ids (ranking / grouping information).
    sample_weight : array-like, optional
        Per-example cost factors (SVMlight ``cost:``); each example's loss is multiplied by it.
    n_features : int, optional
        Widen the matrix to this many columns.
    """

    __slots__ = ("X", "y", "qid", "sample_weight", "_classes", "label_values", "label_dtype",
                 "class_weight", "_facts")

    def __init__(self, X, y, qid=None, sample_weight=None, n_features: int | None = None,
                 *, label_values=None, label_dtype=None):
        X = as_csr(X, n_features)
        if label_values is not None:  # y: indices into label_values (a subset keeps them)
            y = np.asarray(y, dtype=np.float64).ravel()
            label_values = np.asarray(label_values)
            label_dtype = label_values.dtype
        else:
            y, label_values, own_dtype = _encode_labels(y)
            label_dtype = own_dtype if label_dtype is None or label_values is not None \
                else np.dtype(label_dtype)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels")
        if not np.all(np.isfinite(y)):
            raise ValueError("labels must be finite numbers")
        if qid is not None:
            qid = np.asarray(qid, dtype=np.int64).ravel()
            if qid.shape[0] != X.shape[0]:
                raise ValueError("qid must have one entry per row")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64).ravel()
            if sample_weight.shape[0] != X.shape[0]:
                raise ValueError("sample_weight must have one entry per row")
            if not np.all(np.isfinite(sample_weight)) or np.any(sample_weight < 0):
                raise ValueError("sample_weight must be finite and non-negative")
        self.X = X
        self.y = y
        self.qid = qid
        self.sample_weight = sample_weight
        self._classes = None
        #: facts computed once from the arrays, which a dataset never changes in place (the
        #: columns' max |x_ij|, the rows' squared norms, the class counts): ``train`` reads
        #: them on every call (the scale warning, auto's ranking, the model's metadata), and
        #: on a small set computing them again was a fifth of a 1 ms fit (issue 47)
        self._facts: dict = {}
        self.label_values = label_values
        self.label_dtype = label_dtype
        #: one-vs-rest class weights (one per class of ``classes``), attached by
        #: ``solvers.multiclass.apply_class_weight`` for the shared one-vs-rest loop
        self.class_weight: np.ndarray | None = None

    # -- basic properties ------------------------------------------------------------------
    @property
    def nnz(self) -> int:
        return int(self.X.nnz)

    @property
    def density(self) -> float:
        cells = self.n_samples * self.n_features
        return self.nnz / cells if cells else 0.0

    @property
    def classes(self) -> np.ndarray:
        """The distinct labels, sorted ascending (``classes[1]`` is positive for binary data)."""
        if self._classes is None:
            self._classes = np.unique(self.y)
        return self._classes

    def to_labels(self, values) -> np.ndarray:
        """Training values (``y``'s, ``classes``') as the labels they stand for, in the
        labels' own type."""
        values = np.asarray(values)
        if self.label_values is not None:
            return self.label_values[values.astype(np.int64)]
        return values.astype(self.label_dtype)

    @property
    def class_labels(self) -> np.ndarray:
        """:attr:`classes` in the labels' own type (ints, floats or strings)."""
        return self.to_labels(self.classes)

    @property
    def labels(self) -> np.ndarray:
        """Each example's label in its own type."""
        return self.to_labels(self.y)

    def column_max_abs(self) -> np.ndarray:
        """max_i |x_ij| per column (0 for a column without entries), computed once
        (read-only)."""
        out = self._facts.get("column_max_abs")
        if out is None:
            out = np.zeros(self.n_features)
            _column_max_abs(self.X.indices, self.X.data, out)
            out.flags.writeable = False
            self._facts["column_max_abs"] = out
        return out

    def fact(self, name: str, compute):
        """A fact of the data, ``compute()`` the first time and kept under ``name`` after (a
        dataset's arrays never change: the scale spreads ``auto`` and ``train`` read at every
        call, issue 47)."""
        if name not in self._facts:
            self._facts[name] = compute()
        return self._facts[name]

    def row_norms_squared(self) -> np.ndarray:
        """||x_i||^2 per row, computed once (read-only)."""
        out = self._facts.get("row_norms_squared")
        if out is None:
            out = np.empty(self.n_samples)
            _row_norms_squared(self.X.indptr, self.X.indices, self.X.data, out)
            out.flags.writeable = False
            self._facts["row_norms_squared"] = out
        return out

    def class_counts(self) -> dict[str, int]:
        """The number of examples of each label (keyed by :func:`label_key`), counted once;
        each call returns a new dict."""
        counts = self._facts.get("class_counts")
        if counts is None:
            counts = self._facts["class_counts"] = self._count_classes()
        return dict(counts)

    def _count_classes(self) -> dict[str, int]:
        classes, counts = np.unique(self.y, return_counts=True)
        # as Python scalars: label_key on NumPy ones cost 3 us a label, more than a small
        # regression set's whole solve (mg's 1,372 distinct real labels: 3.9 ms a model)
        labels, counts = self.to_labels(classes), counts.tolist()
        if labels.dtype.kind == "f":  # label_key's rule, inlined for real-valued labels
            keys = [str(int(v)) if v.is_integer() else repr(v) for v in labels.tolist()]
        else:
            keys = [label_key(c) for c in labels.tolist()]
        return dict(zip(keys, counts, strict=True))

    def stats(self) -> DatasetStats:
        return DatasetStats(
            n_samples=self.n_samples,
            n_features=self.n_features,
            nnz=self.nnz,
            density=self.density,
            class_counts=self.class_counts(),
        )

    def __len__(self) -> int:
        return self.n_samples

    def __repr__(self) -> str:
        return (
            f"Dataset(n_samples={self.n_samples}, n_features={self.n_features}, "
            f"nnz={self.nnz}, classes={len(self.classes)})"
        )

    def __eq__(self, other) -> bool:
        if not isinstance(other, Dataset):
            return NotImplemented
        return (
            self.X.shape == other.X.shape
            and np.array_equal(self.X.indptr, other.X.indptr)
            and np.array_equal(self.X.indices, other.X.indices)
            and np.array_equal(self.X.data, other.X.data)
            and np.array_equal(self.y, other.y)
            and _optional_equal(self.qid, other.qid)
            and _optional_equal(self.sample_weight, other.sample_weight)
        )

    __hash__ = None

    # -- derived datasets ------------------------------------------------------------------
    def subset(self, rows) -> Dataset:
        """The dataset restricted to ``rows`` (indices or a boolean mask), same columns."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        return Dataset(
            self.X[rows],
            self.y[rows],
            qid=None if self.qid is None else self.qid[rows],
            sample_weight=None if self.sample_weight is None else self.sample_weight[rows],
            label_values=self.label_values, label_dtype=self.label_dtype,
        )

    def with_n_features(self, n_features: int) -> Dataset:
        """The same rows with the matrix widened to ``n_features`` columns."""
        if n_features == self.n_features:
            return self
        return self.with_X(self.X, n_features=n_features)

    def with_X(self, X, n_features: int | None = None) -> Dataset:
        """The same labels, query ids and weights with another feature matrix (scaled,
        widened), the labels' type kept."""
        out = Dataset(X, self.y, self.qid, self.sample_weight, n_features=n_features,
                      label_values=self.label_values, label_dtype=self.label_dtype)
        out.class_weight = self.class_weight
        return out

    def with_sample_weight(self, sample_weight) -> Dataset:
        """The same data with other per-example cost factors."""
        out = Dataset(self.X, self.y, self.qid, sample_weight, label_values=self.label_values,
                      label_dtype=self.label_dtype)
        out.class_weight = self.class_weight
        return out

    def with_class_weight(self, weights) -> Dataset:
        """The same data with one-vs-rest class weights attached (one per class of
        :attr:`classes`; see :mod:`solvers.multiclass`, class weights)."""
        out = self.with_X(self.X)
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != self.classes.shape:
            raise ValueError("one class weight per class")
        out.class_weight = weights
        return out

    def train_test_split(self, test_size: float = 0.25, seed: int = 0) -> tuple[Dataset, Dataset]:
        """A seeded stratified split: each class contributes ``round(test_size * count)`` rows
        (at least one when it has two or more) to the test part."""
        if not 0.0 < test_size < 1.0:
            raise ValueError("test_size must lie strictly between 0 and 1")
        rng = np.random.default_rng(seed)
        test_rows = []
        for c in self.classes:
            members = np.flatnonzero(self.y == c)
            rng.shuffle(members)
            k = int(round(test_size * members.size))
            if members.size >= 2:
                k = min(max(k, 1), members.size - 1)
            else:
                k = 0
            test_rows.append(members[:k])
        test = np.sort(np.concatenate(test_rows))
        train_mask = np.ones(self.n_samples, dtype=bool)
        train_mask[test] = False
        return self.subset(train_mask), self.subset(test)

    def stratified_folds(self, n_folds: int, seed: int = 0) -> np.ndarray:
        """Fold number (0..n_folds-1) for each row, stratified by class and seeded."""
        if n_folds < 2:
            raise ValueError("n_folds must be at least 2")
        rng = np.random.default_rng(seed)
        fold = np.empty(self.n_samples, dtype=np.int64)
        offset = 0
        for c in self.classes:
            members = np.flatnonzero(self.y == c)
            rng.shuffle(members)
            fold[members] = (np.arange(members.size) + offset) % n_folds
            offset += members.size
        return fold


    def shuffled_folds(self, n_folds: int, seed: int = 0) -> np.ndarray:
        """Fold number (0..n_folds-1) for each row, seeded but not stratified (a
        regression's: real-valued labels have no classes); fold sizes differ by at most
        one."""
        if n_folds < 2:
            raise ValueError("n_folds must be at least 2")
        fold = np.empty(self.n_samples, dtype=np.int64)
        fold[np.random.default_rng(seed).permutation(self.n_samples)] = \
            np.arange(self.n_samples) % n_folds
        return fold


def _optional_equal(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return np.array_equal(a, b)
