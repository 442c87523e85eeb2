"""The store on S3: delta-rs's safe commit (conditional puts) against moto's S3 server,
run on loopback, with two processes taking snapshots into one store at once."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
from datafakes import T0, FakeService
from processes import assert_every_snapshot_is_its_writers, run_together, take_as_writer

from toolkit.store import SnapshotStore

BUCKET = "toolkit-snapshots"


@pytest.fixture
def s3():
    """moto's S3 server on a free loopback port, in its own process (delta-rs holds the
    interpreter lock in some calls, which would stall a server thread in this one);
    yields delta-rs storage options."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert server.poll() is None, "moto_server stopped"
            time.sleep(0.05)  # it is starting
    credentials = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
    boto3.client("s3", endpoint_url=url, region_name="us-east-1", **credentials).create_bucket(
        Bucket=BUCKET
    )
    yield {
        "AWS_ENDPOINT_URL": url,
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
    }
    server.terminate()
    server.wait(timeout=30)


def test_a_store_on_s3_reads_writes_and_maintains_like_a_folder(s3):
    uri = f"s3://{BUCKET}/snapshots"
    service = FakeService()
    service.add_project("p1", languages=("en", "fr"))
    service.add_chapter("c1", "p1", position=1)
    store = SnapshotStore(uri, storage_options=s3)
    for step in range(3):
        service.update("c1", covered=step)
        store.take(service, at=T0 + timedelta(hours=step))
    store.compact()
    history = store.history("languages", project_ids=["p1"])
    assert history.groupby("snapshot_at")["covered"].first().tolist() == [0, 1, 2]
    other = SnapshotStore(uri, storage_options=s3)  # a second reader of the same bucket
    assert len(other.snapshots()) == 3
    assert other.latest("chapters")["chapter_id"].tolist() == ["c1"]


def test_two_processes_taking_snapshots_into_one_s3_store_lose_nothing(s3):
    uri = f"s3://{BUCKET}/shared"
    count = 6
    run_together(take_as_writer, [(uri, s3, name, count) for name in ("a", "b")], timeout=180)
    assert_every_snapshot_is_its_writers(SnapshotStore(uri, storage_options=s3), 2, count)
