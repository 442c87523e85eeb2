"""Benchmark 8: one `toolkit watch --once` cycle on the 10,000-chapter workspace.

The emulator runs in this process, seeded as for the pull (`seeding`: 100 projects x 100
finished chapters x 3 languages) with `latencyMs=20`. A first snapshot with every detail
is the store's baseline, untimed. Then, `runs` times: the clock moves on 15 minutes, 1%
of the chapters change (`bench_pull._change`: half reviewed, half given a page that
starts a run), and `toolkit watch --config watch.toml --once` runs in a fresh process,
as cron runs it. The figure is that command's wall time, start to exit: an incremental
snapshot and every check (target under 10 s). The config has a project, a workspace
and an agency budget (the workspace's is crossed by the first cycle, so an alert opens
and is recorded), due dates for five projects and every check on; no notification
target (delivering is the targets' time, not the watch's). Then, in this process, the
checks alone (`tk.watch.checks`) on the store the cycles left, and Python's start with
the command's imports, which the cycle's time includes.

The outbox's part (issue 37): the same cycles again with a Standard Webhooks target on
loopback added (a sink in this process answering 204), so messages are recorded as owed,
sent and their deliveries committed, against the cycles without one, alternating the
two so that the machine's load weighs on both alike.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.bench.bench_pull import _change
from tests.bench.client_side import ClientProcess, take_snapshot
from tests.bench.seeding import seed_workspace
from tests.bench.table import Table, median_time, spread
from tests.bench.watch_config import WATCH_CONFIG
from toolkit.emulator import Emulator
from toolkit.emulator.serving import BackgroundServer


def _sink() -> Any:
    """A webhook receiver that takes everything (204): the target's own time is nil."""
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    async def take(request: Any) -> Response:
        await request.body()
        return Response(status_code=204)

    return Starlette(routes=[Route("/hook", take, methods=["POST"])])


@dataclass(frozen=True)
class WatchOptions:
    projects: int = 100
    chapters: int = 100
    latency_ms: int = 20
    runs: int = 3
    changed_share: float = 0.01


def run(options: WatchOptions) -> list[Table]:
    table = Table(
        f"8. toolkit watch --once: {options.projects * options.chapters:,} chapters, "
        f"{options.changed_share:.0%} changed a cycle, latencyMs={options.latency_ms}"
    )
    with (
        Emulator(clock="manual") as emulator,
        tempfile.TemporaryDirectory(prefix="bench-watch-") as folder,
    ):
        seeded = seed_workspace(emulator, projects=options.projects, chapters=options.chapters)
        emulator.set_faults(latency_ms=options.latency_ms)
        root = Path(folder) / "snapshots"
        yesterday = emulator.now().date() - timedelta(days=1)
        due = "\n".join(f'"Series {n:03d}" = {yesterday.isoformat()}' for n in range(5))
        config = Path(folder) / "watch.toml"
        config.write_text(
            WATCH_CONFIG.format(root=root, url=emulator.url, project="Series 001", due=due)
        )
        with ClientProcess() as client:
            first = client.call(
                take_snapshot, emulator.url, seeded.api_key, str(root / "bench"), details="all"
            )
        table.add("baseline snapshot, details=all", f"{first['seconds']:.1f} s",
                  f"{first['requests']:,} requests (untimed for the target)")  # fmt: skip
        env = {**os.environ, "BENCH_WATCH_KEY": seeded.api_key,
               "BENCH_WATCH_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}  # fmt: skip
        sink = BackgroundServer().start(_sink(), timeout=10)
        hooked = Path(folder) / "hooked.toml"
        hooked.write_text(
            WATCH_CONFIG.format(root=Path(folder) / "hooked", url=emulator.url,
                                project="Series 001", due=due)
            + f'[notify.webhook]\nurl = "{sink.url}/hook"\nsecret_env = "BENCH_WATCH_SECRET"\n'
            "allow_private = true\n"
        )  # fmt: skip
        shutil.copytree(root / "bench", Path(folder) / "hooked" / "bench")  # the same baseline
        times, statuses, hooked_times, first_lines = [], [], [], []
        for _ in range(options.runs):
            emulator.advance(900)
            _change(emulator, seeded, share=options.changed_share)
            for path, into in ((config, times), (hooked, hooked_times)):
                started = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-m", "toolkit.cli", "watch", "--config", str(path),
                     "--once"], env=env, capture_output=True, text=True, check=False,
                )  # fmt: skip
                into.append(time.perf_counter() - started)
                if done.returncode == 2:
                    raise RuntimeError(f"the watch failed: {done.stderr.strip()}")
                if path == config:
                    statuses.append(done.returncode)
                    first_lines = first_lines or done.stdout.strip().splitlines()[:3]
        sink.stop()
        wall = statistics.median(times)
        table.verdict(
            "watch --once (a fresh process)",
            f"{wall:.1f} s",
            wall < 10,
            f"under 10 s; median of {len(times)} ({spread(times)}); exit statuses {statuses}",
        )
        with_hook = statistics.median(hooked_times)
        table.verdict(
            "  the same with a webhook target (the outbox)",
            f"{with_hook:.1f} s",
            with_hook <= wall * 1.1,
            f"at most 10% more: {with_hook / wall - 1:+.0%}; median of {len(hooked_times)} "
            f"({spread(hooked_times)}), each run just after one without",
        )
        import toolkit as tk

        checks, check_times = median_time(lambda: tk.watch.checks(root, config), runs=3)
        found = tk.watch.checks(root, config)
        table.add("  the checks alone (tk.watch.checks)", f"{checks:.1f} s",
                  f"median of 3 ({spread(check_times)}); {len(found)} open findings: "
                  f"{', '.join(sorted(set(found['check']))) or 'none'}")  # fmt: skip
        start, start_times = median_time(
            lambda: subprocess.run(
                [sys.executable, "-c", "import toolkit.cli, toolkit.watch"], check=True
            ),
            runs=3,
        )
        table.add("  Python's start and the imports", f"{start:.1f} s",
                  f"median of 3 ({spread(start_times)})")  # fmt: skip
        if first_lines:
            table.add("  the first cycle said", first_lines[0][:90], "")
    return [table]
