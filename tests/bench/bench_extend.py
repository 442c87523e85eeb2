"""Issue 43, item 1: the first run question after a new snapshot, its stages extended
from those kept for the snapshot before (`toolkit.analysis.run_extend`), against the
full build of today's pipeline in the same run; and the snapshot's write.

On a copy of a growth store (the store itself stays as written, for later runs): the
history's generator is replayed to the store's last hour (its draws only, no tables),
the stages are kept for the store as written, then each of `snapshots` new hours is
written and the state asked four ways, each on a fresh store object: the run table's
update alone (the stages up to the run table extended and their files in place, the
issue's "write, including the run table's update" once the write's time is added; the
kept states are copied aside first and put back after, so the next way extends too);
`analysis.runs` extended (the first question, as a user now asks it: the update and
the whole history's runs frame); the pipeline alone (`Observed(keep=False)`); and the
full build with its stages kept (the first question before the extension: `_runs` set
aside for it, then put back). The extended runs must equal the pipeline's, frame for
frame. Then the review moves (`review_moves`), extended from the kept ones with the
file written, against a build (in the same process: a new one's build reads DuckDB's
metadata again, about twice as long), equal stage for stage."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta

from tests.bench.bench_history import START, HistoryOptions
from tests.bench.synthetic import SyntheticWorkspace

__all__ = ["measure", "replayed"]


def measure(root: str, options: HistoryOptions, *, snapshots: int = 3) -> str:
    """The medians as one line (the growth table's note)."""
    import pandas as pd

    from toolkit import SnapshotStore, analysis
    from toolkit.analysis.observed import Observed
    from toolkit.analysis.review_moves import ReviewMoves
    from toolkit.analysis.run_check import stages_equal
    from toolkit.analysis.run_store import FOLDER
    from toolkit.analysis.run_table import RunTable

    work = tempfile.mkdtemp(prefix="bench-extend-")
    try:
        copy = shutil.copytree(
            root, os.path.join(work, "store"), ignore=shutil.ignore_patterns(FOLDER)
        )
        generator = replayed(options)
        last = SnapshotStore(copy).snapshots()["snapshot_at"].iloc[-1]
        if pd.Timestamp(generator.now) != last:
            raise SystemExit(f"the replay ends at {generator.now}, the store at {last}")
        written = Observed(SnapshotStore(copy), keep_after=0)  # kept, as written
        analysis.runs(written)
        written.stage(ReviewMoves)
        writes, updates, extended, full, kept = [], [], [], [], []
        moves_extended, moves_built = [], []
        for _ in range(snapshots):
            step = generator.advance()
            began = time.perf_counter()
            SnapshotStore(copy, retention=timedelta(0)).write(step.workspace, at=step.at)
            writes.append(time.perf_counter() - began)
            before = shutil.copytree(os.path.join(copy, FOLDER), os.path.join(work, "before"))
            updated = Observed(SnapshotStore(copy))
            updates.append(_timed(lambda obs=updated: obs.stage(RunTable))[0])
            if not updated.extended:
                raise SystemExit("the run table was built whole, not extended")
            shutil.rmtree(os.path.join(copy, FOLDER))
            os.rename(before, os.path.join(copy, FOLDER))
            asked = Observed(SnapshotStore(copy))
            seconds, runs = _timed(lambda obs=asked: analysis.runs(obs))
            if not asked.extended:
                raise SystemExit("the stages were built whole, not extended")
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
        e, f, k = (statistics.median(x) for x in (extended, full, kept))
        with_update = [w + u for w, u in zip(writes, updates, strict=True)]
        return (
            f"write + the run table's update {statistics.median(with_update):.2f} s "
            f"(update {statistics.median(updates):.2f} s: "
            f"{', '.join(f'{x:.2f}' for x in updates)}); "
            f"first runs after a snapshot: extended {e:.2f} s, full build {f:.2f} s "
            f"({e / f:.2f}x), full build + keep {k:.2f} s ({e / k:.2f}x); write "
            f"{statistics.median(writes) * 1000:.0f} ms; medians of {snapshots} "
            f"(extended {', '.join(f'{x:.2f}' for x in extended)}; "
            f"full {', '.join(f'{x:.2f}' for x in full)}); the review moves after it: "
            f"extended and kept {', '.join(f'{x:.2f}' for x in moves_extended)} s, built "
            f"{', '.join(f'{x:.2f}' for x in moves_built)} s"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def replayed(options: HistoryOptions) -> SyntheticWorkspace:
    """The generator as it was after the store's last hour: the same draws, without
    making the tables (which take most of an hour's time)."""
    generator = SyntheticWorkspace(
        chapters=options.chapters,
        projects=options.projects,
        change_share=options.change_share,
        start=START,
    )
    make = generator.workspace
    generator.workspace = lambda: None  # type: ignore[method-assign,assignment,return-value]
    for _ in range(1, options.hours):
        generator.advance()
    generator.workspace = make  # type: ignore[method-assign]
    return generator


def _timed(ask: Callable[[], object]) -> tuple[float, object]:
    began = time.perf_counter()
    found = ask()
    return time.perf_counter() - began, found
