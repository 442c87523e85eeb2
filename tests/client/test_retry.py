"""Retry rules, over a scripted transport: no network, no real sleeping."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from scripted import BASE_URL, KEY, Script, scripted_client

from toolkit.client import Client
from toolkit.client.retry import RetryPolicy, parse_retry_after
from toolkit.errors import RateLimited, ServerError, TransportError, UnconfirmedCreate

OK_PROJECTS = httpx.Response(200, json=[{"id": "p1", "name": "Moon"}])


def test_backoff_doubles_up_to_the_cap_and_jitter_stays_in_range():
    policy = RetryPolicy(base=0.5, cap=4.0, jitter=lambda: 0.0)
    assert [policy.backoff(n) for n in range(5)] == [0.25, 0.5, 1.0, 2.0, 2.0]
    top = RetryPolicy(base=0.5, cap=4.0, jitter=lambda: 0.999)
    assert 3.99 < top.backoff(10) < 4.0


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("-3") == 0.0
    assert (
        parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now=now) == 90
    )
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_a_get_is_retried_on_busy_and_gateway_statuses(status):
    script = Script(httpx.Response(status), httpx.Response(status), OK_PROJECTS)
    client, sleeps = scripted_client(script)
    with client:
        assert [p.name for p in client.list_projects()] == ["Moon"]
    assert len(script.requests) == 3
    assert sleeps == [0.25, 0.5]


@pytest.mark.parametrize(
    "failure",
    [
        httpx.ConnectError("refused"),
        httpx.ConnectTimeout("slow connect"),
        httpx.ReadTimeout("slow read"),
        httpx.ReadError("reset"),
        httpx.RemoteProtocolError("server disconnected"),
    ],
)
def test_a_get_is_retried_on_connection_failures_and_timeouts(failure):
    script = Script(failure, OK_PROJECTS)
    client, sleeps = scripted_client(script)
    with client:
        assert client.list_projects()[0].id == "p1"
    assert len(sleeps) == 1


def test_retries_stop_after_max_retries_with_a_transport_error():
    script = Script(*[httpx.ConnectError("refused")] * 3)
    client, sleeps = scripted_client(script, max_retries=2)
    with client, pytest.raises(TransportError, match=r"after 3 attempts.*could not reach") as err:
        client.list_projects()
    assert len(script.requests) == 3 and len(sleeps) == 2
    assert isinstance(err.value.__cause__, httpx.ConnectError)


def test_max_retries_zero_means_a_single_attempt():
    script = Script(httpx.Response(503))
    client, sleeps = scripted_client(script, max_retries=0)
    with client, pytest.raises(ServerError, match=r"\(503\)"):
        client.list_projects()
    assert len(script.requests) == 1 and sleeps == []


def test_a_500_is_not_retried():
    script = Script(httpx.Response(500, json={"error": {"status": 500, "message": "boom"}}))
    client, _ = scripted_client(script)
    with client, pytest.raises(ServerError, match="boom") as err:
        client.list_projects()
    assert err.value.status == 500 and err.value.message == "boom"
    assert len(script.requests) == 1


def test_retry_after_is_honoured():
    script = Script(
        httpx.Response(429, headers={"Retry-After": "7"}),
        httpx.Response(503, headers={"Retry-After": "0"}),
        OK_PROJECTS,
    )
    client, sleeps = scripted_client(script)
    with client:
        client.list_projects()
    assert sleeps == [7.0, 0.0]


def test_a_retry_after_past_the_cap_fails_at_once_saying_so():
    script = Script(httpx.Response(429, headers={"Retry-After": "7200"}))
    client, sleeps = scripted_client(script, max_retry_after=60)
    with client, pytest.raises(RateLimited, match=r"7200 s.*max_retry_after=60") as err:
        client.list_projects()
    assert err.value.retry_after == 7200
    assert sleeps == [] and len(script.requests) == 1


def test_a_post_is_not_retried_on_a_gateway_status_and_says_it_may_have_acted():
    script = Script(httpx.Response(502))
    client, sleeps = scripted_client(script)
    with client, pytest.raises(ServerError, match="may have acted"):
        client.rescan_chapter("c1")
    assert len(script.requests) == 1 and sleeps == []


def test_a_post_is_not_retried_when_the_connection_broke_after_sending():
    script = Script(httpx.ReadError("connection reset"))
    client, _ = scripted_client(script)
    with client, pytest.raises(TransportError, match="may have acted"):
        client.start_chapter("c1")
    assert len(script.requests) == 1


def test_a_post_is_retried_when_it_never_left_or_was_refused_with_429():
    rescanned = httpx.Response(200, json={"queued": True, "clearedRegions": 4})
    script = Script(httpx.ConnectError("refused"), httpx.Response(429), rescanned)
    client, sleeps = scripted_client(script)
    with client:
        result = client.rescan_chapter("c1")
    assert result.queued is True and result.cleared_regions == 4
    assert len(script.requests) == 3 and len(sleeps) == 2


def test_retries_are_logged_without_the_key(caplog):
    script = Script(httpx.Response(503), OK_PROJECTS)
    client, _ = scripted_client(script)
    with caplog.at_level(logging.DEBUG), client:
        client.list_projects()
    assert "GET /projects answered 503; trying again" in caplog.text
    assert KEY not in caplog.text


COMIC = httpx.Response(200, json={"id": "p1", "kind": "comic"})


def test_a_create_with_a_position_is_retried_on_a_gateway_status():
    created = httpx.Response(200, json={"id": "c5", "position": 5, "pages": []})
    script = Script(COMIC, httpx.Response(504), created)
    client, sleeps = scripted_client(script)
    with client:
        assert client.create_chapter("p1", staged=True, position=5).id == "c5"
    assert sleeps == [0.25]
    assert script.methods == ["GET /projects/p1"] + ["POST /projects/p1/chapters"] * 2


def test_a_create_with_a_position_that_keeps_failing_says_it_may_exist():
    script = Script(COMIC, httpx.ReadError("reset"), httpx.ReadError("reset"))
    client, _ = scripted_client(script, max_retries=1)
    with client, pytest.raises(TransportError, match=r"after 2 attempts.*may have acted") as err:
        client.create_chapter("p1", staged=True, position=5)
    assert "with position=" not in str(err.value)


def test_a_lost_answer_then_a_clash_with_someone_elses_chapter_is_a_conflict():
    theirs = [
        {
            "id": "c9",
            "position": 5,
            "pageCount": 12,
            "createdAt": "2026-11-23T18:00:00Z",
            "languages": [],
        }
    ]
    clash = {"error": {"message": "a chapter with that number exists"}}
    script = Script(
        COMIC,
        httpx.ReadError("reset"),
        httpx.Response(409, json=clash, headers={"Date": "Mon, 23 Nov 2026 18:00:00 GMT"}),
        httpx.Response(200, json=theirs),
    )
    client, _ = scripted_client(script)
    with (
        client,
        pytest.raises(UnconfirmedCreate, match="has 12 pages, not the 0 sent: it is someone"),
    ):
        client.create_chapter("p1", staged=True, position=5)


def test_the_retry_option_sets_the_policy_and_the_plain_options_override_it():
    transport = httpx.MockTransport(Script())
    policy = RetryPolicy(max_retries=7, max_retry_after=5)
    with Client(BASE_URL, KEY, transport=transport, retry=policy) as client:
        assert client.max_retries == 7
    with Client(BASE_URL, KEY, transport=transport, retry=policy, max_retries=2) as client:
        assert client.max_retries == 2
