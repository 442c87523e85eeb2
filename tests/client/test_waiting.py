"""wait_for_chapter: polling with backoff, the deadline, progress; scripted, then live."""

from __future__ import annotations

import httpx
import pytest
from scripted import BASE_URL, KEY, Script

import toolkit as tk


def detail(processing: bool, en: int, fr: int, **extra: object) -> httpx.Response:
    body = {
        "id": "c1",
        "position": 12,
        "processing": processing,
        "detecting": False,
        "failed": False,
        "status": "translating" if processing else "needs_review",
        "languages": [
            {"languageCode": "en", "status": "translating", "untranslated": en},
            {"languageCode": "fr", "status": "translating", "untranslated": fr},
        ],
        **extra,
    }
    return httpx.Response(200, json=body)


class FakeTime:
    """A monotonic clock that only moves when the client sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def timed_client(script: Script) -> tuple[tk.Client, FakeTime]:
    clock = FakeTime()
    retry = tk.RetryPolicy(jitter=lambda: 0.0, sleep=clock.sleep, monotonic=lambda: clock.now)
    client = tk.Client(BASE_URL, KEY, transport=httpx.MockTransport(script), retry=retry)
    return client, clock


def test_polls_with_growing_waits_until_processing_stops():
    script = Script(*[detail(True, 9, 9)] * 5, detail(False, 0, 0))
    client, clock = timed_client(script)
    with client:
        done = client.wait_for_chapter("c1", poll_interval=2.0, max_interval=5.0)
    assert done.processing is False and done.status == "needs_review"
    assert clock.sleeps == [2.0, 3.0, 4.5, 5.0, 5.0]
    assert script.methods == ["GET /chapters/c1"] * 6


def test_returns_a_failed_chapter_instead_of_raising():
    failed = detail(False, 3, 3, failed=True, failureReason="the run stalled")
    client, _ = timed_client(Script(detail(True, 3, 3), failed))
    with client:
        done = client.wait_for_chapter("c1", poll_interval=1)
    assert done.failed is True and done.failure_reason == "the run stalled"


def test_on_poll_runs_between_polls_with_each_detail_still_processing():
    seen: list[int] = []
    script = Script(detail(True, 9, 9), detail(True, 4, 9), detail(False, 0, 0))
    client, _ = timed_client(script)
    with client:
        client.wait_for_chapter(
            "c1", poll_interval=1, on_poll=lambda d: seen.append(d.untranslated)
        )
    assert seen == [18, 13]


def test_a_timeout_raises_wait_timeout_with_the_last_state_seen():
    script = Script(*[detail(True, 7, 2)] * 4)
    client, clock = timed_client(script)
    with client, pytest.raises(tk.WaitTimeout) as caught:
        client.wait_for_chapter("c1", timeout=5, poll_interval=2.0)
    error = caught.value
    assert isinstance(error, TimeoutError)
    assert error.last.untranslated == 9 and error.last.processing is True
    assert "still processing after 5 s" in str(error)
    assert "untranslated lines: en 7, fr 2" in str(error)
    assert clock.sleeps == [2.0, 3.0], "the last wait is cut to the deadline"
    assert clock.now == 5.0


def test_a_zero_timeout_polls_once():
    client, clock = timed_client(Script(detail(True, 1, 1)))
    with client, pytest.raises(tk.WaitTimeout):
        client.wait_for_chapter("c1", timeout=0)
    assert clock.sleeps == []


def test_a_busy_service_during_the_wait_is_retried():
    script = Script(detail(True, 2, 2), httpx.Response(503), detail(False, 0, 0))
    client, clock = timed_client(script)
    with client:
        assert client.wait_for_chapter("c1", poll_interval=1).processing is False
    assert len(clock.sleeps) == 2


def test_bad_intervals_are_refused():
    client, _ = timed_client(Script())
    with client, pytest.raises(ValueError, match="poll_interval <= max_interval"):
        client.wait_for_chapter("c1", poll_interval=10, max_interval=1)
    with client, pytest.raises(ValueError, match="timeout"):
        client.wait_for_chapter("c1", timeout=-1)


def test_progress_shows_translated_lines_per_language(capsys):
    script = Script(
        detail(True, 10, 4), detail(True, 6, 4), detail(True, 12, 1), detail(False, 0, 0)
    )
    client, _ = timed_client(script)
    with client:
        client.wait_for_chapter("c1", poll_interval=1, progress=True)
    err = capsys.readouterr().err
    # en starts at 10 lines, 4 are done when 6 more appear: its total grows to 16.
    assert "en: 100%" in err and "16/16" in err
    assert "fr: 100%" in err and "4/4" in err


# -- against the emulator --------------------------------------------------------------


def test_waits_for_a_real_run_while_the_test_moves_the_emulator_clock(
    client, emulator, comic_project, pages, capsys
):
    chapter = client.create_chapter(comic_project["id"], pages=pages)
    states: list[tuple[bool | None, int]] = []

    def tick(seen: tk.ChapterDetail) -> None:
        states.append((seen.detecting, seen.untranslated))
        emulator.advance(30)

    done = client.wait_for_chapter(
        chapter.id, timeout=60, poll_interval=0.001, progress=True, on_poll=tick
    )
    assert done.processing is False and done.status == "needs_review"
    assert len(states) >= 3, "the run takes several simulated minutes"
    left = [untranslated for detecting, untranslated in states if not detecting]
    assert left == sorted(left, reverse=True) and left[0] > 0
    err = capsys.readouterr().err
    assert "en: 100%" in err and "fr: 100%" in err


def test_a_run_that_does_not_move_times_out_with_its_last_state(client, comic_project, pages):
    chapter = client.create_chapter(comic_project["id"], pages=pages)
    # The manual clock stands still, so the run does too: a short real timeout ends it.
    with pytest.raises(tk.WaitTimeout) as caught:
        client.wait_for_chapter(chapter.id, timeout=0.05, poll_interval=0.01)
    assert caught.value.last.id == chapter.id and caught.value.last.processing is True
