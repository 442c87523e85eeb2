"""`BackgroundServer`: an ASGI app served by uvicorn on a daemon thread.

The one way the project runs a server beside the caller's code: the emulator, the
demo's webhook receiver and the tests' fixtures all use it. The socket is bound when the
object is made, so the address is known before the app exists (a webhook receiver needs
the secret its endpoint gets when it is registered with that address).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from typing import Any

import uvicorn

__all__ = ["BackgroundServer"]

_log = logging.getLogger("uvicorn.error")  # where uvicorn's own shutdown says it


class _Server(uvicorn.Server):
    """uvicorn's server, stopped at once: woken by `exit_now()` rather than on its next
    0.1 s tick, and shut down without uvicorn's fixed 0.1 s sleep.

    Tests start and stop a server each; the 0.2 s saved adds up over a suite.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exit = asyncio.Event()

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit.wait(), timeout=0.1)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown (0.30-0.54), but polling for the connections to close.

        uvicorn sleeps 0.1 s after asking open connections to close, even when none is
        open; an idle keep-alive connection closes within a loop iteration or two. A
        request still in flight is waited for as uvicorn does, up to
        `timeout_graceful_shutdown`, then cancelled.
        """
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        deadline = time.monotonic() + 0.1
        while self.server_state.connections and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        try:
            await asyncio.wait_for(
                self._wait_tasks_to_complete(), timeout=self.config.timeout_graceful_shutdown
            )
        except TimeoutError:
            _log.error(
                "Cancel %s running task(s), timeout graceful shutdown exceeded",
                len(self.server_state.tasks),
            )
            for task in self.server_state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()

    def exit_now(self) -> None:
        self.should_exit = True
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._exit.set)


class BackgroundServer:
    """Binds `host:port` now (port 0: a free one); `start(app)` serves it on a thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named, not left 0: asyncio turns Nagle's algorithm off only on
        # sockets that say they are TCP. Left on, every answer whose headers and body
        # go out in two writes waited for the client's delayed ACK: 44 ms a request.
        self._socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        # As uvicorn does when it binds: a restart on a fixed port need not wait for
        # the old connections' TIME_WAIT to pass.
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError:
            self._socket.close()
            raise
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(
        self, app: Any, *, name: str = "asgi-server", timeout: float = 30.0, **options: Any
    ) -> BackgroundServer:
        """Serve `app`; returns once it accepts connections. `options` go to `uvicorn.Config`."""
        # A shutdown waits at most 5 s for requests still open, then cancels them.
        options = {
            "log_level": "warning",
            "access_log": False,
            "timeout_graceful_shutdown": 5,
            **options,
        }
        self._server = _Server(uvicorn.Config(app, **options))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name=name, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:  # start-up, not simulated time: poll briefly
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server could not start on {self.url}")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the server to stop, wait for its thread, and release the socket."""
        if self._server is not None:
            self._server.exit_now()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
        self._socket.close()
        self._server = self._thread = None
