"""The checks as a pure evaluation of a store: a failure-rate jump against its baseline,
due dates against the forecast."""

from __future__ import annotations

import pandas as pd

import toolkit as tk
from toolkit.analysis.due import with_due

CONFIG = """\
store = "{store}"
[workspaces.studio]
base_url = "{url}"
key_env = "WATCH_TEST_KEY"
[checks]
anomaly_period = "1h"
anomaly_baseline = 4
off = ["snapshots", "budget"]
"""


def test_a_failure_rate_jump_is_flagged_with_its_baseline(
    tmp_path, emulator, workspace, comic_project, client, make_page
):
    store = tk.SnapshotStore(tmp_path / "store" / "studio")
    store.take(client)
    for hour in range(5):  # four hours without failures, then one where every run fails
        emulator.set_faults(failure_rate=1.0 if hour == 4 else 0.0, seed=hour)
        for n in range(3):
            client.create_chapter(comic_project["id"], pages=[make_page(10 * hour + n)])
        emulator.advance(1800)
        store.take(client)
        emulator.advance(1800)
        store.take(client)
    path = tmp_path / "watch.toml"
    path.write_text(CONFIG.format(store=tmp_path / "store", url=emulator.url))
    found = tk.watch.checks(store, path)
    jumps = found[found["check"] == "anomaly"]
    (row,) = jumps.itertuples(index=False)
    assert row.subject == "Moonlit Harbor" and row.figures["measure"] == "failure_rate"
    assert row.figures["value"] == 1.0 and row.figures["median"] == 0.0
    assert "failure rate 100% (3 of 3 runs)" in row.message
    assert "against a baseline of 0% (median of 4 hours" in row.message
    assert "<table" in found._repr_html_()


def test_a_due_date_the_p50_finish_passes_is_a_miss_with_how_late():
    frame = pd.DataFrame(
        {
            "project_id": ["p1", "p2", "p3"],
            "project": ["Moonlit Harbor", "River of Stars", "Other"],
            "finish_p50": pd.to_datetime(["2026-12-21 12:00", "2026-12-19 08:00", None], utc=True),
            "finish_p90": pd.to_datetime(["2026-12-22 00:00", "2026-12-21 06:00", None], utc=True),
        }
    )
    out = with_due(frame, {"Moonlit Harbor": "2026-12-20", "p2": "2026-12-20"})
    assert out["will_miss"].tolist() == [True, False, pd.NA]
    assert out["late_hours_p50"].tolist() == [12.0, 0.0, pd.NA]
    assert out["late_hours_p90"].tolist() == [24.0, 6.0, pd.NA]
