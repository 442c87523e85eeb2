"""The weekly page's days in a zone (`tk.report(..., tz=)`, `toolkit report --tz`),
on a history that crosses midnight in Paris an hour before it does in UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from datafakes import FakeService
from html_page import Page

import toolkit as tk
from toolkit.cli import main
from toolkit.reporting.figures import label
from toolkit.reporting.weekly import gather
from toolkit.store import SnapshotStore

# 22:30 UTC on Wednesday 18 Nov is 23:30 in Paris (CET, UTC+1).
BASELINE = datetime(2026, 11, 18, 22, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> SnapshotStore:
    """Lines translated before midnight UTC but after midnight in Paris, then after both."""
    service = FakeService()
    service.add_project("p1", name="Moonlit Harbor", languages=("en",))
    store = SnapshotStore(tmp_path_factory.mktemp("zone") / "store")
    store.write(tk.pull(service), at=BASELINE)
    service.add_chapter("c1", "p1", pages=2, credits=2, covered=10, languages=("en",),
                        created=BASELINE)  # fmt: skip
    store.write(tk.pull(service), at=BASELINE + timedelta(hours=1))  # 23:30 UTC, 00:30 CET
    service.update("c1", covered=25, processing=False, status="needs_review")
    store.write(tk.pull(service), at=BASELINE + timedelta(hours=2))  # 00:30 UTC, 01:30 CET
    return store


def lines_by_day(store: SnapshotStore, tz: str | None) -> dict[str, int]:
    days = gather(store, tz=tz).days
    return {f"{day:%d %b}": int(n) for day, n in zip(days["day"], days["lines"], strict=True)}


def test_days_follow_the_zone_given_and_utc_by_default(store):
    # In UTC the first hour's 10 lines fall on the 18th; in Paris on the 19th.
    assert lines_by_day(store, None) == {"18 Nov": 10, "19 Nov": 15}
    assert lines_by_day(store, "Europe/Paris") == {"19 Nov": 25}


def test_partial_days_and_the_period_label_are_in_the_zone(store):
    utc = gather(store).period
    assert [str(d) for d in utc.partial_days] == ["2026-11-18", "2026-11-19"]
    assert utc.days["covered"].tolist() == ["from 22:30 UTC", "until 00:30 UTC"]
    assert utc.label() == "18-19 Nov"

    paris = gather(store, tz="Europe/Paris").period
    assert [str(d) for d in paris.partial_days] == ["2026-11-18", "2026-11-19"]
    assert paris.days["covered"].tolist() == ["from 23:30 CET", "until 01:30 CET"]
    assert paris.days["day"].tolist() == [
        pd.Timestamp("2026-11-18", tz="Europe/Paris"),
        pd.Timestamp("2026-11-19", tz="Europe/Paris"),
    ]
    assert label("open_lines", paris) == "open lines that go on by themselves at 19 Nov 01:30 CET"
    # The same instants: only how they are shown changed.
    assert (paris.start, paris.end) == (utc.start, utc.end)


def test_the_command_writes_the_page_in_the_zone(store, tmp_path, capsys):
    argv = ["report", "--html", "--store", str(store.root), "--out", str(tmp_path)]
    assert main([*argv, "--tz", "Europe/Paris"]) == 0
    text = (tmp_path / "weekly-report.html").read_text(encoding="utf-8")
    assert "Wed 18 Nov 2026 23:30 to Thu 19 Nov 2026 01:30 CET" in text
    days = [row[0] for row in Page(text).rows if row and row[0].startswith(("Wed", "Thu"))]
    assert days == ["Thu 19 Nov *"]  # every line of the history: after midnight in Paris

    capsys.readouterr()
    assert main([*argv, "--tz", "Europe/Pari"]) != 0
    said = capsys.readouterr().err
    assert "'Europe/Pari' is not a time zone" in said and "Europe/Paris" in said
    assert main(["report", "--store", str(store.root), "--out", str(tmp_path / "png"),
                 "--tz", "Europe/Paris"]) != 0  # fmt: skip
    assert "--tz sets the zone of the weekly page's days (--html)" in capsys.readouterr().err
