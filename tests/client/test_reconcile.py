"""A create whose answer was lost, then a 409 on its repeat: the chapter at that position
is taken as ours only when the service made it no earlier than our first attempt could
reach it (by the service's clock, from the `Date` header, to the second) and it matches
what we sent; otherwise `UnconfirmedCreate` names it. Scripted answers first, then the
same over loopback to an emulator, with a transport that loses one answer."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from page_images import make_page
from scripted import BASE_URL, KEY, Script, scripted_async_client

import toolkit as tk
from toolkit.client.flows import earliest_arrival

SERVICE_NOW = datetime(2026, 11, 23, 18, 0, 0, tzinfo=UTC)
COMIC = {"id": "p1", "kind": "comic"}
NOVEL = {"id": "p1", "kind": "novel"}


def taken(at: datetime = SERVICE_NOW, *, date: bool = True) -> httpx.Response:
    headers = {"Date": format_datetime(at, usegmt=True)} if date else {}
    body = {"error": {"status": 409, "message": "a chapter with that number exists"}}
    return httpx.Response(409, json=body, headers=headers)


def listing(created: datetime | None, *, pages: int = 1, started: bool = True) -> httpx.Response:
    item = {
        "id": "c5",
        "projectId": "p1",
        "position": 5,
        "pageCount": pages,
        "started": started,
        "languages": [],
    }
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
    with pytest.raises(tk.UnconfirmedCreate, match="before this create's first attempt") as caught:
        create(script, seconds_taken=3.0, pages=[make_page(1)])
    error = caught.value
    assert isinstance(error, tk.Conflict) and error.status == 409
    assert (error.chapter_id, error.position) == ("c5", 5)
    assert error.created_at == SERVICE_NOW - timedelta(minutes=10)
    message = str(error)
    assert "already has a chapter 5" in message
    assert "chapter 5 (id 'c5', created 2026-11-23 17:50:00.000 UTC)" in message
    assert "your pages were not uploaded" in message
    assert "look at chapter 5" in error.advice


def test_the_earliest_arrival_is_the_dates_second_less_the_time_taken_rounded_down():
    # Date 18:00:00 is 18:00:00.000-.999; 0.3 s before that is 17:59:59.7 at the earliest.
    assert earliest_arrival(taken(), 0.3) == SERVICE_NOW - timedelta(seconds=1)
    assert earliest_arrival(taken(), 0.0) == SERVICE_NOW
    assert earliest_arrival(taken(date=False), 0.3) is None


def test_the_bound_is_to_the_second_before_which_a_chapter_is_someone_elses():
    # Date 18:00:00 and 2 s of attempts: our first attempt reached the service at
    # 17:59:58.000 at the earliest.
    just_before = listing(SERVICE_NOW - timedelta(seconds=2, milliseconds=1))
    with pytest.raises(tk.UnconfirmedCreate, match="someone else's"):
        create(lost_then(COMIC, taken(), just_before), seconds_taken=2.0, pages=[make_page(1)])
    at_the_bound = listing(SERVICE_NOW - timedelta(seconds=2))
    chapter = create(
        lost_then(COMIC, taken(), at_the_bound), seconds_taken=2.0, pages=[make_page(1)]
    )
    assert chapter.id == "c5"


@pytest.mark.parametrize(
    ("project", "form"),
    [(NOVEL, {"text": "一行。"}), (COMIC, {"staged": True})],
    ids=["novel", "staged"],
)
def test_an_older_chapter_is_not_taken_for_a_novel_or_staged_create(project, form):
    older = listing(SERVICE_NOW - timedelta(hours=1), pages=0, started=False)
    with pytest.raises(
        tk.UnconfirmedCreate,
        match=r"someone else's, and (your text was not uploaded|no chapter was made for you)",
    ):
        create(lost_then(project, taken(), older), **form)


def test_a_newer_chapter_that_does_not_match_what_we_sent_is_not_ours():
    started = listing(SERVICE_NOW, pages=0, started=True)  # a staged chapter has not started
    with pytest.raises(tk.UnconfirmedCreate, match="has been started"):
        create(lost_then(COMIC, taken(), started), staged=True)
    more_pages = listing(SERVICE_NOW, pages=12)
    with pytest.raises(tk.UnconfirmedCreate, match="has 12 pages, not the 1 sent"):
        create(lost_then(COMIC, taken(), more_pages), pages=[make_page(1)])


def test_without_the_services_clock_or_a_creation_time_it_cannot_tell_and_says_so():
    no_date = lost_then(COMIC, taken(date=False), listing(SERVICE_NOW))
    with pytest.raises(tk.UnconfirmedCreate, match=r"cannot tell whether chapter 5.*no Date"):
        create(no_date, pages=[make_page(1)])
    no_created = lost_then(COMIC, taken(), listing(None))
    with pytest.raises(tk.UnconfirmedCreate, match=r"cannot tell whether chapter 5.*no createdAt"):
        create(no_created, pages=[make_page(1)])


def test_the_async_client_reconciles_by_the_same_rule():
    ours = lost_then(COMIC, taken(), listing(SERVICE_NOW))
    theirs = lost_then(COMIC, taken(), listing(SERVICE_NOW - timedelta(days=1)))

    async def session(script: Script) -> tk.NewChapter:
        client, _ = scripted_async_client(script)
        async with client:
            return await client.create_chapter("p1", [make_page(1)], position=5)

    assert asyncio.run(session(ours)).id == "c5"
    with pytest.raises(tk.UnconfirmedCreate, match="before this create's first attempt"):
        asyncio.run(session(theirs))


# Over loopback: the emulator acts on every request; the transport loses one answer.


class LoseOneAnswer(httpx.HTTPTransport):
    """Sends every request to the service; the first create's answer, once the service has
    acted and answered, is read and thrown away, and the client sees a broken connection."""

    def __init__(self) -> None:
        super().__init__()
        self.lost: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST" and not self.lost:
            response.read()
            self.lost.append(response.status_code)
            raise httpx.ReadError("the connection broke before the answer came back")
        return response


def lossy_client(emulator, workspace) -> tuple[tk.Client, LoseOneAnswer]:
    transport = LoseOneAnswer()
    retry = tk.RetryPolicy(jitter=lambda: 0.0, sleep=lambda seconds: None)
    client = tk.Client(emulator.url, workspace["apiKey"], transport=transport, retry=retry)
    return client, transport


def at_fraction(emulator, fraction: float) -> None:
    """Move the emulator's manual clock to `fraction` past its next whole second."""
    now = emulator.now()
    emulator.advance(1 + fraction - now.microsecond / 1e6)


def chapters_at(client, project_id: str, position: int) -> list[tk.ChapterListItem]:
    return [c for c in client.list_chapters(project_id) if c.position == position]


def test_our_own_create_whose_answer_was_lost_is_adopted(emulator, workspace, comic_project):
    lossy, transport = lossy_client(emulator, workspace)
    with lossy:
        chapter = lossy.create_chapter(
            comic_project["id"], [make_page(1), make_page(2)], position=5
        )
        assert transport.lost == [201]  # the service made the chapter; we never heard
        (only,) = chapters_at(lossy, comic_project["id"], 5)
    assert chapter.id == only.id and only.page_count == 2


def test_another_chapter_made_a_moment_before_with_the_same_page_count_raises(
    emulator, workspace, comic_project, client
):
    theirs = client.create_chapter(comic_project["id"], [make_page(7)], position=5)
    emulator.advance(2.5)  # a moment, past the second the Date header can resolve
    lossy, transport = lossy_client(emulator, workspace)
    with lossy, pytest.raises(tk.UnconfirmedCreate) as caught:
        lossy.create_chapter(comic_project["id"], [make_page(1)], position=5)
    assert transport.lost == [409]  # our first attempt was refused; that answer was lost
    error = caught.value
    assert (error.chapter_id, error.position, error.created_at) == (
        theirs.id,
        5,
        theirs.created_at,
    )
    assert f"chapter 5 (id {theirs.id!r}, created " in str(error)
    assert "your pages were not uploaded" in str(error)
    (still,) = chapters_at(client, comic_project["id"], 5)
    assert still.id == theirs.id and still.page_count == 1


def test_one_second_case_a_chapter_made_earlier_within_our_second_is_taken_for_ours(
    emulator, workspace, comic_project, client
):
    """The decision for the one case time cannot settle: the service's `Date` has whole
    seconds, so a chapter someone else made at our number within the same second as our
    first attempt, before it, with the same page count, cannot be told from the one our
    lost attempt would have made, and is taken for ours (docs/client.md says so)."""
    at_fraction(emulator, 0.2)
    theirs = client.create_chapter(comic_project["id"], [make_page(7)], position=5)
    emulator.advance(0.5)  # our first attempt leaves 0.5 s later, within the same second
    lossy, transport = lossy_client(emulator, workspace)
    with lossy:
        adopted = lossy.create_chapter(comic_project["id"], [make_page(1)], position=5)
    assert transport.lost == [409]
    assert adopted.id == theirs.id


def test_one_second_case_with_another_page_count_still_raises(
    emulator, workspace, comic_project, client
):
    at_fraction(emulator, 0.2)
    client.create_chapter(comic_project["id"], [make_page(7), make_page(8)], position=5)
    emulator.advance(0.5)
    lossy, _ = lossy_client(emulator, workspace)
    with lossy, pytest.raises(tk.UnconfirmedCreate, match="has 2 pages, not the 1 sent"):
        lossy.create_chapter(comic_project["id"], [make_page(1)], position=5)


def test_a_clash_with_no_chapter_at_that_number_on_the_list_says_so():
    empty = httpx.Response(200, json=[])
    with pytest.raises(tk.Conflict, match="shows no chapter 5 now") as caught:
        create(lost_then(COMIC, taken(), empty), pages=[make_page(1)])
    assert not isinstance(caught.value, tk.UnconfirmedCreate)
