"""The service's resources as pandas DataFrames: one row per project, chapter, language or
prepared file, with the columns and dtypes `toolkit.frames.schema` fixes.

Past 400 lines on purpose: each table's `*_rows` and `*_frame` sit beside `pull`, which
fetches them all at once; the fetching itself is apart (`fetcher`, `pacing`).

```python
ws = tk.pull(client)                  # all four tables, concurrent requests
ws.chapters.groupby("status", observed=True).size()
```

The `*_rows` functions build Arrow from resources already fetched (no I/O); the
`*_frame` functions and `pull` fetch first. Decisions: docs/frames.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.errors import UnexpectedAnswer
from toolkit.frames import schema
from toolkit.frames.fetcher import DEFAULT_DEADLINE, Fetcher
from toolkit.frames.states import chapter_states
from toolkit.models import STATUS_ORDER

if TYPE_CHECKING:
    from toolkit.client import Client
    from toolkit.models import ChapterDetail, ChapterListItem, Project

__all__ = [
    "Details",
    "UnknownStatus",
    "Workspace",
    "chapter_rows",
    "chapters_frame",
    "export_rows",
    "exports_frame",
    "language_rows",
    "languages_frame",
    "project_group_rows",
    "project_id_list",
    "project_rows",
    "projects_frame",
    "pull",
]

Details = Literal["none", "all", "changed"]
_DETAILS: tuple[str, ...] = ("none", "all", "changed")


@dataclass(frozen=True)
class Workspace:
    """One pull of a workspace: the four tables, and how the pull went.

    Attributes:
        projects: One row per project (`schema.PROJECTS`).
        chapters: One row per chapter (`schema.CHAPTERS`).
        languages: One row per chapter and target language (`schema.LANGUAGES`).
        exports: One row per prepared file (`schema.EXPORTS`).
        pulled_at: The service's clock at the first answer; None when the client did
            not report it.
        requests: The requests made, retries included.
        seconds: How long the pull took.
        details: Which chapter details were read for `untranslated`: "all", "changed"
            or "none".
        project_groups: Each project's `translationGroupId` (`schema.PROJECT_GROUPS`);
            None when not read (a workspace built by hand): a snapshot of it then
            records no group, never a guessed one.
    """

    projects: pd.DataFrame
    chapters: pd.DataFrame
    languages: pd.DataFrame
    exports: pd.DataFrame
    pulled_at: datetime | None = None
    requests: int = 0
    seconds: float = 0.0
    details: str = "none"
    project_groups: pd.DataFrame | None = None

    def table(self, name: str) -> pd.DataFrame:
        """One of the four tables by name.

        Args:
            name: "projects", "chapters", "languages", "exports" or
                "project_groups".

        Returns:
            The table's frame (not a copy); no rows for groups that were not read.

        Raises:
            ValueError: A workspace has no table of that name.
        """
        if name not in schema.SNAPSHOT_TABLES:
            raise ValueError(
                f"a workspace has no table {name!r}; it has {', '.join(schema.SNAPSHOT_TABLES)}"
            )
        frame: pd.DataFrame | None = getattr(self, name)
        if frame is None:  # the groups were not read: none on record
            return schema.empty_frame(schema.SNAPSHOT_TABLES[name])
        return frame

    def __repr__(self) -> str:
        sizes = ", ".join(f"{len(self.table(name))} {name}" for name in schema.SNAPSHOT_TABLES)
        return f"<Workspace {sizes}; {self.requests} requests in {self.seconds:.1f} s>"

    def _repr_html_(self) -> str:
        from toolkit.formatting import card, count, moment

        rows = {name: count(len(self.table(name)), "row") for name in schema.SNAPSHOT_TABLES}
        rows["pulled at"] = moment(self.pulled_at) or "unknown"
        rows["requests"] = f"{self.requests:,} in {self.seconds:.1f} s (details={self.details})"
        return card("Workspace", rows)


def _whole_count(value: Any, field: str, route: str) -> int | None:
    """The count as an int; `UnexpectedAnswer` naming the field for a fraction (12.7 credits),
    which the Int64 columns cannot hold and rounding would make up."""
    if value is None:
        return None
    if isinstance(value, float) and not value.is_integer():
        advice = "report the answer: the toolkit stores it as a whole number and will not round"
        raise UnexpectedAnswer(
            f"{route} answered with {field} {value}, not a whole number; {advice}",
            route=route,
            field=field,
            value=value,
            status=200,
            reason=f"the service sent {field} {value}, not a whole number",
            advice=advice,
        )
    return int(value)


def _chapters_route(item: ChapterListItem) -> str:
    return f"GET /projects/{item.project_id}/chapters"


def _refuse_repeated_chapters(items: Iterable[ChapterListItem]) -> None:
    """`UnexpectedAnswer` when two project lists both hold one chapter: one row each would
    count it twice. (A repeat within one list is refused by the client already.)"""
    seen: dict[str, ChapterListItem] = {}
    for item in items:
        first = seen.setdefault(item.id, item)
        if first is not item:
            routes = f"{_chapters_route(first)} and {_chapters_route(item)}"
            what = f"chapter {item.id} is listed by both {routes}"
            advice = "nothing was taken; try again later, and report the answers if it repeats"
            raise UnexpectedAnswer(
                f"the service's answers contradict each other: {what}; {advice}",
                route=_chapters_route(item),
                field="id",
                value=item.id,
                status=200,
                reason=f"the service's answers contradict each other ({what})",
                advice=advice,
            )


class UnknownStatus(UserWarning):
    """The service sent a chapter or language status this toolkit does not know; it is
    kept as sent and counted as not done."""


def _warn_of_unknown_statuses(*tables: pa.Table) -> None:
    """One warning for every status the toolkit does not know in `tables`, if any."""
    seen = set()
    for table in tables:
        seen |= set(pc.unique(table.column("status")).drop_null().to_pylist())
    unknown = sorted(seen - set(STATUS_ORDER))
    if unknown:
        warnings.warn(
            UnknownStatus(
                f"the service sent a status this toolkit does not know: "
                f"{', '.join(map(repr, unknown))}; it is kept as sent and counted as not done "
                "(neither needs_review nor reviewed). A newer toolkit may know what it means."
            ),
            stacklevel=3,
        )


def project_rows(projects: Iterable[Project]) -> pa.Table:
    """Projects as an Arrow table of `schema.PROJECTS`, without a request.

    Args:
        projects: Projects from the project list (`Client.list_projects`).

    Returns:
        One row per project.

    Raises:
        UnexpectedAnswer: A count the service sent is not a whole number.
    """
    rows = [
        {
            "project_id": p.id,
            "name": p.name,
            "kind": p.kind,
            "source_language": p.source_language,
            "reading_direction": p.reading_direction,
            "process_steps": p.process_steps,
            "translation_model": p.translation_model,
            "target_languages": p.language_codes if "targetLanguages" in p.raw else None,
            "chapter_count": _whole_count(p.chapter_count, "chapterCount", "GET /projects"),
            "last_chapter_at": p.last_chapter_at,
            "created_at": p.created_at,
        }
        for p in projects
    ]
    return schema.from_rows(rows, schema.PROJECTS)


def project_group_rows(projects: Iterable[Project]) -> pa.Table:
    """Each project's translation group as an Arrow table of `schema.PROJECT_GROUPS`,
    without a request: a row per project, null where the service sent no group.

    Args:
        projects: Projects from the project list (`Client.list_projects`).

    Returns:
        One row per project.
    """
    rows = [
        {"project_id": p.id, "translation_group_id": _group(p.translation_group_id)}
        for p in projects
    ]
    return schema.from_rows(rows, schema.PROJECT_GROUPS)


def _group(value: Any) -> str | None:
    """The group as text (the spec does not type it beyond "string"); null stays null."""
    return None if value is None else str(value)


def chapter_rows(
    items: Iterable[ChapterListItem], chapter_details: Mapping[str, ChapterDetail] | None = None
) -> pa.Table:
    """Chapter list items as an Arrow table of `schema.CHAPTERS`, without a request.

    Args:
        items: Chapters from chapter lists (`Client.list_chapters`).
        chapter_details: Chapter details by chapter id, for the chapters that have one: only a
            detail tells reading pages and cleaning apart from translating in `state`.

    Returns:
        One row per chapter.

    Raises:
        UnexpectedAnswer: A count the service sent is not a whole number.
    """
    items = list(items)
    rows = [
        {
            "chapter_id": c.id,
            "project_id": c.project_id,
            "position": _whole_count(c.position, "position", _chapters_route(c)),
            "title": c.title,
            "summary": c.summary,
            "page_count": _whole_count(c.page_count, "pageCount", _chapters_route(c)),
            "started": c.started,
            "processing": c.processing,
            "failed": c.failed,
            "failure_reason": c.failure_reason,
            "status": c.status,
            "credits_spent": _whole_count(
                c.credits_spent, f"creditsSpent of chapter {c.id}", _chapters_route(c)
            ),
            "last_activity_at": c.last_activity_at,
            "created_at": c.created_at,
            "state": state,
        }
        for c, state in zip(items, chapter_states(items, chapter_details), strict=True)
    ]
    return schema.from_rows(rows, schema.CHAPTERS)


def language_rows(
    items: Iterable[ChapterListItem],
    chapter_details: Mapping[str, ChapterDetail] | None = None,
    carried: Mapping[tuple[str, str], int | None] | None = None,
) -> pa.Table:
    """One row per chapter and target language, as an Arrow table of `schema.LANGUAGES`.

    Args:
        items: Chapters from chapter lists (`Client.list_chapters`).
        chapter_details: Chapter details by chapter id; a chapter's detail gives its
            `untranslated` counts.
        carried: Untranslated counts by (chapter id, language code), used for the
            chapters without a detail (e.g. from an earlier pull); null otherwise.

    Returns:
        One row per chapter and target language.

    Raises:
        UnexpectedAnswer: A count the service sent is not a whole number.
    """
    chapter_details = chapter_details or {}
    carried = carried or {}
    rows = []
    for c in items:
        detail = chapter_details.get(c.id)
        untranslated = (
            {lang.language_code: lang.untranslated for lang in detail.languages}
            if (detail is not None)
            else None
        )
        for lang in c.languages:
            if untranslated is not None:
                left = untranslated.get(lang.language_code)
            else:
                left = carried.get((c.id, lang.language_code))
            rows.append(
                {
                    "chapter_id": c.id,
                    "project_id": c.project_id,
                    "language_code": lang.language_code,
                    "status": lang.status,
                    "covered": _whole_count(lang.covered, "covered", _chapters_route(c)),
                    "untranslated": _whole_count(left, "untranslated", f"GET /chapters/{c.id}"),
                    "failed": lang.failed,
                    "exporting": lang.exporting,
                    "models": list(lang.models) if "models" in lang.raw else None,
                }
            )
    return schema.from_rows(rows, schema.LANGUAGES)


def export_rows(items: Iterable[ChapterListItem]) -> pa.Table:
    """One row per prepared file, as an Arrow table of `schema.EXPORTS`.

    Args:
        items: Chapters from chapter lists (`Client.list_chapters`), whose prepared
            files are read.

    Returns:
        One row per prepared file of those chapters.
    """
    rows = [
        {
            "chapter_id": c.id,
            "project_id": c.project_id,
            "language_code": e.language_code,
            "format": e.format,
            "filename": e.filename,
            "byte_size": _whole_count(e.byte_size, "byteSize", _chapters_route(c)),
            "page_count": _whole_count(e.page_count, "pageCount", _chapters_route(c)),
            "prepared_at": e.prepared_at,
        }
        for c in items
        for e in c.prepared_exports
    ]
    return schema.from_rows(rows, schema.EXPORTS)


def projects_frame(client: Client) -> pd.DataFrame:
    """One row per project of the workspace (`schema.PROJECTS`).

    Args:
        client: The client to ask.

    Returns:
        The projects, one request.
    """
    return schema.to_pandas(project_rows(client.list_projects()), schema.PROJECTS)


def chapters_frame(
    client: Client, project_ids: Sequence[str] | None = None, *, concurrency: int | None = None
) -> pd.DataFrame:
    """One row per chapter of the given projects, or of every project (`schema.CHAPTERS`).

    The details of the chapters that are running are read too (one request each): only
    they tell reading pages and cleaning apart from translating in `state`.

    Args:
        client: The client to ask.
        project_ids: The projects (a list of ids); by default every project.
        concurrency: Requests in flight; by default it adapts to how the service
            answers.

    Returns:
        The chapters, project by project.

    Raises:
        TypeError: `project_ids` is one id as a string.
        IncompletePull: Some requests still failed when the deadline came.
    """
    with Fetcher(client, concurrency=concurrency) as fetcher:
        items = _chapter_items(fetcher, project_ids)
        found = fetcher.chapter_details([c.id for c in items if c.processing])
    chapters = chapter_rows(items, found)
    _warn_of_unknown_statuses(chapters)
    return schema.to_pandas(chapters, schema.CHAPTERS)


def languages_frame(
    client: Client,
    project_ids: Sequence[str] | None = None,
    details: bool = False,
    *,
    concurrency: int | None = None,
) -> pd.DataFrame:
    """One row per chapter and target language (`schema.LANGUAGES`).

    Args:
        client: The client to ask.
        project_ids: The projects (a list of ids); by default every project.
        details: Read every chapter's detail (one more request per chapter) to fill
            `untranslated`, which is null otherwise.
        concurrency: Requests in flight; by default it adapts to how the service
            answers.

    Returns:
        The chapters' languages, project by project.

    Raises:
        TypeError: `project_ids` is one id as a string.
        IncompletePull: Some requests still failed when the deadline came.
    """
    with Fetcher(client, concurrency=concurrency) as fetcher:
        items = _chapter_items(fetcher, project_ids)
        found = fetcher.chapter_details([c.id for c in items]) if details else None
    languages = language_rows(items, found)
    _warn_of_unknown_statuses(languages)
    return schema.to_pandas(languages, schema.LANGUAGES)


def exports_frame(
    client: Client, project_ids: Sequence[str] | None = None, *, concurrency: int | None = None
) -> pd.DataFrame:
    """One row per prepared file of the given projects' chapters (`schema.EXPORTS`).

    Args:
        client: The client to ask.
        project_ids: The projects (a list of ids); by default every project.
        concurrency: Requests in flight; by default it adapts to how the service
            answers.

    Returns:
        The prepared files.

    Raises:
        TypeError: `project_ids` is one id as a string.
        IncompletePull: Some requests still failed when the deadline came.
    """
    with Fetcher(client, concurrency=concurrency) as fetcher:
        items = _chapter_items(fetcher, project_ids)
    return schema.to_pandas(export_rows(items), schema.EXPORTS)


def project_id_list(project_ids: Sequence[str]) -> list[str]:
    """The ids as a list, refusing one id given as a string (it would be read letter by letter)."""
    if isinstance(project_ids, str):
        raise TypeError(f"project_ids takes a list of ids, not one id; pass [{project_ids!r}]")
    return list(project_ids)


def _chapter_items(fetcher: Fetcher, project_ids: Sequence[str] | None) -> list[ChapterListItem]:
    if project_ids is None:
        project_ids = [p.id for p in fetcher.projects()]
    project_ids = project_id_list(project_ids)
    lists = fetcher.chapters(project_ids)
    items = [item for pid in project_ids for item in lists.get(pid, [])]
    _refuse_repeated_chapters(items)
    return items


def pull(
    client: Client,
    details: Details = "all",
    since: Workspace | None = None,
    *,
    concurrency: int | None = None,
    progress: bool | None = None,
    deadline: float | None = DEFAULT_DEADLINE,
) -> Workspace:
    """Every table of the workspace in one go, with concurrent requests.

    Args:
        client: The client to ask.
        details: "all" reads every chapter's detail for `untranslated`; "none" reads
            none; "changed" reads only chapters that are processing or whose
            `last_activity_at` differs from `since`, carrying the others' counts over.
        since: A previous pull, for `details="changed"` (without it every detail is
            read).
        concurrency: Requests in flight; by default it adapts to how the service
            answers.
        progress: Show a progress bar (tqdm.auto) with the retries; by default shown on
            long pulls.
        deadline: Seconds the pull may take, retries included (requests that fail are
            sent again in further passes until then); None for no limit.

    Returns:
        The four tables, the projects' groups, and how the pull went.

    Raises:
        ValueError: `details` is not one of "all", "changed", "none".
        UnexpectedAnswer: An answer contradicts itself or another (one chapter listed
            twice), or holds a count the frames cannot keep (12.7 credits).
        TypeError: `client` is an `AsyncClient` (pulls take the blocking `Client`).
        IncompletePull: Some requests still failed when the deadline came.
        TransportError: The service answered none of the first requests.
        ApiError: The service refused a request in a way waiting does not change,
            e.g. `AuthenticationError` for a wrong key.
    """
    if details not in _DETAILS:
        raise ValueError(f"details must be one of {', '.join(_DETAILS)}, not {details!r}")
    with Fetcher(client, concurrency=concurrency, progress=progress, deadline=deadline) as fetcher:
        projects = fetcher.projects()
        lists = fetcher.chapters([p.id for p in projects])
        # A project trashed between the two reads is gone from the workspace: drop it too.
        projects = [p for p in projects if p.id in lists]
        items = [item for p in projects for item in lists[p.id]]
        _refuse_repeated_chapters(items)

        carried: dict[tuple[str, str], int | None] = {}
        wanted = [c.id for c in items] if details != "none" else []
        if details == "changed" and since is not None:
            wanted, carried = _changed(items, since)
        found = fetcher.chapter_details(wanted)
    chapters, languages = chapter_rows(items, found), language_rows(items, found, carried)
    _warn_of_unknown_statuses(chapters, languages)  # once per pull, so once per snapshot
    return Workspace(
        projects=schema.to_pandas(project_rows(projects), schema.PROJECTS),
        chapters=schema.to_pandas(chapters, schema.CHAPTERS),
        languages=schema.to_pandas(languages, schema.LANGUAGES),
        exports=schema.to_pandas(export_rows(items), schema.EXPORTS),
        pulled_at=fetcher.pulled_at,
        requests=fetcher.requests,
        seconds=fetcher.seconds,
        details=details,
        project_groups=schema.to_pandas(project_group_rows(projects), schema.PROJECT_GROUPS),
    )


def _changed(
    items: Sequence[ChapterListItem], since: Workspace
) -> tuple[list[str], dict[tuple[str, str], int | None]]:
    """Chapters whose detail must be read, and the counts carried over for the rest."""
    before = dict(
        zip(since.chapters["chapter_id"].tolist(), since.chapters["last_activity_at"], strict=True)
    )
    languages = since.languages
    carried: dict[tuple[str, str], int | None] = {
        (chapter, code): None if left is pd.NA else int(left)
        for chapter, code, left in zip(
            languages["chapter_id"].tolist(),
            languages["language_code"].tolist(),
            languages["untranslated"].tolist(),
            strict=True,
        )
    }
    wanted = []
    for c in items:
        unknown = any(carried.get((c.id, lang.language_code)) is None for lang in c.languages)
        moved = c.id not in before or pd.isna(before[c.id]) or before[c.id] != c.last_activity_at
        if c.processing or moved or unknown:
            wanted.append(c.id)
    return wanted, carried
