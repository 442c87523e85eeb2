"""The service's resources as typed, read-only objects.

Each resource is built from the service's JSON with `Resource.from_json(raw)`:
attributes are the snake_case form of the JSON field names (`creditsSpent` ->
`credits_spent`), ISO 8601 times become timezone-aware `datetime`s, and
`lastChapterAt` (milliseconds since 1970) becomes one too. A field the service leaves
out is `None`; a field this module does not know is kept in `.raw`, never an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, ClassVar, Literal, TypeVar

from toolkit.timestamps import parse_millis, parse_time

ChapterStatus = Literal["translating", "needs_review", "reviewed"]
STATUS_ORDER: tuple[str, ...] = ("translating", "needs_review", "reviewed")

_STORAGE_KEY = re.compile(r"^sourceImage\w*Key$")

R = TypeVar("R", bound="Resource")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _time() -> Any:
    return field(default=None, metadata={"parse": parse_time})


def _nested(cls: type[Resource], *, many: bool = True) -> Any:
    def parse(value: Any) -> Any:
        if value is None:
            return [] if many else None
        if many:
            return [cls.from_json(item) for item in value]
        return cls.from_json(value)

    return field(default_factory=list if many else lambda: None, metadata={"parse": parse})


@dataclass(frozen=True)
class Resource:
    """Base of every resource: a frozen dataclass with the original JSON in `.raw`."""

    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    _renames: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def from_json(cls: type[R], raw: Mapping[str, Any]) -> R:
        values: dict[str, Any] = {"raw": dict(raw)}
        for name, key, parse in _plan(cls):
            if key in raw:
                values[name] = parse(raw[key]) if parse else raw[key]
        return cls(**values)


FieldPlan = tuple[tuple[str, str, Callable[[Any], Any] | None], ...]
_PLANS: dict[type, FieldPlan] = {}


def _plan(cls: type[Resource]) -> FieldPlan:
    """Each field's name, JSON key and parser, worked out once per class: a pull parses
    some 100,000 resources, and deriving the keys anew each time cost a tenth of it."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple(
            (f.name, cls._renames.get(f.name, camel(f.name)), f.metadata.get("parse"))
            for f in fields(cls)
            if f.name != "raw"
        )
    return plan


@dataclass(frozen=True)
class TargetLanguage(Resource):
    project_id: str | None = None
    language_code: str | None = None
    added_at: datetime | None = _time()


@dataclass(frozen=True)
class Project(Resource):
    """A project; `target_languages`, `chapter_count` and `last_chapter_at` come on lists only."""

    id: str = ""
    name: str | None = None
    kind: Literal["comic", "novel"] | None = None
    source_language: str | None = None
    reading_direction: str | None = None
    process_steps: str | None = None
    translation_model: str | None = None
    created_at: datetime | None = _time()
    translation_group_id: Any = None
    series_profile: Any = None
    cover_key: Any = None
    deleted_at: datetime | None = _time()
    target_languages: list[TargetLanguage] = _nested(TargetLanguage)
    chapter_count: int | None = None
    last_chapter_at: datetime | None = field(default=None, metadata={"parse": parse_millis})

    @property
    def language_codes(self) -> list[str]:
        return [t.language_code for t in self.target_languages if t.language_code]


@dataclass(frozen=True)
class Page(Resource):
    id: str = ""
    chapter_id: str | None = None
    position: int | None = None
    created_at: datetime | None = _time()
    source_image_key: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Page:
        page = super().from_json(raw)
        # The storage key's name carries a vendor word; match it by shape.
        key = next((raw[k] for k in raw if _STORAGE_KEY.match(k)), None)
        return page if key is None else replace(page, source_image_key=key)


@dataclass(frozen=True)
class LanguageProgress(Resource):
    """One target language of a chapter on the chapter list."""

    language_code: str = ""
    status: ChapterStatus | None = None
    covered: int | None = None
    failed: bool | None = None
    exporting: bool | None = None
    models: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LanguageDetail(Resource):
    """One target language of a chapter on the chapter detail."""

    language_code: str = ""
    status: ChapterStatus | None = None
    untranslated: int | None = None


@dataclass(frozen=True)
class PreparedExport(Resource):
    language_code: str | None = None
    format: str | None = None
    filename: str | None = None
    byte_size: int | None = None
    page_count: int | None = None
    prepared_at: datetime | None = _time()


@dataclass(frozen=True)
class Chapter(Resource):
    """The chapter base shape."""

    id: str = ""
    project_id: str | None = None
    position: int | None = None
    title: str | None = None
    summary: str | None = None
    created_at: datetime | None = _time()


@dataclass(frozen=True)
class NewChapter(Chapter):
    """The create answer: the base shape plus its pages."""

    assigned_user_id: str | None = None
    created_by_user_id: str | None = None
    deleted_at: datetime | None = _time()
    pages: list[Page] = _nested(Page)


@dataclass(frozen=True)
class ChapterListItem(Chapter):
    page_count: int | None = None
    started: bool | None = None
    processing: bool | None = None
    failed: bool | None = None
    failure_reason: str | None = None
    status: ChapterStatus | None = None
    languages: list[LanguageProgress] = _nested(LanguageProgress)
    prepared_exports: list[PreparedExport] = _nested(PreparedExport)
    credits_spent: float | None = None
    last_activity_at: datetime | None = _time()


@dataclass(frozen=True)
class ChapterDetail(Chapter):
    page_count: int | None = None
    processing: bool | None = None
    detecting: bool | None = None
    failed: bool | None = None
    failure_reason: str | None = None
    status: ChapterStatus | None = None
    languages: list[LanguageDetail] = _nested(LanguageDetail)
    project: Project | None = _nested(Project, many=False)
    assignee: Any = None

    @property
    def untranslated(self) -> int:
        """Lines still untranslated over every language."""
        return sum(lang.untranslated or 0 for lang in self.languages)


@dataclass(frozen=True)
class AddedPages(Resource):
    chapter_id: str = ""
    pages: list[Page] = _nested(Page)


@dataclass(frozen=True)
class StartResult(Resource):
    chapter_id: str | None = None
    page_count: int | None = None


@dataclass(frozen=True)
class RescanResult(Resource):
    queued: bool | None = None
    cleared_regions: int | None = None
