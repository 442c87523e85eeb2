"""Answers a pull cannot take as rows: a list that names one chapter twice, a count the
Int64 columns cannot hold, an item without its id. Each is refused as `UnexpectedAnswer`
naming the field (and both items, for a repeat), in Python and from `toolkit snapshot`
in one line, and no row and no snapshot is made of it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from datafakes import chapter_json, project_json
from scripted import KEY

import toolkit as tk
from toolkit import cli
from toolkit.store import SnapshotStore

Answers = dict[str, Any]  # path under /api/v1 -> JSON body


def workspace(**chapter_lists: list[dict[str, Any]]) -> Answers:
    """Projects p1, p2... with the given chapter lists, and every chapter's detail."""
    answers: Answers = {"/projects": [project_json(pid) for pid in chapter_lists]}
    for pid, chapters in chapter_lists.items():
        answers[f"/projects/{pid}/chapters"] = chapters
        for item in chapters:
            if "id" in item:
                detail = {k: v for k, v in item.items() if not k.startswith("_")}
                answers[f"/chapters/{item['id']}"] = dict(detail, detecting=False)
    return answers


def client_of(answers: Answers) -> tk.Client:
    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/api/v1")
        if path not in answers:
            return httpx.Response(404, json={"error": "not found"})
        return httpx.Response(200, json=answers[path])

    return tk.Client("https://cts.example.com", KEY, transport=httpx.MockTransport(handle))


TWENTY = [chapter_json(f"c{n}", "p1", position=n) for n in range(1, 21)]


def test_a_chapter_listed_twice_is_refused_naming_both_items_not_pulled_as_21_rows():
    repeated = [*TWENTY[:12], TWENTY[4], *TWENTY[12:]]
    with client_of(workspace(p1=repeated)) as client, pytest.raises(tk.UnexpectedAnswer) as caught:
        tk.pull(client)
    error = caught.value
    assert (error.route, error.field, error.value) == ("GET /projects/p1/chapters", "[12].id", "c5")
    assert "items [4] and [12] both have id" in str(error) and '"c5"' in str(error)


def test_two_chapters_at_one_number_in_a_project_are_refused_naming_both():
    clash = [*TWENTY[:3], chapter_json("c99", "p1", position=2), *TWENTY[3:]]
    with client_of(workspace(p1=clash)) as client, pytest.raises(tk.UnexpectedAnswer) as caught:
        tk.pull(client)
    assert caught.value.field == "[3].position"
    assert "items [1] and [3] both have position 2" in str(caught.value)


def test_a_project_listed_twice_is_refused():
    answers = workspace(p1=TWENTY[:2])
    answers["/projects"] = [project_json("p1"), project_json("p2"), project_json("p1")]
    with client_of(answers) as client, pytest.raises(tk.UnexpectedAnswer) as caught:
        client.list_projects()
    assert "items [0] and [2] both have id" in str(caught.value)


def test_one_chapter_in_two_projects_lists_is_refused_naming_both_routes():
    answers = workspace(p1=TWENTY[:2], p2=[chapter_json("c2", "p2", position=1)])
    with client_of(answers) as client, pytest.raises(tk.UnexpectedAnswer) as caught:
        tk.pull(client)
    message = str(caught.value)
    assert "chapter c2 is listed by both" in message
    assert "GET /projects/p1/chapters" in message and "GET /projects/p2/chapters" in message


def test_the_same_number_in_two_projects_is_two_chapters():
    answers = workspace(p1=TWENTY[:2], p2=[chapter_json("d1", "p2", position=1)])
    with client_of(answers) as client:
        assert len(tk.pull(client).chapters) == 3


def without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != key}


BAD = {
    "credits that overflow": (dict(TWENTY[0], creditsSpent=1e308), "[0].creditsSpent"),
    "fractional credits": (dict(TWENTY[0], creditsSpent=12.7), "creditsSpent of chapter c1"),
    "an item without id": (without(TWENTY[0], "id"), "[0].id"),
    "an empty id": (dict(TWENTY[0], id=""), "[0].id"),
    "an item without position": (without(TWENTY[0], "position"), "[0].position"),
}


@pytest.mark.parametrize(("item", "field"), BAD.values(), ids=BAD.keys())
def test_an_answer_the_rows_cannot_hold_is_refused_naming_the_field(item, field):
    with client_of(workspace(p1=[item])) as client, pytest.raises(tk.UnexpectedAnswer) as caught:
        tk.pull(client)
    assert caught.value.field == field and field in str(caught.value)
    assert caught.value.route == "GET /projects/p1/chapters"


@pytest.fixture
def served() -> Iterator[tuple[str, Answers]]:
    """A loopback HTTP server answering GETs from a dict the test fills."""
    answers: Answers = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?")[0].removeprefix("/api/v1")
            known = path in answers
            body = json.dumps(answers[path] if known else {"error": "not found"}).encode()
            self.send_response(200 if known else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # Polled every 10 ms for the shutdown, not every 0.5 s (the default): the teardown.
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", answers
    finally:
        server.shutdown()
        server.server_close()


CLI_CASES = {
    "a repeated chapter": ([*TWENTY[:12], TWENTY[4], *TWENTY[12:]], "both have id"),
    "credits that overflow": ([dict(TWENTY[0], creditsSpent=1e308)], "creditsSpent"),
    "fractional credits": ([dict(TWENTY[0], creditsSpent=12.7)], "creditsSpent"),
    "an item without id": ([without(TWENTY[0], "id")], "[0].id is missing"),
}


@pytest.mark.parametrize(("chapters", "says"), CLI_CASES.values(), ids=CLI_CASES.keys())
def test_toolkit_snapshot_takes_nothing_and_says_so_in_one_line(
    served, monkeypatch, tmp_path, capsys, chapters, says
):
    url, answers = served
    answers.update(workspace(p1=chapters))
    monkeypatch.setenv("CTS_BASE_URL", url)
    monkeypatch.setenv("CTS_API_KEY", KEY)
    store = tmp_path / "store"
    assert cli.main(["snapshot", "--store", str(store)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("toolkit snapshot: ")
    assert says in err and "Traceback" not in err
    assert not store.exists() or SnapshotStore(store).snapshots().empty
