"""What a notebook shows of the objects a user holds: `_repr_html_` beside a plain repr."""

from __future__ import annotations

from html_page import Page

import toolkit as tk
from toolkit.store import SnapshotStore


def shown(obj: object) -> dict[str, str]:
    """The rows of an object's HTML card: {heading: value}."""
    return {row[0]: row[1] for row in Page(obj._repr_html_()).rows}  # type: ignore[attr-defined]


def test_a_client_shows_its_base_url_and_never_its_key(emulator, workspace, client):
    key = workspace["apiKey"]
    rows = shown(client)
    assert rows == {"base URL": emulator.url, "API key": "set (not shown)"}
    assert key not in client._repr_html_() and key not in repr(client)
    assert emulator.url in repr(client)


def test_a_workspace_a_snapshot_and_a_store_show_what_they_hold(client, comic_project, pages,
                                                                 emulator, tmp_path):  # fmt: skip
    client.create_chapter(comic_project["id"], pages=pages)
    pulled = tk.pull(client)
    rows = shown(pulled)
    assert rows["projects"] == "1 row" and rows["chapters"] == "1 row"
    assert rows["languages"] == f"{len(pulled.languages)} rows"
    assert "Workspace" in repr(pulled)

    store = SnapshotStore(tmp_path / "snapshots", workspace="studio-a")
    first = store.take(client, at=emulator.now())
    emulator.advance(3600)
    info = store.take(client, at=emulator.now())
    rows = shown(info)
    files = "1 file" if info.rows_exports == 1 else f"{info.rows_exports} files"
    assert rows["rows"] == f"1 project, 1 chapter, 2 chapter languages, {files}"
    assert rows["workspace"] == "studio-a"
    assert f"Snapshot {info.snapshot_id}" in info._repr_html_()

    rows = shown(store)
    assert rows["snapshots"] == "2 snapshots" and rows["workspace"] == "studio-a"
    assert rows["span"] == (
        f"{first.snapshot_at:%Y-%m-%d %H:%M} to {info.snapshot_at:%Y-%m-%d %H:%M} UTC"
    )
    assert rows["size"].endswith(("kB", "MB")) and rows["location"] == store.root
    assert repr(store) == f"SnapshotStore({store.root!r})"  # the plain repr reads nothing
