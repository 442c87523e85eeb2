"""A create whose answer was lost, then a 409 on its repeat: the chapter at that position
is never taken as ours (the service gives back nothing of its content that would exclude
another writer); `UnconfirmedCreate` names it, and says it is someone else's when it was
made before our first attempt could reach the service (by the service's clock, from the
`Date` header, to the second) or does not match what we sent. Scripted answers first, then the
same over loopback to an emulator, with a transport that loses one answer."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from lossy import lossy_client
from page_images import make_page
from scripted import BASE_URL, KEY, Script, scripted_async_client

import toolkit as tk
from toolkit.client.flows import earliest_arrival
from toolkit.errors import in_plain_words

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


def test_a_chapter_made_after_our_attempt_left_with_our_page_count_is_named_not_adopted():
    script = lost_then(COMIC, taken(), listing(SERVICE_NOW - timedelta(seconds=2)))
    with pytest.raises(tk.UnconfirmedCreate) as caught:
        create(script, seconds_taken=3.0, pages=[make_page(1)])
    error = caught.value
    assert (error.chapter_id, error.position) == ("c5", 5)
    assert error.reason == (
        "chapter 5 exists, created 1 s after this upload: it may be yours or someone "
        "else's (the service shows nothing of its pages to tell by)"
    )
    assert in_plain_words(error).endswith(
        "Check chapter 5 is yours before sending again; if it is not, pick another chapter number."
    )
    assert "get_chapter('c5')" in str(error) and "someone else's, and" not in str(error)
    assert script.methods[-1] == "GET /projects/p1/chapters"


def test_a_chapter_made_within_the_date_headers_second_is_named_not_adopted():
    script = lost_then(COMIC, taken(), listing(SERVICE_NOW + timedelta(milliseconds=700)))
    with pytest.raises(tk.UnconfirmedCreate, match="may be yours"):
        create(script, pages=[make_page(1)])


def test_a_chapter_made_before_our_attempt_left_is_someone_elses_even_with_our_page_count():
    script = lost_then(COMIC, taken(), listing(SERVICE_NOW - timedelta(minutes=10)))
    with pytest.raises(tk.UnconfirmedCreate, match="before this upload could reach") as caught:
        create(script, seconds_taken=3.0, pages=[make_page(1)])
    error = caught.value
    assert isinstance(error, tk.Conflict) and error.status == 409
    assert (error.chapter_id, error.position) == ("c5", 5)
    assert error.created_at == SERVICE_NOW - timedelta(minutes=10)
    message = str(error)
    assert "already has a chapter 5" in message
    assert "chapter 5 (id 'c5', created 2026-11-23 17:50:00.000 UTC)" in message
    assert "created 9 min before this upload" in message
    assert "your pages were not uploaded" in message
    assert "pick another chapter number" in error.advice


def test_the_earliest_arrival_is_the_dates_second_less_the_time_taken_rounded_down():
    # Date 18:00:00 is 18:00:00.000-.999; 0.3 s before that is 17:59:59.7 at the earliest.
    assert earliest_arrival(taken(), 0.3) == SERVICE_NOW - timedelta(seconds=1)
    assert earliest_arrival(taken(), 0.0) == SERVICE_NOW
    assert earliest_arrival(taken(date=False), 0.3) is None


def test_the_bound_is_to_the_second_before_which_a_chapter_is_someone_elses():
    # Date 18:00:00 and 2 s of attempts: our first attempt reached the service at
    # 17:59:58.000 at the earliest.
    just_before = listing(SERVICE_NOW - timedelta(seconds=2, milliseconds=1))
    with pytest.raises(tk.UnconfirmedCreate, match="someone else's, and your pages"):
        create(lost_then(COMIC, taken(), just_before), seconds_taken=2.0, pages=[make_page(1)])
    at_the_bound = listing(SERVICE_NOW - timedelta(seconds=2))
    with pytest.raises(tk.UnconfirmedCreate, match="may be yours or someone else's"):
        create(lost_then(COMIC, taken(), at_the_bound), seconds_taken=2.0, pages=[make_page(1)])


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


def test_a_novel_chapter_in_our_second_is_never_taken_for_ours():
    # A novel's list item shows nothing of its text: no evidence can exclude another writer.
    same_second = listing(SERVICE_NOW, pages=0, started=True)
    with pytest.raises(tk.UnconfirmedCreate, match="nothing of its text") as caught:
        create(lost_then(NOVEL, taken(), same_second), text="一行。")
    assert "in the same second as this upload" in caught.value.reason


def test_a_newer_chapter_that_does_not_match_what_we_sent_is_not_ours():
    started = listing(SERVICE_NOW, pages=0, started=True)  # a staged chapter has not started
    with pytest.raises(tk.UnconfirmedCreate, match="has been started"):
        create(lost_then(COMIC, taken(), started), staged=True)
    more_pages = listing(SERVICE_NOW, pages=12)
    with pytest.raises(tk.UnconfirmedCreate, match="has 12 pages, not the 1 sent"):
        create(lost_then(COMIC, taken(), more_pages), pages=[make_page(1)])


def test_without_the_services_clock_or_a_creation_time_it_cannot_tell_and_says_so():
    no_date = lost_then(COMIC, taken(date=False), listing(SERVICE_NOW))
    with pytest.raises(tk.UnconfirmedCreate, match=r"chapter 5 exists.*no Date header"):
        create(no_date, pages=[make_page(1)])
    no_created = lost_then(COMIC, taken(), listing(None))
    with pytest.raises(tk.UnconfirmedCreate, match=r"chapter 5 exists.*no creation time"):
        create(no_created, pages=[make_page(1)])


def test_the_async_client_reconciles_by_the_same_rule():
    ours = lost_then(COMIC, taken(), listing(SERVICE_NOW))
    theirs = lost_then(COMIC, taken(), listing(SERVICE_NOW - timedelta(days=1)))

    async def session(script: Script) -> tk.NewChapter:
        client, _ = scripted_async_client(script)
        async with client:
            return await client.create_chapter("p1", [make_page(1)], position=5)

    with pytest.raises(tk.UnconfirmedCreate, match="may be yours"):
        asyncio.run(session(ours))
    with pytest.raises(tk.UnconfirmedCreate, match="before this upload could reach"):
        asyncio.run(session(theirs))


# Over loopback: the emulator acts on every request; the transport loses one answer.


def at_fraction(emulator, fraction: float) -> None:
    """Move the emulator's manual clock to `fraction` past its next whole second."""
    now = emulator.now()
    emulator.advance(1 + fraction - now.microsecond / 1e6)


def chapters_at(client, project_id: str, position: int) -> list[tk.ChapterListItem]:
    return [c for c in client.list_chapters(project_id) if c.position == position]


def test_our_own_create_whose_answer_was_lost_is_named_for_the_user_to_settle(
    emulator, workspace, comic_project, client
):
    """The price of never adopting a stranger's chapter: our own is not adopted either,
    but named, so that one look settles it."""
    lossy, transport = lossy_client(emulator, workspace)
    with lossy, pytest.raises(tk.UnconfirmedCreate) as caught:
        lossy.create_chapter(comic_project["id"], [make_page(1), make_page(2)], position=5)
    assert transport.lost == [201]  # the service made the chapter; we never heard
    (only,) = chapters_at(client, comic_project["id"], 5)
    assert caught.value.chapter_id == only.id and only.page_count == 2
    assert "may be yours" in caught.value.reason


@pytest.mark.parametrize("gap", [0, 0.5, 1, 2], ids=lambda gap: f"{gap}s")
def test_another_writers_chapter_at_a_gap_on_a_clock_that_does_not_move_is_never_adopted(
    emulator, workspace, comic_project, client, gap
):
    """Someone else makes chapter 5 with our page count `gap` seconds before our create;
    during our create the service's clock does not move. Time cannot exclude them at a
    gap under a second, and no content comes back to: `UnconfirmedCreate` every time."""
    at_fraction(emulator, 0.2)
    theirs = client.create_chapter(comic_project["id"], [make_page(7)], position=5)
    if gap:
        emulator.advance(gap)
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
    line = in_plain_words(error)
    assert "\n" not in line and line.startswith("Chapter 5 exists, created ")
    if gap >= 2:  # past the second the Date header resolves: certainly someone else's
        assert "someone else's, and your pages were not uploaded" in line
    (still,) = chapters_at(client, comic_project["id"], 5)
    assert still.id == theirs.id and still.page_count == 1


def test_another_page_count_is_someone_elses_within_our_second(
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
