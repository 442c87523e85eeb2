"""A command that stops says why in one line `toolkit <command>: ...` on stderr, never a
traceback: exit 1 for bad settings and paths (through the Python API, a `ToolkitError`
subclass naming what is wrong), exit 2 when something it depends on failed: the service
never answered, the store could not be read or written."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from datafakes import FakeService, hours
from page_images import make_folder
from scripted import KEY

import toolkit as tk
from toolkit import cli
from toolkit.store import SnapshotStore

ROOT = Path(__file__).resolve().parent.parent

BAD_URLS = {
    "an IPv6 address without its ]": ("http://[::1", "closing"),
    "a port over 65535": ("http://127.0.0.1:70000", "port"),
    "a port that is not a number": ("http://127.0.0.1:eighty", "port"),
    "port 0": ("http://127.0.0.1:0", "port"),
}


@pytest.mark.parametrize(("url", "says"), BAD_URLS.values(), ids=BAD_URLS.keys())
def test_a_malformed_base_url_is_one_line_and_exit_1(monkeypatch, capsys, url, says):
    monkeypatch.setenv("CTS_BASE_URL", url)
    monkeypatch.setenv("CTS_API_KEY", KEY)
    assert cli.main(["snapshot", "--store", "unused"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("toolkit snapshot: the base URL") and err.count("\n") == 1
    assert says in err


@pytest.mark.parametrize(("url", "says"), BAD_URLS.values(), ids=BAD_URLS.keys())
def test_a_malformed_base_url_is_a_config_error_in_python(url, says):
    with pytest.raises(tk.ConfigError, match=says):
        tk.Client(url, KEY)


MISSING = {"base URL": ("CTS_BASE_URL", "base_url="), "API key": ("CTS_API_KEY", "api_key=")}


@pytest.mark.parametrize(("variable", "python"), MISSING.values(), ids=MISSING.keys())
def test_a_missing_setting_names_its_environment_variable_not_a_python_argument(
    monkeypatch, capsys, variable, python
):
    monkeypatch.setenv("CTS_BASE_URL", "http://127.0.0.1:8765")
    monkeypatch.setenv("CTS_API_KEY", KEY)
    monkeypatch.delenv(variable)
    assert cli.main(["snapshot", "--store", "unused"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"toolkit snapshot: no {'base URL' if 'URL' in variable else 'API key'}")
    assert f"set {variable}" in err and "toolkit emulator --seed demo" in err
    assert python not in err and err.count("\n") == 1
    with pytest.raises(tk.ConfigError, match=python):  # in Python, the argument is the way
        tk.Client()


def test_a_refused_key_gives_its_advice_once_and_no_python(emulator, monkeypatch, capsys):
    monkeypatch.setenv("CTS_BASE_URL", emulator.url)
    monkeypatch.setenv("CTS_API_KEY", "cts_not-a-key-of-any-workspace")
    assert cli.main(["snapshot", "--store", "unused"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "toolkit snapshot: the API key was refused. Check CTS_API_KEY: use a key of your "
        "workspace.\n"
    )
    # The service's own words are quoted only where they add to ours.
    with tk.Client() as client, pytest.raises(tk.AuthenticationError) as caught:
        client.list_projects()
    assert str(caught.value).endswith("The service said: unknown API key")
    assert caught.value.message == "unknown API key; use the key of your workspace"


def test_report_out_pointing_at_a_file_is_one_line_and_exit_1(tmp_path, capsys):
    taken = tmp_path / "report.txt"
    taken.write_text("keep me")
    assert cli.main(["report", "--store", str(tmp_path / "store"), "--out", str(taken)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolkit report: ") and err.count("\n") == 1
    assert str(taken) in err and "is a file" in err
    assert taken.read_text() == "keep me"


def test_report_out_under_a_file_is_a_toolkit_error_naming_it(tmp_path):
    from toolkit.reporting import write_report

    taken = tmp_path / "report.txt"
    taken.write_text("keep me")
    with pytest.raises(tk.ToolkitError, match=r"report\.txt.* is a file"):
        write_report(tmp_path / "store", out=taken / "inside")


# -- the service never answers ----------------------------------------------------------


def closed_port() -> int:
    """A loopback port nothing listens on (taken from the OS, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("command", [["snapshot"], ["upload", "scans", "--project", "P", "--yes"]])
def test_a_service_that_never_answers_stops_the_command_within_a_minute_in_one_line(
    tmp_path, monkeypatch, capsys, retry_pauses, command
):
    make_folder(tmp_path / "scans", {1: 1})
    base_url = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CTS_BASE_URL", base_url)
    monkeypatch.setenv("CTS_API_KEY", KEY)
    monkeypatch.setenv("CTS_STORE", str(tmp_path / "store"))
    assert cli.main(command) == 2
    # The product's bound: every try is refused at once, so the command takes the
    # client's pauses between its tries (recorded, not slept), well within a minute.
    assert len(retry_pauses) == tk.RetryPolicy().max_retries and sum(retry_pauses) < 60
    err = capsys.readouterr().err
    name = command[0]
    assert err.startswith(f"toolkit {name}: no answer from {base_url}: ")
    assert err.count("\n") == 1 and "Connection refused" in err
    assert "CTS_BASE_URL" in err and KEY not in err


class Service(FakeService):
    """A fake service the command uses in place of its client."""

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def test_a_pull_that_loses_the_service_shows_each_retry_on_stderr(monkeypatch, tmp_path, capsys):
    service = Service()
    service.add_project("p1", languages=("en",))
    service.add_chapter("c1", "p1", position=1, languages=("en",))
    pauses: list[float] = []
    # The pull pauses between passes by its client's policy: recorded here, not slept.
    service.retry = tk.RetryPolicy(sleep=pauses.append)  # type: ignore[attr-defined]
    answered = service.get_chapter
    lost = [tk.TransportError("GET /chapters/c1 got no answer (ConnectError)")] * 2

    def get_chapter(chapter_id: str):
        if lost:
            raise lost.pop()
        return answered(chapter_id)

    service.get_chapter = get_chapter  # type: ignore[method-assign]
    monkeypatch.setattr(cli, "_client", lambda args: service)
    assert cli.main(["snapshot", "--store", str(tmp_path / "store"), "--details", "all"]) == 0
    retries = capsys.readouterr().err.splitlines()
    assert retries == [
        "toolkit snapshot: 1 of 1 requests for chapter details failed (no answer (1)); "
        f"trying again in {pause} s"
        for pause in (1, 2)
    ]
    assert pauses == [1, 2]


# -- the store cannot be read or written ------------------------------------------------


def test_a_damaged_events_file_read_by_report_is_one_line_naming_the_check(tmp_path, capsys):
    root = tmp_path / "store"
    service = FakeService()
    service.add_project("p1", languages=("en",))
    service.add_chapter("c1", "p1", position=1, languages=("en",))
    store = SnapshotStore(root, auto_compact=False)
    for step in range(2):
        store.take(service, at=hours(step))
    event = {"webhook_id": "msg_1", "type": "chapter.finished", "timestamp": hours(1),
             "data": {"chapterId": "c1", "projectId": "p1"}}  # fmt: skip
    store.record_events([event])
    damaged = next((root / "events").glob("*.parquet"))
    damaged.write_bytes(damaged.read_bytes()[:40])  # cut off mid-file

    assert cli.main(["report", "--store", str(root), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"toolkit report: the store {root} could not be read")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert damaged.name in err and f"toolkit store check --store {root}" in err


@pytest.mark.parametrize(
    "fault",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        "DeltaError",  # what delta-rs raises: its text names the OS error
    ],
    ids=["OSError", "DeltaError"],
)
def test_a_full_disk_during_maintenance_is_one_line_and_exit_2(
    monkeypatch, tmp_path, capsys, fault
):
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    if fault == "DeltaError":
        fault = DeltaError("Generic error: No space left on device (os error 28)")
    root = tmp_path / "store"
    service = Service()
    service.add_project("p1", languages=("en",))
    service.add_chapter("c1", "p1", position=1, languages=("en",))
    SnapshotStore(root).take(service, at=hours(0))
    service.date = hours(24)  # the next day's first snapshot merges the day before

    def full(table: DeltaTable, *args: object, **kwargs: object) -> None:
        raise fault

    monkeypatch.setattr(DeltaTable, "create_checkpoint", full)
    monkeypatch.setattr(cli, "_client", lambda args: service)
    assert cli.main(["snapshot", "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"toolkit snapshot: the disk of the store {root} is full")
    assert err.count("\n") == 1 and "free some space" in err


# -- ports that are taken, out of range or not allowed ----------------------------------


@pytest.fixture
def taken_port():
    """A loopback port another program listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield int(other.getsockname()[1])


SERVERS = {"emulator": ["emulator"], "webhooks serve": ["webhooks", "serve"]}


@pytest.fixture
def secret_set(monkeypatch, tmp_path):
    monkeypatch.setenv("CTS_WEBHOOK_SECRET", "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    monkeypatch.setenv("CTS_STORE", str(tmp_path / "store"))


@pytest.mark.parametrize("command", SERVERS.values(), ids=SERVERS.keys())
def test_a_taken_port_is_one_line_naming_it_and_exit_1(capsys, secret_set, taken_port, command):
    assert cli.main([*command, "--port", str(taken_port)]) == 1
    out, err = capsys.readouterr()
    assert err.startswith(f"toolkit {command[0]}: the ") and err.count("\n") == 1
    assert f"cannot listen on 127.0.0.1:{taken_port} (Address already in use)" in err
    assert "choose another" in err and "Traceback" not in out + err


@pytest.mark.parametrize("port", ["99999", "-1"])
@pytest.mark.parametrize("command", SERVERS.values(), ids=SERVERS.keys())
def test_a_port_out_of_range_is_one_line_and_exit_1(capsys, secret_set, command, port):
    assert cli.main([*command, "--port", port]) == 1
    assert capsys.readouterr().err == (
        f"toolkit {command[0]}: --port {port} is not a port: give one from 1 to 65535 "
        "(0: any free one)\n"
    )


def test_an_address_not_of_this_machine_is_one_line_and_exit_1(capsys):
    # 192.0.2.0/24 is for documentation: no interface of this machine has it.
    assert cli.main(["emulator", "--host", "192.0.2.1", "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolkit emulator: the emulator cannot listen on 192.0.2.1:0 (")
    assert err.count("\n") == 1


# -- a store on a read-only or a full disk ----------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """Mount a tmpfs (root only: skipped elsewhere); yields a function remounting it
    read-only. Unmounted afterwards."""
    mounted = tmp_path / "disk"
    mounted.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mounted)],
                          capture_output=True)  # fmt: skip
    if made.returncode != 0:
        pytest.skip("mounting a small disk needs root")
    try:
        yield mounted
    finally:
        subprocess.run(["umount", "-l", str(mounted)], check=True)


def _read_only(mounted: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)


@pytest.mark.parametrize(
    "command",
    [
        ["demo", "--hours", "1", "--out", "{disk}/demo"],
        ["snapshot", "--store", "{disk}/store"],
        ["report", "--html", "--store", "{store}", "--out", "{disk}/report"],
        ["report", "--json", "--store", "{store}", "--out", "{disk}/report"],
    ],
    ids=["demo", "snapshot", "report --html", "report --json"],
)
def test_a_read_only_disk_is_one_line_naming_the_path_and_exit_2(
    monkeypatch, capsys, tmp_path, small_disk, command
):
    store = tmp_path / "store"
    _two_snapshots(store)
    _read_only(small_disk)
    service = Service()
    service.add_project("p1", languages=("en",))
    monkeypatch.setattr(cli, "_client", lambda args: service)
    argv = [part.format(disk=small_disk, store=store) for part in command]
    assert cli.main(argv) == 2
    option = "--out" if "--out" in command else "--store"
    assert capsys.readouterr().err == (
        f"toolkit {command[0]}: {argv[argv.index(option) + 1]} is on a read-only disk: "
        f"give {option} a folder you can write to\n"
    )


def _two_snapshots(root: Path) -> None:
    service = FakeService()
    service.add_project("p1", languages=("en",))
    service.add_chapter("c1", "p1", position=1, languages=("en",))
    store = SnapshotStore(root)
    for step in range(2):
        store.take(service, at=hours(step))


def test_a_demo_on_a_full_disk_ends_in_one_line_and_exit_2(capsys, small_disk):
    assert cli.main(["demo", "--hours", "1", "--out", f"{small_disk}/demo"]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"toolkit demo: could not write to {small_disk}/demo/")
    assert "the disk is full: free some space" in last


def _filled(disk: Path) -> Path:
    """Fill `disk` to its last byte; returns the filler to remove."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as file, contextlib.suppress(OSError):
        while file.write(b"x" * 4096):
            pass
    return filler


def _command(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`toolkit ARGV` run as a user runs it: its own process, this checkout's code."""
    return subprocess.run([sys.executable, "-m", "toolkit.cli", *argv], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                       **env})  # fmt: skip


@pytest.mark.slow
def test_a_snapshot_on_a_full_disk_is_one_line_and_exit_2_and_the_store_reads_after(
    emulator, small_disk
):
    # A real full disk: delta-rs' worker threads panic ("Already shut down") and Rust
    # prints the panic, with a backtrace under RUST_BACKTRACE, straight to stderr.
    seeded = emulator.seed_demo()
    env = {"CTS_BASE_URL": emulator.url, "CTS_API_KEY": seeded["apiKey"], "RUST_BACKTRACE": "1"}
    store = small_disk / "store"
    assert _command("snapshot", "--store", str(store), env=env).returncode == 0
    emulator.advance(3600)
    filler = _filled(small_disk)
    stopped = _command("snapshot", "--store", str(store), env=env)
    assert stopped.returncode == 2
    assert stopped.stderr.startswith(f"toolkit snapshot: could not write to {store}/")
    assert stopped.stderr.endswith(": the disk is full: free some space and take the "
                                   "snapshot again\n")  # fmt: skip
    assert stopped.stderr.count("\n") == 1
    filler.unlink()
    checked = _command("store", "check", "--store", str(store), env=env)
    assert (checked.returncode, checked.stdout) == (0, f"{store}: every snapshot reads as it "
                                                       "was taken\n")  # fmt: skip
    again = _command("snapshot", "--store", str(store), env=env)
    assert (again.returncode, again.stderr) == (0, "")
    assert len(SnapshotStore(store).snapshots()) == 2


def test_an_error_a_thread_logs_during_a_command_is_one_line_not_a_traceback(capsys):
    import logging

    try:
        raise OSError(errno.ENOSPC, "database or disk is full")
    except OSError:
        with cli._warnings_shown("demo"):
            logging.getLogger("toolkit.webhooks").exception("the store refused webhook events")
    assert capsys.readouterr().err == (
        "toolkit demo: the store refused webhook events (OSError: [Errno 28] database or "
        "disk is full)\n"
    )


def test_an_emulator_state_file_that_cannot_be_opened_is_one_line_and_exit_1(tmp_path, capsys):
    state = tmp_path / "no-such-folder" / "state.sqlite"
    assert cli.main(["emulator", "--port", "0", "--state", str(state)]) == 1
    assert capsys.readouterr().err == (
        f"toolkit emulator: the emulator's state file {state} cannot be opened (unable to "
        "open database file); give --state a file in a folder you can write to, or leave "
        "it out to keep the state in memory\n"
    )


# -- a bad argument, a missing file: one line, exit 1 (issue 36's sweep of the commands) --

REFUSED = {
    # argparse's own refusals: one line naming the option and where to look, not its
    # usage text and exit 2 (2 says something the command depends on failed)
    "days 0": (["report", "--days", "0"], "toolkit report: argument --days: 0 days cover "
               "nothing: give 1 or more (`toolkit report --help` says what it takes)"),
    "days not a number": (["report", "--days", "a week"], "toolkit report: argument --days: "
                          "'a week' is not a whole number of days"),
    "a choice not offered": (["snapshot", "--details", "bogus"], "toolkit snapshot: argument "
                             "--details: invalid choice: 'bogus'"),
    "speed 0": (["emulator", "--speed", "0"], "toolkit emulator: argument --speed: 0 is not "
                "more than 0"),
    "speed negative": (["emulator", "--speed", "-5"], "toolkit emulator: argument --speed: -5 "
                       "is not more than 0"),
    "since not a time": (["explain", "credits", "--since", "garbage"], "toolkit explain: "
                         "argument --since: 'garbage' is not a time: give an ISO 8601 one"),
    "until not a date": (["explain", "credits", "--until", "2026-13-45"], "toolkit explain: "
                         "argument --until: '2026-13-45' is not a time"),
    "receiver not host:port": (["conformance", "--receiver", "nohostport"], "toolkit "
                               "conformance: argument --receiver: 'nohostport' is not HOST:PORT"),
    "chaos not a list": (["emulator", "--chaos", "{chaos}"], "toolkit emulator: argument "
                         "--chaos: '{chaos}' must hold a JSON list of chaos rules"),
    "no command": ([], "toolkit: the following arguments are required: command"),
    # refused by the command
    "zone unknown": (["explain", "credits", "--store", "{store}", "--tz", "Nowhere/Land"],
                     "toolkit explain: 'Nowhere/Land' is not a time zone this machine knows"),
    "migrate a missing store": (["store", "migrate", "{missing}"], "toolkit store: no store at "
                                "'{missing}': it is not a folder"),
}  # fmt: skip


@pytest.mark.parametrize(("argv", "says"), REFUSED.values(), ids=REFUSED.keys())
def test_a_bad_argument_or_path_is_one_line_and_exit_1(tmp_path, capsys, argv, says):
    paths = {"store": tmp_path / "store", "missing": tmp_path / "missing",
             "chaos": tmp_path / "chaos.json"}  # fmt: skip
    _two_snapshots(paths["store"])
    paths["chaos"].write_text('{"not": "a list"}')
    argv = [part.format(**paths) for part in argv]
    try:
        status = cli.main(argv)
    except SystemExit as exit:  # argparse's refusals end the process
        status = exit.code
    err = capsys.readouterr().err
    assert (status, err.count("\n")) == (1, 1), err
    assert err.startswith(says.format(**paths)), err
    assert not paths["missing"].exists()  # (migrate made no store there)


def test_explain_writes_its_csv_into_a_folder_it_makes(tmp_path, capsys):
    store = tmp_path / "store"
    _two_snapshots(store)
    csv = tmp_path / "new" / "rows.csv"
    assert cli.main(["explain", "credits", "--store", str(store), "--csv", str(csv)]) == 0
    assert csv.exists() and capsys.readouterr().err == ""


def _deliver(url: str, webhook_id: str) -> int:
    """A signed `chapter.finished` delivery, as the service sends it; its status."""
    import json

    import httpx

    from toolkit import _signing

    data = {"chapterId": "ch1", "projectId": "p1", "position": 1, "title": None,
            "pageCount": 2, "languages": [{"languageCode": "en", "status": "needs_review",
                                           "failed": False}]}  # fmt: skip
    body = json.dumps({"type": "chapter.finished", "timestamp": "2025-03-01T09:00:00.000Z",
                       "data": data}).encode()  # fmt: skip
    stamp = int(time.time())
    signature = _signing.sign(WEBHOOK_SECRET, webhook_id, stamp, body)
    headers = {"content-type": "application/json", "webhook-id": webhook_id,
               "webhook-timestamp": str(stamp), "webhook-signature": signature}  # fmt: skip
    return httpx.post(url, content=body, headers=headers, timeout=30).status_code


WEBHOOK_SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_webhooks_serve_on_a_full_disk_says_so_once_and_keeps_every_event(small_disk):
    import httpx

    # The events go to the receiver's SQLite, then to the store (Delta) on the same disk.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = small_disk / "store"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RUST_BACKTRACE": "1",
           "CTS_WEBHOOK_SECRET": WEBHOOK_SECRET, "CTS_STORE": str(store)}  # fmt: skip
    server = subprocess.Popen([sys.executable, "-m", "toolkit.cli", "webhooks", "serve",
                               "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}/hooks/cts"
    try:
        deadline = time.monotonic() + 60  # start-up, not simulated time
        while True:
            try:
                assert _deliver(url, "msg_0") == 200
                break
            except httpx.TransportError:  # not listening yet
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.1)
        filler = _filled(small_disk)
        refused = [_deliver(url, f"msg_{i}") for i in range(1, 7)]
        filler.unlink()  # and room for the store's files, which 256 KB would not hold
        subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
        # The service sends again what was refused (503); the rest waited in the SQLite.
        for i, status in enumerate(refused, start=1):
            if status != 200:
                assert status == 503 and _deliver(url, f"msg_{i}") == 200
        assert _deliver(url, "msg_7") == 200  # and the waiting ones go to the store with it
    finally:
        server.terminate()
        err = server.communicate(timeout=60)[1]
    assert "Traceback" not in err and "panicked" not in err, err
    told = [line for line in err.splitlines() if line.startswith("toolkit webhooks: ")]
    # Each trouble when it begins and when it ends, not a line per refused delivery.
    assert len(told) <= 4, err
    checked = _command("store", "check", "--store", str(store), env={})
    assert checked.returncode == 0, checked.stdout + checked.stderr
    kept = SnapshotStore(store).history("events")["webhook_id"]
    assert sorted(kept) == [f"msg_{i}" for i in range(8)]
