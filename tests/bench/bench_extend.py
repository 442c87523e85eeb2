"""Issue 43, item 1: a snapshot's write with the run table's update (a part kept over
the last state kept whole: `toolkit.analysis.run_part`), and the first run question
after it, which joins the part, against the full build of today's pipeline in the same
run.

On a copy of a growth store (the store itself stays as written, for later runs): the
history's generator is replayed to the store's last hour (its draws only, no tables),
the stages are kept for the store as written, then each of `snapshots` new hours is
written and updated by one store object, as `toolkit snapshot` writes and updates
(`analysis.update_runs`, the issue's "write, including the run table's update" once the
write's time is added), then asked three ways, each on a fresh store object:
`analysis.runs` (the first question, as a user now asks it: the part joined with its
base and the whole history's runs frame); the pipeline alone (`Observed(keep=False)`);
and the full build with its stages kept (the first question before issue 43: `_runs`
set aside for it, then put back). The runs read must equal the
pipeline's, frame for frame. Then the review moves (`review_moves`), extended from the
kept ones with the file written, against a build (in the same process: a new one's
build reads DuckDB's metadata again, about twice as long), equal stage for stage. Last,
`chain` more hours each written and updated with no question between, the kept states
aged an hour before each as an hourly cron's are (each part over the part before, until
the update joins a part past a tenth of the chapters and keeps the stages whole: a day
of hourly snapshots without a question does so once or twice), then one
`analysis.runs`, which must join the last part, equal to the pipeline's."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from tests.aged_states import aged
from tests.bench.bench_history import START, HistoryOptions
from tests.bench.synthetic import SyntheticWorkspace

__all__ = ["measure", "replayed"]


def measure(root: str, options: HistoryOptions, *, snapshots: int = 3, chain: int = 16) -> str:
    """The medians as one line (the growth table's note)."""
    import pandas as pd

    from toolkit import SnapshotStore, analysis
    from toolkit.analysis.observed import Observed
    from toolkit.analysis.review_moves import ReviewMoves
    from toolkit.analysis.run_check import stages_equal
    from toolkit.analysis.run_store import FOLDER

    work = tempfile.mkdtemp(prefix="bench-extend-")
    try:
        copy = shutil.copytree(
            root, os.path.join(work, "store"), ignore=shutil.ignore_patterns(FOLDER)
        )
        taken = SnapshotStore(copy).snapshots()
        generator = replayed(options, hours=len(taken))  # hours written since too
        last = taken["snapshot_at"].iloc[-1]
        if pd.Timestamp(generator.now) != last:
            raise SystemExit(f"the replay ends at {generator.now}, the store at {last}")
        written = Observed(SnapshotStore(copy), keep_after=0)  # kept, as written
        analysis.runs(written)
        written.stage(ReviewMoves)
        writes, updates, extended, full, kept = [], [], [], [], []
        cpu = []  # the process's CPU seconds (every thread) of each write with its update
        moves_extended, moves_built = [], []
        for _ in range(snapshots):
            step = generator.advance()
            store = SnapshotStore(copy, retention=timedelta(0))
            began = time.process_time()
            writes.append(_timed(lambda: store.write(step.workspace, at=step.at))[0])  # noqa: B023
            seconds, kept_part = _timed(lambda: analysis.update_runs(store))  # noqa: B023
            cpu.append(time.process_time() - began)
            if not kept_part:
                raise SystemExit("the update kept nothing")
            updates.append(seconds)
            asked = Observed(SnapshotStore(copy))
            seconds, runs = _timed(lambda obs=asked: analysis.runs(obs))
            if not asked.extended:
                raise SystemExit("the stages were built whole, not joined")
            extended.append(seconds)
            seconds, moves = _timed(lambda obs=asked: obs.stage(ReviewMoves))
            moves_extended.append(seconds)
            seconds, built = _timed(
                lambda: Observed(SnapshotStore(copy), keep=False).stage(ReviewMoves)
            )
            moves_built.append(seconds)
            if not stages_equal(moves, built):
                raise SystemExit("the review moves extended differ from those built")
            seconds, reference = _timed(
                lambda: analysis.runs(Observed(SnapshotStore(copy), keep=False))
            )
            full.append(seconds)
            pd.testing.assert_frame_equal(runs, reference, check_exact=True)
            aside = os.path.join(work, "aside")
            os.rename(os.path.join(copy, FOLDER), aside)
            kept.append(_timed(lambda: analysis.runs(Observed(SnapshotStore(copy))))[0])
            # A build quicker than `KEEP_AFTER_SECONDS` keeps nothing (a quiet machine).
            shutil.rmtree(os.path.join(copy, FOLDER), ignore_errors=True)
            os.rename(aside, os.path.join(copy, FOLDER))
        chained = []
        for _ in range(chain):  # parts over parts: no question between the snapshots
            aged(Path(copy) / FOLDER, 3600)  # an hour since the last, as cron's would be
            step = generator.advance()
            began = time.perf_counter()
            store = SnapshotStore(copy, retention=timedelta(0))
            store.write(step.workspace, at=step.at)
            if not analysis.update_runs(store):
                raise SystemExit("the update kept nothing")
            chained.append(time.perf_counter() - began)
        reader = Observed(SnapshotStore(copy))
        seconds, runs = _timed(lambda: analysis.runs(reader))
        if not reader.extended:
            raise SystemExit("the chain's last part was built whole, not joined")
        reference = analysis.runs(Observed(SnapshotStore(copy), keep=False))
        pd.testing.assert_frame_equal(runs, reference, check_exact=True)
        e, f, k = (statistics.median(x) for x in (extended, full, kept))
        with_update = [w + u for w, u in zip(writes, updates, strict=True)]
        return (
            f"write + the run table's update {statistics.median(with_update):.2f} s "
            f"({statistics.median(cpu):.2f} CPU-seconds; "
            f"update {statistics.median(updates):.2f} s: "
            f"{', '.join(f'{x:.2f}' for x in updates)}; {chain} hours with no question "
            f"between: median {statistics.median(chained):.2f} s, "
            f"{', '.join(f'{x:.2f}' for x in chained)} s, then the first runs {seconds:.2f} s); "
            f"first runs after a snapshot: joined {e:.2f} s, full build {f:.2f} s "
            f"({e / f:.2f}x), full build + keep {k:.2f} s ({e / k:.2f}x); write "
            f"{statistics.median(writes) * 1000:.0f} ms; medians of {snapshots} "
            f"(joined {', '.join(f'{x:.2f}' for x in extended)}; "
            f"full {', '.join(f'{x:.2f}' for x in full)}); the review moves after it: "
            f"extended and kept {', '.join(f'{x:.2f}' for x in moves_extended)} s, built "
            f"{', '.join(f'{x:.2f}' for x in moves_built)} s"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def replayed(options: HistoryOptions, *, hours: int | None = None) -> SyntheticWorkspace:
    """The generator as it was after the store's last hour (its `hours`, when more were
    written since: `options.hours` otherwise): the same draws, without making the tables
    (which take most of an hour's time)."""
    generator = SyntheticWorkspace(
        chapters=options.chapters,
        projects=options.projects,
        change_share=options.change_share,
        start=START,
    )
    make = generator.workspace
    generator.workspace = lambda: None  # type: ignore[method-assign,assignment,return-value]
    for _ in range(1, options.hours if hours is None else hours):
        generator.advance()
    generator.workspace = make  # type: ignore[method-assign]
    return generator


def _timed(ask: Callable[[], object]) -> tuple[float, object]:
    began = time.perf_counter()
    found = ask()
    return time.perf_counter() - began, found
