"""Workspace scoping and the trash: 404 on every route, and out of lists and counts."""

from __future__ import annotations

import pytest
from emulator_helpers import create_chapter, error_of, page_parts, plain_client, settle


def _calls(project_id: str, chapter_id: str, page: bytes):
    """Every /api/v1 route that names a project or a chapter."""
    return [
        ("GET", f"/projects/{project_id}", {}),
        ("GET", f"/projects/{project_id}/chapters", {}),
        ("POST", f"/projects/{project_id}/chapters", {"files": page_parts([page])}),
        ("GET", f"/chapters/{chapter_id}", {}),
        ("POST", f"/chapters/{chapter_id}/pages", {"files": page_parts([page])}),
        ("POST", f"/chapters/{chapter_id}/start", {}),
        ("POST", f"/chapters/{chapter_id}/rescan", {}),
    ]


@pytest.fixture
def stranger(emulator):
    """A client of a second workspace."""
    other = emulator.create_workspace("Someone else", credits=10_000)
    with plain_client(f"{emulator.url}/api/v1", other["apiKey"]) as client:
        yield client


def test_another_workspaces_things_are_404_everywhere(api, stranger, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    assert stranger.get("/projects").json() == []
    for method, path, extra in _calls(comic_project["id"], chapter["id"], pages[0]):
        status, message = error_of(stranger.request(method, path, **extra))
        assert status == 404, (method, path)
        assert message in ("project not found", "chapter not found")
    assert api.get(f"/chapters/{chapter['id']}").json()["pageCount"] == 1


def test_trashed_chapter_is_404_everywhere_and_leaves_lists(emulator, api, comic_project, pages):
    kept = create_chapter(api, comic_project["id"], pages[:1]).json()
    gone = create_chapter(api, comic_project["id"], pages[1:2]).json()
    settle(emulator, api, gone["id"])
    emulator.trash_chapter(gone["id"])
    for method, path, extra in _calls(comic_project["id"], gone["id"], pages[0])[3:]:
        assert error_of(api.request(method, path, **extra)) == (404, "chapter not found")
    listed = [c["id"] for c in api.get(f"/projects/{comic_project['id']}/chapters").json()]
    assert listed == [kept["id"]]
    assert api.get("/projects").json()[0]["chapterCount"] == 1


def test_trashed_project_is_404_everywhere(emulator, api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    emulator.trash_project(comic_project["id"])
    for method, path, extra in _calls(comic_project["id"], chapter["id"], pages[0]):
        status, _ = error_of(api.request(method, path, **extra))
        assert status == 404, (method, path)
    assert api.get("/projects").json() == []


def test_trashing_a_running_chapter_stops_it_without_events_or_refund(
    emulator, api, workspace, comic_project, pages, events
):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    emulator.advance(30)
    lines_before = len(emulator.ledger(workspace["id"])["lines"])
    emulator.trash_chapter(chapter["id"])
    emulator.advance(3600)
    assert events == []
    ledger = emulator.ledger(workspace["id"])
    assert len(ledger["lines"]) == lines_before
    assert ledger["balance"] == 10_000 - 6
    assert emulator.services.engine.next_due() is None


def test_trashing_a_project_stops_its_runs(emulator, api, comic_project, pages, events):
    create_chapter(api, comic_project["id"], pages).json()
    emulator.trash_project(comic_project["id"])
    emulator.advance(3600)
    assert events == []
    assert emulator.services.engine.next_due() is None


def test_trashing_unknown_or_trashed_things_is_404(emulator, api, comic_project):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    emulator.trash_chapter(chapter["id"])
    with pytest.raises(Exception, match="404"):
        emulator.trash_chapter(chapter["id"])
    with pytest.raises(Exception, match="404"):
        emulator.trash_project("no-such-project")
