from __future__ import annotations

from datetime import UTC, datetime

import pytest

from toolkit.models import (
    AddedPages,
    ChapterDetail,
    ChapterListItem,
    NewChapter,
    Page,
    Project,
    UnexpectedValue,
)


def test_project_list_item_parses_every_field_and_keeps_unknown_ones():
    raw = {
        "id": "p1",
        "name": "Moon",
        "kind": "comic",
        "sourceLanguage": "ja",
        "readingDirection": "rtl",
        "processSteps": "full",
        "translationModel": None,
        "createdAt": "2026-01-02T03:04:05.000Z",
        "translationGroupId": "g1",
        "seriesProfile": None,
        "coverKey": None,
        "deletedAt": None,
        "targetLanguages": [
            {"projectId": "p1", "languageCode": "en", "addedAt": "2026-01-02T03:04:05Z"}
        ],
        "chapterCount": 3,
        "lastChapterAt": 1767323045000,
        "somethingNew": {"x": 1},
    }
    project = Project.from_json(raw)
    assert project.source_language == "ja"
    assert project.created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert project.language_codes == ["en"]
    assert project.last_chapter_at == datetime.fromtimestamp(1767323045, tz=UTC)
    assert project.raw["somethingNew"] == {"x": 1}


def test_storage_key_is_matched_by_shape_whatever_the_vendor_word():
    added = AddedPages.from_json(
        {"chapterId": "c1", "pages": [{"id": "pg", "sourceImageAcmeBlobKey": "ws/c1/1.png"}]}
    )
    assert added.pages[0].source_image_key == "ws/c1/1.png"


def test_chapter_shapes_parse_nested_languages_and_tolerate_missing_fields():
    item = ChapterListItem.from_json(
        {"id": "c1", "languages": [{"languageCode": "en", "covered": 4, "models": ["m"]}]}
    )
    assert item.languages[0].covered == 4
    assert item.credits_spent is None
    detail = ChapterDetail.from_json(
        {
            "id": "c1",
            "languages": [{"languageCode": "en", "untranslated": 3}],
            "project": {"id": "p"},
        }
    )
    assert detail.untranslated == 3
    assert detail.project is not None and detail.project.id == "p"


def test_every_resource_field_has_a_reader_for_its_type():
    # A field added with a type the readers do not know fails here, not in a pull.
    for model in (AddedPages, ChapterDetail, ChapterListItem, NewChapter, Project, Page):
        assert model.from_json({}).raw == {}


def test_a_wrong_value_names_its_path_and_the_json_it_was():
    with pytest.raises(UnexpectedValue) as caught:
        ChapterListItem.from_json({"languages": [{"languageCode": "en"}, {"covered": True}]})
    assert caught.value.field == "languages[1].covered" and caught.value.value is True
    assert str(caught.value) == (
        "languages[1].covered is true, not a whole number within 64 bits, or null"
    )
