"""A chapter's derived `state`, on real emulator chapters: in `chapters_frame`, in the
store's chapters table (also one written before the column existed) and in the plot."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pyarrow as pa
import pytest

import toolkit as tk
from toolkit import plots
from toolkit.frames import STATES, schema

HOURS = 3600


@pytest.fixture
def every_state(emulator, workspace, comic_project, client, pages):
    """One chapter in each state a settled or starting chapter can be in, by name."""
    project = comic_project["id"]
    emulator.set_faults(failure_rate=1.0, seed=1)
    failed = client.create_chapter(project, pages=pages)
    emulator.set_faults(stall_rate=1.0, seed=1)
    stalled = client.create_chapter(project, pages=pages)
    emulator.set_faults()
    review = client.create_chapter(project, pages=pages)
    reviewed = client.create_chapter(project, pages=pages)
    staged = client.create_chapter(project, staged=True)
    emulator.advance(3 * HOURS)  # past the 2 h after which a stall is abandoned
    emulator.review_chapter(reviewed.id)
    reading = client.create_chapter(project, pages=pages)
    emulator.advance(1)
    return {
        "failed": failed.id,
        "stalled": stalled.id,
        "needs_review": review.id,
        "reviewed": reviewed.id,
        "staged": staged.id,
        "reading": reading.id,
    }


def test_chapters_frame_and_the_store_say_each_chapter_state(every_state, client, tmp_path):
    frame = tk.chapters_frame(client)
    state = frame.set_index("chapter_id")["state"]
    assert {name: state[cid] for name, cid in every_state.items()} == {
        name: name for name in every_state
    }
    # `status` stays as the service sent it: a staged chapter's is `translating`.
    assert frame.set_index("chapter_id").loc[every_state["staged"], "status"] == "translating"
    assert frame["state"].dtype == pd.StringDtype()

    store = tk.SnapshotStore(tmp_path / "store")
    store.take(client)
    stored = store.latest("chapters").set_index("chapter_id")["state"]
    assert stored.to_dict() == state.to_dict()
    assert set(store.query("SELECT DISTINCT state FROM chapters")["state"]) == set(every_state)

    ax = plots.status_breakdown(store)
    assert set(ax.get_legend_handles_labels()[1]) == {n.replace("_", " ") for n in every_state}


def test_a_run_goes_reading_translating_finishing_then_needs_review(
    emulator, comic_project, client, pages
):
    chapter = client.create_chapter(comic_project["id"], pages=pages)
    seen: list[str] = []
    for _ in range(400):
        state = tk.chapters_frame(client).set_index("chapter_id").loc[chapter.id, "state"]
        if not seen or seen[-1] != state:
            seen.append(state)
        if state == "needs_review":
            break
        emulator.advance(5)
    assert seen == ["reading", "translating", "finishing", "needs_review"]


def test_a_stored_row_without_a_state_gets_it_from_its_own_fields():
    # Rows an earlier toolkit wrote: no `state` column at all.
    rows = pa.table(
        {
            "chapter_id": ["staged", "stalled", "failed", "running", "done"],
            "started": [False, True, True, True, True],
            "processing": [False, False, False, True, False],
            "failed": [False, True, True, False, False],
            "failure_reason": [
                None,
                "The run stalled with no progress for 2 hours and was abandoned.",
                "The translation model returned no usable text.",
                None,
                None,
            ],
            "status": ["translating", "translating", "translating", "translating", "reviewed"],
        }
    )
    frame = schema.to_pandas(rows, schema.CHAPTERS)
    assert frame["state"].tolist() == ["staged", "stalled", "failed", "translating", "reviewed"]
    assert set(frame["state"]) <= set(STATES)
    back = schema.from_pandas(frame.drop(columns="state"), schema.CHAPTERS)
    assert back.column("state").to_pylist() == frame["state"].tolist()
