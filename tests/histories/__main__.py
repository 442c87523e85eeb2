"""`python -m tests.histories --seeds N [--first K]`: play and check N seeds from the
checkout, print each failure with its plan and the time taken; the last line is `N
seeds: M held`, exit 0 only when all held."""

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
            extended, updated = play_and_check(plan)
        except Exception:
            failed.append(seed)
            print(f"seed {seed} FAILED: {plan}\n{traceback.format_exc()}", flush=True)
        else:
            print(f"seed {seed} ok in {time.monotonic() - started:.1f} s "
                  f"({plan.snapshots} snapshots every {plan.interval} s, "
                  f"{sum(extended)} of {len(extended)} read extended, "
                  f"{sum(updated)} updated)", flush=True)  # fmt: skip
    took = time.monotonic() - began
    if failed:
        print(f"failed: {' '.join(map(str, failed))}")
    print(f"{took:.0f} s")
    # The last line, as DESIGN.md has it.
    print(f"{args.seeds} seeds: {args.seeds - len(failed)} held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
