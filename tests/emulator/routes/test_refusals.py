"""Which refusal wins when several apply: 401, 404, 409 (processing), the request's own
400/413/415/422, 409 (number), 402; and 401 on every /api/v1 route."""

from __future__ import annotations

from emulator_helpers import add_pages, create_chapter, error_of, page_parts

from toolkit.emulator.intake.imaging import MAX_PAGE_BYTES

SVG = b"<svg xmlns='http://www.w3.org/2000/svg'/>"


def test_every_route_without_a_key_is_401_even_for_unknown_ids(raw, comic_project, pages):
    chapter = "00000000-0000-0000-0000-000000000000"
    for method, path in [
        ("GET", "/api/v1/projects"),
        ("GET", f"/api/v1/projects/{comic_project['id']}"),
        ("GET", f"/api/v1/projects/{comic_project['id']}/chapters"),
        ("POST", f"/api/v1/projects/{comic_project['id']}/chapters"),
        ("GET", f"/api/v1/chapters/{chapter}"),
        ("POST", f"/api/v1/chapters/{chapter}/pages"),
        ("POST", f"/api/v1/chapters/{chapter}/start"),
        ("POST", f"/api/v1/chapters/{chapter}/rescan"),
    ]:
        files = page_parts(pages[:1]) if method == "POST" else None
        assert error_of(raw.request(method, path, files=files))[0] == 401, path


def test_not_found_wins_over_a_bad_request(api):
    assert error_of(create_chapter(api, "nope", position="zero"))[0] == 404
    assert error_of(api.post("/chapters/nope/pages", data={"hold": "1"}))[0] == 404


def test_processing_wins_over_a_bad_request(api, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages).json()
    response = api.post(f"/chapters/{chapter['id']}/pages", data={"hold": "1"})  # no page
    assert error_of(response) == (409, "chapter already processing")
    assert error_of(add_pages(api, chapter["id"], [SVG]))[0] == 409


def test_a_bad_image_wins_over_a_taken_number_and_credits(emulator, api, workspace, comic_project):
    create_chapter(api, comic_project["id"], staged=1, position=1)
    emulator.set_credits(workspace["id"], 0)
    response = api.post(
        f"/projects/{comic_project['id']}/chapters",
        data={"position": "1"},
        files=page_parts([SVG]),
    )
    assert error_of(response)[0] == 415


def test_a_late_page_number_wins_over_credits(emulator, api, workspace, comic_project, pages):
    chapter = create_chapter(api, comic_project["id"], pages[:1]).json()
    emulator.advance(3600)
    emulator.set_credits(workspace["id"], 0)
    assert error_of(add_pages(api, chapter["id"], pages[1:2], position=5))[0] == 409


def test_oversized_page_added_is_413(api, comic_project, make_page):
    chapter = create_chapter(api, comic_project["id"], staged=1).json()
    big = make_page(9) + b"\x00" * MAX_PAGE_BYTES
    status, _ = error_of(add_pages(api, chapter["id"], [big], hold=1))
    assert status == 413
    assert api.get(f"/chapters/{chapter['id']}").json()["pageCount"] == 0


def test_a_method_a_path_does_not_take_is_405_naming_those_it_does(api, comic_project):
    # RFC 9110 requires a 405 to carry `Allow`; a client (or schemathesis' check of
    # unsupported methods) reads it to learn what to send instead.
    response = api.request("DELETE", f"/projects/{comic_project['id']}/chapters")
    assert error_of(response) == (
        405,
        f"DELETE is not allowed on /api/v1/projects/{comic_project['id']}/chapters",
    )
    assert set(response.headers["allow"].split(", ")) >= {"GET", "POST"}
