"""A create whose answer was lost, then a 409 on its repeat: the chapter at that position
is taken as ours only when the service made it after our first attempt left (by the
service's clock, from the `Date` header) and it matches what we sent."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from page_images import make_page
from scripted import BASE_URL, KEY, Script, scripted_async_client

import toolkit as tk

SERVICE_NOW = datetime(2026, 11, 23, 18, 0, 0, tzinfo=UTC)
COMIC = {"id": "p1", "kind": "comic"}
NOVEL = {"id": "p1", "kind": "novel"}


def taken(at: datetime = SERVICE_NOW, *, date: bool = True) -> httpx.Response:
    headers = {"Date": format_datetime(at, usegmt=True)} if date else {}
    body = {"error": {"status": 409, "message": "a chapter with that number exists"}}
    return httpx.Response(409, json=body, headers=headers)


def listing(created: datetime | None, *, pages: int = 1, started: bool = True) -> httpx.Response:
    item = {"id": "c5", "projectId": "p1", "position": 5, "pageCount": pages, "started": started}
    if created is not None:
        item["createdAt"] = created.isoformat().replace("+00:00", "Z")
    return httpx.Response(200, json=[item])


def lost_then(project: dict, *answers: httpx.Response) -> Script:
    return Script(
        httpx.Response(200, json=project), httpx.ReadError("reset after sending"), *answers
    )


class Clock:
    """The client's monotonic clock, moved by hand: the time a create's attempts took."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def create(script: Script, *, seconds_taken: float = 0.0, **form: object) -> tk.NewChapter:
    clock = Clock()
    retry = tk.RetryPolicy(
        jitter=lambda: 0.0,
        sleep=lambda s: setattr(clock, "now", clock.now + seconds_taken),
        monotonic=clock,
    )
    client = tk.Client(BASE_URL, KEY, transport=httpx.MockTransport(script), retry=retry)
    with client:
        return client.create_chapter("p1", position=5, **form)  # type: ignore[arg-type]


def test_a_chapter_made_after_our_attempt_left_with_our_page_count_is_ours():
    script = lost_then(COMIC, taken(), listing(SERVICE_NOW - timedelta(seconds=2)))
    chapter = create(script, seconds_taken=3.0, pages=[make_page(1)])
    assert chapter.id == "c5"
    assert script.methods[-1] == "GET /projects/p1/chapters"


def test_a_chapter_made_within_the_date_headers_second_is_ours():
    script = lost_then(COMIC, taken(), listing(SERVICE_NOW + timedelta(milliseconds=700)))
    assert create(script, pages=[make_page(1)]).id == "c5"


def test_a_chapter_made_before_our_attempt_left_is_someone_elses_even_with_our_page_count():
    script = lost_then(COMIC, taken(), listing(SERVICE_NOW - timedelta(minutes=10)))
    with pytest.raises(tk.Conflict, match="before this create's first attempt") as caught:
        create(script, seconds_taken=3.0, pages=[make_page(1)])
    assert "already has a chapter 5" in str(caught.value)


@pytest.mark.parametrize(
    ("project", "form"),
    [(NOVEL, {"text": "一行。"}), (COMIC, {"staged": True})],
    ids=["novel", "staged"],
)
def test_an_older_chapter_is_not_taken_for_a_novel_or_staged_create(project, form):
    older = listing(SERVICE_NOW - timedelta(hours=1), pages=0, started=False)
    with pytest.raises(tk.Conflict, match="not ours"):
        create(lost_then(project, taken(), older), **form)


def test_a_newer_chapter_that_does_not_match_what_we_sent_is_not_ours():
    started = listing(SERVICE_NOW, pages=0, started=True)  # a staged chapter has not started
    with pytest.raises(tk.Conflict, match="has been started"):
        create(lost_then(COMIC, taken(), started), staged=True)
    more_pages = listing(SERVICE_NOW, pages=12)
    with pytest.raises(tk.Conflict, match="has 12 pages, not the 1 sent"):
        create(lost_then(COMIC, taken(), more_pages), pages=[make_page(1)])


def test_without_the_services_clock_or_a_creation_time_it_cannot_tell_and_says_so():
    no_date = lost_then(COMIC, taken(date=False), listing(SERVICE_NOW))
    with pytest.raises(tk.Conflict, match="cannot tell whether chapter 5"):
        create(no_date, pages=[make_page(1)])
    no_created = lost_then(COMIC, taken(), listing(None))
    with pytest.raises(tk.Conflict, match="cannot tell whether chapter 5"):
        create(no_created, pages=[make_page(1)])


def test_the_async_client_reconciles_by_the_same_rule():
    ours = lost_then(COMIC, taken(), listing(SERVICE_NOW))
    theirs = lost_then(COMIC, taken(), listing(SERVICE_NOW - timedelta(days=1)))

    async def session(script: Script) -> tk.NewChapter:
        client, _ = scripted_async_client(script)
        async with client:
            return await client.create_chapter("p1", [make_page(1)], position=5)

    assert asyncio.run(session(ours)).id == "c5"
    with pytest.raises(tk.Conflict, match="before this create's first attempt"):
        asyncio.run(session(theirs))
