"""Benchmark 7: the Dashboard switching to a 150-chapter project at 50 ms of latency.

The emulator runs in this process with two projects: one of 3 chapters, one of 150
(most finished, some failed, some running, some staged), and `latencyMs=50` on every
answer. The Dashboard runs in a separate process, as a notebook's kernel would, shows
the small project, and is then switched to the big one: the time from the switch to the
table drawn is what a production lead waits. It is measured with the details fetched
as the Dashboard fetches them (16 at a time) and one at a time (what it did before),
median of `runs`; then a refresh of the big project with nothing changed but the
running chapters. The target is under 1 s for the switch.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from tests.bench.client_side import ClientProcess
from tests.bench.table import Table, spread
from toolkit.emulator import Emulator

LATENCY_MS = 50


@dataclass(frozen=True)
class DashboardOptions:
    chapters: int = 150
    runs: int = 3


def run(options: DashboardOptions) -> list[Table]:
    from tests.page_images import make_page
    from toolkit.client import Client

    with Emulator(clock="manual") as emulator:
        workspace = emulator.create_workspace(name="Dashboard bench", credits=10**6)
        small, big = (_project(emulator, workspace["id"], name) for name in ("Small", "Big"))
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            page = make_page(1)
            emulator.set_faults(failure_rate=0.1, seed=4)
            for _ in range(options.chapters - 10):
                client.create_chapter(big["id"], pages=[page])
            emulator.advance(4 * 3600)
            emulator.set_faults()
            for _ in range(6):
                client.create_chapter(big["id"], pages=[page, make_page(2)])
            for _ in range(4):
                client.create_chapter(big["id"], staged=True)
            emulator.advance(30)  # later, so that the small project is listed (and shown) first
            for _ in range(3):
                client.create_chapter(small["id"], pages=[page])
        emulator.set_faults(latency_ms=LATENCY_MS)
        with ClientProcess() as process:
            figures = process.call(
                time_switches, emulator.url, workspace["apiKey"], big["id"], runs=options.runs
            )
    return [_table(figures, options)]


def _project(emulator: Emulator, workspace_id: str, name: str) -> dict[str, Any]:
    return emulator.create_project(
        workspace_id,
        name=name,
        kind="comic",
        source_language="ja",
        reading_direction="rtl",
        process_steps="full",
        target_languages=["en", "fr"],
    )


def time_switches(url: str, key: str, project_id: str, *, runs: int) -> dict[str, Any]:
    """In the client's process: switch a fresh Dashboard to the project, `runs` times, at
    the Dashboard's concurrency and one request at a time (a benchmark may set the
    module's constant; nothing else does); then time plain refreshes."""
    from toolkit.client import Client
    from toolkit.widgets import Dashboard, _chapters

    figures: dict[str, Any] = {}
    workers = _chapters.CONCURRENCY
    with Client(base_url=url, api_key=key) as client:
        for label, concurrency in (("concurrent", workers), ("sequential", 1)):
            _chapters.CONCURRENCY = concurrency
            times = []
            for _ in range(runs):
                dash = Dashboard(client)
                assert dash.picker.value != project_id, "the small project shows first"
                started = time.perf_counter()
                dash.picker.value = project_id
                times.append(time.perf_counter() - started)
                assert dash.message.tone is None, dash.message.text
                assert (
                    len(dash.chapters) > 100 and dash.table.value.count('class="tk-chapter"') == 25
                )
                figures["details"] = len(dash.chapter_details)
                dash.close()
            figures[label] = times
        _chapters.CONCURRENCY = workers
        dash = Dashboard(client)
        dash.picker.value = project_id
        refreshes = []
        for _ in range(runs):
            started = time.perf_counter()
            dash.refresh()
            refreshes.append(time.perf_counter() - started)
        figures["refresh"] = refreshes
        figures["running"] = sum(bool(c.processing) for c in dash.chapters)
        dash.close()
    return figures


def _table(figures: dict[str, Any], options: DashboardOptions) -> Table:
    table = Table(
        f"7. Dashboard: switch to a {options.chapters}-chapter project at "
        f"{LATENCY_MS} ms latency (median of {options.runs})"
    )
    concurrent = statistics.median(figures["concurrent"])
    sequential = statistics.median(figures["sequential"])
    table.verdict(
        "switch, details 16 at a time",
        f"{concurrent:.2f} s",
        concurrent < 1.0,
        f"under 1 s ({spread(figures['concurrent'])}; {figures['details']} details)",
    )
    table.add("switch, details one at a time", f"{sequential:.2f} s", spread(figures["sequential"]))
    table.add("speed-up", f"{sequential / concurrent:.1f}x")
    table.add(
        "refresh, nothing changed",
        f"{statistics.median(figures['refresh']):.2f} s",
        f"1 list + {figures['running']} running chapters' details",
    )
    return table
