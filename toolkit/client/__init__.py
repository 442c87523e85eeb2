"""`Client` and `AsyncClient`: every `/api/v1` route of the Chapter Translation Service.

The parts: `flows` (each route written once, as a generator both clients drive),
`requests` (what is sent, and answers turned into resources or errors), `retry`
(`RetryPolicy`: when to send again), `waiting` (polling a run to its end), `uploads`
(checks before sending) and `clients` (the two clients: only their I/O differs).
docs/client.md gives the rules.
"""

from __future__ import annotations

from toolkit.client.clients import AsyncClient, AttemptHook, Client
from toolkit.client.retry import RetryPolicy
from toolkit.client.uploads import check_image, check_text, prepare_pages

# The upload checks are public: a panel or a folder upload checks a file before sending.
__all__ = [
    "AsyncClient",
    "AttemptHook",
    "Client",
    "RetryPolicy",
    "check_image",
    "check_text",
    "prepare_pages",
]
