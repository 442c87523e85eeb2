"""Benchmarks 1, 2 and 6: pulling a 10,000-chapter workspace, the next snapshot after 1% of
it changed, and whether the emulator keeps up.

The emulator runs in this process, seeded with `projects` x `chapters` finished chapters
in three languages (`seeding`), with `latencyMs` added to every `/api/v1` answer; the
client side runs in its own process (`client_side`).

1. `pull(details="all")` (1 + projects + chapters requests) is timed `runs` times at
   `concurrency` and compared with what it cannot beat, requests x latency /
   concurrency, and with the loop a user writes first: one httpx GET after another. The
   loop is strictly sequential, so its time is its requests times the time of one; it is
   timed over the first `loop_projects` projects (all of them with `full_loop`) and
   scaled to the whole workspace by requests.
2. A snapshot with `details="all"`, then 1% of the chapters change (half reviewed, half
   given a page that starts a run), then `take(details="changed")` in a fresh process:
   its requests against projects + 1 + 1.1 x changed chapters.
3. The emulator on its own: each read route's time with no injected latency, the SQL
   statements one request runs (a fixed number, not one per row) and any full-table scan
   among them, and its CPU time during the pulls against theirs.
"""

from __future__ import annotations

import io
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import httpx

from tests.bench.client_side import (
    ClientProcess,
    naive_loop,
    route_times,
    take_snapshot,
    time_pulls,
)
from tests.bench.seeding import Seeded, seed_workspace
from tests.bench.table import Table, spread
from toolkit.emulator import Emulator
from toolkit.frames.pacing import CEILING


@dataclass(frozen=True)
class PullOptions:
    projects: int = 100
    chapters: int = 100
    latency_ms: int = 20
    concurrency: int = 16
    runs: int = 3
    loop_projects: int = 10
    full_loop: bool = False
    changed_share: float = 0.01
    # Only benchmark 2, with no injected latency: its figure is a count of requests,
    # which latency does not change, so a big workspace is measured in minutes.
    incremental_only: bool = False


def run(options: PullOptions) -> list[Table]:
    if options.incremental_only:
        return [_incremental_alone(options)]
    with Emulator(clock="manual") as emulator, ClientProcess() as client:
        seeded = seed_workspace(emulator, projects=options.projects, chapters=options.chapters)
        emulator_table = _emulator_alone(emulator, client, seeded)
        emulator.set_faults(latency_ms=options.latency_ms)
        pull_table, pulls = _pulls(emulator, client, seeded, options)
        fault_table = _under_faults(emulator, client, seeded, options)
        emulator.set_faults(latency_ms=options.latency_ms)
        incremental_table = _incremental(emulator, client, seeded, options)
    for label, figures in pulls.items():
        wall = statistics.median(figures["times"])
        emulator_table.add(
            f"emulator CPU during {label}",
            f"{statistics.median(figures['server_cpu']) / wall:.0%} of a core",
            f"client process: {statistics.median(figures['cpu']) / wall:.0%} of a core",
        )
    return [pull_table, fault_table, incremental_table, emulator_table]


# -- 1. pull against the loop and the bound -------------------------------------------------


def _pulls(
    emulator: Emulator, client: ClientProcess, seeded: Seeded, options: PullOptions
) -> tuple[Table, dict[str, dict[str, Any]]]:
    table = Table(
        f"1. Pull: {len(seeded.chapter_ids):,} chapters x 3 languages, "
        f"latencyMs={options.latency_ms}"
    )
    latency = options.latency_ms / 1000
    limit = None if options.full_loop else options.loop_projects
    loops = [
        client.call(naive_loop, emulator.url, seeded.api_key, project_limit=limit)
        for _ in range(1 if options.full_loop else options.runs)
    ]
    per_request = statistics.median(loop["seconds"] / loop["requests"] for loop in loops)
    requests = seeded.requests_for_all_details
    loop_seconds = per_request * requests
    sampled = "timed whole" if options.full_loop else f"timed over {loops[0]['requests']:,}"
    table.add(
        "naive loop (sequential httpx GETs)",
        f"{loop_seconds:.1f} s",
        f"{per_request * 1000:.1f} ms a request x {requests:,} requests ({sampled} requests)",
    )
    pulls = {}
    # The default (adaptive) is what the targets are about; a fixed 16 is shown beside it.
    for concurrency in (None, options.concurrency):
        runs = options.runs if concurrency is None else 1
        figures = client.call(
            time_pulls,
            emulator.url,
            seeded.api_key,
            runs=runs,
            concurrency=concurrency,
            server_pid=os.getpid(),
        )
        label = (
            "pull, default (adaptive)"
            if concurrency is None
            else f"pull, concurrency {concurrency}"
        )
        pulls[label] = figures
        wall = statistics.median(figures["times"])
        pace = figures["pace"]
        in_flight = concurrency or pace["peak"]
        table.add(
            label,
            f"{wall:.1f} s",
            f"median of {len(figures['times'])} ({spread(figures['times'])}); "
            f"{figures['requests']:,} requests, {figures['requests'] / wall:.0f}/s"
            + (
                f"; in flight: peak {pace['peak']:.0f} (ceiling {CEILING}), last "
                f"{pace['final']}, {pace['backoffs']} back-offs"
                if concurrency is None
                else ""
            ),
        )
        bound = figures["requests"] * latency / in_flight
        table.add(
            f"  bound at concurrency {in_flight:.0f}",
            f"{bound:.1f} s",
            "requests x latency / concurrency"
            + (" (the peak reached)" if concurrency is None else ""),
        )
        table.verdict(
            "  loop / pull", f"{loop_seconds / wall:.1f}x", loop_seconds / wall >= 10, ">= 10x"
        )
        table.verdict("  pull / bound", f"{wall / bound:.2f}x", wall / bound <= 1.5, "<= 1.5x")
    return table, pulls


def _under_faults(
    emulator: Emulator, client: ClientProcess, seeded: Seeded, options: PullOptions
) -> Table:
    """The default pull with half the answers 503: does it complete, and back off?"""
    table = Table(f"1b. Pull at errorRate=0.5, latencyMs={options.latency_ms}: the default")
    emulator.set_faults(latency_ms=options.latency_ms, error_rate=0.5, seed=1)
    figures = client.call(
        time_pulls,
        emulator.url,
        seeded.api_key,
        runs=1,
        concurrency=None,
        server_pid=os.getpid(),
        details="none",
        warm_up=False,
    )
    pace, wall = figures["pace"], figures["times"][0]
    expected = 1 + len(seeded.project_ids)
    table.verdict(
        "pull(details='none') completes",
        f"{figures['requests']:,} requests",
        figures["requests"] == expected,
        f"all {expected:,} answered",
    )
    table.add(
        "  its time", f"{wall:.1f} s", "default settings; 503s retried by the client and in passes"
    )
    table.verdict(
        "  in flight at the end",
        f"{pace['final']}",
        pace["final"] <= 4,
        f"backed off to <= 4; peak {pace['peak']:.0f}, {pace['backoffs']} back-offs, "
        f"{pace['retries']} attempts answered 503",
    )
    return table


# -- 2. the next snapshot after 1% changed ---------------------------------------------------


def _incremental_alone(options: PullOptions) -> Table:
    with Emulator(clock="manual") as emulator, ClientProcess() as client:
        began = time.perf_counter()
        seeded = seed_workspace(emulator, projects=options.projects, chapters=options.chapters)
        seeding = time.perf_counter() - began
        table = _incremental(emulator, client, seeded, options)
    table.title += f": {len(seeded.chapter_ids):,} chapters in {options.projects:,} projects"
    table.add("seeding the emulator", f"{seeding:.0f} s", "no injected latency in this run")
    return table


def _incremental(
    emulator: Emulator, client: ClientProcess, seeded: Seeded, options: PullOptions
) -> Table:
    table = Table(f"2. Incremental snapshot after {options.changed_share:.0%} of chapters changed")
    with tempfile.TemporaryDirectory(prefix="bench-store-") as root:
        first = client.call(take_snapshot, emulator.url, seeded.api_key, root, details="all")
        table.add(
            "first snapshot, details=all",
            f"{first['seconds']:.1f} s",
            f"{first['requests']:,} requests (pull {first['pull_seconds']:.1f} s)",
        )
        changed = _change(emulator, seeded, share=options.changed_share)
        second = client.call(take_snapshot, emulator.url, seeded.api_key, root, details="changed")
    allowed = len(seeded.project_ids) + 1 + 1.1 * changed
    table.verdict(
        "next snapshot, details=changed: requests",
        f"{second['requests']:,}",
        second["requests"] <= allowed,
        f"<= projects + 1 + 1.1 x {changed} changed = {allowed:.0f}",
    )
    table.add(
        "  its time",
        f"{second['seconds']:.1f} s",
        f"pull {second['pull_seconds']:.1f} s; the rest reads the last snapshot back and writes",
    )
    table.add("  against the first", f"{first['seconds'] / second['seconds']:.1f}x faster", "")
    return table


def _change(emulator: Emulator, seeded: Seeded, *, share: float) -> int:
    """Review half of `share` of the chapters and add a page to the other half."""
    from toolkit import Client

    picked = random.Random(5).sample(seeded.chapter_ids, round(len(seeded.chapter_ids) * share))
    half = len(picked) // 2
    for chapter_id in picked[:half]:
        emulator.review_chapter(chapter_id)
    with Client(base_url=emulator.url, api_key=seeded.api_key) as client:
        for number, chapter_id in enumerate(picked[half:]):
            client.add_pages(chapter_id, [_page(number)])
    return len(picked)


def _page(seed: int) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (200, 280), "white")
    ImageDraw.Draw(image).ellipse([10 + seed % 50, 20, 120, 90], outline="black")
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


# -- 6. the emulator on its own -------------------------------------------------------------


def _emulator_alone(emulator: Emulator, client: ClientProcess, seeded: Seeded) -> Table:
    table = Table(
        f"6. Emulator with {len(seeded.chapter_ids):,} chapters: read routes, no injected latency"
    )
    paths = {
        f"GET /projects ({len(seeded.project_ids)} projects)": "/projects",
        "GET /projects/:id/chapters (100 chapters)": f"/projects/{seeded.project_ids[0]}/chapters",
        "GET /chapters/:id": f"/chapters/{seeded.chapter_ids[0]}",
    }
    times = client.call(route_times, emulator.url, seeded.api_key, paths, repeat=30)
    statements = _statements(emulator, seeded.api_key, paths)
    for name, seconds in times.items():
        count, scans = statements[name]
        note = f"{count} SQL statements; full scans: {', '.join(scans) or 'none'}"
        table.add(name, f"{seconds * 1000:.1f} ms", f"round trip, median of 30; {note}")
    return table


def _statements(
    emulator: Emulator, key: str, paths: dict[str, str]
) -> dict[str, tuple[int, list[str]]]:
    """The SQL one request of each route runs, and the tables it scans whole.

    Reads the emulator's SQLite connection through sqlite3's trace hook: the number of
    statements shows whether a list costs a query per row.
    """
    connection = emulator.services.db._conn  # the benchmark looks inside on purpose
    found: dict[str, tuple[int, list[str]]] = {}
    with httpx.Client(
        base_url=f"{emulator.url}/api/v1", headers={"Authorization": f"Bearer {key}"}
    ) as http:
        for name, path in paths.items():
            seen: list[str] = []
            connection.set_trace_callback(seen.append)
            try:
                http.get(path).raise_for_status()
            finally:
                connection.set_trace_callback(None)
            scans = set()
            for sql in seen:
                if sql.lstrip().upper().startswith("SELECT"):
                    for row in emulator.services.db.query("EXPLAIN QUERY PLAN " + sql):
                        detail = str(row["detail"])
                        if detail.startswith("SCAN") and "USING" not in detail:
                            scans.add(detail.removeprefix("SCAN ").split()[0])
            found[name] = (len(seen), sorted(scans))
    return found
