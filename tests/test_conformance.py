"""`toolkit conformance`: against the emulator every decision agrees (exit 0); against an
emulator made to differ on a few decisions, exactly those are named (exit 1); a service
that cannot be checked is exit 2. Read-only unless --write."""

from __future__ import annotations

import json
import re

import pytest

from toolkit.cli import main


@pytest.fixture
def demo(emulator, monkeypatch):
    seeded = emulator.seed_demo()
    monkeypatch.setenv("CTS_API_KEY", seeded["apiKey"])
    return seeded


def _lines(text: str) -> dict[str, str]:
    """Each decision and its verdict, from the command's output."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"(agrees|differs|unchecked) +(.*?)(?: -- .*)?$", line)
        if match:
            found[match.group(2)] = match.group(1)
    return found


def test_against_the_emulator_every_decision_agrees_and_nothing_is_written(emulator, demo, capsys):
    before = emulator.ledger(demo["workspaceId"])
    assert main(["conformance", "--base-url", emulator.url]) == 0
    out = capsys.readouterr().out
    verdicts = _lines(out)
    assert len(verdicts) > 20
    assert "differs" not in verdicts.values()
    assert verdicts["a taken chapter number is refused with 409"] == "unchecked"
    assert "run with --write" in out
    assert re.search(r"^\d+ agree, 0 differ, \d+ unchecked$", out, re.MULTILINE)
    assert emulator.ledger(demo["workspaceId"]) == before
    assert demo["apiKey"] not in out


def test_with_write_it_stages_one_chapter_and_spends_nothing(emulator, demo, capsys):
    credits = emulator.get_workspace(demo["workspaceId"])["credits"]
    assert main(["conformance", "--base-url", emulator.url, "--write"]) == 0
    verdicts = _lines(capsys.readouterr().out)
    assert verdicts["a taken chapter number is refused with 409"] == "agrees"
    assert verdicts["a staged chapter is created with 201, the NewChapter fields and no pages"] == (
        "agrees"
    )
    assert emulator.get_workspace(demo["workspaceId"])["credits"] == credits


class Divergent:
    """The emulator with three decisions changed: chapter lists in reverse, 403 for a
    missing key, and 404 bodies with a field of their own."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        kept = {"start": None, "body": b""}

        async def keep(message):
            if message["type"] == "http.response.start":
                kept["start"] = message
            else:
                kept["body"] += message.get("body", b"")

        await self.app(scope, receive, keep)
        status, body = kept["start"]["status"], kept["body"]
        headers = dict(scope["headers"])
        if scope["path"].endswith("/chapters") and scope["method"] == "GET" and status == 200:
            body = json.dumps(list(reversed(json.loads(body)))).encode()
        elif status == 401 and b"authorization" not in headers:
            status = 403
            body = json.dumps({"error": {"status": 403, "message": "forbidden"}}).encode()
        elif status == 404:
            error = json.loads(body)["error"]
            body = json.dumps({"error": {**error, "code": "not_found"}}).encode()
        others = [(k, v) for k, v in kept["start"]["headers"] if k.lower() != b"content-length"]
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*others, (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


def test_against_a_divergent_emulator_exactly_the_changed_decisions_differ(
    emulator, demo, asgi_server, capsys
):
    url = asgi_server(Divergent(emulator.app))
    assert main(["conformance", "--base-url", url, "--write"]) == 1
    out = capsys.readouterr().out
    differs = sorted(d for d, verdict in _lines(out).items() if verdict == "differs")
    assert differs == [
        "a request without a key is refused with 401",
        "chapters are listed by chapter number",
        'error answers are JSON {"error": {"status": <the status>, "message": <text>}}',
    ]
    assert "-- seen: 403" in out  # what was seen is shown


def test_a_service_that_does_not_answer_is_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("CTS_API_KEY", "cts_" + "x" * 32)
    assert main(["conformance", "--base-url", "http://127.0.0.1:9"]) == 2
    assert "no answer" in capsys.readouterr().err


def test_a_refused_key_is_exit_2(emulator, monkeypatch, capsys):
    monkeypatch.setenv("CTS_API_KEY", "cts_" + "x" * 32)
    assert main(["conformance", "--base-url", emulator.url]) == 2
    err = capsys.readouterr().err
    assert "key was refused" in err and "x" * 32 not in err


def test_webhook_decisions_are_checked_on_deliveries_to_its_own_receiver(
    emulator, demo, monkeypatch, capsys, pages
):
    import socket
    import threading
    import time

    import httpx

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    # What a person does in the dashboard: an endpoint pointing at the receiver, its
    # Test button, and chapters that run.
    endpoint = emulator.add_webhook(
        demo["workspaceId"],
        f"http://127.0.0.1:{port}/hook",
        ["chapter.finished", "chapter.failed", "export.ready"],
    )
    monkeypatch.setenv("CTS_WEBHOOK_SECRET", endpoint["secret"])

    def dashboard() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until the receiver listens
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        emulator.test_webhook(endpoint["id"])
        api = httpx.Client(
            base_url=f"{emulator.url}/api/v1",
            headers={"Authorization": f"Bearer {demo['apiKey']}"},
        )
        with api:
            project = next(p for p in api.get("/projects").json() if p["kind"] == "comic")
            files = [("pages", (f"{n}.png", page, "image/png")) for n, page in enumerate(pages)]
            failing = api.post(f"/projects/{project['id']}/chapters", files=files).json()
            emulator.set_fate(failing["id"], "fail", step=1)
            api.post(f"/projects/{project['id']}/chapters", files=files[:1])
        emulator.advance(4 * 3600)

    trigger = threading.Thread(target=dashboard)
    trigger.start()
    try:
        code = main(
            ["conformance", "--base-url", emulator.url, "--receiver", f"127.0.0.1:{port}",
             "--wait", "60"]
        )  # fmt: skip
    finally:
        trigger.join(timeout=120)
    out = capsys.readouterr().out
    verdicts = _lines(out)
    from toolkit.conformance_webhooks import DECISIONS

    assert code == 0, out
    assert {verdicts[decision] for decision in DECISIONS.values()} == {"agrees"}, out
    assert endpoint["secret"] not in out
