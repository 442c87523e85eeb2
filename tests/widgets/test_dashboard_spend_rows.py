"""The Dashboard opens the count its spend line shows: "Rows behind it" lists this week's
charges from the store and each chapter's rise since the latest snapshot, and they add
up to the week's credits on the line (and to the emulator's ledger)."""

from __future__ import annotations

import re
from datetime import datetime
from html import unescape

from toolkit.store import SnapshotStore
from toolkit.widgets import Dashboard


def _charged(emulator, workspace, after: datetime | None = None) -> float:
    found = emulator.ledger(workspace["id"])["charges"]
    return sum(
        c["credits"] for c in found if after is None or datetime.fromisoformat(c["at"]) > after
    )


def test_rows_behind_the_week_s_spend_add_up_to_it(
    emulator, workspace, comic_project, novel_project, client, pages, tmp_path
):
    store = SnapshotStore(str(tmp_path / "snapshots"))
    store.take(client, at=emulator.now())  # the baseline
    client.create_chapter(comic_project["id"], pages=pages)  # 6 credits, in the store
    emulator.advance(600)
    taken = store.take(client).snapshot_at
    emulator.advance(60)
    client.create_chapter(novel_project["id"], text="Line one.\nLine two.\n" * 50)
    emulator.advance(25 * 60)
    dash = Dashboard(client, store=store)
    week = float(
        re.search(r"this week: <b>([\d,]+)</b>", dash.spend.value).group(1).replace(",", "")
    )
    assert week == _charged(emulator, workspace)

    dash.spend_rows_button.click()
    shown = unescape(dash.spend_rows.value)
    live = _charged(emulator, workspace, after=taken)
    assert live > 0
    assert f"This week's {week:,.0f} credits: 1 charge in the store" in shown
    assert "1 chapter risen since its latest snapshot" in shown
    cells = re.findall(r'class="data row(\d+) col\d+" >([^<]*)</td>', shown)
    rows: dict[str, list[str]] = {}
    for row, text in cells:
        rows.setdefault(row, []).append(text)
    by_source = {cells[2]: float(cells[-1]) for cells in rows.values()}  # source -> credits
    assert by_source == {"charge": 6.0, "live": live}
    assert sum(by_source.values()) == week
    dash.spend_rows_button.click()  # a second click hides the rows
    assert dash.spend_rows.value == ""
