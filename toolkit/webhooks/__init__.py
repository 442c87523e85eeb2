"""Receive the service's signed webhook deliveries.

```python
payload = tk.webhooks.verify(body, headers, secret)     # raises WebhookVerificationError
app = tk.webhooks.Receiver(secret, store=store, seen_path="data/receiver.sqlite")
```

`verification` checks a delivery, `receiver` is the ASGI app that keeps events, `inbox`
its SQLite memory of handled ids; `serve` runs the receiver with uvicorn. docs/webhooks.md
gives the decisions.
"""

from __future__ import annotations

import socket
from pathlib import Path

from toolkit.config import store_path, webhook_secret
from toolkit.errors import ToolkitError, WebhookVerificationError
from toolkit.webhooks.receiver import EventSink, Receiver
from toolkit.webhooks.verification import verify

__all__ = ["EventSink", "Receiver", "WebhookVerificationError", "serve", "verify"]


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 8766,
    store: str | None = None,
    secret: str | None = None,
    seen_path: str | None = None,
) -> None:
    """Run a `Receiver` with uvicorn until interrupted (`toolkit webhooks serve`).

    The secret comes from `secret` or `CTS_WEBHOOK_SECRET`, the store from `store` or
    `CTS_STORE`; handled ids are kept in `seen_path`, by default `_receiver.sqlite` inside
    a local store's folder.
    """
    import uvicorn

    from toolkit.store import SnapshotStore

    root = store_path(store)
    key = webhook_secret(secret)
    # Bound here, not by uvicorn: a port that is taken or not allowed is then one
    # ToolkitError, where uvicorn logs it and exits with its own status 3.
    listening = _listen(host, port)
    receiver = Receiver(
        key, store=SnapshotStore(root), seen_path=seen_path or _default_seen_path(root)
    )
    try:
        config = uvicorn.Config(receiver, host=host, port=port, log_level="info")
        uvicorn.Server(config).run(sockets=[listening])
    finally:
        receiver.close()
        listening.close()


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port, or a ToolkitError saying why it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except (OSError, OverflowError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        why = why.split(" (while attempting")[0]  # create_server's addition names the address
        raise ToolkitError(
            f"the webhook receiver cannot listen on {host}:{port} ({why}); "
            "choose another port (--port, port=) or host"
        ) from exc


def _default_seen_path(root: str) -> Path:
    """Where `serve` keeps handled ids: in a local store's folder, else the working folder."""
    if "://" in root:
        return Path("webhooks-receiver.sqlite")
    return Path(root) / "_receiver.sqlite"
