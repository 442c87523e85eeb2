"""Record and replay: what a test or the demo did, replayed into a fresh emulator,
rebuilds the same state, ledger and events (ids mapped), and the file holds no secret."""

from __future__ import annotations

import functools
import json

import pytest
from emulator_helpers import create_chapter, plain_client
from page_images import make_page

import toolkit.emulator
from toolkit.emulator import Emulator, NotARecording, replay
from toolkit.emulator.recording import read_recording


def _scenario(emu: Emulator, receiver_url: str) -> dict:
    """A little of everything: admin calls, uploads, faults, chaos, control, time."""
    workspace = emu.create_workspace("Team", credits=500)
    project = emu.create_project(
        workspace["id"], name="Moonlit Harbor", kind="comic", source_language="ja",
        reading_direction="rtl", process_steps="full", target_languages=["en", "fr"],
    )  # fmt: skip
    emu.add_webhook(workspace["id"], receiver_url, ["chapter.finished", "chapter.failed"])
    emu.set_faults(failure_rate=0.5, seed=11)
    with plain_client(f"{emu.url}/api/v1", workspace["apiKey"]) as api:
        chapters = [
            create_chapter(api, project["id"], [make_page(n), make_page(n + 10)]).json()
            for n in range(3)
        ]
        emu.hold(chapters[0]["id"], "package")
        emu.add_chaos("GET", "/chapters/{id}", "status", status=503, probability=0.5, seed=2)
        for _ in range(6):
            emu.advance(600)
            for chapter in chapters:
                api.get(f"/chapters/{chapter['id']}")
        emu.release(chapters[0]["id"])
        emu.advance(3600)
        staged = create_chapter(api, project["id"], staged=1).json()
        api.post(f"/chapters/{staged['id']}/pages", files=[("pages", ("p.png", make_page(99)))])
        emu.advance(3600)
        api.get(f"/projects/{project['id']}/chapters")
    return workspace


@pytest.fixture
def receiver_url(asgi_server):
    async def accept(scope, receive, send):
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    return asgi_server(accept) + "/hook"


def test_a_replay_rebuilds_the_same_state_ledger_and_events(tmp_path, epoch, receiver_url):
    path = tmp_path / "session.jsonl"
    with Emulator(start=epoch, record=path) as original:
        workspace = _scenario(original, receiver_url)
        ledger = original.ledger(workspace["id"])
        deliveries = original.deliveries(workspace["id"])
    copy, report = replay(path)
    try:
        assert report.same, report.differences[:2]
        mapped = report.map(workspace["id"])
        assert mapped != workspace["id"]  # a fresh emulator made its own ids
        assert copy.ledger(mapped) == json.loads(report.map(json.dumps(ledger)))
        events = [(d["type"], d["state"], d["body"]) for d in copy.deliveries(mapped)]
        assert events == [(d["type"], d["state"], report.map(d["body"])) for d in deliveries]
        assert {"chapter.finished", "chapter.failed"} <= {kind for kind, _, _ in events}
        assert copy.now() > epoch
    finally:
        copy.stop()


def test_a_recording_holds_no_key_and_no_signing_secret(tmp_path, epoch, receiver_url):
    path = tmp_path / "session.jsonl"
    with Emulator(start=epoch, record=path) as emu:
        workspace = emu.create_workspace("Team", credits=10)
        endpoint = emu.add_webhook(workspace["id"], receiver_url, ["chapter.finished"])
        with plain_client(f"{emu.url}/api/v1", workspace["apiKey"]) as api:
            api.get("/projects")
        token = emu.admin_token
    text = path.read_text()
    for secret in (workspace["apiKey"], endpoint["secret"], token):
        assert secret not in text
    assert json.loads(text.splitlines()[-1])["auth"] == {"workspace": workspace["id"]}


@pytest.mark.slow
def test_a_replayed_demo_equals_the_original(tmp_path, monkeypatch):
    from epochs import SUITE_START

    from toolkit.demo import simulate_day
    from toolkit.store import SnapshotStore

    path = tmp_path / "demo.jsonl"
    # The demo makes its own emulator: record the one it makes.
    monkeypatch.setattr(toolkit.emulator, "Emulator", functools.partial(Emulator, record=path))
    store = SnapshotStore(str(tmp_path / "snapshots"))
    day = simulate_day(store, hours=1, progress=False, start=SUITE_START)
    monkeypatch.undo()
    copy, report = replay(path)
    try:
        assert report.requests > 20
        assert report.same, report.differences[:2]
        _, requests = read_recording(path)
        workspace_id = report.map(json.loads(requests[0]["answer"])["workspaceId"])
        assert copy.ledger(workspace_id) == json.loads(report.map(json.dumps(day.ledger)))
        replayed = [(d["type"], d["state"], d["body"]) for d in copy.deliveries(workspace_id)]
        assert replayed == [(d["type"], d["state"], report.map(d["body"])) for d in day.deliveries]
        assert len(day.ledger["charges"]) > 0 and len(day.deliveries) > 0
    finally:
        copy.stop()


def test_a_file_that_is_not_a_recording_is_refused_saying_how_to_make_one(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(NotARecording, match=r"record one with Emulator\(record=PATH\)"):
        replay(path)
    with pytest.raises(NotARecording, match="cannot read"):
        replay(tmp_path / "missing.jsonl")
