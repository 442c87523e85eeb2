from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pandas as pd
import pyarrow as pa
import pytest
from datafakes import T0, FakeService, iso
from pandas.testing import assert_frame_equal
from test_schema import CONTRACT, expected_dtype

import toolkit as tk
from toolkit import frames
from toolkit.frames import schema


@pytest.fixture
def service() -> FakeService:
    fake = FakeService()
    fake.add_project("p1", languages=("en", "fr"), lastChapterAt=1772442000000)
    fake.add_project("p2", languages=("en",))
    export = {
        "languageCode": "en",
        "format": "txt",
        "filename": "c1-en.txt",
        "byteSize": 1200,
        "pageCount": 4,
        "preparedAt": iso(T0),
    }
    fake.add_chapter("c1", "p1", position=1, covered=10, untranslated=0, credits=8,
                     status="needs_review", processing=False, exports=[export])  # fmt: skip
    fake.add_chapter("c2", "p1", position=2, covered={"en": 3, "fr": 1}, untranslated=5)
    fake.add_chapter("c3", "p2", position=1, covered=0, untranslated=9, languages=("en",))
    return fake


def assert_contract(frame: pd.DataFrame, table: str) -> None:
    assert list(frame.columns) == CONTRACT[table]
    for column in frame.columns:
        assert frame[column].dtype == expected_dtype(table, column), column


def test_pull_gives_every_table_with_contract_columns_dtypes_and_values(service):
    ws = tk.pull(service)
    for name in schema.SNAPSHOT_TABLES:
        assert_contract(ws.table(name), name)
    assert ws.projects["project_id"].tolist() == ["p1", "p2"]
    assert ws.projects.loc[0, "target_languages"] == ["en", "fr"]
    # lastChapterAt arrives in milliseconds since 1970.
    assert ws.projects.loc[0, "last_chapter_at"] == pd.Timestamp("2026-03-02 09:00", tz="UTC")
    assert ws.projects.loc[1, "last_chapter_at"] is pd.NaT
    assert ws.project_groups.values.tolist() == [["p1", "g1"], ["p2", "g1"]]
    assert ws.chapters["chapter_id"].tolist() == ["c1", "c2", "c3"]
    assert ws.chapters.loc[0, "credits_spent"] == 8
    assert ws.chapters.loc[0, "status"] == "needs_review"
    languages = ws.languages.set_index(["chapter_id", "language_code"])
    assert languages.loc[("c2", "en"), "covered"] == 3
    assert languages.loc[("c2", "fr"), "untranslated"] == 5
    assert ws.exports[["chapter_id", "format", "byte_size"]].values.tolist() == [
        ["c1", "txt", 1200]
    ]
    assert ws.requests == 1 + 2 + 3  # projects, two chapter lists, three details
    assert ws.details == "all"


def test_without_details_untranslated_is_null_not_zero(service):
    ws = tk.pull(service, details="none")
    assert ws.languages["untranslated"].isna().all()
    assert ws.languages["untranslated"].dtype == pd.Int64Dtype()
    assert not any(route == "get_chapter" for route, _ in service.calls)


def test_an_empty_workspace_gives_empty_frames_with_the_contract_dtypes():
    ws = tk.pull(FakeService())
    for name in schema.SNAPSHOT_TABLES:
        assert len(ws.table(name)) == 0
        assert_contract(ws.table(name), name)


def test_single_table_helpers_match_pull(service):
    ws = tk.pull(service)
    assert_frame_equal(tk.projects_frame(service), ws.projects)
    assert_frame_equal(tk.chapters_frame(service), ws.chapters)
    assert_frame_equal(tk.languages_frame(service, details=True), ws.languages)
    assert_frame_equal(tk.exports_frame(service), ws.exports)
    assert tk.languages_frame(service)["untranslated"].isna().all()


def test_project_ids_limit_the_requests_to_those_projects(service):
    service.calls.clear()
    chapters = tk.chapters_frame(service, project_ids=["p2"])
    assert chapters["chapter_id"].tolist() == ["c3"]
    # c3 is running: its detail is read too, for its `state` (reading, translating, ...).
    assert service.calls == [("list_chapters", "p2"), ("get_chapter", "c3")]
    with pytest.raises(TypeError, match=r"pass \['p2'\]"):
        tk.chapters_frame(service, project_ids="p2")


def test_changed_details_reads_only_processing_or_moved_chapters_and_carries_the_rest(service):
    first = tk.pull(service)
    service.update("c3", processing=False, untranslated=0, covered=9, status="needs_review",
                   activity=T0 + timedelta(minutes=5))  # fmt: skip
    service.calls.clear()
    second = tk.pull(service, details="changed", since=first)
    read = sorted(ident for route, ident in service.calls if route == "get_chapter")
    assert read == ["c2", "c3"]  # c2 is processing, c3 moved; c1 is settled and unchanged
    languages = second.languages.set_index(["chapter_id", "language_code"])
    assert languages.loc[("c1", "en"), "untranslated"] == 0  # carried over
    assert languages.loc[("c3", "en"), "untranslated"] == 0  # read again


def test_changed_details_reads_chapters_the_previous_pull_knew_nothing_about(service):
    first = tk.pull(service, details="none")
    service.calls.clear()
    second = tk.pull(service, details="changed", since=first)
    assert len([r for r, _ in service.calls if r == "get_chapter"]) == 3
    assert second.languages["untranslated"].notna().all()


def test_requests_run_concurrently_over_the_client():
    service = FakeService()
    service.add_project("p1", languages=("en",))
    for i in range(4):
        service.add_chapter(f"c{i}", "p1", position=i + 1, languages=("en",))
    barrier = threading.Barrier(4, timeout=5)
    plain = service.get_chapter

    def get_chapter(chapter_id):
        barrier.wait()  # breaks (and fails the pull) unless four reads are in flight at once
        return plain(chapter_id)

    service.get_chapter = get_chapter
    ws = tk.pull(service, concurrency=4)
    assert ws.languages["untranslated"].notna().all()


def test_a_chapter_or_project_gone_between_reads_is_left_out(service):
    plain = service.list_chapters

    def list_chapters(project_id):
        items = plain(project_id)
        if project_id == "p2":
            del service.projects["p2"]  # trashed right after listing
            del service.chapters["c3"]
        return items

    service.list_chapters = list_chapters
    ws = tk.pull(service)
    assert "c3" in ws.chapters["chapter_id"].tolist()  # listed before it went
    assert ws.languages.set_index("chapter_id").loc["c3", "untranslated"] is pd.NA
    service.list_chapters = plain
    again = tk.pull(service)
    assert again.projects["project_id"].tolist() == ["p1"]


def test_pulled_at_is_the_service_clock_from_the_first_answer(service):
    service.date = datetime(2026, 3, 2, 11, 30, 5, tzinfo=UTC)
    ws = tk.pull(service)
    assert ws.pulled_at == service.date


def test_a_long_pull_shows_a_progress_bar(service, capsys):
    tk.pull(service, progress=True)
    assert "Pulling chapter" in capsys.readouterr().err
    tk.pull(service)  # short pulls stay quiet by default
    assert capsys.readouterr().err == ""


def test_fractional_credits_are_refused_rather_than_rounded(service):
    service.chapters["c1"]["creditsSpent"] = 2.5
    with pytest.raises(tk.UnexpectedAnswer, match=r"creditsSpent of chapter c1 2\.5"):
        tk.pull(service)


def test_an_unknown_details_choice_is_refused(service):
    with pytest.raises(ValueError, match="none, all, changed"):
        tk.pull(service, details="some")


def test_workspace_repr_is_a_readable_summary(service):
    ws = tk.pull(service)
    assert repr(ws).startswith(
        "<Workspace 2 projects, 3 chapters, 5 languages, 1 exports, 2 project_groups;"
    )
    with pytest.raises(ValueError, match="it has projects"):
        ws.table("pages")


def test_rows_builders_need_no_client():
    service = FakeService()
    service.add_project("p1")
    service.add_chapter("c1", "p1")
    items = service.list_chapters("p1")
    table = frames.language_rows(items, carried={("c1", "en"): 4})
    values = dict(
        zip(
            table.column("language_code").to_pylist(),
            table.column("untranslated").to_pylist(),
            strict=True,
        )
    )
    assert values == {"en": 4, "fr": None}


# Against the emulator, over loopback HTTP.


def test_frames_from_the_emulator_have_every_contract_column_and_dtype(
    emulator, client, comic_project, novel_project, pages
):
    chapter = client.create_chapter(comic_project["id"], pages=pages)
    client.create_chapter(novel_project["id"], text="First line.\nSecond line.\n")
    client.create_chapter(comic_project["id"], staged=True)
    emulator.advance(3600)  # the first two finish and prepare their files
    ws = tk.pull(client)
    for name in schema.SNAPSHOT_TABLES:
        assert_contract(ws.table(name), name)
        assert len(ws.table(name)) > 0
    projects = ws.projects.set_index("project_id")
    raw = {p.id: p.raw for p in client.list_projects()}
    comic = projects.loc[comic_project["id"]]
    millis = raw[comic_project["id"]]["lastChapterAt"]
    assert comic["last_chapter_at"] == pd.Timestamp(millis, unit="ms", tz="UTC")
    assert comic["target_languages"] == ["en", "fr"]
    assert comic["chapter_count"] == 2
    chapters = ws.chapters.set_index("chapter_id")
    assert chapters.loc[chapter.id, "status"] == "needs_review"
    assert chapters.loc[chapter.id, "credits_spent"] == len(pages) * 2
    assert chapters["started"].tolist().count(False) == 1  # the staged one
    languages = ws.languages[ws.languages["chapter_id"] == chapter.id]
    assert languages["untranslated"].tolist() == [0, 0]
    assert (languages["covered"] > 0).all()
    formats = set(ws.exports[ws.exports["chapter_id"] == chapter.id]["format"])
    assert {"txt", "clean", "cbz"} <= formats
    # The pull is stamped with the emulator's clock, read from the Date header.
    assert abs(ws.pulled_at - emulator.now()) < timedelta(seconds=1)


def test_an_empty_emulator_workspace_pulls_empty_frames(client):
    ws = tk.pull(client)
    assert ws.requests == 1
    for name in schema.SNAPSHOT_TABLES:
        assert ws.table(name).empty
        assert_contract(ws.table(name), name)


def test_an_async_client_is_refused_with_what_to_pass_instead():
    class Async:
        async def list_projects(self):
            return []

    with pytest.raises(TypeError, match=r"pass tk\.Client"):
        tk.pull(Async())


def test_a_status_the_toolkit_does_not_know_is_kept_warned_once_and_not_done(service, tmp_path):
    service.update("c2", status="teleporting")  # the chapter and its languages
    with pytest.warns(tk.UnknownStatus, match="'teleporting'") as caught:
        workspace = tk.pull(service)
    assert len(caught) == 1  # one warning for the pull, however many rows
    for table in (workspace.chapters, workspace.languages):
        statuses = table.set_index("chapter_id")["status"]
        assert set(statuses.loc[["c2"]]) == {"teleporting"}
        assert list(statuses.cat.categories) == ["teleporting", *schema.STATUS_DTYPE.categories]
        assert statuses.loc["c2"] < "translating" if table is workspace.chapters else True
    # The store keeps the text, and the analysis counts the chapter as not done.
    store = tk.SnapshotStore(tmp_path / "store")
    with pytest.warns(tk.UnknownStatus):
        store.take(service, at=T0 + timedelta(minutes=10))
    kept = store.latest("chapters").set_index("chapter_id")
    assert kept.loc["c2", "status"] == "teleporting"
    assert kept.loc["c1", "status"] == "needs_review"
    opened = tk.analysis.forecast(store)
    assert opened.set_index("project_id").loc["p1", "open_chapters"] == 1  # c2, not c1


def test_the_command_shows_the_warning_as_one_line(monkeypatch, capsys):
    from toolkit import cli
    from toolkit.frames.pull import _warn_of_unknown_statuses

    def snapshot(args):
        _warn_of_unknown_statuses(
            frames.chapter_rows([]).append_column("x", pa.array([])).drop(["x"])
        )
        _warn_of_unknown_statuses(pa.table({"status": ["teleporting", None]}))

    monkeypatch.setattr(cli, "_snapshot", snapshot)
    assert cli.main(["snapshot"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("toolkit snapshot: warning: the service sent a status")
    assert "'teleporting'" in err[0] and "counted as not done" in err[0]
