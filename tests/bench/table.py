"""Figures as a printed table, and the few statistics the benchmarks need.

The machine is shared and noisy, so every benchmark repeats what it times and reports
the median, and compares two things measured in the same run as a ratio rather than
against a figure from another day.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


def median_time(work: Callable[[], Any], *, runs: int) -> tuple[float, list[float]]:
    """The median wall time of `runs` calls of `work`, and every time measured."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times), times


def spread(times: Sequence[float]) -> str:
    """The range of a set of times, as `min-max s`."""
    return f"{min(times):.2f}-{max(times):.2f} s"


def megabytes(size: float) -> str:
    return f"{size / 1_048_576:,.1f} MiB"


@dataclass
class Table:
    """Rows of (figure, value, note), printed aligned under a title."""

    title: str
    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, figure: str, value: str, note: str = "") -> None:
        self.rows.append((figure, value, note))

    def verdict(self, figure: str, value: str, met: bool, target: str) -> None:
        """A row measured against a target, marked met or MISSED."""
        self.add(figure, value, f"{'met' if met else 'MISSED'}: target {target}")

    def render(self) -> str:
        widths = [
            max(len(row[i]) for row in [("figure", "value", "note"), *self.rows]) for i in (0, 1)
        ]
        lines = [f"## {self.title}", ""]
        lines.append(f"| {'figure':<{widths[0]}} | {'value':>{widths[1]}} | note")
        lines.append(f"|{'-' * (widths[0] + 2)}|{'-' * (widths[1] + 2)}|------")
        for figure, value, note in self.rows:
            lines.append(f"| {figure:<{widths[0]}} | {value:>{widths[1]}} | {note}")
        return "\n".join(lines)

    def print(self) -> None:
        print(self.render(), flush=True)
        print(flush=True)


def machine() -> str:
    """One line naming the machine the figures come from."""
    memory = ""
    try:
        with open("/proc/meminfo") as info:
            kib = int(info.readline().split()[1])
        memory = f", {kib / 1_048_576:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    load = (
        ", load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else ""
    )
    return (
        f"{os.cpu_count()} cores{memory}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}{load}; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def reset_peak() -> int:
    """Reset the kernel's peak-RSS mark to the current RSS and return it, in bytes."""
    with open("/proc/self/clear_refs", "w") as control:
        control.write("5")
    return _proc_status("VmRSS")


def peak() -> int:
    """The process's peak RSS since its start or the last `reset_peak`, in bytes (Linux)."""
    return _proc_status("VmHWM")


def _proc_status(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")
