"""compare_models and price_by_language against a known price per model: the emulator's
(one credit per page and language, whatever the model) and a hand-made workspace where
one model costs twice the other."""

from __future__ import annotations

from datetime import timedelta

import pytest
from datafakes import T0, FakeService
from page_images import make_page

from toolkit import analysis
from toolkit.store import SnapshotStore

COMMON = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl"}
LETTERING_MODEL = "cts-letter-2"


@pytest.fixture
def mixed_day(emulator, workspace, client, tmp_path):
    """The lettering model on lettered two-language work and on plain one-language work,
    the default model on plain one-language work only: a mix effect waiting to happen."""
    ws = workspace["id"]
    projects = {
        "lettered": emulator.create_project(ws, name="Lettered", process_steps="full",
                                            target_languages=["en", "fr"],
                                            translation_model=LETTERING_MODEL, **COMMON),
        "plain-model": emulator.create_project(ws, name="Plain model", process_steps="translate",
                                               target_languages=["en"],
                                               translation_model=LETTERING_MODEL, **COMMON),
        "plain-default": emulator.create_project(ws, name="Plain default",
                                                 process_steps="translate",
                                                 target_languages=["en"], **COMMON),
    }  # fmt: skip
    emulator.set_faults(failure_rate=0.2, seed=11)
    store = SnapshotStore(tmp_path / "store")
    store.take(client)
    seed = 0
    for _ in range(2):
        for project in projects.values():
            for pages in (3, 5):
                client.create_chapter(
                    project["id"], pages=[make_page(seed + i) for i in range(pages)]
                )
                seed += pages
        emulator.advance(3600)
        store.take(client)
    return store, projects, emulator.ledger(ws)


def test_like_for_like_price_equals_the_ledger_and_hides_no_mix_effect(mixed_day):
    store, projects, ledger = mixed_day
    table = analysis.compare_models(store)
    assert list(table.columns[:4]) == ["kind", "process_steps", "languages", "model"]
    model_of = {p["id"]: p["translationModel"] or "cts-emulator-mt-1" for p in projects.values()}
    steps_of = {p["id"]: (p["processSteps"], len(p["targetLanguages"])) for p in projects.values()}
    truth: dict[tuple[str, int, str], list[float]] = {}
    for charge in ledger["charges"]:
        steps, n = steps_of[charge["projectId"]]
        key = (steps, n, model_of[charge["projectId"]])
        credits, page_langs = truth.setdefault(key, [0.0, 0.0])
        truth[key] = [credits + charge["credits"], page_langs + charge["pages"] * n]
    for row in table.itertuples():
        credits, page_langs = truth[(row.process_steps, row.languages, row.model)]
        assert row.credits == credits
        assert row.credits_per_page_language == credits / page_langs == 1.0  # the true price

    # Per page alone, the lettering model would look twice as dear: it does the
    # two-language work. Within the like-for-like stratum the models cost the same.
    plain = table[table["process_steps"] == "translate"].set_index("model")
    assert set(plain.index) == {LETTERING_MODEL, "cts-emulator-mt-1"}
    verdict = plain["verdict"].iloc[0]
    assert "price: cannot tell" in verdict and "is better" not in verdict.split(";")[0]
    lettered = table[table["process_steps"] == "full"]
    assert lettered["verdict"].iloc[0].startswith(f"only {LETTERING_MODEL}")

    runs = analysis.runs(store)
    for row in table.itertuples():
        mine = runs[runs["models"] == row.model]
        mine = mine[mine["project_id"].map({p: s for p, (s, _) in steps_of.items()})
                    == row.process_steps]  # fmt: skip
        ended = mine[mine["outcome"].isin(["finished", "failed", "stalled"])]
        assert row.runs == len(mine) and row.ended_runs == len(ended)
        # Failed or stalled: the same quantity as failure_rates' (one label, one figure).
        assert row.failure_rate == pytest.approx(
            ended["outcome"].isin(["failed", "stalled"]).mean()
        )


def test_price_per_page_per_project_and_language(mixed_day):
    store, projects, ledger = mixed_day
    prices = analysis.price_by_language(store)
    lettered = prices[prices["project_id"] == projects["lettered"]["id"]]
    assert sorted(lettered["language_code"]) == ["en", "fr"]
    assert (prices["credits_per_page"] == 1.0).all()
    for project in projects.values():
        charged = sum(c["credits"] for c in ledger["charges"] if c["projectId"] == project["id"])
        assert prices.loc[prices["project_id"] == project["id"], "credits"].sum() == charged
    assert set(prices["project"]) == {"Lettered", "Plain model", "Plain default"}


def _hours(n: float):
    return T0 + timedelta(hours=n)


def test_a_model_that_costs_more_is_named_and_too_few_runs_are_said(tmp_path):
    service = FakeService()
    service.add_project("cheap", languages=("en",), processSteps="translate",
                        translationModel="m-cheap")  # fmt: skip
    service.add_project("dear", languages=("en",), processSteps="translate",
                        translationModel="m-dear")  # fmt: skip
    store = SnapshotStore(tmp_path)
    store.take(service, at=_hours(0))
    for n in range(4):
        for project, price in (("cheap", 1), ("dear", 2)):
            service.add_chapter(f"{project}{n}", project, position=n + 1, pages=10,
                                credits=10 * price, languages=("en",), created=_hours(n + 0.5),
                                activity=_hours(n + 0.5))  # fmt: skip
        store.take(service, at=_hours(n + 1))
        for project in ("cheap", "dear"):
            service.update(f"{project}{n}", processing=False, status="needs_review",
                           covered=20, untranslated=0, activity=_hours(n + 1.5))  # fmt: skip
        store.take(service, at=_hours(n + 2))

    table = analysis.compare_models(store).set_index("model")
    assert table.loc["m-cheap", "credits_per_page_language"] == 1.0
    assert table.loc["m-dear", "credits_per_page_language"] == 2.0
    verdict = table.loc["m-cheap", "verdict"]
    assert verdict.startswith(
        "price: m-cheap is better (credits per page and language: m-cheap 1.00 vs m-dear 2.00; "
    )
    assert "speed: cannot tell m-cheap and m-dear apart" in verdict  # both 1 h for 10 pages

    prices = analysis.price_by_language(store).set_index("project_id")
    assert prices.loc["dear", "credits_per_page"] == 2.0
    assert prices.loc["dear", "language_code"] == "en"

    early = analysis.compare_models(store, until=_hours(1.5))
    assert early["verdict"].iloc[0].startswith("too few runs to compare (m-cheap: 1, m-dear: 1")
    assert early["runs"].tolist() == [1, 1]
