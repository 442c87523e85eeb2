"""Pulls that survive a bad hour: keep what they have, retry what failed in further passes
within a deadline, say how many failed and why when they give up; and pace themselves."""

from __future__ import annotations

import httpx
import pytest
from datafakes import FakeService, project_json
from pandas.testing import assert_frame_equal

import toolkit as tk
from toolkit.frames.fetcher import Fetcher
from toolkit.frames.pacing import _START, CEILING, Pace


@pytest.fixture
def busy_workspace(emulator, workspace, comic_project, novel_project, client):
    """A client of a workspace with 40 chapters whose retry waits (and so the pull's) pass
    on a clock of their own, unslept, without jitter: 0.25 + 0.5 + 1 + 2 s for a request
    that fails five times. Set through the public `RetryPolicy` only."""
    for number in range(20):
        client.create_chapter(comic_project["id"], staged=True)
        client.create_chapter(novel_project["id"], text=f"第{number}章。")
    clock = Clock()
    retry = tk.RetryPolicy(jitter=lambda: 0.0, monotonic=clock, sleep=clock.sleep)
    with tk.Client(emulator.url, workspace["apiKey"], retry=retry) as quiet:
        yield quiet


class Clock:
    """A monotonic clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_pull_completes_at_half_503s_with_the_default_settings(emulator, busy_workspace):
    client = busy_workspace
    clean = tk.pull(client, details="all")
    emulator.set_faults(error_rate=0.5, latency_ms=20, seed=7)
    faulty = tk.pull(client, details="all")
    emulator.set_faults()
    for name in ("projects", "chapters", "languages", "exports"):
        assert_frame_equal(faulty.table(name), clean.table(name))
    assert faulty.requests == clean.requests == 1 + 2 + 40


def test_when_it_gives_up_it_says_how_many_failed_and_why(emulator, busy_workspace):
    client = busy_workspace
    emulator.set_faults(error_rate=1.0)  # nothing gets through
    with pytest.raises(tk.IncompletePull) as caught:
        tk.pull(client, details="all", deadline=60)
    message = str(caught.value)
    # Each pass takes 3.75 s of retries; after pauses of 1, 2, 4, 8 and 16 s the sixth
    # ends at 53.5 s, and the next pause (30 s) would pass the deadline. All of it on the
    # policy's clock: the pull times itself by it too.
    assert "gave up after 6 passes and 54 s" in message
    assert "1 of 1 requests for projects failed: answered 503 (1)" in message
    assert caught.value.failed and all(
        isinstance(error, tk.ServerError) for error in caught.value.failed.values()
    )


def test_failed_requests_are_sent_again_in_another_pass_and_answers_are_kept():
    service = FakeService()
    service.add_project("p1", languages=("en",))
    for i in range(6):
        service.add_chapter(f"c{i}", "p1", position=i + 1, languages=("en",))
    plain, calls = service.get_chapter, []

    def get_chapter(chapter_id):
        calls.append(chapter_id)
        if chapter_id in ("c2", "c4") and calls.count(chapter_id) == 1:
            raise tk.ServerError("the service failed (503)", status=503)
        return plain(chapter_id)

    service.get_chapter = get_chapter
    service.retry = tk.RetryPolicy(sleep=lambda seconds: None)  # passes' pauses, unslept
    ws = tk.pull(service, progress=False)
    assert ws.languages["untranslated"].notna().all()
    assert sorted(calls) == sorted([f"c{i}" for i in range(6)] + ["c2", "c4"])


def test_an_error_that_retrying_cannot_fix_ends_the_pull_at_once():
    service = FakeService()
    service.add_project("p1", languages=("en",))
    service.add_chapter("c1", "p1", position=1, languages=("en",))

    def refused(chapter_id):
        raise tk.AuthenticationError("the API key was refused (401)", status=401)

    service.get_chapter = refused
    with pytest.raises(tk.AuthenticationError):
        tk.pull(service, progress=False)


def test_the_progress_bar_shows_retries(emulator, busy_workspace, capsys):
    client = busy_workspace
    emulator.set_faults(error_rate=0.5, seed=3)
    tk.pull(client, details="all", progress=True)
    assert "retries=" in capsys.readouterr().err


# -- pacing ----------------------------------------------------------------------------


def test_pace_starts_modestly_and_grows_while_answers_are_fast_and_clean():
    pace = Pace()
    assert pace.size == _START
    for _ in range(200):
        pace.observe(200, 0.020, None)
    assert pace.size == CEILING


def test_pace_halves_on_503_and_429_once_a_round():
    pace = Pace()
    for _ in range(50):
        pace.observe(200, 0.020, None)
    before = pace.size
    for _ in range(5):  # a burst of 503s within one round is one signal
        pace.observe(503, 0.020, None)
    assert pace.size == before // 2
    for _ in range(pace.size):
        pace.observe(200, 0.020, None)
    pace.observe(429, 0.020, None)
    assert pace.size <= before // 4 + 1


def test_pace_backs_off_when_latency_rises():
    pace = Pace()
    for _ in range(60):
        pace.observe(200, 0.020, None)
    high = pace.size
    for _ in range(40):
        pace.observe(200, 0.200, None)
    assert pace.size < high


def test_pace_is_not_held_down_by_latency_that_grows_with_its_own_load():
    # A busy client: past 8 in flight it answers at a fixed rate, so latency grows with
    # the limit (what a loaded machine's interpreter does). That is not the service
    # queueing; the pace should keep what the service gives, not settle at a fraction.
    pace = Pace()
    for _ in range(3000):
        pace.observe(200, 0.020 * max(1.0, pace.size / 8), None)
    assert pace.size >= 24


def test_pace_grows_again_after_the_service_settles_at_a_slower_latency():
    pace = Pace()
    for _ in range(100):
        pace.observe(200, 0.020, None)
    for _ in range(40):
        pace.observe(200, 0.200, None)
    low = pace.size
    for _ in range(2000):
        pace.observe(200, 0.200, None)
    assert pace.size > low


def test_pace_waits_out_a_retry_after_before_sending_again():
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pace = Pace(clock=lambda: now[0], sleep=sleep)
    pace.observe(429, 0.01, 7.0)
    with pace.slot():
        pass
    assert slept == [7.0]


def test_a_fixed_concurrency_does_not_move():
    pace = Pace(fixed=8)
    for status in (200, 503, 200, 429):
        pace.observe(status, 0.5, None)
    assert pace.size == 8


def test_the_client_tells_its_on_attempt_hook_of_every_attempt_with_its_retry_after():
    seen = []
    answers = iter(
        [httpx.Response(503, headers={"Retry-After": "2"}), httpx.Response(200, json=[])]
    )
    client = tk.Client(
        "https://cts.example.com",
        "k",
        transport=httpx.MockTransport(lambda r: next(answers)),
        retry=tk.RetryPolicy(sleep=lambda s: None),
        on_attempt=lambda status, seconds, after: seen.append((status, after)),
    )
    with client:
        client.list_projects()
    assert seen == [(503, 2.0), (200, None)]


def test_a_pull_paces_itself_through_the_public_hook_and_leaves_the_callers_in_place():
    seen = []

    def mine(status, seconds, after):
        seen.append(status)

    answer = httpx.Response(200, json=[project_json("p1")])
    client = tk.Client(
        "https://cts.example.com",
        "k",
        transport=httpx.MockTransport(lambda request: answer),
        on_attempt=mine,
    )
    with client, Fetcher(client) as fetcher:
        assert client.on_attempt != mine  # the pull's pace listens while it runs
        fetcher.projects()
        assert fetcher.pace.limit > _START  # it heard of the clean answer
    assert client.on_attempt is mine and seen == [200]  # the caller's hook was told too
