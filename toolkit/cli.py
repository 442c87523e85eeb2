"""The `toolkit` command: a thin layer over the public API.

Past 400 lines on purpose: every command is a few lines over the public API, and the
parser and the one place that turns an error into a line on stderr belong with them.

```
toolkit demo       [--out data/demo] [--hours 24] [--start ISO]
toolkit snapshot   [--store PATH] [--details changed|all|none] [--workspace NAME ...]
toolkit report     [--store PATH] [--out DIR] [--html | --json | --xlsx] [--tz ZONE] [--days 7]
                   [--workspace NAME ...]
toolkit report --html --config watch.toml [--workspace NAME ...]   # the agency page
toolkit report --json | --xlsx --config watch.toml [--store PATH]   # by its [tags] too
toolkit report --html --config watch.toml --store PATH   # one weekly page, by its [tags] too
toolkit explain    FIGURE [--store PATH] [--project NAME] [--language CODE] [--since ISO]
                   [--until ISO] [--tz ZONE] [--csv FILE]   # the rows behind a figure
toolkit explain    FIGURE --by KEY --config watch.toml [--rows] [--csv FILE] ...   # by a tag
toolkit emulator   [--host 127.0.0.1] [--port 8765] [--clock manual|realtime] [--speed 60]
                   [--seed demo|none] [--state FILE] [--admin-token TOKEN] [--start ISO]
                   [--chaos RULES.json] [--record FILE] [--replay FILE]
toolkit conformance --base-url URL [--write] [--project NAME] [--receiver HOST:PORT] [--wait S]
toolkit webhooks serve [--host] [--port] [--store PATH]
toolkit upload     DIR --project NAME [--yes] [--budget CREDITS] [--store PATH]
toolkit store migrate PATH [NEW]                     # an earlier toolkit's store, upgraded
toolkit store check [--store PATH] [--repair]        # damage, said in snapshots
toolkit sql FIGURE [--store PATH] [--print [--events yes|no]]   # a run figure by DuckDB
toolkit watch --config watch.toml [--once] [--interval 15m]   # checks and alerts
toolkit --version                                    # the installed version
```

Every handler imports what it needs when it runs, so `toolkit --help` stays quick.
An error ends the command with one line `toolkit <command>: ...` on stderr, never a
traceback (`_stopped` says which line and status): exit status 1 when the command
refused (a mistyped option or value, a setting, a path, a port that is out of range,
taken or not allowed, what the service refused), 2 when something it depends on failed
(the service never answered, the store could not be read or written: damaged, on a
read-only or full disk). argparse's own refusals are one line and 1 too (`_Parser`), not
its usage text and 2. A native library's panic (delta-rs' threads on a full disk) is
kept off stderr (`toolkit.native_stderr`), so the line is the last thing shown.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import toolkit
from toolkit.errors import (
    ApiError,
    ConfigError,
    DamagedStore,
    IncompletePull,
    InvalidUpload,
    ToolkitError,
    TransportError,
    in_plain_words,
)
from toolkit.formatting import first_line
from toolkit.huge_pages import without_huge_page_advice
from toolkit.native_stderr import panics_kept_off_stderr

if TYPE_CHECKING:
    from toolkit.batch import UploadSummary
    from toolkit.client import Client
    from toolkit.store import SnapshotStore

__all__ = ["main"]

_START_HELP = "the instant the emulator's clock starts at (default: now), e.g. 2026-10-25T00:30Z"


def _instant(text: str) -> datetime:
    """An ISO 8601 instant with its zone, for `--start`."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no time zone: add Z for UTC")
    return when


def _positive(text: str) -> float:
    """A number over 0, for `--speed`."""
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not number > 0:  # (NaN too)
        raise argparse.ArgumentTypeError(f"{text} is not more than 0")
    return number


def _days(text: str) -> int:
    """A whole number of days, 1 or more, for `--days`."""
    try:
        days = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days") from None
    if days < 1:
        raise argparse.ArgumentTypeError(f"{days} days cover nothing: give 1 or more")
    return days


def _time(text: str) -> str:
    """A time `explain` reads as pandas does (`2026-03-01`, `2026-03-01T09:00Z`), kept
    as written: the zone of a naive one is --tz's."""
    import pandas as pd

    try:
        pd.Timestamp(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give an ISO 8601 one such as 2026-03-01 or 2026-03-01T09:00Z"
        ) from None
    return text


class _Parser(argparse.ArgumentParser):
    """argparse, its refusals in the command's one line and exit status 1: its own way
    (the usage, then the error) exits 2, which here says something the command depends
    on failed."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: {message} (`{self.prog} --help` says what it takes)\n")


def _chaos_file(path: str) -> list[Any]:
    """The chaos rules of `toolkit emulator --chaos FILE`: a JSON list (the emulator checks
    each rule before it starts)."""
    import json

    try:
        with open(path, encoding="utf-8") as file:
            rules = json.load(file)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path!r}: {exc.strerror}") from None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{path!r} is not JSON: {exc}") from None
    if not isinstance(rules, list):
        raise argparse.ArgumentTypeError(f"{path!r} must hold a JSON list of chaos rules")
    return rules


def _demo(args: argparse.Namespace) -> None:
    from toolkit.demo import run_demo

    run_demo(out=args.out, hours=args.hours, start=args.start)


def _client(args: argparse.Namespace, base_url: str | None = None, api_key: Any = None) -> Client:
    """The command's client; its base URL is kept for the line that says it got no answer."""
    from toolkit.client import Client

    client = Client(base_url, api_key)
    args.base_url = client.base_url
    return client


def _snapshot(args: argparse.Namespace) -> None:
    from toolkit.config import store_path
    from toolkit.store import SnapshotStore

    if args.workspace:
        _snapshot_workspaces(args)
        return
    store = SnapshotStore(store_path(args.store))
    with _client(args) as client:
        info = store.take(client, details=args.details)
    print(info)
    _update_runs(store)


def _update_runs(store: SnapshotStore) -> None:
    """After a snapshot: the run stages a store keeps brought up to it (a part over the
    last kept whole), so the next figure, page or watch joins them rather than working
    them out from the log since (`toolkit.analysis.update_runs`; never an error)."""
    from toolkit.analysis import update_runs

    update_runs(store)


def _snapshot_workspaces(args: argparse.Namespace) -> None:
    """One snapshot per named workspace, each with its own key, into its own store."""
    from toolkit.agency import read_workspaces_config, workspace_settings
    from toolkit.store import SnapshotStore

    config = read_workspaces_config(args.config)
    settings = [workspace_settings(n, config=config, store_root=args.store) for n in args.workspace]
    failed = []
    for workspace in settings:
        try:
            with _client(args, workspace.base_url, workspace.api_key) as client:
                store = SnapshotStore(workspace.store, workspace=workspace.name)
                info = store.take(client, details=args.details)
        except ToolkitError as exc:
            print(f"{workspace.name}: {_stopped(exc, args)[0]}", file=sys.stderr)
            failed.append(workspace.name)
            continue
        print(f"{workspace.name}: {info}")
        _update_runs(store)
    if failed:
        raise ToolkitError(f"no snapshot of {', '.join(failed)} (see above); the others were taken")


def _report(args: argparse.Namespace) -> None:
    from pathlib import Path

    from toolkit.config import store_path
    from toolkit.reporting import report, write_report

    if args.html and args.config and not args.store:
        _agency_page(args)
        return
    if args.html:
        from toolkit.watch import read_config

        # With --store, one workspace's weekly page, by the config's [tags] too.
        page = report(
            store_path(args.store),
            Path(args.out) / "weekly-report.html",
            days=args.days,
            tz=args.tz,
            tags=read_config(args.config).tags if args.config else None,
        )
        print(f"Weekly report written to {page}")
        return
    if args.json or args.xlsx:
        from toolkit.watch import read_config

        # A watch config's [tags]: the figures by each tag too (figures.json's by_tag, a
        # sheet per tag).
        tags = read_config(args.config).tags if args.config else None
        kind: Literal["json", "xlsx"] = "json" if args.json else "xlsx"
        path = report(store_path(args.store), args.out, format=kind, days=args.days,
                      tz=args.tz, tags=tags)  # fmt: skip
        what = "Figures" if args.json else "Figures, explanations and forecast"
        print(f"{what} written to {path}")
        return
    if args.tz is not None:
        raise ToolkitError(
            "--tz sets the zone of the weekly page's days (--html) and of figures.json "
            "(--json); the PNG report is in UTC: add --html or --json, or leave --tz out"
        )
    if not args.workspace:
        write_report(store_path(args.store), out=args.out, days=args.days)
        return
    # One report per workspace, each with the whole agency's spend this month.
    from toolkit.agency import read_workspaces_config, workspace_store
    from toolkit.store import SnapshotStore

    config = read_workspaces_config(args.config)
    stores = {
        name: SnapshotStore(config.get(name, {}).get("store") or workspace_store(name, args.store))
        for name in args.workspace
    }
    for name, store in stores.items():
        write_report(store, out=os.path.join(args.out, name), workspaces=stores, days=args.days)


def _agency_page(args: argparse.Namespace) -> None:
    """The agency page over the config's workspaces (or those named), with its tags."""
    from pathlib import Path

    from toolkit.reporting import gather_agency, write_agency_page
    from toolkit.watch import read_config

    config = read_config(args.config)
    names = args.workspace or list(config.workspaces)
    unknown = [name for name in names if name not in config.workspaces]
    if unknown:
        raise ToolkitError(
            f"no workspace {unknown[0]!r} in {args.config}; it names {', '.join(config.workspaces)}"
        )
    stores = {name: config.workspaces[name].store for name in names}
    try:
        agency = gather_agency(stores, tags=config.tags, days=args.days, tz=args.tz)
    except ValueError as exc:
        raise ToolkitError(str(exc)) from exc
    page = write_agency_page(agency, Path(args.out) / "agency-report.html")
    many = "s" if len(stores) != 1 else ""
    print(f"Agency page ({len(stores)} workspace{many}) written to {page}")


def _explain(args: argparse.Namespace) -> None:
    from toolkit import metrics
    from toolkit.config import store_path
    from toolkit.formatting import show
    from toolkit.reporting import HOW, TAKEN, explain, label, period, recount
    from toolkit.store import SnapshotStore

    args.figure = metrics.ALIASES.get(args.figure, args.figure)  # a column's other name
    if args.by or args.config or args.rows:
        _explain_by(args)
        return
    path = store_path(args.store)
    store = SnapshotStore(path)
    bounds = {"since": args.since, "until": args.until, "tz": args.tz or "UTC"}
    try:
        when = period(store, **bounds)
    except ValueError as exc:  # no snapshots yet
        raise ToolkitError(f"the store {path}: {exc}") from exc
    try:  # the figure, the project or the language asked for: said in their own words
        rows = explain(store, args.figure, project=args.project, language=args.language, **bounds)
    except ValueError as exc:
        raise ToolkitError(str(exc)) from exc
    if args.csv:
        os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)  # as tk.report
        rows.to_csv(args.csv, index=False)
        print(f"{len(rows)} rows of {args.figure} written to {args.csv}")
        return
    figure = metrics.FIGURES[args.figure]
    if not when.has_data:
        print(f"{label(args.figure, when)}: no data (no snapshot in the period)")
        return
    total = recount(rows, args.figure)
    said = show(args.figure, total) or "unknown"
    unit = f" {figure.unit}" if figure.format in ("count", "credits") else ""
    print(f"{label(args.figure, when)}: {said}{unit}, {len(rows)} rows")
    if HOW[args.figure] != "sum":  # how the rows make it, to check by hand
        print(f"Taken as: {TAKEN[HOW[args.figure]]}")
    _print_rows(rows, args.figure)


def _print_rows(rows: Any, name: str) -> None:
    """An explanation's rows as a table: the value under the figure's label (a ratio's
    rows hold its parts, not the figure: shown as plain numbers), the rule said once
    above them when every row shares it, empty columns left out."""
    from toolkit import metrics
    from toolkit.formatting import text
    from toolkit.reporting import HOW

    value = "numerator" if HOW[name] == "ratio" else name
    shown = rows.drop(columns=["figure"]).rename(columns={"value": value})
    if shown["counts"].all():  # every row counts: nothing to mark
        shown = shown.drop(columns=["counts"])
    if shown["rule"].nunique() <= 1:  # one rule for every row: said once, above the rows
        print(f"Counted: {metrics.FIGURES[name].definition}")
        shown = shown.drop(columns=["rule"])
    shown = shown.dropna(axis="columns", how="all")
    if len(shown):
        print(text(shown))


def _explain_by(args: argparse.Namespace) -> None:
    """`toolkit explain FIGURE --by KEY --config FILE`: the figure per value of a tag
    of the config's [tags], remade from each value's rows (docs/figures.md, "Figures by
    a tag"), over `--store` or else every workspace of the config; `--rows` the rows
    with their tag, `--csv` what is printed, as CSV."""
    from toolkit.analysis import GROUP_KEY
    from toolkit.config import store_path
    from toolkit.formatting import text
    from toolkit.reporting import (
        HOW,
        TAKEN,
        check_tag,
        explained_by_tag,
        label,
        tagged,
        with_groups,
    )
    from toolkit.store import SnapshotStore
    from toolkit.watch import read_config

    # The service's translation group is a tag of every store: no config needed.
    alone = args.by == GROUP_KEY and not args.config
    if not (args.by and (args.config or alone)):
        missing = "--config FILE (the watch config whose [tags] it reads)" if args.by else (
            "--by KEY (a tag of the config's [tags], such as client, or "
            f"{GROUP_KEY})")  # fmt: skip
        raise ToolkitError(f"grouping by a tag needs --by and --config: add {missing}")
    config = read_config(args.config) if args.config else None
    stores = (
        {"": args.store or store_path(None)}
        if args.store or config is None
        else {n: w.store for n, w in config.workspaces.items()}
    )
    named = args.config or "the store"
    try:
        own = config.tags if config else {}
        read = [SnapshotStore(where) for where in stores.values()]
        tags = with_groups(own, read, until=args.until, tz=args.tz)
        check_tag(tags if args.by == GROUP_KEY else own, args.by, named)
        rows, every, when = _explained_in_each(args, stores)
        if args.project is not None:
            check_tag(tags, args.by, named, every)
    except ValueError as exc:
        raise ToolkitError(str(exc)) from exc
    if args.rows:
        rows = tagged(rows, tags, args.by)
    sums = explained_by_tag(rows, every, tags, args.by, args.figure)
    if args.csv:
        os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)  # as tk.report
        (rows if args.rows else sums).to_csv(args.csv, index=False)
        what = f"{len(rows)} rows of {args.figure}" if args.rows else (
            f"{args.figure} by {args.by}, {len(sums) - 1} values,")  # fmt: skip
        print(f"{what} written to {args.csv}")
        return
    many = [n for n in stores if n]
    over = f" ({len(many)} workspaces: {', '.join(many)})" if len(many) > 1 else ""
    print(f"{label(args.figure, when)}, by {args.by}{over}")
    if HOW[args.figure] != "sum":  # each value's figure is remade from its own rows
        print(f"Taken as: {TAKEN[HOW[args.figure]]}, over each {args.by}'s rows")
    print(text(sums))
    if args.rows:
        print()
        _print_rows(rows, args.figure)


def _explained_in_each(args: argparse.Namespace, stores: dict[str, str]) -> tuple[Any, Any, Any]:
    """The figure's rows and the projects of each store (`{workspace: store}`; one
    store: `{"": store}`), each row and project with its workspace when there are
    several, and the period of the first (the heading's)."""
    import pandas as pd

    from toolkit.reporting import explain, period
    from toolkit.store import SnapshotStore

    bounds = {"since": args.since, "until": args.until, "tz": args.tz or "UTC"}
    found, projects, when = [], [], None
    for name, where in stores.items():
        store = SnapshotStore(where)
        try:
            own_period = period(store, **bounds)
        except ValueError as exc:  # no snapshots yet
            whose = f"workspace {name!r} (store {where})" if name else f"the store {where}"
            raise ToolkitError(f"{whose}: {exc}") from exc
        when = when or own_period
        own = store.latest("projects")
        own = pd.DataFrame({"project_id": own["project_id"].astype(object),
                            "project": own["name"].astype(object)})  # fmt: skip
        if args.project is not None:
            own = own[(own["project_id"] == args.project) | (own["project"] == args.project)]
            if own.empty and len(stores) > 1:  # the project is in another workspace
                continue
        rows = explain(store, args.figure, project=args.project, language=args.language,
                       **bounds)  # fmt: skip
        if name:  # several workspaces: each row says whose it is, first
            rows.insert(0, "workspace", name)
        found.append(rows)
        projects.append(own.assign(workspace=name) if name else own)
    if not found:
        raise ToolkitError(
            f"no project {args.project!r} in any workspace of {args.config}; give a "
            "project's id or name, or leave out --project"
        )
    return pd.concat(found, ignore_index=True), pd.concat(projects, ignore_index=True), when


def _emulator(args: argparse.Namespace) -> None:
    from toolkit.emulator import ChaosRuleError, NotARecording, run_server

    _check_port(args.port)
    _check_state(args.state)
    try:
        run_server(
            host=args.host,
            port=args.port,
            clock=args.clock,
            speed=args.speed,
            seed=args.seed,
            state=args.state,
            admin_token=args.admin_token,
            start=args.start,
            chaos=args.chaos or [],
            record=args.record,
            replay_from=args.replay,
        )
    except RuntimeError as exc:
        # The one RuntimeError it documents: the address cannot be listened on.
        if not isinstance(exc.__cause__, OSError):
            raise
        raise ToolkitError(
            f"the emulator cannot listen on {args.host}:{args.port} "
            f"({exc.__cause__.strerror or exc.__cause__}); choose another --port "
            "(0: any free one) or --host"
        ) from exc
    except ChaosRuleError as exc:
        raise ToolkitError(f"--chaos: {exc}; fix the file and start again") from exc
    except NotARecording as exc:
        raise ToolkitError(f"--replay: {exc}") from exc


def _host_port(text: str) -> tuple[str, int]:
    """`--receiver HOST:PORT`."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT, e.g. 0.0.0.0:8000")
    return host, int(port)


def _conformance(args: argparse.Namespace) -> None:
    """One line per decision; exit 0 when none differs, 1 when one does, 2 when the check
    could not run (no settings, no answer, the key refused)."""
    from toolkit.conformance import closing_line, run_conformance

    try:
        findings = run_conformance(
            args.base_url,
            write=args.write,
            project=args.project,
            receiver=args.receiver,
            wait=args.wait,
        )
    except (ConfigError, TransportError, ApiError) as exc:
        line = exc.command_line if isinstance(exc, ConfigError) and exc.command_line else str(exc)
        print(f"toolkit conformance: {line}", file=sys.stderr)
        args.exit_status = 2
        return
    for finding in findings:
        print(finding.line())
    print(closing_line(findings))
    args.exit_status = 1 if any(f.verdict == "differs" for f in findings) else 0


def _webhooks_serve(args: argparse.Namespace) -> None:
    from toolkit.webhooks import serve

    _check_port(args.port)
    serve(host=args.host, port=args.port, store=args.store)


def _check_state(path: str) -> None:
    """The emulator's SQLite state file opens (made if missing), or one line says why."""
    import sqlite3

    if path == ":memory:":
        return
    try:
        sqlite3.connect(path).close()
    except sqlite3.Error as exc:
        raise ToolkitError(
            f"the emulator's state file {path} cannot be opened ({exc}); give --state a "
            "file in a folder you can write to, or leave it out to keep the state in memory"
        ) from exc


def _check_port(port: int) -> None:
    if not 0 <= port <= 65535:
        raise ToolkitError(
            f"--port {port} is not a port: give one from 1 to 65535 (0: any free one)"
        )


def _upload(args: argparse.Namespace) -> None:
    """Plan, price, ask, send with a progress bar, sum up: `toolkit.batch` does the work.
    Ctrl-C still exits 130, after saying what was done and that a rerun continues."""
    from toolkit.batch import UploadInterrupted
    from toolkit.formatting import text_table

    try:
        summary = _send_folder(args)
    except UploadInterrupted as stop:
        print(text_table(stop.summary.rows()))
        print(stop.summary.headline())
        raise
    except KeyboardInterrupt:
        print("Interrupted: nothing was sent.")
        raise
    if summary is None:
        return
    print(text_table(summary.rows()))
    print(summary.headline())
    if not summary.complete:
        raise ToolkitError("the upload stopped before the end (see above)")


def _send_folder(args: argparse.Namespace) -> UploadSummary | None:
    """`toolkit upload` up to the summary (None when nothing was sent)."""
    from toolkit.batch import plan_upload, upload
    from toolkit.formatting import text_table

    with _client(args) as client:
        plan = plan_upload(client, args.dir, project=args.project, store=_price_store(args.store))
        if plan.items:
            print(text_table(plan.rows()))
        if not plan.ready:
            listed = "\n".join(f"  {problem}" for problem in plan.problems)
            raise InvalidUpload(f"nothing was sent; fix these first:\n{listed}")
        print(plan.headline())
        if not plan.to_send:
            return None
        over = plan.over_budget(args.budget)
        if over and args.yes:
            raise InvalidUpload(
                f"nothing was sent: {plan.quote.label} is over the budget of {args.budget:,} "
                "credits; raise --budget to send it"
            )
        if not args.yes and not _agree("Send it? [y/N] "):
            print("Nothing was sent.")
            return None
        again = f"That is over your budget of {args.budget or 0:,} credits: send it anyway? [y/N] "
        if over and not _agree(again):
            print("Nothing was sent.")
            return None
        with _Bar(plan.bytes_to_send) as bar:
            return upload(client, plan, on_progress=bar.update)


def _price_store(path: str | None) -> Any:
    """The store to learn prices from, if there is one; never creates one."""
    import os

    from toolkit.config import store_path

    location = store_path(path)
    if "://" not in location and not os.path.isdir(location):
        return None
    from toolkit.store import SnapshotStore

    return SnapshotStore(location)


def _agree(question: str) -> bool:
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:  # no terminal to answer from: the safe answer
        print()
        return False


class _Bar:
    """A tqdm bar over the bytes sent, its label counting chapters."""

    def __init__(self, total: int) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="B", unit_scale=True, desc="Uploading", leave=True)

    def update(self, progress: Any) -> None:
        self.bar.n = progress.bytes_done
        self.bar.set_description(
            f"{progress.chapters_done}/{progress.chapters_total} chapters", refresh=False
        )
        self.bar.refresh()

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.close()


def _store_migrate(args: argparse.Namespace) -> None:
    from toolkit.store import SnapshotStore
    from toolkit.store import migrate_store as migrate

    if args.new is None:
        if "://" not in args.old and not os.path.isdir(args.old):
            raise ToolkitError(
                f"no store at {args.old!r}: it is not a folder; give the folder of a store "
                "an earlier toolkit wrote"
            )
        done = SnapshotStore(args.old).upgrade()
        for line in done:
            print(line)
        print(f"upgraded {args.old}" if done else f"{args.old} is already in the current layout")
        return
    copied = migrate(args.old, args.new)
    rows = ", ".join(f"{name} {count:,}" for name, count in copied.items())
    print(f"migrated {args.old} to {args.new}: rows copied: {rows}")


def _store_check(args: argparse.Namespace) -> None:
    from toolkit.analysis.run_check import check_runs_kept
    from toolkit.config import store_path
    from toolkit.store import check_latest_kept, check_report

    root = store_path(args.store)
    report = check_report(root, repair=args.repair)
    if not report.findings:
        # The run stages and the next write's base kept are worked out from the
        # snapshots: compared only once every snapshot reads as it was taken.
        report.findings.extend(check_runs_kept(root, repair=args.repair))
        report.findings.extend(check_latest_kept(root, repair=args.repair))
    for finding in report.findings:
        print(finding)
    for note in report.notes:
        print(f"note: {note}")
    left = [f for f in report.findings if not (args.repair and f.repairable)]
    if not report.findings:
        print(f"{root}: every snapshot reads as it was taken")
    elif left and not args.repair:
        print(f"{len(left)} problem(s); `toolkit store check --store {root} --repair` "
              "does what each line says")  # fmt: skip
    args.exit_status = 1 if left else 0


def _sql(args: argparse.Namespace) -> None:
    """The figure worked out by DuckDB (or, with --engine spark, Spark) from the store's
    Delta tables alone, as CSV; with --print the script that does it, for `duckdb` (or
    `spark-sql`) where the store is (docs/store.md)."""
    from toolkit.analysis import sql
    from toolkit.config import store_path

    root = store_path(args.store)
    if args.print:
        here = sql.toolkit_uri(root)  # `s3a://`, as Spark spells S3, read as `s3://`
        events = sql.has_events(here) if args.events is None else args.events == "yes"
        # A remote store is not opened to print its script: its exports table is assumed.
        exports = "://" in root or sql.has_exports(here)
        write = sql.spark_script if args.engine == "spark" else sql.script
        print(write(args.figure, root, events=events, exports=exports), end="")
        return
    if args.events is not None:
        raise ToolkitError(
            "--events says what a printed script reads (--print); a figure run here "
            "looks at the store's events itself: leave --events out or add --print"
        )
    if args.engine == "spark":
        frame = sql.run_figure_spark(_spark_session(), args.figure, root)
    else:
        frame = sql.run_figure(args.figure, root)
    print(frame.to_csv(index=False), end="")


def _spark_session() -> Any:
    """This process's SparkSession: the cluster's under `spark-submit`, else a local one."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ToolkitError(
            "--engine spark needs pyspark: `pip install 'chapter-translation-toolkit[spark]'`"
            " (and Java 17 or later), or run the command under spark-submit; "
            "`--print --engine spark` writes the script for spark-sql without it"
        ) from None
    return SparkSession.builder.appName("toolkit sql").getOrCreate()


def _watch(args: argparse.Namespace) -> None:
    """Exit 0 when nothing needs attention, 1 when something does, 2 on an error: a bad
    config, or (with --once) a service that did not answer."""
    import signal
    import threading

    from toolkit.watch import Cycle, parse_duration, read_config, run_cycle, run_forever

    try:
        config = read_config(args.config)
        config.check_secrets()
        interval = parse_duration(args.interval) if args.interval else config.interval
    except (ToolkitError, ValueError) as exc:
        print(f"toolkit watch: {exc}", file=sys.stderr)
        args.exit_status = 2
        return

    def report(cycle: Cycle) -> None:
        for line in cycle.lines():
            print(line, flush=True)
        for name, why in cycle.broken.items():
            print(f"toolkit watch: {name}: {why}", file=sys.stderr, flush=True)

    if args.once:
        try:
            cycle = run_cycle(config)
        except ConfigError as exc:  # a project the config names is not in any workspace
            print(f"toolkit watch: {exc}", file=sys.stderr)
            args.exit_status = 2
            return
        report(cycle)
        args.exit_status = 2 if cycle.broken else int(cycle.needs_attention)
        return
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: stop cleanly, like SIGTERM
            run_forever(config, interval, stop, report)
    except ConfigError as exc:  # found at the first cycle, as with --once
        print(f"toolkit watch: {exc}", file=sys.stderr)
        args.exit_status = 2


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="toolkit", description="Work with the Chapter Translation Service.")
    parser.add_argument("--version", action="version", version=f"toolkit {toolkit.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="run a simulated day on a local emulator")
    demo.add_argument("--out", default="data/demo", help="where the report goes")
    demo.add_argument("--hours", type=float, default=24, help="simulated hours to run")
    demo.add_argument("--start", type=_instant, default=None, help=_START_HELP)
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
    shape = report.add_mutually_exclusive_group()
    shape.add_argument(
        "--html", action="store_true", help="one self-contained weekly page instead of PNGs"
    )
    shape.add_argument(
        "--json", action="store_true", help="only the figures, as --out/figures.json"
    )
    shape.add_argument(
        "--xlsx", action="store_true",
        help="a spreadsheet of the figures, their explanations and the forecast, as "
        "--out/figures.xlsx",
    )  # fmt: skip
    report.add_argument("--days", type=_days, default=7, help="days the page or figures cover")
    report.add_argument(
        "--tz", default=None, metavar="ZONE",
        help="zone of the page's days and times, e.g. Europe/Paris (default UTC)",
    )  # fmt: skip
    report.add_argument(
        "--workspace", action="append", metavar="NAME",
        help="report on a workspace of several (repeat it): its store under --store/NAME, "
        "its report under --out/NAME, with every named workspace's spend this month",
    )  # fmt: skip
    report.add_argument(
        "--config", default=None,
        help="workspaces config (TOML); with --html, the agency page over the watch config's "
        "workspaces and [tags], as --out/agency-report.html (with --store, that store's "
        "weekly page by each of its [tags]); with --json or --xlsx, the figures by each of "
        "its [tags] too",
    )  # fmt: skip
    report.set_defaults(handler=_report)

    explained = commands.add_parser(
        "explain", help="the rows behind a figure: runs, charges, lines, chapters"
    )
    explained.add_argument(
        "figure", metavar="FIGURE",
        help="credits, rework_credits, lines, chapters_finished, runs_failed, runs_stalled, "
        "open_lines or needs_action",
    )  # fmt: skip
    explained.add_argument("--store", default=None, help="store location (default CTS_STORE)")
    explained.add_argument("--project", default=None, help="only this project (name or id)")
    explained.add_argument(
        "--language", default=None, metavar="CODE", help="only this language (lines figures)"
    )
    explained.add_argument("--since", type=_time, metavar="ISO", help="the period's start")
    explained.add_argument("--until", type=_time, metavar="ISO", help="its end, excluded")
    explained.add_argument("--tz", default=None, metavar="ZONE", help="zone of naive times")
    explained.add_argument("--csv", default=None, metavar="FILE", help="write the rows as CSV")
    explained.add_argument(
        "--by", default=None, metavar="KEY",
        help="the figure per value of this tag of --config's [tags] (client, team...), or "
        "of translation_group, the service's group of each project (no --config needed)",
    )  # fmt: skip
    explained.add_argument(
        "--config", default=None, metavar="FILE",
        help="the watch config whose [tags] --by reads; without --store, every workspace's store",
    )  # fmt: skip
    explained.add_argument(
        "--rows", action="store_true", help="with --by: the rows too, each with its tag"
    )
    explained.set_defaults(handler=_explain)

    emulator = commands.add_parser("emulator", help="serve a local emulator of the service")
    emulator.add_argument("--host", default="127.0.0.1")
    emulator.add_argument("--port", type=int, default=8765)
    emulator.add_argument("--clock", choices=["manual", "realtime"], default="realtime")
    emulator.add_argument("--speed", type=_positive, default=60.0, help="simulated s per real s")
    emulator.add_argument("--seed", choices=["demo", "none"], default="none")
    emulator.add_argument("--state", default=":memory:", help="SQLite file for its state")
    emulator.add_argument("--admin-token", default=None, help="token for /_emulator routes")
    emulator.add_argument("--start", type=_instant, default=None, help=_START_HELP)
    emulator.add_argument(
        "--chaos",
        type=_chaos_file,
        default=None,
        metavar="FILE",
        help="a JSON list of chaos rules to start with (docs/emulator.md, Chaos)",
    )
    emulator.add_argument(
        "--record", default=None, metavar="FILE", help="record every request to FILE"
    )
    emulator.add_argument(
        "--replay",
        default=None,
        metavar="FILE",
        help="replay a recording first, then serve what it rebuilt (manual clock)",
    )
    emulator.set_defaults(handler=_emulator)

    conformance = commands.add_parser(
        "conformance", help="check the decisions the toolkit relies on against a service"
    )
    conformance.add_argument(
        "--base-url", default=None, help="the service's root, without /api/v1 (CTS_BASE_URL)"
    )
    conformance.add_argument(
        "--write",
        action="store_true",
        help="also check writes: creates one staged chapter (it stays; no credits spent)",
    )
    conformance.add_argument(
        "--project", default=None, help="the project to write in (default: the first comic)"
    )
    conformance.add_argument(
        "--receiver",
        type=_host_port,
        default=None,
        metavar="HOST:PORT",
        help="receive webhook deliveries here (an endpoint the dashboard points at; "
        "secret in CTS_WEBHOOK_SECRET)",
    )
    conformance.add_argument(
        "--wait", type=float, default=120.0, help="seconds to wait for deliveries (120)"
    )
    conformance.set_defaults(handler=_conformance)

    webhooks = commands.add_parser("webhooks", help="webhook receiver")
    webhook_commands = webhooks.add_subparsers(dest="webhooks_command", required=True)
    serve = webhook_commands.add_parser("serve", help="receive signed deliveries")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8766)
    serve.add_argument("--store", default=None, help="store location (default CTS_STORE)")
    serve.set_defaults(handler=_webhooks_serve)

    upload = commands.add_parser(
        "upload", help="upload a folder of chapters: checked, priced, resumable"
    )
    upload.add_argument("dir", help="chapter-01/ folders of page images, or .txt files")
    upload.add_argument("--project", required=True, help="the project's name (or id)")
    upload.add_argument("--yes", action="store_true", help="send without asking first")
    upload.add_argument(
        "--budget", type=int, default=None, help="credits; a bigger upload asks once more"
    )
    upload.add_argument(
        "--store", default=None, help="snapshot store to learn prices from (default CTS_STORE)"
    )
    upload.set_defaults(handler=_upload)
    store = commands.add_parser("store", help="look after a snapshot store")
    store_commands = store.add_subparsers(dest="store_command", required=True)
    migrate = store_commands.add_parser(
        "migrate", help="upgrade a store an earlier toolkit wrote, in place or into NEW"
    )
    migrate.add_argument("old", metavar="PATH", help="the store an earlier toolkit wrote")
    migrate.add_argument(
        "new", nargs="?", metavar="NEW",
        help="a new folder for a copy of a first-layout store (PATH left unchanged); "
        "without it PATH is upgraded in place",
    )  # fmt: skip
    migrate.set_defaults(handler=_store_migrate)
    check = store_commands.add_parser(
        "check", help="which snapshots damage makes read wrong or loses"
    )
    check.add_argument("--store", default=None, help="store location (default CTS_STORE)")
    check.add_argument("--repair", action="store_true", help="do what each finding says")
    check.set_defaults(handler=_store_check)

    figure_sql = commands.add_parser(
        "sql",
        help="a run figure worked out by DuckDB (or Spark) from the store's tables, or its SQL",
    )
    figure_sql.add_argument(
        "figure", help="a run figure as the toolkit names it: runs, cycle_times, credit_spend, ..."
    )
    figure_sql.add_argument("--store", default=None, help="store location (default CTS_STORE)")
    figure_sql.add_argument(
        "--print", action="store_true",
        help="print the DuckDB script (delta extension; a folder or s3://) instead of running it",
    )  # fmt: skip
    figure_sql.add_argument(
        "--events", choices=("yes", "no"), default=None,
        help="with --print: whether the store holds webhook events (default: look)",
    )  # fmt: skip
    figure_sql.add_argument(
        "--engine", choices=("duckdb", "spark"), default="duckdb",
        help="spark: Spark SQL in materialized steps, run on this process's SparkSession "
        "(pyspark, or under spark-submit) or printed for spark-sql -f (default duckdb)",
    )  # fmt: skip
    figure_sql.set_defaults(handler=_sql)

    watch = commands.add_parser("watch", help="check budgets and trouble, and tell people")
    watch.add_argument("--config", required=True, help="the watch config (TOML, docs/watch.md)")
    watch.add_argument("--once", action="store_true", help="one cycle; exit 0, 1 or 2")
    watch.add_argument("--interval", default=None, help="between cycles (default: the config's)")
    watch.set_defaults(handler=_watch)
    return parser


def _stopped(exc: Exception, args: argparse.Namespace) -> tuple[str, int]:
    """The line a command ends with when `exc` stops it, and its exit status.

    Errors the toolkit raises say what to do in their own words; the few foreign ones a
    damaged or full store lets through (an `OSError`, delta-rs, DuckDB) are told here.
    Anything else is a bug, and `main` lets its traceback show.
    """
    read_only = _on_read_only_disk(exc, args)
    if read_only is not None:
        path, option = read_only
        return f"{path} is on a read-only disk: give {option} a folder you can write to", 2
    if isinstance(exc, TransportError):
        base_url = getattr(args, "base_url", None) or "the service"
        return f"no answer from {base_url}: {_cause(exc)}", 2
    if isinstance(exc, ConfigError) and exc.command_line:
        return exc.command_line, 1
    if isinstance(exc, ApiError) and exc.reason and exc.advice:
        # The plain words: the message for code names calls to make in Python.
        said = in_plain_words(exc)
        return f"{said[:1].lower()}{said[1:]}", 1
    if isinstance(exc, ToolkitError):
        failed = isinstance(exc, DamagedStore | IncompletePull) or _disk_full(exc)
        return str(exc), 2 if failed else 1
    store = _store_named(args)
    reason = first_line(exc)
    if _disk_full(exc):
        return (
            f"the disk of the store {store} is full ({reason}): free some space and run "
            "the command again",
            2,
        )
    if isinstance(exc, OSError) and exc.filename:
        return (
            f"could not use {exc.filename}: {exc.strerror or reason}; check the path and "
            "that you may write there",
            2,
        )
    return (
        f"the store {store} could not be read or written ({type(exc).__name__}: {reason}); "
        f"`toolkit store check --store {store}` names damaged files and `--repair` sets "
        "them aside",
        2,
    )


def _foreign_store_errors() -> tuple[type[Exception], ...]:
    """What a damaged or full store raises past the toolkit: the OS's, delta-rs' and DuckDB's
    errors (those modules are loaded only if a command used them)."""
    found: list[type[Exception]] = [OSError]
    if "deltalake" in sys.modules:
        from deltalake.exceptions import DeltaError

        found.append(DeltaError)
    if "duckdb" in sys.modules:
        import duckdb

        found.append(duckdb.Error)
    return tuple(found)


def _cause(exc: TransportError) -> str:
    """Why a request got no answer, from the network error under it, and what to do."""
    under = exc.__cause__
    why = f"{type(under).__name__}: {first_line(under)}" if under is not None else str(exc)
    if exc.reason and exc.advice:
        return f"{exc.reason} ({why}); {exc.advice}"
    return str(exc)


def _disk_full(exc: BaseException) -> bool:
    """True when `exc` or an error under it says the disk is full."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno == errno.ENOSPC:
            return True
        if "no space left" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _on_read_only_disk(exc: BaseException, args: argparse.Namespace) -> tuple[str, str] | None:
    """The path the command could not write because its disk is mounted read-only, and
    the option that named it; None when that is not why `exc` stopped it. Asked of the
    file system, not read from the error: delta-rs says only that it could not create a
    folder."""
    named = {
        option: value
        for option, value in (("--out", getattr(args, "out", None)),
                              ("--store", _store_named(args) if "store" in args else None))
        if value and "://" not in str(value)
    }  # fmt: skip
    seen: BaseException | None = exc
    io = False  # only an error of the disk can be the disk's
    while seen is not None:
        if isinstance(seen, OSError) and seen.filename and seen.errno != errno.EROFS:
            return None  # another reason the OS gave (a file in the way, a permission)
        io = io or isinstance(seen, _foreign_store_errors())
        seen = seen.__cause__ or seen.__context__
    if not io or not hasattr(os, "statvfs"):  # (Windows has no statvfs: the error's words)
        return None
    for option, value in named.items():
        place = os.path.abspath(value)
        while not os.path.exists(place):
            place = os.path.dirname(place)
        if os.statvfs(place).f_flag & os.ST_RDONLY:
            return str(value), option
    return None


def _store_named(args: argparse.Namespace) -> str:
    """The store the command works on: `store migrate`'s PATH, else --store or CTS_STORE."""
    from toolkit.config import store_path

    return getattr(args, "old", None) or store_path(getattr(args, "store", None))


@contextlib.contextmanager
def _warnings_shown(command: str) -> Iterator[None]:
    """The toolkit's warnings (a pull's retries, a status it does not know) as lines of
    the command on stderr, without Python's file and line."""
    shown = logging.StreamHandler(sys.stderr)
    shown.setLevel(logging.WARNING)
    shown.setFormatter(_OneLine(command))
    logger = logging.getLogger("toolkit")
    logger.addHandler(shown)

    def show(message: Warning | str, *_: object, **__: object) -> None:
        print(f"toolkit {command}: warning: {message}", file=sys.stderr)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")  # a command shows warnings; it does not raise them
            warnings.showwarning = show
            yield
    finally:
        logger.removeHandler(shown)


class _OneLine(logging.Formatter):
    """A logged warning as one line of the command: an error logged with it (a receiver
    thread's, on a full disk) is named after the message, not shown as a traceback."""

    def __init__(self, command: str) -> None:
        super().__init__()
        self.command = command

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            message += f" ({type(error).__name__}: {first_line(error)})"
        return f"toolkit {self.command}: {message}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `toolkit` command with `argv` (the process's arguments by default).

    Returns the exit status; a toolkit error is one line on stderr, not a traceback."""
    args = build_parser().parse_args(argv)
    without_huge_page_advice()  # a command is a new process: toolkit.huge_pages
    try:
        with panics_kept_off_stderr(), _warnings_shown(args.command):
            args.handler(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if not isinstance(exc, (ToolkitError, *_foreign_store_errors())):
            raise
        line, status = _stopped(exc, args)
        print(f"toolkit {args.command}: {line}", file=sys.stderr)
        return status
    return int(getattr(args, "exit_status", 0))


if __name__ == "__main__":
    sys.exit(main())
