"""`Emulator`: the whole emulator in one object, served by uvicorn on a thread.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from toolkit.emulator.app import build_app
from toolkit.emulator.core.clock import Clock, ClockMode
from toolkit.emulator.core.db import Database
from toolkit.emulator.core.engine import Engine
from toolkit.emulator.core.faults import Faults
from toolkit.emulator.core.operations import Operations
from toolkit.emulator.core.scheduler import CLOCK_SETTING, Scheduler
from toolkit.emulator.core.services import Services
from toolkit.emulator.core.state import State, from_ms
from toolkit.emulator.delivery.deliveries import Deliveries
from toolkit.emulator.intake.uploads import PageFolder
from toolkit.emulator.serving import BackgroundServer


class AdminCallError(Exception):
    """An admin call the emulator refused: its HTTP `status` and the emulator's `message`.

    The emulator's own error, not the client's: the emulator and the client share only
    the signing primitive, so either can change without the other.
    """

    def __init__(self, message: str, *, status: int, server_message: str) -> None:
        super().__init__(message)
        self.status = status
        self.server_message = server_message


class Emulator:
    def __init__(
        self,
        state: str = ":memory:",
        clock: ClockMode = "manual",
        admin_token: str | None = None,
        *,
        speed: float = 60.0,
        start: datetime | None = None,
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
        scheduler = Scheduler(self.clock, engine, store, deliveries)
        self.services = Services(
            db=self._db,
            state=store,
            clock=self.clock,
            faults=faults,
            engine=engine,
            files=files,
            operations=Operations(store, engine, files),
            scheduler=scheduler,
            admin_token=self.admin_token,
            deliveries=deliveries,
        )
        self.app = build_app(self.services)
        self.url = ""
        self._background: BackgroundServer | None = None
        self._http: httpx.Client | None = None
        self._stopped = False

    # -- life cycle -------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> Emulator:
        """Serve on a background thread; returns once the server accepts connections."""
        try:
            self._background = BackgroundServer(host, port)
        except OSError as exc:
            raise RuntimeError(
                f"the emulator could not start on {host}:{port} ({exc.strerror}); "
                "choose another port"
            ) from exc
        self._background.start(
            self.app,
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
        return self._call("POST", "/_emulator/workspaces", {"name": name, "credits": credits})

    def get_workspace(self, workspace_id: str) -> dict[str, Any]:
        return self._call("GET", f"/_emulator/workspaces/{workspace_id}")

    def set_credits(self, workspace_id: str, credits: int) -> dict[str, Any]:
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
    ) -> dict[str, Any]:
        body = {
            "workspaceId": workspace_id,
            "name": name,
            "kind": kind,
            "sourceLanguage": source_language,
            "readingDirection": reading_direction,
            "processSteps": process_steps,
            "targetLanguages": target_languages,
            "translationModel": translation_model,
        }
        return self._call("POST", "/_emulator/projects", body)

    def trash_project(self, project_id: str) -> dict[str, Any]:
        return self._call("POST", f"/_emulator/projects/{project_id}/trash")

    def trash_chapter(self, chapter_id: str) -> dict[str, Any]:
        return self._call("POST", f"/_emulator/chapters/{chapter_id}/trash")

    def review_chapter(self, chapter_id: str) -> dict[str, Any]:
        return self._call("POST", f"/_emulator/chapters/{chapter_id}/review")

    def advance(self, seconds: float) -> datetime:
        return _parse_now(self._call("POST", "/_emulator/clock", {"advance": seconds}))

    def now(self) -> datetime:
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
        body = {
            "failureRate": failure_rate,
            "stallRate": stall_rate,
            "latencyMs": latency_ms,
            "errorRate": error_rate,
            "seed": seed,
        }
        return self._call("PUT", "/_emulator/faults", body)

    def seed_demo(self) -> dict[str, Any]:
        return self._call("POST", "/_emulator/seed/demo")

    def ledger(self, workspace_id: str) -> dict[str, Any]:
        return self._call("GET", f"/_emulator/workspaces/{workspace_id}/ledger")

    def add_webhook(
        self, workspace_id: str, url: str, events: list[str], allow_private: bool = True
    ) -> dict[str, Any]:
        body = {
            "workspaceId": workspace_id,
            "url": url,
            "events": events,
            "allowPrivate": allow_private,
        }
        return self._call("POST", "/_emulator/webhooks", body)

    def delete_webhook(self, webhook_id: str) -> dict[str, Any]:
        return self._call("DELETE", f"/_emulator/webhooks/{webhook_id}")

    def test_webhook(self, webhook_id: str) -> dict[str, Any]:
        return self._call("POST", f"/_emulator/webhooks/{webhook_id}/test")

    def deliveries(self, workspace_id: str | None = None) -> list[dict[str, Any]]:
        params = {"workspaceId": workspace_id} if workspace_id else {}
        answer: list[dict[str, Any]] = self._send("GET", "/_emulator/deliveries", **params)
        return answer


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
) -> None:
    """Serve until Ctrl-C; with `seed="demo"`, seed the demo workspace and say how to use it."""
    emulator = Emulator(state=state, clock=clock, admin_token=admin_token, speed=speed, start=start)
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
