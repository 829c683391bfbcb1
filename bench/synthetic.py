"""A seeded, text-like synthetic sparse classification problem (always labelled synthetic).

Rows are bags of words: document lengths are log-normal, word ids follow a Zipf law over the
vocabulary, values are term frequencies scaled to unit Euclidean norm (like the papers'
News20).  Labels come from a planted linear separator (Gaussian weights) with 5% of them flipped.
Names encode the size: ``synthetic-{rows}x{features}`` (e.g. ``synthetic-300000x100000``).
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp

import solvers

SEED = 20261121
ZIPF_EXPONENT = 1.1
MEAN_WORDS = 20.0
LABEL_NOISE = 0.05


def parse_size(name: str) -> tuple[int, int]:
    rows, features = name.split("-", 1)[1].split("x")
    return int(rows), int(features)


def generate(n_rows: int, n_features: int, seed: int = SEED) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = np.maximum(1, rng.lognormal(np.log(MEAN_WORDS), 0.6, n_rows).astype(np.int64))
    ranks = np.arange(1, n_features + 1, dtype=np.float64)
    word_probability = ranks ** -ZIPF_EXPONENT
    word_probability /= word_probability.sum()
    permutation = rng.permutation(n_features)  # frequent words spread over the index range
    words = permutation[rng.choice(n_features, size=int(lengths.sum()), p=word_probability)]
    row_of_word = np.repeat(np.arange(n_rows), lengths)
    X = sp.csr_matrix((np.ones(words.shape[0]), (row_of_word, words)),
                      shape=(n_rows, n_features))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(1.0 / np.maximum(norms, 1e-300)) @ X
    X = sp.csr_matrix(X)
    w_true = rng.standard_normal(n_features)
    scores = X @ w_true
    y = np.where(scores > np.median(scores), 1.0, -1.0)
    flip = rng.random(n_rows) < LABEL_NOISE
    y[flip] = -y[flip]
    return X, y


@functools.cache
def _train_and_test(n_rows: int, n_features: int) -> tuple[solvers.Dataset, solvers.Dataset]:
    """One draw of n_rows + n_rows/5 rows from the same planted separator, split in two."""
    n_test = max(1000, n_rows // 5)
    X, y = generate(n_rows + n_test, n_features)
    return solvers.Dataset(X[:n_rows], y[:n_rows]), solvers.Dataset(X[n_rows:], y[n_rows:])


def synthetic_dataset(name: str, test: bool = False) -> solvers.Dataset:
    """The named synthetic set, or its held-out part (same separator, other rows)."""
    train, held_out = _train_and_test(*parse_size(name))
    return held_out if test else train


def release() -> None:
    """Forget the generated sets (a large one, once written to a file, need not stay in the
    process that made it)."""
    _train_and_test.cache_clear()
