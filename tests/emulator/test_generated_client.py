"""A client generated from the served description works against the emulator.

openapi-python-client (the test extra) reads `{base_url}/openapi.json` from a running
emulator, as an integrator would, and writes a package; the tests import it and list
projects, get one, create a chapter in each of the three forms and add held pages with
it. Generating takes about 3 s; it needs no network beyond loopback.
"""

from __future__ import annotations

import importlib
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from toolkit.emulator import Emulator

PACKAGE = "cts_generated"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Iterator[SimpleNamespace]:
    """The generated package's modules, by the names a user of it would import."""
    root = tmp_path_factory.mktemp("generated")
    config = root / "config.json"
    # No post hooks: they run ruff from PATH, and formatting is not what is tested here.
    config.write_text(json.dumps({"package_name_override": PACKAGE, "post_hooks": []}))
    generator = Path(sys.executable).parent / "openapi-python-client"
    with Emulator(clock="manual") as emu:
        result = subprocess.run(
            [generator, "generate", "--url", f"{emu.url}/openapi.json", "--meta", "none",
             "--config", config, "--output-path", root / PACKAGE],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning" not in result.stdout + result.stderr, result.stdout + result.stderr
    names = {
        "client": "client",
        "types": "types",
        "models": "models",
        "list_projects": "api.projects.list_projects",
        "get_project": "api.projects.get_project",
        "create_chapter": "api.chapters.create_chapter",
        "add_pages": "api.chapters.add_pages",
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(root))
        yield SimpleNamespace(
            **{name: importlib.import_module(f"{PACKAGE}.{path}") for name, path in names.items()}
        )
    for module in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
        del sys.modules[module]


@pytest.fixture
def api_client(generated, emulator, workspace):
    """The generated client at `{base_url}/api/v1` (the description's relative server)."""
    client = generated.client.AuthenticatedClient(
        base_url=f"{emulator.url}/api/v1", token=workspace["apiKey"]
    )
    with client:
        yield client


def _png(generated, page: bytes, name: str):
    return generated.types.File(payload=io.BytesIO(page), file_name=name, mime_type="image/png")


def test_it_lists_and_gets_projects(generated, api_client, comic_project, novel_project):
    projects = generated.list_projects.sync(client=api_client)
    assert sorted(p.name for p in projects) == ["Moonlit Harbor", "River of Stars"]
    assert {p.last_chapter_at for p in projects} == {None}  # no chapter yet
    project = generated.get_project.sync(comic_project["id"], client=api_client)
    assert (project.id, project.name) == (comic_project["id"], "Moonlit Harbor")


def test_it_creates_a_chapter_in_each_of_the_three_forms(
    generated, api_client, emulator, comic_project, novel_project, make_page
):
    form, models = generated.models.NewChapterForm, generated.models
    comic, novel = comic_project["id"], novel_project["id"]
    pages = [_png(generated, make_page(i), f"p{i}.png") for i in (1, 2)]
    ran = generated.create_chapter.sync(comic, client=api_client, body=form(pages=pages))
    staged = generated.create_chapter.sync(
        comic, client=api_client, body=form(staged=models.NewChapterFormStaged("1"), position=7)
    )
    story = generated.create_chapter.sync(
        novel, client=api_client, body=form(text="One line.\nAnother.")
    )
    assert all(isinstance(c, models.NewChapter) for c in (ran, staged, story)), (ran, staged, story)
    assert [len(ran.pages), len(staged.pages), staged.position] == [2, 0, 7]
    assert story.project_id == novel

    listed = generated.list_projects.sync(client=api_client)
    newest = max(int(c.created_at.timestamp() * 1000) for c in (ran, staged))
    assert {p.id: p.last_chapter_at for p in listed}[comic] == newest  # milliseconds


def test_added_pages_carry_the_storage_key_whatever_its_vendor_word(
    generated, api_client, comic_project, make_page
):
    form, models = generated.models.NewChapterForm, generated.models
    chapter = generated.create_chapter.sync(
        comic_project["id"], client=api_client, body=form(staged=models.NewChapterFormStaged("1"))
    )
    added = generated.add_pages.sync(
        chapter.id,
        client=api_client,
        body=models.AddPagesForm(
            pages=[_png(generated, make_page(3), "p3.png")], hold=models.AddPagesFormHold("1")
        ),
    )
    assert isinstance(added, models.AddedPages), added
    assert added.pages[0].additional_properties["sourceImageS3Key"].endswith(".png")
    # Another vendor word reads as well: the description requires no particular one.
    answer = added.pages[0].to_dict() | {"sourceImageAcmeBlobKey": "ws/c/1.png"}
    del answer["sourceImageS3Key"]
    other = models.AddedPage.from_dict(answer)
    assert other.additional_properties == {"sourceImageAcmeBlobKey": "ws/c/1.png"}
