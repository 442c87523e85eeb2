"""schemathesis against the emulator, from its own OpenAPI description.

Bounded and seeded: 30 generated cases per operation plus the coverage phase's boundary
cases, positive and negative data, about 450 requests in all (25-40 s here). No answer
may be a 5xx; each must carry a documented status and content type and match its
schema. Positive cases name real projects and chapters (see `_with_named_ids`), so the
forms get past the 404 to the checks behind it; the clock moves on after each case, so
runs finish and later cases get past "still processing".

Seeded this way it found a page numbered 2,147,483,648 accepted and answered against
the schema's maximum, before the emulator's number limits (`core.limits`).
"""

from __future__ import annotations

import hypothesis
import pytest
import schemathesis
from epochs import SUITE_START
from page_images import make_page
from schemathesis.config import SchemathesisConfig

from toolkit.emulator import Emulator
from toolkit.emulator.routes.openapi import description

SEED = 20261123
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
)


@pytest.fixture(scope="module")
def fuzzed():
    """An emulator with a comic and a novel project, and chapters in several states."""
    with Emulator(clock="manual", start=SUITE_START) as emu:
        workspace = emu.create_workspace("Fuzzed", credits=5_000)
        projects = [
            emu.create_project(
                workspace["id"],
                name=f"{kind} project",
                kind=kind,
                source_language="ja",
                reading_direction="rtl",
                process_steps="full" if kind == "comic" else "translate",
                target_languages=["en", "fr"],
            )["id"]
            for kind in ("comic", "novel")
        ]
        yield emu, workspace["apiKey"], projects, _chapters(emu, workspace["apiKey"], projects)


def _chapters(emu: Emulator, key: str, projects: list[str]) -> list[str]:
    from toolkit.client import Client

    comic, novel = projects
    with Client(base_url=emu.url, api_key=key) as client:
        staged = client.create_chapter(comic, staged=True)
        ran = client.create_chapter(comic, pages=[make_page(1), make_page(2)])
        held = client.create_chapter(comic, staged=True)
        client.add_pages(held.id, pages=[make_page(3)], hold=True)
        story = client.create_chapter(novel, text="One line.\nTwo lines.")
        emu.advance(3600)
        running = client.create_chapter(comic, pages=[make_page(4)])
    return [staged.id, ran.id, held.id, story.id, running.id]


PROJECTS = ("comic", "novel")
CHAPTERS = ("staged", "ran", "held", "story", "running")
# Placeholder name -> real id, filled once the module's emulator runs: schemathesis builds
# its tests at collection, before any fixture (its lazy loader fails on this pytest).
REAL_IDS: dict[str, str] = {}


def _with_named_ids(document: dict) -> dict:
    """The description with path ids limited to placeholder names (negative data: others).

    Positive cases name a real project or chapter, so the forms get past the 404 to the
    checks behind it; negative cases send other ids and get the 404.
    """
    names = {"projectId": list(PROJECTS), "chapterId": list(CHAPTERS)}
    for item in document["paths"].values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path":
                    parameter["schema"] = {"type": "string", "enum": names[parameter["name"]]}
    return document


schema = schemathesis.openapi.from_dict(
    _with_named_ids(description()),
    config=SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "generation": {"mode": "all", "max-examples": 30, "deterministic": True},
            "phases": {"examples": {"enabled": False}, "stateful": {"enabled": False}},
            "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
        }
    ),
)


@pytest.fixture(scope="module")
def fuzzed_api(fuzzed):
    """The fuzzed emulator, its `/api/v1` address and key; its ids published by name."""
    emu, key, projects, chapters = fuzzed
    REAL_IDS.update(zip(PROJECTS, projects, strict=True))
    REAL_IDS.update(zip(CHAPTERS, chapters, strict=True))
    yield emu, f"{emu.url}/api/v1", {"Authorization": f"Bearer {key}"}
    REAL_IDS.clear()


@schema.parametrize()
@hypothesis.settings(
    deadline=None,
    suppress_health_check=list(hypothesis.HealthCheck),
    database=None,
    derandomize=True,
)
def test_no_input_gets_a_5xx_and_every_answer_is_as_described(case, fuzzed_api):
    emu, base_url, headers = fuzzed_api
    if case.path_parameters:
        case.path_parameters = {k: REAL_IDS.get(v, v) for k, v in case.path_parameters.items()}
    case.call_and_validate(base_url=base_url, headers=headers)
    emu.advance(1800)
