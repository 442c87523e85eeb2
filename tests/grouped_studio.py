"""A workspace of three comics on an emulator, two of them in one translation group and
the third in none: the service's own grouping, which the tag `translation_group` reads."""

from __future__ import annotations

from typing import Any

from toolkit.emulator import Emulator

IN_GROUP = ("Moonlit Harbor", "Paper Crane")
ALONE = "Iron Vale"


def grouped_studio(emulator: Emulator, group: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The workspace (its `id`, `apiKey`) and its projects' ids by title: `IN_GROUP` in
    `group`, `ALONE` with none."""
    workspace = emulator.create_workspace(name="studio", credits=100_000)
    made = {
        title: emulator.create_project(
            workspace["id"], name=title, kind="comic", source_language="ja",
            reading_direction="rtl", process_steps="full", target_languages=["en"],
            translation_group_id=group if title in IN_GROUP else None,
        )["id"]
        for title in (*IN_GROUP, ALONE)
    }  # fmt: skip
    return workspace, made
