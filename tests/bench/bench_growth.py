"""Issue 31's growth table: how each figure's time and memory grow with the history.

For each size (chapters x days of hourly snapshots, the history benchmark's generator:
3 languages, 2% of chapters changing an hour, 100 chapters a project) the store is
written once (`bench_history.kept`: a folder per size under `--store-root`, reused by
later runs), then each figure is computed **in a fresh child process**
(`python -m tests.bench.bench_growth FIGURE ROOT`), as a user's notebook or cron would
compute it. The child times the figure itself, opening the store included (not Python's
start and the imports: the `imports` row measures those alone) and reports its peak
resident memory (the kernel's VmHWM, reset as the child starts: `getrusage`'s
`ru_maxrss` would carry over the parent's peak from the fork).
The machine's one-minute load is recorded with each figure.

The writes are the history benchmark's own timings (the median write, the first and the
last day's medians, p95), kept in the store's `written.json`. The growth exponent of a
figure between two sizes is log(time ratio) / log(changed-rows ratio): 1 is linear in
the rows that changed, above 1 worse. Changed rows are the rows of the chapters' and
languages' change logs (every row a figure on the runs reads, the weekly full copies
included).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from tests.bench.bench_history import START, HistoryOptions, disk_bytes, file_count, kept
from tests.bench.table import Table, peak, reset_peak
from tests.bench.watch_config import WATCH_CONFIG

# Sizes as chapters x days, the matrix: 10,000, 30,000 and 100,000 chapters by a
# month, a quarter and a year.
MATRIX = tuple(f"{c}x{d}" for c in (10_000, 30_000, 100_000) for d in (30, 90, 365))
RUN_FIGURES = ("credit_spend", "throughput", "runs", "cycle_times", "failures", "lead_times")
# Issue 43: each run figure read from the stages the store keeps (`run_store`), for the
# whole history and for its last week, beside the same figure worked out from the change
# log (the reference path, the rows above). `keep` first: the first question after a
# snapshot, which builds the stages and keeps them; the `:kept` rows read them. `extend`:
# new snapshots written on a copy and updated (a part kept), the first question after
# each joining the part, against the full build (`bench_extend`; its note).
KEPT_FIGURES = (
    "keep",
    *(f"{name}:week" for name in RUN_FIGURES),
    *(f"{name}:kept" for name in RUN_FIGURES),
    *(f"{name}:week:kept" for name in RUN_FIGURES),
    "extend",
)
# The weekly page last: the slowest, and the one most likely to reach the time limit.
FIGURES = (
    "imports", "rows", "as_of", *RUN_FIGURES, *KEPT_FIGURES, "forecast", "watch_checks", "weekly"
)  # fmt: skip
LABELS = {
    "imports": "Python's start and imports alone (not in the times below)",
    "rows": "count the change logs' rows (one DuckDB query)",
    "as_of": "store.as_of('chapters', an hour at 55%)",
    **{name: f"analysis.{name}" for name in RUN_FIGURES},
    "keep": "the first run figure after a snapshot: the stages built and kept",
    **{f"{name}:week": f"analysis.{name}, the last week" for name in RUN_FIGURES},
    **{f"{name}:kept": f"analysis.{name}, read from the kept stages" for name in RUN_FIGURES},
    **{
        f"{name}:week:kept": f"analysis.{name}, the last week, from the kept stages"
        for name in RUN_FIGURES
    },
    "extend": "a snapshot's write and update, the first runs after it (see the note)",
    "forecast": "analysis.forecast",
    "weekly": "tk.report, the weekly page of the last week",
    "watch_checks": "tk.watch.checks (a watch cycle's store part)",
}


@dataclass(frozen=True)
class Size:
    chapters: int
    days: int

    @classmethod
    def parse(cls, text: str) -> Size:
        try:
            chapters, days = (
                int(part.replace(",", "").replace("_", "")) for part in text.split("x")
            )
        except ValueError:
            raise SystemExit(
                f"--sizes: {text!r} is not CHAPTERSxDAYS; write sizes such as 10000x30,30000x90"
            ) from None
        return cls(chapters, days)

    @property
    def name(self) -> str:
        return f"{self.chapters}x{self.days}"

    def options(self) -> HistoryOptions:
        return HistoryOptions(
            hours=24 * self.days, chapters=self.chapters, projects=max(1, self.chapters // 100)
        )


@dataclass(frozen=True)
class GrowthOptions:
    sizes: tuple[Size, ...] = tuple(Size.parse(s) for s in MATRIX)
    # A folder per size is kept here (writing is the slow part); None: temporary folders.
    store_root: str | None = None
    figures: tuple[str, ...] = FIGURES
    # A figure still computing after this long is stopped and recorded as over it.
    limit_seconds: float = 1800.0
    # Print the table of what earlier runs recorded under `store_root`, measuring nothing.
    recorded: bool = False


@dataclass(frozen=True)
class Measured:
    seconds: float
    peak_mib: float
    load: float
    note: str = ""

    def cell(self) -> str:
        if self.note.startswith(("STOPPED", "FAILED")):
            return f"{self.note} @{self.load:.1f}"
        return f"{self.seconds:.2f} s / {self.peak_mib:,.0f} MiB @{self.load:.1f}"


def run(options: GrowthOptions) -> list[Table]:
    if options.recorded:
        return [table(_recorded(options), figures=options.figures)]
    results: dict[str, dict[str, Any]] = {}
    for size in options.sizes:
        if options.store_root is not None:
            results[size.name] = _measure_size(
                os.path.join(options.store_root, size.name), size, options
            )
            continue
        root = tempfile.mkdtemp(prefix="bench-growth-")
        try:
            results[size.name] = _measure_size(os.path.join(root, size.name), size, options)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return [table(results, figures=options.figures)]


def _recorded(options: GrowthOptions) -> dict[str, dict[str, Any]]:
    if options.store_root is None:
        raise SystemExit("--recorded reads what earlier runs kept: give their --store-root")
    results = {}
    for size in options.sizes:
        path = os.path.join(options.store_root, f"growth-{size.name}.json")
        if not os.path.exists(path):
            raise SystemExit(f"no {path}: measure {size.name} first (leave out --recorded)")
        with open(path) as file:
            results[size.name] = json.load(file)
    return results


def _measure_size(root: str, size: Size, options: GrowthOptions) -> dict[str, Any]:
    print(f"  {size.name}: the store in {root}", flush=True)
    written = kept(root, size.options())
    times = sorted(written.write_times)
    day = min(24, len(written.write_times))
    result: dict[str, Any] = {
        "median_write": _median(written.write_times),
        "first_day_write": _median(written.write_times[: day - 1]),
        "last_day_write": _median(written.write_times[-day:]),
        "p95_write": times[int(len(times) * 0.95)] if times else 0.0,
        "disk_bytes": disk_bytes(root),
        "files": file_count(root),
        "figures": {},
    }
    for figure in options.figures:
        measured = _in_child(figure, root, limit=options.limit_seconds)
        print(f"  {size.name}: {figure} {measured.cell()} {measured.note}", flush=True)
        result["figures"][figure] = measured.__dict__
        if figure == "rows" and measured.note:
            result["changed_rows"] = int(measured.note)
    if options.store_root is not None:
        with open(os.path.join(options.store_root, f"growth-{size.name}.json"), "w") as file:
            json.dump(result, file)
    return result


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _in_child(figure: str, root: str, *, limit: float) -> Measured:
    """Compute one figure in a fresh process; its time and peak RSS as it reports them."""
    load = os.getloadavg()[0]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.bench.bench_growth", figure, root],
            capture_output=True,
            text=True,
            check=False,
            timeout=limit,
        )
    except subprocess.TimeoutExpired:
        return Measured(limit, math.nan, load, f"STOPPED: over {limit:.0f} s")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return Measured(math.nan, math.nan, load, f"FAILED: {last[:120]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return Measured(answer["seconds"], answer["peak"] / 2**20, load, str(answer["note"]))


@dataclass
class Grid(Table):
    """A table with a column per size and one per pair of sizes compared: rows of
    (figure, cells, exponents)."""

    head: list[str] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    cells: list[tuple[str, list[str], list[str]]] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"## {self.title}", ""]
        header = ["figure", *self.head, *(f"exponent {a} -> {b}" for a, b in self.pairs)]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for figure, cells, notes in self.cells:
            lines.append("| " + " | ".join([figure, *cells, *notes]) + " |")
        return "\n".join(lines)


def pairs(results: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """The sizes compared: the fewest changed rows with the most, then along each axis
    (more chapters at the same days, more days at the same chapters) its two ends."""
    rows = {s: int(r["changed_rows"]) for s, r in results.items() if r.get("changed_rows")}
    ordered = sorted(rows, key=rows.__getitem__)
    found = [(ordered[0], ordered[-1])] if len(ordered) > 1 else []
    sizes = {s: Size.parse(s) for s in ordered}
    for axis in ("days", "chapters"):  # the axis held fixed
        for fixed in sorted({getattr(size, axis) for size in sizes.values()}):
            line = [s for s in ordered if getattr(sizes[s], axis) == fixed]
            if len(line) > 1 and (line[0], line[-1]) not in found:
                found.append((line[0], line[-1]))
    return found


def table(results: dict[str, dict[str, Any]], *, figures: Sequence[str] = FIGURES) -> Grid:
    """One row per figure, one column per size (time / peak MiB @load), and the growth
    exponents between the pairs of sizes compared (`pairs`)."""
    sizes = list(results)
    compared = pairs(results)
    grid = Grid(
        "Growth: time / peak MiB (@ the one-minute load) per size, chapters x days; "
        "exponent: time; memory",
        head=sizes,
        pairs=compared,
    )
    grid.cells.append(
        (
            "changed rows (chapters + languages change logs)",
            [f"{int(results[s].get('changed_rows', 0)):,}" for s in sizes],
            [f"x{_rows_ratio(results, a, b):.1f}" for a, b in compared],
        )
    )

    def ms(key: str) -> Callable[[str], str]:
        return lambda s: f"{results[s][key] * 1000:.0f} ms"

    def first_last(s: str) -> str:
        day = results[s]
        return f"{day['first_day_write'] * 1000:.0f} / {day['last_day_write'] * 1000:.0f} ms"

    def size(s: str) -> str:
        return f"{results[s]['disk_bytes'] / 2**20:,.1f} MiB, {results[s]['files']:,} files"

    for label, cell, key in [
        ("median write (history benchmark)", ms("median_write"), "median_write"),
        ("  first day / last day median write", first_last, None),
        ("  p95 write", ms("p95_write"), None),
        ("size on disk, files", size, "disk_bytes"),
    ]:
        notes = [_ratio_exponent(results, key, a, b) for a, b in compared]
        grid.cells.append((label, [cell(s) for s in sizes], notes))
    for figure in figures:
        cells = []
        for s in sizes:
            m = results[s]["figures"].get(figure)
            cells.append(Measured(**m).cell() if m else "-")
        notes = [_exponent(results, figure, a, b) for a, b in compared]
        grid.cells.append((LABELS[figure], cells, notes))
    return grid


def _rows_ratio(results: dict[str, dict[str, Any]], first: str, last: str) -> float:
    return float(results[last]["changed_rows"] / results[first]["changed_rows"])


def _exponent(results: dict[str, dict[str, Any]], figure: str, first: str, last: str) -> str:
    if figure == "imports":
        return ""
    a, b = results[first]["figures"].get(figure), results[last]["figures"].get(figure)
    if not a or not b or not (a["seconds"] > 0 and b["seconds"] > 0):
        return ""
    rows = math.log(_rows_ratio(results, first, last))
    grown = math.log(b["seconds"] / a["seconds"]) / rows
    if b["note"].startswith("STOPPED"):  # its time is the limit: the exponent is at least
        return f"> {grown:.2f}; ?"
    return f"{grown:.2f}; {math.log(b['peak_mib'] / a['peak_mib']) / rows:.2f}"


def _ratio_exponent(
    results: dict[str, dict[str, Any]], key: str | None, first: str, last: str
) -> str:
    if key is None or not results[first][key]:
        return ""
    ratio = results[last][key] / results[first][key]
    return f"{math.log(ratio) / math.log(_rows_ratio(results, first, last)):.2f}"


# -- the child: one figure, timed ------------------------------------------------------


def _compute(figure: str, root: str) -> str:
    """Compute `figure` on the store at `root`; returns a short note (rows, a count)."""
    import pandas as pd

    import toolkit as tk
    from toolkit import SnapshotStore, analysis
    from toolkit.analysis.observed import Observed, observe
    from toolkit.analysis.run_store import FOLDER
    from toolkit.analysis.sql import ASKED_WITH

    if figure == "imports":
        return ""
    store = SnapshotStore(root)
    if figure == "rows":
        counts = store.query(
            "SELECT (SELECT count(*) FROM chapters_changes) "
            "+ (SELECT count(*) FROM languages_changes) AS n"
        )
        return str(int(counts["n"].iloc[0]))
    if figure == "as_of":
        hours = len(store.snapshots())
        return f"{len(store.as_of('chapters', START + timedelta(hours=hours * 0.55))):,} rows"
    if figure == "extend":
        from tests.bench.bench_extend import measure

        return measure(root, Size.parse(os.path.basename(root)).options())
    if figure == "keep":  # as the first question after a snapshot: nothing kept yet
        shutil.rmtree(os.path.join(root, FOLDER), ignore_errors=True)
        return f"{len(analysis.runs(store)):,} runs"
    name, *how = figure.split(":")
    if name in (*RUN_FIGURES, "forecast"):
        # The reference path (today's pipeline) keeps and reads nothing; `:kept` reads
        # what `keep` kept.
        source = observe(store) if "kept" in how else Observed(store, keep=False)
        asked: dict[str, Any] = dict(ASKED_WITH.get(name, {}))
        if "week" in how:
            last = store.snapshots()["snapshot_at"].iloc[-1]
            asked.update(since=last - timedelta(days=7), until=last + timedelta(hours=1))
        frame: pd.DataFrame = getattr(analysis, name)(source, **asked)
        return f"{len(frame):,} rows"
    with tempfile.TemporaryDirectory(prefix="bench-growth-") as folder:
        if figure == "weekly":
            page = tk.report(store, os.path.join(folder, "weekly.html"))
            return f"{page.stat().st_size / 1024:,.0f} KiB page"
        if figure == "watch_checks":
            config = os.path.join(folder, "watch.toml")
            due = "\n".join(f'"Series {n}" = 2025-01-01' for n in range(5))
            with open(config, "w") as file:
                file.write(
                    WATCH_CONFIG.format(
                        root=folder, url="http://127.0.0.1:9", project="Series 1", due=due
                    )
                )
            found = tk.watch.checks(store, config)
            return f"{len(found)} findings"
    raise SystemExit(f"no figure {figure!r}; the figures are {', '.join(FIGURES)}")


def main(argv: Sequence[str]) -> None:
    figure, root = argv
    # The peak starts at this process's own start: a child forked from a big parent
    # inherits the parent's peak in getrusage's ru_maxrss, so that would not do.
    reset_peak()
    began = time.perf_counter()
    # Imported before the clock starts: the figures' times leave Python's start out.
    import toolkit
    import toolkit.analysis
    import toolkit.reporting
    import toolkit.watch  # noqa: F401  (loaded, not named: its time is the import)

    imported = time.perf_counter()
    note = _compute(figure, root)
    seconds = imported - began if figure == "imports" else time.perf_counter() - imported
    print(json.dumps({"seconds": seconds, "peak": peak(), "note": note}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
