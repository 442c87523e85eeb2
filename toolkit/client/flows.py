"""Every route's flow, written once as a generator that both clients drive.

Past 400 lines on purpose: one flow per route, side by side, so that the rules every
route follows (retries, reconciling a lost create) are seen applied the same way in
each.

A flow yields `Send(spec)` or `Sleep(seconds)` and returns its result; the rules for
uploads and for reconciling a lost create are in docs/client.md.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from toolkit.client.requests import (
    RequestSpec,
    api_error,
    form_field,
    parse_many,
    parse_one,
    transport_error,
)
from toolkit.client.retry import RetryPolicy, never_sent
from toolkit.client.uploads import (
    Form,
    PageSource,
    check_form,
    check_page_position,
    check_position,
    check_text,
    prepare_pages,
)
from toolkit.errors import ApiError, UnconfirmedCreate
from toolkit.models import (
    AddedPages,
    ChapterDetail,
    ChapterListItem,
    NewChapter,
    Project,
    RescanResult,
    StartResult,
)
from toolkit.timestamps import parse_http_date

__all__ = [
    "FinalAnswer",
    "Flow",
    "Kinds",
    "Send",
    "Sleep",
    "Step",
    "T",
    "add_pages",
    "call",
    "create_chapter",
    "earliest_arrival",
    "exchange",
    "get_chapter",
    "get_project",
    "list_chapters",
    "list_projects",
    "rescan_chapter",
    "start_chapter",
]

logger = logging.getLogger("toolkit.client")

T = TypeVar("T")
# Without these a chapter list item's language rows would be lost without a word.
_CHAPTER_REQUIRED = ("languages",)


@dataclass(frozen=True)
class Send:
    """A flow's step: send this request and give the flow its response."""

    spec: RequestSpec


@dataclass(frozen=True)
class Sleep:
    """A flow's step: wait this many seconds before the next."""

    seconds: float


Step = Send | Sleep
Flow = Generator[Step, Any, T]
Kinds = MutableMapping[str, str | None]


@dataclass(frozen=True)
class FinalAnswer:
    """The last answer of a request after its retries, and what the retries imply."""

    response: httpx.Response
    attempts: int
    maybe_acted: bool  # an earlier attempt may have reached the service
    note: str | None = None

    def error(self, spec: RequestSpec, *, note: str | None = None, **fields: Any) -> ApiError:
        note = " ".join(n for n in (self.note, note) if n) or None
        return api_error(self.response, spec, attempts=self.attempts, note=note, **fields)


def exchange(spec: RequestSpec, policy: RetryPolicy) -> Flow[FinalAnswer]:
    """Send with retries per `policy`; return the final answer (success or not).

    Raises `TransportError` when no answer came and the request cannot be retried.
    """
    maybe_acted = False
    attempt = 0
    while True:
        reply = yield Send(spec)
        if isinstance(reply, httpx.Response):
            if reply.is_success:
                return FinalAnswer(reply, attempt + 1, maybe_acted)
            delay = policy.after_response(reply, attempt, repeatable=spec.repeatable)
            if not delay.retry:
                note = None
                if delay.too_long is not None:
                    note = (
                        f"The service asked to wait {delay.too_long:.0f} s (Retry-After), "
                        f"longer than max_retry_after={policy.max_retry_after:g} s; try later"
                    )
                return FinalAnswer(reply, attempt + 1, maybe_acted, note)
            what = f"answered {reply.status_code}"
            maybe_acted = maybe_acted or reply.status_code != 429
        else:
            delay = policy.after_error(reply, attempt, repeatable=spec.repeatable)
            if not delay.retry:
                raise transport_error(
                    reply, spec, attempts=attempt + 1, maybe_acted=maybe_acted
                ) from reply
            what = f"failed ({type(reply).__name__})"
            maybe_acted = maybe_acted or not never_sent(reply)
        seconds = delay.seconds or 0.0
        logger.info(
            "%s %s %s; trying again in %.1f s (attempt %d of %d)",
            *(spec.method, spec.path, what, seconds, attempt + 2, policy.max_retries + 1),
        )
        yield Sleep(seconds)
        attempt += 1


def call(spec: RequestSpec, policy: RetryPolicy) -> Flow[httpx.Response]:
    """Send with retries; return the successful answer or raise its `ApiError`."""
    outcome = yield from exchange(spec, policy)
    if not outcome.response.is_success:
        raise outcome.error(spec)
    return outcome.response


def _path_id(value: object, what: str) -> str:
    """An id for a URL path, refusing what is clearly not one."""
    if not isinstance(value, str) or not value:
        hint = f"; pass {what.split('_')[0]}.id" if hasattr(value, "id") else ""
        raise TypeError(f"{what} must be a non-empty str, not {value!r}{hint}")
    return quote(value, safe="")


def list_projects(policy: RetryPolicy) -> Flow[list[Project]]:
    """The flow of `GET /projects`."""
    spec = RequestSpec("GET", "/projects", "list_projects", repeatable=True)
    return parse_many(Project, (yield from call(spec, policy)), spec)


def get_project(project_id: str, policy: RetryPolicy, kinds: Kinds | None = None) -> Flow[Project]:
    """The flow of `GET /projects/{id}`; notes the project's kind in `kinds`."""
    path = f"/projects/{_path_id(project_id, 'project_id')}"
    spec = RequestSpec("GET", path, "get_project", project_id=project_id, repeatable=True)
    project = parse_one(Project, (yield from call(spec, policy)), spec)
    if kinds is not None:
        kinds[f"project:{project_id}"] = project.kind
    return project


def list_chapters(project_id: str, policy: RetryPolicy) -> Flow[list[ChapterListItem]]:
    """The flow of `GET /projects/{id}/chapters`."""
    path = f"/projects/{_path_id(project_id, 'project_id')}/chapters"
    spec = RequestSpec("GET", path, "list_chapters", project_id=project_id, repeatable=True)
    answer = yield from call(spec, policy)
    # A project's chapter numbers are its own: two items at one number contradict the list.
    return parse_many(
        ChapterListItem, answer, spec, required=_CHAPTER_REQUIRED, keys=("id", "position")
    )


def get_chapter(
    chapter_id: str, policy: RetryPolicy, kinds: Kinds | None = None
) -> Flow[ChapterDetail]:
    """The flow of `GET /chapters/{id}`; notes its project's kind in `kinds`."""
    path = f"/chapters/{_path_id(chapter_id, 'chapter_id')}"
    spec = RequestSpec("GET", path, "get_chapter", chapter_id=chapter_id, repeatable=True)
    chapter = parse_one(ChapterDetail, (yield from call(spec, policy)), spec)
    if kinds is not None and chapter.project is not None:
        kinds[f"chapter:{chapter_id}"] = chapter.project.kind
    return chapter


def _project_kind(project_id: str, policy: RetryPolicy, kinds: Kinds) -> Flow[str | None]:
    """The project's kind, read once per client: a kind never changes."""
    key = f"project:{project_id}"
    if key not in kinds:
        yield from get_project(project_id, policy, kinds)
    return kinds.get(key)


def _chapter_kind(chapter_id: str, policy: RetryPolicy, kinds: Kinds) -> Flow[str | None]:
    key = f"chapter:{chapter_id}"
    if key not in kinds:
        yield from get_chapter(chapter_id, policy, kinds)
    return kinds.get(key)


def create_chapter(
    project_id: str,
    policy: RetryPolicy,
    kinds: Kinds,
    *,
    pages: Iterable[PageSource] | None,
    staged: bool,
    text: str | None,
    position: object,
) -> Flow[NewChapter]:
    """The flow of `POST /projects/{id}/chapters`: a chapter with pages, staged, or of text."""
    path = f"/projects/{_path_id(project_id, 'project_id')}/chapters"
    number = check_position(position)
    choices = {"pages": pages is not None, "staged": staged, "text": text is not None}
    given = [name for name, on in choices.items() if on]
    if len(given) != 1:
        raise TypeError(
            "create_chapter takes exactly one of pages=[...], staged=True or text='...', "
            f"got {' and '.join(given) or 'none'}"
        )
    checked_text = check_text(text) if text is not None else None
    upload = prepare_pages(pages) if pages is not None else None
    try:
        kind = yield from _project_kind(project_id, policy, kinds)
        first = upload.pages[0].label if upload else None
        form: Form = "pages" if upload else ("staged" if staged else "text")
        check_form(kind, form, where=f"project {project_id!r}", first_page=first)
        fields: list[tuple[str, Any]] = []
        if upload:
            fields += upload.multipart()
        elif staged:
            fields.append(form_field("staged", 1))
        else:
            assert checked_text is not None
            fields.append(form_field("text", checked_text))
        if number is not None:
            fields.append(form_field("position", number))
        spec = RequestSpec(
            "POST",
            path,
            "create_chapter",
            files=fields,
            project_id=project_id,
            position=number,
            repeatable=number is not None,
        )
        started = policy.monotonic()
        outcome = yield from exchange(spec, policy)
    finally:
        if upload:
            upload.close()
    if outcome.response.is_success:
        return parse_one(NewChapter, outcome.response, spec)
    if outcome.response.status_code == 409 and outcome.maybe_acted and number is not None:
        sent = _Sent(form, len(upload) if upload else 0, policy.monotonic() - started)
        return (yield from _reconcile(spec, outcome, policy, sent))
    raise outcome.error(spec)


@dataclass(frozen=True)
class _Sent:
    """What a create sent, and how long its attempts took (seconds on the policy's clock)."""

    form: Form
    pages: int  # 0 for text or staged
    seconds: float

    @property
    def lost(self) -> str:
        """What was not uploaded, when the chapter found is someone else's."""
        return {
            "pages": "your pages were not uploaded",
            "staged": "no chapter was made for you",
            "text": "your text was not uploaded",
        }[self.form]


def _reconcile(
    spec: RequestSpec, outcome: FinalAnswer, policy: RetryPolicy, sent: _Sent
) -> Flow[NewChapter]:
    """After a lost answer and a 409 on the repeat, name the chapter found at our number.

    It is never adopted as ours: the service gives back nothing of a chapter's content (no
    page sizes or hashes, no text) that would exclude another writer, and a wrong adoption
    reports pages as uploaded that never were. `UnconfirmedCreate` names the chapter, and
    says when it is certainly someone else's.
    """
    assert spec.project_id is not None
    chapters = yield from list_chapters(spec.project_id, policy)
    found = next((c for c in chapters if c.position == spec.position), None)
    if found is None:
        raise outcome.error(
            spec,
            note=(
                f"An earlier attempt's answer was lost, and the chapter list shows no chapter "
                f"{spec.position} now (put in the trash meanwhile?): look at the project's "
                "chapters before sending again"
            ),
        )
    arrival = earliest_arrival(outcome.response, sent.seconds, floor=False)
    doubt, theirs = _doubt(found, arrival, sent)
    number = found.position
    if theirs:
        advice = f"pick another chapter number, or look at chapter {number} first"
    else:
        advice = (
            f"check chapter {number} is yours before sending again; if it is not, "
            "pick another chapter number"
        )
    named = f"chapter {number} (id {found.id!r}, created {_when(found.created_at)})"
    raise outcome.error(
        spec,
        note=(
            f"An earlier attempt's answer was lost, and {doubt}. Found: {named}; "
            f"{advice} (get_chapter({found.id!r}) shows it)"
        ),
        error_class=UnconfirmedCreate,
        reason=doubt,
        advice=advice,
        chapter_id=found.id,
        position=number,
        created_at=found.created_at,
    )


def earliest_arrival(
    answer: httpx.Response, seconds: float, *, floor: bool = True
) -> datetime | None:
    """The earliest our first attempt can have reached the service, on the service's clock.

    The repeat's answer came at its `Date` or up to a second later (`Date` has whole
    seconds, rounded down); the first attempt left `seconds` before that answer came. With
    `floor` the result is floored to the second, so that a `createdAt` written in whole
    seconds compares fairly too. None without a readable `Date`.
    """
    service_now = parse_http_date(answer.headers.get("date"))
    if service_now is None:
        return None
    arrival = service_now - timedelta(seconds=seconds)
    return arrival.replace(microsecond=0) if floor else arrival


def _doubt(found: ChapterListItem, arrival: datetime | None, sent: _Sent) -> tuple[str, bool]:
    """What the list shows of the chapter found at our number, in one clause, and whether
    that makes it certainly someone else's. Rules: docs/client.md ("A create whose answer
    was lost")."""
    number = found.position
    created = found.created_at
    if arrival is None or created is None:
        missing = "no Date header" if arrival is None else "no creation time"
        return (
            f"chapter {number} exists and the service gave {missing} to compare it with "
            f"this upload: it may be yours or someone else's",
            False,
        )
    when = f"created {_gap(created, arrival)}"
    if created < arrival.replace(microsecond=0):
        return (
            f"chapter {number} exists, {when}, before this upload could reach the service: "
            f"it is someone else's, and {sent.lost}",
            True,
        )
    mismatch = _mismatch(found, sent)
    if mismatch is not None:
        return (
            f"chapter {number} exists, {when}, and {mismatch}: it is someone else's, "
            f"and {sent.lost}",
            True,
        )
    return (
        f"chapter {number} exists, {when}: it may be yours or someone else's (the service "
        f"shows nothing of its {'text' if sent.form == 'text' else 'pages'} to tell by)",
        False,
    )


def _gap(created: datetime, arrival: datetime) -> str:
    """When `created` was, against our first attempt's earliest arrival, in whole seconds
    (the `Date` header's resolution) or minutes."""
    seconds = round((arrival - created).total_seconds())
    size = abs(seconds)
    amount = f"{size // 60} min" if size >= 120 else f"{size} s"
    if seconds == 0:
        return "in the same second as this upload"
    return f"{amount} {'before' if seconds > 0 else 'after'} this upload"


def _mismatch(found: ChapterListItem, sent: _Sent) -> str | None:
    """How the chapter found differs from what was sent, as far as the list shows it."""
    if sent.form == "text":
        return None  # a novel chapter's list item shows nothing of its text's length
    if found.page_count != sent.pages:
        return f"has {found.page_count} pages, not the {sent.pages} sent"
    if sent.form == "staged" and found.started:
        return "has been started, unlike the staged one sent"
    return None


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "at a time the service did not give"
    moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d} UTC"


def add_pages(
    chapter_id: str,
    policy: RetryPolicy,
    kinds: Kinds,
    *,
    pages: Iterable[PageSource],
    hold: bool,
    position: object,
) -> Flow[AddedPages]:
    """The flow of `POST /chapters/{id}/pages`."""
    path = f"/chapters/{_path_id(chapter_id, 'chapter_id')}/pages"
    number = check_position(position)
    with prepare_pages(pages) as upload:
        check_page_position(number, len(upload))
        kind = yield from _chapter_kind(chapter_id, policy, kinds)
        check_form(kind, "pages", where=f"chapter {chapter_id!r}", first_page=upload.pages[0].label)
        fields: list[tuple[str, Any]] = list(upload.multipart())
        if hold:
            fields.append(form_field("hold", 1))
        if number is not None:
            fields.append(form_field("position", number))
        spec = RequestSpec(
            "POST", path, "add_pages", files=fields, chapter_id=chapter_id, position=number
        )
        response = yield from call(spec, policy)
    return parse_one(AddedPages, response, spec)


def start_chapter(
    chapter_id: str, policy: RetryPolicy, *, page_ids: Sequence[str] | None
) -> Flow[StartResult]:
    """The flow of `POST /chapters/{id}/start`, with the pages to start when given."""
    path = f"/chapters/{_path_id(chapter_id, 'chapter_id')}/start"
    body = None
    if page_ids is not None:
        if isinstance(page_ids, str) or not all(isinstance(p, str) for p in page_ids):
            raise TypeError(f"page_ids must be a list of page id strings, not {page_ids!r}")
        body = {"pageIds": list(page_ids)}
    spec = RequestSpec("POST", path, "start_chapter", json=body, chapter_id=chapter_id)
    return parse_one(StartResult, (yield from call(spec, policy)), spec)


def rescan_chapter(chapter_id: str, policy: RetryPolicy) -> Flow[RescanResult]:
    """The flow of `POST /chapters/{id}/rescan`."""
    path = f"/chapters/{_path_id(chapter_id, 'chapter_id')}/rescan"
    spec = RequestSpec("POST", path, "rescan_chapter", chapter_id=chapter_id)
    return parse_one(RescanResult, (yield from call(spec, policy)), spec)
