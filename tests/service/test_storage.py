"""Dataset storage behind one interface: a directory (:class:`DatasetStore`) and an object store
through fsspec (:class:`ObjectDatasetStore`), tested on fsspec's memory and local backends and
on S3 as a moto server speaks it (skipped, saying so, when moto or s3fs is not installed);
the service, its local workers included, storing and training from S3."""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest
from servicetools import create_job, data_path, free_port, random_svmlight, wait_job

import solvers
from app.storage import DatasetStore, ObjectDatasetStore, dataset_digest, open_store

pytest.importorskip("fsspec", reason="fsspec is not installed (pip install 'svmsvc[dask]')")


def sample(seed: int = 1):
    dataset = solvers.read_svmlight(random_svmlight(n_rows=30, seed=seed))
    return dataset, dataset_digest(dataset)


def assert_same(a, b) -> None:
    assert a.X.shape == b.X.shape
    assert (a.X != b.X).nnz == 0
    np.testing.assert_array_equal(a.y, b.y)


def test_a_location_picks_the_store(tmp_path):
    assert isinstance(open_store(tmp_path), DatasetStore)
    assert isinstance(open_store(f"file://{tmp_path}"), DatasetStore)
    assert open_store(f"file://{tmp_path}").root == tmp_path
    assert isinstance(open_store("memory://svmsvc-test/datasets"), ObjectDatasetStore)


@pytest.fixture(params=["memory", "local"])
def object_store(request, tmp_path):
    if request.param == "memory":
        url = f"memory://svmsvc-{uuid.uuid4().hex[:8]}/datasets"
    else:
        url = f"local://{tmp_path}/datasets"
    return ObjectDatasetStore(url)


def test_an_object_store_saves_once_loads_and_deletes(object_store):
    dataset, digest = sample()
    size, written = object_store.save(dataset, digest)
    assert written and size > 0
    assert object_store.save(dataset, digest) == (size, False)
    assert_same(object_store.load(digest), dataset)
    object_store.delete(digest)
    object_store.delete(digest)  # already gone: no error
    with pytest.raises(FileNotFoundError):
        object_store.load(digest)


def test_an_object_store_sweeps_only_old_orphans(object_store):
    (kept, kept_digest), (orphan, orphan_digest) = sample(1), sample(2)
    object_store.save(kept, kept_digest)
    object_store.save(orphan, orphan_digest)
    assert object_store.sweep({kept_digest}, grace_s=3600) == (0, 0)  # too young
    time.sleep(0.01)  # the orphan must be strictly older than "now - 0"
    assert object_store.sweep({kept_digest}, grace_s=0) == (0, 1)
    assert_same(object_store.load(kept_digest), kept)
    with pytest.raises(FileNotFoundError):
        object_store.load(orphan_digest)


@pytest.fixture
def s3(monkeypatch):
    """A bucket on a moto S3 server, reached through the AWS environment variables (as a
    deployment configures s3fs)."""
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    server_module = pytest.importorskip("moto.server",
                                        reason="moto[server] is not installed")
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for name, value in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    import boto3
    import s3fs

    # fsspec caches file systems by their arguments, not by the environment they read: one
    # made for an earlier test's server would be reused
    s3fs.S3FileSystem.clear_instance_cache()

    bucket = f"svmsvc-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
    yield f"s3://{bucket}/datasets"
    server.stop()


def test_an_s3_store_on_a_moto_server(s3):
    store = open_store(s3)
    assert isinstance(store, ObjectDatasetStore)
    dataset, digest = sample(3)
    size, written = store.save(dataset, digest)
    assert written
    assert store.save(dataset, digest) == (size, False)
    assert_same(open_store(s3).load(digest), dataset)
    time.sleep(1.0)  # S3 modification times have a resolution of one second
    assert store.sweep(set(), grace_s=0) == (0, 1)


@pytest.mark.slow
def test_the_service_stores_and_trains_from_s3(s3, tmp_path):
    """Upload into S3, a local worker process trains from it, the model predicts."""
    from conftest import SQLiteBackend, service_settings
    from fastapi.testclient import TestClient

    from app.main import create_app

    settings = service_settings(tmp_path, SQLiteBackend(), datasets_url=s3)
    with TestClient(create_app(settings)) as client:
        created = client.post("/api/v1/datasets", files={
            "file": ("heart_scale", data_path("heart_scale").read_bytes())}).json()
        assert not (tmp_path / "datasets").exists()  # nothing on the local disk
        assert_same(open_store(s3).load(created["sha256"]),
                    solvers.read_svmlight(data_path("heart_scale")))
        done = wait_job(client, create_job(client, created["id"], {"solver": "mfn"})["id"])
        assert done["status"] == "succeeded", done


def test_the_running_service_sweeps_orphaned_upload_files(backend, tmp_path):
    """Not only at start: a temporary upload file left while the service runs (a request that
    died mid-upload) goes at the next periodic sweep once older than the grace."""
    from conftest import service_settings
    from fastapi.testclient import TestClient
    from servicetools import PATIENCE_S, wait_for

    from app.main import create_app

    settings = service_settings(tmp_path, backend, orphan_grace_s=0.0,
                                orphan_sweep_interval_s=0.2)
    with TestClient(create_app(settings)) as client:
        assert client.get("/healthz").status_code == 200
        left = settings.datasets_dir / "ab" / ".upload-deadbeef.tmp"
        left.parent.mkdir(parents=True, exist_ok=True)
        left.write_bytes(b"1 1:1\n")
        wait_for(lambda: not left.exists(), PATIENCE_S, what="the periodic sweep")
