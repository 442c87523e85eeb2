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
from toolkit.formatting import count
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_demo_s_other_figures_agree_with_the_ledger_and_the_events(demo: Demo):
    """The rows of the figures opened beyond the headline ones, row by row against what
    the emulator charged and sent: the month's charges, runs and their outcomes, re-runs
    by cause, lead times."""
    store = SnapshotStore(str(demo.out / "snapshots"))
    shown = json.loads((demo.out / "figures.json").read_text())
    baseline, end = (pd.Timestamp(shown["period"][key]) for key in ("start", "end"))
    charges = [c for c in demo.day.ledger["charges"] if baseline <= pd.Timestamp(c["at"]) <= end]
    obs = Observed(store)
    # The month's spend (the demo's day is one month's): each chapter's charges.
    paid = Counter[str]()
    for charge in charges:
        paid[charge["chapterId"]] += charge["credits"]
    assert by_chapter(tk.explain(obs, "this_month")) == dict(paid)
    assert by_chapter(tk.explain(obs, "change")) == dict(paid)  # last month: none
    # Every run that ended: the event the emulator sent at its end, of its outcome.
    sent = [json.loads(d["body"]) for d in demo.day.deliveries]
    ends = {(e["data"]["chapterId"], pd.Timestamp(e["timestamp"])): e for e in sent
            if e["type"] in ("chapter.finished", "chapter.failed")}  # fmt: skip
    rates = tk.explain(obs, "failure_rate")
    assert len(rates) and (rates["denominator"] == 1).all()
    matched = 0
    for row in rates.itertuples():
        event = ends.get((row.chapter_id, row.finished_at))
        if event is None:  # an end the store saw at a snapshot, not by its event
            continue
        matched += 1
        assert (event["type"] == "chapter.failed") == (row.value == 1), (row, event)
    assert matched
    when = figures(obs).period
    whole = tk.analysis.failure_rates(obs, by=None, since=when.since, until=when.until)
    assert recount(rates) == pytest.approx(whole["failure_rate"].iloc[0], rel=1e-12)
    # Re-runs by cause: the re-run charges, each put down to one cause; a cause after a
    # failure is a chapter the emulator sent a failure for, stalled or not as it said.
    causes = pd.concat([tk.explain(obs, f"rework_{c}") for c in ("stalled", "failed", "rescan")])
    assert by_chapter(causes) == by_chapter(tk.explain(obs, "rework_credits"))
    failed = {(e["data"]["chapterId"], "stalled" in (e["data"].get("failureReason") or ""))
              for e in sent if e["type"] == "chapter.failed"}  # fmt: skip
    for row in causes.itertuples():
        if row.figure != "rework_rescan":
            assert (row.chapter_id, row.figure == "rework_stalled") in failed, row
    # Lead times: each chapter became reviewable when the emulator said it finished.
    finished = {(e["data"]["chapterId"], pd.Timestamp(e["timestamp"])) for e in sent
                if e["type"] == "chapter.finished"}  # fmt: skip
    leads = tk.explain(obs, "lead_hours_p50")
    assert len(leads)
    assert all(
        (row.chapter_id, row.finished_at) in finished or row.chapter_id in {c for c, _ in finished}
        for row in leads.itertuples()
    )


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


def test_a_column_s_other_name_explains_its_figure(tmp_path):
    """The forecast's `remaining_lines` column is the registry's `open_lines`: asked by
    the name the user reads in the frame, explain gives that figure's rows, which sum
    to the forecast's column."""
    store = trouble(tmp_path / "store")
    rows = tk.explain(store, "remaining_lines")
    pd.testing.assert_frame_equal(rows, tk.explain(store, "open_lines"))
    assert set(rows["figure"]) == {"open_lines"}
    assert rows["value"].sum() == tk.analysis.forecast(store)["remaining_lines"].sum() == 8


def test_what_explain_cannot_open_is_refused_in_words(tmp_path):
    store = trouble(tmp_path / "store")
    with pytest.raises(
        ValueError,
        match=r"'verdict' is a text shown beside a figure, not a "
        r"number; explain `failure_rate`.* Explain opens these: chapters_finished",
    ):
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

# The registry's figures explain does not open: texts and moments a table shows beside
# its figures, per-row values, live counts and the forecast's waiting work (each refusal
# says why in words, `REFUSED`).
NOT_EXPLAINED = {name for name in metrics.FIGURES if name not in EXPLAINED}
# The model comparison's figures, made per stratum and model (`compare_models`).
COMPARED = {"ended_runs": "ended_runs", "pages": "pages", "hours_per_page": "hours_per_page",
            "credits_per_page_language": "credits_per_page_language",
            "credits_per_chapter_language": "credits_per_chapter_language",
            "failure_rate": "failure_rate", "stalled_rate": "stall_rate"}  # fmt: skip
MONTHLY = ("this_month", "last_month", "change", "this_month_rework", "last_month_rework")
ALL = "(all projects)"  # a figure shown for the whole workspace only


def per_id(table: pd.Series) -> dict[str, object]:
    return {str(k): (None if pd.isna(v) else v) for k, v in table.items()}


def plotted(ax, end: pd.Timestamp) -> dict[str, float]:
    """A plot's value per project name: a line's point at `end`, or a bar's stacked total
    (the bars are drawn at the latest snapshot)."""
    if ax.containers:
        names = [t.get_text() for t in ax.get_yticklabels()]
        return {n: float(sum(c.datavalues[k] for c in ax.containers)) for k, n in enumerate(names)}
    at = end.tz_convert(None).to_datetime64()
    return {
        line.get_label(): float(line.get_ydata()[list(line.get_xdata()).index(at)])
        for line in ax.get_lines()
    }


def shown_per_project(
    store: SnapshotStore | Observed, name: str, figs: Figures | None = None, **period: str
) -> dict[str, object]:
    """`name` per project id (or for the whole workspace: `ALL`) as the surface that shows
    it reads it: `figures` (figures.json and the weekly page), the weekly page's re-runs by
    cause and review backlog, failure rates, the forecast by project (the spreadsheet's
    Forecast sheet and `toolkit forecast`), the burn-down's last point, the plots of lines
    to date and of chapters by state, lead times as the throughput notebook takes them,
    the run times, the month's spend and the forecast's track record."""
    import matplotlib.pyplot as plt

    from toolkit import plots
    from toolkit.analysis.review import review_backlog
    from toolkit.reporting.figures import TICK
    from toolkit.reporting.rework_causes import rework_causes

    figs = figures(store, **period) if figs is None else figs
    when = figs.period
    end, since, until = when.end, when.since, when.until
    projects = figs.projects.set_index("project_id")
    if name in projects.columns:
        return per_id(projects[name])
    if name == "new_credits":
        return per_id(projects["credits"] - projects["rework_credits"])
    if name == "rework_share":
        return per_id((projects["rework_credits"] / projects["credits"]).astype("Float64"))
    if name.startswith("rework_"):
        causes = rework_causes(observe_of(store), when)
        return {str(k): float(v) for k, v in causes[name].items()}
    if name in ("runs", "finished", "failure_rate", "stalled_rate"):
        rates = tk.analysis.failure_rates(store, since=since, until=until)
        return per_id(rates.set_index("project_id")[name])
    if name in ("needs_review", "oldest_wait_hours", "reviews_per_day"):
        backlog = review_backlog(store, window=(until - since).ceil("D"), until=until - TICK)
        return per_id(backlog.set_index("project_id")[ALIASES_BACK.get(name, name)])
    if name in ("lead_hours_p50", "lead_hours_p90"):
        leads = tk.analysis.lead_times(store, since=since, until=until)
        q = 0.5 if name == "lead_hours_p50" else 0.9
        return per_id(leads.groupby(leads["project_id"].astype(object))["hours"].quantile(q))
    if name in ("lines_to_date", "chapters"):
        if name == "chapters" and end != observe_of(store).times[-1]:
            return {}  # the bars stand at the latest snapshot only
        draw = plots.progress if name == "lines_to_date" else plots.status_breakdown
        ax = draw(store, top=1000)
        by_name = plotted(ax, end)
        plt.close(ax.figure)
        ids = projects.reset_index().set_index("project")["project_id"]
        return {str(ids[n]): v for n, v in by_name.items() if n in ids.index}
    if name in ("replays", "inside", "inside_share"):  # the weekly page's track record
        record = tk.analysis.forecast_accuracy(store, since=since, until=until, tz=when.tz)
        return per_id(record.set_index("project_id")[name])
    if name in MONTHLY:
        month = tk.analysis.monthly_spend(store, until=end, tz=when.tz).iloc[0]
        return {ALL: None if pd.isna(month[name]) else float(month[name])}
    if name in tk.analysis.forecast(store, until=end).columns:
        outlook = tk.analysis.forecast(store, by="project_id", until=end).set_index("project_id")
        return per_id(outlook[name])
    if name == "open_work_lines":
        burn = tk.analysis.burn_down(store, by="project_id")
        last = burn[burn["snapshot_at"] == end].set_index("project_id")[name]
        return {str(k): int(v) for k, v in last.items()}
    if name == "review_lag_hours":
        backlog = tk.analysis.review_backlog(store, until=end).set_index("project_id")[name]
        return {str(k): (None if pd.isna(v) else float(v)) for k, v in backlog.items()}
    runs = tk.analysis.cycle_times(store, since=since, until=until)
    how = {"mean_cycle_hours": "mean", "longest_cycle_hours": "max"}[name]
    return {str(k): float(v) for k, v in runs.groupby("project_id")["hours"].agg(how).items()}


ALIASES_BACK = {"needs_review": "waiting"}


def observe_of(store: SnapshotStore | Observed) -> Observed:
    return store if isinstance(store, Observed) else Observed(store)


def compared(store: Observed, figs: Figures) -> pd.DataFrame:
    """The model comparison of the figures' period, as `tk.analysis.compare_models` shows it."""
    return tk.analysis.compare_models(store, since=figs.period.since, until=figs.period.until)


def shown_per_group(table: pd.DataFrame, name: str) -> dict[str, object]:
    """A model comparison's figure per stratum and model (`table`: `compared`), keyed as
    each row's `detail` names its group (`model M; comic, 2 steps, 3 languages`)."""
    return {
        f"model {row.model}; {row.kind}, {row.process_steps} steps, "
        f"{count(int(row.languages), 'language')}": (
            None if pd.isna(getattr(row, COMPARED[name])) else getattr(row, COMPARED[name])
        )
        for row in table.itertuples(index=False)
    }


def agrees(name: str, mine: pd.DataFrame, value: object, where: object) -> bool:
    """Assert `recount` of `mine` is `value` as its surface shows it; whether it was known."""
    again = recount(mine, name)
    if value is None or (HOW[name] == "sum" and value == 0):
        assert again in (None, 0), (name, where, again)
        return False
    if isinstance(value, float):
        assert again == pytest.approx(value, rel=1e-12), (name, where, again, value)
    else:
        assert again == value, (name, where, again, value)
    return True


def reproduced(store: SnapshotStore, **period: str) -> set[str]:
    """Assert every figure explain opens is remade by `recount` from its rows, per
    project (per stratum and model for the model comparison, for the whole workspace for
    the month's spend), as its surface shows it; returns the figures known somewhere."""
    found = set()
    obs = Observed(store)  # one read of the store and its pipeline for every figure
    figs = figures(obs, **period)
    table = compared(obs, figs)  # the comparison's figures share one table
    for name in EXPLAINED:
        rows = tk.explain(obs, name, **period)
        assert list(rows.columns) == COLUMNS and rows["counts"].dtype == bool, name
        if name in COMPARED:
            group = rows["detail"].astype(str).str.split("; ", n=1).str[1]
            for key, value in shown_per_group(table, name).items():
                if agrees(name, rows[(group == key).to_numpy(bool)], value, key):
                    found.add(name)
            if name not in ("failure_rate", "stalled_rate"):
                continue
        for project, value in shown_per_project(obs, name, figs, **period).items():
            mine = rows if project == ALL else rows[rows["project_id"] == project]
            if agrees(name, mine, value, project):
                found.add(name)
    return found


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


def across_months(root) -> SnapshotStore:
    """Daily at 10:00 from Thu 26 Feb: a chapter uploaded on the 27th (6 credits) and
    re-scanned on the 28th (6 more, all re-run), a second uploaded on 1 March (4 credits)
    and re-scanned on Mon 2 March (4 more): both months have spend and re-run spend."""
    service = FakeService()
    service.add_project("p1", name="Two Months", languages=("en",))
    store = SnapshotStore(root)

    def take(day: int) -> None:
        store.write(tk.pull(service, details="all"), at=T0 + timedelta(days=day, hours=1))

    take(-4)
    service.add_chapter("c1", "p1", pages=3, credits=6, covered=4, languages=("en",),
                        created=T0 - timedelta(days=3))  # fmt: skip
    take(-3)
    service.update("c1", credits=12, covered=1)  # a re-scan: paid again for its 3 pages
    take(-2)
    service.add_chapter("c2", "p1", position=2, pages=2, credits=4, covered=1, languages=("en",),
                        created=T0 - timedelta(days=1))  # fmt: skip
    take(-1)
    service.update("c2", credits=8, covered=0)
    take(0)
    return store


@pytest.mark.slow  # 12 s: every figure of the registry over the demo (the default group's budget)
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
    known |= reproduced(across_months(tmp_path / "months"))
    for name in ("finish_p50", "reviewed_p50", "lines_per_hour", "bins", "review_lag_hours",
                 "median_cycle_hours", "needs_action_lines", "open_work_lines", "runs",
                 "finished", "failure_rate", "stalled_rate", "rework_share", "rework_stalled",
                 "rework_rescan", "new_credits", "lines_to_date", "chapters", "needs_review",
                 "oldest_wait_hours", "reviews_per_day", "lead_hours_p50", "lead_hours_p90",
                 "this_month", "change", "this_month_rework", "pages", "ended_runs",
                 "hours_per_page", "credits_per_page_language", "last_month",
                 "last_month_rework", "unblocked_p10", "unblocked_p50", "unblocked_p90",
                 "credits_to_finish", "credits_to_finish_p10",
                 "credits_to_finish_p90", "replays", "inside", "inside_share"):  # fmt: skip
        assert name in known, f"no store gave {name} a value to check"
    for name in NOT_EXPLAINED:
        with pytest.raises(ValueError, match=f"'{name}' is .*, so explain does not open it"):
            tk.explain(reviewed, name)


@pytest.mark.slow
def test_a_median_is_the_median_of_the_rows_that_count(tmp_path):
    store = three_days(tmp_path / "store")
    rows = tk.explain(store, "median_cycle_hours")
    assert rows["counts"].all() and (rows["source"] == "run").all()
    assert recount(rows) == rows["value"].median() == figures(store).totals["median_cycle_hours"]
    finish = tk.explain(store, "finish_p50", until="2026-03-03 14:00")
    # The chapter's finish counts; its project's tail allowance is listed, in words.
    assert finish["source"].tolist() == ["chapter", "tail"]
    assert finish["counts"].tolist() == [True, False] and finish["chapter_id"].iloc[0] == "c1"
    assert finish["detail"].iloc[1].startswith("tail allowance of comic with full steps, ")
    assert recount(finish) == finish["finished_at"].iloc[0]
    row = finish.iloc[0]
    assert row["finished_at"] == row["at"] + pd.Timedelta(hours=float(row["value"]))
    assert "lines left" in row["detail"] and "pace" in row["detail"]


@pytest.mark.slow
def test_a_pace_lists_the_samples_it_was_learned_from(tmp_path):
    """A chapter translating 100 lines an hour, sampled every 4 hours: the pace's rows are
    the chapter (which counts) and the forecast's daily samples (which do not), each 100
    lines an hour; the samples' rows are as many as the forecast's `bins`."""
    store = reviewed_while_translating(tmp_path / "store")
    period = {"since": "2026-03-03 00:00", "until": "2026-03-04 02:00"}
    pace = tk.explain(store, "lines_per_hour", **period)
    samples = pace[pace["source"] == "pace sample"]
    assert not samples["counts"].any() and pace.loc[~pace.index.isin(samples.index), "counts"].all()
    assert samples["value"].tolist() == [100, 100, 100]
    assert samples["source_id"].tolist() == ["c1@2026-03-02", "c1@2026-03-03", "c1@2026-03-04"]
    assert recount(pace) == 100
    bins = tk.explain(store, "bins", **period)
    assert recount(bins) == (bins["source"] == "pace sample").sum() == 3
