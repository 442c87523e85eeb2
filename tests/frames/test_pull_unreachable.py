"""A pull that never had an answer gives up after the client's own retries; one that had
answers keeps its deadline and logs each pause between passes."""

from __future__ import annotations

import logging

import pytest
from datafakes import FakeService

import toolkit as tk

NO_ANSWER = tk.TransportError("GET /projects got no answer (ConnectError: refused)")
UNAVAILABLE = tk.ServerError("the service failed (503)", status=503)


def service_failing(*errors: Exception) -> tuple[FakeService, list[float]]:
    """One project and chapter; its project list fails with `errors` first, in order."""
    service = FakeService()
    service.add_project("p1", languages=("en",))
    service.add_chapter("c1", "p1", position=1, languages=("en",))
    pauses: list[float] = []
    service.retry = tk.RetryPolicy(sleep=pauses.append)  # type: ignore[attr-defined]
    answered, left = service.list_projects, list(errors)

    def list_projects():
        if left:
            raise left.pop(0)
        return answered()

    service.list_projects = list_projects  # type: ignore[method-assign]
    return service, pauses


def test_no_answer_before_any_answer_ends_the_pull_with_the_clients_error():
    service, pauses = service_failing(NO_ANSWER)
    with pytest.raises(tk.TransportError) as caught:
        tk.pull(service, progress=False)
    assert caught.value is NO_ANSWER
    assert pauses == [] and service.calls == []  # no pass after the first


def test_an_error_answer_counts_as_an_answer_so_the_pull_keeps_trying(caplog):
    service, pauses = service_failing(UNAVAILABLE, NO_ANSWER)
    with caplog.at_level(logging.WARNING, logger="toolkit"):
        ws = tk.pull(service, progress=False)
    assert ws.chapters["chapter_id"].tolist() == ["c1"]
    assert pauses == [1.0, 2.0]
    assert [r.getMessage() for r in caplog.records] == [
        "1 of 1 requests for projects failed (answered 503 (1)); trying again in 1 s",
        "1 of 1 requests for projects failed (no answer (1)); trying again in 2 s",
    ]


def test_a_pull_that_had_answers_keeps_its_deadline_when_the_service_goes():
    service, pauses = service_failing()
    answered, lost = service.get_chapter, [NO_ANSWER] * 3

    def get_chapter(chapter_id: str):
        if lost:
            raise lost.pop()
        return answered(chapter_id)

    service.get_chapter = get_chapter  # type: ignore[method-assign]
    ws = tk.pull(service, progress=False)
    assert ws.languages["untranslated"].notna().all()
    assert pauses == [1.0, 2.0, 4.0]
