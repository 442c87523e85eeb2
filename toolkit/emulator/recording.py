"""Record what a test or a notebook did to the emulator, and replay it into a fresh one.

A recording is JSON lines: a header (the clock's start and mode), then one line per
request as it was answered (admin calls and clock moves included): the emulator's time
at arrival, the method, path, query, whose request it was, the body, the status and the
answer. Replaying sends each request again, in order, to an emulator on a manual clock
started at the same instant, advancing the clock to each request's time first; ids the
fresh emulator makes anew are learned from its answers and put in place of the recorded
ones in later requests. Every answer is compared with the recorded one, ids mapped, so
a replay says whether it rebuilt the same state (docs/emulator.md, "Record and replay").
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolkit.emulator.core.clock import iso
from toolkit.emulator.core.services import Services

if TYPE_CHECKING:
    import httpx

    from toolkit.emulator.server import Emulator  # typing only: server imports this module

__all__ = [
    "Difference",
    "NotARecording",
    "Recorder",
    "ReplayReport",
    "read_recording",
    "replay_into",
]

_FORMAT = 1
# Secrets are never written: a request's key is recorded as its workspace's id, and the
# keys and signing secrets in answers are left out (the fresh emulator makes its own).
_SECRET_FIELDS = ("apiKey", "secret")


class Recorder:
    """Outermost middleware: writes each request and its answer to the recording."""

    def __init__(self, app: ASGIApp, *, services: Services, path: str | Path) -> None:
        self.app = app
        self.services = services
        self._lock = threading.Lock()
        self._file: IO[str] | None = open(path, "w", encoding="utf-8")  # noqa: SIM115 (close())
        header = {"recording": _FORMAT, "start": iso(services.clock.now())}
        self._write({**header, "clock": services.clock.mode})

    def _write(self, line: dict[str, Any]) -> None:
        assert self._file is not None
        with self._lock:
            self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._file is None:
            await self.app(scope, receive, send)
            return
        at = iso(self.services.clock.now())
        body = bytearray()
        status: int | None = None
        answer = bytearray()

        async def receive_and_keep() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
            return message

        async def send_and_keep(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                answer.extend(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive_and_keep, send_and_keep)
        finally:
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
            }
            self._write(
                {
                    "at": at,
                    "method": scope["method"],
                    "path": scope["path"],
                    "query": scope.get("query_string", b"").decode("latin-1"),
                    "auth": self._auth(scope["path"], headers.get("authorization")),
                    "contentType": headers.get("content-type"),
                    "body": base64.b64encode(bytes(body)).decode("ascii"),
                    "status": status,
                    "answer": _without_secrets(bytes(answer)),
                }
            )

    def _auth(self, path: str, header: str | None) -> Any:
        """Whose request: "admin", `{"workspace": id}`, "unknown" (a key no workspace has),
        or None (no key)."""
        if not header:
            return None
        if path.startswith("/_emulator"):
            return "admin"
        scheme, _, key = header.partition(" ")
        row = self.services.state.workspace_by_key(key.strip())
        return (
            {"workspace": row["id"]}
            if row is not None and scheme.lower() == "bearer"
            else "unknown"
        )


def _without_secrets(answer: bytes) -> str | None:
    try:
        parsed = json.loads(answer) if answer else None
    except ValueError:
        return answer.decode("utf-8", "replace")
    return json.dumps(_strip(parsed), sort_keys=True)


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _SECRET_FIELDS}
    if isinstance(value, list):
        return [_strip(item) for item in value]
    return value


# -- replay ----------------------------------------------------------------------------


@dataclass
class Difference:
    """An answer of the replay that is not the recorded one (ids mapped)."""

    number: int
    method: str
    path: str
    recorded: str | None
    replayed: str | None


@dataclass
class ReplayReport:
    """What a replay did: requests sent, and the answers that differ from the recording."""

    requests: int = 0
    differences: list[Difference] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)

    @property
    def same(self) -> bool:
        return not self.differences

    def map(self, text: str) -> str:
        """A recorded text with the recorded ids replaced by the replay's."""
        for old, new in self.ids.items():
            text = text.replace(old, new)
        return text


class NotARecording(ValueError):
    """A file given to `replay` that cannot be read as a recording."""


def read_recording(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the requests of a recording."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise NotARecording(f"cannot read the recording {path}: {exc}") from None
    try:
        header = json.loads(lines[0]) if lines else {}
    except ValueError:
        header = {}
    if not isinstance(header, dict) or header.get("recording") != _FORMAT:
        raise NotARecording(
            f"{path} is not an emulator recording (its first line should be the header "
            f'{{"recording": {_FORMAT}, ...}}); record one with Emulator(record=PATH)'
        )
    try:
        return header, [json.loads(line) for line in lines[1:] if line.strip()]
    except ValueError as exc:
        raise NotARecording(f"{path} has a line that is not JSON ({exc}); was it cut?") from None


def replay_into(emulator: Emulator, path: str | Path) -> ReplayReport:
    """Replay a recording into `emulator` (fresh, running, manual clock at its start)."""
    import httpx

    _, requests = read_recording(path)
    report = ReplayReport()
    sink = _AcceptingSink()
    # One client for every request: plain http on loopback, so no TLS context either (a
    # new one per request cost ~20 ms each, most of a replay's time).
    try:
        with httpx.Client(verify=False, timeout=600) as http:
            for number, request in enumerate(requests, start=1):
                _send(emulator, http, request, number, report, sink.url)
    finally:
        sink.stop()
    return report


def _send(
    emulator: Emulator,
    http: httpx.Client,
    request: dict[str, Any],
    number: int,
    report: ReplayReport,
    sink: str,
) -> None:
    import httpx

    due = datetime.fromisoformat(request["at"])
    now = emulator.clock.now()
    if due > now:
        emulator.advance((due - now).total_seconds())
    body = base64.b64decode(request["body"])
    if body and "json" in (request["contentType"] or ""):
        body = report.map(body.decode("utf-8")).encode()
    if request["path"] == "/_emulator/webhooks" and request["method"] == "POST":
        # The recorded receiver is gone: deliveries go to one that accepts everything.
        sent = json.loads(body)
        body = json.dumps({**sent, "url": sink, "allowPrivate": True}).encode()
    url = emulator.url + report.map(request["path"])
    if request["query"]:
        url += "?" + report.map(request["query"])
    headers = _headers(emulator, request, report)
    report.requests += 1
    try:
        answer = http.request(request["method"], url, headers=headers, content=body)
        status: int | None = answer.status_code
        text = _without_secrets(answer.content)
    except httpx.TransportError:
        status, text = None, None  # a chaos rule lost this answer, as it did when recorded
    _learn(request["answer"], text, report)
    recorded = request["answer"]
    # An endpoint's answer names the replay's receiver, not the recorded one.
    endpoint = request["path"] == "/_emulator/webhooks" and status == request["status"]
    if not endpoint and (status != request["status"] or _mapped(recorded, report) != text):
        report.differences.append(
            Difference(number, request["method"], request["path"], recorded, text)
        )


def _headers(emulator: Emulator, request: dict[str, Any], report: ReplayReport) -> dict[str, str]:
    """The recorded request's content type, and its credentials as they are in the replay."""
    headers = {}
    if request["contentType"]:
        headers["content-type"] = request["contentType"]
    auth = request["auth"]
    if auth == "admin":
        headers["authorization"] = f"Bearer {emulator.admin_token}"
    elif auth == "unknown":
        headers["authorization"] = "Bearer cts_unknown"
    elif isinstance(auth, dict):
        workspace = emulator.services.state.workspace(report.map(auth["workspace"]))
        headers["authorization"] = f"Bearer {workspace['api_key'] if workspace else 'cts_gone'}"
    return headers


def _mapped(recorded: str | None, report: ReplayReport) -> str | None:
    return None if recorded is None else report.map(recorded)


_ID_KEYS = ("id", "webhookId", "endpointId")


def _learn(recorded: str | None, replayed: str | None, report: ReplayReport) -> None:
    """Learn ids from two answers of the same request, walked side by side."""
    if recorded is None or replayed is None:
        return
    try:
        pairs = _walk(json.loads(recorded), json.loads(replayed))
    except ValueError:
        return
    for old, new in pairs:
        if old != new and old not in report.ids:
            report.ids[old] = new


def _walk(old: Any, new: Any) -> Iterator[tuple[str, str]]:
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in old.items():
            other = new.get(key)
            if (key in _ID_KEYS or key.endswith("Id")) and isinstance(value, str):
                if isinstance(other, str):
                    yield value, other
            else:
                yield from _walk(value, other)
    elif isinstance(old, list) and isinstance(new, list):
        for a, b in zip(old, new, strict=False):
            yield from _walk(a, b)


class _AcceptingSink:
    """A loopback server that answers 200 to every delivery (the replay's receiver)."""

    def __init__(self) -> None:
        from toolkit.emulator.serving import BackgroundServer

        async def accept(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                return
            while (await receive()).get("more_body"):
                pass
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        self._server = BackgroundServer()
        self.url = f"{self._server.url}/webhooks"
        self._server.start(accept, name="cts-replay-sink", lifespan="off", log_level="warning")

    def stop(self) -> None:
        self._server.stop()
