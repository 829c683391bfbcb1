"""Dataset uploads (streamed, compressed, content-addressed), errors, listing and deletion."""

from __future__ import annotations

import bz2
import gzip
import uuid

import anyio
import numpy as np
import pytest
from servicetools import (
    QUICK_PARAMS,
    create_job,
    data_path,
    random_svmlight,
    upload,
    uploaded_id,
    wait_job,
)
from starlette.requests import Request

import solvers
from app.api.bodies import receive_svmlight_upload
from app.errors import ContentTooLarge
from app.uploads import ENVELOPE_BYTES, UploadLimits


def stored_files(api) -> list[str]:
    root = api.app.state.settings.datasets_dir
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_upload_returns_the_dataset_statistics(api):
    path = data_path("heart_scale")
    response = upload(api, path)
    assert response.status_code in (200, 201)
    body = response.json()
    expected = solvers.read_svmlight(path)
    assert body["name"] == "heart_scale"
    assert body["n_samples"] == 270 and body["n_features"] == 13
    assert body["nnz"] == expected.nnz == 3378
    assert body["class_counts"] == {"-1": 150, "1": 120}
    assert body["upload_bytes"] == path.stat().st_size
    assert api.get(f"/api/v1/datasets/{body['id']}").json() == body


def test_the_same_content_is_one_dataset_however_it_is_sent(api):
    text = random_svmlight(seed=101)
    first = upload(api, text, filename="first.svm")
    assert first.status_code == 201
    assert first.headers["location"] == f"/api/v1/datasets/{first.json()['id']}"
    again = upload(api, text, filename="second.svm")
    assert again.status_code == 200
    gzipped = upload(api, gzip.compress(text), filename="data.svm.gz")
    bzipped = upload(api, bz2.compress(text), filename="data.svm.bz2")
    respelled = upload(api, text.replace(b"-1 ", b"-1.0 "), filename="respelled.svm")
    ids = {r.json()["id"] for r in (first, again, gzipped, bzipped, respelled)}
    assert ids == {first.json()["id"]}
    assert all(r.status_code == 200 for r in (gzipped, bzipped, respelled))
    assert again.json()["name"] == "first.svm"


def test_compressed_upload_parses_like_plain_text(api):
    path = data_path("dna.scale")
    body = upload(api, gzip.compress(path.read_bytes()), filename="dna.scale.gz").json()
    assert body["n_samples"] == 2000 and body["n_features"] == 180
    assert body["class_counts"] == {"1": 464, "2": 485, "3": 1051}


def test_upload_options_widen_and_shift_features(api):
    text = b"1 0:1.5 2:1\n-1 1:2\n"
    body = upload(api, text, zero_based="true", n_features=10).json()
    assert body["n_features"] == 10 and body["nnz"] == 3
    rejected = upload(api, text)
    assert rejected.status_code == 422
    assert rejected.json()["token"] == "0:1.5"


@pytest.mark.parametrize("content, line, token", [
    (b"1 1:0.5 2:1\n-1 3:x\n", 2, "3:x"),
    (b"1 1:0.5\n\n# comment\n+1 2:1 2:3\n", 4, "2:3"),
    (b"one 1:2\n", 1, "one"),
])
def test_a_malformed_file_is_a_422_naming_line_and_token(api, content, line, token):
    before = api.get("/api/v1/datasets").json()["count"]
    files_before = stored_files(api)
    response = upload(api, content)
    assert response.status_code == 422
    problem = response.json()
    assert problem["line"] == line and problem["token"] == token
    assert problem["detail"].startswith(f"line {line}:")
    assert token in problem["detail"]
    assert problem["type"] == "urn:svmsvc:problem:malformed-input"
    assert api.get("/api/v1/datasets").json()["count"] == before
    assert stored_files(api) == files_before


def test_malformed_compressed_and_empty_uploads(api):
    corrupt = gzip.compress(random_svmlight(seed=5))[:-12]
    response = upload(api, corrupt, filename="cut.gz")
    assert response.status_code == 422
    assert "gzip" in response.json()["detail"]
    empty = upload(api, b"")
    assert empty.status_code == 422
    assert empty.json()["detail"] == "no data lines"


@pytest.mark.parametrize("excess", [1000, ENVELOPE_BYTES + 1000],
                         ids=["counted-while-streaming", "refused-by-content-length"])
def test_an_oversized_upload_is_a_413_and_leaves_nothing(api, excess):
    limit = api.app.state.settings.max_upload_bytes
    before = api.get("/api/v1/datasets").json()["count"]
    files_before = stored_files(api)
    line = b"1 " + b" ".join(b"%d:0.5" % j for j in range(1, 200)) + b"\n"
    big = line * ((limit + excess) // len(line) + 1)
    response = upload(api, big)
    assert response.status_code == 413
    assert str(limit) in response.json()["detail"]
    assert api.get("/api/v1/datasets").json()["count"] == before
    assert stored_files(api) == files_before


def test_an_oversized_streamed_upload_is_refused_while_it_streams():
    """The limit is checked as chunks arrive: reading stops soon after it is crossed."""
    limit = 2**20
    boundary = b"svmsvc-test-boundary"
    chunk = b"1 1:0.5 2:0.25\n" * 4096
    received = []

    async def receive():
        if not received:
            received.append(0)
            head = (b"--" + boundary + b'\r\nContent-Disposition: form-data; name="file"; '
                    b'filename="endless.svm"\r\n\r\n')
            return {"type": "http.request", "body": head, "more_body": True}
        received.append(len(chunk))
        return {"type": "http.request", "body": chunk, "more_body": True}  # never ends

    scope = {"type": "http", "method": "POST", "path": "/api/v1/datasets", "query_string": b"",
             "headers": [(b"content-type", b"multipart/form-data; boundary=" + boundary)]}
    request = Request(scope, receive)
    with pytest.raises(ContentTooLarge):
        anyio.run(lambda: receive_svmlight_upload(
            request, UploadLimits(limit, 10**9, 10**9, 10**9), n_features=None,
            zero_based=False))
    assert limit < sum(received) <= limit + ENVELOPE_BYTES + len(chunk)


def test_upload_needs_a_multipart_file_field(api):
    response = api.post("/api/v1/datasets", content=b"1 1:1\n",
                        headers={"content-type": "text/plain"})
    assert response.status_code == 422
    assert "multipart/form-data" in response.json()["detail"]
    response = api.post("/api/v1/datasets", files={"other": ("x.svm", b"1 1:1\n")})
    assert response.status_code == 422
    assert "'file'" in response.json()["detail"]
    response = api.post("/api/v1/datasets", files=[("file", ("a.svm", b"1 1:1\n")),
                                            ("file", ("b.svm", b"-1 1:2\n"))])
    assert response.status_code == 422
    assert "not several" in response.json()["detail"]


def test_list_is_paginated_newest_first(api):
    ids = [uploaded_id(api, random_svmlight(seed=200 + k)) for k in range(3)]
    page = api.get("/api/v1/datasets", params={"limit": 2}).json()
    assert page["count"] >= 3
    assert [d["id"] for d in page["data"]] == ids[::-1][:2]
    second = api.get("/api/v1/datasets", params={"limit": 2, "offset": 1}).json()
    assert second["data"][0]["id"] == ids[1]
    assert api.get("/api/v1/datasets", params={"limit": 0}).status_code == 422


def test_get_and_delete_unknown_datasets(api):
    missing = uuid.uuid4()
    for method in ("get", "delete"):
        response = getattr(api, method)(f"/api/v1/datasets/{missing}")
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json() == {
            "type": "urn:svmsvc:problem:not-found", "title": "Not found", "status": 404,
            "detail": f"dataset {missing} not found",
            "instance": f"/api/v1/datasets/{missing}"}
    response = api.get("/api/v1/datasets/not-a-uuid")
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["path", "dataset_id"]


@pytest.mark.slow
def test_delete_is_refused_while_jobs_or_models_use_the_dataset(api):
    dataset_id = uploaded_id(api, random_svmlight(seed=300))
    finished = wait_job(api, create_job(api, dataset_id, QUICK_PARAMS)["id"])
    assert finished["status"] == "succeeded"
    refused = api.delete(f"/api/v1/datasets/{dataset_id}")
    assert refused.status_code == 409
    assert "cascade=true" in refused.json()["detail"]
    cascaded = api.delete(f"/api/v1/datasets/{dataset_id}", params={"cascade": "true"})
    assert cascaded.status_code == 204
    assert api.get(f"/api/v1/datasets/{dataset_id}").status_code == 404
    assert api.get(f"/api/v1/jobs/{finished['id']}").status_code == 404
    assert api.get(f"/api/v1/models/{finished['model_id']}").status_code == 404


def test_an_unused_dataset_is_deleted_with_its_file(api):
    text = random_svmlight(seed=400)
    created = upload(api, text).json()
    root = api.app.state.settings.datasets_dir
    path = root / created["sha256"][:2] / f"{created['sha256']}.npz"
    assert path.exists()
    assert api.delete(f"/api/v1/datasets/{created['id']}").status_code == 204
    assert not path.exists()
    assert upload(api, text).status_code == 201  # stored anew


def test_stored_arrays_round_trip(api):
    path = data_path("heart_scale")
    created = upload(api, path).json()
    stored = api.app.state.store.load(created["sha256"])
    expected = solvers.read_svmlight(path)
    assert stored == expected
    assert np.array_equal(stored.y, expected.y)


def test_the_start_up_sweep_removes_what_a_crash_left(tmp_path):
    """A kill during a dataset write left a 113 MB .upload-*.tmp that nothing removed; a file
    written before its row was committed stayed forever.  Old ones go, young ones stay."""
    import os
    import time

    from app.storage import DatasetStore, dataset_digest

    store = DatasetStore(tmp_path)
    dataset = solvers.read_svmlight(random_svmlight(seed=900))
    kept = dataset_digest(dataset)
    store.save(dataset, kept)
    orphan = dataset_digest(solvers.read_svmlight(random_svmlight(seed=901)))
    store.save(solvers.read_svmlight(random_svmlight(seed=901)), orphan)
    temporary = store.path(kept).parent / ".upload-abc.tmp"
    temporary.write_bytes(b"half a file")
    young = store.path(kept).parent / ".upload-young.tmp"
    young.write_bytes(b"an upload in progress")
    old = time.time() - 7200
    for path in (store.path(kept), store.path(orphan), temporary):
        os.utime(path, (old, old))
    assert store.sweep({kept}, grace_s=3600) == (1, 1)
    assert store.path(kept).exists() and young.exists()
    assert not store.path(orphan).exists() and not temporary.exists()


def test_the_migration_adds_sharded_datasets_and_takes_them_back(backend, tmp_path):
    """Revision 0009: existing datasets become ``uploaded`` with their statistics; a sharded
    one has none until a job reads its shards.  Downgraded, the sharded datasets go (the old
    schema cannot hold a row without statistics) with their jobs, the uploaded ones stay."""
    from sqlalchemy import select
    from test_api_problems import SHARDED_COLUMNS, table_at

    from app.db.migrate import downgrade_database, upgrade_database
    from app.db.models import Dataset, DatasetKind, Job
    from app.db.session import Sessions, create_db_engine

    engine = create_db_engine(backend.database_url(tmp_path))
    upgrade_database(engine, "0008")
    uploaded, sharded = uuid.uuid4(), uuid.uuid4()
    with engine.begin() as connection:
        connection.execute(table_at(Dataset, SHARDED_COLUMNS).insert().values(
            id=uploaded, name="d", sha256="0" * 64, n_samples=3, n_features=2, nnz=4,
            density=0.5, class_counts={"1": 2, "-1": 1}, has_qid=False,
            has_sample_weight=False, upload_bytes=10, stored_bytes=10))
    upgrade_database(engine)
    sessions = Sessions(engine)
    with sessions.write() as session:
        row = session.get(Dataset, uploaded)
        assert row.kind == DatasetKind.uploaded and row.source is None
        assert row.n_samples == 3 and row.class_counts == {"1": 2, "-1": 1}
        session.add(Dataset(id=sharded, name="s", sha256="1" * 64, kind=DatasetKind.sharded,
                            source={"shards": ["/data/a.svm"], "n_features": None,
                                    "zero_based": False}, has_qid=False,
                            has_sample_weight=False, upload_bytes=0, stored_bytes=0))
        session.add(Job(dataset_id=sharded, solver="mfn", params={"solver": "mfn"},
                        status="failed"))
        session.commit()
    downgrade_database(engine, "0008")
    with engine.connect() as connection:
        datasets = table_at(Dataset, SHARDED_COLUMNS)
        assert list(connection.execute(select(datasets.c.id))) == [(uploaded,)]
        assert connection.execute(select(Job.__table__.c.id)).all() == []
    upgrade_database(engine)
    engine.dispose()


def test_the_sharded_path_allows_what_it_documents(api):
    """``/datasets/sharded`` also matches the template ``/datasets/{dataset_id}``; its 405
    names its own methods (POST), not the template's too."""
    for method in ("OPTIONS", "GET", "DELETE", "PUT"):
        response = api.request(method, "/api/v1/datasets/sharded")
        assert response.status_code == 405 and response.headers["Allow"] == "POST", method
    response = api.request("PUT", "/api/v1/datasets/4b0c3f55-7d5f-4a70-8b0a-6d7d0f7e1e11")
    assert response.status_code == 405 and response.headers["Allow"] == "DELETE, GET"


@pytest.mark.parametrize("shard", [
    "s3://bucket/x::file:///etc/passwd",
    "simplecache::s3://bucket/part-0.svm",
    "s3://bucket/a.svm::memory://b",
    "/etc/passwd::s3://bucket/x",
    "file:///tmp/x::s3://bucket/y",
])
def test_a_chained_shard_url_is_refused_whole(api, shard):
    """fsspec opens every link of ``a::b``: a check of the first scheme alone let
    ``s3://bucket/x::file:///etc/passwd`` through to the workers.  A chain is refused, and
    nothing is registered."""
    before = api.get("/api/v1/datasets").json()["count"]
    response = api.post("/api/v1/datasets/sharded", json={"shards": ["s3://bucket/ok.svm",
                                                                      shard]})
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["type"] == "urn:svmsvc:problem:invalid-shard"
    assert "shards[1]" in problem["detail"] and "fsspec chain" in problem["detail"]
    assert api.get("/api/v1/datasets").json()["count"] == before
    single = api.post("/api/v1/datasets/sharded", json={"shards": ["s3://bucket/ok.svm"]})
    assert single.status_code in (200, 201), single.text  # one link of an allowed scheme


LIST_ITEM_BYTES = 2048
"""The bound of one dataset in a page of ``GET /datasets``: its statistics, not its shards (a
list of a 40 MB registration of 10,000 shards was 40 MB, issue 49).  A dataset of many labels
adds its class counts (at most SVMSVC_MAX_CLASSES of them), not these datasets."""


def test_a_list_of_datasets_is_bounded_in_bytes_whatever_the_shards(api):
    """10,000 shards of 60 bytes: the list names how many, the item view pages them."""
    shards = [f"s3://bucket/a-long-prefix-of-a-partitioned-table/part-{k:05d}.svm"
              for k in range(10_000)]
    created = api.post("/api/v1/datasets/sharded", json={"shards": shards})
    assert created.status_code == 201, created.text
    dataset = created.json()
    assert dataset["n_shards"] == 10_000 and dataset["shards"] == shards[:1000]
    page = api.get("/api/v1/datasets", params={"limit": 1000})
    assert page.status_code == 200
    listed = page.json()["data"]
    assert len(page.content) < LIST_ITEM_BYTES * len(listed)
    item = next(d for d in listed if d["id"] == dataset["id"])
    assert item["shards"] is None and item["n_shards"] == 10_000
    url = f"/api/v1/datasets/{dataset['id']}"
    assert api.get(url).json()["shards"] == shards[:1000]
    last = api.get(url, params={"shard_offset": 9_990, "shard_limit": 20}).json()
    assert last["shards"] == shards[9_990:] and last["n_shards"] == 10_000
    assert api.get(url, params={"shard_limit": 1001}).status_code == 422
    assert api.get("/api/v1/datasets", params={"limit": 1001}).status_code == 422
