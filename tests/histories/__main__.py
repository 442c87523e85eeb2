"""`python -m tests.histories --seeds N [--first K]`: play and check N seeds from the
checkout, print each failure with its plan, and the time taken; exit 1 on any failure."""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TESTS), str(TESTS / "analysis")]  # as pytest's rootdir conftest has it

from histories.checks import play_and_check  # noqa: E402
from histories.plan import draw  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.histories", description=__doc__)
    parser.add_argument("--seeds", type=int, default=25, help="how many seeds (default 25)")
    parser.add_argument("--first", type=int, default=0, help="the first seed (default 0)")
    args = parser.parse_args(argv)
    failed: list[int] = []
    began = time.monotonic()
    for seed in range(args.first, args.first + args.seeds):
        plan = draw(seed)
        started = time.monotonic()
        try:
            play_and_check(plan)
        except Exception:
            failed.append(seed)
            print(f"seed {seed} FAILED: {plan}\n{traceback.format_exc()}", flush=True)
        else:
            print(f"seed {seed} ok in {time.monotonic() - started:.1f} s "
                  f"({plan.snapshots} snapshots every {plan.interval} s)", flush=True)  # fmt: skip
    took = time.monotonic() - began
    print(f"{args.seeds - len(failed)} of {args.seeds} seeds passed in {took:.0f} s"
          + (f"; failed: {' '.join(map(str, failed))}" if failed else ""))  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
