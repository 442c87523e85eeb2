"""Every exception the toolkit raises, in one hierarchy.

```
ToolkitError
├── ConfigError (also ValueError)        settings missing or unsafe, raised when a client is built
├── InvalidUpload (also ValueError)      refused by uploads.py before anything is sent
├── TransportError                       the network failed: connect, read, timeout
├── ApiError                             the service answered with an error status
│   ├── BadRequest                       400
│   ├── AuthenticationError              401, 403
│   ├── InsufficientCredits              402
│   ├── NotFound                         404
│   ├── Conflict                         409
│   │   └── UnconfirmedCreate            a lost create's chapter number is taken, not surely by it
│   ├── PayloadTooLarge                  413
│   ├── UnsupportedMediaType             415
│   ├── Unprocessable                    422
│   ├── RateLimited                      429
│   ├── ServerError                      5xx
│   └── UnexpectedAnswer                 an answer that is not what the spec describes
├── WaitTimeout (also TimeoutError)      wait_for_chapter ran out of time
├── IncompletePull                       a pull gave up with requests still failing
├── StoreError (also OSError)            the snapshot store cannot be read or written
│   ├── OldStoreLayout                   a store in the first layout: migrate it
│   └── DamagedStore                     a file of the store is damaged or missing
├── QueryError (also ValueError)         SQL given to SnapshotStore.query that DuckDB cannot run
└── WebhookVerificationError             a webhook delivery failed verification
```

Messages never contain the API key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

    import httpx


__all__ = [
    "ApiError",
    "AuthenticationError",
    "BadRequest",
    "ConfigError",
    "Conflict",
    "DamagedStore",
    "IncompletePull",
    "InsufficientCredits",
    "InvalidUpload",
    "NotFound",
    "OldStoreLayout",
    "PayloadTooLarge",
    "QueryError",
    "RateLimited",
    "ServerError",
    "StoreError",
    "ToolkitError",
    "TransportError",
    "UnconfirmedCreate",
    "UnexpectedAnswer",
    "Unprocessable",
    "UnsupportedMediaType",
    "WaitTimeout",
    "WebhookVerificationError",
    "error_class_for",
    "in_plain_words",
]


class ToolkitError(Exception):
    """Base class of everything the toolkit raises on purpose."""


class ConfigError(ToolkitError, ValueError):
    """A setting is missing or unsafe (raised when a client is built).

    `command_line` is the same refusal for someone at the `toolkit` command, where
    Python's argument names mean nothing (None when the message already suits them).
    """

    def __init__(self, message: str, *, command_line: str | None = None) -> None:
        super().__init__(message)
        self.command_line = command_line


class InvalidUpload(ToolkitError, ValueError):
    """A page, text or position was refused before anything was sent.

    Args:
        message: What was wrong and what to do.
        item: What was refused: a page's label, or the argument (`position`, `text`,
            `staged`); None when the whole call was.
    """

    def __init__(self, message: str, *, item: str | None = None) -> None:
        super().__init__(message)
        self.item = item


class StoreError(ToolkitError, OSError):
    """The snapshot store cannot be read or written here; the message names the path."""


class OldStoreLayout(StoreError):
    """A store written in the first layout (Parquet files and a manifest folder)."""


class DamagedStore(StoreError):
    """A file of the store is damaged or missing; the message says which and what to do."""


class QueryError(ToolkitError, ValueError):
    """SQL given to `SnapshotStore.query` that DuckDB cannot run (a typo, an unknown view
    or column): the store itself is fine."""


class TransportError(ToolkitError):
    """The request did not get an answer: connection refused or broken, or a timeout.

    Args:
        message: What failed, with the route.
        reason: What went wrong in plain words, without the route or Python names, for
            a panel or a command to show under its own headline.
        advice: What to do, in the same plain words.
    """

    def __init__(
        self, message: str, *, reason: str | None = None, advice: str | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.advice = advice


class ApiError(ToolkitError):
    """The service answered with an error status.

    Args:
        message: What the toolkit says of it (`str(error)`): the route, the status and
            what to do.
        status: The HTTP status, kept as `status`.
        server_message: The service's own text, kept as `message` (the toolkit's
            `message` when the service gave none).
        response: The `httpx.Response`, kept as `response`, for its headers or raw body.
        reason: What went wrong in plain words, without ids or Python names, for a
            panel that names the subject itself; None when not known.
        advice: What to do, in the same plain words; None when not known.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        server_message: str | None = None,
        response: httpx.Response | None = None,
        reason: str | None = None,
        advice: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = server_message if server_message is not None else message
        self.response = response
        self.reason = reason
        self.advice = advice


class BadRequest(ApiError):
    """400: the request was invalid."""


class AuthenticationError(ApiError):
    """401 or 403: the API key is missing, unknown or not allowed."""


class InsufficientCredits(ApiError):
    """402: the workspace does not have enough credits for the run."""


class NotFound(ApiError):
    """404: the project or chapter does not exist, is in the trash, or is another workspace's."""


class Conflict(ApiError):
    """409: a chapter number is taken, or the chapter is still processing."""


class UnconfirmedCreate(Conflict):
    """409 on the repeat of a create whose answer was lost, and the chapter at that number
    is not certainly the one the lost attempt made: it may be someone else's, and then the
    pages or text were not uploaded.

    Args:
        message: Why the chapter was not taken as the lost attempt's, and what to check.
        chapter_id: The id of the chapter found at that number; None when the service did
            not say.
        position: The chapter number.
        created_at: When the chapter found was made; None when the service did not say.
    """

    def __init__(
        self,
        message: str,
        *,
        chapter_id: str | None = None,
        position: int | None = None,
        created_at: datetime | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.chapter_id = chapter_id
        self.position = position
        self.created_at = created_at


class PayloadTooLarge(ApiError):
    """413: a page image or text is too large."""


class UnsupportedMediaType(ApiError):
    """415: a page image of a type the service does not take (an SVG, say)."""


class Unprocessable(ApiError):
    """422: a page image that cannot be opened, or text over the limit."""


class RateLimited(ApiError):
    """429: too many requests.

    Args:
        message: What the toolkit says of it.
        retry_after: The seconds the service asked to wait (`Retry-After`), if it did.
    """

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx: the service failed."""


class UnexpectedAnswer(ApiError):
    """The service answered (often 200) with something the spec does not describe: a body
    that is not JSON, a field of another type, a status the toolkit does not know.

    Args:
        message: What the toolkit says of it.
        route: The request, e.g. `GET /projects`.
        field: The field's path in the JSON, e.g. `languages[0].status`; `body` for the
            whole body.
        value: What was sent.
    """

    def __init__(self, message: str, *, route: str, field: str, value: Any, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.route = route
        self.field = field
        self.value = value


class WaitTimeout(ToolkitError, TimeoutError):
    """A wait ran out of time (also a `TimeoutError`).

    Args:
        message: What was waited for, and for how long.
        last: The last state seen, e.g. the chapter's `ChapterDetail`.
    """

    def __init__(self, message: str, *, last: Any = None) -> None:
        super().__init__(message)
        self.last = last


class IncompletePull(ToolkitError):
    """A pull gave up (its deadline passed) with requests still failing.

    Args:
        message: How many requests failed, and why.
        failed: Each request that failed (a project or chapter id, or `"projects"`) and
            its last error.
    """

    def __init__(self, message: str, *, failed: dict[str, Exception]) -> None:
        super().__init__(message)
        self.failed = failed


class WebhookVerificationError(ToolkitError):
    """A webhook delivery's headers, signature or timestamp did not verify."""


def in_plain_words(exc: BaseException) -> str:
    """An error as a person reads it: what went wrong, then what to do.

    Args:
        exc: Any exception; client errors that carry `reason` and `advice` are told in
            those words (no route, id or Python name), any other by its own message.

    Returns:
        One or two sentences.
    """
    reason, advice = getattr(exc, "reason", None), getattr(exc, "advice", None)
    if not reason or not advice:
        return str(exc)
    return f"{reason[:1].upper()}{reason[1:]}. {advice[:1].upper()}{advice[1:]}."


_STATUS_ERRORS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: AuthenticationError,
    402: InsufficientCredits,
    403: AuthenticationError,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: Unprocessable,
    429: RateLimited,
}


def error_class_for(status: int) -> type[ApiError]:
    """The exception class for an HTTP error status.

    Args:
        status: An HTTP status of 400 or more.

    Returns:
        The class for that status; `ServerError` for any 5xx, `ApiError` for a status
        without a class of its own.
    """
    if status in _STATUS_ERRORS:
        return _STATUS_ERRORS[status]
    if status >= 500:
        return ServerError
    return ApiError
