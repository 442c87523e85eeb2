"""The demo workspace: three projects with chapters in every state.

The seed plays the last two days forward, so times, charges and lines are what a real
history would leave; the projects are listed in docs/emulator.md.
"""

from __future__ import annotations

import io
import random
from typing import Any

from PIL import Image, ImageDraw

from toolkit.emulator.core import workspaces as dashboard
from toolkit.emulator.core.faults import Fate
from toolkit.emulator.core.services import Services
from toolkit.emulator.core.state import Row, from_ms, new_uuid

__all__ = ["seed_demo"]

_HOUR = 3600 * 1000
_MINUTE = 60 * 1000
_DEMO_SETTING = "demo_workspace"

_SENTENCES = [
    "星河之上，少年拾起了那盏旧灯。",
    "风从港口吹来，带着盐和铁锈的味道。",
    "她说：“明天日出之前，我们必须离开。”",
    "城门外的灯笼一盏接一盏地熄灭了。",
    "老船长沉默良久，终于点了点头。",
]


def _demo_page(seed: int) -> bytes:
    """A small generated page: panels and speech balloons, different for every seed."""
    rng = random.Random(seed)
    image = Image.new("RGB", (360, 512), "white")
    draw = ImageDraw.Draw(image)
    for top in (8, 176, 344):
        draw.rectangle([8, top, 352, top + 160], outline="black", width=3)
        for _ in range(rng.randrange(1, 4)):
            x, y = rng.randrange(20, 260), top + rng.randrange(10, 100)
            box = [x, y, x + rng.randrange(50, 90), y + rng.randrange(30, 50)]
            draw.ellipse(box, outline="black")
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def _demo_text(seed: int, lines: int) -> str:
    rng = random.Random(seed)
    body = [f"第{n + 1}段　" + rng.choice(_SENTENCES) * rng.randrange(1, 4) for n in range(lines)]
    return "\n\n".join(body)


class _Seeder:
    def __init__(self, services: Services, now: int) -> None:
        self.services = services
        self.now = now
        self._page_seed = 1000

    def play_until(self, at: int) -> None:
        """Step every run up to `at`, each step at its own time."""
        engine = self.services.engine
        while (due := engine.next_due()) is not None and due <= from_ms(at):
            engine.run_due(due)

    def pages(self, count: int) -> list[Any]:
        staged = []
        for _ in range(count):
            self._page_seed += 1
            staged.append(
                self.services.files.stage_bytes(
                    _demo_page(self._page_seed), name=f"page-{self._page_seed}.png"
                )
            )
        return staged

    def chapter(
        self,
        project: Row,
        *,
        ago: int,
        title: str | None,
        pages: int = 0,
        text: str | None = None,
        fate: tuple[Fate, int] | None = None,
    ) -> str:
        at = self.now - ago
        self.play_until(at)
        created = self.services.operations.create_chapter(
            project,
            position=None,
            staged=pages == 0 and text is None,
            pages=self.pages(pages),
            text=text,
            at=at,
            fate=fate or ("ok", 0),
        )
        self.services.db.execute(
            "UPDATE chapters SET title = ? WHERE id = ?", (title, created.chapter_id)
        )
        return created.chapter_id

    def add_pages(self, chapter_id: str, *, ago: int, count: int, hold: bool) -> None:
        at = self.now - ago
        self.play_until(at)
        self.services.operations.add_pages(
            chapter_id, pages=self.pages(count), hold=hold, position=None, at=at
        )

    def review(self, chapter_id: str, *, ago: int) -> None:
        at = self.now - ago
        self.play_until(at)
        self.services.operations.review(chapter_id, at=at)


def seed_demo(services: Services) -> dict[str, str]:
    """Build the demo workspace (once); returns `{workspaceId, apiKey}`."""
    state = services.state
    known = state.setting(_DEMO_SETTING)
    if known and (workspace := state.workspace(known)) is not None:
        return {"workspaceId": workspace["id"], "apiKey": workspace["api_key"]}
    now = services.now_ms()
    seeder = _Seeder(services, now)
    start = now - 50 * _HOUR
    workspace = dashboard.create_workspace(state, name="Demo workspace", credits=5_000, at=start)
    # The two comics are one studio's line, in one translation group (the novel has its
    # own): grouping by `translation_group` then adds something up.
    comics = {"translationGroupId": new_uuid()}
    harbor, seoul, river = (
        dashboard.create_project(
            state,
            {"workspaceId": workspace["id"], **body, **(comics if body["kind"] == "comic" else {})},
            at=start,
        )
        for body in _PROJECTS
    )
    _seed_harbor(seeder, harbor)
    _seed_seoul(seeder, seoul)
    _seed_river(seeder, river)
    seeder.play_until(now)
    state.put_setting(_DEMO_SETTING, workspace["id"])
    return {"workspaceId": workspace["id"], "apiKey": workspace["api_key"]}


_PROJECTS: list[dict[str, Any]] = [
    {
        "name": "Moonlit Harbor",
        "kind": "comic",
        "sourceLanguage": "ja",
        "readingDirection": "rtl",
        "processSteps": "full",
        "targetLanguages": ["en", "fr"],
    },
    {
        "name": "Seoul Nights",
        "kind": "comic",
        "sourceLanguage": "ko",
        "readingDirection": "ltr",
        "processSteps": "translate",
        "targetLanguages": ["en"],
        "translationModel": "cts-webtoon-mt-2",
    },
    {
        "name": "River of Stars",
        "kind": "novel",
        "sourceLanguage": "zh",
        "readingDirection": "ltr",
        "processSteps": "translate",
        "targetLanguages": ["en", "es"],
    },
]


def _seed_harbor(seeder: _Seeder, project: Row) -> None:
    first = seeder.chapter(project, ago=48 * _HOUR, title="The Lighthouse Keeper", pages=12)
    seeder.review(first, ago=40 * _HOUR)
    seeder.chapter(project, ago=26 * _HOUR, title="Salt and Rust", pages=14)
    seeder.chapter(project, ago=20 * _HOUR, title="Low Tide", pages=10, fate=("fail", 6))
    seeder.chapter(project, ago=6 * _HOUR, title="Fog Bank", pages=8, fate=("stall", 3))
    held = seeder.chapter(project, ago=60 * _MINUTE, title="Drafts", pages=0)
    seeder.add_pages(held, ago=50 * _MINUTE, count=3, hold=True)
    seeder.chapter(project, ago=30 * _MINUTE, title="Harbor Lights", pages=6, fate=("stall", 2))
    seeder.chapter(project, ago=3 * _MINUTE, title="Night Crossing", pages=20)


def _seed_seoul(seeder: _Seeder, project: Row) -> None:
    seeder.chapter(project, ago=30 * _HOUR, title="Neon Rain", pages=10)
    grown = seeder.chapter(project, ago=4 * _HOUR, title="Last Train", pages=6)
    seeder.add_pages(grown, ago=3 * _HOUR, count=2, hold=False)
    seeder.add_pages(grown, ago=2 * _HOUR, count=2, hold=True)
    seeder.chapter(project, ago=45 * _MINUTE, title=None, pages=0)
    seeder.chapter(project, ago=10_000, title="Rooftops", pages=9)


def _seed_river(seeder: _Seeder, project: Row) -> None:
    first = seeder.chapter(project, ago=40 * _HOUR, title="The Ferryman", text=_demo_text(1, 90))
    seeder.review(first, ago=30 * _HOUR)
    seeder.chapter(project, ago=10 * _HOUR, title="Lanterns", text=_demo_text(2, 120))
    seeder.chapter(
        project, ago=2 * _MINUTE, title="Crossing the Milky Way", text=_demo_text(3, 150)
    )
