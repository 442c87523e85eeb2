"""`toolkit demo --hours 3` at the suite's instant, through the command line: what it wrote
and printed, and the day it simulated (tests/conftest.py's session-scoped `demo`, read by
tests/test_demo.py and tests/reporting/test_explanations.py)."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from epochs import SUITE_START

from toolkit import demo as demo_module
from toolkit.cli import main
from toolkit.demo import Day, simulate_day


@dataclass(frozen=True)
class Demo:
    """What one demo wrote (`out`) and printed, and the day it simulated."""

    out: Path
    printed: str
    day: Day


def run_short_demo(out: Path, *, hours: int = 3) -> Demo:
    """Run the demo (`hours` simulated hours) into `out`, keeping the `Day` that
    `run_demo` simulated (for the checks of its ledger) by wrapping `simulate_day`."""
    days: list[Day] = []

    def kept(*args: Any, **kwargs: Any) -> Day:
        days.append(simulate_day(*args, **kwargs))
        return days[-1]

    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setattr(demo_module, "simulate_day", kept)
        start = SUITE_START.isoformat()
        assert main(["demo", "--out", str(out), "--hours", str(hours), "--start", start]) == 0
    return Demo(out, printed.getvalue(), days[0])
