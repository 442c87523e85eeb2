"""Requests as plain descriptions, and answers turned into resources or errors.

Past 400 lines on purpose: building a request and reading its answer are the two halves
of one boundary, and an error's explanation needs both (it names the route).

Written once for both clients; how the service's error bodies are read is in
docs/client.md.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import httpx

from toolkit.client.retry import BodyNotSent, never_sent, parse_retry_after
from toolkit.config import Secret
from toolkit.errors import (
    ApiError,
    RateLimited,
    TransportError,
    UnexpectedAnswer,
    error_class_for,
)
from toolkit.models import MISSING, Resource, UnexpectedValue, camel, shown

__all__ = [
    "Action",
    "BearerAuth",
    "R",
    "RequestSpec",
    "WatchedBody",
    "api_error",
    "form_field",
    "parse_many",
    "parse_one",
    "scrubbed",
    "sent_wholly",
    "transport_error",
    "watched",
]

R = TypeVar("R", bound=Resource)

Action = Literal[
    "list_projects",
    "get_project",
    "list_chapters",
    "get_chapter",
    "create_chapter",
    "add_pages",
    "start_chapter",
    "rescan_chapter",
]


@dataclass(frozen=True)
class RequestSpec:
    """One request to send (relative to `{base_url}/api/v1`) and what it is about.

    `repeatable` marks a request that may be sent again after a lost answer: every GET,
    and a chapter create with a position (a 409 on its repeat names the chapter found).
    """

    method: Literal["GET", "POST"]
    path: str
    action: Action
    json: Any = None
    files: Sequence[tuple[str, Any]] | None = None
    project_id: str | None = None
    chapter_id: str | None = None
    position: int | None = None
    repeatable: bool = False


class BearerAuth(httpx.Auth):
    """Adds the key to each request as it is sent, so no prepared request carries it."""

    def __init__(self, key: Secret[str]) -> None:
        self._key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = "Bearer " + self._key.reveal()
        yield request

    def __repr__(self) -> str:
        return "<BearerAuth key=**********>"


def form_field(name: str, value: str | int) -> tuple[str, tuple[None, bytes, str | None]]:
    """A plain multipart form field (no file name), so every upload is multipart/form-data."""
    if isinstance(value, str):
        return (name, (None, value.encode("utf-8"), "text/plain; charset=utf-8"))
    return (name, (None, str(value).encode("ascii"), None))


def _server_message(response: httpx.Response) -> str | None:
    """The service's own words from an error answer, if it gave any."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:300] or None
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
        for value in (error, body.get("message"), body.get("detail")):
            if isinstance(value, str):
                return value
    return None


def _subject(spec: RequestSpec) -> str:
    if spec.chapter_id is not None:
        return f"chapter {spec.chapter_id!r}"
    if spec.project_id is not None:
        return f"project {spec.project_id!r}"
    return "the workspace"


@dataclass(frozen=True)
class _Explanation:
    """What went wrong and what to do, written once for everyone who reads an error.

    `summary` names the request's subject (ids: all the client knows); `reason` and
    `advice` are plain words a person acts on, without ids or Python names, so a panel can
    name the subject its own way and show them as they are; `hint` is the code to call.
    """

    summary: str
    reason: str
    advice: str
    hint: str | None = None
    # The reason is too general to act on alone: the service's own words go with it.
    quote_service: bool = False


_BAD_REQUEST_ADVICE: dict[str, tuple[str, str | None]] = {
    "create_chapter": (
        "a comic chapter needs pages (or to be staged), a novel chapter non-empty text, "
        "and a chapter number must be a whole number of 1 or more",
        None,
    ),
    "add_pages": (
        "pages go to a comic chapter, at least one per call, and a page number only with a "
        "single page",
        None,
    ),
    "start_chapter": (
        "upload pages before starting; on a chapter that has run, start only the pages added "
        "to it held since",
        "pass page_ids= naming the pages added with hold=True",
    ),
    "rescan_chapter": (
        "only a comic chapter with pages can be re-scanned; for a novel, upload its text as "
        "a new chapter",
        None,
    ),
}
_WAIT = "wait for it to finish, then try again"


def _conflict(spec: RequestSpec) -> _Explanation:
    if spec.action == "create_chapter":
        number = f"a chapter {spec.position}" if spec.position else "a chapter with that number"
        taken = f"chapter {spec.position} is taken" if spec.position else "the number is taken"
        return _Explanation(
            f"project {spec.project_id!r} already has {number}",
            taken,
            "pick another chapter number, or leave it out to take the next free one",
            "position= sets the number",
        )
    wait_hint = f"client.wait_for_chapter({spec.chapter_id!r}) waits for it"
    if spec.action == "add_pages" and spec.position is not None:
        return _Explanation(
            f"chapter {spec.chapter_id!r} refused the page at position {spec.position}",
            f"page {spec.position} was refused",
            "either the chapter is still processing (wait for it to finish) or it has run, "
            "and then new pages go after the last one: leave the page number out",
            wait_hint,
        )
    return _Explanation(
        f"chapter {spec.chapter_id!r} is still processing",
        "the chapter is still processing",
        _WAIT,
        wait_hint,
    )


def _explain(status: int, spec: RequestSpec) -> _Explanation:
    """What went wrong and what to do, for an error status on this request."""
    subject = _subject(spec)
    if status == 400:
        advice, hint = _BAD_REQUEST_ADVICE.get(spec.action, ("check what was sent", None))
        return _Explanation(
            f"the service refused {spec.action} on {subject}",
            "the service refused the request",
            advice,
            hint,
            quote_service=True,
        )
    if status in (401, 403):
        return _Explanation(
            "the API key was refused",
            "the API key was refused",
            "check CTS_API_KEY: use a key of your workspace",
            "or pass api_key=",
        )
    if status == 402:
        return _Explanation(
            f"not enough credits for {spec.action} on {subject}",
            "not enough credits",
            "add credits to the workspace, or send fewer pages",
        )
    if status == 404:
        what = "chapter" if spec.chapter_id is not None else "project"
        where = "list_projects()" if spec.chapter_id is None else "list_chapters(project_id)"
        return _Explanation(
            f"{subject} not found",
            f"the {what} was not found",
            "it does not exist, is in the trash, or is another workspace's",
            f"{where} shows what this key can see",
        )
    if status == 409:
        return _conflict(spec)
    if status == 413:
        reason = "a page image or the text is too large"
        return _Explanation(reason, reason, "scale or recompress the images, or split the text")
    if status == 415:
        reason = "a page image is of a type the service does not take"
        return _Explanation(reason, reason, "send PNG, JPEG or WebP")
    if status == 422:
        reason = "a page image cannot be opened, or the text is over the limit"
        return _Explanation(
            reason,
            reason,
            "check that each file opens in an image viewer; keep text to 200,000 characters",
            quote_service=True,
        )
    if status == 429:
        return _Explanation(
            "too many requests", "too many requests", "slow down and try again in a while"
        )
    if status >= 500:
        if spec.method == "GET":
            return _Explanation(
                f"the service failed on {spec.action}",
                "the service failed",
                "try again later",
                quote_service=True,
            )
        return _Explanation(
            f"the service failed on {spec.action} for {subject}",
            "the service failed",
            "it may have acted before failing: look at the project's chapters before sending "
            "it again",
            "get_chapter or list_chapters shows them",
            quote_service=True,
        )
    return _Explanation(
        f"unexpected answer to {spec.action} on {subject}",
        f"the service answered {status}",
        "try again later",
        "see .response for details",
        quote_service=True,
    )


def api_error(
    response: httpx.Response,
    spec: RequestSpec,
    *,
    attempts: int = 1,
    note: str | None = None,
    error_class: type[ApiError] | None = None,
    **fields: Any,
) -> ApiError:
    """The `ApiError` subclass for an error answer, with a message a person can act on.

    `error_class` (with its own `fields`) replaces the class the status picks.
    """
    status = response.status_code
    explained = _explain(status, spec)
    said = _news(_server_message(response), explained)
    message = f"{explained.summary} ({status}); {explained.advice}"
    if explained.hint:
        message += f" ({explained.hint})"
    if note:
        message += f". {note}"
    if attempts > 1:
        message += f" (gave up after {attempts} attempts)"
    if said:
        message += f". The service said: {said}"
    reason = explained.reason
    if explained.quote_service and said:
        reason += f" ({said})"
    cls = error_class or error_class_for(status)
    parts: dict[str, Any] = {
        "status": status,
        "server_message": _server_message(response),
        "response": response,
        "reason": reason,
        "advice": explained.advice,
        **fields,
    }
    if cls is RateLimited:
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        return RateLimited(message, retry_after=retry_after, **parts)
    return cls(message, **parts)


def _news(said: str | None, explained: _Explanation) -> str | None:
    """The parts of the service's message (its clauses, split at `;`) that our words do not
    already say, so that the same advice is not given twice; None when nothing is left."""
    if not said:
        return None
    ours = set(_words(f"{explained.summary} {explained.reason} {explained.advice}"))
    kept = [part.strip() for part in said.split(";") if not set(_words(part)) <= ours]
    return "; ".join(part for part in kept if part) or None


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+", text.lower())


def transport_error(
    error: httpx.TransportError, spec: RequestSpec, *, attempts: int, maybe_acted: bool
) -> TransportError:
    """A `TransportError` for a request that got no answer, saying whether it may have acted.

    `maybe_acted`: an earlier attempt of this request may have reached the service.
    """
    if isinstance(error, httpx.LocalProtocolError):
        # httpx quotes the refused header in its text, and a header may be the key.
        return TransportError(
            f"{spec.method} {spec.path} was not sent: httpx refused one of its header values "
            "(the value is not shown: it may be the API key). Check that "
            "CTS_API_KEY holds the key alone, with no spaces or line breaks"
        )
    what = (
        f"{spec.method} {spec.path} got no answer ({type(error).__name__}: {error or 'no detail'})"
    )
    if attempts > 1:
        what += f" after {attempts} attempts"
    hint = None
    if isinstance(error, BodyNotSent) and not maybe_acted:
        reason = "the connection broke before the request was completely sent, so it was not sent"
        advice = "the service cannot have acted on it: it is safe to send it again"
    elif never_sent(error) and not maybe_acted:
        reason = "could not reach the service"
        advice = "check the base URL (CTS_BASE_URL), that the service runs, and the network"
    elif spec.method == "GET":
        reason, advice = "the network kept failing", "try again later"
    else:
        reason = "the connection broke after the request was sent"
        advice = (
            "the service may have acted on it: look at the project's chapters before sending "
            "it again"
        )
        if spec.action == "create_chapter" and spec.position is None:
            hint = "with position= the client retries it and names the chapter it finds"
    message = f"{what}; {reason}: {advice}" + (f"; {hint}" if hint else "")
    return TransportError(message, reason=reason, advice=advice)


class WatchedBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A request's body that notes whether httpx took all of it.

    httpcore hides a failed body write (it goes on to read an early answer, then fails
    on the read), so the error alone cannot tell "broke while sending" from "broke after
    sending". A body whose last chunk was never asked past was not written whole.
    """

    def __init__(self, inner: httpx.SyncByteStream | httpx.AsyncByteStream) -> None:
        self.inner = inner
        self.complete = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self.inner  # type: ignore[misc]
        self.complete = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:  # type: ignore[union-attr]
            yield chunk
        self.complete = True


def watched(request: httpx.Request) -> httpx.Request:
    """`request` with a streamed body (an upload's multipart form) in a `WatchedBody`.

    A body held in memory (JSON, or none) is not watched: httpx may hand it over without
    iterating the stream, and a break around it is told as "may have acted", which is
    never untrue.
    """
    if not isinstance(request.stream, httpx.ByteStream):
        request.stream = WatchedBody(request.stream)
    return request


def sent_wholly(error: httpx.TransportError, request: httpx.Request) -> httpx.TransportError:
    """`error`, or `BodyNotSent` when it came before `request`'s body was written whole."""
    body = request.stream
    if isinstance(error, httpx.LocalProtocolError) or never_sent(error):
        return error  # refused before sending, or never connected: told as such already
    if isinstance(body, WatchedBody) and not body.complete:
        unsent = BodyNotSent(
            f"the connection broke while the request body was being sent ({error})"
        )
        unsent.__cause__ = error
        return unsent
    return error


def scrubbed(error: httpx.TransportError) -> httpx.TransportError:
    """`error`, or in place of one whose text quotes a header value, one that does not.

    Both clients pass every transport error through this as it leaves httpx, so no error,
    cause or local variable of ours holds a header value (the key among them).
    """
    if isinstance(error, httpx.LocalProtocolError):
        return httpx.LocalProtocolError("a header value was refused (not shown)")
    return error


_UNEXPECTED_ADVICE = (
    "check that the base URL is the service's; if it is, the service has changed: "
    "upgrade the toolkit, or report the answer"
)


def _unexpected(
    response: httpx.Response, spec: RequestSpec, field: str, value: Any, expected: str
) -> UnexpectedAnswer:
    """An `UnexpectedAnswer` naming the route, the field and the value."""
    route = f"{spec.method} {spec.path}"
    what = str(UnexpectedValue(field, value, expected))
    return UnexpectedAnswer(
        f"{route} answered {response.status_code} with an answer the toolkit cannot use: "
        f"{what}; {_UNEXPECTED_ADVICE}",
        route=route,
        field=field,
        value=value,
        status=response.status_code,
        response=response,
        reason=f"the service's answer is not what the toolkit expects ({what})",
        advice=_UNEXPECTED_ADVICE,
    )


def _json_body(response: httpx.Response, spec: RequestSpec) -> Any:
    try:
        return response.json()
    except ValueError:
        text = response.text
        raise _unexpected(response, spec, "body", text, "JSON") from None


def parse_one(
    model: type[R], response: httpx.Response, spec: RequestSpec, *, required: Sequence[str] = ()
) -> R:
    """The answer as one `model`; `UnexpectedAnswer` for one the spec does not describe.

    `required` names fields the route must send (a chapter's `languages`): without them
    rows would be lost without a word.
    """
    body = _json_body(response, spec)
    if not isinstance(body, Mapping):
        raise _unexpected(response, spec, "body", body, "an object")
    return _parsed(model, body, response, spec, required, "")


def parse_many(
    model: type[R],
    response: httpx.Response,
    spec: RequestSpec,
    *,
    required: Sequence[str] = (),
    keys: Sequence[str] = ("id",),
) -> list[R]:
    """The answer as a list of `model`; `UnexpectedAnswer` for one the spec does not describe.

    `keys` name the attributes that tell the items apart (a chapter list's `id` and
    `position`): each must be sent, not empty, and held by one item only. A list that
    names one chapter twice contradicts itself, and either reading of it is a guess.
    """
    body = _json_body(response, spec)
    if not isinstance(body, list):
        raise _unexpected(response, spec, "body", body, "a list of objects")
    found = []
    for number, item in enumerate(body):
        if not isinstance(item, Mapping):
            raise _unexpected(response, spec, f"[{number}]", item, "an object")
        present = (*required, *(camel(key) for key in keys))
        found.append(_parsed(model, item, response, spec, present, f"[{number}]"))
    for key in keys:
        _refuse_repeats(found, key, response, spec)
    return found


def _refuse_repeats(
    items: Sequence[Resource], key: str, response: httpx.Response, spec: RequestSpec
) -> None:
    """`UnexpectedAnswer` naming both items when two hold the same `key`, or one an empty one."""
    name = camel(key)
    seen: dict[Any, int] = {}
    for number, item in enumerate(items):
        value = getattr(item, key)
        if value == "" or value is None:
            raise _unexpected(response, spec, f"[{number}].{name}", value, "a non-empty value")
        first = seen.setdefault(value, number)
        if first != number:
            raise _contradiction(response, spec, (first, number), name, value)


def _contradiction(
    response: httpx.Response, spec: RequestSpec, numbers: tuple[int, int], name: str, value: Any
) -> UnexpectedAnswer:
    """An `UnexpectedAnswer` for a list whose items `numbers` both hold `name` = `value`."""
    route = f"{spec.method} {spec.path}"
    first, second = numbers
    what = f"items [{first}] and [{second}] both have {name} {shown(value)}"
    advice = "nothing was taken from it; try again later, and report the answer if it repeats"
    return UnexpectedAnswer(
        f"{route} answered {response.status_code} with a list that contradicts itself: "
        f"{what}; {advice}",
        route=route,
        field=f"[{second}].{name}",
        value=value,
        status=response.status_code,
        response=response,
        reason=f"the service's answer contradicts itself ({what})",
        advice=advice,
    )


def _parsed(
    model: type[R],
    item: Mapping[str, Any],
    response: httpx.Response,
    spec: RequestSpec,
    required: Sequence[str],
    where: str,
) -> R:
    for name in required:
        if name not in item:
            path = f"{where}.{name}" if where else name
            raise _unexpected(response, spec, path, MISSING, "sent")
    try:
        return model.from_json(item)
    except UnexpectedValue as wrong:
        field = wrong.under(where).field if where else wrong.field
        raise _unexpected(response, spec, field, wrong.value, wrong.expected) from None
