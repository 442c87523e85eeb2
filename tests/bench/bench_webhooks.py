"""Benchmark 5: webhook verification and the receiver's deliveries per second.

`tk.webhooks.verify` and the `standardwebhooks` package's `Webhook.verify` check the same
signed deliveries (fresh timestamps, event bodies shaped like the emulator's), each from
the public call a user makes: ours is given the `whsec_` secret on every call, theirs is
built once around it. Rates are medians of `runs` passes.

The receiver runs in this process under uvicorn on loopback; a separate process signs
and POSTs `deliveries` events, `concurrency` at a time, each with a new id. Every event
is committed to the receiver's SQLite (`synchronous=FULL`) before its 2xx, and, in the
second variant, handed to a `SnapshotStore` too (in groups: the Delta commits of its
events table are counted). Both variants check that every event arrived exactly once.

Slow senders: 8 connections each announce a 1 MiB delivery and send 4 KiB of it every
0.25 s; the receiver's process RSS is sampled meanwhile (`/proc/self/statm`, Linux), and
each sender's answer (408 after the receiver's 10 s body limit) and when it came.

Memory under load (issue 38): 8 senders deliver 10,000 events between them, one in ten
slow (its body in four pieces 50 ms apart) and one in fifty oversized (1.5 MiB, chunked,
refused 413 after 1 MiB); the receiver's RSS is read after the first 500 deliveries and
sampled every 0.2 s through the rest: its peak must stay within 20% of that.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.bench.client_side import ClientProcess
from tests.bench.table import Table, spread

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@dataclass(frozen=True)
class WebhookOptions:
    deliveries: int = 2_000
    concurrency: int = 8
    runs: int = 5
    mixed: int = 10_000  # deliveries of the memory run (issue 38)


def run(options: WebhookOptions) -> list[Table]:
    table = Table("5. Webhooks")
    _verify_rates(table, options)
    folder = tempfile.mkdtemp(prefix="bench-receiver-")
    try:
        with ClientProcess() as sender:
            for with_store, count in ((False, options.deliveries), (True, options.deliveries // 4)):
                _receiver_rate(table, sender, folder, options, count=count, with_store=with_store)
            _slow_senders(table, folder)
            for with_store in (False, True):
                memory_under_load(
                    table, sender, folder, deliveries=options.mixed, with_store=with_store
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [table]


# -- verify ---------------------------------------------------------------------------------


def _verify_rates(table: Table, options: WebhookOptions) -> None:
    from standardwebhooks import Webhook

    from toolkit.webhooks import verify

    messages = [signed(n) for n in range(options.deliveries)]
    reference = Webhook(SECRET)

    def ours() -> None:
        for body, headers in messages:
            verify(body, headers, SECRET)

    def theirs() -> None:
        for body, headers in messages:
            reference.verify(body, headers)

    rates = {}
    for name, work in (("tk.webhooks.verify", ours), ("standardwebhooks Webhook.verify", theirs)):
        times = []
        for _ in range(options.runs):
            began = time.perf_counter()
            work()
            times.append(time.perf_counter() - began)
        rates[name] = len(messages) / statistics.median(times)
        table.add(
            f"{name}: deliveries verified a second",
            f"{rates[name]:,.0f}",
            f"median of {options.runs} passes over {len(messages):,} ({spread(times)})",
        )
    ratio = rates["tk.webhooks.verify"] / rates["standardwebhooks Webhook.verify"]
    table.verdict("  ours / standardwebhooks", f"{ratio:.2f}x", ratio >= 1.0, ">= 1.0x")


def signed(number: int, *, timestamp: int | None = None) -> tuple[bytes, dict[str, str]]:
    """A delivery as the emulator sends it: body bytes and the three webhook headers."""
    from toolkit._signing import sign

    webhook_id = f"msg_{uuid.uuid4().hex}"
    stamp = int(time.time()) if timestamp is None else timestamp
    body = json.dumps(
        {
            "type": "chapter.finished",
            "timestamp": "2026-11-21T12:00:00.000Z",
            "data": {
                "chapterId": str(uuid.uuid4()),
                "projectId": str(uuid.uuid4()),
                "position": number + 1,
                "title": f"Chapter {number + 1}",
                "pageCount": 18,
                "languages": [
                    {"languageCode": code, "status": "needs_review", "failed": False}
                    for code in ("en", "fr", "es")
                ],
            },
        }
    ).encode()
    # The headers an emulator delivery arrives with, as a receiver's request shows them.
    headers = {
        "host": "127.0.0.1:8766",
        "accept": "*/*",
        "accept-encoding": "gzip, deflate",
        "connection": "keep-alive",
        "user-agent": "cts-emulator-webhooks/1",
        "content-type": "application/json",
        "content-length": str(len(body)),
        "webhook-id": webhook_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": sign(SECRET, webhook_id, stamp, body),
    }
    return body, headers


# -- the receiver ---------------------------------------------------------------------------


def _receiver_rate(
    table: Table,
    sender: ClientProcess,
    folder: str,
    options: WebhookOptions,
    *,
    count: int,
    with_store: bool,
) -> None:
    from toolkit import SnapshotStore
    from toolkit.webhooks import Receiver

    variant = "store" if with_store else "inbox"
    store = SnapshotStore(f"{folder}/{variant}-store") if with_store else None
    receiver = Receiver(SECRET, store=store, seen_path=f"{folder}/{variant}.sqlite")
    try:
        with serving(receiver) as url:
            sent = sender.call(send_deliveries, url, count, concurrency=options.concurrency)
        kept = len(store.history("events")) if store is not None else len(receiver.events())
    finally:
        receiver.close()
    commits = ""
    if store is not None:
        from deltalake import DeltaTable

        versions = DeltaTable(f"{folder}/{variant}-store/events").version() + 1
        commits = f" in {versions:,} Delta commits"
    label = "receiver + SnapshotStore" if with_store else "receiver, SQLite inbox only"
    table.add(
        f"{label}: deliveries a second",
        f"{count / sent['seconds']:,.0f}",
        f"{count:,} signed POSTs, {options.concurrency} at a time; "
        f"{sent['ok']:,} answered 2xx, {kept:,} events kept{commits}",
    )
    if sent["ok"] != count or kept != count:
        raise RuntimeError(f"{label}: {sent['ok']} answered 2xx and {kept} kept of {count}")


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on a free loopback port, on a thread."""
    from toolkit.emulator.serving import BackgroundServer

    server = BackgroundServer().start(app, timeout=10)
    try:
        yield server.url
    finally:
        server.stop(timeout=10)


def send_deliveries(url: str, count: int, *, concurrency: int) -> dict[str, Any]:
    """Sign and POST `count` deliveries, `concurrency` at a time (in the sender's process)."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    with httpx.Client(timeout=30) as http:
        http.post(url, content=b"{}")  # warm-up: the connection (answered 401)

        def send(number: int) -> bool:
            body, headers = signed(number)
            return http.post(url, content=body, headers=headers).is_success

        began = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            answers = list(pool.map(send, range(count)))
        return {"seconds": time.perf_counter() - began, "ok": sum(answers)}


# -- slow senders ---------------------------------------------------------------------------

SLOW_SENDERS = 8
SLOW_BODY = 1 << 20
SLOW_CHUNK = 4096
SLOW_EVERY = 0.25
SLOW_GIVE_UP = 15.0  # seconds a sender dribbles before it gives up waiting for an answer


def _slow_senders(table: Table, folder: str) -> None:
    import threading

    from toolkit.webhooks import Receiver

    receiver = Receiver(SECRET, seen_path=f"{folder}/slow.sqlite")
    answers: list[tuple[str, float]] = []
    try:
        with serving(receiver) as url:
            port = int(url.rsplit(":", 1)[1])
            before = _rss_mib()
            threads = [
                threading.Thread(target=_dribble, args=(port, n, answers))
                for n in range(SLOW_SENDERS)
            ]
            for thread in threads:
                thread.start()
            peak = before
            while any(thread.is_alive() for thread in threads):
                peak = max(peak, _rss_mib())
                time.sleep(0.1)
            after = _rss_mib()
    finally:
        receiver.close()
    statuses = sorted({status for status, _ in answers})
    seconds = [at for _, at in answers]
    table.add(
        f"receiver RSS, {SLOW_SENDERS} slow senders: before / peak / after",
        f"{before:.0f} / {peak:.0f} / {after:.0f} MiB",
        f"each announces 1 MiB, sends {SLOW_CHUNK // 1024} KiB every {SLOW_EVERY} s; "
        f"answers {', '.join(statuses) or 'none'} after {spread(seconds) if seconds else '-'}",
    )


def _dribble(port: int, number: int, answers: list[tuple[str, float]]) -> None:
    """One slow sender: a signed head announcing `SLOW_BODY` bytes, then a trickle."""
    import socket

    _, headers = signed(number)
    headers = {**headers, "content-length": str(SLOW_BODY)}
    head = "POST / HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    began = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=SLOW_EVERY) as sender:
        sender.sendall(head.encode() + b"\r\n")
        while time.perf_counter() - began < SLOW_GIVE_UP:
            try:
                sender.sendall(b" " * SLOW_CHUNK)
                answer = sender.recv(64)
            except TimeoutError:
                continue  # no answer yet: send the next piece
            except OSError:
                answer = b"HTTP/1.1 closed"
            status = answer.split(b" ")[1].decode() if answer else "closed"
            answers.append((status, time.perf_counter() - began))
            return
        answers.append(("none", time.perf_counter() - began))


def _rss_mib() -> float:
    """This process's resident memory now, in MiB (Linux)."""
    import os

    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


# -- memory under load (issue 38) -----------------------------------------------------------

FIRST = 500  # deliveries before the reference reading of RSS
MIXED_SENDERS = 8
SLOW_PIECES, SLOW_PAUSE = 4, 0.05
OVERSIZED = 3 << 19  # 1.5 MiB: over the receiver's 1 MiB limit


def memory_under_load(
    table: Table, sender: ClientProcess, folder: str, *, deliveries: int, with_store: bool = False
) -> None:
    """The receiver's RSS after the first `FIRST` deliveries, and its peak over the rest;
    `with_store`: each event handed to a `SnapshotStore` too."""
    import threading

    from toolkit import SnapshotStore
    from toolkit.webhooks import Receiver

    store = SnapshotStore(f"{folder}/mixed-store") if with_store else None
    receiver = Receiver(SECRET, store=store, seen_path=f"{folder}/mixed.sqlite")
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(_rss_mib())
            stop.wait(0.2)

    try:
        with serving(receiver) as url:
            first = sender.call(send_mixed, url, 0, FIRST, senders=MIXED_SENDERS)
            reference = _rss_mib()
            sampler = threading.Thread(target=sample)
            sampler.start()
            try:
                rest = sender.call(send_mixed, url, FIRST, deliveries - FIRST,
                                   senders=MIXED_SENDERS)  # fmt: skip
            finally:
                stop.set()
                sampler.join()
            after = _rss_mib()
        kept = len(receiver.events())
    finally:
        receiver.close()
    peak = max([*samples, after])
    answers = {k: first["answers"].get(k, 0) + rest["answers"].get(k, 0)
               for k in {*first["answers"], *rest["answers"]}}  # fmt: skip
    said = ", ".join(f"{n:,} {status}" for status, n in sorted(answers.items()))
    table.add(
        f"receiver{' + SnapshotStore' if with_store else ''} RSS, {deliveries:,} mixed "
        f"deliveries: after {FIRST} / peak / end",
        f"{reference:.0f} / {peak:.0f} / {after:.0f} MiB",
        f"{MIXED_SENDERS} senders; 1 in 10 slow, 1 in 50 oversized; answers {said}; "
        f"{kept:,} events kept; {first['seconds'] + rest['seconds']:.0f} s",
    )
    ratio = peak / reference
    table.verdict(f"  peak / after the first {FIRST}", f"{ratio:.2f}x", ratio <= 1.2, "<= 1.2x")


def send_mixed(url: str, start: int, count: int, *, senders: int) -> dict[str, Any]:
    """POST deliveries `start` .. `start + count - 1`, `senders` at a time, each on its own
    connection: plain, slow (the body in pieces) or oversized (chunked, over the limit),
    by number. Returns the answers by status and the seconds taken."""
    from collections import Counter
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    local = __import__("threading").local()

    def client() -> httpx.Client:
        if not hasattr(local, "http"):
            local.http = httpx.Client(timeout=30)
        return local.http  # type: ignore[no-any-return]

    def send(number: int) -> str:
        body, headers = signed(number)
        if number % 50 == 0:
            headers = {k: v for k, v in headers.items() if k != "content-length"}
            pieces = [b" " * (64 << 10)] * (OVERSIZED // (64 << 10))
            content: Any = iter(pieces)
        elif number % 10 == 5:
            headers = {k: v for k, v in headers.items() if k != "content-length"}
            size = -(-len(body) // SLOW_PIECES)

            def trickle(body: bytes = body, size: int = size) -> Iterator[bytes]:
                for at in range(0, len(body), size):
                    yield body[at : at + size]
                    time.sleep(SLOW_PAUSE)

            content = trickle()
        else:
            content = body
        try:
            return str(client().post(url, content=content, headers=headers).status_code)
        except httpx.HTTPError as error:
            local.__dict__.pop("http", None)  # a refused body closes the connection
            return type(error).__name__

    began = time.perf_counter()
    with ThreadPoolExecutor(senders) as pool:
        answers = Counter(pool.map(send, range(start, start + count)))
    return {"seconds": time.perf_counter() - began, "answers": dict(answers)}
