"""Issue 43's "the run table equals today's pipeline ... on the year store": every run
stage and the review moves (`run_check.STAGES`), as a store keeps them and as the first
question after a new snapshot extends them,
against the stage worked out from the whole change log (`Observed(keep=False)`), value
for value, on a history too long for the suite (the year store of benchmark 10, or a
growth store).

On a copy of the store (the store itself stays as written): the stages are built and
kept, read back by a fresh store object and compared; then each of `--snapshots` new
hours is written (the history's generator replayed to its last hour, as the `extend`
figure does), the stages extended and compared again; and `toolkit store check`'s look
at the kept stages (`check_runs_kept`) must find nothing.
Command: `python -m tests.bench equal --store DIR --days 365 --chapters 10000`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta

from tests.bench.bench_extend import replayed
from tests.bench.bench_history import HistoryOptions
from tests.bench.table import Table


@dataclass(frozen=True)
class EqualOptions:
    store: str
    days: int = 365
    chapters: int = 10_000
    snapshots: int = 3


def run(options: EqualOptions) -> list[Table]:
    from toolkit import SnapshotStore
    from toolkit.analysis.observed import Observed
    from toolkit.analysis.review_moves import ReviewMoves
    from toolkit.analysis.run_check import STAGES, check_runs_kept, stages_equal
    from toolkit.analysis.run_store import FOLDER
    from toolkit.analysis.runs import RunFrame

    history = HistoryOptions(
        hours=24 * options.days,
        chapters=options.chapters,
        projects=max(1, options.chapters // 100),
    )
    table = Table(
        f"Issue 43: the kept and extended run stages against the pipeline "
        f"({options.chapters:,} chapters x {options.days} days; load "
        f"{os.getloadavg()[0]:.1f})"
    )
    differing: list[str] = []
    work = tempfile.mkdtemp(prefix="bench-equal-")
    try:
        copy = shutil.copytree(
            options.store, os.path.join(work, "store"), ignore=shutil.ignore_patterns(FOLDER)
        )

        def compare(label: str, *, extension: bool) -> None:
            began = time.perf_counter()
            asked = Observed(SnapshotStore(copy), keep_after=0)
            asked.stage(RunFrame)  # the run stages built (or extended) and kept
            asked.stage(ReviewMoves)  # and the review moves
            seconds = time.perf_counter() - began
            if extension and not asked.extended:
                raise SystemExit(f"{label}: the stages were built whole, not extended")
            kept = Observed(SnapshotStore(copy))  # a fresh reader of what was kept
            reference = Observed(SnapshotStore(copy), keep=False)
            differ = [
                kind.__name__
                for kind in STAGES
                if not stages_equal(kept.stage(kind), reference.stage(kind))
            ]
            findings = check_runs_kept(copy)
            if differ or findings:
                differing.append(label)
            rows = len(reference.stage(RunFrame).frame)
            table.verdict(
                label,
                "equal" if not differ and not findings else "DIFFER",
                not differ and not findings,
                f"every stage equal to the pipeline, store check clean; {rows:,} runs; "
                f"{'extended' if extension else 'built'} in {seconds:.2f} s"
                + (f"; differ: {', '.join(differ)}" if differ else "")
                + (f"; store check: {findings}" if findings else ""),
            )

        compare("the stages kept for the store as written", extension=False)
        generator = replayed(history)
        for number in range(1, options.snapshots + 1):
            step = generator.advance()
            SnapshotStore(copy, retention=timedelta(0)).write(step.workspace, at=step.at)
            compare(f"extended after new snapshot {number}", extension=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if differing:  # a benchmark run by hand or by its test: fail loudly, with the table
        table.print()
        raise SystemExit(f"the run stages differ from the pipeline: {'; '.join(differing)}")
    return [table]
