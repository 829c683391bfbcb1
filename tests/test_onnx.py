"""ONNX export (``Model.to_onnx``, :mod:`solvers.models.onnx_export`): every model kind on real
data, served by onnxruntime on held-out rows, gives the library's labels, its scores to 1e-6
relative and its probabilities to 1e-6."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
import scipy.sparse as sp
from shared_data import load

import solvers
from solvers.calibration import fit_platt
from solvers.core.kernels import Kernel
from solvers.models import KernelModel, LinearModel, Model, ModelExportError, OrdinalModel
from solvers.models.onnx_export import IR_VERSION, MAX_CONSTANT_BYTES, OPSET, ConstantsTooLarge


def served(model: Model, X) -> dict[str, np.ndarray]:
    """The ONNX graph's outputs on the rows ``X``, computed by onnxruntime."""
    session = onnxruntime.InferenceSession(model.to_onnx(),
                                           providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(None, {"X": model.onnx_input(X)}), strict=True))


def assert_served_as_predicted(model: Model, X) -> None:
    outputs = served(model, X)
    scores, probabilities = model.scores_and_probabilities(X)
    expected = ["label", "scores"] + (["probabilities"] if probabilities is not None else [])
    assert list(outputs) == expected
    labels = model.labels_from_scores(scores)
    assert outputs["label"].shape == labels.shape
    assert outputs["label"].tolist() == labels.tolist()
    assert outputs["scores"].dtype == np.float64 and outputs["scores"].shape == scores.shape
    np.testing.assert_allclose(outputs["scores"], scores, rtol=1e-6, atol=0.0)
    if probabilities is not None:
        np.testing.assert_allclose(outputs["probabilities"], probabilities, rtol=0.0,
                                   atol=1e-6)


def _heart():
    """heart_scale: the first 200 rows to train on, the other 70 held out."""
    heart = load("heart_scale")
    rows = np.arange(heart.n_samples)
    return heart.subset(rows < 200), heart.subset(rows >= 200)


def _letter():
    """letter: every 12th training row (1,250 rows of 26 classes), the 5,000 test rows."""
    letter = load("letter.scale")
    keep = np.flatnonzero(np.arange(letter.n_samples) % 12 == 0)
    return letter.subset(keep), load("letter.scale.t", n_features=letter.n_features)


def _dna(rows: int | None = None):
    dna = load("dna.scale")
    train = dna if rows is None else dna.subset(np.arange(rows))
    return train, load("dna.scale.t", n_features=dna.n_features)


def _a9a():
    return load("a9a"), load("a9a.t", n_features=123)


def with_vote_platt(model: KernelModel, train) -> KernelModel:
    """A one-vs-one model calibrated as ``out_of_fold_calibration(coupling=False)`` does (one
    sigmoid per column of its vote scores), fitted here on the training rows."""
    truth = np.searchsorted(model.classes_, train.y)
    model.metadata["platt"] = fit_platt(model.decision_function(train.X), truth,
                                        model.n_classes).tolist()
    return model


# (name, the data, the training parameters, what the model is)
CASES = {
    "linear binary, standard scaling, Platt": (
        _heart, dict(solver="mfn", scale="standard", probability=True), "linear"),
    "linear binary, sparse a9a, maxabs scaling, Platt": (
        _a9a, dict(solver="mfn", scale="maxabs", probability=True), "linear"),
    "linear one-vs-rest, Platt": (_dna, dict(solver="mfn", probability=True), "linear"),
    "linear Crammer-Singer": (
        _dna, dict(solver="dual_cd", multiclass="crammer_singer", loss="hinge"), "linear"),
    "ordinal": (_dna, dict(solver="mfn", task="ordinal", C=0.1), "ordinal"),
    "rbf one-vs-one, coupled probabilities": (
        lambda: _dna(600), dict(solver="smo", probability=True), "kernel"),
    "polynomial one-vs-rest, Platt": (
        lambda: _dna(600), dict(solver="smo", kernel="polynomial", multiclass="ovr",
                                gamma=0.01, coef0=1.0, probability=True), "kernel"),
    "sigmoid binary, Platt": (
        _heart, dict(solver="smo", kernel="sigmoid", gamma=0.01, probability=True), "kernel"),
    "linear kernel one-vs-one": (
        lambda: _dna(600), dict(solver="smo", kernel="linear"), "kernel"),
    "rbf binary, least squares": (_heart, dict(solver="lssvm", gamma=0.1), "kernel"),
    "rbf one-vs-rest, 26 classes, least squares": (
        _letter, dict(solver="lssvm", gamma=0.5), "kernel"),
    "Nystrom one-vs-one, 26 classes, coupled probabilities": (
        _letter, dict(solver="mfn", approximation="nystrom", rank=100, multiclass="ovo",
                      probability=True), "kernel"),
    "Nystrom Crammer-Singer, 26 classes": (
        _letter, dict(solver="dual_cd", approximation="nystrom", rank=100,
                      multiclass="crammer_singer", loss="hinge"), "kernel"),
    "incomplete Cholesky binary": (
        _heart, dict(solver="mfn", approximation="icf", rank=40, gamma=0.1), "kernel"),
}


@pytest.fixture(scope="module")
def trained():
    """Each case's model, trained once: (model, held-out rows)."""
    models = {}

    def get(name):
        if name not in models:
            data, params, _ = CASES[name]
            train, test = data()
            models[name] = (solvers.train(train, **params).model, test, train)
        return models[name]

    return get


@pytest.mark.parametrize("name", list(CASES))
def test_onnxruntime_serves_every_model_kind_as_the_library_predicts(trained, name):
    model, test, _ = trained(name)
    assert model.kind == CASES[name][2]
    assert model.calibrated == CASES[name][1].get("probability", False)
    assert_served_as_predicted(model, test.X)


def test_a_one_vs_one_model_calibrated_on_its_vote_scores(trained):
    """probability=True without coupling (``out_of_fold_calibration(coupling=False)``): a
    sigmoid per column of the vote scores, normalized."""
    model, test, train = trained("linear kernel one-vs-one")
    assert_served_as_predicted(with_vote_platt(model, train), test.X)


def test_string_and_float_labels_come_back_in_their_type(trained):
    binary, heart_test, _ = trained("linear binary, standard scaling, Platt")
    named = LinearModel(binary.coef_, binary.intercept_, ["absent", "present"],
                        binary.metadata)
    outputs = served(named, heart_test.X)
    assert outputs["label"].dtype == object and set(outputs["label"]) <= {"absent", "present"}
    assert_served_as_predicted(named, heart_test.X)
    ovr, dna_test, _ = trained("linear one-vs-rest, Platt")
    halves = LinearModel(ovr.coef_, ovr.intercept_, [0.5, 1.5, 2.5], ovr.metadata)
    assert served(halves, dna_test.X)["label"].dtype == np.float64
    assert_served_as_predicted(halves, dna_test.X)
    assert served(ovr, dna_test.X)["label"].dtype == np.int64


def test_one_vs_one_ties_go_to_the_first_class_with_most_votes():
    """Three classes, three random pairwise functions: many rows vote in a cycle (one vote
    each), and both the library and the graph give the first class."""
    rng = np.random.default_rng(5)
    support = sp.csr_matrix(rng.standard_normal((6, 4)))
    model = KernelModel(support, rng.standard_normal((3, 6)), rng.standard_normal(3),
                        [10, 20, 30], Kernel("linear"), multiclass="ovo")
    X = rng.standard_normal((400, 4))
    votes = np.rint(model.decision_function(X))
    tied = np.all(votes == 1.0, axis=1)
    assert 40 < np.count_nonzero(tied) < 360
    assert np.all(model.predict(X[tied]) == 10)
    assert_served_as_predicted(model, X)


@pytest.mark.parametrize("kernel", [Kernel("polynomial", 0.5, 3, 0.0),
                                    Kernel("polynomial", 0.5, 2, -1.0),
                                    Kernel("sigmoid", 0.3, 3, -0.2), Kernel("rbf", 2.0)],
                         ids=lambda k: f"{k.name}-{k.degree}-{k.coef0}")
def test_kernels_on_both_signs_of_their_argument(kernel):
    """Random support vectors and rows of both signs: the polynomial's base gamma x.s + coef0
    is negative as often as positive (odd and even degrees), the RBF's distances span its
    range."""
    rng = np.random.default_rng(11)
    support = sp.csr_matrix(rng.standard_normal((30, 5)))
    model = KernelModel(support, rng.standard_normal((4, 30)), rng.standard_normal(4),
                        ["a", "b", "c", "d"], kernel)
    assert_served_as_predicted(model, rng.standard_normal((300, 5)))


@pytest.mark.parametrize("rows", [0, 1])
def test_no_rows_and_one_row(trained, rows):
    """The coupling's Loop on an empty batch and on a single row (the bench's latency)."""
    model, test, _ = trained("rbf one-vs-one, coupled probabilities")
    outputs = served(model, test.X[:rows])
    assert outputs["probabilities"].shape == (rows, 3)
    if rows:
        assert_served_as_predicted(model, test.X[:rows])


def test_the_file_is_standard_onnx_with_the_models_description(trained):
    model, _, _ = trained("rbf one-vs-one, coupled probabilities")
    graph = onnx.load_from_string(model.to_onnx())
    onnx.checker.check_model(graph, full_check=True)
    assert graph.ir_version == IR_VERSION
    assert [(o.domain, o.version) for o in graph.opset_import] == [("", OPSET)]
    assert all(node.domain == "" for node in graph.graph.node)
    properties = {p.key: p.value for p in graph.metadata_props}
    assert properties["svmsvc.kind"] == "kernel"
    assert properties["svmsvc.classes"] == "[1, 2, 3]"
    assert properties["svmsvc.n_features"] == "180"
    [data_input] = graph.graph.input
    assert data_input.name == "X"
    assert [d.dim_value for d in data_input.type.tensor_type.shape.dim][1] == 180


def test_the_input_follows_the_librarys_feature_rule():
    """Rows wider than the model lose their extra features, narrower ones gain zeros."""
    model = LinearModel([[1.0, 2.0, 3.0]], [0.5], [0, 1])
    wide = sp.csr_matrix(np.array([[1.0, 1.0, 1.0, 7.0]]))
    narrow = sp.csr_matrix(np.array([[1.0, 1.0]]))
    assert model.onnx_input(wide).tolist() == [[1.0, 1.0, 1.0]]
    assert model.onnx_input(narrow).tolist() == [[1.0, 1.0, 0.0]]
    assert served(model, wide)["scores"].tolist() == [6.5]


def test_an_ordinal_models_thresholds_out_of_order_count_as_the_library_counts():
    model = OrdinalModel([1.0, -1.0], [0.5, -0.5, 2.0], [1, 2, 3, 4])
    X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [-1.0, 0.0], [0.5, 0.0]])
    assert_served_as_predicted(model, X)


def test_a_kind_without_an_onnx_form_is_refused():
    class Constant(Model):
        kind = "constant"

        def decision_function(self, X, *, parallel=False):
            return np.zeros(X.shape[0])

        def _fields(self):
            return {}, {}

        @classmethod
        def _from_fields(cls, fields, arrays):
            return cls(np.array([0, 1]), 1)

    with pytest.raises(ModelExportError, match="a constant model has no ONNX form"):
        Constant(np.array([0, 1]), 1).to_onnx()


def test_a_kernel_model_too_large_for_a_protocol_buffer_is_refused_before_densifying():
    n_features = MAX_CONSTANT_BYTES // 8
    support = sp.csr_matrix((np.ones(2), np.array([0, n_features - 1]), np.array([0, 1, 2])),
                            shape=(2, n_features))
    model = KernelModel(support, [[1.0, -1.0]], [0.0], [0, 1], Kernel("rbf", gamma=1.0))
    with pytest.raises(ModelExportError, match="more than an ONNX file holds"):
        model.to_onnx()


def test_a_ceiling_on_the_constants_refuses_a_graph_before_it_is_built():
    """``max_constant_bytes`` (the service's SVMSVC_MAX_ONNX_BYTES) bounds the weights and the
    dense support vectors; the refusal counts what the graph needs at least."""
    linear = LinearModel(np.ones((1, 1000)), np.zeros(1), np.array([-1, 1]))
    with pytest.raises(ConstantsTooLarge, match="more than the ceiling of 4000 bytes") as info:
        linear.to_onnx(max_constant_bytes=4000)
    assert info.value.needed >= 8000 and info.value.limit == 4000
    assert len(linear.to_onnx(max_constant_bytes=10**6)) > 8000
    support = sp.csr_matrix((np.ones(2), np.array([0, 999]), np.array([0, 1, 2])),
                            shape=(2, 1000))  # 16,000 bytes dense
    kernel = KernelModel(support, [[1.0, -1.0]], [0.0], [0, 1], Kernel("rbf", gamma=1.0))
    with pytest.raises(ConstantsTooLarge, match="16000 bytes dense"):
        kernel.to_onnx(max_constant_bytes=10000)
