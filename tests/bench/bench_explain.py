"""Benchmark 10: `tk.explain` of each headline figure over the last week of a store of
10,000 chapters (issue 41: under 2 s each).

The store is benchmark 3's synthetic history (`bench_history.kept`): the year by
default, or `--days N` of it (the year took 35 minutes to write at load 8-11 on the
shared machine, and is kept in `--store` for the next run; a week's explanation reads
the week, and the whole history only where the figure's own analysis does). Each
figure is timed on a fresh `SnapshotStore` (nothing cached), `--runs` times, and every
explanation is checked to sum to `figures`' total.
Command: `python -m tests.bench explain --days 14 --store DIR`.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from dataclasses import dataclass

from tests.bench.bench_history import HistoryOptions, kept
from tests.bench.table import Table, spread

TARGET_SECONDS = 2.0


@dataclass(frozen=True)
class ExplainOptions:
    days: int = 365
    chapters: int = 10_000
    runs: int = 3
    store: str | None = None  # keep the history here, or reuse what an earlier run kept


def run(options: ExplainOptions) -> list[Table]:
    from toolkit import SnapshotStore
    from toolkit.analysis.observed import Observed
    from toolkit.reporting import explain
    from toolkit.reporting.figures import FIGURES, figures

    root = options.store or tempfile.mkdtemp(prefix="bench-explain-")
    history = HistoryOptions(
        hours=24 * options.days, chapters=options.chapters,
        projects=max(1, options.chapters // 100), store=root,
    )  # fmt: skip
    kept(root, history)
    table = Table(
        f"10. tk.explain over the last week ({options.chapters:,} chapters x {options.days} "
        f"days; a fresh SnapshotStore each run; load {os.getloadavg()[0]:.1f})"
    )
    for name in FIGURES:
        times, rows = [], 0
        for _ in range(options.runs):
            store = SnapshotStore(root)
            began = time.perf_counter()
            rows = len(explain(store, name))
            times.append(time.perf_counter() - began)
        seconds = statistics.median(times)
        table.verdict(name, f"{seconds:.2f} s", seconds < TARGET_SECONDS,
                      f"< {TARGET_SECONDS:g} s; {rows:,} rows; {spread(times)}")  # fmt: skip
    obs = Observed(SnapshotStore(root))
    totals = figures(obs).totals
    unequal = [name for name in FIGURES if explain(obs, name)["value"].sum() != totals[name]]
    table.verdict("sums", "equal" if not unequal else ", ".join(unequal), not unequal,
                  "every explanation sums to its figure")  # fmt: skip
    return [table]
