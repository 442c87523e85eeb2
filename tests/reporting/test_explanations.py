"""`tk.explain`: every headline figure opened down to its rows, whose values sum to the
figure `figures.json` shows, on the demo (checked against the emulator's ledger and
events) and on a hand-made store with re-scans, stalls, failures and held pages."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pytest
from report_stores import trouble
from test_demo import Demo, demo  # noqa: F401  (the short demo, run once per module)

import toolkit as tk
from toolkit import metrics
from toolkit.reporting.explanations import COLUMNS, EXPLAINED
from toolkit.reporting.figures import FIGURES, figures
from toolkit.store import SnapshotStore


def test_explain_opens_every_headline_figure_of_the_registry():
    headline = [name for name in metrics.FIGURES if name in FIGURES]
    assert list(EXPLAINED) == headline == list(FIGURES)


def sums_match(store: SnapshotStore, shown: dict, **period: str) -> dict[str, pd.DataFrame]:
    """Assert each figure's explanation sums, per project and in total, to `shown`
    (figures.json's content); returns the explanations."""
    explained = {}
    for name in EXPLAINED:
        rows = tk.explain(store, name, **period)
        assert list(rows.columns) == COLUMNS
        assert (rows["figure"] == name).all()
        assert rows["value"].dtype == pd.Int64Dtype(), name  # whole where the figure is
        per_project = rows.groupby("project_id")["value"].sum()
        for project in shown["projects"]:
            assert per_project.get(project["project_id"], 0) == project[name], (name, project)
        assert rows["value"].sum() == shown["totals"][name], name
        assert rows["rule"].notna().all() and rows["source"].notna().all()
        explained[name] = rows
    return explained


def test_the_demo_s_explanations_sum_to_figures_json_and_agree_with_the_ledger(demo: Demo):  # noqa: F811
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
    for name, kind in (("runs_failed", "chapter.failed"), ("runs_stalled", "chapter.failed"),
                       ("chapters_finished", "chapter.finished")):  # fmt: skip
        for row in explained[name].itertuples():
            event = ended.get((kind, row.chapter_id, row.finished_at))
            assert event is not None or row.chapter_id in {key[1] for key in ended}, row
            if event is not None and name != "chapters_finished":
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
    for name in EXPLAINED:
        rows = tk.explain(store, name, project="Moonlit Harbor", since=since, until=until)
        assert rows["value"].sum() == by_project.loc["Moonlit Harbor", name], name
        assert set(rows["project"]) <= {"Moonlit Harbor"}
    french = tk.explain(store, "lines", project="p1", language="fr")
    assert set(french["language_code"]) == {"fr"} and french["value"].sum() > 0


def test_what_explain_cannot_open_is_refused_in_words(tmp_path):
    store = trouble(tmp_path / "store")
    with pytest.raises(ValueError, match="opens the headline figures: chapters_finished"):
        tk.explain(store, "lines_per_hour")
    with pytest.raises(ValueError, match="not counted per language; leave out language="):
        tk.explain(store, "credits", language="fr")
    with pytest.raises(ValueError, match=r"no project 'Nowhere'.*Moonlit Harbor, Star Courier"):
        tk.explain(store, "credits", project="Nowhere")


def test_a_period_without_data_explains_nothing(tmp_path):
    store = trouble(tmp_path / "store")
    rows = tk.explain(store, "credits", since="2026-03-05", until="2026-03-06")
    assert rows.empty and list(rows.columns) == COLUMNS
