"""The service's resources as typed, read-only objects.

Past 400 lines on purpose: every resource of the spec with the value checks they share,
so that each resource reads as its list of typed fields.

Each resource is built from the service's JSON with `Resource.from_json(raw)`:
attributes are the snake_case form of the JSON field names (`creditsSpent` ->
`credits_spent`), ISO 8601 times become timezone-aware `datetime`s, and
`lastChapterAt` (milliseconds since 1970) becomes one too. A field the service leaves
out is `None`; a field this module does not know is kept in `.raw`, never an error.

A known field whose value is not of the type the spec gives raises `UnexpectedValue`
(the client names the route): text is text, a flag is a JSON boolean (never 0 or 1), a
count a whole number within 64 bits (never `true`), a time readable ISO 8601, a list a
list, a status text (one the toolkit does not know is kept as sent: the frames warn of
it). Rules and reasons: docs/client.md ("Strict answers").
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, ClassVar, Literal, TypeVar

from toolkit.timestamps import parse_millis, parse_time

__all__ = [
    "MISSING",
    "STATUS_ORDER",
    "AddedPages",
    "Chapter",
    "ChapterDetail",
    "ChapterListItem",
    "LanguageDetail",
    "LanguageProgress",
    "NewChapter",
    "Page",
    "PreparedExport",
    "Project",
    "R",
    "RescanResult",
    "Resource",
    "StartResult",
    "TargetLanguage",
    "UnexpectedValue",
    "camel",
    "shown",
]

STATUS_ORDER: tuple[str, ...] = ("translating", "needs_review", "reviewed")

_STORAGE_KEY = re.compile(r"^sourceImage\w*Key$")

R = TypeVar("R", bound="Resource")


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class _Missing:
    def __repr__(self) -> str:
        return "missing"


MISSING: Any = _Missing()  # the value of a field the service should have sent and did not


class UnexpectedValue(ValueError):
    """A field whose value is not what the spec describes (also a `ValueError`).

    The client turns it into `UnexpectedAnswer`, which names the route too.

    Args:
        field: The field's path in the JSON, e.g. `languages[1].status`.
        value: What was sent (`MISSING` for a field that is absent).
        expected: What the spec gives, in words ("text or null").
    """

    def __init__(self, field: str, value: Any, expected: str) -> None:
        told = "missing" if value is MISSING else f"{shown(value)}, not {expected}"
        super().__init__(f"{field} is {told}")
        self.field, self.value, self.expected = field, value, expected

    def under(self, outer: str) -> UnexpectedValue:
        """The same error, its path inside an enclosing field.

        Args:
            outer: The enclosing field's name or index, e.g. `languages` or `[1]`.

        Returns:
            A new error whose `field` starts with `outer`.
        """
        joined = self.field if self.field.startswith("[") else "." + self.field
        return UnexpectedValue(outer + joined, self.value, self.expected)


def shown(value: Any) -> str:
    """The value as JSON writes it (`true`, `null`), cut to 80 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Wrong(Exception):
    """Raised by a field parser; `from_json` turns it into `UnexpectedValue`."""


def _expects(what: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def mark(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
        parse.expected = what  # type: ignore[attr-defined]
        return parse

    return mark


@_expects("text or null")
def _text(value: Any) -> Any:
    if value is None or type(value) is str:
        return value
    raise _Wrong


@_expects("text")
def _required_text(value: Any) -> Any:
    if type(value) is str:
        return value
    raise _Wrong


@_expects("true, false or null")
def _flag(value: Any) -> Any:
    if value is None or type(value) is bool:
        return value
    raise _Wrong


@_expects("a whole number within 64 bits, or null")
def _whole(value: Any) -> Any:
    if value is None or (type(value) is int and INT64_MIN <= value <= INT64_MAX):
        return value
    if type(value) is float and value.is_integer() and INT64_MIN <= value <= INT64_MAX:
        return int(value)
    raise _Wrong


@_expects("a number within 64 bits, or null")
def _number(value: Any) -> Any:
    if value is None or (type(value) is int and INT64_MIN <= value <= INT64_MAX):
        return value
    # 1e308 is finite but no Int64 column or sum of credits holds it: refused here, where
    # the route is known, rather than overflowing later in a frame.
    if type(value) is float and math.isfinite(value) and INT64_MIN <= value <= INT64_MAX:
        return value
    raise _Wrong


@_expects("an ISO 8601 time or null")
def _iso_time(value: Any) -> Any:
    if value is None or type(value) is str:
        return parse_time(value)
    raise _Wrong


@_expects("milliseconds since 1970 or null")
def _millis(value: Any) -> Any:
    if value is None or type(value) in (int, float):
        return parse_millis(_number(value))
    raise _Wrong


@_expects("a list of texts")
def _texts(value: Any) -> Any:
    if type(value) is list and all(type(item) is str for item in value):
        return value
    raise _Wrong


def _any(value: Any) -> Any:
    return value


# Each annotation a resource field has, and how its JSON value is read.
_BY_TYPE: dict[str, Callable[[Any], Any]] = {
    "str": _required_text,
    "str | None": _text,
    "Literal['comic', 'novel'] | None": _text,  # a kind not known here is kept as sent
    "bool | None": _flag,
    "int | None": _whole,
    "float | None": _number,
    "list[str]": _texts,
    "Any": _any,
}


def camel(name: str) -> str:
    """The service's JSON name of a snake_case attribute name.

    Args:
        name: An attribute name, e.g. `credits_spent`.

    Returns:
        The camelCase name, e.g. `creditsSpent`.
    """
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _time() -> Any:
    return field(default=None, metadata={"parse": _iso_time})


def _nested(cls: type[Resource], *, many: bool = True) -> Any:
    @_expects("a list of objects" if many else "an object or null")
    def parse(value: Any) -> Any:
        if many and type(value) is list:
            found = []
            for number, item in enumerate(value):
                if not isinstance(item, Mapping):
                    raise UnexpectedValue(f"[{number}]", item, "an object")
                try:
                    found.append(cls.from_json(item))
                except UnexpectedValue as inner:
                    raise inner.under(f"[{number}]") from None
            return found
        if not many and (value is None or isinstance(value, Mapping)):
            return None if value is None else cls.from_json(value)
        raise _Wrong

    return field(default_factory=list if many else lambda: None, metadata={"parse": parse})


@dataclass(frozen=True)
class Resource:
    """Base of every resource: a frozen dataclass with the original JSON in `.raw`.

    Attributes:
        raw: The JSON object as the service sent it, unknown fields included.
    """

    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    _renames: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def from_json(cls: type[R], raw: Mapping[str, Any]) -> R:
        """The resource from the service's JSON.

        Args:
            raw: The JSON object; a field this class does not know is only kept in
                `.raw`, one it knows but is left out reads None.

        Returns:
            The resource.

        Raises:
            UnexpectedValue: A known field's value is not of the type the spec gives.
        """
        values: dict[str, Any] = {"raw": dict(raw)}
        for name, key, parse in _plan(cls):
            if key in raw:
                value = raw[key]
                try:
                    values[name] = parse(value)
                except UnexpectedValue as inner:
                    raise inner.under(key) from None
                except (_Wrong, ValueError, OverflowError):
                    expected = getattr(parse, "expected", "what the spec describes")
                    raise UnexpectedValue(key, value, expected) from None
        return cls(**values)


_FieldPlan = tuple[tuple[str, str, Callable[[Any], Any]], ...]
_PLANS: dict[type, _FieldPlan] = {}


def _plan(cls: type[Resource]) -> _FieldPlan:
    """Each field's name, JSON key and parser, worked out once per class: a pull parses
    some 100,000 resources, and deriving the keys anew each time cost a tenth of it."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple(
            (
                f.name,
                cls._renames.get(f.name, camel(f.name)),
                f.metadata.get("parse") or _BY_TYPE[str(f.type)],
            )
            for f in fields(cls)
            if f.name != "raw"
        )
    return plan


@dataclass(frozen=True)
class TargetLanguage(Resource):
    """A language every chapter of a project is translated into (on the project list).

    Attributes:
        project_id: The project's id.
        language_code: The language, e.g. `fr`.
        added_at: When the language was added to the project.
    """

    project_id: str | None = None
    language_code: str | None = None
    added_at: datetime | None = _time()


@dataclass(frozen=True)
class Project(Resource):
    """A project; `target_languages`, `chapter_count` and `last_chapter_at` come on lists only.

    Attributes:
        id: The project's id, used in the chapter calls.
        name: The project's name.
        kind: "comic" (page images) or "novel" (text); another kind is kept as sent.
        source_language: The language chapters are written in, a two-letter code.
        reading_direction: "ltr", "rtl" or "vertical".
        process_steps: How far a page is taken: "text", "translate", "clean" or "full".
        translation_model: The model that translates; None for the default.
        created_at: When the project was made.
        translation_group_id: The translation group, as sent.
        series_profile: What the translation is told about the series, as sent.
        cover_key: The cover image's name, as sent (the API does not serve the image).
        deleted_at: When the project went to the trash; None for a listed project.
        target_languages: The languages every chapter is translated into.
        chapter_count: The chapters not in the trash.
        last_chapter_at: When the newest chapter was made (sent in milliseconds).
    """

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
    last_chapter_at: datetime | None = field(default=None, metadata={"parse": _millis})

    @property
    def language_codes(self) -> list[str]:
        """The codes of the target languages, in the service's order."""
        return [t.language_code for t in self.target_languages if t.language_code]


@dataclass(frozen=True)
class Page(Resource):
    """A page of a chapter.

    Attributes:
        id: The page's id (`Client.start_chapter` takes it).
        chapter_id: The chapter's id.
        position: The page's number in the chapter.
        created_at: When the page was added.
        source_image_key: Where the service stored the uploaded image; on the add-pages
            answer only, read from the field whose name carries a storage vendor's word.
    """

    id: str = ""
    chapter_id: str | None = None
    position: int | None = None
    created_at: datetime | None = _time()
    source_image_key: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Page:
        """The page from the service's JSON, its storage key matched by shape.

        Args:
            raw: The JSON object.

        Returns:
            The page.

        Raises:
            UnexpectedValue: A known field's value is not of the type the spec gives.
        """
        page = super().from_json(raw)
        # The storage key's name carries a vendor word; match it by shape.
        key = next((raw[k] for k in raw if _STORAGE_KEY.match(k)), None)
        return page if key is None else replace(page, source_image_key=key)


@dataclass(frozen=True)
class LanguageProgress(Resource):
    """One target language of a chapter on the chapter list.

    Attributes:
        language_code: The language.
        status: "translating", "needs_review" or "reviewed"; a status the toolkit does
            not know is kept as sent.
        covered: The lines translated.
        failed: The language's run failed.
        exporting: The language's file is being packaged.
        models: The models that translated it.
    """

    language_code: str = ""
    status: str | None = None  # one of STATUS_ORDER, or a new one kept as sent
    covered: int | None = None
    failed: bool | None = None
    exporting: bool | None = None
    models: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LanguageDetail(Resource):
    """One target language of a chapter on the chapter detail.

    Attributes:
        language_code: The language.
        status: "translating", "needs_review" or "reviewed"; a status the toolkit does
            not know is kept as sent.
        untranslated: The lines still untranslated.
    """

    language_code: str = ""
    status: str | None = None  # one of STATUS_ORDER, or a new one kept as sent
    untranslated: int | None = None


@dataclass(frozen=True)
class PreparedExport(Resource):
    """A file of a chapter ready to download (on the chapter list).

    Attributes:
        language_code: The language of the file.
        format: One of "cbz", "zip", "psd", "clean", "txt", "docx", "source".
        filename: The file's name.
        byte_size: The file's size in bytes.
        page_count: The pages in the file.
        prepared_at: When the file was prepared.
    """

    language_code: str | None = None
    format: str | None = None
    filename: str | None = None
    byte_size: int | None = None
    page_count: int | None = None
    prepared_at: datetime | None = _time()


@dataclass(frozen=True)
class Chapter(Resource):
    """The chapter base shape, which every chapter answer has.

    Attributes:
        id: The chapter's id.
        project_id: The project's id.
        position: The chapter's number, 1 or more.
        title: The title, if any.
        summary: What happens in the chapter, written by the translation; None until
            then.
        created_at: When the chapter was made.
    """

    id: str = ""
    project_id: str | None = None
    position: int | None = None
    title: str | None = None
    summary: str | None = None
    created_at: datetime | None = _time()


@dataclass(frozen=True)
class NewChapter(Chapter):
    """The create answer: the base shape plus its pages.

    Attributes:
        assigned_user_id: The user the chapter is assigned to, as sent.
        created_by_user_id: The user who made it, as sent.
        deleted_at: When it went to the trash; None for a new chapter.
        pages: The pages uploaded; empty for a staged or novel chapter.
    """

    assigned_user_id: str | None = None
    created_by_user_id: str | None = None
    deleted_at: datetime | None = _time()
    pages: list[Page] = _nested(Page)


@dataclass(frozen=True)
class ChapterListItem(Chapter):
    """A chapter on its project's chapter list.

    Attributes:
        page_count: The pages in the chapter.
        started: False for a staged chapter never started.
        processing: Something runs on the chapter (reading, translating, packaging).
        failed: A run failed or stalled; true until the chapter is re-scanned.
        failure_reason: Why, in a sentence.
        status: "translating", "needs_review" or "reviewed"; a status the toolkit does
            not know is kept as sent.
        languages: The progress of each target language.
        prepared_exports: The files ready to download.
        credits_spent: What the chapter has cost so far.
        last_activity_at: When anything last happened to the chapter.
    """

    page_count: int | None = None
    started: bool | None = None
    processing: bool | None = None
    failed: bool | None = None
    failure_reason: str | None = None
    status: str | None = None  # one of STATUS_ORDER, or a new one kept as sent
    languages: list[LanguageProgress] = _nested(LanguageProgress)
    prepared_exports: list[PreparedExport] = _nested(PreparedExport)
    credits_spent: float | None = None
    last_activity_at: datetime | None = _time()


@dataclass(frozen=True)
class ChapterDetail(Chapter):
    """A chapter as `Client.get_chapter` answers.

    Attributes:
        page_count: The pages in the chapter.
        processing: Something runs on the chapter (reading, translating, packaging).
        detecting: Pages are being read, before any language starts.
        failed: A run failed or stalled; true until the chapter is re-scanned, and it
            can be true while `processing` is too.
        failure_reason: Why, in a sentence (e.g. that the run stalled).
        status: "translating", "needs_review" or "reviewed"; a status the toolkit does
            not know is kept as sent.
        languages: Each target language with its untranslated lines.
        project: The chapter's project.
        assignee: The chapter's assignee, as sent.
    """

    page_count: int | None = None
    processing: bool | None = None
    detecting: bool | None = None
    failed: bool | None = None
    failure_reason: str | None = None
    status: str | None = None  # one of STATUS_ORDER, or a new one kept as sent
    languages: list[LanguageDetail] = _nested(LanguageDetail)
    project: Project | None = _nested(Project, many=False)
    assignee: Any = None

    @property
    def untranslated(self) -> int:
        """Lines still untranslated over every language."""
        return sum(lang.untranslated or 0 for lang in self.languages)


@dataclass(frozen=True)
class AddedPages(Resource):
    """The add-pages answer.

    Attributes:
        chapter_id: The chapter's id.
        pages: The pages added, with their storage keys.
    """

    chapter_id: str = ""
    pages: list[Page] = _nested(Page)


@dataclass(frozen=True)
class StartResult(Resource):
    """The start answer.

    Attributes:
        chapter_id: The chapter's id.
        page_count: The pages started.
    """

    chapter_id: str | None = None
    page_count: int | None = None


@dataclass(frozen=True)
class RescanResult(Resource):
    """The re-scan answer, once the run is queued.

    Attributes:
        queued: The run was queued.
        cleared_regions: The lines cleared (every translation is discarded).
    """

    queued: bool | None = None
    cleared_regions: int | None = None
