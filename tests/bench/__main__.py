"""Run the benchmarks: `.venv/bin/python -m tests.bench [names] [--quick]`.

Names: pull (with the incremental snapshot and the emulator's figures), history,
uploads, webhooks, dashboard, watch, agency; all of them by default. `growth` (issue 31's table
over sizes of history, hours at its full matrix) and `explain` (tk.explain of each headline
figure over a week, `--days` of history) and `period` (issue 43's questions that read
their period, against the code before them) and `equal` (the kept and extended run
stages against the pipeline on a long history, `--store`) run only when named. Each
prints its table as it finishes; with `--out FILE` the tables are also written to FILE (Markdown).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from tests.bench.table import Table, machine

NAMES = ("pull", "history", "uploads", "webhooks", "dashboard", "watch", "agency")
ON_REQUEST = ("growth", "explain", "period", "equal")


def _pull(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_pull import PullOptions, run

    runs = args.runs or (1 if args.quick else 3)
    if args.quick:
        return run(PullOptions(projects=20, runs=runs))
    projects = max(1, args.chapters // 100)
    if args.incremental_only:
        return run(PullOptions(projects=projects, latency_ms=0, incremental_only=True))
    return run(PullOptions(projects=projects, runs=runs, full_loop=args.full_loop))


def _history(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_history import HistoryOptions, run

    days = args.days or (30 if args.quick else 365)
    options = HistoryOptions(
        hours=24 * days,
        chapters=args.chapters,
        projects=max(1, args.chapters // 100),
        runs=args.runs or 3,
        store=args.store,
    )
    return run(options)


def _uploads(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_uploads import UploadOptions, run

    megabytes = 80 if args.quick else 400
    return run(UploadOptions(megabytes=megabytes, runs=args.runs or (1 if args.quick else 2)))


def _webhooks(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_webhooks import WebhookOptions, run

    return run(WebhookOptions(deliveries=400 if args.quick else 2_000, runs=args.runs or 5))


def _dashboard(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_dashboard import DashboardOptions, run

    return run(DashboardOptions(runs=args.runs or 3))


def _watch(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_watch import WatchOptions, run

    if args.quick:
        return run(WatchOptions(projects=20, runs=args.runs or 1))
    return run(WatchOptions(runs=args.runs or 3))


def _agency(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_agency import AgencyOptions, run

    return run(AgencyOptions(runs=args.runs or 3, store=args.store))


def _growth(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_growth import FIGURES, MATRIX, GrowthOptions, Size, run

    figures = tuple(args.figures.split(",")) if args.figures else FIGURES
    unknown = [f for f in figures if f not in FIGURES]
    if unknown:
        raise SystemExit(f"--figures: no {', '.join(unknown)}; choose from {', '.join(FIGURES)}")
    sizes = args.sizes.split(",") if args.sizes else MATRIX
    return run(
        GrowthOptions(
            sizes=tuple(Size.parse(s) for s in sizes),
            store_root=args.store_root,
            figures=figures,
            recorded=args.recorded,
            limit_seconds=args.limit,
        )
    )


def _explain(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_explain import ExplainOptions, run

    days = args.days or (30 if args.quick else 365)
    return run(ExplainOptions(days=days, chapters=args.chapters, runs=args.runs or 3,
                              store=args.store))  # fmt: skip


def _period(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_growth import Size
    from tests.bench.bench_period import BEFORE, MORE, QUESTIONS, PeriodOptions, run

    known = (*QUESTIONS, *MORE)
    questions = tuple(args.figures.split(",")) if args.figures else QUESTIONS
    questions = known if questions == ("all",) else questions
    unknown = [q for q in questions if q not in known]
    if unknown:
        raise SystemExit(
            f"--figures: no {', '.join(unknown)}; choose from {', '.join(known)}, or all"
        )
    sizes = args.sizes.split(",") if args.sizes else ["10000x30"]
    return run(
        PeriodOptions(
            sizes=tuple(Size.parse(s) for s in sizes),
            store_root=args.store_root,
            against=args.against or BEFORE,
            runs=args.runs or 3,
            questions=questions,
        )
    )


def _equal(args: argparse.Namespace) -> list[Table]:
    from tests.bench.bench_equal import EqualOptions, run

    if args.store is None:
        raise SystemExit("equal: give the store to check with --store DIR (it is copied)")
    return run(EqualOptions(store=args.store, days=args.days or 365, chapters=args.chapters))


BENCHMARKS: dict[str, Callable[[argparse.Namespace], list[Table]]] = {
    "pull": _pull,
    "history": _history,
    "uploads": _uploads,
    "webhooks": _webhooks,
    "dashboard": _dashboard,
    "watch": _watch,
    "agency": _agency,
    "growth": _growth,
    "explain": _explain,
    "period": _period,
    "equal": _equal,
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__)
    # argparse checks the empty default of nargs="*" against the choices too.
    parser.add_argument(
        "names", nargs="*", choices=[*NAMES, *ON_REQUEST, []], help="benchmarks to run"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a month of history")
    parser.add_argument("--runs", type=int, default=None, help="repeats of each timing")
    parser.add_argument(
        "--incremental-only",
        action="store_true",
        help="pull: only the incremental snapshot (2.), without injected latency",
    )
    parser.add_argument("--full-loop", action="store_true", help="time the naive loop whole")
    parser.add_argument(
        "--store",
        default=None,
        help="history, agency, explain: keep the store here, or reuse it; equal: the store",
    )
    parser.add_argument(
        "--chapters", type=int, default=10_000, help="history, pull: chapters (100 a project)"
    )
    parser.add_argument(
        "--days", type=int, default=None, help="history: days of hourly snapshots (365)"
    )
    parser.add_argument(
        "--sizes", default=None, help="growth: CHAPTERSxDAYS,... (default: the issue's matrix)"
    )
    parser.add_argument(
        "--store-root", default=None, help="growth: keep a store per size here, or reuse it"
    )
    parser.add_argument(
        "--recorded",
        action="store_true",
        help="growth: print what --store-root holds, measure nothing",
    )
    parser.add_argument(
        "--limit", type=float, default=1800.0, help="growth: stop a figure after this many seconds"
    )
    parser.add_argument(
        "--figures", default=None, help="growth, period: only these figures (a,b,...)"
    )
    parser.add_argument(
        "--against", default=None, help="period: the commit whose toolkit is the code before"
    )
    parser.add_argument("--out", default=None, help="also write the tables to this file")
    args = parser.parse_args()
    print(f"Machine: {machine()}\n", flush=True)
    tables: list[Table] = []
    started = time.perf_counter()
    for name in args.names or NAMES:
        began = time.perf_counter()
        for table in BENCHMARKS[name](args):
            table.print()
            tables.append(table)
        print(f"({name}: {time.perf_counter() - began:.0f} s)\n", flush=True)
    print(f"All done in {time.perf_counter() - started:.0f} s.")
    if args.out:
        with open(args.out, "w") as out:
            out.write(f"Machine: {machine()}\n\n")
            out.write("\n\n".join(table.render() for table in tables) + "\n")


if __name__ == "__main__":
    main()
