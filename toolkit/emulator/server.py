"""`Emulator`: the whole emulator in one object, served by uvicorn on a thread.

Past 400 lines on purpose: `Emulator` is the one object a test holds, and its methods
are the admin operations a test calls, each a few lines over the routes' services.

```python
with Emulator() as emu:                       # manual clock, in-memory state
    ws = emu.create_workspace("Team", credits=1_000)
    emu.advance(60)
```

Where state and page images live, and how the clock resumes: docs/emulator.md.
"""

from __future__ import annotations

import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from toolkit.emulator.app import build_app
from toolkit.emulator.chaos_middleware import ConnectionHandle
from toolkit.emulator.core.clock import Clock, ClockMode
from toolkit.emulator.core.control import Control
from toolkit.emulator.core.db import Database
from toolkit.emulator.core.engine import Engine
from toolkit.emulator.core.faults import Faults
from toolkit.emulator.core.operations import Operations
from toolkit.emulator.core.scheduler import CLOCK_SETTING, Scheduler
from toolkit.emulator.core.services import Services
from toolkit.emulator.core.state import State, from_ms
from toolkit.emulator.delivery.deliveries import Deliveries
from toolkit.emulator.intake.uploads import PageFolder
from toolkit.emulator.recording import Recorder, ReplayReport, read_recording, replay_into
from toolkit.emulator.routes.errors import EmulatorError
from toolkit.emulator.serving import BackgroundServer

__all__ = ["AdminCallError", "ChaosRuleError", "Emulator", "replay", "run_server"]


class AdminCallError(Exception):
    """An admin call the emulator refused.

    The emulator's own error, not the client's: the emulator and the client share only
    the signing primitive, so either can change without the other.

    Args:
        message: The call, the status and the emulator's text.
        status: The HTTP status, kept as `status`.
        server_message: The emulator's own text, kept as `server_message`.
    """

    def __init__(self, message: str, *, status: int, server_message: str) -> None:
        super().__init__(message)
        self.status = status
        self.server_message = server_message


class ChaosRuleError(ValueError):
    """A chaos rule given to `run_server` (`toolkit emulator --chaos`) that cannot work."""


class Emulator:
    """The emulated service and its admin calls, served on a background thread.

    Start it with `start()` or `with Emulator() as emu:`; `url` is then its address.
    Every admin method is one call to `/_emulator` and raises `RuntimeError` before
    `start()`.

    Args:
        state: Where the state lives: `":memory:"` (gone on `stop()`) or a SQLite file,
            with its page images in the folder `<state>-pages`.
        clock: "manual" (time moves only by `advance`) or "realtime".
        admin_token: The bearer token of the admin calls; a random one by default.
        speed: Simulated seconds per real second, for the realtime clock.
        start: The clock's first instant (aware); by default now. A saved state's clock
            resumes from where it got to if that is later.
        record: A file to record every request to, for `replay` (docs/emulator.md,
            "Record and replay"); it is written as requests are answered.
    """

    def __init__(
        self,
        state: str = ":memory:",
        clock: ClockMode = "manual",
        admin_token: str | None = None,
        *,
        speed: float = 60.0,
        start: datetime | None = None,
        record: str | Path | None = None,
    ) -> None:
        self.admin_token = admin_token or secrets.token_urlsafe(24)
        self._db = Database(state)
        if state != ":memory:":
            # Each run step commits; in WAL mode NORMAL survives a crash of the process
            # and skips an fsync per step (only a power cut could lose the last steps).
            self._db.execute("PRAGMA synchronous=NORMAL")
        store = State(self._db)
        saved = store.setting(CLOCK_SETTING)
        # A test names its instant, so nothing depends on the hour it runs at; a person
        # trying the API gets today.
        start = start or datetime.now(UTC)
        if saved is not None:
            start = max(start, from_ms(int(saved)))
        self.clock = Clock(clock, speed=speed, start=start)
        if state == ":memory:":
            self._temp_pages: str | None = tempfile.mkdtemp(prefix="cts-emulator-pages-")
            pages_root = Path(self._temp_pages)
        else:
            self._temp_pages = None
            pages_root = Path(state + "-pages")
        faults = Faults(store)
        engine = Engine(self._db, faults)
        files = PageFolder(pages_root)
        deliveries = Deliveries(self._db, self.clock)
        engine.sinks.append(deliveries.emit)
        operations = Operations(store, engine, files)
        control = Control(self._db, store, operations)
        engine.holds = control.holds_run
        engine.next_fate = control.take_fate
        scheduler = Scheduler(self.clock, engine, store, deliveries, control)
        self.services = Services(
            db=self._db,
            state=store,
            clock=self.clock,
            faults=faults,
            engine=engine,
            files=files,
            operations=operations,
            scheduler=scheduler,
            admin_token=self.admin_token,
            deliveries=deliveries,
            control=control,
        )
        self.app = build_app(self.services)
        self._recorder = (
            Recorder(self.app, services=self.services, path=record) if record is not None else None
        )
        self.url = ""
        self._background: BackgroundServer | None = None
        self._http: httpx.Client | None = None
        self._stopped = False

    # -- life cycle -------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> Emulator:
        """Serve on a background thread; returns once the server accepts connections.

        Args:
            host: The address to listen on.
            port: The port; 0 for a free one (`url` says which).

        Returns:
            The emulator itself, running.

        Raises:
            RuntimeError: The address cannot be listened on (e.g. the port is taken).
        """
        try:
            self._background = BackgroundServer(host, port)
        except OSError as exc:
            raise RuntimeError(
                f"the emulator could not start on {host}:{port} ({exc.strerror}); "
                "choose another port"
            ) from exc
        self._background.start(
            ConnectionHandle(self._recorder or self.app),
            name="cts-emulator",
            lifespan="off",
            date_header=False,
            server_header=False,
            ws="none",
            http="h11",
        )
        self.url = self._background.url
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.admin_token}"},
            timeout=httpx.Timeout(30.0, read=600.0),
            verify=False,  # plain http on loopback; skips building a TLS context (~50 ms)
        )
        self.services.scheduler.start()
        return self

    def stop(self) -> None:
        """Shut the server down, stop background work, close the database (once)."""
        if self._stopped:
            return
        self._stopped = True
        # Our own admin client first: a connection still open to the server is one its
        # shutdown would wait for.
        if self._http is not None:
            self._http.close()
        if self._background is not None:
            self._background.stop()
        self.services.scheduler.stop()
        if self._recorder is not None:
            self._recorder.close()
        self.services.deliveries.close()
        self._db.close()
        if self._temp_pages is not None:
            shutil.rmtree(self._temp_pages, ignore_errors=True)
        self._background = None
        self._http = None

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- conveniences: one admin call each --------------------------------------------

    def _call(self, method: str, path: str, body: Any = None, **params: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self._send(method, path, body, **params)
        return answer

    def _send(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        if self._http is None:
            raise RuntimeError("the emulator is not running; call start() first")
        response = self._http.request(method, path, json=body, params=params or None)
        if response.is_error:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text
            raise AdminCallError(
                f"emulator {method} {path} answered {response.status_code}: {message}",
                status=response.status_code,
                server_message=message,
            )
        return response.json()

    def create_workspace(self, name: str, credits: int) -> dict[str, Any]:
        """Create a workspace and its API key.

        Args:
            name: The workspace's name.
            credits: Its starting balance.

        Returns:
            `{id, name, credits, apiKey}`.

        Raises:
            AdminCallError: The name or the credits are not valid.
        """
        return self._call("POST", "/_emulator/workspaces", {"name": name, "credits": credits})

    def get_workspace(self, workspace_id: str) -> dict[str, Any]:
        """A workspace and its balance.

        Args:
            workspace_id: The workspace's id.

        Returns:
            `{id, name, credits}`.

        Raises:
            AdminCallError: No such workspace (404).
        """
        return self._call("GET", f"/_emulator/workspaces/{workspace_id}")

    def set_credits(self, workspace_id: str, credits: int) -> dict[str, Any]:
        """Set a workspace's balance, e.g. to 0 to see `InsufficientCredits`.

        Args:
            workspace_id: The workspace's id.
            credits: The new balance.

        Returns:
            `{id, name, credits}`.

        Raises:
            AdminCallError: No such workspace (404), or credits that are not valid.
        """
        return self._call(
            "PUT", f"/_emulator/workspaces/{workspace_id}/credits", {"credits": credits}
        )

    def create_project(
        self,
        workspace_id: str,
        *,
        name: str,
        kind: str,
        source_language: str,
        reading_direction: str,
        process_steps: str,
        target_languages: list[str],
        translation_model: str | None = None,
        translation_group_id: str | None = None,
    ) -> dict[str, Any]:
        """Create a project, as the dashboard does (the API has no such call).

        Args:
            workspace_id: The workspace's id.
            name: The project's name.
            kind: "comic" (page images) or "novel" (text).
            source_language: The chapters' language, a two-letter code.
            reading_direction: "ltr", "rtl" or "vertical".
            process_steps: "text", "translate", "clean" or "full".
            target_languages: The languages every chapter is translated into.
            translation_model: The model that translates; None for the default.
            translation_group_id: The translation group to put it in (give several
                projects the same one to group them); None for a group of its own.

        Returns:
            The project as the project list shows it.

        Raises:
            AdminCallError: No such workspace, or a field the service would not take.
        """
        body = {
            "workspaceId": workspace_id,
            "name": name,
            "kind": kind,
            "sourceLanguage": source_language,
            "readingDirection": reading_direction,
            "processSteps": process_steps,
            "targetLanguages": target_languages,
            "translationModel": translation_model,
            "translationGroupId": translation_group_id,
        }
        return self._call("POST", "/_emulator/projects", body)

    def trash_project(self, project_id: str) -> dict[str, Any]:
        """Move a project to the trash, as the dashboard does.

        Args:
            project_id: The project's id.

        Returns:
            An empty object.

        Raises:
            AdminCallError: No such project.
        """
        return self._call("POST", f"/_emulator/projects/{project_id}/trash")

    def trash_chapter(self, chapter_id: str) -> dict[str, Any]:
        """Move a chapter to the trash, as the dashboard does.

        Args:
            chapter_id: The chapter's id.

        Returns:
            An empty object.

        Raises:
            AdminCallError: No such chapter.
        """
        return self._call("POST", f"/_emulator/chapters/{chapter_id}/trash")

    def review_chapter(self, chapter_id: str, *, at: datetime | None = None) -> dict[str, Any]:
        """Mark a chapter reviewed, as a reviewer does in the dashboard, now or at `at`.

        Args:
            chapter_id: The chapter's id.
            at: A later instant on the emulator's clock: the review happens when the clock
                passes it (still running then, the chapter is reviewed once its run
                ends, checked each simulated minute for a day).

        Returns:
            The chapter's detail, as `GET /chapters/:id` answers; with `at`, what is set
            on the chapter (`control`).

        Raises:
            AdminCallError: No such chapter (404), it is processing or has nothing
                translated yet (409), or `at` is not later than the clock (400).
        """
        body = None if at is None else {"at": at.isoformat()}
        return self._call("POST", f"/_emulator/chapters/{chapter_id}/review", body)

    def hold(self, chapter_id: str, phase: str, *, language: str | None = None) -> dict[str, Any]:
        """Keep a chapter's runs from taking a step of `phase` until `release`.

        ```python
        emu.hold(chapter_id, "translate", language="fr")   # en translates, fr waits
        ```

        Args:
            chapter_id: The chapter's id.
            phase: "read", "translate", "clean", "letter" or "package".
            language: Only this target language's steps (translate and package only).

        Returns:
            What is set on the chapter (`control`).

        Raises:
            AdminCallError: No such chapter (404), an unknown phase or language (400).
        """
        body = {"phase": phase, "languageCode": language}
        return self._call("POST", f"/_emulator/chapters/{chapter_id}/hold", body)

    def release(self, chapter_id: str) -> dict[str, Any]:
        """Lift every hold of a chapter; a run waiting at one takes its step now.

        Args:
            chapter_id: The chapter's id.

        Returns:
            What is set on the chapter (`control`).
        """
        return self._call("POST", f"/_emulator/chapters/{chapter_id}/release")

    def set_fate(self, chapter_id: str, fate: str, *, step: int = 1) -> dict[str, Any]:
        """How a chapter's run ends: the run going now if it has not passed `step`, else
        the next run to start (a re-scan, added pages). The fault settings are untouched.

        Args:
            chapter_id: The chapter's id.
            fate: "fail" (fails at the step), "stall" (stops there, abandoned 2 h
                later), or "ok".
            step: The translation step (one page in one language), from 1.

        Returns:
            What is set on the chapter (`control`).

        Raises:
            AdminCallError: No such chapter (404), an unknown fate or a bad step (400).
        """
        body = {"fate": fate, "step": step}
        return self._call("POST", f"/_emulator/chapters/{chapter_id}/fate", body)

    def control(self, chapter_id: str) -> dict[str, Any]:
        """What is set on a chapter.

        Args:
            chapter_id: The chapter's id.

        Returns:
            `{chapterId, holds, heldAt, nextRun, reviewAt}`; `heldAt` names the phase a
            run waits at, if one does.
        """
        return self._call("GET", f"/_emulator/chapters/{chapter_id}/control")

    def advance(self, seconds: float) -> datetime:
        """Move the manual clock on, running every run step and delivery due meanwhile.

        Args:
            seconds: How far, from 0 to a year.

        Returns:
            The clock's new time.

        Raises:
            AdminCallError: `seconds` is out of range (400), or the clock is realtime
                (409).
        """
        return _parse_now(self._call("POST", "/_emulator/clock", {"advance": seconds}))

    def now(self) -> datetime:
        """The emulator's clock.

        Returns:
            Its time, aware, in UTC.
        """
        return _parse_now(self._call("GET", "/_emulator/clock"))

    def set_faults(
        self,
        *,
        failure_rate: float = 0.0,
        stall_rate: float = 0.0,
        latency_ms: int = 0,
        error_rate: float = 0.0,
        seed: int = 0,
    ) -> dict[str, Any]:
        """Set the injected faults (kept across restarts); each call replaces them all.

        Args:
            failure_rate: The share of runs that fail, from 0 to 1.
            stall_rate: The share of runs that stall (and are abandoned), from 0 to 1.
            latency_ms: Milliseconds every `/api/v1` answer is delayed.
            error_rate: The share of `/api/v1` requests answered 503, from 0 to 1.
            seed: Seeds the draws, so a test sees the same faults on every run.

        Returns:
            The settings now in force.

        Raises:
            AdminCallError: A rate outside 0 to 1, or a latency out of range (400).
        """
        body = {
            "failureRate": failure_rate,
            "stallRate": stall_rate,
            "latencyMs": latency_ms,
            "errorRate": error_rate,
            "seed": seed,
        }
        return self._call("PUT", "/_emulator/faults", body)

    def add_chaos(
        self,
        method: str,
        route: str,
        kind: str,
        *,
        project_id: str | None = None,
        chapter_id: str | None = None,
        probability: float = 1.0,
        count: int | None = None,
        seed: int = 0,
        status: int | None = None,
        body: Any = None,
        retry_after: int | None = None,
        latency_ms: int | None = None,
        after_bytes: int | None = None,
        chunk_bytes: int | None = None,
        interval_ms: int | None = None,
    ) -> dict[str, Any]:
        """Add a chaos rule for one `/api/v1` route (docs/emulator.md, "Chaos").

        ```python
        emu.add_chaos("POST", "/projects/{project_id}/chapters", "status", status=429,
                      retry_after=30, count=2)
        emu.add_chaos("POST", "/projects/{project_id}/chapters", "drop", count=1)
        ```

        Args:
            method: "GET", "POST" or "*".
            route: The route as the spec writes it (`/chapters/{id}`), or "*".
            kind: "status" (answer `status` with `body` and `Retry-After`, doing
                nothing), "latency" (wait `latency_ms` real milliseconds first), "drop"
                (act, then close the connection with no answer), "cut" (act, then close
                after `after_bytes` of the body), "reset" (reset the connection before
                acting), "trickle" (act, then send the body `chunk_bytes` at a time,
                `interval_ms` apart).
            project_id: Only requests about this project (its chapters included).
            chapter_id: Only requests about this chapter.
            probability: The share of matching requests it fires on (seeded draws).
            count: Fire this many times, then stay listed as spent; None: always.
            seed: Seeds the rule's draws.
            status: For "status": the status to answer (400-599).
            body: For "status": the JSON body; the error shape by default.
            retry_after: For "status": a `Retry-After` header, in seconds.
            latency_ms: For "latency".
            after_bytes: For "cut".
            chunk_bytes: For "trickle" (default 1).
            interval_ms: For "trickle".

        Returns:
            The rule as listed, with its `id`.

        Raises:
            AdminCallError: A field that does not fit the kind, or an unknown route (400).
        """
        fields = {
            "method": method,
            "route": route,
            "kind": kind,
            "projectId": project_id,
            "chapterId": chapter_id,
            "probability": probability,
            "count": count,
            "seed": seed,
            "status": status,
            "body": body,
            "retryAfter": retry_after,
            "latencyMs": latency_ms,
            "afterBytes": after_bytes,
            "chunkBytes": chunk_bytes,
            "intervalMs": interval_ms,
        }
        always = {"projectId", "chapterId", "count", "body", "retryAfter"}
        rule = {k: v for k, v in fields.items() if v is not None or k in always}
        return self._call("POST", "/_emulator/chaos", rule)

    def chaos_rules(self) -> list[dict[str, Any]]:
        """The chaos rules, in the order added, each with `applied` (times it fired).

        Returns:
            One object per rule, as `add_chaos` returned it.
        """
        answer: list[dict[str, Any]] = self._send("GET", "/_emulator/chaos")
        return answer

    def clear_chaos(self, rule_id: str | None = None) -> None:
        """Remove one chaos rule, or every rule when `rule_id` is None.

        Args:
            rule_id: The rule's `id`.

        Raises:
            AdminCallError: No such rule (404).
        """
        self._call("DELETE", "/_emulator/chaos" + (f"/{rule_id}" if rule_id else ""))

    def seed_demo(self) -> dict[str, Any]:
        """Build the demo workspace (once: seeding again returns the same one).

        Returns:
            `{workspaceId, apiKey}`.
        """
        return self._call("POST", "/_emulator/seed/demo")

    def ledger(self, workspace_id: str) -> dict[str, Any]:
        """What a workspace was charged, and the lines translated, entry by entry.

        Args:
            workspace_id: The workspace's id.

        Returns:
            `{balance, charges, lines}`: each charge with its time, chapter, project,
            credits, pages, languages, reason and `rework`; each line entry with its
            time, chapter, project, language and lines.

        Raises:
            AdminCallError: No such workspace (404).
        """
        return self._call("GET", f"/_emulator/workspaces/{workspace_id}/ledger")

    def add_webhook(
        self, workspace_id: str, url: str, events: list[str], allow_private: bool = True
    ) -> dict[str, Any]:
        """Add a webhook endpoint, as the dashboard does.

        Args:
            workspace_id: The workspace's id.
            url: Where deliveries are posted.
            events: The event types to send: "chapter.finished", "chapter.failed",
                "export.ready".
            allow_private: Allow a loopback or private address (a test's receiver).

        Returns:
            `{id, url, events, secret}`; the signing secret is shown only here.

        Raises:
            AdminCallError: No such workspace, an unknown event type, an address not
                allowed (400), or five endpoints already (409).
        """
        body = {
            "workspaceId": workspace_id,
            "url": url,
            "events": events,
            "allowPrivate": allow_private,
        }
        return self._call("POST", "/_emulator/webhooks", body)

    def delete_webhook(self, webhook_id: str) -> dict[str, Any]:
        """Delete a webhook endpoint; its waiting deliveries are given up (kept in the log).

        Args:
            webhook_id: The endpoint's id.

        Returns:
            An empty object.

        Raises:
            AdminCallError: No such endpoint.
        """
        return self._call("DELETE", f"/_emulator/webhooks/{webhook_id}")

    def test_webhook(self, webhook_id: str) -> dict[str, Any]:
        """Send a `ping` to an endpoint at once, outside the delivery log.

        Args:
            webhook_id: The endpoint's id.

        Returns:
            `{ok, status}`; status None when the endpoint did not answer.

        Raises:
            AdminCallError: No such endpoint.
        """
        return self._call("POST", f"/_emulator/webhooks/{webhook_id}/test")

    def deliveries(self, workspace_id: str | None = None) -> list[dict[str, Any]]:
        """The webhook delivery log of the last 30 days, oldest first.

        Args:
            workspace_id: Only this workspace's deliveries; every workspace's when None.

        Returns:
            One object per delivery: its event, endpoint, state and attempts.

        Raises:
            AdminCallError: No such workspace.
        """
        params = {"workspaceId": workspace_id} if workspace_id else {}
        answer: list[dict[str, Any]] = self._send("GET", "/_emulator/deliveries", **params)
        return answer


def replay(path: str | Path, emulator: Emulator | None = None) -> tuple[Emulator, ReplayReport]:
    """Replay a recording into a fresh emulator; returns it (running) and the report.

    ```python
    emu, report = replay("session.jsonl")
    assert report.same, report.differences[:3]
    ```

    Args:
        path: The recording (`Emulator(record=...)`, `toolkit emulator --record`).
        emulator: A fresh, running emulator on a manual clock at the recording's start;
            by default one is made and started.

    Returns:
        The emulator, running, and what the replay found (docs/emulator.md).

    Raises:
        NotARecording: The file cannot be read as a recording.
    """
    if emulator is None:
        header, _ = read_recording(path)
        start = datetime.fromisoformat(header["start"])
        emulator = Emulator(clock="manual", start=start).start()
    return emulator, replay_into(emulator, path)


def _parse_now(body: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(body["now"])  # Python 3.11 reads the "Z"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_server(
    *,
    host: str,
    port: int,
    clock: ClockMode,
    speed: float,
    seed: str,
    state: str,
    admin_token: str | None,
    start: datetime | None = None,
    chaos: Sequence[Any] = (),
    record: str | None = None,
    replay_from: str | None = None,
) -> None:
    """Serve until Ctrl-C or SIGTERM, printing the address and the admin token
    (`toolkit emulator` runs this).

    Args:
        host: The address to listen on.
        port: The port; 0 for a free one.
        clock: "manual" or "realtime".
        speed: Simulated seconds per real second, for the realtime clock.
        seed: "demo" seeds the demo workspace and prints its API key and how to use it;
            anything else seeds nothing.
        state: `":memory:"` or a SQLite file (see `Emulator`).
        admin_token: The admin calls' bearer token; a random one by default.
        start: The clock's first instant; by default now.
        chaos: Chaos rules to start with, as `POST /_emulator/chaos` takes them.
        record: A file to record every request to.
        replay_from: A recording to replay first (the clock is then manual, from the
            recording's start); the emulator then serves the state it rebuilt.

    Raises:
        RuntimeError: The address cannot be listened on.
        ChaosRuleError: A rule of `chaos` cannot work (nothing was started).
    """
    if replay_from is not None:
        header, _ = read_recording(replay_from)
        clock, start = "manual", datetime.fromisoformat(header["start"])
    emulator = Emulator(
        state=state, clock=clock, admin_token=admin_token, speed=speed, start=start, record=record
    )
    for number, rule in enumerate(chaos, start=1):
        try:
            emulator.services.chaos.add(rule)
        except EmulatorError as exc:
            emulator.stop()
            raise ChaosRuleError(f"rule {number}: {exc.message}") from None
    emulator.start(host=host, port=port)
    # A service manager stops with SIGTERM: shut down as cleanly as on Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    # Ctrl-C stops the server even when whatever started us ignored SIGINT (a child
    # inherits that, and Python then leaves it ignored): seen under a test runner.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        pace = f"{speed:g} simulated s per real s" if clock == "realtime" else "advance it by hand"
        print(f"Chapter Translation Service emulator on {emulator.url}  (clock: {clock}, {pace})")
        print(f"  admin token:  {emulator.admin_token}")
        if replay_from is not None:
            _, report = replay(replay_from, emulator)
            verdict = "all as recorded" if report.same else f"{len(report.differences)} differ"
            print(f"  replayed:     {report.requests} requests of {replay_from}, answers {verdict}")
        if record is not None:
            print(f"  recording to: {record}")
        if chaos:
            print(f"  chaos rules:  {len(chaos)} (GET /_emulator/chaos lists what each did)")
        if seed == "demo":
            demo = emulator.seed_demo()
            print(f"  demo workspace {demo['workspaceId']}")
            print(f"  API key:      {demo['apiKey']}")
            print()
            print(f"  export CTS_BASE_URL={emulator.url}")
            print(f"  export CTS_API_KEY={demo['apiKey']}")
            print(
                f'  curl -H "Authorization: Bearer {demo["apiKey"]}" {emulator.url}/api/v1/projects'
            )
        if clock == "manual":
            print(
                f'  advance time: curl -X POST -H "Authorization: Bearer {emulator.admin_token}" '
                f"-d '{{\"advance\": 600}}' {emulator.url}/_emulator/clock"
            )
        print("Press Ctrl-C to stop.", flush=True)
        while emulator._background is not None and emulator._background.running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        emulator.stop()
