"""The `toolkit` command: a thin layer over the public API.

```
toolkit demo       [--out data/demo] [--hours 24]
toolkit snapshot   [--store PATH] [--details changed|all|none] [--workspace NAME ...]
toolkit report     [--store PATH] [--out DIR] [--workspace NAME ...]
toolkit emulator   [--host 127.0.0.1] [--port 8765] [--clock manual|realtime] [--speed 60]
                   [--seed demo|none] [--state FILE] [--admin-token TOKEN]
toolkit webhooks serve [--host] [--port] [--store PATH]
```

Every handler imports what it needs when it runs, so `toolkit --help` stays quick.
A `ToolkitError` ends the command with its message and exit status 1, not a traceback.
"""

from __future__ import annotations

import argparse
import os
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

    if args.workspace:
        _snapshot_workspaces(args)
        return
    store = SnapshotStore(store_path(args.store))
    with Client() as client:
        info = store.take(client, details=args.details)
    print(info)


def _snapshot_workspaces(args: argparse.Namespace) -> None:
    """One snapshot per named workspace, each with its own key, into its own store."""
    import inspect

    from toolkit.agency import read_config, workspace_settings
    from toolkit.client import Client
    from toolkit.store import SnapshotStore

    config = read_config(args.config)
    settings = [workspace_settings(n, config=config, store_root=args.store) for n in args.workspace]
    # Stores that record a workspace label in their manifest (the Delta Lake store) get it.
    labelled = "workspace" in inspect.signature(SnapshotStore).parameters
    failed = []
    for workspace in settings:
        try:
            with Client(workspace.base_url, workspace.api_key.reveal()) as client:
                label = {"workspace": workspace.name} if labelled else {}
                store = SnapshotStore(workspace.store, **label)
                info = store.take(client, details=args.details)
        except ToolkitError as exc:
            print(f"{workspace.name}: {exc}", file=sys.stderr)
            failed.append(workspace.name)
            continue
        print(f"{workspace.name}: {info}")
    if failed:
        raise ToolkitError(f"no snapshot of {', '.join(failed)} (see above); the others were taken")


def _report(args: argparse.Namespace) -> None:
    from toolkit.config import store_path
    from toolkit.report import write_report

    if not args.workspace:
        write_report(store_path(args.store), out=args.out)
        return
    # One report per workspace, each with the whole agency's spend this month.
    from toolkit.agency import read_config, workspace_store
    from toolkit.store import SnapshotStore

    config = read_config(args.config)
    stores = {
        name: SnapshotStore(config.get(name, {}).get("store") or workspace_store(name, args.store))
        for name in args.workspace
    }
    for name, store in stores.items():
        write_report(store, out=os.path.join(args.out, name), workspaces=stores)


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
    snapshot.add_argument(
        "--workspace", action="append", metavar="NAME",
        help="a workspace of several (repeat it); key from CTS_API_KEY_<NAME> or --config, "
        "store under --store/NAME",
    )  # fmt: skip
    snapshot.add_argument("--config", default=None, help="workspaces config (TOML)")
    snapshot.set_defaults(handler=_snapshot)

    report = commands.add_parser("report", help="write PNG plots and a summary table")
    report.add_argument("--store", default=None, help="store location (default CTS_STORE)")
    report.add_argument("--out", default="data/report", help="folder for the report")
    report.add_argument(
        "--workspace", action="append", metavar="NAME",
        help="report on a workspace of several (repeat it): its store under --store/NAME, "
        "its report under --out/NAME, with every named workspace's spend this month",
    )  # fmt: skip
    report.add_argument("--config", default=None, help="workspaces config (TOML)")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
