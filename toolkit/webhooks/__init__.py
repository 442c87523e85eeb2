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

from pathlib import Path

from toolkit.config import store_path, webhook_secret
from toolkit.errors import WebhookVerificationError
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
    receiver = Receiver(
        webhook_secret(secret),
        store=SnapshotStore(root),
        seen_path=seen_path or default_seen_path(root),
    )
    try:
        uvicorn.run(receiver, host=host, port=port, log_level="info")
    finally:
        receiver.close()


def default_seen_path(root: str) -> Path:
    """Where `serve` keeps handled ids: in a local store's folder, else the working folder."""
    if "://" in root:
        return Path("webhooks-receiver.sqlite")
    return Path(root) / "_receiver.sqlite"
