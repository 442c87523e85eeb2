"""Stopping and restarting on the same state file keeps everything; runs resume."""

from __future__ import annotations

from emulator_helpers import add_pages, create_chapter, plain_client, settle
from epochs import SUITE_START

from toolkit.emulator import Emulator


def _snapshot(emu, api, workspace_id):
    projects = api.get("/projects").json()
    chapters = {p["id"]: api.get(f"/projects/{p['id']}/chapters").json() for p in projects}
    details = {
        c["id"]: api.get(f"/chapters/{c['id']}").json()
        for items in chapters.values()
        for c in items
    }
    return {
        "projects": projects,
        "chapters": chapters,
        "details": details,
        "ledger": emu.ledger(workspace_id),
        "workspace": emu.get_workspace(workspace_id),
    }


def test_restart_keeps_everything_and_resumes_runs(tmp_path, make_page):
    state = str(tmp_path / "emulator.sqlite")
    with Emulator(state=state, admin_token="admin", start=SUITE_START) as emu:
        ws = emu.create_workspace("Kept", credits=500)
        comic = emu.create_project(
            ws["id"],
            name="Kept comic",
            kind="comic",
            source_language="ja",
            reading_direction="rtl",
            process_steps="full",
            target_languages=["en", "fr"],
        )
        novel = emu.create_project(
            ws["id"],
            name="Kept novel",
            kind="novel",
            source_language="zh",
            reading_direction="ltr",
            process_steps="translate",
            target_languages=["en"],
        )
        emu.set_faults(failure_rate=0.0, stall_rate=0.0, seed=4)
        with plain_client(f"{emu.url}/api/v1", ws["apiKey"]) as api:
            done = create_chapter(api, comic["id"], [make_page(1), make_page(2)]).json()
            settle(emu, api, done["id"])
            staged = create_chapter(api, comic["id"], staged=1).json()
            add_pages(api, staged["id"], [make_page(3)], hold=1)
            running = create_chapter(api, comic["id"], [make_page(4), make_page(5)]).json()
            create_chapter(api, novel["id"], text="一\n二\n三")
            emu.advance(40)  # part-way: reading done, translating
            before = _snapshot(emu, api, ws["id"])
            clock_before = emu.now()
        assert before["details"][running["id"]]["processing"] is True

    with Emulator(state=state, admin_token="admin", start=SUITE_START) as emu:
        assert emu.now() >= clock_before
        with plain_client(f"{emu.url}/api/v1", ws["apiKey"]) as api:
            assert _snapshot(emu, api, ws["id"]) == before
            pages_dir = tmp_path / "emulator.sqlite-pages"
            stored = {p.name for p in pages_dir.iterdir()}
            page_ids = {p["id"] for p in done["pages"] + running["pages"]}
            assert {name.split(".")[0] for name in stored} >= page_ids
            resumed = settle(emu, api, running["id"])
            assert resumed["status"] == "needs_review"
            assert emu.services.faults.settings.seed == 4
            # The held page is still waiting, and starts.
            held = api.get(f"/chapters/{staged['id']}").json()
            assert held["pageCount"] == 1 and held["processing"] is False
            assert api.post(f"/chapters/{staged['id']}/start").status_code == 202
