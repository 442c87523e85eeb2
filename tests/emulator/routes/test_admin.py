"""The /_emulator admin routes: token, bodies, unknown ids, and the Python conveniences."""

from __future__ import annotations

import pytest
from emulator_helpers import error_of, plain_client
from epochs import SUITE_START

from toolkit.emulator import AdminCallError

ROUTES = [
    ("POST", "/_emulator/workspaces"),
    ("GET", "/_emulator/workspaces/x"),
    ("PUT", "/_emulator/workspaces/x/credits"),
    ("GET", "/_emulator/workspaces/x/ledger"),
    ("POST", "/_emulator/projects"),
    ("POST", "/_emulator/projects/x/trash"),
    ("POST", "/_emulator/chapters/x/trash"),
    ("POST", "/_emulator/chapters/x/review"),
    ("GET", "/_emulator/clock"),
    ("POST", "/_emulator/clock"),
    ("PUT", "/_emulator/faults"),
    ("POST", "/_emulator/seed/demo"),
    ("POST", "/_emulator/webhooks"),
    ("DELETE", "/_emulator/webhooks/x"),
    ("POST", "/_emulator/webhooks/x/test"),
    ("GET", "/_emulator/deliveries"),
]


def _admin(raw, emulator, method, path, body=None):
    headers = {"Authorization": f"Bearer {emulator.admin_token}"}
    return raw.request(method, path, json=body, headers=headers)


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_admin_route_needs_the_token(emulator, raw, method, path):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": emulator.admin_token}):
        response = raw.request(method, path, headers=headers)
        assert error_of(response)[0] == 401


def test_api_keys_do_not_open_admin_routes(raw, workspace):
    response = raw.get(
        "/_emulator/clock", headers={"Authorization": f"Bearer {workspace['apiKey']}"}
    )
    assert response.status_code == 401


def test_given_admin_token_is_used():
    from toolkit.emulator import Emulator

    with Emulator(admin_token="let-me-in", start=SUITE_START) as emu:
        assert emu.admin_token == "let-me-in"
        with plain_client(emu.url, "let-me-in") as client:
            assert client.get("/_emulator/clock").status_code == 200


def test_workspace_routes(emulator):
    created = emulator.create_workspace("Studio", credits=250)
    assert set(created) == {"id", "name", "credits", "apiKey"}
    assert created["apiKey"].startswith("cts_")
    assert emulator.get_workspace(created["id"]) == {
        "id": created["id"],
        "name": "Studio",
        "credits": 250,
    }
    assert emulator.set_credits(created["id"], 7)["credits"] == 7
    assert emulator.get_workspace(created["id"])["credits"] == 7


@pytest.mark.parametrize(
    "body",
    [{}, {"name": "", "credits": 1}, {"name": "x", "credits": -1}, {"name": "x", "credits": "9"}],
)
def test_bad_workspace_body_is_400(raw, emulator, body):
    assert error_of(_admin(raw, emulator, "POST", "/_emulator/workspaces", body))[0] == 400


def test_body_that_is_not_json_is_400(emulator, raw):
    response = raw.post(
        "/_emulator/workspaces",
        content=b"{name:",
        headers={"Authorization": f"Bearer {emulator.admin_token}"},
    )
    assert error_of(response)[0] == 400


def test_unknown_ids_are_404(raw, emulator):
    for method, path, body in [
        ("GET", "/_emulator/workspaces/nope", None),
        ("PUT", "/_emulator/workspaces/nope/credits", {"credits": 1}),
        ("GET", "/_emulator/workspaces/nope/ledger", None),
        ("POST", "/_emulator/projects/nope/trash", None),
        ("POST", "/_emulator/chapters/nope/trash", None),
        ("POST", "/_emulator/chapters/nope/review", None),
    ]:
        assert error_of(_admin(raw, emulator, method, path, body))[0] == 404, path


def test_conveniences_raise_the_emulators_error_with_the_status(emulator):
    with pytest.raises(AdminCallError) as caught:
        emulator.get_workspace("nope")
    assert caught.value.status == 404
    with pytest.raises(AdminCallError) as caught:
        emulator.create_workspace("", credits=1)
    assert caught.value.status == 400


PROJECT = {
    "name": "P",
    "kind": "comic",
    "sourceLanguage": "ja",
    "readingDirection": "rtl",
    "processSteps": "full",
    "targetLanguages": ["en"],
}


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "manga"},
        {"sourceLanguage": "japanese"},
        {"readingDirection": "up"},
        {"processSteps": "all"},
        {"targetLanguages": []},
        {"targetLanguages": ["en", "en"]},
        {"targetLanguages": "en"},
        {"name": ""},
        {"translationModel": 3},
        {"translationGroupId": ""},
        {"translationGroupId": 7},
        {"kind": "novel", "processSteps": "full"},
    ],
)
def test_bad_project_body_is_400(raw, emulator, workspace, change):
    body = {"workspaceId": workspace["id"], **PROJECT, **change}
    assert error_of(_admin(raw, emulator, "POST", "/_emulator/projects", body))[0] == 400


def test_project_of_unknown_workspace_is_404(raw, emulator):
    body = {"workspaceId": "nope", **PROJECT}
    assert error_of(_admin(raw, emulator, "POST", "/_emulator/projects", body))[0] == 404


def test_project_with_a_model(emulator, workspace):
    project = emulator.create_project(
        workspace["id"],
        name="Modelled",
        kind="novel",
        source_language="zh",
        reading_direction="vertical",
        process_steps="translate",
        target_languages=["en", "de", "es"],
        translation_model="novel-mt-3",
    )
    assert project["translationModel"] == "novel-mt-3"
    assert [t["languageCode"] for t in project["targetLanguages"]] == ["en", "de", "es"]


def test_projects_given_one_translation_group_share_it_on_the_list_and_the_get(
    emulator, workspace, client
):
    """So a scenario can group projects as a series' volumes are; without one, each
    project has a group of its own."""
    common = {"kind": "comic", "source_language": "ja", "reading_direction": "rtl",
              "process_steps": "full", "target_languages": ["en"]}  # fmt: skip
    first, second = (
        emulator.create_project(workspace["id"], name=n, translation_group_id="volumes", **common)
        for n in ("Volume 1", "Volume 2")
    )
    alone = emulator.create_project(workspace["id"], name="Alone", **common)
    assert first["translationGroupId"] == second["translationGroupId"] == "volumes"
    assert alone["translationGroupId"] != "volumes"
    listed = {p.name: p.translation_group_id for p in client.list_projects()}
    assert listed == {"Volume 1": "volumes", "Volume 2": "volumes",
                      "Alone": alone["translationGroupId"]}  # fmt: skip
    assert client.get_project(second["id"]).translation_group_id == "volumes"


def test_clock_routes(raw, emulator):
    before = emulator.now()
    after = emulator.advance(90.5)
    assert (after - before).total_seconds() == pytest.approx(90.5, abs=0.002)
    assert emulator.now() == after
    for body in ({"advance": -1}, {"advance": "soon"}, {}, {"advance": True}):
        assert error_of(_admin(raw, emulator, "POST", "/_emulator/clock", body))[0] == 400


def test_ledger_of_a_new_workspace(emulator, workspace):
    assert emulator.ledger(workspace["id"]) == {"balance": 10_000, "charges": [], "lines": []}


def test_deliveries_routes_are_mounted(emulator, workspace):
    assert isinstance(emulator.deliveries(workspace["id"]), list)
