"""Each check on one real emulator history, read through `tk.watch.checks` at two moments:
at 14:00, when everything that can go wrong has, and at 15:00, after each condition was
put right (so every finding is seen to resolve).

The history (service time, 18 Nov 2026; snapshots every 15 minutes): from 09:00 Moonlit
Harbor spends a few credits an hour and Harbor Lights translates a chapter an hour. At
13:00 Moonlit Harbor takes ten chapters and an 80-page one at once (a spend spike; the
long one still translates at 14:00, past its due date of the day before) and Harbor
Lights' chapter stalls (no lines while it runs). Side Stories has a chapter failed at
12:45 and pages held since 12:45. A receiver feeds the store the service's webhook
events, all but one. A second workspace, annex, was snapshotted only at 09:00. Between
the two readings the failed chapter is re-scanned, the held pages started, the stalled
chapter trashed, the lost event stored and annex snapshotted.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass

import pandas as pd
import pytest
from epochs import SUITE_START
from page_images import make_page

import toolkit as tk
from toolkit.analysis.observed import observe
from toolkit.analysis.runs import runs_ended
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.watch import evaluate, read_config
from toolkit.watch.anomaly import failures_by_bin

CONFIG = """\
store = "{root}"
interval = "15m"
[workspaces.studio]
base_url = "{url}"
key_env = "WATCH_TEST_KEY"
[workspaces.annex]
base_url = "{url}"
key_env = "WATCH_TEST_ANNEX_KEY"
[checks]
stalled_after = "30min"
failed_waiting_after = "1h"
missing_events_after = "20min"
anomaly_period = "1h"
anomaly_baseline = 4
[due]
"Moonlit Harbor" = "2026-11-17"
"""
# Each project its own: the workspace waits 2 h before calling a run stalled, Harbor
# Lights 30 min; Side Stories gives failed chapters 3 h and ignores held pages; Moonlit
# Harbor (named by id) tolerates any spend.
OWN = """\
[workspaces.studio.checks]
stalled_after = "2h"
[checks.projects."Side Stories"]
failed_waiting_after = "3h"
off = ["held_pages"]
[checks.projects."Harbor Lights"]
stalled_after = "30min"
[checks.projects."{moonlit}"]
anomaly_mads = 1000
"""
COMIC = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl",
         "process_steps": "translate"}  # fmt: skip
STEP = 900  # seconds between snapshots


def events(emulator: Emulator) -> list[dict]:
    """What the service sent, as a receiver stores it."""
    return [json.loads(d["body"]) | {"webhook_id": d["webhookId"]} for d in emulator.deliveries()]


@dataclass
class History:
    config: tk.watch.WatchConfig
    studio: tk.SnapshotStore
    lost_event: dict  # the one event the receiver did not store (until 15:00)
    ids: dict[str, str]
    at_14: pd.DataFrame  # the open findings at 14:00
    stuck_14: pd.DataFrame  # what needed a person then (`tk.analysis.stuck`, 30 min)
    at_15: pd.DataFrame  # and at 15:00
    own: pd.DataFrame  # at 14:00 with each project's own settings (OWN)
    damaged: list[tk.watch.Finding]  # a copy of studio's store at 14:00, damaged


@pytest.fixture(scope="module")
def history(tmp_path_factory, webhook_url) -> History:
    root = tmp_path_factory.mktemp("watch") / "store"
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        studio_ws = emulator.create_workspace(name="Studio", credits=100_000)
        annex_ws = emulator.create_workspace(name="Annex", credits=1_000)
        # The deliveries are read back from the emulator's log.
        emulator.add_webhook(studio_ws["id"], webhook_url, ["chapter.finished", "chapter.failed"])
        project = {name: emulator.create_project(studio_ws["id"], name=name,
                                                 target_languages=["en", "fr"], **COMIC)["id"]
                   for name in ("Moonlit Harbor", "Harbor Lights", "Side Stories")}  # fmt: skip
        path = root.parent / "watch.toml"
        path.write_text(CONFIG.format(root=root, url=emulator.url))
        config = read_config(path)
        studio = tk.SnapshotStore(config.workspaces["studio"].store, workspace="studio")
        annex = tk.SnapshotStore(config.workspaces["annex"].store, workspace="annex")
        seed = iter(range(10_000))

        def pages(n: int) -> list[bytes]:
            return [make_page(next(seed)) for _ in range(n)]

        with (
            Client(emulator.url, studio_ws["apiKey"]) as client,
            Client(emulator.url, annex_ws["apiKey"]) as annex_client,
        ):
            studio.take(client)  # the baseline, 09:00
            annex.take(annex_client)
            side = client.create_chapter(project["Side Stories"], pages=pages(1))
            kept = []
            for hour in range(5):
                spike = hour == 4
                for _ in range(10 if spike else 1):
                    kept.append(client.create_chapter(project["Moonlit Harbor"], pages=pages(2)))
                if spike:  # still translating at 14:00, its pace seen: late for its due date
                    client.create_chapter(project["Moonlit Harbor"], pages=pages(80))
                emulator.set_faults(stall_rate=1.0 if spike else 0.0, seed=hour)
                lights = client.create_chapter(project["Harbor Lights"], pages=pages(3))
                emulator.set_faults()
                for quarter in range(4):
                    if hour == 3 and quarter == 3:  # 12:45
                        held = client.add_pages(side.id, pages(2), hold=True)
                        emulator.set_faults(failure_rate=1.0, seed=99)
                        failed = client.create_chapter(project["Side Stories"], pages=pages(1))
                        emulator.set_faults()
                    emulator.advance(STEP)
                    studio.take(client)
            sent = events(emulator)
            lost = next(e for e in sent if e["data"]["chapterId"] == kept[1].id)
            studio.record_events([e for e in sent if e is not lost])
            at_14 = tk.watch.checks(root, config)
            stuck_14 = tk.analysis.stuck(studio, threshold="30min")
            own = path.with_name("own.toml")
            own.write_text(path.read_text() + OWN.format(moonlit=project["Moonlit Harbor"]))
            own_14 = tk.watch.checks(root, own)
            damaged = root.parent / "damaged"
            shutil.copytree(studio.root, damaged)
            sorted((damaged / "chapters" / "_delta_log").glob("*.json"))[-1].unlink()
            broken = evaluate({"studio": tk.SnapshotStore(damaged)}, config)

            client.rescan_chapter(failed.id)
            client.start_chapter(side.id, page_ids=[p.id for p in held.pages])
            emulator.trash_chapter(lights.id)
            for _ in range(4):
                emulator.advance(STEP)
                studio.take(client)
            annex.take(annex_client)
            studio.record_events(events(emulator))
            at_15 = tk.watch.checks(root, config)
    ids = {"lost": kept[1].id, "failed": failed.id, "held": side.id, "stalled": lights.id}
    return History(config, studio, lost, ids, at_14, stuck_14, at_15, own_14, broken)


def found(frame: pd.DataFrame, check: str, subject: str | None = None) -> pd.DataFrame:
    rows = frame[frame["check"] == check]
    return rows if subject is None else rows[rows["subject"] == subject]


def only(frame: pd.DataFrame, check: str, subject: str) -> pd.Series:
    (row,) = [r for _, r in found(frame, check, subject).iterrows()]
    return row


def test_a_spend_spike_is_flagged_against_the_projects_own_baseline(history):
    row = only(history.at_14, "anomaly", "Moonlit Harbor")
    assert (row["scope"], row["workspace"]) == ("project", "studio")
    assert row["message"] == (
        "Moonlit Harbor: 200 credits spent in the hour from 18 Nov 13:00 UTC, against a "
        "baseline of 4 (median of 4 hours, MAD 0)"
    )
    assert row["figures"]["measure"] == "spend" and row["figures"]["baseline_bins"] == 4
    assert found(history.at_15, "anomaly", "Moonlit Harbor").empty  # the next hour is usual


def test_throughput_that_drops_while_work_runs_is_flagged_low(history):
    row = only(history.at_14, "anomaly", "Harbor Lights")
    assert row["figures"]["measure"] == "throughput"
    assert row["figures"]["value"] < row["figures"]["median"] == 36
    assert row["message"].startswith("Harbor Lights: 3 lines translated in the hour from 18 Nov")
    assert row["message"].endswith("against a baseline of 36 (median of 4 hours, MAD 3)")
    assert found(history.at_15, "anomaly", "Harbor Lights").empty  # nothing runs: not slow


def test_the_anomaly_bins_read_alone_count_what_the_whole_history_counts_in_them(history):
    # The check reads only its bins' runs, spend and lines: for every run of five hourly
    # bins (runs begun before a bin and ended in it, the stalls, the failure), the same
    # counts as the whole history's, cut to the bins.
    store, hour = history.studio, pd.Timedelta(hours=1)
    runs = tk.analysis.runs(store)
    ended = runs[runs["outcome"].isin(["finished", "failed", "stalled"]).fillna(False)]
    ended = ended[ended["finished_at"].notna()]
    times = store.snapshots()["snapshot_at"]
    every = pd.date_range(times.iloc[0].floor(hour), times.iloc[-1].floor(hour), freq=hour)
    whole_runs = failures_by_bin(ended, every, hour)
    names = ended.drop_duplicates("project_id").set_index("project_id")["project"]
    figures = {name: getattr(tk.analysis, name) for name in ("credit_spend", "throughput")}
    whole = {name: figure(store, "3600s", "project_id") for name, figure in figures.items()}
    assert len(whole_runs) and all(len(frame) for frame in whole.values())
    for first in range(len(every) - 4):
        bins = every[first : first + 5]
        inside = whole_runs.index.get_level_values("bin").isin(bins)
        pd.testing.assert_frame_equal(failures_by_bin(ended, bins, hour), whole_runs[inside])
        # The check's own read: the runs that ended in the bins, named as the whole's.
        read = runs_ended(observe(store), since=bins[0], until=bins[-1] + hour)
        pd.testing.assert_frame_equal(failures_by_bin(read, bins, hour), whole_runs[inside])
        read_names = read.drop_duplicates("project_id").set_index("project_id")["project"]
        pd.testing.assert_series_equal(read_names, names[read_names.index])
        for name, figure in figures.items():
            cut = whole[name][whole[name]["period"].isin(bins)].reset_index(drop=True)
            read = figure(store, "3600s", "project_id", since=bins[0], until=bins[-1] + hour)
            pd.testing.assert_frame_equal(read, cut, obj=f"{name} from {bins[0]}")


def test_a_chapter_running_without_progress_is_stalled_until_it_is_dealt_with(history):
    (row,) = [r for _, r in found(history.at_14, "stalled").iterrows()]
    assert row["scope"] == "chapter" and row["subject"].startswith("Harbor Lights: Chapter ")
    assert row["message"].endswith(
        "is running with no progress since 18 Nov 13:00 UTC; wait: the service abandons a "
        "run after 2 hours without progress; then re-scan it"
    )
    assert row["figures"]["hours"] == 1.0
    assert row["figures"]["chapter_id"] == history.ids["stalled"]
    assert found(history.at_15, "stalled").empty


def test_each_chapter_finding_dates_its_stuck_row_as_pandas_does(history):
    # The findings are made from the rows as Python values (a quarter of 100,000
    # chapters may be stuck): their times read as pandas reads each row's.
    now = pd.Timestamp("2026-11-18 14:00", tz="UTC")
    rows = history.stuck_14.set_index("chapter_id")
    chapters = history.at_14[history.at_14["scope"] == "chapter"]
    told = chapters[chapters["check"] != "missing_events"]
    assert set(told["check"]) == {"stalled", "failed_waiting", "held_pages"}
    for finding in told.itertuples():
        row = rows.loc[finding.figures["chapter_id"]]
        since = row["since"]
        assert finding.figures["since"] == since.isoformat()
        assert finding.figures["hours"] == round((now - since).total_seconds() / 3600, 1)
        if finding.check != "held_pages":
            assert f"{since:%d %b %H:%M} UTC" in finding.message
        assert finding.subject == f"{row['project']}: {row['chapter']}"


def test_a_failed_chapter_waits_for_a_rescan_past_its_threshold(history):
    (row,) = [r for _, r in found(history.at_14, "failed_waiting").iterrows()]
    assert row["subject"] == "Side Stories: Chapter 2"
    assert row["message"].startswith("Side Stories: Chapter 2 failed at 18 Nov 12:4")
    assert row["message"].endswith(". Re-scan it to retry.")  # the advice once, in words
    assert row["figures"]["chapter_id"] == history.ids["failed"]
    assert found(history.at_15, "failed_waiting").empty  # re-scanned


def test_held_pages_never_started_are_found_at_once_and_resolve_when_started(history):
    row = only(history.at_14, "held_pages", "Side Stories: Chapter 1")
    assert row["message"] == (
        "Side Stories: Chapter 1: 2 pages held, never started; start its held pages or remove them"
    )
    assert row["figures"]["chapter_id"] == history.ids["held"]
    assert found(history.at_15, "held_pages").empty


def test_a_run_with_no_webhook_event_in_the_store_is_a_missing_event(history):
    (row,) = [r for _, r in found(history.at_14, "missing_events").iterrows()]
    assert row["subject"] == "Moonlit Harbor: Chapter 2"
    assert row["message"] == (
        "Moonlit Harbor: Chapter 2 finished at 18 Nov 10:02 UTC and no chapter.finished "
        "event reached the store; check the webhook endpoint and the receiver"
    )
    assert row["figures"]["chapter_id"] == history.ids["lost"]
    assert history.lost_event["type"] == "chapter.finished"
    assert found(history.at_15, "missing_events").empty  # the event arrived late


def test_a_due_date_the_forecast_passes_is_a_miss_through_checks(history):
    row = only(history.at_14, "due", "Moonlit Harbor")
    assert row["scope"] == "project"
    assert row["message"].startswith(
        "Moonlit Harbor is due on 17 Nov 2026 but its forecast finish is 18 Nov 14:"
    )
    assert row["figures"]["due"] == "2026-11-17" and row["figures"]["late_hours_p50"] > 14
    assert found(history.at_15, "due").empty  # no open work left: it cannot be late


def test_a_workspace_whose_snapshots_stopped_is_found_against_the_newest(history):
    row = only(history.at_14, "snapshots", "annex")
    assert (row["scope"], row["workspace"]) == ("workspace", "annex")
    assert row["message"] == "the last snapshot of annex is from 18 Nov 09:00 UTC"
    assert row["figures"]["hours"] == 5.0
    assert row["figures"]["hours"] == 5.0
    assert found(history.at_15, "snapshots").empty


def test_a_damaged_store_is_one_store_check_finding_and_nothing_read_from_it(history):
    (finding,) = history.damaged
    assert (finding.check, finding.scope, finding.subject) == ("snapshots", "store", "studio")
    assert finding.message.startswith("`toolkit store check --store ")
    assert "finds 1 problem, the first: " in finding.message
    assert finding.figures == {"problems": 1}


def test_every_condition_put_right_leaves_nothing_open(history):
    assert sorted(history.at_14["check"]) == [
        "anomaly", "anomaly", "due", "failed_waiting", "held_pages", "missing_events",
        "snapshots", "stalled",
    ]  # fmt: skip
    assert history.at_15.empty


def test_each_project_follows_its_own_settings_over_its_workspaces(history):
    own = history.own
    assert found(own, "failed_waiting").empty  # Side Stories waits 3 h, 1.2 h went by
    assert found(own, "held_pages").empty  # switched off for Side Stories
    (stalled,) = found(own, "stalled")["subject"]  # 30 min for Harbor Lights, not 2 h
    assert stalled.startswith("Harbor Lights: ")
    assert found(own, "anomaly")["subject"].tolist() == ["Harbor Lights"]  # by id: Moonlit
    assert len(found(own, "missing_events")) == len(found(own, "due")) == 1  # as before
