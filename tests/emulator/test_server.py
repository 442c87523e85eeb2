"""`toolkit emulator --seed demo`: serves a workspace a person can explore with curl."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

from emulator_helpers import plain_client
from epochs import SUITE_START


@contextlib.contextmanager
def serving(command: list[str]) -> Iterator[str]:
    """`command` (a `toolkit emulator`) started, and what it printed up to its Ctrl-C line;
    stopped with Ctrl-C on leaving."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )  # fmt: skip
    try:
        output: list[str] = []
        deadline = time.monotonic() + 60
        while not any("Ctrl-C" in line for line in output):
            assert time.monotonic() < deadline and process.poll() is None, "".join(output)
            output.append(process.stdout.readline())
        yield "".join(output)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        process.stdout.close()


def test_command_serves_the_demo_until_interrupted(tmp_path):
    command = [sys.executable, "-m", "toolkit.cli", "emulator", "--port", "0", "--seed", "demo"]
    command += ["--start", SUITE_START.isoformat()]
    command += ["--clock", "realtime", "--speed", "60", "--state", str(tmp_path / "demo.sqlite")]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # faulthandler: a process that will not stop says where each thread is (SIGABRT).
        env={**os.environ, "PYTHONWARNINGS": "error", "PYTHONFAULTHANDLER": "1"},
        # Started as some runners start commands, with SIGINT ignored: Ctrl-C must still
        # stop it (a child inherits the ignoring, and Python keeps it).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        output = []
        deadline = time.monotonic() + 60
        while not any("Ctrl-C" in line for line in output):
            assert time.monotonic() < deadline and process.poll() is None, "".join(output)
            output.append(process.stdout.readline())
        text = "".join(output)
        url = re.search(r"on (http://127\.0\.0\.1:\d+)", text).group(1)
        key = re.search(r"API key:\s+(\S+)", text).group(1)
        assert re.search(r"admin token:\s+\S+", text)
        assert f'curl -H "Authorization: Bearer {key}" {url}/api/v1/projects' in text
        with plain_client(f"{url}/api/v1", key) as api:
            names = {p["name"] for p in api.get("/projects").json()}
        assert names == {"Moonlit Harbor", "Seoul Nights", "River of Stars"}
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            stuck = process.communicate(timeout=30)[0]
            raise AssertionError(f"the emulator did not stop on Ctrl-C:\n{stuck}") from None
        process.stdout.close()
    assert process.returncode in (0, 130)


def test_command_starts_with_the_chaos_rules_of_a_file(tmp_path):
    rules = tmp_path / "chaos.json"
    rules.write_text(
        '[{"method": "GET", "route": "/projects", "kind": "status", "status": 429,'
        ' "retryAfter": 5, "count": 1}]'
    )
    command = [sys.executable, "-m", "toolkit.cli", "emulator", "--port", "0", "--clock", "manual"]
    command += ["--start", SUITE_START.isoformat(), "--chaos", str(rules)]
    with serving(command) as text:
        assert "chaos rules:  1" in text
        url = re.search(r"on (http://127\.0\.0\.1:\d+)", text).group(1)
        token = re.search(r"admin token:\s+(\S+)", text).group(1)
        with plain_client(url, token) as admin:
            key = admin.post("/_emulator/workspaces", json={"name": "W", "credits": 0}).json()
            with plain_client(f"{url}/api/v1", key["apiKey"]) as api:
                first, second = api.get("/projects"), api.get("/projects")
            (rule,) = admin.get("/_emulator/chaos").json()
        assert (first.status_code, first.headers["retry-after"]) == (429, "5")
        assert second.status_code == 200
        assert (rule["applied"], rule["count"]) == (1, 0)


def test_command_refuses_a_chaos_file_naming_the_rule_and_the_field(tmp_path):
    rules = tmp_path / "chaos.json"
    rules.write_text('[{"route": "/projects", "kind": "reset"}, {"route": "*", "kind": "slow"}]')
    command = [sys.executable, "-m", "toolkit.cli", "emulator", "--chaos", str(rules)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "rule 2:" in done.stderr and "kind must be one of" in done.stderr


def test_command_replays_a_recording_then_serves_what_it_rebuilt(tmp_path):
    from toolkit.emulator import Emulator

    recording = tmp_path / "session.jsonl"
    with Emulator(start=SUITE_START, record=recording) as emu:
        workspace = emu.create_workspace("Replayed", credits=5)
        emu.advance(90)
    command = [sys.executable, "-m", "toolkit.cli", "emulator", "--port", "0"]
    command += ["--replay", str(recording)]
    with serving(command) as text:
        assert "replayed:     2 requests" in text and "answers all as recorded" in text
        url = re.search(r"on (http://127\.0\.0\.1:\d+)", text).group(1)
        token = re.search(r"admin token:\s+(\S+)", text).group(1)
        with plain_client(url, token) as admin:
            assert admin.get("/_emulator/clock").json()["now"] == "2026-11-18T09:01:30.000Z"
        assert workspace["id"] not in text


def test_command_refuses_a_file_that_is_not_a_recording(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    command = [sys.executable, "-m", "toolkit.cli", "emulator", "--replay", str(notes)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "is not an emulator recording" in done.stderr
