"""Is the forecast's band honest? One staggered history on the emulator, a forecast
part-way through it, then the emulator run on to the end: each group's true finish is
read from the service's own events (`chapter.finished`; a language is done when its
last `export.ready` is sent).

Six projects (a lettered comic in three languages, a lettered comic in two, a
two-language plain comic, a cleaned comic, a `text` comic with a failed and a staged
chapter beside its open work, two-language novels), chapters uploaded every few minutes,
so that at the forecast some are reading, most translate and some have finished (the
work after the last line is learned from those). That gives 11 chapters, 6 projects and
4 languages with open work: 22 groups, enough for "at least 80% inside the band" to
mean at most 4 misses.
"""

from __future__ import annotations

import pandas as pd
import pytest
from epochs import SUITE_START
from ledger import finish_times
from page_images import make_page

from toolkit import analysis
from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.store import SnapshotStore

# The ninth pass (docs/testing.md): in the slow group, which CI runs as its own step.
pytestmark = pytest.mark.slow

EVERY = 120  # seconds between snapshots
FORECAST_AT = 44  # minutes after the first upload
COMIC = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl"}
NOVEL = {"kind": "novel", "source_language": "zh", "reading_direction": "ltr",
         "process_steps": "translate"}  # fmt: skip
PROJECTS = {
    "Lettered": {**COMIC, "process_steps": "full", "target_languages": ["en", "fr", "de"]},
    "Lettered two": {**COMIC, "process_steps": "full", "target_languages": ["en", "es"]},
    "Plain": {**COMIC, "process_steps": "translate", "target_languages": ["en", "fr"]},
    "Cleaned": {**COMIC, "process_steps": "clean", "target_languages": ["en"]},
    "Text": {**COMIC, "process_steps": "text", "target_languages": ["en"]},
    "Novel": {**NOVEL, "target_languages": ["en", "es"]},
}
# (minute, project, pages; a novel: lines of text)
UPLOADS = [
    (0, "Lettered", 10), (0, "Lettered two", 12), (0, "Plain", 16), (0, "Novel", 400),
    (0, "Cleaned", 24), (0, "Text", 24),
    (20, "Lettered", 24), (24, "Plain", 30), (26, "Lettered two", 22), (28, "Novel", 1200),
    (30, "Text", 30), (32, "Cleaned", 30), (36, "Text", 40), (38, "Novel", 800),
    (34, "Lettered two", 20), (40, "Lettered", 20), (40, "Novel", 600), (42, "Plain", 24),
    (44, "Cleaned", 30),
]  # fmt: skip


@pytest.fixture(scope="module")
def history(tmp_path_factory, webhook_url):
    """The store up to the forecast, then the true finish of every chapter and of every
    chapter language, from the events the emulator sent (to `webhook_url`: the delivery
    log keeps each body)."""
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        ws = emulator.create_workspace(name="Calibration", credits=1_000_000)
        emulator.add_webhook(ws["id"], webhook_url, ["chapter.finished", "export.ready"])
        ids = {name: emulator.create_project(ws["id"], name=name, **settings)["id"]
               for name, settings in PROJECTS.items()}  # fmt: skip
        store = SnapshotStore(tmp_path_factory.mktemp("calibration") / "store")
        with Client(base_url=emulator.url, api_key=ws["apiKey"]) as client:
            store.take(client)
            seed, flagged = 0, set()
            for minute in range(0, FORECAST_AT + 1, EVERY // 60):
                for name, size in ((n, size) for at, n, size in UPLOADS if at == minute):
                    if PROJECTS[name]["kind"] == "novel":
                        text = "\n".join(f"line {seed + i} of the novel" for i in range(size))
                        client.create_chapter(ids[name], text=text)
                    else:
                        pages = [make_page(seed + i) for i in range(size)]
                        client.create_chapter(ids[name], pages=pages)
                    seed += size
                if minute == 10:  # beside Text's open work: a failed and a staged chapter
                    emulator.set_faults(failure_rate=1.0, seed=3)
                    pages = [make_page(90_000 + i) for i in range(4)]
                    flagged.add(client.create_chapter(ids["Text"], pages=pages).id)
                    emulator.set_faults()
                    flagged.add(client.create_chapter(ids["Text"], staged=True).id)
                emulator.advance(EVERY)
                store.take(client)
            for _ in range(30):
                emulator.advance(600)
                if not any(c.processing for p in ids.values() for c in client.list_chapters(p)):
                    break
        finished, packaged = finish_times(emulator.deliveries(ws["id"]))
    return store, finished, packaged, flagged


def _truth(found: pd.DataFrame, by: str, finished, packaged) -> pd.Series:
    """Each group's true finish: the latest of its open work's."""
    if by == "language_code":
        return found.groupby("language_code").apply(
            lambda rows: max(packaged[(c, rows.name)] for c in rows["chapter_id"]),
            include_groups=False,
        )
    return found.groupby(by)["chapter_id"].agg(lambda ids: max(finished[c] for c in ids))


def _open_chapters(store: SnapshotStore, flagged: set[str]) -> pd.DataFrame:
    """The chapters (and their languages) with work left at the forecast's snapshot."""
    languages = store.latest("languages")
    chapters = store.latest("chapters")
    going = chapters[chapters["processing"].fillna(False).astype(bool)
                     & ~chapters["chapter_id"].isin(flagged)]  # fmt: skip
    return languages[languages["chapter_id"].isin(going["chapter_id"])]


def test_the_true_finish_falls_inside_the_band_and_near_the_median(history):
    store, finished, packaged, flagged = history
    work = _open_chapters(store, flagged)
    as_of = store.snapshots()["snapshot_at"].iloc[-1]
    inside, steady, close, report = 0, 0, 0, []
    for by in ("project_id", "chapter_id", "language_code"):
        seen = analysis.forecast(store, by=by, window="30min", freq="2min", stall_after="20min")
        seen = seen[seen["open_chapters"] > 0].set_index(by)
        truth = _truth(work, by, finished, packaged)
        assert set(seen.index) == set(truth.index), by
        for group, true_finish in truth.items():
            row = seen.loc[group]
            hit = bool(row["finish_p10"] <= true_finish <= row["finish_p90"])
            error = (row["finish_p50"] - as_of) / (true_finish - as_of) - 1
            inside += hit
            # Throughput says when lines run out; a group with none left is all tail.
            if row["remaining_lines"] > 0:
                steady += 1
                close += abs(error) <= 0.25
            report.append(f"{by} {group}: inside {hit}, p50 off by {error:+.0%}")
    message = "\n".join(report)
    assert len(report) == 22  # 11 chapters, 6 projects, 4 languages with open work
    assert inside >= 0.8 * len(report), message
    assert steady >= 18 and close == steady, message
