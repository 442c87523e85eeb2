"""`toolkit.pricing`: what a run costs before it is sent, learned or labelled an estimate."""

from __future__ import annotations

from toolkit.models import ChapterListItem, Project
from toolkit.pricing import _units_of_text, quote_pages, quote_rescans, quote_text, total
from toolkit.store import SnapshotStore


def project(kind: str = "comic", languages: tuple[str, ...] = ("en", "fr")) -> Project:
    return Project.from_json(
        {
            "id": "p1",
            "name": "Moonlit Harbor",
            "kind": kind,
            "targetLanguages": [{"languageCode": code} for code in languages],
        }
    )


def test_without_history_a_quote_is_an_estimate_and_says_so():
    quote = quote_pages(project(), 3)
    assert (quote.credits, quote.learned) == (6, False)
    assert quote.label == "about 6 credits (estimate)"
    assert quote.sentence() == (
        "This run will cost about 6 credits "
        "(estimate: 3 pages x 2 languages at an assumed 1 credit each)."
    )
    text = quote_text(project("novel", ("en",)), "x" * 4001)
    assert _units_of_text("x" * 4001) == 3 and text.credits == 3
    assert "3 blocks of up to 2,000 characters x 1 language" in text.basis


def test_totals_keep_one_basis_or_say_they_mix():
    one = quote_pages(project(), 1)
    assert total([one, one]).basis == one.basis and total([one, one]).credits == 4
    assert total([]).credits == 0 and not total([]).learned
    chapters = [
        ChapterListItem.from_json({"id": "c1", "projectId": "p1", "pageCount": 2}),
        ChapterListItem.from_json({"id": "c2", "projectId": "elsewhere", "pageCount": 9}),
    ]
    assert quote_rescans({"p1": project()}, chapters).credits == 4


def test_a_price_learned_from_the_store(emulator, comic_project, client, pages, tmp_path):
    store = SnapshotStore(str(tmp_path / "store"))
    store.take(client, at=emulator.now())
    assert not quote_pages(client.get_project(comic_project["id"]), 1, store=store).learned
    client.create_chapter(comic_project["id"], pages=pages)
    emulator.advance(60)
    store.take(client, at=emulator.now())
    listed = next(p for p in client.list_projects() if p.id == comic_project["id"])
    quote = quote_pages(listed, 5, store=store)
    assert (quote.credits, quote.learned, quote.label) == (10, True, "10 credits")
    assert quote.sentence() == (
        "This run will cost 10 credits (price learned from this workspace's history)."
    )
