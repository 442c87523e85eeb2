"""The service's translation groups as the store keeps them (`tk.analysis.project_groups`),
on an emulator over loopback whose projects two of three share a group; and a store
written before the toolkit kept groups: it still reads and checks, its groups are
`(unknown)` until a snapshot records them, and a period ending before that stays
unknown (never guessed)."""

from __future__ import annotations

import pandas as pd
import pytest
from epochs import SUITE_START
from grouped_studio import grouped_studio
from page_images import make_page

import toolkit as tk
from toolkit.cli import main
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.frames import schema
from toolkit.reporting.figures import figures

GROUP = "2b9c6f1e-0d4a-4e7b-9c35-8a1f6e0d2c47"
# The tables the toolkit's snapshots held before the groups: what an earlier one wrote.
BEFORE = {name: schema.SNAPSHOT_TABLES[name] for name in ("projects", "chapters", "languages",
                                                          "exports")}  # fmt: skip


@pytest.fixture
def studio():
    """An emulator over loopback: Moonlit Harbor and Paper Crane in one translation group,
    Iron Vale in its own; a chapter each."""
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        workspace, made = grouped_studio(emulator, GROUP)
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            yield emulator, client, made


def _check(root, capsys) -> None:
    assert main(["store", "check", "--store", str(root)]) == 0, capsys.readouterr()
    capsys.readouterr()


def test_each_snapshot_keeps_the_groups_the_service_sent(studio, tmp_path, capsys):
    _, client, made = studio
    store = tk.SnapshotStore(tmp_path / "store")
    store.take(client)
    groups = tk.analysis.project_groups(store).set_index("project")["translation_group"]
    assert groups["Moonlit Harbor"] == groups["Paper Crane"] == GROUP
    assert groups["Iron Vale"] not in (GROUP, "(unknown)")  # its own, a UUID the emulator made
    kept = store.latest("project_groups")
    assert sorted(kept["project_id"]) == sorted(made.values())
    assert "translation_group_id" not in store.latest("projects")  # the contract's columns
    _check(tmp_path / "store", capsys)


def test_a_store_written_before_the_groups_reads_checks_and_says_unknown(
    studio, tmp_path, capsys, monkeypatch
):
    emulator, client, made = studio
    root = tmp_path / "store"
    with monkeypatch.context() as before:  # the toolkit before this one: four tables
        before.setattr(schema, "SNAPSHOT_TABLES", BEFORE)
        old = tk.SnapshotStore(root)
        old.take(client)
        for n, project_id in enumerate(made.values()):
            client.create_chapter(project_id, pages=[make_page(60 + n), make_page(70 + n)])
        emulator.advance(3600)
        old.take(client)
    assert not (root / "project_groups").exists()
    _check(root, capsys)

    store = tk.SnapshotStore(root)
    assert set(tk.analysis.project_groups(store)["translation_group"]) == {"(unknown)"}
    credits = figures(store).projects["credits"]
    assert int(credits.sum()) > 0  # the figures read as before
    written_before = store.snapshots()["snapshot_at"].iloc[-1]

    emulator.advance(600)
    store.take(client)  # this toolkit's first snapshot of it
    _check(root, capsys)
    groups = tk.analysis.project_groups(store).set_index("project")["translation_group"]
    assert groups["Moonlit Harbor"] == groups["Paper Crane"] == GROUP
    # As of the old snapshots the group was not on record: unknown, not today's group.
    then = tk.analysis.project_groups(store, until=written_before)
    assert set(then["translation_group"]) == {"(unknown)"}

    # Grouped, the old period's credits all go to (unknown); the new one's to the groups.
    argv = ["explain", "credits", "--by", "translation_group", "--store", str(root)]
    assert main([*argv, "--until", (written_before + pd.Timedelta(seconds=1)).isoformat()]) == 0
    assert "(unknown)" in capsys.readouterr().out
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert GROUP in out and "(unknown)" not in out
