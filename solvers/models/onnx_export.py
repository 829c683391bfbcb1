"""ONNX export: the graph each model kind's ``to_onnx()`` builds (``Model.to_onnx``).

The graph reproduces the library's prediction as the library defines it, so that any ONNX
runtime serves a trained model without this library.  It has one input and up to three
outputs:

* ``X``: the rows, a dense double tensor of shape (N, ``n_features_in_``).  The standard
  operators compute on dense tensors (MatMul has no sparse form), so sparse rows are densified
  first, with exactly the model's feature count: ``Model.onnx_input`` does it as the library's
  ``as_feature_matrix`` does (features the model never saw dropped, missing trailing ones
  zero).
* ``label`` (N,): ``predict``, in the model's own label type (int64, double or string).
* ``scores`` (N,) for binary and ordinal models, (N, rows) otherwise: ``decision_function``.
* ``probabilities`` (N, n_classes), columns in ``classes_``'s order: ``predict_proba``, for a
  model trained with ``probability=True`` only.

**Operators and precision.**  The graph uses the default ONNX domain only (opset
:data:`OPSET`, IR version :data:`IR_VERSION`: onnxruntime 1.13 and later), every tensor in
double precision.  The ``ai.onnx.ml`` operators were the first choice and are not used:
``LinearClassifier``, ``SVMClassifier`` and ``Scaler`` hold their coefficients, intercepts
(rho), support vectors, kernel parameters and scales as ``floats`` attributes, i.e. float32,
and give float32 scores.  Measured with ``LinearClassifier`` holding mfn's one-vs-rest models
(onnxruntime 1.32, 2026-11-27): on the held-out rows of dna, a9a and letter its scores were
off the library's by up to 1.9e-3, 3.6e-3 and 7.0e-4 relative, 3.0 %, 2.1 % and 0.6 % of them
by more than 1e-6 -- the tolerance the export is verified at cannot be met in float32.  Their
labels are int64 or strings only, too, while a model's labels may be doubles.  MatMul, Add,
Exp, Tanh, Gather, Loop ... on double tensors are in every runtime's default domain, so
nothing is lost in portability.

**The mapping, model by model** (N rows x d features; every constant is an initializer):

* linear, binary: ``scores = X w + b`` (MatMul with the weight vector, Add); label
  ``classes_[1]`` where the score is > 0, else ``classes_[0]`` (Greater, Cast to the index,
  Gather from the classes: a score of exactly 0 goes to ``classes_[0]`` as in the library).
* linear, one-vs-rest and Crammer-Singer (one weight row per class): ``scores = X W' + b``;
  label by ArgMax over the classes (the first of equal maxima, ``select_last_index=0``, as
  ``np.argmax``).  A model trained with ``scale=`` has the scaler folded into its weights
  (:mod:`solvers.scaling`), so the graph takes raw inputs with no Scaler step.
* regression: ``scores = X w + b``, the predicted values, and ``label`` the same values
  (``predict`` of a regression model is its decision function).
* ordinal: ``scores = X w``; the rank is the number of thresholds strictly below the score
  (Greater against the thresholds, Cast, ReduceSum), its label gathered from the classes.
* kernel (binary, one-vs-rest, one-vs-one; low-rank models are kernel models over their
  landmarks): the support vectors are a dense (m, d) constant S; ``D = X S'`` (MatMul), then
  linear ``K = D``; polynomial ``(gamma D + coef0)^degree`` (Pow); sigmoid
  ``tanh(gamma D + coef0)``; RBF ``exp(-gamma max(0, ||x||^2 + ||s||^2 - 2 D))`` (the
  library's formula and clamp: ReduceSumSquare, Max, Exp).  The binary functions' values are
  ``P = K C' + b`` (one column per row of ``coef_``), and binary and one-vs-rest models end as
  linear ones.  One-vs-one: pair p = (a, b) votes for a when ``P[:, p] > 0``, else for b
  (LIBSVM's rule; the sign convention is the library's, ``intercept = -rho``), and adds
  ``P[:, p]`` to a's confidence and subtracts it from b's; each class gathers its k - 1 terms
  from the concatenated [wins of a, wins of b] and [P, -P] (Gather with a constant (k, k - 1)
  index, ReduceSum), and the scores are ``votes + confidence / (3 (|confidence| + 1))`` as the
  library's; the label is the ArgMax of the votes (integers; the first class among those with
  most votes, LIBSVM's tie rule; ``SVMClassifier``'s specification states none).
* probabilities, Platt (``metadata["platt"]``, one (A, B) per score column): ``p = 1 / (1 +
  exp(A f + B))`` in the library's overflow-free form (``e = exp(-|z|)``, ``e / (1 + e)`` or
  ``1 / (1 + e)`` by the sign of z, Where); binary ``[1 - p, p]``, more classes each column's p
  over the row's sum.
* probabilities, one-vs-one coupling (``metadata["pairwise_platt"]``): each pair's sigmoid,
  clipped to [1e-7, 1 - 1e-7], gathered into the (N, k, k) matrix r (r_ab the pair's value,
  r_ba one minus it, the diagonal 0); then Wu, Lin & Weng's method 2 as
  :func:`solvers.calibration.couple` iterates it: a Loop of at most max(100, k) sweeps, each
  computing Q p and p'Q p, marking converged the rows whose max |(Q p)_a - p'Q p| is below
  0.005 / k, ending when none is left, and updating the others coordinate by coordinate (the k
  coordinates unrolled in the Loop's body; a converged row keeps its p, Where).

Verified against onnxruntime on held-out rows of real data (``tests/test_onnx.py``): the same
labels, scores to 1e-6 relative, probabilities to 1e-6.

The support vectors are stored dense, m x d doubles: a kernel model on sparse data with many
features (news20) may not fit a protocol-buffer file, whose limit is 2 GB;
:data:`MAX_CONSTANT_BYTES` refuses such a model with the reason.  A caller that must bound its
memory passes a lower ceiling (``Model.to_onnx(max_constant_bytes=...)``, the service's
``SVMSVC_MAX_ONNX_BYTES``): the constants are counted as they are added, the support vectors
from their shape before they are densified, and the first past the ceiling raises
:class:`ConstantsTooLarge`, so a refused export never holds more than the model and one
constant's copy.  Building and checking the file holds its constants several times over (the
initializers, the graph and model messages they are copied into, the checker's serialized
copy and the file itself): about six times the constants at the peak.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.calibration import MIN_PAIRWISE_PROBABILITY, pair_index
from solvers.core.kernels import Kernel
from solvers.data.dataset import as_csr

#: The default domain's opset the graph is written in (Loop, Where, ArgMax's
#: ``select_last_index``, Squeeze and ReduceSum with ``axes`` as an input need 13 or later).
OPSET = 17
#: The IR version of opset 17 (the ``onnx`` package would write its newest, which older
#: runtimes refuse).
IR_VERSION = 8

#: The graph's constants may hold at most this many bytes: a protocol buffer is limited to
#: 2 GiB, and the rest of the graph needs a little room.
MAX_CONSTANT_BYTES = 2**31 - 2**24

INPUT = "X"
LABEL, SCORES, PROBABILITIES = "label", "scores", "probabilities"


class ModelExportError(ValueError):
    """The model cannot be written in the format asked for (the message says why)."""


class ConstantsTooLarge(ModelExportError):
    """The graph's constants would pass the ceiling ``limit`` (bytes): ``needed`` counts them
    up to the one refused (the whole graph needs at least that)."""

    def __init__(self, message: str, needed: int, limit: int):
        super().__init__(message)
        self.needed = needed
        self.limit = limit


@dataclass(frozen=True)
class GraphOutputs:
    """What a model kind's graph computes: the names of its label and score tensors, the
    scores' columns (None: one score per row, shape (N,)), its probabilities' (or None)."""

    label: str
    scores: str
    score_columns: int | None
    probabilities: str | None = None


def _onnx():
    """The ``onnx`` package, imported when a model is exported (an optional dependency: the
    ``service`` extra installs it)."""
    try:
        import onnx  # noqa: PLC0415 (optional; only an export needs it)
    except ImportError:
        raise ImportError("ONNX export needs the onnx package: pip install onnx (the svmsvc "
                          "service extra installs it)") from None
    return onnx


#: A constant's or a label's numpy kind -> its ONNX element type (model labels are int64,
#: float64 or strings: ``model_classes``).
_ELEMENT_TYPES = {"f": "DOUBLE", "i": "INT64", "b": "BOOL", "U": "STRING", "O": "STRING"}


class OnnxGraph:
    """The nodes and constants of one graph (or of a Loop's body, which shares its parent's
    names and constants), built with ``onnx.helper``; every node has one output, named
    uniquely."""

    def __init__(self, parent: OnnxGraph | None = None,
                 max_constant_bytes: int = MAX_CONSTANT_BYTES):
        self.onnx = _onnx() if parent is None else parent.onnx
        self.max_constant_bytes = min(max_constant_bytes, MAX_CONSTANT_BYTES) \
            if parent is None else parent.max_constant_bytes
        self.nodes: list = []
        self.initializers: list = [] if parent is None else parent.initializers
        self._counter = itertools.count() if parent is None else parent._counter
        self._constant_bytes = [0] if parent is None else parent._constant_bytes
        self._shared: dict = {} if parent is None else parent._shared

    def name(self, hint: str) -> str:
        return f"{hint}_{next(self._counter)}"

    def constant(self, values, hint: str = "constant") -> str:
        """A constant (an initializer of the outermost graph): doubles, int64, bools or
        strings."""
        values = np.asarray(values)
        kind = values.dtype.kind
        name = self.name(hint)
        self.reserve(values.nbytes)
        helper = self.onnx.helper
        if kind in "UO":
            tensor = helper.make_tensor(name, self.onnx.TensorProto.STRING, values.shape,
                                        [str(v).encode("utf-8") for v in values.ravel()])
        else:
            dtype = {"f": np.float64, "i": np.int64, "b": np.bool_}[kind]
            tensor = self.onnx.numpy_helper.from_array(values.astype(dtype), name)
        self.initializers.append(tensor)
        return name

    def reserve(self, nbytes: int) -> None:
        """Count ``nbytes`` of constants about to be added (:meth:`check_room` first)."""
        self.check_room(nbytes)
        self._constant_bytes[0] += nbytes

    def check_room(self, nbytes: int, what: str = "constants") -> None:
        """:class:`ConstantsTooLarge` when ``nbytes`` more of constants would pass the ceiling
        (a protocol buffer's 2 GB, or the caller's lower one)."""
        needed = self._constant_bytes[0] + nbytes
        if needed > self.max_constant_bytes:
            limit = self.max_constant_bytes
            reason = "more than an ONNX file holds (a protocol buffer's 2 GB)" \
                if limit == MAX_CONSTANT_BYTES else f"more than the ceiling of {limit} bytes"
            raise ConstantsTooLarge(f"the ONNX graph would hold at least {needed} bytes of "
                                    f"{what}, {reason}", needed, limit)

    def scalar(self, value: float) -> str:
        """A double constant of shape () (one initializer per value)."""
        key = ("scalar", float(value))
        if key not in self._shared:
            self._shared[key] = self.constant(np.array(float(value)), "scalar")
        return self._shared[key]

    def ints(self, *values: int) -> str:
        """An int64 constant listing ``values`` (axes, indices, shapes; one initializer per
        list)."""
        key = ("ints", values)
        if key not in self._shared:
            self._shared[key] = self.constant(np.array(values, dtype=np.int64), "ints")
        return self._shared[key]

    def op(self, op_type: str, *inputs: str, **attributes) -> str:
        """Append a node; returns its output's name."""
        output = self.name(op_type.lower())
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), [output],
                                                     name=output, **attributes))
        return output

    def tensor_type(self, values) -> int:
        """The ONNX element type of a numpy array's values."""
        return getattr(self.onnx.TensorProto, _ELEMENT_TYPES[np.asarray(values).dtype.kind])

    def value_info(self, name: str, element_type: int, shape) -> Any:
        return self.onnx.helper.make_tensor_value_info(name, element_type, shape)


# -- the pieces of the models' graphs ------------------------------------------------------------

def affine(graph: OnnxGraph, X: str, coef: np.ndarray, intercept: np.ndarray) -> str:
    """(N, rows) values ``X coef' + intercept``."""
    weights = graph.constant(np.ascontiguousarray(np.asarray(coef, dtype=np.float64).T),
                             "weights")
    return graph.op("Add", graph.op("MatMul", X, weights),
                    graph.constant(np.asarray(intercept, dtype=np.float64), "intercept"))


def column(graph: OnnxGraph, values: str) -> str:
    """The (N,) first column of (N, 1) values."""
    return graph.op("Squeeze", values, graph.ints(1))


def kernel_rows(graph: OnnxGraph, X: str, support_vectors, kernel: Kernel) -> str:
    """(N, m) values k(x_i, s_j) against the support vectors (dense constants)."""
    S = as_csr(support_vectors)
    dense = S.shape[0] * S.shape[1] * 8
    graph.check_room(dense, f"constants (the model's {S.shape[0]} support vectors of "
                            f"{S.shape[1]} features are {dense} bytes dense; ONNX stores "
                            f"them dense)")  # before they are densified
    dots = graph.op("MatMul", X, graph.constant(np.ascontiguousarray(S.toarray().T),
                                                "support_vectors_t"))
    if kernel.name == "linear":
        return dots
    if kernel.name == "rbf":
        # the library's: d2 = ||x||^2 + ||s||^2 - 2 x.s, clamped at 0, exp(-gamma d2)
        x_norms = graph.op("ReduceSumSquare", X, axes=[1], keepdims=1)  # (N, 1)
        s_norms = graph.constant(np.asarray(S.multiply(S).sum(axis=1)).ravel(), "sv_norms")
        d2 = graph.op("Sub", graph.op("Add", x_norms, s_norms),
                      graph.op("Mul", graph.scalar(2.0), dots))
        d2 = graph.op("Max", d2, graph.scalar(0.0))
        return graph.op("Exp", graph.op("Mul", graph.scalar(-kernel.gamma), d2))
    shifted = graph.op("Add", graph.op("Mul", graph.scalar(kernel.gamma), dots),
                       graph.scalar(kernel.coef0))
    if kernel.name == "polynomial":
        return graph.op("Pow", shifted, graph.scalar(kernel.degree))
    if kernel.name == "sigmoid":
        return graph.op("Tanh", shifted)
    raise ModelExportError(f"no ONNX form for the {kernel.name!r} kernel")


def threshold_labels(graph: OnnxGraph, scores: str, classes: np.ndarray) -> str:
    """``classes[1]`` where the (N,) score is > 0, else ``classes[0]``."""
    index = graph.op("Cast", graph.op("Greater", scores, graph.scalar(0.0)),
                     to=graph.onnx.TensorProto.INT64)
    return gather_labels(graph, index, classes)


def argmax_labels(graph: OnnxGraph, scores: str, classes: np.ndarray) -> str:
    """The class of each row's largest score (the first of equal ones)."""
    index = graph.op("ArgMax", scores, axis=1, keepdims=0, select_last_index=0)
    return gather_labels(graph, index, classes)


def gather_labels(graph: OnnxGraph, index: str, classes: np.ndarray) -> str:
    return graph.op("Gather", graph.constant(np.asarray(classes), "classes"), index, axis=0)


def classifier_outputs(graph: OnnxGraph, values: str, rows: int, classes: np.ndarray,
                       platt) -> GraphOutputs:
    """The outputs of a model whose scores are its ``rows`` binary functions' values (N,
    rows), as ``Model.labels_from_scores`` and ``Model.scores_and_probabilities`` read them:
    one function, the (N,) score's sign; more, the largest score; Platt's probabilities when
    ``platt``."""
    if rows == 1:
        scores = column(graph, values)
        label, columns = threshold_labels(graph, scores, classes), None
    else:
        scores = values
        label, columns = argmax_labels(graph, scores, classes), rows
    return GraphOutputs(label, scores, columns,
                        platt_probabilities(graph, scores, platt, binary=columns is None))


def ordinal_outputs(graph: OnnxGraph, X: str, coef: np.ndarray, thresholds: np.ndarray,
                    classes: np.ndarray) -> GraphOutputs:
    """An ordinal model's: the (N,) score w.x and the label of the rank it falls in, the
    number of thresholds strictly below it (``OrdinalModel._ranks``)."""
    scores = graph.op("MatMul", X, graph.constant(np.asarray(coef, dtype=np.float64), "weights"))
    thresholds = graph.constant(np.asarray(thresholds, dtype=np.float64)[None, :], "thresholds")
    below = graph.op("Greater", graph.op("Unsqueeze", scores, graph.ints(1)), thresholds)
    ranks = graph.op("ReduceSum", graph.op("Cast", below, to=graph.onnx.TensorProto.INT64),
                     graph.ints(1), keepdims=0)
    return GraphOutputs(gather_labels(graph, ranks, classes), scores, None)


def regression_outputs(graph: OnnxGraph, X: str, coef: np.ndarray,
                       intercept: float) -> GraphOutputs:
    """A regression model's: the (N,) values ``X w + b``, both its label (``predict``) and its
    scores (``decision_function``)."""
    values = column(graph, affine(graph, X, np.asarray(coef)[None, :], np.array([intercept])))
    return GraphOutputs(values, values, None)


def sigmoid(graph: OnnxGraph, decision: str, A, B) -> str:
    """1 / (1 + exp(A f + B)) as :func:`solvers.calibration.sigmoid` computes it: with
    e = exp(-|z|), e / (1 + e) where z >= 0, 1 / (1 + e) elsewhere (no overflow)."""
    z = graph.op("Add", graph.op("Mul", decision, graph.constant(np.asarray(A, float), "A")),
                 graph.constant(np.asarray(B, float), "B"))
    e = graph.op("Exp", graph.op("Neg", graph.op("Abs", z)))
    one = graph.scalar(1.0)
    denominator = graph.op("Add", one, e)
    return graph.op("Where", graph.op("GreaterOrEqual", z, graph.scalar(0.0)),
                    graph.op("Div", e, denominator), graph.op("Div", one, denominator))


def platt_probabilities(graph: OnnxGraph, scores: str, platt, binary: bool) -> str | None:
    """The probabilities of :func:`solvers.calibration.probabilities` (None without
    ``platt``): binary [1 - p, p]; otherwise each column's sigmoid over the row's sum."""
    if platt is None:
        return None
    platt = np.asarray(platt, dtype=np.float64)
    if binary:
        p = graph.op("Unsqueeze", sigmoid(graph, scores, platt[0, 0], platt[0, 1]),
                     graph.ints(1))
        return graph.op("Concat", graph.op("Sub", graph.scalar(1.0), p), p, axis=1)
    p = sigmoid(graph, scores, platt[:, 0], platt[:, 1])
    total = graph.op("ReduceSum", p, graph.ints(1), keepdims=1)
    return graph.op("Div", p, total)


def class_pairs_index(k: int) -> np.ndarray:
    """(k, k - 1) columns of [W, L] (W and L (N, pairs): one column per pair) for each class
    c: pair p = (c, b) contributes column p, pair p = (a, c) column pairs + p, in pair order
    (the order :meth:`KernelModel._ovo_scores` adds them in)."""
    pairs = pair_index(k)
    index = [[] for _ in range(k)]
    for p, (a, b) in enumerate(pairs):
        index[a].append(p)
        index[b].append(len(pairs) + p)
    return np.array(index, dtype=np.int64)


def ovo_votes_and_scores(graph: OnnxGraph, pairwise: str, k: int) -> tuple[str, str]:
    """(votes, scores), both (N, k), of a one-vs-one model from its pairs' values, as
    ``KernelModel._ovo_scores``: pair (a, b) votes for a when its value is > 0, else for b,
    and adds its value to a's confidence and subtracts it from b's; scores = votes +
    confidence / (3 (|confidence| + 1)).  Each class gathers its k - 1 pairs' terms from
    [for a, for b] (:func:`class_pairs_index`) and sums them."""
    index = graph.constant(class_pairs_index(k), "class_pairs")
    axis2 = graph.ints(2)
    positive = graph.op("Cast", graph.op("Greater", pairwise, graph.scalar(0.0)),
                        to=graph.onnx.TensorProto.DOUBLE)
    wins = graph.op("Concat", positive,
                    graph.op("Sub", graph.scalar(1.0), positive), axis=1)
    votes = graph.op("ReduceSum", graph.op("Gather", wins, index, axis=1), axis2, keepdims=0)
    signed = graph.op("Concat", pairwise, graph.op("Neg", pairwise), axis=1)
    confidence = graph.op("ReduceSum", graph.op("Gather", signed, index, axis=1), axis2,
                          keepdims=0)
    squashed = graph.op("Div", confidence, graph.op(
        "Mul", graph.scalar(3.0),
        graph.op("Add", graph.op("Abs", confidence), graph.scalar(1.0))))
    return votes, graph.op("Add", votes, squashed)


def coupled_probabilities(graph: OnnxGraph, pairwise: str, platt, k: int) -> str:
    """(N, k) probabilities of :func:`solvers.calibration.coupled_probabilities`: the pairs'
    clipped sigmoids coupled by Wu, Lin & Weng's method 2, iterated as
    :func:`solvers.calibration.couple` does (see the module docstring)."""
    platt = np.asarray(platt, dtype=np.float64)
    pairs = pair_index(k)
    value = graph.op("Clip", sigmoid(graph, pairwise, platt[:, 0], platt[:, 1]),
                     graph.scalar(MIN_PAIRWISE_PROBABILITY),
                     graph.scalar(1.0 - MIN_PAIRWISE_PROBABILITY))
    # r[:, a, b] = value_p, r[:, b, a] = 1 - value_p, the diagonal 0: gathered, flattened
    # (N, k * k), from the columns [value, 1 - value, 0]
    batch = graph.op("Shape", pairwise, end=1)
    zeros = graph.op("ConstantOfShape", graph.op("Concat", batch, graph.ints(1), axis=0),
                     value=graph.onnx.numpy_helper.from_array(np.zeros(1)))
    source = graph.op("Concat", value, graph.op("Sub", graph.scalar(1.0), value), zeros,
                      axis=1)
    r_index = np.full(k * k, 2 * len(pairs), dtype=np.int64)
    for p, (a, b) in enumerate(pairs):
        r_index[a * k + b] = p
        r_index[b * k + a] = len(pairs) + p
    r = graph.op("Reshape", graph.op("Gather", source, graph.constant(r_index, "r_index"),
                                     axis=1), graph.ints(-1, k, k))
    rt = graph.op("Transpose", r, perm=[0, 2, 1])  # rt[:, a, b] = r_ba
    # Q_ab = -r_ba r_ab off the diagonal, Q_aa = sum_b r_ba^2 (r's diagonal is 0)
    diagonal = graph.op("ReduceSum", graph.op("Mul", rt, rt), graph.ints(2), keepdims=0)
    Q = graph.op("Add", graph.op("Neg", graph.op("Mul", rt, r)),
                 graph.op("Mul", graph.op("Unsqueeze", diagonal, graph.ints(2)),
                          graph.constant(np.eye(k), "eye")))
    return _coupling_loop(graph, Q, diagonal, batch, k)


def _coupling_loop(graph: OnnxGraph, Q: str, diagonal: str, batch: str, k: int) -> str:
    """The fixed-point iteration of :func:`solvers.calibration.couple` on Q (N, k, k) (its
    diagonal (N, k); ``batch`` the tensor [N]) as an ONNX Loop; returns p (N, k)."""
    TensorProto = graph.onnx.TensorProto
    # per coordinate t, outside the loop: Q's row t (N, k), its diagonal entry (N, 1) and the
    # unit row e_t (1, k) that adds a change to p's column t only
    rows_t, diag_t, unit_t = [], [], []
    for t in range(k):
        rows_t.append(graph.op("Squeeze", graph.op("Gather", Q, graph.ints(t), axis=1),
                               graph.ints(1)))
        diag_t.append(graph.op("Gather", diagonal, graph.ints(t), axis=1))
        unit_t.append(graph.constant(np.eye(k)[t:t + 1], "unit"))
    p_start = graph.op("Expand", graph.constant(np.full((1, k), 1.0 / k), "p_start"),
                       graph.op("Concat", batch, graph.ints(k), axis=0))
    active_start = graph.op("Expand", graph.constant(np.array([[True]]), "active_start"),
                            graph.op("Concat", batch, graph.ints(1), axis=0))

    body = OnnxGraph(graph)
    iteration, condition = body.name("iteration"), body.name("condition")
    p_in, active_in = body.name("p_in"), body.name("active_in")
    Qp = body.op("Squeeze", body.op("MatMul", Q, body.op("Unsqueeze", p_in, graph.ints(2))),
                 graph.ints(2))  # (N, k)
    pQp = body.op("ReduceSum", body.op("Mul", p_in, Qp), graph.ints(1), keepdims=1)  # (N, 1)
    gap = body.op("ReduceMax", body.op("Abs", body.op("Sub", Qp, pQp)), axes=[1], keepdims=1)
    active = body.op("And", active_in,
                     body.op("GreaterOrEqual", gap, graph.scalar(0.005 / k)))
    p = p_in
    for t in range(k):  # LIBSVM's sweep, one coordinate at a time, as couple() writes it
        Qp_t = body.op("Gather", Qp, graph.ints(t), axis=1)
        diff = body.op("Div", body.op("Add", body.op("Neg", Qp_t), pQp), diag_t[t])
        p = body.op("Add", p, body.op("Mul", diff, unit_t[t]))
        grow = body.op("Add", graph.scalar(1.0), diff)
        change = body.op("Mul", diff, body.op("Add", body.op("Mul", diff, diag_t[t]),
                                              body.op("Mul", graph.scalar(2.0), Qp_t)))
        pQp = body.op("Div", body.op("Div", body.op("Add", pQp, change), grow), grow)
        Qp = body.op("Div", body.op("Add", Qp, body.op("Mul", diff, rows_t[t])), grow)
        p = body.op("Div", p, grow)
    p_out = body.op("Where", active, p, p_in)  # a converged row keeps its p
    any_active = body.op("Greater", body.op("ReduceSum", body.op(
        "Cast", active, to=TensorProto.DOUBLE), keepdims=0), graph.scalar(0.0))
    body_graph = graph.onnx.helper.make_graph(
        body.nodes, "coupling_sweep",
        [body.value_info(iteration, TensorProto.INT64, []),
         body.value_info(condition, TensorProto.BOOL, []),
         body.value_info(p_in, TensorProto.DOUBLE, ["N", k]),
         body.value_info(active_in, TensorProto.BOOL, ["N", 1])],
        [body.value_info(any_active, TensorProto.BOOL, []),
         body.value_info(p_out, TensorProto.DOUBLE, ["N", k]),
         body.value_info(active, TensorProto.BOOL, ["N", 1])])
    output = graph.name("coupled")
    graph.nodes.append(graph.onnx.helper.make_node(
        "Loop", [graph.constant(np.array(max(100, k), dtype=np.int64), "max_sweeps"),
                 graph.constant(np.array(True), "start"), p_start, active_start],
        [output, graph.name("active_end")], name=output, body=body_graph))
    return output


def serialize(graph: OnnxGraph, model, outputs: GraphOutputs) -> bytes:
    """The model's ONNX file: the graph's outputs renamed ``label``, ``scores`` and
    ``probabilities``, checked by ``onnx.checker``, with the model's kind, classes and
    metadata in its metadata properties."""
    onnx = graph.onnx
    TensorProto = onnx.TensorProto
    named = [(outputs.label, LABEL), (outputs.scores, SCORES)]
    if outputs.probabilities is not None:
        named.append((outputs.probabilities, PROBABILITIES))
    for source, target in named:
        graph.nodes.append(onnx.helper.make_node("Identity", [source], [target], name=target))
    score_shape = ["N"] if outputs.score_columns is None else ["N", outputs.score_columns]
    declared = [graph.value_info(LABEL, graph.tensor_type(model.classes_), ["N"]),
                graph.value_info(SCORES, TensorProto.DOUBLE, score_shape)]
    if outputs.probabilities is not None:
        declared.append(graph.value_info(PROBABILITIES, TensorProto.DOUBLE,
                                         ["N", model.n_classes]))
    onnx_graph = onnx.helper.make_graph(
        graph.nodes, f"svmsvc_{model.kind}",
        [graph.value_info(INPUT, TensorProto.DOUBLE, ["N", model.n_features_in_])],
        declared, graph.initializers)
    onnx_model = onnx.helper.make_model(
        onnx_graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)],
        producer_name="svmsvc", doc_string=_doc(model, outputs.probabilities is not None))
    onnx_model.ir_version = IR_VERSION
    onnx.helper.set_model_props(onnx_model, {
        "svmsvc.kind": model.kind,
        "svmsvc.classes": json.dumps(np.asarray(model.classes_).tolist()),
        "svmsvc.n_features": str(model.n_features_in_),
        "svmsvc.metadata": json.dumps(model.metadata, default=str),
    })
    onnx.checker.check_model(onnx_model, full_check=True)
    return onnx_model.SerializeToString()


def _doc(model, calibrated: bool) -> str:
    if model.task == "regression":
        return (f"svmsvc {model.kind} model: input X, dense float64 (N, "
                f"{model.n_features_in_}); outputs label and scores, both the predicted "
                f"values (predict, decision_function)")
    outputs = "label, scores" + (", probabilities" if calibrated else "")
    return (f"svmsvc {model.kind} model, {model.n_classes} classes: input X, dense float64 "
            f"(N, {model.n_features_in_}); outputs {outputs} (predict, decision_function"
            f"{', predict_proba' if calibrated else ''})")
