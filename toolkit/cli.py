"""The `toolkit` command: a thin layer over the public API.

```
toolkit demo       [--out data/demo] [--hours 24]
toolkit snapshot   [--store PATH] [--details changed|all|none]
toolkit report     [--store PATH] [--out DIR]
toolkit emulator   [--host 127.0.0.1] [--port 8765] [--clock manual|realtime] [--speed 60]
                   [--seed demo|none] [--state FILE] [--admin-token TOKEN]
toolkit webhooks serve [--host] [--port] [--store PATH]
toolkit store migrate OLD NEW                        # a first-layout store into Delta Lake
toolkit store check [--store PATH] [--repair]        # damaged, orphaned, temporary files
```

Every handler imports what it needs when it runs, so `toolkit --help` stays quick.
A `ToolkitError` ends the command with its message and exit status 1, not a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from toolkit.errors import ToolkitError


def _demo(args: argparse.Namespace) -> None:
    from toolkit.demo import run_demo

    run_demo(out=args.out, hours=args.hours)


def _snapshot(args: argparse.Namespace) -> None:
    from toolkit.client import Client
    from toolkit.config import store_path
    from toolkit.store import SnapshotStore

    store = SnapshotStore(store_path(args.store))
    with Client() as client:
        info = store.take(client, details=args.details)
    print(info)


def _report(args: argparse.Namespace) -> None:
    from toolkit.config import store_path
    from toolkit.report import write_report

    write_report(store_path(args.store), out=args.out)


def _emulator(args: argparse.Namespace) -> None:
    from toolkit.emulator.server import run_server

    run_server(
        host=args.host,
        port=args.port,
        clock=args.clock,
        speed=args.speed,
        seed=args.seed,
        state=args.state,
        admin_token=args.admin_token,
    )


def _webhooks_serve(args: argparse.Namespace) -> None:
    from toolkit.webhooks import serve

    serve(host=args.host, port=args.port, store=args.store)


def _store_migrate(args: argparse.Namespace) -> None:
    from toolkit.store.migrate import migrate

    copied = migrate(args.old, args.new)
    rows = ", ".join(f"{name} {count:,}" for name, count in copied.items())
    print(f"migrated {args.old} to {args.new}: rows copied: {rows}")


def _store_check(args: argparse.Namespace) -> None:
    from toolkit.config import store_path
    from toolkit.store.check import check

    root = store_path(args.store)
    findings = check(root, repair=args.repair)
    for finding in findings:
        print(finding)
    if not findings:
        print(f"{root}: every file is sound")
    elif not args.repair:
        print(f"{len(findings)} problem(s); `toolkit store check --store {root} --repair` "
              "moves the files to _quarantine/")  # fmt: skip
    args.exit_status = 1 if findings and not args.repair else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolkit", description="Work with the Chapter Translation Service."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="run a simulated day on a local emulator")
    demo.add_argument("--out", default="data/demo", help="where the report goes")
    demo.add_argument("--hours", type=float, default=24, help="simulated hours to run")
    demo.set_defaults(handler=_demo)

    snapshot = commands.add_parser("snapshot", help="take a snapshot of the workspace")
    snapshot.add_argument("--store", default=None, help="store location (default CTS_STORE)")
    snapshot.add_argument("--details", choices=["changed", "all", "none"], default="changed")
    snapshot.set_defaults(handler=_snapshot)

    report = commands.add_parser("report", help="write PNG plots and a summary table")
    report.add_argument("--store", default=None, help="store location (default CTS_STORE)")
    report.add_argument("--out", default="data/report", help="folder for the report")
    report.set_defaults(handler=_report)

    emulator = commands.add_parser("emulator", help="serve a local emulator of the service")
    emulator.add_argument("--host", default="127.0.0.1")
    emulator.add_argument("--port", type=int, default=8765)
    emulator.add_argument("--clock", choices=["manual", "realtime"], default="realtime")
    emulator.add_argument("--speed", type=float, default=60.0, help="simulated s per real s")
    emulator.add_argument("--seed", choices=["demo", "none"], default="none")
    emulator.add_argument("--state", default=":memory:", help="SQLite file for its state")
    emulator.add_argument("--admin-token", default=None, help="token for /_emulator routes")
    emulator.set_defaults(handler=_emulator)

    webhooks = commands.add_parser("webhooks", help="webhook receiver")
    webhook_commands = webhooks.add_subparsers(dest="webhooks_command", required=True)
    serve = webhook_commands.add_parser("serve", help="receive signed deliveries")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8766)
    serve.add_argument("--store", default=None, help="store location (default CTS_STORE)")
    serve.set_defaults(handler=_webhooks_serve)

    store = commands.add_parser("store", help="look after a snapshot store")
    store_commands = store.add_subparsers(dest="store_command", required=True)
    migrate = store_commands.add_parser("migrate", help="convert a first-layout store")
    migrate.add_argument("old", help="the store in the first layout (left unchanged)")
    migrate.add_argument("new", help="a new folder for the Delta Lake store")
    migrate.set_defaults(handler=_store_migrate)
    check = store_commands.add_parser("check", help="find damaged and stray files")
    check.add_argument("--store", default=None, help="store location (default CTS_STORE)")
    check.add_argument("--repair", action="store_true", help="move them to _quarantine/")
    check.set_defaults(handler=_store_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except ToolkitError as exc:
        print(f"toolkit {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return int(getattr(args, "exit_status", 0))


if __name__ == "__main__":
    sys.exit(main())
