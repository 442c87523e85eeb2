"""The analysis on stores whose truth is known: hand-made histories first, then a
simulated day on the emulator, whose ledger and webhook deliveries are the truth."""

from __future__ import annotations

import dataclasses
import itertools
import shutil
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from datafakes import T0, FakeService, hours, iso
from epochs import SUITE_START

from toolkit import analysis
from toolkit.analysis.lines import (
    LINES_KEYS,
    LINES_SQL,
    lines_ahead,
    lines_by_snapshot,
    lines_read,
    window_of,
)
from toolkit.analysis.observed import Observed
from toolkit.analysis.runs import rescans_seen
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.frames import pull
from toolkit.store import SnapshotStore


@pytest.fixture
def service() -> FakeService:
    fake = FakeService()
    fake.add_project("p1", languages=("en", "fr"))
    fake.add_project("p2", languages=("en",))
    return fake


@pytest.fixture
def store(tmp_path) -> SnapshotStore:
    return SnapshotStore(tmp_path)


def figures(frame: pd.DataFrame, by: str, measure: str) -> dict[tuple[int, str], float]:
    """{(hour after T0, group): value} for the non-zero rows of a long frame."""
    out = {}
    for row in frame.itertuples(index=False):
        value = getattr(row, measure)
        if value:
            out[(int((row.period - T0).total_seconds() // 3600), getattr(row, by))] = value
    return out


def test_throughput_counts_rises_restarts_after_rescans_and_ignores_the_baseline(service, store):
    service.add_chapter("c1", "p1", covered=5)
    store.take(service, at=hours(0))  # baseline: its 5 lines per language count for nothing
    service.update("c1", covered={"en": 12, "fr": 9})
    service.add_chapter("c2", "p2", covered=4, languages=("en",))  # new: counts from zero
    store.take(service, at=hours(1))
    service.update("c1", failed=True, reason="The run failed.", processing=False)
    store.take(service, at=hours(2))  # nothing translated
    # Re-scanned: coverage restarted at 0 and is back at 3 (en) and 10 (fr, above 9).
    service.update("c1", failed=False, reason=None, processing=True, covered={"en": 3, "fr": 10})
    service.update("c2", covered=1)  # fell without a flag: a restart too
    store.take(service, at=hours(3))

    lines = analysis.throughput(store, freq="1h")
    assert list(lines.columns) == ["period", "language_code", "lines"]
    assert lines["lines"].dtype == pd.Int64Dtype()
    assert lines["period"].dtype == "datetime64[us, UTC]"
    assert figures(lines, "language_code", "lines") == {
        (1, "en"): 7 + 4,
        (1, "fr"): 4,
        (3, "en"): 3 + 1,
        (3, "fr"): 10,
    }
    # Hours without lines are left out, unless asked for.
    assert len(lines) == 4
    assert len(analysis.throughput(store, freq="1h", fill=True)) == 3 * 2
    by_project = analysis.throughput(store, freq="1D", by="project_id")
    # One daily period, starting at midnight, 9 hours before T0.
    assert figures(by_project, "project_id", "lines") == {(-9, "p1"): 24, (-9, "p2"): 5}
    by_model = analysis.throughput(store, by="model")
    assert set(by_model["model"]) == {"default-model"}
    assert by_model["lines"].sum() == 29


def models_now(service: FakeService, chapter_id: str, models: list[str]) -> None:
    """A chapter's languages list `models` (its coverage and failure as they were)."""
    for language in service.chapters[chapter_id]["languages"]:
        language["models"] = models


def test_lines_of_a_language_without_a_project_are_summed_apart_either_way(service, store):
    # A store written by hand may leave a language's project empty: DuckDB's sums keep
    # that group, and so does the sum of the rows a view read (the weekly page's way).
    service.add_chapter("c1", "p1", covered=5)
    store.take(service, at=hours(0))
    service.update("c1", covered={"en": 12, "fr": 9})
    pulled = pull(service)
    languages = pulled.languages.copy()
    french = languages["language_code"] == "fr"
    languages["project_id"] = languages["project_id"].astype(object).where(~french, None)
    store.write(dataclasses.replace(pulled, languages=languages), at=hours(1))
    since, until = pd.Timestamp(hours(0)), pd.Timestamp(hours(2))
    read = Observed(store)
    lines_by_snapshot(read, window_of(read, since, until) or (0, 0))
    summed = analysis.throughput(read, "1h", "project_id", since=since, until=until)
    asked = analysis.throughput(Observed(store), "1h", "project_id", since=since, until=until)
    pd.testing.assert_frame_equal(summed, asked, check_exact=True)
    assert summed["lines"][summed["project_id"].isna()].tolist() == [4]  # fr: 5 to 9


def test_a_window_counts_a_rescan_under_the_model_the_whole_history_does(service, store):
    # A re-scan that leaves no language row counts under the model of the last row
    # whose lines changed. A row that changed its models alone is not it, and may be
    # the state a window starts from: the window must still count the re-scan as the
    # whole history does.
    service.add_chapter("c1", "p1", pages=4, credits=8, covered=5)
    service.add_chapter("c2", "p1", position=2, pages=3, credits=6, covered=2)
    store.take(service, at=hours(0))
    service.update("c2", covered=3)
    models_now(service, "c1", ["default-model", "other-model"])  # its models alone
    store.take(service, at=hours(1))
    service.update("c1", credits=16)  # re-scanned and finished: coverage back at 5
    models_now(service, "c1", ["default-model", "other-model"])
    store.take(service, at=hours(2))

    whole = analysis.throughput(store, freq="1h", by="model")
    assert figures(whole, "model", "lines") == {(1, "default-model"): 2, (2, "default-model"): 10}
    window = analysis.throughput(store, freq="1h", by="model", since=hours(2))
    pd.testing.assert_frame_equal(window, whole[whole["period"] >= hours(2)].reset_index(drop=True))


def test_a_rescan_that_ends_where_it_started_still_counts_its_lines(service, store):
    # The change log keeps a row only when it changed: a re-scan that finished between
    # two snapshots with the same coverage leaves no language row, only the chapter's
    # rise in credits. Its lines were translated again and count in full.
    service.add_chapter("c1", "p1", pages=4, credits=8, covered=5)
    service.add_chapter("c2", "p1", position=2, pages=3, credits=6, covered=2)
    store.take(service, at=hours(0))
    service.update("c2", covered=3)  # keeps the first price visible as a first charge
    store.take(service, at=hours(1))
    service.update("c1", credits=16)  # re-scanned and finished: coverage back at 5
    store.take(service, at=hours(2))

    lines = analysis.throughput(store, freq="1h")
    assert figures(lines, "language_code", "lines") == {
        (1, "en"): 1,
        (1, "fr"): 1,
        (2, "en"): 5,
        (2, "fr"): 5,
    }
    by_project = analysis.throughput(store, freq="1h", by="project_id")
    assert figures(by_project, "project_id", "lines") == {(1, "p1"): 2, (2, "p1"): 10}


def test_credit_spend_tells_rework_from_new_pages(service, store):
    service.add_chapter("c1", "p1", pages=4, credits=8)  # 4 pages x 2 languages, paid
    store.take(service, at=hours(0))
    service.add_chapter("c2", "p1", position=2, pages=3, credits=6)  # first charge: price 1
    store.take(service, at=hours(1))
    service.update("c1", credits=16)  # re-scan: all 4 pages again in 2 languages
    store.take(service, at=hours(2))
    service.update("c1", pages=6, credits=20)  # two pages added and run
    service.update("c2", pages=5)  # two pages held: no charge yet
    store.take(service, at=hours(3))
    service.update("c2", credits=10 + 6)  # held pages started (4) and a re-scan of all 5 (10)
    store.take(service, at=hours(4))

    spend = analysis.credit_spend(store, freq="1h", by="chapter_id")
    assert list(spend.columns) == ["period", "chapter_id", "credits", "rework_credits"]
    assert spend["credits"].dtype == pd.Float64Dtype()
    assert figures(spend, "chapter_id", "credits") == {
        (1, "c2"): 6,
        (2, "c1"): 8,
        (3, "c1"): 4,
        (4, "c2"): 10,
    }
    assert figures(spend, "chapter_id", "rework_credits") == {(2, "c1"): 8, (4, "c2"): 6}
    daily = analysis.credit_spend(store)  # by project, per day
    assert daily[["credits", "rework_credits"]].sum().tolist() == [28, 14]
    by_language = analysis.credit_spend(store, freq="1D", by="language_code")
    assert figures(by_language, "language_code", "credits") == {(-9, "en"): 14, (-9, "fr"): 14}
    assert analysis.price_per_page(store) == {"p1": 1.0, None: 1.0}
    assert analysis.price_estimate(store, "p1", pages=10) == 20.0
    assert analysis.price_estimate(store, "p2", pages=10) == 10.0  # workspace price, 1 language
    assert analysis.price_estimate(store, "p1", pages=10, languages=["en", "fr", "de"]) == 30.0


def test_a_novel_pays_once_and_that_is_not_rework(service, store):
    service.add_project("n1", languages=("en", "es"), kind="novel")
    store.take(service, at=hours(0))
    service.add_chapter("c1", "n1", pages=0, credits=6, languages=("en", "es"))
    service.add_chapter("c2", "p1", pages=2, credits=4)  # a comic: 1 credit a page-language
    store.take(service, at=hours(1))
    spend = analysis.credit_spend(store, freq="1h")
    assert spend["credits"].sum() == 10 and spend["rework_credits"].sum() == 0
    # A comic without history of its own takes the price of the workspace's comics; a
    # novel, priced by its text, is estimated per chapter of its usual length.
    assert analysis.price_estimate(store, "p2", pages=5) == 5.0
    assert analysis.price_per_chapter(store) == {"n1": 3.0, None: 3.0}
    assert analysis.price_estimate(store, "n1", pages=2) == 2 * 2 * 3.0
    service.add_project("n2", languages=("en",), kind="novel")
    store.take(service, at=hours(2))
    assert analysis.price_estimate(store, "n2", pages=1) == 3.0  # like the other novel


def test_no_price_history_is_said_plainly(service, store):
    service.add_project("n1", languages=("en",), kind="novel")
    service.add_chapter("c1", "p1", pages=2, credits=4)
    store.take(service, at=hours(0))
    with pytest.raises(ValueError, match="no chapter price learned for project 'n1'"):
        analysis.price_estimate(store, "n1", pages=3)


def test_price_estimate_needs_a_known_project_or_languages(service, store):
    service.add_chapter("c1", "p1", pages=2, credits=4)
    store.take(service, at=hours(0))
    with pytest.raises(ValueError, match="pass languages="):
        analysis.price_estimate(store, "nope", pages=1)
    assert analysis.price_estimate(store, "nope", pages=1, languages=3) == 3.0


def test_bad_choices_are_refused_with_the_allowed_ones(store):
    with pytest.raises(ValueError, match="language_code, project_id, model"):
        analysis.throughput(store, by="chapter")
    with pytest.raises(ValueError, match="project_id, language_code, chapter_id"):
        analysis.credit_spend(store, by="model")


def test_an_empty_store_gives_empty_figures_with_their_columns(store):
    assert list(analysis.throughput(store).columns) == ["period", "language_code", "lines"]
    assert analysis.credit_spend(store).empty
    assert list(analysis.cycle_times(store).columns)[:8] == [
        "chapter_id", "chapter", "project_id", "project", "kind", "started_at", "finished_at",
        "hours",
    ]  # fmt: skip
    assert list(analysis.failures(store).columns)[:7] == [
        "chapter_id", "chapter", "project_id", "project", "kind", "seen_at", "failure_reason",
    ]  # fmt: skip
    assert analysis.runs(store).empty
    assert analysis.stalled(store).empty


def finished_event(chapter: str, at, webhook_id: str) -> dict:
    data = {"chapterId": chapter, "projectId": "p1", "position": 1, "title": None}
    return {"webhook_id": webhook_id, "type": "chapter.finished", "timestamp": iso(at),
            "data": data}  # fmt: skip


def test_cycle_times_start_at_creation_and_end_at_the_event_or_the_snapshot(service, store):
    service.add_chapter("c0", "p1", processing=False, status="needs_review")  # done before
    store.take(service, at=hours(0))
    service.add_chapter("c1", "p1", position=2, created=hours(0.5))
    service.add_chapter("c2", "p1", position=3, created=hours(0.25),
                        processing=False, status="needs_review")  # fmt: skip
    store.take(service, at=hours(1))
    service.update("c1", processing=False, status="needs_review")
    store.take(service, at=hours(2))
    service.update("c1", processing=True, status="translating")  # pages added: a later run
    store.take(service, at=hours(3))
    service.update("c1", processing=False, status="needs_review")
    store.take(service, at=hours(4))

    runs = analysis.cycle_times(store)
    assert list(zip(runs["chapter_id"], runs["hours"], strict=True)) == [
        ("c2", 0.75),  # created and finished between two snapshots
        ("c1", 1.5),  # created at 0:30, seen done at 2:00
        ("c1", 2.0),  # started after the snapshot at 2:00, done at 4:00
    ]
    assert runs["started_at"].dtype == "datetime64[us, UTC]"
    assert runs["hours"].dtype == pd.Float64Dtype()
    # With the webhook events, the finish times are exact.
    store.record_events(
        [finished_event("c1", hours(1.75), "w1"), finished_event("c1", hours(3.5), "w2")]
    )
    exact = analysis.cycle_times(store)
    assert exact["hours"].tolist() == [0.75, 1.25, 1.5]
    assert exact["finished_source"].tolist() == ["snapshot", "event", "event"]


def test_a_run_still_going_at_the_last_snapshot_finishes_at_its_event(service, store):
    store.take(service, at=hours(0))
    service.add_chapter("c1", "p1", created=hours(0.5))
    store.take(service, at=hours(1))
    assert analysis.cycle_times(store).empty
    store.record_events([finished_event("c1", hours(1.5), "w1")])
    assert analysis.cycle_times(store)["hours"].tolist() == [1.0]


def test_failures_are_one_row_per_failed_run_with_event_times(service, store):
    service.add_chapter("c1", "p1")
    service.add_chapter("c2", "p1", position=2, failed=True, processing=False, reason="old")
    store.take(service, at=hours(0))  # c2 failed before the window: not counted
    service.update("c1", failed=True, processing=False, reason="The run failed part-way.")
    store.take(service, at=hours(1))
    store.take(service, at=hours(2))  # still failed: the same failure
    service.update("c1", reason="The run stalled and was abandoned; retry it.")
    store.take(service, at=hours(3))  # a new failure (re-scanned and failed again unseen)
    service.update("c1", failed=False, reason=None, processing=True)
    store.take(service, at=hours(4))
    service.update("c1", failed=True, processing=False, reason="The run failed part-way.")
    store.take(service, at=hours(5))

    seen = analysis.failures(store)
    assert seen["seen_at"].tolist() == [pd.Timestamp(hours(h)) for h in (1, 3, 5)]
    assert seen["failure_reason"].tolist()[1].startswith("The run stalled")
    part_way = {"chapterId": "c1", "projectId": "p1", "failureReason": "The run failed part-way."}
    events = [
        {"webhook_id": "f1", "type": "chapter.failed", "timestamp": iso(hours(0.6)),
         "data": part_way},
        {"webhook_id": "f9", "type": "chapter.failed", "timestamp": iso(hours(5.5)),
         "data": {"chapterId": "c3", "projectId": "p2", "failureReason": "Lost."}},
    ]  # fmt: skip
    store.record_events(events)
    merged = analysis.failures(store)
    assert merged["seen_at"].tolist()[0] == pd.Timestamp(hours(0.6))  # matched: exact time
    # An event of a chapter the store never saw has no run, so no failure row.
    assert len(merged) == 3


def test_stalled_lists_processing_chapters_without_progress(service, store):
    service.add_chapter("c1", "p1", covered=3)
    service.add_chapter("c2", "p1", position=2, covered=3)
    store.take(service, at=hours(0))
    service.update("c2", covered=5, activity=hours(1))
    store.take(service, at=hours(1))
    store.take(service, at=hours(2.5))
    stuck = analysis.stalled(store, threshold="2h")
    assert stuck["chapter_id"].tolist() == ["c1"]
    assert stuck.loc[0, "stalled_hours"] == 2.5
    assert stuck.loc[0, "last_progress_at"] == pd.Timestamp(hours(0))
    assert analysis.stalled(store, threshold="1h")["chapter_id"].tolist() == ["c1", "c2"]
    service.update("c1", processing=False, failed=True)
    store.take(service, at=hours(3))
    assert analysis.stalled(store, threshold="1h")["chapter_id"].tolist() == ["c2"]


# Against the emulator: its ledger and its webhook deliveries are the truth.


def _periods(store) -> list[pd.Timestamp]:
    """The hour of each snapshot after the baseline."""
    return list(store.snapshots()["snapshot_at"].iloc[1:].dt.floor("h"))


def _between(entries: list[dict], marks: list[int]) -> list[list[dict]]:
    """Ledger entries made between consecutive snapshots."""
    return [entries[a:b] for a, b in itertools.pairwise(marks)]


@pytest.fixture(scope="module")
def simulated_day(tmp_path_factory, webhook_url) -> Iterator[tuple[Any, ...]]:
    """Hourly snapshots of a workspace with failures, stalls and re-scans, simulated once
    for the module (the tests read the store; the one that records events copies it);
    returns the store, the ledger, per snapshot how many ledger charges and lines existed
    when it was taken, and the emulator (its deliveries are the events it sent)."""
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        workspace = emulator.create_workspace(name="Test workspace", credits=10_000)
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            root = tmp_path_factory.mktemp("day") / "store"
            yield (*_simulate_day(emulator, workspace, client, root, webhook_url), emulator)


def _simulate_day(emulator, workspace, client, root, webhook_url):
    from page_images import make_page

    ws = workspace["id"]
    common = {"source_language": "ja", "reading_direction": "rtl"}
    comic = emulator.create_project(ws, name="Moon", kind="comic", process_steps="full",
                                    target_languages=["en", "fr"], **common)  # fmt: skip
    lettered = emulator.create_project(ws, name="Star", kind="comic", process_steps="translate",
                                       target_languages=["en"], **common)  # fmt: skip
    novel = emulator.create_project(ws, name="River", kind="novel", process_steps="translate",
                                    target_languages=["en", "es"], **common)  # fmt: skip
    emulator.add_webhook(ws, webhook_url, ["chapter.finished", "chapter.failed"])
    emulator.set_faults(failure_rate=0.3, stall_rate=0.15, seed=7)
    store = SnapshotStore(root)
    store.take(client)  # the baseline: an empty workspace
    charges, lines = [0], [0]
    seed = 0
    for hour in range(8):
        if hour < 5:
            for project in (comic, lettered):
                client.create_chapter(project["id"], pages=[make_page(seed + i) for i in range(3)])
                seed += 3
            if hour % 2 == 0:
                client.create_chapter(novel["id"], text="A line of the story.\n" * 40)
        emulator.advance(3600)
        store.take(client)  # stamped with the emulator's clock, from the Date header
        ledger = emulator.ledger(ws)
        charges.append(len(ledger["charges"]))
        lines.append(len(ledger["lines"]))
        for chapter in store.latest("chapters").itertuples():
            if chapter.failed and not chapter.processing and chapter.page_count > 0:
                client.rescan_chapter(chapter.chapter_id)
    return store, emulator.ledger(ws), charges, lines


def test_throughput_equals_the_lines_the_emulator_translated(simulated_day):
    store, ledger, _, lines, _ = simulated_day
    figures = analysis.throughput(store, freq="1h", by="language_code")
    periods = _periods(store)
    assert len(periods) == 8
    for period, entries in zip(periods, _between(ledger["lines"], lines), strict=True):
        truth = pd.DataFrame(entries, columns=["languageCode", "lines"])
        expected = truth.groupby("languageCode")["lines"].sum().to_dict()
        got = figures[figures["period"] == period].set_index("language_code")["lines"]
        assert {k: v for k, v in got.items() if v} == {k: v for k, v in expected.items() if v}
    total = sum(entry["lines"] for entry in ledger["lines"])
    assert analysis.throughput(store, freq="1D", by="project_id")["lines"].sum() == total


def test_the_lines_at_each_snapshot_sum_to_the_rules_own_sums(simulated_day):
    # The throughput sums `lines_by_snapshot` per period in pandas; the rule's own query
    # sums them in DuckDB (`LINES_SQL`, as `toolkit sql` runs it). Each window (the whole
    # day, one from its second snapshot with the re-scans before it, a middle one, the
    # last snapshot alone), period and group: the same lines, a group of zeros included.
    store = simulated_day[0]
    obs = Observed(store)
    last = len(obs.manifest) - 1
    for first, end in [(0, last), (1, last), (2, 5), (last, last)]:
        idx = np.arange(first, end + 1, dtype="int64")
        periods = pd.DataFrame({"idx": idx, "period": idx // 3})
        rows = lines_by_snapshot(obs, (first, end)).to_pandas()
        rows["period"] = rows["idx"] // 3
        for by in ("language_code", "project_id"):
            frames = {"resets": rescans_seen(obs, (first, end)), "periods": periods}
            sql = LINES_SQL.format(key=LINES_KEYS[by])
            want = store.query(sql, frames=frames, window=(first, end))
            got = rows.groupby(["period", by])["lines"].sum()
            assert {(int(p), str(k)): int(n) for (p, k), n in got.items()} == {
                (int(p), str(k)): int(n)
                for p, k, n in zip(want["period"], want["key"], want["lines"], strict=True)
            }
        assert rows["lines"].sum() > 0 or (first, end) == (last, last)


@pytest.mark.parametrize("read_rows", [lines_by_snapshot, lines_ahead])
def test_throughput_sums_the_lines_a_view_read_as_it_sums_the_log(simulated_day, read_rows):
    # A view that read a window's lines at each snapshot, or is reading them on its
    # thread ahead (the weekly page, which lists them), sums them; another asks DuckDB
    # for the sums: the same frames.
    store = simulated_day[0]
    times = Observed(store).manifest["snapshot_at"]
    for since, until, freq, tz in [(times.iloc[1], times.iloc[-1], "1h", None),
                                   (times.iloc[0], times.iloc[-1] + pd.Timedelta("1s"), "2h",
                                    "Asia/Kolkata")]:  # fmt: skip
        read = Observed(store)
        window = window_of(read, since, until)
        assert window is not None and lines_read(read, window) is None
        read_rows(read, window)
        for by in ("language_code", "project_id"):
            summed = analysis.throughput(read, freq, by, since=since, until=until, tz=tz)
            asked = analysis.throughput(Observed(store), freq, by, since=since, until=until, tz=tz)
            assert summed["lines"].sum() > 0
            pd.testing.assert_frame_equal(summed, asked, check_exact=True)


def test_credit_spend_and_rework_equal_the_emulator_charges(simulated_day):
    store, ledger, charges, _, _ = simulated_day
    assert any(c["rework"] for c in ledger["charges"])  # the day had re-scans
    figures = analysis.credit_spend(store, freq="1h", by="project_id")
    for period, entries in zip(_periods(store), _between(ledger["charges"], charges), strict=True):
        got = figures[figures["period"] == period].set_index("project_id")
        for project in {c["projectId"] for c in entries} | set(got.index):
            mine = [c for c in entries if c["projectId"] == project]
            none = {"credits": 0, "rework_credits": 0}
            shown = got.loc[project] if project in got.index else none
            assert shown["credits"] == sum(c["credits"] for c in mine)
            assert shown["rework_credits"] == sum(c["credits"] for c in mine if c["rework"])
    by_language = analysis.credit_spend(store, freq="1D", by="language_code")
    assert by_language["credits"].sum() == sum(c["credits"] for c in ledger["charges"])
    assert analysis.price_estimate(store, figures["project_id"][0], pages=10, languages=2) == 20


def test_cycle_times_and_failures_match_the_events_the_emulator_sent(simulated_day, tmp_path):
    import json

    shared, _, _, _, emulator = simulated_day
    store = SnapshotStore(shutil.copytree(shared.root, tmp_path / "store"))  # events go in
    # From the snapshots alone, runs end at the chapter's last activity, which the
    # emulator moves at every step: the same times its events carry.
    bare = analysis.failures(store)
    bare_cycles = analysis.cycle_times(store)
    assert not bare.empty
    sent = [json.loads(d["body"]) | {"webhook_id": d["webhookId"]} for d in emulator.deliveries()]
    store.record_events(sent)
    finished = {(e["data"]["chapterId"], pd.Timestamp(e["timestamp"])) for e in sent
                if e["type"] == "chapter.finished"}  # fmt: skip
    failed = [e for e in sent if e["type"] == "chapter.failed"]
    assert failed and finished

    runs = analysis.cycle_times(store)
    assert set(zip(runs["chapter_id"], runs["finished_at"], strict=True)) <= finished
    chapters = store.latest("chapters").set_index("chapter_id")
    first_finishes = {}
    for chapter, at in sorted(finished, key=lambda x: x[1]):
        first_finishes.setdefault(chapter, at)
    never_failed = {c for c in first_finishes if c not in {e["data"]["chapterId"] for e in failed}}
    first_runs = runs[runs["chapter_id"].isin(never_failed)]
    assert sorted(first_runs["chapter_id"]) == sorted(never_failed)  # every first run is there
    for row in first_runs.itertuples():
        assert row.started_at == chapters.loc[row.chapter_id, "created_at"]
        assert row.finished_at == first_finishes[row.chapter_id]

    seen = analysis.failures(store)
    assert len(seen) == len(failed)
    assert sorted(seen["seen_at"]) == sorted(pd.Timestamp(e["timestamp"]) for e in failed)
    assert bare["seen_at"].tolist() == seen["seen_at"].tolist()
    assert bare_cycles["finished_at"].tolist() == runs["finished_at"].tolist()


def test_stalled_finds_the_run_the_emulator_stalled(emulator, comic_project, client, tmp_path):
    from page_images import make_page

    emulator.set_faults(stall_rate=1.0, seed=3)
    chapter = client.create_chapter(comic_project["id"], pages=[make_page(1)])
    store = SnapshotStore(tmp_path)
    store.take(client)
    for _ in range(3):
        emulator.advance(1800)
        store.take(client)
    stuck = analysis.stalled(store, threshold="1h")
    assert stuck["chapter_id"].tolist() == [chapter.id]
    assert stuck.loc[0, "stalled_hours"] >= 1
    detail = client.get_chapter(chapter.id)
    assert detail.processing and not detail.failed  # stalled, not yet abandoned
    emulator.advance(2 * 3600)
    store.take(client)
    assert analysis.stalled(store, threshold="1h").empty
    (reason,) = analysis.failures(store)["failure_reason"]
    assert "stalled" in reason
