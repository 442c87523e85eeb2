from __future__ import annotations

import io
from datetime import timedelta

import matplotlib
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pandas as pd
import pytest
from datafakes import T0, FakeService
from matplotlib.lines import Line2D
from report_stores import two_days

import toolkit as tk
from toolkit import analysis, plots
from toolkit.reporting.page import daily_plot
from toolkit.reporting.weekly import gather
from toolkit.store import SnapshotStore

HELPERS = ["progress", "throughput", "credit_spend", "status_breakdown", "cycle_times"]
TIME_AXES = {"progress", "throughput", "credit_spend"}


@pytest.fixture(autouse=True)
def no_show(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a plot helper called plt.show()")

    monkeypatch.setattr(plt, "show", refuse)
    yield
    plt.close("all")


def build_store(root, *, projects: int) -> SnapshotStore:
    """Hourly snapshots of `projects` projects whose chapters translate, finish and fail."""
    service = FakeService()
    for p in range(projects):
        service.add_project(f"p{p}", name=f"Series {p}", languages=("en", "fr"))
    store = SnapshotStore(root)
    for hour in range(6):
        for p in range(projects):
            if hour < 3:
                pages, created = 2 + p % 3, T0 + timedelta(hours=hour)
                service.add_chapter(f"c{p}-{hour}", f"p{p}", position=hour + 1, pages=pages,
                                    credits=2 * pages, created=created)  # fmt: skip
        for cid, chapter in service.chapters.items():
            if chapter["processing"]:
                covered = chapter["languages"][0]["covered"] + 10 + hash(cid) % 7
                done = covered >= 30
                service.update(cid, covered=min(covered, 30), processing=not done,
                               status="needs_review" if done else "translating")  # fmt: skip
        if hour == 4:
            service.update("c0-2", failed=True, processing=False, reason="The run failed.")
        store.write(tk.pull(service, details="none"), at=T0 + timedelta(hours=hour))
    return store


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> SnapshotStore:
    return build_store(tmp_path_factory.mktemp("small"), projects=3)


@pytest.fixture(scope="module")
def big_store(tmp_path_factory) -> SnapshotStore:
    return build_store(tmp_path_factory.mktemp("big"), projects=100)


def assert_readable(ax, name: str) -> None:
    assert ax.get_title()
    assert ax.get_xlabel() and ax.get_ylabel()
    if name in TIME_AXES:
        assert ax.get_xlabel() == "time (UTC)"
        assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png")
    assert buffer.getvalue().startswith(b"\x89PNG")


@pytest.mark.parametrize("name", HELPERS)
def test_each_helper_draws_a_labelled_figure_from_a_store(small_store, name):
    ax = getattr(plots, name)(small_store)
    assert isinstance(ax, matplotlib.axes.Axes)
    assert_readable(ax, name)
    assert ax.has_data()


@pytest.mark.parametrize("name", HELPERS)
def test_each_helper_draws_on_the_axes_it_is_given(small_store, name):
    _, axes = plt.subplots(1, 2)
    assert getattr(plots, name)(small_store, ax=axes[1]) is axes[1]
    assert not axes[0].has_data()


@pytest.mark.parametrize("name", ["progress", "throughput", "credit_spend", "status_breakdown"])
def test_a_hundred_projects_stay_legible_as_top_n_and_other(big_store, name):
    ax = getattr(plots, name)(big_store)
    labels = ax.get_legend_handles_labels()[1]
    assert len(labels) <= 16  # a readable legend whatever the number of projects
    if name == "status_breakdown":
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert len(labels) == 16 and labels[0] == "other"
    elif name != "throughput":  # throughput is by language here
        assert "other" in labels and "Series 1" in "".join(labels)


def test_helpers_take_the_frames_the_analysis_returns(small_store):
    spend = analysis.credit_spend(small_store, freq="1h", by="language_code")
    ax = plots.credit_spend(spend, freq="1h")
    assert "in each hour, by language" in ax.get_title()
    assert "credits spent on re-runs" in ax.get_legend_handles_labels()[1]  # its label
    lines = analysis.throughput(small_store, freq="1h", by="project_id")
    ax = plots.throughput(lines)
    assert set(ax.get_legend_handles_labels()[1]) == {
        "p0",
        "p1",
        "p2",
    }  # ids: no store to name them
    ax = plots.cycle_times(analysis.cycle_times(small_store))
    assert "runs finished" in ax.get_title()
    ax = plots.status_breakdown(small_store.latest("chapters"))
    assert "failed" in ax.get_legend_handles_labels()[1]
    ax = plots.progress(small_store.history("languages"))
    assert len(ax.get_lines()) == 3


def test_the_states_at_a_past_moment_are_those_its_snapshot_found(small_store):
    # Chapter c0-2 failed at the fifth snapshot (hour 4): at hour 2 it had not.
    at = T0 + timedelta(hours=2, minutes=30)
    ax = plots.status_breakdown(small_store, at=at)
    assert ax.get_title().endswith(f"at {T0 + timedelta(hours=2):%Y-%m-%d %H:%M} UTC")
    assert sum(bar.get_width() for bar in ax.patches) == len(small_store.as_of("chapters", at))
    assert "failed" not in ax.get_legend_handles_labels()[1]
    assert "failed" in plots.status_breakdown(small_store).get_legend_handles_labels()[1]
    both = plots.status_breakdown({"a": small_store, "b": small_store}, at=at)
    assert sum(bar.get_width() for bar in both.patches) == 2 * len(
        small_store.as_of("chapters", at)
    )
    assert not plots.status_breakdown(small_store, at=T0 - timedelta(hours=1)).patches
    with pytest.raises(ValueError, match="`at` picks a snapshot of a store"):
        plots.status_breakdown(small_store.latest("chapters"), at=at)


def test_throughput_bars_add_up_to_the_analysis(small_store):
    ax = plots.throughput(small_store)
    drawn = sum(bar.get_height() for bar in ax.patches)
    assert drawn == analysis.throughput(small_store)["lines"].sum()


def test_an_empty_store_still_gives_a_labelled_figure(tmp_path):
    store = SnapshotStore(tmp_path)
    for name in HELPERS:
        ax = getattr(plots, name)(store)
        assert ax.get_title()


def test_a_project_keeps_its_colour_in_every_plot(tmp_path):
    store = two_days(tmp_path / "store")  # three projects, one without any work
    colors = plots.project_colors(["Star Courier", "Moonlit Harbor", "Quiet Isles"])
    assert list(colors.values()) == list(plots._PALETTE[:3])  # in name order
    # A plot that shows some projects colours them as one that shows all of them.
    assert plots.project_colors(["Quiet Isles", "Star Courier", "Moonlit Harbor"]) == colors
    drawn = {
        "progress": plots.progress(store),
        "throughput": plots.throughput(store, by="project_id", freq="1h"),
        "credit_spend": plots.credit_spend(store, freq="1h"),
        "weekly page": daily_plot(gather(store), "lines").axes[0],
    }
    for name, ax in drawn.items():
        handles, labels = ax.get_legend_handles_labels()
        seen = {label.split(",")[0]: handle for handle, label in zip(handles, labels, strict=True)}
        shown = {label: seen[label] for label in colors if label in seen}
        assert shown, name
        for label, handle in shown.items():
            assert matplotlib.colors.same_color(drawn_color(handle), colors[label]), (name, label)


def drawn_color(handle):
    """The colour of a legend handle: a line's, bars', or an area's."""
    if hasattr(handle, "patches"):
        return handle.patches[0].get_facecolor()
    if isinstance(handle, Line2D):
        return handle.get_color()
    return handle.get_facecolor()[0]


def test_the_weekly_page_draws_the_largest_projects_and_the_rest_as_other(big_store):
    weekly = gather(big_store)
    ax = daily_plot(weekly, "lines").axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert len(labels) == plots.TOP + 1 and labels[-1] == plots.OTHER
    # Every project's lines are still drawn: the stacks add up to the day's lines.
    tops: dict[float, float] = {}
    for bar in ax.patches:
        x = round(bar.get_x() + bar.get_width() / 2, 6)
        tops[x] = max(tops.get(x, 0.0), bar.get_y() + bar.get_height())
    per_day = weekly.days.groupby("day")["lines"].sum().sort_index()
    assert sorted(tops.values()) == pytest.approx(sorted(per_day.astype(float)))


def test_the_weekly_pages_rework_bars_keep_the_largest_projects_and_sum_the_rest():
    from toolkit.reporting.page import _largest_rework
    from toolkit.reporting.rework_causes import CAUSES

    projects = pd.DataFrame({"project": [f"Series {n}" for n in range(12)]})
    for k, cause in enumerate(CAUSES):
        projects[f"rework_{cause}"] = [float(n + k) for n in range(12)]
    projects["rework_credits"] = projects[[f"rework_{c}" for c in CAUSES]].sum(axis=1)
    shown = _largest_rework(projects)
    assert list(shown["project"]) == [f"Series {n}" for n in range(11, 3, -1)] + ["other"]
    assert shown["rework_credits"].sum() == projects["rework_credits"].sum()
    assert shown.iloc[-1]["rework_stalled"] == sum(range(4))


def test_a_part_day_is_marked_on_the_plot_as_on_the_page(small_store):
    # Six hourly snapshots of one day: the day's bar covers only part of it.
    ax = plots.credit_spend(small_store, freq="1D")
    assert "(* part-day)" in ax.get_title()
    assert [t.get_text() for t in ax.texts] == ["*"]
    assert ax.get_ylabel() == "credits spent in each day"
    hourly = plots.credit_spend(small_store, freq="1h")  # a bin per snapshot: none partial
    assert "*" not in hourly.get_title() and not hourly.texts


def test_progress_says_it_is_a_running_total(small_store):
    assert "running total" in plots.progress(small_store).get_ylabel()


def test_the_burn_downs_forecast_is_drawn_on_the_time_axis_where_the_title_says(small_store):
    ax = plots.burn_down(small_store)
    dots = [line for line in ax.get_lines() if line.get_marker() == "o"]
    title = ax.get_title(loc="left")
    assert title.startswith("All open lines, those waiting for a person included, by project")
    if "dashed: open lines that go on by themselves, to a dot" in title:
        assert dots and all(list(line.get_ydata()) == [0] for line in dots)
    else:
        assert not dots  # no pace: no forecast drawn, and the title promises none
    assert ax.get_ylabel() == "all open lines, those waiting for a person included"
