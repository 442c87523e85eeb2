"""The store on S3: delta-rs's safe commit (conditional puts) against moto's S3 server,
run on loopback, with two processes taking snapshots into one store at once."""

from __future__ import annotations

import multiprocessing
import os
import signal
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


@pytest.mark.slow
def test_two_processes_taking_snapshots_into_one_s3_store_lose_nothing(s3):
    uri = f"s3://{BUCKET}/shared"
    count = 6
    run_together(take_as_writer, [(uri, s3, name, count) for name in ("a", "b")], timeout=180)
    assert_every_snapshot_is_its_writers(SnapshotStore(uri, storage_options=s3), 2, count)


@pytest.mark.slow
def test_three_writers_on_s3_one_killed_mid_write_lose_nothing_committed(s3):
    uri = f"s3://{BUCKET}/killed"
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    steady = [
        context.Process(target=take_as_writer, args=(uri, s3, name, 4, start)) for name in "ab"
    ]
    victim = context.Process(target=take_as_writer, args=(uri, s3, "v", 40, start))
    for worker in [*steady, victim]:
        worker.start()
    start.set()
    reader = SnapshotStore(uri, storage_options=s3)
    for _ in range(600):  # until the victim has committed two snapshots, then mid-write
        if victim.exitcode is not None or _taken_by(reader, "v") >= 2:
            break
        time.sleep(0.1)
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(timeout=30)
    for worker in steady:
        worker.join(timeout=180)
        assert worker.exitcode == 0
    assert victim.exitcode == -signal.SIGKILL  # it was stopped, not finished

    store = SnapshotStore(uri, storage_options=s3)
    taken = {name: _taken_by(store, name) for name in "abv"}
    assert taken["a"] == taken["b"] == 4 and 2 <= taken["v"] < 40
    # Every committed snapshot shows exactly what its own process saw; the victim's
    # are its first takes, in order; the take it was killed in is nowhere.
    manifest, history = store.snapshots(), store.history("chapters")
    for row in manifest.itertuples():
        shown = history[history["snapshot_id"] == row.snapshot_id]
        name = shown["project_id"].iloc[0].removeprefix("proj-")
        step = int((row.snapshot_at - T0).total_seconds() // (8 * 3600))
        assert sorted(shown["chapter_id"]) == sorted(f"{name}-{i}" for i in range(step + 1))
    victims = manifest[
        manifest["snapshot_id"].isin(history.loc[history["project_id"] == "proj-v", "snapshot_id"])
    ]
    assert sorted(victims["snapshot_at"]) == [
        T0 + timedelta(hours=8 * i) for i in range(taken["v"])
    ]
    # The store takes snapshots after the kill as before.
    service = FakeService()
    service.add_project("proj-after", languages=("en",))
    store.take(service, details="none", at=T0 + timedelta(days=30))
    assert _taken_by(SnapshotStore(uri, storage_options=s3), "after") == 1


def _taken_by(store: SnapshotStore, writer: str) -> int:
    """How many committed snapshots show the writer's project."""
    chapters = store.history("projects")
    return int(chapters.loc[chapters["project_id"] == f"proj-{writer}", "snapshot_id"].nunique())
