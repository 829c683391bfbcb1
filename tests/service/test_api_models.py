"""Models: metadata, download, single and batch predictions, evaluation, deletion."""

from __future__ import annotations

import json
import uuid

import numpy as np
import onnxruntime
import pytest
from conftest import API_KEYS
from servicetools import QUICK_PARAMS, create_job, data_path, metrics_of, uploaded_id, wait_job
from sklearn.metrics import log_loss as sklearn_log_loss

import solvers


@pytest.fixture(scope="module")
def binary(api):
    """(model id, local copy of the model, dataset id) trained on heart_scale."""
    dataset_id = uploaded_id(api, data_path("heart_scale"))
    done = wait_job(api, create_job(api, dataset_id, QUICK_PARAMS)["id"])
    model_id = done["model_id"]
    archive = api.get(f"/api/v1/models/{model_id}/download").content
    return model_id, solvers.load_model(archive), dataset_id


@pytest.fixture(scope="module")
def multiclass(api):
    dataset_id = uploaded_id(api, data_path("dna.scale"))
    done = wait_job(api, create_job(api, dataset_id, QUICK_PARAMS)["id"])
    model_id = done["model_id"]
    return model_id, solvers.load_model(api.get(f"/api/v1/models/{model_id}/download").content)


def test_an_ordinal_model_is_trained_stored_and_served(api):
    """task="ordinal" (Keerthi & DeCoste section 7): the job stores an ordinal model, and the
    service predicts with it as the library does (the score w.x, the rank it falls in)."""
    dataset_id = uploaded_id(api, data_path("dna.scale"))
    params = {"solver": "mfn", "task": "ordinal", "C": 0.1}
    done = wait_job(api, create_job(api, dataset_id, params)["id"])
    assert done["status"] == "succeeded" and done["solver_status"] == "converged", done
    model_id = done["model_id"]
    body = api.get(f"/api/v1/models/{model_id}").json()
    assert body["kind"] == "ordinal" and body["classes"] == [1.0, 2.0, 3.0]
    model = solvers.load_model(api.get(f"/api/v1/models/{model_id}/download").content)
    assert model.thresholds_.shape == (2,) and np.all(np.diff(model.thresholds_) > 0)
    lines = data_path("dna.scale.t").read_text().splitlines()[:20]
    served = api.post(f"/api/v1/models/{model_id}/predict", content="\n".join(lines) + "\n",
                      headers={"Content-Type": "text/plain"}).json()["data"]
    local = solvers.read_svmlight(("\n".join(lines) + "\n").encode(), n_features=180)
    assert [row["label"] for row in served] == model.predict(local.X).tolist()
    assert [row["decision_values"][0] for row in served] == \
        pytest.approx(model.decision_function(local.X).tolist(), rel=1e-12)
    evaluated = api.post(f"/api/v1/models/{model_id}/evaluate",
                         json={"dataset_id": dataset_id}).json()
    train = solvers.read_svmlight(data_path("dna.scale"))
    assert evaluated["accuracy"] == pytest.approx(np.mean(model.predict(train.X) == train.y))
    refused = api.get(f"/api/v1/models/{model_id}/download", params={"format": "liblinear"})
    assert refused.status_code == 409, refused.text


def test_model_metadata(api, binary):
    model_id, model, dataset_id = binary
    body = api.get(f"/api/v1/models/{model_id}").json()
    assert body["kind"] == "linear" and body["solver"] == "mfn"
    assert body["classes"] == [-1.0, 1.0] and body["n_features"] == 13
    assert body["dataset_id"] == dataset_id
    assert body["solver_status"] == "converged" and body["iterations"] >= 1
    assert body["training_data"]["n_samples"] == 270
    assert body["params"]["C"] == 1.0
    # only what did something for a linear model (issue 48: its page listed kernel rbf,
    # gamma scale, rank 256); the stored params keep everything that ran
    assert body["shown_params"]["C"] == 1.0
    assert not {"kernel", "gamma", "rank", "approximation", "landmarks"} & \
        set(body["shown_params"])
    assert body["params"]["kernel"] == "rbf"
    assert body["objective"] == pytest.approx(model.metadata["objective"])
    assert [s["label"] for s in body["subproblems"]] == ["1"]
    listed = api.get("/api/v1/models", params={"dataset_id": dataset_id}).json()
    assert model_id in {m["id"] for m in listed["data"]}
    assert api.get("/api/v1/models", params={"solver": "no-such"}).json()["count"] == 0


def test_download_formats(api, binary):
    model_id, model, _ = binary
    response = api.get(f"/api/v1/models/{model_id}/download", params={"format": "npz"})
    assert response.headers["content-type"] == "application/octet-stream"
    assert f"model-{model_id}.npz" in response.headers["content-disposition"]
    text = api.get(f"/api/v1/models/{model_id}/download", params={"format": "liblinear"})
    assert text.headers["content-type"].startswith("text/plain")
    assert text.text == model.to_liblinear()
    assert api.get(f"/api/v1/models/{model_id}/download", params={"format": "pickle"}
                   ).status_code == 422


def test_downloads_stream_the_archive_and_the_text_a_piece_at_a_time(api, binary, monkeypatch):
    """The archive is read from the database a chunk at a time (SQL substr, SQLite and
    PostgreSQL alike), the LIBLINEAR text written a block of weight rows at a time (issue 49:
    the text of an 88 MB model took 1.9 GB built whole): small chunks and blocks here, so that
    a model of heart_scale takes many; what arrives is the archive and the text, whole."""
    import app.crud.models
    import solvers.models.linear

    model_id, model, _ = binary
    whole = api.get(f"/api/v1/models/{model_id}/download").content
    size = api.get(f"/api/v1/models/{model_id}").json()["size_bytes"]
    assert len(whole) == size
    monkeypatch.setattr(app.crud.models, "ARTIFACT_CHUNK_BYTES", 100)
    monkeypatch.setattr(solvers.models.linear, "LIBLINEAR_BLOCK_ROWS", 3)
    chunks: list[bytes] = []
    original = app.crud.models.artifact_chunks

    def counted(*args, **kwargs):
        for chunk in original(*args, **kwargs):
            chunks.append(chunk)
            yield chunk

    monkeypatch.setattr(app.crud.models, "artifact_chunks", counted)
    response = api.get(f"/api/v1/models/{model_id}/download")
    assert response.headers["content-length"] == str(size)
    assert response.content == whole == b"".join(chunks)
    assert len(chunks) == -(-size // 100) and max(map(len, chunks)) == 100
    assert solvers.load_model(whole).describe() == model.describe()
    text = api.get(f"/api/v1/models/{model_id}/download", params={"format": "liblinear"})
    assert text.status_code == 200 and text.text == model.to_liblinear()


def served_by_onnxruntime(graph: bytes, model, X) -> dict[str, np.ndarray]:
    session = onnxruntime.InferenceSession(graph, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(None, {"X": model.onnx_input(X)}), strict=True))


def test_download_onnx_serves_the_models_predictions(api, binary, multiclass):
    """format=onnx: the model's ONNX graph, which onnxruntime runs to the labels and scores
    of the model (tests/test_onnx.py checks every kind in the library)."""
    rows = solvers.read_svmlight(data_path("dna.scale.t"), n_features=180).X[:200]
    heart = solvers.read_svmlight(data_path("heart_scale")).X
    for (model_id, model, *_), X in ((binary, heart), (multiclass, rows)):
        response = api.get(f"/api/v1/models/{model_id}/download", params={"format": "onnx"})
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/octet-stream"
        assert f'filename="model-{model_id}.onnx"' in response.headers["content-disposition"]
        outputs = served_by_onnxruntime(response.content, model, X)
        scores = model.decision_function(X)
        assert outputs["label"].tolist() == model.labels_from_scores(scores).tolist()
        np.testing.assert_allclose(outputs["scores"], scores, rtol=1e-6, atol=0.0)


def test_a_model_without_an_onnx_form_answers_409_with_the_reason(api, binary, monkeypatch):
    """Every kind of the library exports; one that cannot (a kernel model whose dense support
    vectors pass 2 GB) is refused as the other formats refuse theirs."""
    def refuse(model, max_constant_bytes=None):
        raise solvers.ModelExportError("too large for an ONNX file")

    monkeypatch.setattr(solvers.LinearModel, "to_onnx", refuse)
    response = api.get(f"/api/v1/models/{binary[0]}/download", params={"format": "onnx"})
    assert response.status_code == 409
    assert response.json()["detail"] == "too large for an ONNX file; download format=npz"


def test_predict_one_example_from_the_query_string(api, binary):
    model_id, model, _ = binary
    x = "1:0.7 3:1 13:-0.5"
    response = api.get(f"/api/v1/models/{model_id}/predict", params={"x": x})
    assert response.status_code == 200
    body = response.json()
    expected = np.zeros((1, 13))
    expected[0, [0, 2, 12]] = [0.7, 1.0, -0.5]
    assert body["decision_values"] == [pytest.approx(model.decision_function(expected)[0])]
    assert body["label"] == model.predict(expected)[0]
    reordered = api.get(f"/api/v1/models/{model_id}/predict", params={"x": "3:1 1:0.7"}).json()
    assert reordered["decision_values"] == pytest.approx(
        [model.decision_function(np.eye(1, 13, 2) + 0.7 * np.eye(1, 13, 0))[0]])
    empty = api.get(f"/api/v1/models/{model_id}/predict", params={"x": ""}).json()
    assert empty["decision_values"] == [pytest.approx(model.intercept_[0])]


@pytest.mark.parametrize("x, token", [
    ("3:0.5 oops", "oops"),
    ("0:1", "0:1"),
    ("3:nan", "3:nan"),
    ("3:1e999", "3:1e999"),
    ("-2:1", "-2:1"),
    ("3:1 3:2", "3:2"),
    ("3:1 14:5", "14:5"),  # past the model's 13 features: refused, as batches refuse it
])
def test_a_malformed_example_is_a_422(api, binary, x, token):
    response = api.get(f"/api/v1/models/{binary[0]}/predict", params={"x": x})
    assert response.status_code == 422
    problem = response.json()
    assert problem["token"] == token
    assert problem["detail"].startswith("x: ")


@pytest.mark.parametrize("which", ["binary", "multiclass"])
def test_the_fast_prediction_paths_score_exactly_as_the_library(api, request, which):
    """GET predict of a linear model (scored on the event loop without a SciPy matrix) and
    JSON batches (read straight into arrays, written without response models) give the very
    numbers of ``decision_function`` / ``predict``, and the same as SVMlight batches."""
    model_id, model = request.getfixturevalue(which)[:2]
    n = model.n_features_in_
    rng = np.random.default_rng(7)
    X = np.round(rng.normal(size=(6, n)) * (rng.random((6, n)) < 0.4), 3)
    X[0] = 0.0
    expected_scores = np.asarray(model.decision_function(X)).reshape(6, -1).tolist()
    expected_labels = list(model.predict(X))
    rows = [{str(j + 1): float(X[i, j]) for j in np.flatnonzero(X[i])[::-1]} for i in range(6)]
    singles = [api.get(f"/api/v1/models/{model_id}/predict",
                       params={"x": " ".join(f"{k}:{v!r}" for k, v in row.items())}).json()
               for row in rows]
    batch = api.post(f"/api/v1/models/{model_id}/predict", json={"rows": rows}).json()
    lines = "".join("0 " + " ".join(f"{k}:{v!r}" for k, v in sorted(row.items(), key=lambda kv:
                                                           int(kv[0]))) + "\n"
                    for row in rows)
    text = api.post(f"/api/v1/models/{model_id}/predict", content=lines.encode(),
                    headers={"content-type": "text/plain"}).json()
    assert batch["count"] == text["count"] == 6
    for got in (singles, batch["data"], text["data"]):
        assert [p["decision_values"] for p in got] == expected_scores
        assert [p["label"] for p in got] == expected_labels


def _scope(api, path: str, query: str, method: str = "GET", headers=None) -> dict:
    """The ASGI scope of a request to ``api``'s application."""
    key = API_KEYS["admin"] if headers is None else headers.get("X-API-Key")
    raw = [] if key is None else [(b"x-api-key", key.encode())]
    return {"type": "http", "method": method, "path": path, "root_path": "",
            "query_string": query.encode(), "headers": raw, "app": api.app}


def test_get_predict_of_a_cached_model_is_answered_before_the_router(api, binary):
    """The fast path of app.api.fast_path answers GET predict of a cached linear model with
    the route's very bytes and headers, counted in /metrics under the route's template; what
    it does not answer (not cached, another parameter, no key or a key not configured, a
    malformed example ...) falls through to the route, whose answer it is; with CORS
    configured, so does a request with an Origin header."""
    from app.api.fast_path import PredictFastPath
    from app.api.routes.models import router

    model_id, _, _ = binary
    path = f"/api/v1/models/{model_id}/predict"
    fast = PredictFastPath(None, {r.name: r for r in router.routes}, None)
    api.app.state.model_cache.discard(uuid.UUID(model_id))
    assert fast.answer(_scope(api, path, "x=1:0.5+3:1")) is None  # not cached: the route's
    by_route = api.get(path, params={"x": "1:0.5 3:1"})  # loads the model into the cache
    assert fast.answer(_scope(api, path, "x=1:0.5+3:1")) == by_route.content
    answered = api.get(path, params={"x": "1:0.5 3:1"})
    assert answered.status_code == 200 and answered.content == by_route.content
    for header in ("content-type", "content-length"):
        assert answered.headers[header] == by_route.headers[header]
    zero = api.get(path, params={"x": "0:0.5 2:1", "zero_based": "true"})
    assert fast.answer(_scope(api, path, "x=0:0.5+2:1&zero_based=true")) == zero.content
    assert zero.content == by_route.content
    series = ('svmsvc_http_requests_total{method="GET",route="/api/v1/models/{model_id}/predict",'
              'status="200"} ')

    def answered() -> float:
        line = next(line for line in api.get("/metrics").text.splitlines()
                    if line.startswith(series))
        return float(line[len(series):])

    before = answered()
    assert api.get(path, params={"x": "1:0.5 3:1"}).content == by_route.content
    assert answered() == before + 1
    assert type(api.app.middleware_stack) is PredictFastPath  # around every other layer
    falls_through = [
        _scope(api, path, "x=1:0.5&y=1"), _scope(api, path, "x=1:0.5&x=2:1"),
        _scope(api, path, "x=1:0.5&zero_based=yes"), _scope(api, path, ""),
        _scope(api, path, "x=1:0.5", method="POST"), _scope(api, path, "x=1:oops"),
        _scope(api, path, "x=1:0.5", headers={}),
        _scope(api, path, "x=1:0.5", headers={"X-API-Key": "not-a-key"}),
        _scope(api, path.replace("-", ""), "x=1:0.5"), _scope(api, path + "/", "x=1:0.5")]
    assert [fast.answer(scope) for scope in falls_through] == [None] * len(falls_through)
    from_browser = _scope(api, path, "x=1:0.5+3:1")
    from_browser["headers"].append((b"origin", b"http://localhost:5173"))
    assert fast.answer(from_browser) == by_route.content
    fast.cors = True
    assert fast.answer(from_browser) is None
    assert fast.answer(_scope(api, path, "x=1:0.5+3:1")) == by_route.content
    # and what the route makes of them
    assert api.get(path, params={"x": "1:0.5", "zero_based": "yes"}).json() == api.get(
        path, params={"x": "1:0.5", "zero_based": "true"}).json()
    assert api.get(path, params={"x": "1:oops"}).status_code == 422
    assert api.get(path, params={"x": "1:0.5"}, headers={"X-API-Key": ""}).status_code == 401
    assert api.get(path.replace("-", ""), params={"x": "1:0.5"}).content == api.get(
        path, params={"x": "1:0.5"}).content


def test_a_json_batch_with_a_feature_given_twice_keeps_the_last_value(api, binary):
    """Rows that are not plain (here a key repeated) are validated by the request model,
    as before: a JSON object's last value for a key wins."""
    model_id, model, _ = binary
    response = api.post(f"/api/v1/models/{model_id}/predict",
                        content=b'{"rows": [{"2": 5.0, "2": 0.5}, {"02": 1.0}]}',
                        headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    X = np.zeros((2, 13))
    X[0, 1] = 0.5
    X[1, 1] = 1.0
    assert [p["decision_values"][0] for p in response.json()["data"]] == list(
        model.decision_function(X))


def test_predict_a_batch_of_svmlight_lines_with_or_without_labels(api, binary):
    model_id, model, _ = binary
    body = b"1 1:0.7 3:1\n3:1 5:-0.2\r\n# a comment\n-1 2:1 4:0.5 # trailing\n\n7:1\n"
    response = api.post(f"/api/v1/models/{model_id}/predict", content=body,
                        headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    data = response.json()
    X = np.zeros((4, 13))
    X[0, [0, 2]] = [0.7, 1]
    X[1, [2, 4]] = [1, -0.2]
    X[2, [1, 3]] = [1, 0.5]
    X[3, 6] = 1
    assert data["count"] == 4
    assert [p["decision_values"][0] for p in data["data"]] == pytest.approx(
        list(model.decision_function(X)))
    assert [p["label"] for p in data["data"]] == list(model.predict(X))


def test_predict_a_batch_of_json_rows(api, binary):
    model_id, model, _ = binary
    response = api.post(f"/api/v1/models/{model_id}/predict",
                        json={"rows": [{"1": 0.7, "3": 1}, {}, {"13": 2.5}]})
    assert response.status_code == 200, response.text
    X = np.zeros((3, 13))
    X[0, [0, 2]] = [0.7, 1]
    X[2, 12] = 2.5
    values = [p["decision_values"][0] for p in response.json()["data"]]
    assert values == pytest.approx(list(model.decision_function(X)))


@pytest.mark.parametrize("content, content_type, fragment", [
    (b"1 1:0.5\n1 2:x\n", "text/plain", "line 2"),
    (b"", "text/plain", "no data lines"),
    (b'{"rows": [{"1": "a"}]}', "application/json", "rows.0.1"),
    (b'{"rows": [{"0": 1.0}]}', "application/json", "start at 1"),
    (b'{"rows": [{"x": 1.0}]}', "application/json", "rows.0.x"),
    (b'{"rows": [{"1": NaN}]}', "application/json", "finite"),
    (b'{"rows": []}', "application/json", "at least 1 item"),
    (b'{"rows": [{"1": 1.0}, {"14": 1.0}]}', "application/json",
     "rows.1: feature index 14 is beyond the model's 13 features"),
    (b"1 1:1\n1 14:1\n", "text/plain", "line 2: feature index beyond n_features=13"),
    (b'{"rows": [{"1": 1.0}]}\xff', "application/json", "Invalid JSON"),
    # keys are decimal digits and values JSON numbers, strictly (int() and pydantic's lax
    # mode would read " 1", "+1" and "1_0" as features and true as 1; 2^63 was a 500)
    (b'{"rows": [{" 1": 1.0}]}', "application/json", "decimal digits, not ' 1'"),
    (b'{"rows": [{"+1": 1.0}]}', "application/json", "decimal digits, not '+1'"),
    (b'{"rows": [{"1_0": 1.0}]}', "application/json", "decimal digits, not '1_0'"),
    (b'{"rows": [{"1": true}]}', "application/json", "rows.0.1: Input should be a valid number"),
    (b'{"rows": [{"9223372036854775808": 1}]}', "application/json", "out of range"),
    (b"<rows/>", "application/xml", "application/json"),
])
def test_a_malformed_batch_is_a_422(api, binary, content, content_type, fragment):
    response = api.post(f"/api/v1/models/{binary[0]}/predict", content=content,
                        headers={"content-type": content_type})
    assert response.status_code == 422
    assert fragment in response.json()["detail"]


def test_evaluate_a_binary_model(api, binary):
    model_id, model, dataset_id = binary
    response = api.post(f"/api/v1/models/{model_id}/evaluate", json={"dataset_id": dataset_id})
    assert response.status_code == 200
    body = response.json()
    data = solvers.read_svmlight(data_path("heart_scale"))
    predicted = model.predict(data.X)
    assert body["n_samples"] == 270
    assert body["accuracy"] == pytest.approx(np.mean(predicted == data.y))
    assert body["labels"] == [-1.0, 1.0]
    matrix = np.array(body["confusion_matrix"])
    assert matrix.sum() == 270 and np.trace(matrix) == round(body["accuracy"] * 270)
    assert [c["true_count"] for c in body["per_class"]] == [150, 120]
    assert [c["predicted_count"] for c in body["per_class"]] == [
        int(np.sum(predicted == -1)), int(np.sum(predicted == 1))]
    # the metrics of solvers.evaluate, ints kept
    report = solvers.evaluate(model, data)
    for name in ("balanced_accuracy", "f1_macro", "roc_auc", "average_precision"):
        assert body[name] == pytest.approx(report[name], abs=1e-12)
    assert all(type(v) is int for v in body["labels"])
    # the whole answer is the library's dict (JSON's round trip) with the dataset's id
    assert metrics_of(body) == {"dataset_id": dataset_id, **json.loads(json.dumps(report))}
    curve = body["roc_curve"]
    assert curve["thresholds"][0] is None and curve["fpr"][0] == curve["tpr"][0] == 0.0
    assert curve["fpr"][-1] == curve["tpr"][-1] == 1.0 and len(curve["fpr"]) <= 200
    assert body["log_loss"] is None  # not calibrated


def test_class_weight_in_job_params_and_int_labels(api):
    """A job's class_weight has JSON's string keys: they name the labels (-1, 1)."""
    dataset_id = uploaded_id(api, data_path("heart_scale"))
    params = dict(QUICK_PARAMS, class_weight={"1": 3.0, "-1": 0.5})
    done = wait_job(api, create_job(api, dataset_id, params)["id"])
    body = api.get(f"/api/v1/models/{done['model_id']}").json()
    assert body["classes"] == [-1, 1] and all(type(v) is int for v in body["classes"])
    model = solvers.load_model(api.get(f"/api/v1/models/{done['model_id']}/download").content)
    data = solvers.read_svmlight(data_path("heart_scale"))
    expected = solvers.train(data, **params).model
    np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-9, atol=1e-12)
    served = api.get(f"/api/v1/models/{done['model_id']}/predict", params={"x": "1:1"}).json()
    assert type(served["label"]) is int


def test_evaluate_a_multiclass_model_with_a_label_it_never_saw(api, multiclass):
    model_id, model = multiclass
    body = api.post(f"/api/v1/models/{model_id}/evaluate", json={
        "dataset_id": uploaded_id(api, data_path("dna.scale.t"))}).json()
    assert body["labels"] == [1.0, 2.0, 3.0]
    assert np.array(body["confusion_matrix"]).shape == (3, 3)
    extra = uploaded_id(api, b"1 1:1\n4 2:1\n")
    body = api.post(f"/api/v1/models/{model_id}/evaluate", json={"dataset_id": extra}).json()
    assert body["labels"] == [1.0, 2.0, 3.0, 4.0]
    assert body["per_class"][3] == {"label": 4, "true_count": 1, "predicted_count": 0,
                                    "correct": 0, "precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert body["labels"] == [1, 2, 3, 4] and all(type(v) is int for v in body["labels"])
    decision = api.get(f"/api/v1/models/{model_id}/predict", params={"x": "60:1"}).json()
    assert len(decision["decision_values"]) == 3


def test_errors_on_unknown_models_and_datasets(api, binary):
    missing = uuid.uuid4()
    for method, path in [("get", ""), ("delete", ""), ("get", "/download"),
                         ("get", "/predict?x=1:1"), ("post", "/evaluate")]:
        kwargs = {"json": {"dataset_id": binary[2]}} if method == "post" else {}
        response = getattr(api, method)(f"/api/v1/models/{missing}{path}", **kwargs)
        assert response.status_code == 404, (method, path)
        assert response.json()["detail"] == f"model {missing} not found"
    response = api.post(f"/api/v1/models/{binary[0]}/evaluate", json={"dataset_id": str(missing)})
    assert response.status_code == 422


def test_evaluate_on_another_feature_space_is_a_422(api, binary):
    wider = uploaded_id(api, b"1 1:1\n-1 14:1\n")  # heart_scale has 13 features
    response = api.post(f"/api/v1/models/{binary[0]}/evaluate", json={"dataset_id": wider})
    assert response.status_code == 422
    assert response.json()["detail"] == (
        "dataset_id: the dataset has 14 features, the model 13: it belongs to another "
        "feature space")


def test_delete_a_model(api):
    dataset_id = uploaded_id(api, data_path("heart_scale"))
    done = wait_job(api, create_job(api, dataset_id, {"solver": "mfn", "C": 0.5})["id"])
    model_id = done["model_id"]
    assert api.get(f"/api/v1/models/{model_id}/predict", params={"x": "1:1"}).status_code == 200
    assert api.delete(f"/api/v1/models/{model_id}").status_code == 204
    assert api.get(f"/api/v1/models/{model_id}").status_code == 404
    assert api.get(f"/api/v1/models/{model_id}/predict", params={"x": "1:1"}).status_code == 404
    assert api.get(f"/api/v1/jobs/{done['id']}").json()["model_id"] is None


def test_a_model_without_liblinear_form_downloads_as_npz_only(api):
    if "lssvm" not in {spec.name for spec in solvers.list_solvers()}:
        pytest.skip("no kernel solver (lssvm) is registered")
    dataset_id = uploaded_id(api, data_path("heart_scale"))
    done = wait_job(api, create_job(api, dataset_id, {"solver": "lssvm", "gamma": 0.1})["id"])
    assert done["status"] == "succeeded", done
    model = api.get(f"/api/v1/models/{done['model_id']}").json()
    assert model["kind"] != "linear"
    response = api.get(f"/api/v1/models/{done['model_id']}/download",
                       params={"format": "liblinear"})
    assert response.status_code == 409
    assert response.json()["detail"] == (
        f"{model['kind']} models have no LIBLINEAR form; download format=npz")
    archive = api.get(f"/api/v1/models/{done['model_id']}/download").content
    assert solvers.load_model(archive).kind == model["kind"]


def test_the_model_cache_is_bounded_in_bytes():
    from app.prediction import ModelCache

    model = solvers.train(solvers.read_svmlight(data_path("heart_scale")), solver="mfn").model
    archive = model.to_bytes()
    ids = [uuid.uuid4() for _ in range(3)]
    loads = []

    def load(k):
        return lambda: loads.append(k) or (archive, "tester")

    cache = ModelCache(2 * len(archive) + 10)
    for k, model_id in enumerate(ids):
        cache.get(model_id, load(k))
    assert cache.size_bytes == 2 * len(archive)  # the oldest was evicted
    cache.get(ids[2], load(9))
    cache.get(ids[0], load(0))
    assert loads == [0, 1, 2, 0]
    small = ModelCache(len(archive) - 1)  # a model larger than the cache: served, not kept
    small.get(ids[0], load(5))
    assert small.size_bytes == 0
    small.discard(ids[0])


@pytest.mark.parametrize(("dataset", "params"), [
    ("heart_scale", QUICK_PARAMS), ("dna.scale", QUICK_PARAMS),
    ("dna.scale", {"solver": "smo", "C": 1.0}),  # one-vs-one: the pairs' sigmoids, coupled
])
def test_a_calibrated_model_serves_its_probabilities(api, dataset, params):
    """A model trained with probability=true answers each prediction with its class
    probabilities (the library's predict_proba, classes order), single and batch; a model
    without them leaves the field out."""
    dataset_id = uploaded_id(api, data_path(dataset))
    done = wait_job(api, create_job(api, dataset_id, {**params, "probability": True})["id"])
    assert done["status"] == "succeeded", done
    model_id = done["model_id"]
    model = solvers.load_model(api.get(f"/api/v1/models/{model_id}/download").content)
    assert ("pairwise_platt" in model.metadata) == (params["solver"] == "smo")
    X = solvers.read_svmlight(data_path(dataset)).X[:5]
    expected = model.predict_proba(X)
    lines = "\n".join(" ".join(f"{j + 1}:{float(v)!r}" for j, v in zip(row.indices, row.data,
                                                                strict=True)) for row in X)
    response = api.post(f"/api/v1/models/{model_id}/predict", content=lines.encode(),
                        headers={"content-type": "text/plain"})
    assert response.status_code == 200, response.text
    batch = response.json()["data"]
    first = X[0]
    x = " ".join(f"{j + 1}:{float(v)!r}" for j, v in zip(first.indices, first.data, strict=True))
    single = api.get(f"/api/v1/models/{model_id}/predict", params={"x": x}).json()
    assert single["probabilities"] == pytest.approx(list(expected[0]), rel=1e-12)
    # labelled by class (issue 48: they came back without the order of their classes)
    classes = [int(c) for c in model.classes_]
    assert single["classes"] == classes and response.json()["classes"] == classes
    for got, want in zip(batch, expected, strict=True):
        assert got["probabilities"] == pytest.approx(list(want), rel=1e-12)
        assert sum(got["probabilities"]) == pytest.approx(1.0)
    # its evaluation carries the log loss of those probabilities, as the library's
    evaluated = api.post(f"/api/v1/models/{model_id}/evaluate",
                         json={"dataset_id": dataset_id}).json()
    data = solvers.read_svmlight(data_path(dataset))
    assert metrics_of(evaluated) == {"dataset_id": dataset_id,
                                     **json.loads(json.dumps(solvers.evaluate(model, data)))}
    assert evaluated["log_loss"] == pytest.approx(
        sklearn_log_loss(data.labels, model.predict_proba(data.X), labels=model.classes_),
        rel=1e-9)


def test_a_model_without_probabilities_leaves_them_out(api, binary):
    single = api.get(f"/api/v1/models/{binary[0]}/predict", params={"x": "1:0.5"}).json()
    assert "probabilities" not in single or single["probabilities"] is None
    assert single.get("classes") is None
