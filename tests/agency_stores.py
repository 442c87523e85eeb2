"""Two workspaces, each its own emulator on a free port and its own store, over two weeks
(importable from any test directory): the agency page's and the tag budgets' material.

Both emulators start at the test's instant and are advanced together, so the
workspaces' snapshots fall at the same instants, as the watch's rounds take them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
from page_images import make_page

from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.store import SnapshotStore

# Each workspace's projects; "Moonlit Harbor" is in both, as one client's series often is.
PLAN = {"studio-a": ("Moonlit Harbor", "Iron Vale"), "studio-b": ("Paper Crane", "Moonlit Harbor")}
TAGS = {
    "Moonlit Harbor": {"client": "Acme", "team": "north"},
    "Paper Crane": {"client": "Acme"},
    "Iron Vale": {"client": "Brio", "team": "south"},
}
# The service's translation group: studio-a's two projects share one (a bare UUID, as the
# service sends it); studio-b's each have their own, which the emulator makes up.
SHARED_GROUP = "7d3f0c1e-5b2a-4c8e-9a61-2f4b8d0e6c13"
GROUPS = {"studio-a": SHARED_GROUP}


@dataclass
class Studio:
    name: str
    store: SnapshotStore
    url: str
    key: str
    charges: pd.DataFrame  # the ledger's charges: at, credits, rework, chapter_id, project


class _Running:
    def __init__(self, name: str, root: Path, epoch: datetime) -> None:
        self.name = name
        self.emulator = Emulator(clock="manual", start=epoch).__enter__()
        self.workspace = self.emulator.create_workspace(name=name, credits=100_000)
        self.projects: dict[str, str] = {}
        for title in PLAN[name]:
            project = self.emulator.create_project(
                self.workspace["id"], name=title, kind="comic", source_language="ja",
                reading_direction="rtl", process_steps="full", target_languages=["en", "fr"],
                translation_group_id=GROUPS.get(name),
            )  # fmt: skip
            self.projects[project["id"]] = title
        self.client = Client(base_url=self.emulator.url, api_key=self.workspace["apiKey"])
        self.store = SnapshotStore(root / name, workspace=name)
        self.chapters: dict[str, str] = {}  # chapter id -> project name

    def chapter(self, project: str, pages: int, seed: int) -> str:
        project_id = next(i for i, title in self.projects.items() if title == project)
        made = self.client.create_chapter(
            project_id, pages=[make_page(seed + n) for n in range(pages)]
        )
        self.chapters[made.id] = project
        return made.id

    def charges(self) -> pd.DataFrame:
        rows: list[dict[str, Any]] = self.emulator.ledger(self.workspace["id"])["charges"]
        frame = pd.DataFrame(
            {
                "at": pd.to_datetime([r["at"] for r in rows], utc=True),
                "credits": [r["credits"] for r in rows],
                "rework": [bool(r["rework"]) for r in rows],
                "chapter_id": [r["chapterId"] for r in rows],
            }
        )
        frame["project"] = frame["chapter_id"].map(self.chapters)
        return frame

    def close(self) -> Studio:
        studio = Studio(self.name, self.store, self.emulator.url, self.workspace["apiKey"],
                        self.charges())  # fmt: skip
        self.client.close()
        self.emulator.__exit__(None, None, None)
        return studio


def two_studios(root: Path, epoch: datetime) -> dict[str, Studio]:
    """Week one: a chapter per project; a week later, week two: more chapters, and a
    re-scan of the first chapter of each workspace (re-run credits), then a long chapter
    still running at the last snapshot (the forecast's open work). Snapshots: the
    baseline, one and three hours after each week's uploads, two minutes after the last."""
    running = [_Running(name, root, epoch) for name in PLAN]
    try:
        for studio in running:
            studio.store.take(studio.client)  # the baseline
        first = {}
        for n, studio in enumerate(running):
            for k, project in enumerate(PLAN[studio.name]):
                made = studio.chapter(project, pages=2 + k, seed=10 * n + k)
                first.setdefault(studio.name, made)
        _advance_and_take(running, (3600, 7200))
        for studio in running:
            studio.emulator.advance(7 * 24 * 3600)
            studio.store.take(studio.client)
        for n, studio in enumerate(running):
            studio.client.rescan_chapter(first[studio.name])
            for k, project in enumerate(PLAN[studio.name]):
                studio.chapter(project, pages=3 + n, seed=100 + 10 * n + k)
        _advance_and_take(running, (3600, 7200))
        for n, studio in enumerate(running):
            studio.chapter(PLAN[studio.name][0], pages=12, seed=200 + n)
        _advance_and_take(running, (120,))
    except BaseException:
        for studio in running:
            studio.close()
        raise
    return {studio.name: studio.close() for studio in running}


def _advance_and_take(running: list[_Running], steps: tuple[int, ...]) -> None:
    for seconds in steps:
        for studio in running:
            studio.emulator.advance(seconds)
            studio.store.take(studio.client)


def watch_config(path: Path, studios: dict[str, Studio]) -> Path:
    """The watch's config naming the workspaces' stores, with the projects' tags (TAGS)."""
    lines = []
    for name, studio in studios.items():
        lines += [f"[workspaces.{name}]", f'base_url = "{studio.url}"',
                  f'key_env = "KEY_{name.upper().replace("-", "_")}"',
                  f'store = "{studio.store.root}"']  # fmt: skip
    for project, tags in TAGS.items():
        lines.append(f'[tags."{project}"]')
        lines += [f'{key} = "{value}"' for key, value in tags.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
