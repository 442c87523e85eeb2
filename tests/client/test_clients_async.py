"""AsyncClient: the same methods as Client, driven by the same flows, awaited."""

from __future__ import annotations

import asyncio
import inspect

import httpx
import pytest
from page_images import make_page
from scripted import Script, scripted_async_client

import toolkit as tk

PUBLIC = [
    "list_projects",
    "get_project",
    "list_chapters",
    "get_chapter",
    "create_chapter",
    "add_pages",
    "start_chapter",
    "rescan_chapter",
    "wait_for_chapter",
]


@pytest.mark.parametrize("name", PUBLIC)
def test_both_clients_mirror_each_other_name_for_name(name):
    sync_method, async_method = getattr(tk.Client, name), getattr(tk.AsyncClient, name)
    assert inspect.iscoroutinefunction(async_method)
    assert not inspect.iscoroutinefunction(sync_method)
    assert inspect.signature(sync_method) == inspect.signature(async_method)


def test_every_route_answers_through_the_async_client():
    script = Script(
        httpx.Response(200, json=[{"id": "p1", "name": "Moon", "kind": "comic"}]),
        httpx.Response(200, json={"id": "p1", "kind": "comic"}),
        httpx.Response(200, json=[{"id": "c1", "position": 1, "creditsSpent": 6, "languages": []}]),
        httpx.Response(200, json={"id": "c1", "processing": False, "project": {"kind": "comic"}}),
        httpx.Response(200, json={"id": "c2", "position": 2, "pages": [{"id": "g"}]}),
        httpx.Response(200, json={"id": "c2", "processing": False, "project": {"kind": "comic"}}),
        httpx.Response(
            200, json={"chapterId": "c2", "pages": [{"id": "h", "sourceImageGcsKey": "k"}]}
        ),
        httpx.Response(200, json={"chapterId": "c2", "pageCount": 2}),
        httpx.Response(200, json={"queued": True, "clearedRegions": 3}),
    )

    async def session() -> None:
        client, _ = scripted_async_client(script)
        async with client:
            assert (await client.list_projects())[0].name == "Moon"
            assert (await client.get_project("p1")).kind == "comic"
            assert (await client.list_chapters("p1"))[0].credits_spent == 6
            assert (await client.get_chapter("c1")).processing is False
            assert (await client.create_chapter("p1", [make_page(1)], position=2)).position == 2
            added = await client.add_pages("c2", [make_page(2)], hold=True)
            assert added.pages[0].source_image_key == "k"
            assert (await client.start_chapter("c2", page_ids=["h"])).page_count == 2
            assert (await client.rescan_chapter("c2")).queued is True
        assert client._http.is_closed

    asyncio.run(session())
    assert script.methods == [
        "GET /projects",
        "GET /projects/p1",
        "GET /projects/p1/chapters",
        "GET /chapters/c1",
        "POST /projects/p1/chapters",  # p1's kind was read for this create (get_project)
        "GET /chapters/c2",  # c2's kind, read once before its first upload
        "POST /chapters/c2/pages",
        "POST /chapters/c2/start",
        "POST /chapters/c2/rescan",
    ]


def test_retries_wait_with_the_async_sleep():
    script = Script(httpx.Response(503), httpx.ReadTimeout("slow"), httpx.Response(200, json=[]))

    async def session() -> tuple[list[tk.Project], list[float]]:
        client, sleeps = scripted_async_client(script)
        async with client:
            return await client.list_projects(), sleeps

    projects, sleeps = asyncio.run(session())
    assert projects == [] and sleeps == [0.25, 0.5]


def test_errors_are_the_same_classes_and_messages():
    body = {"error": {"status": 402, "message": "not enough credits"}}
    script = Script(httpx.Response(402, json=body))

    async def session() -> None:
        client, _ = scripted_async_client(script)
        async with client:
            await client.rescan_chapter("c1")

    with pytest.raises(tk.InsufficientCredits, match=r"not enough credits for rescan_chapter"):
        asyncio.run(session())


def test_a_lost_create_answer_is_named_by_the_async_client_too():
    chapter_list = [
        {"id": "c7", "projectId": "p1", "position": 7, "pageCount": 1, "title": None,
         "createdAt": "2026-11-23T18:00:00.250Z", "languages": []}
    ]  # fmt: skip
    clash = {"error": {"message": "a chapter with that number exists"}}
    script = Script(
        httpx.Response(200, json={"id": "p1", "kind": "comic"}),
        httpx.ReadError("reset after sending"),
        httpx.Response(409, json=clash, headers={"Date": "Mon, 23 Nov 2026 18:00:00 GMT"}),
        httpx.Response(200, json=chapter_list),
    )

    async def session() -> tk.NewChapter:
        client, _ = scripted_async_client(script)
        async with client:
            return await client.create_chapter("p1", [make_page(1)], position=7)

    with pytest.raises(tk.UnconfirmedCreate, match="may be yours") as caught:
        asyncio.run(session())
    assert (caught.value.chapter_id, caught.value.position) == ("c7", 7)
    assert script.methods[-1] == "GET /projects/p1/chapters"


def test_wait_for_chapter_polls_with_the_async_sleep():
    busy = httpx.Response(200, json={"id": "c1", "processing": True, "languages": []})
    done = httpx.Response(200, json={"id": "c1", "processing": False, "languages": []})
    script = Script(busy, busy, done)

    async def session() -> tuple[tk.ChapterDetail, list[float]]:
        client, sleeps = scripted_async_client(script)
        async with client:
            return await client.wait_for_chapter("c1", poll_interval=1.0), sleeps

    result, sleeps = asyncio.run(session())
    assert result.processing is False and sleeps == [1.0, 1.5]


def test_a_notebook_session_against_the_emulator(emulator, workspace, comic_project, pages):
    """Create staged, add, start, wait, re-scan, wait: the async way."""

    async def session() -> tuple[tk.ChapterDetail, tk.RescanResult, list[tk.ChapterListItem]]:
        async with tk.AsyncClient(emulator.url, workspace["apiKey"]) as client:
            staged = await client.create_chapter(comic_project["id"], staged=True, position=2)
            await client.add_pages(staged.id, pages, hold=True)
            assert (await client.start_chapter(staged.id)).page_count == 3
            await client.wait_for_chapter(
                staged.id, timeout=60, poll_interval=0.001, on_poll=lambda _: emulator.advance(60)
            )
            rescan = await client.rescan_chapter(staged.id)
            done = await client.wait_for_chapter(
                staged.id, timeout=60, poll_interval=0.001, on_poll=lambda _: emulator.advance(60)
            )
            return done, rescan, await client.list_chapters(comic_project["id"])

    done, rescan, chapters = asyncio.run(session())
    assert done.status == "needs_review" and done.failed is False
    assert rescan.queued is True and rescan.cleared_regions > 0
    assert [(c.position, c.credits_spent) for c in chapters] == [(2, 12)]  # run + re-scan
