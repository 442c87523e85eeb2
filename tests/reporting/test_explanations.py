"""`tk.explain`: every headline figure opened down to its rows, whose values sum to the
figure `figures.json` shows, on the demo (checked against the emulator's ledger and
events) and on a hand-made store with re-scans, stalls, failures and held pages."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

import pandas as pd
import pytest
from datafakes import T0, FakeService
from report_stores import three_days, trouble
from short_demo import Demo

import toolkit as tk
from toolkit import metrics
from toolkit.analysis.observed import Observed
from toolkit.reporting.explanations import COLUMNS, EXPLAINED, HOW, recount
from toolkit.reporting.figures import FIGURES, Figures, figures
from toolkit.store import SnapshotStore


def test_explain_opens_every_headline_figure_of_the_registry():
    headline = [name for name in metrics.FIGURES if name in FIGURES]
    assert [name for name in EXPLAINED if name in FIGURES] == headline == list(FIGURES)


def sums_match(store: SnapshotStore, shown: dict, **period: str) -> dict[str, pd.DataFrame]:
    """Assert each figure's explanation sums, per project and in total, to `shown`
    (figures.json's content); returns the explanations."""
    explained = {}
    for name in FIGURES:
        rows = tk.explain(store, name, **period)
        assert list(rows.columns) == COLUMNS
        assert (rows["figure"] == name).all() and rows["counts"].all()
        assert rows["value"].dtype == pd.Int64Dtype(), name  # whole where the figure is
        per_project = rows.groupby("project_id")["value"].sum()
        for project in shown["projects"]:
            assert per_project.get(project["project_id"], 0) == project[name], (name, project)
        assert rows["value"].sum() == shown["totals"][name], name
        assert rows["rule"].notna().all() and rows["source"].notna().all()
        explained[name] = rows
    return explained


def test_the_demo_s_explanations_sum_to_figures_json_and_agree_with_the_ledger(demo: Demo):
    store = SnapshotStore(str(demo.out / "snapshots"))
    shown = json.loads((demo.out / "figures.json").read_text())
    explained = sums_match(store, shown)
    assert all(len(explained[name]) for name in ("credits", "lines", "needs_action"))

    # Every charge row is a ledger charge of its chapter, credits and re-run part alike.
    # The demo stamps its snapshots with the emulator's clock, after the hour's work: a
    # charge at the baseline's instant came after it, one at the last snapshot's before.
    baseline, end = (pd.Timestamp(shown["period"][key]) for key in ("start", "end"))
    charges = [c for c in demo.day.ledger["charges"] if baseline <= pd.Timestamp(c["at"]) <= end]
    paid = Counter[str]()
    again = Counter[str]()
    for charge in charges:
        paid[charge["chapterId"]] += charge["credits"]
        if charge["rework"] or charge["chapterId"] in demo.day.reuploaded:
            again[charge["chapterId"]] += charge["credits"]
    assert by_chapter(explained["credits"]) == dict(paid)
    rework = by_chapter(explained["rework_credits"])
    assert {c: v for c, v in rework.items() if c not in demo.day.reuploaded} == {
        c: v for c, v in again.items() if c not in demo.day.reuploaded and v
    }

    # Every line row is the ledger's lines of its chapter and language. Lines translated
    # at the baseline's instant are in the baseline's coverage (the emulator worked
    # before the snapshot was read), unlike charges at that instant (uploads after it).
    lines = Counter[tuple[str, str]]()
    for entry in demo.day.ledger["lines"]:
        if baseline < pd.Timestamp(entry["at"]) <= end:
            lines[(entry["chapterId"], entry["languageCode"])] += entry["lines"]
    rows = explained["lines"].groupby(["chapter_id", "language_code"])["value"].sum()
    seen = {key: int(v) for key, v in rows.items()}
    # A re-scan between two snapshots hides what its run had done before it: the store
    # sees the coverage once, so a re-scanned chapter's rows are at most the ledger's.
    redone = {c["chapterId"] for c in charges if c["reason"] == "rescan"}
    assert {k: v for k, v in seen.items() if k[0] not in redone} == {
        k: v for k, v in lines.items() if v and k[0] not in redone
    }
    assert all(0 < seen[key] <= lines[key] for key in seen)

    # Runs that failed, stalled or finished: each an event the emulator sent.
    sent = [json.loads(d["body"]) for d in demo.day.deliveries]
    ended = {(e["type"], e["data"]["chapterId"], pd.Timestamp(e["timestamp"])): e for e in sent}
    # The run times' rows too: each a run that finished (median_cycle_hours' inputs).
    explained["median_cycle_hours"] = tk.explain(store, "median_cycle_hours")
    for name, kind in (("runs_failed", "chapter.failed"), ("runs_stalled", "chapter.failed"),
                       ("chapters_finished", "chapter.finished"),
                       ("median_cycle_hours", "chapter.finished")):  # fmt: skip
        for row in explained[name].itertuples():
            event = ended.get((kind, row.chapter_id, row.finished_at))
            assert event is not None or row.chapter_id in {key[1] for key in ended}, row
            if event is not None and kind == "chapter.failed":
                stalled = "stalled" in (event["data"].get("failureReason") or "")
                assert stalled == (name == "runs_stalled"), (row, event)


def by_chapter(rows: pd.DataFrame) -> dict[str, int]:
    return {str(k): int(v) for k, v in rows.groupby("chapter_id")["value"].sum().items() if v}


def test_a_store_with_rescans_stalls_and_held_pages_is_explained_row_by_row(tmp_path):
    store = trouble(tmp_path / "store")
    shown = json.loads(tk.report(store, tmp_path / "out", format="json").read_text())
    explained = sums_match(store, shown)

    needs = explained["needs_action"].set_index("chapter_id")["rule"]
    assert needs.to_dict() == {
        "c1": tk.analysis.reason_words("held_pages"),
        "c2": tk.analysis.reason_words("stalled"),
        "c3": tk.analysis.reason_words("failed"),
    }
    open_lines = explained["open_lines"]
    assert set(open_lines["source_id"]) == {"c4/en", "c4/fr"}
    assert open_lines["value"].sum() == 8
    rework = explained["rework_credits"]
    assert rework[["source_id", "value"]].values.tolist() == [["c2/2", 2]]
    assert (rework["source"] == "charge").all()
    restarted = explained["lines"][explained["lines"]["chapter_id"] == "c2"]
    assert "re-scan seen: its coverage counts in full" in set(restarted["detail"])
    stalled = explained["runs_stalled"]
    assert stalled[["source_id", "chapter"]].values.tolist() == [["c2/1", "Chapter 1"]]
    assert stalled["rule"].iloc[0] == metrics.FIGURES["runs_stalled"].definition


def test_a_scope_and_a_period_narrow_the_rows_to_their_figure(tmp_path):
    store = trouble(tmp_path / "store")
    since, until = "2026-03-02 11:30", "2026-03-02 13:00"
    figs = figures(store, since=since, until=until)
    by_project = figs.projects.set_index("project")
    for name in FIGURES:
        rows = tk.explain(store, name, project="Moonlit Harbor", since=since, until=until)
        assert rows["value"].sum() == by_project.loc["Moonlit Harbor", name], name
        assert set(rows["project"]) <= {"Moonlit Harbor"}
    french = tk.explain(store, "lines", project="p1", language="fr")
    assert set(french["language_code"]) == {"fr"} and french["value"].sum() > 0


def test_what_explain_cannot_open_is_refused_in_words(tmp_path):
    store = trouble(tmp_path / "store")
    with pytest.raises(ValueError, match=r"does not open .*explain opens these: chapters_finished"):
        tk.explain(store, "verdict")
    with pytest.raises(ValueError, match="not counted per language; leave out language="):
        tk.explain(store, "credits", language="fr")
    with pytest.raises(ValueError, match=r"no project 'Nowhere'.*Moonlit Harbor, Star Courier"):
        tk.explain(store, "credits", project="Nowhere")


def test_a_period_without_data_explains_nothing(tmp_path):
    store = trouble(tmp_path / "store")
    rows = tk.explain(store, "credits", since="2026-03-05", until="2026-03-06")
    assert rows.empty and list(rows.columns) == COLUMNS


# -- every figure of the registry -----------------------------------------------------

# The registry's figures explain does not open, and why (the refusal says it in words):
# texts and moments a table shows beside its figures, per-row values, and figures of
# analyses not opened yet (failure rates, model comparison, the review backlog's counts,
# monthly spend, the unblocked finishes and the credits to finish).
NOT_EXPLAINED = {name for name in metrics.FIGURES if name not in EXPLAINED}


def shown_per_project(
    store: SnapshotStore | Observed, name: str, figs: Figures | None = None, **period: str
) -> dict[str, object]:
    """`name` per project as the surface that shows it reads it: `figures` (figures.json
    and the weekly page), the forecast by project (the spreadsheet's Forecast sheet and
    `toolkit forecast`), the burn-down's last point, the review backlog, the run times."""
    figs = figures(store, **period) if figs is None else figs
    end = figs.period.end
    if name in figs.projects.columns:
        table = figs.projects.set_index("project_id")[name]
        return {str(k): (None if pd.isna(v) else v) for k, v in table.items()}
    if name in tk.analysis.forecast(store, until=end).columns:
        outlook = tk.analysis.forecast(store, by="project_id", until=end).set_index("project_id")
        return {str(k): (None if pd.isna(v) else v) for k, v in outlook[name].items()}
    if name == "open_work_lines":
        burn = tk.analysis.burn_down(store, by="project_id")
        last = burn[burn["snapshot_at"] == end].set_index("project_id")[name]
        return {str(k): int(v) for k, v in last.items()}
    if name == "review_lag_hours":
        backlog = tk.analysis.review_backlog(store, until=end).set_index("project_id")[name]
        return {str(k): (None if pd.isna(v) else float(v)) for k, v in backlog.items()}
    runs = tk.analysis.cycle_times(store, since=figs.period.since, until=figs.period.until)
    how = {"mean_cycle_hours": "mean", "longest_cycle_hours": "max"}[name]
    return {str(k): float(v) for k, v in runs.groupby("project_id")["hours"].agg(how).items()}


def reproduced(store: SnapshotStore, **period: str) -> set[str]:
    """Assert every figure explain opens is remade by `recount` from its rows, per
    project, as its surface shows it; returns the figures known for some project."""
    known = set()
    obs = Observed(store)  # one read of the store and its pipeline for every figure
    figs = figures(obs, **period)
    for name in EXPLAINED:
        rows = tk.explain(obs, name, **period)
        assert list(rows.columns) == COLUMNS and rows["counts"].dtype == bool, name
        for project, value in shown_per_project(obs, name, figs, **period).items():
            mine = rows[rows["project_id"] == project]
            again = recount(mine, name)
            if value is None or (HOW[name] == "sum" and value == 0):
                assert again in (None, 0), (name, project, again)
                continue
            known.add(name)
            if isinstance(value, float):
                assert again == pytest.approx(value, rel=1e-12), (name, project)
            else:
                assert again == value, (name, project, again, value)
    return known


def reviewed_while_translating(root) -> SnapshotStore:
    """Every 4 hours from Mon 09:00: a chapter of 4,800 lines translated at 100 an hour
    (done at hour 48), and in the same project a chapter ready from the start and
    reviewed at hour 32 (the review lag the forecast adds to the finish)."""
    service = FakeService()
    service.add_project("p1", name="Steady", languages=("en",))
    service.add_chapter("c1", "p1", languages=("en",), covered=0, untranslated=4800)
    service.add_chapter("r1", "p1", position=2, languages=("en",), covered=10,
                        processing=False, status="needs_review", activity=T0)  # fmt: skip
    store = SnapshotStore(root)
    for hour in range(0, 72, 4):
        covered = min(100 * hour, 4800)
        service.update("c1", covered=covered, untranslated=4800 - covered,
                       processing=covered < 4800,
                       status="translating" if covered < 4800 else "needs_review",
                       activity=T0 + timedelta(hours=min(hour, 48)))  # fmt: skip
        if hour == 32:
            service.update("r1", status="reviewed", activity=T0 + timedelta(hours=32))
        store.write(tk.pull(service, details="all"), at=T0 + timedelta(hours=hour))
    return store


def test_every_figure_of_the_registry_is_explained_or_refused_in_words(tmp_path, demo: Demo):
    stores = {
        "demo": SnapshotStore(str(demo.out / "snapshots")),
        "re-scans, stalls, held pages": trouble(tmp_path / "trouble"),
    }
    known = set()
    for store in stores.values():
        known |= reproduced(store)
    # Reviews, and a chapter translating at a known pace: the forecast has a finish
    # and a reviewed finish (hour 40 of three days: the review at hour 32 was seen).
    reviewed = reviewed_while_translating(tmp_path / "reviews")
    known |= reproduced(reviewed, since="2026-03-03 00:00", until="2026-03-04 02:00")
    for name in ("finish_p50", "reviewed_p50", "lines_per_hour", "bins", "review_lag_hours",
                 "median_cycle_hours", "needs_action_lines", "open_work_lines"):  # fmt: skip
        assert name in known, f"no store gave {name} a value to check"
    for name in NOT_EXPLAINED:
        with pytest.raises(ValueError, match="a figure explain does not open"):
            tk.explain(reviewed, name)


def test_a_median_is_the_median_of_the_rows_that_count(tmp_path):
    store = three_days(tmp_path / "store")
    rows = tk.explain(store, "median_cycle_hours")
    assert rows["counts"].all() and (rows["source"] == "run").all()
    assert recount(rows) == rows["value"].median() == figures(store).totals["median_cycle_hours"]
    finish = tk.explain(store, "finish_p50", until="2026-03-03 14:00")
    assert len(finish) == 1 and finish["chapter_id"].iloc[0] == "c1"
    row = finish.iloc[0]
    assert row["finished_at"] == row["at"] + pd.Timedelta(hours=float(row["value"]))
    assert "lines left" in row["detail"] and "pace" in row["detail"]
