"""Benchmark 11: the agency page over three workspaces of the demo's size (issue 41).

`toolkit demo` (its default day: 26 snapshots, 4 projects, about 90 chapters) writes one
store, untimed; it is copied three times, as three workspaces, into a watch config with
`[tags]` (a client on three projects, a team on two). The figure is the wall time of
`toolkit report --html --config agency.toml` in a fresh process, start to exit, as a
lead runs it (target under 15 s), median of `runs`; beside it Python's start with the
command's imports, which that time includes. With `--store DIR` the demo's store is
kept in DIR and reused by the next run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.bench.table import Table, spread

TARGET = 15.0
WORKSPACES = ("ws-a", "ws-b", "ws-c")
TAGS = """\
[tags."Seoul Nights"]
client = "Hanbit"
team = "north"
[tags."Seoul Nights: Side Stories"]
client = "Hanbit"
[tags."Moonlit Harbor"]
client = "Aster"
team = "south"
"""


@dataclass(frozen=True)
class AgencyOptions:
    runs: int = 3
    store: str | None = None  # keep the demo's store here (or reuse it)


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolkit.cli", *args]


def _environment() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _demo_store(folder: Path) -> Path:
    snapshots = folder / "snapshots"
    if not (snapshots / "manifest").exists():
        subprocess.run(_command("demo", "--out", str(folder)), check=True, env=_environment(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return snapshots


def run(options: AgencyOptions) -> list[Table]:
    with tempfile.TemporaryDirectory(prefix="bench-agency-") as scratch:
        root = Path(scratch)
        snapshots = _demo_store(Path(options.store) if options.store else root / "demo")
        lines = []
        for name in WORKSPACES:
            shutil.copytree(snapshots, root / name)
            lines += [f"[workspaces.{name}]", 'base_url = "https://translate.example.com"',
                      f'key_env = "{name.upper().replace("-", "_")}_KEY"',
                      f'store = "{root / name}"']  # fmt: skip
        config = root / "agency.toml"
        config.write_text("\n".join(lines) + "\n" + TAGS, encoding="utf-8")
        times = []
        for _ in range(options.runs):
            started = time.perf_counter()
            subprocess.run(_command("report", "--html", "--config", str(config), "--out",
                                    str(root / "page")), check=True, env=_environment(),
                           stdout=subprocess.DEVNULL)  # fmt: skip
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import toolkit.cli, toolkit.reporting"],
                       check=True, env=_environment())  # fmt: skip
        start_up = time.perf_counter() - started
        size = (root / "page" / "agency-report.html").stat().st_size
    median = sorted(times)[len(times) // 2]
    table = Table("11. The agency page: three workspaces of the demo's size")
    table.verdict("toolkit report --html --config (3 workspaces)", f"{median:.2f} s",
                  median < TARGET, f"under {TARGET:.0f} s; runs {spread(times)}")  # fmt: skip
    table.add("Python's start with the command's imports", f"{start_up:.2f} s", "included above")
    table.add("the page", f"{size / 1024:.0f} KiB", "self-contained")
    return [table]
