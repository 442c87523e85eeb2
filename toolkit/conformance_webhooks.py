"""The webhook decisions of `toolkit conformance`: deliveries to a receiver of its own.

Endpoints are added in the service's dashboard, so the user points one at the address
given with `--receiver HOST:PORT` (secret in `CTS_WEBHOOK_SECRET`), and, while the check
waits, presses Test and lets a chapter finish or fail. Every delivery is kept raw,
answered 200, and judged afterwards (docs/emulator.md, "Conformance").
"""

from __future__ import annotations

import time
from typing import Any

from toolkit.config import Secret
from toolkit.conformance_shapes import is_iso, is_whole, mismatches
from toolkit.errors import WebhookVerificationError
from toolkit.webhooks import verify

__all__ = ["DECISIONS", "DeliveryCollector", "judge_deliveries"]


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _text_or_null(value: Any) -> bool:
    return value is None or isinstance(value, str)


_EVENT_DATA = {
    "chapter.finished": {
        "chapterId": _text,
        "projectId": _text,
        "position": is_whole,
        "title": _text_or_null,
        "pageCount": is_whole,
        "languages": lambda value: isinstance(value, list),
    },
    "chapter.failed": {
        "chapterId": _text,
        "projectId": _text,
        "position": is_whole,
        "title": _text_or_null,
        "failureReason": _text,
    },
    "export.ready": {
        "chapterId": _text,
        "projectId": _text,
        "languageCode": _text,
        "format": _text,
        "filename": _text,
        "byteSize": is_whole,
        "pageCount": is_whole,
        "preparedAt": is_iso,
    },
    "ping": {"endpointId": _text},
}
DECISIONS = {
    "signed": "deliveries are signed (Standard Webhooks, v1) with the endpoint's secret",
    "envelope": "a delivery is JSON {type, timestamp (ISO 8601), data} with webhook-id, "
    "webhook-timestamp and webhook-signature headers",
    "chapter.finished": "chapter.finished data: chapterId, projectId, position, title, "
    "pageCount, languages",
    "chapter.failed": "a failed run's event is chapter.failed with chapterId, projectId, "
    "position, title, failureReason",
    "export.ready": "export.ready data: chapterId, projectId, languageCode, format, "
    "filename, byteSize, pageCount, preparedAt",
    "ping": "the Test action's ping is type ping with data {endpointId}",
}


class DeliveryCollector:
    """A loopback-or-public receiver that keeps every delivery raw and answers 200."""

    def __init__(self, host: str, port: int) -> None:
        from toolkit.emulator.serving import BackgroundServer

        self.deliveries: list[tuple[dict[str, str], bytes]] = []
        # Named ASGI 3: uvicorn takes a bound method for the older two-step interface.
        self._server = BackgroundServer(host, port).start(
            self._app, name="conformance-deliveries", lifespan="off", interface="asgi3"
        )

    async def _app(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = bytearray()
        while True:
            message = await receive()
            body.extend(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        self.deliveries.append((headers, bytes(body)))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def kinds(self) -> set[str]:
        import json

        seen = set()
        for _, body in self.deliveries:
            try:
                seen.add(json.loads(body).get("type"))
            except (ValueError, AttributeError):
                continue
        return seen

    def wait(self, seconds: float) -> None:
        """Real time, for a person pressing Test: until every kind came or time ran out."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not set(_EVENT_DATA) <= self.kinds():
            time.sleep(0.2)

    def stop(self) -> None:
        self._server.stop(timeout=10)


def judge_deliveries(
    deliveries: list[tuple[dict[str, str], bytes]], secret: Secret[str]
) -> list[tuple[str, str | bool | None]]:
    """Per decision: None (agrees), a text (differs: what was seen) or False (unchecked)."""
    if not deliveries:
        return [(decision, False) for decision in DECISIONS.values()]
    unsigned, envelope, payloads = [], [], []
    for headers, body in deliveries:
        try:
            payloads.append(verify(body, headers, secret))
        except WebhookVerificationError as refused:
            unsigned.append(str(refused))
            continue
        missing = [
            h for h in ("webhook-id", "webhook-timestamp", "webhook-signature") if h not in headers
        ]
        wrong = mismatches(
            payloads[-1],
            {"type": _text, "timestamp": is_iso, "data": lambda v: isinstance(v, dict)},
        )
        if missing or wrong:
            envelope.append(", ".join(missing + wrong))
    found: list[tuple[str, str | bool | None]] = [
        (DECISIONS["signed"], "; ".join(unsigned[:2]) or None),
        (DECISIONS["envelope"], "; ".join(envelope[:2]) or None),
    ]
    unknown = sorted({str(p.get("type")) for p in payloads} - set(_EVENT_DATA))
    for kind, fields in _EVENT_DATA.items():
        data = [p.get("data") for p in payloads if p.get("type") == kind]
        if not data and kind == "chapter.failed" and unknown:
            found.append((DECISIONS[kind], f"no chapter.failed; other types {unknown}"))
            continue
        if not data:
            found.append((DECISIONS[kind], False))
            continue
        wrong = [
            ", ".join(mismatches(d, fields))
            for d in data
            if isinstance(d, dict) and mismatches(d, fields)
        ]
        found.append((DECISIONS[kind], "; ".join(wrong[:2]) or None))
    return found
