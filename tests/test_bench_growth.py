"""Issue 31's growth benchmark (`python -m tests.bench growth`): it runs end to end on a
tiny size, and its table reads the growth exponent right."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.bench_growth import FIGURES, LABELS, table

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_growth_runs_end_to_end_and_prints_every_row(tmp_path):
    # A fresh process per figure: about 2 s each on a quiet machine.
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench", "growth", "--sizes", "500x2",
         "--store-root", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {line.split(" | ")[0].strip("| ").strip(): line for line in done.stdout.splitlines()}
    for label in [*(LABELS[f] for f in FIGURES), "median write (history benchmark)"]:
        assert label in rows, f"no row {label!r} in:\n{done.stdout}"
        assert "FAILED" not in rows[label] and " - " not in rows[label], rows[label]
    # 500 chapters and 1,500 languages in the first snapshot, 2% of them an hour after.
    assert "| changed rows (chapters + languages change logs) | " in done.stdout
    assert (tmp_path / "500x2" / "written.json").exists()
    # --recorded prints the same table from what the run kept, measuring nothing.
    again = subprocess.run(
        [sys.executable, "-m", "tests.bench", "growth", "--sizes", "500x2",
         "--store-root", str(tmp_path), "--recorded"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    table = [line for line in done.stdout.splitlines() if line.startswith("|")]
    assert table == [line for line in again.stdout.splitlines() if line.startswith("|")]


def _size(rows: int, seconds: float, peak: float) -> dict[str, object]:
    figure = {"seconds": seconds, "peak_mib": peak, "load": 1.0, "note": ""}
    return {
        "changed_rows": rows,
        "median_write": 0.05,
        "first_day_write": 0.05,
        "last_day_write": 0.05,
        "p95_write": 0.1,
        "disk_bytes": rows * 4,
        "files": 10,
        "figures": {"runs": figure},
    }


def test_the_exponent_is_the_time_ratio_over_the_rows_ratio():
    # Ten times the rows: a time 10x is linear (1.00), 100x quadratic (2.00); the memory
    # the same over 10x is flat (0.00). Sizes are compared by rows, not as given.
    grid = table(
        {"1000x30": _size(1000, 10.0, 100.0), "100x30": _size(100, 1.0, 100.0)},
        figures=["runs"],
    )
    assert grid.pairs == [("100x30", "1000x30")]
    runs = next(row for row in grid.cells if row[0] == "analysis.runs")
    assert runs[2] == ["1.00; 0.00"]
    quadratic = table(
        {"100x30": _size(100, 1.0, 10.0), "1000x30": _size(1000, 100.0, 100.0)},
        figures=["runs"],
    )
    assert next(row for row in quadratic.cells if row[0] == "analysis.runs")[2] == ["2.00; 1.00"]
    assert "| figure | 100x30 | 1000x30 | exponent 100x30 -> 1000x30 |" in quadratic.render()


def test_each_axis_is_compared_along_its_ends():
    # More chapters at 30 days, more days at 100 chapters, and the two extremes.
    grid = table(
        {
            "100x30": _size(100, 1.0, 10.0),
            "300x30": _size(300, 3.0, 10.0),
            "100x90": _size(300, 9.0, 10.0),
            "300x90": _size(900, 9.0, 10.0),
        },
        figures=["runs"],
    )
    assert grid.pairs == [
        ("100x30", "300x90"),
        ("100x30", "300x30"),
        ("100x90", "300x90"),
        ("100x30", "100x90"),
        ("300x30", "300x90"),
    ]
    runs = next(row for row in grid.cells if row[0] == "analysis.runs")
    assert runs[2][1] == "1.00; 0.00" and runs[2][3] == "2.00; 0.00"


def test_a_figure_stopped_at_the_limit_gives_a_lower_bound():
    stopped = _size(1000, 100.0, float("nan"))
    stopped["figures"]["runs"]["note"] = "STOPPED: over 100 s"  # type: ignore[index]
    grid = table({"100x30": _size(100, 1.0, 10.0), "1000x30": stopped}, figures=["runs"])
    row = next(row for row in grid.cells if row[0] == "analysis.runs")
    assert row[1][1].startswith("STOPPED: over 100 s")
    assert row[2] == ["> 2.00; ?"]


@pytest.mark.slow
def test_the_equality_benchmark_checks_kept_and_extended_stages(tmp_path):
    # Issue 43's check on a long history (`python -m tests.bench equal`), here on a tiny
    # growth store: the stages kept, then extended after three new snapshots, each
    # compared with the pipeline; a difference exits non-zero.
    def bench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tests.bench", *args],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip

    written = bench("growth", "--sizes", "500x2", "--store-root", str(tmp_path),
                    "--figures", "rows")  # fmt: skip
    assert written.returncode == 0, written.stderr
    done = bench("equal", "--store", str(tmp_path / "500x2"), "--days", "2",
                 "--chapters", "500")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 4 and all("| equal | met" in row for row in rows), done.stdout
    assert sum("extended in" in row for row in rows) == 3, done.stdout
