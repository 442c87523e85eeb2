"""A synthetic workspace that changes hour by hour, for the history benchmark.

No service is involved: the history benchmark measures the store, so the workspace is
made in memory and each hour's snapshot is handed to `SnapshotStore.write`, the same
write path `take` uses after its pull. The workspace is shaped like a busy team's:

- `chapters` chapters spread over `projects` projects, each translated into the same
  target languages; a project's `processSteps` (cycled over `translate`, `clean`,
  `full`) decides how many prepared files a chapter has per language (1, 2 or 3);
- each hour a share `change_share` of the chapters (drawn at random) moves: most get
  new pages that run (pages, credits and covered lines rise, files are prepared again;
  a chapter stops growing at `MAX_PAGES` pages);
  one in twenty is re-scanned instead (credits rise by a whole run, covered restarts
  from the new pages' lines), one in fifty fails, and some are reviewed.

Every column a change touches gets a fresh array and every other column is shared with
the hour before, so making an hour costs little next to writing it. The generator is
seeded: the same arguments give the same year.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.frames import Workspace, schema
from toolkit.frames.states import states

STEPS = ("translate", "clean", "full")
FILES_PER_STEP = {"translate": ("txt",), "clean": ("txt", "clean"), "full": ("txt", "clean", "cbz")}
SUFFIXES = {"txt": ".txt", "clean": "-clean.zip", "cbz": ".cbz"}
PRICE = 1  # credits per page per target language, as the emulator charges
RESCAN_SHARE = 0.05
FAIL_SHARE = 0.02
REVIEW_SHARE = 0.2
LINES_PER_PAGE = (3, 15)
MAX_PAGES = 40
MODEL = "cts-emulator-mt-1"
US = 1_000_000


@dataclass(frozen=True)
class Hour:
    """One generated hour: the workspace, when, and how many chapters changed."""

    at: datetime
    workspace: Workspace
    changed: int


class SyntheticWorkspace:
    """`chapters` chapters in `projects` projects with `languages` targets each."""

    def __init__(
        self,
        *,
        chapters: int = 10_000,
        projects: int = 100,
        languages: tuple[str, ...] = ("en", "fr", "es"),
        change_share: float = 0.02,
        start: datetime,
        seed: int = 7,
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.languages = languages
        self.change_share = change_share
        self.now = start
        n, width = chapters, len(languages)
        self.n = n
        project_of = np.arange(n) % projects
        self.project_ids = np.array([f"p{p:04d}-{seed:02d}" for p in range(projects)], object)
        self.steps = np.array([STEPS[p % len(STEPS)] for p in range(projects)], object)
        self.chapter_ids = np.array([f"c{c:06d}-{seed:02d}" for c in range(n)], object)
        self.project_of = project_of
        self.position = np.arange(n) // projects + 1
        created = _micros(start) - self.rng.integers(1, 365 * 24 * 3600, n) * US
        self.created = np.sort(created)[self.rng.permutation(n)]
        self.pages = self.rng.integers(8, 25, n)
        self.lines_per_page = self.rng.integers(*LINES_PER_PAGE, n)
        self.credits = self.pages * width * PRICE
        self.activity = self.created + self.rng.integers(1, 3600, n) * US
        self.failed = np.zeros(n, bool)
        self.reason = np.full(n, None, object)
        # Per chapter and language: status code (0 translating, 1 needs_review,
        # 2 reviewed) and lines covered; every seeded chapter has finished its run.
        self.status = np.where(self.rng.random((n, width)) < 0.5, 2, 1)
        self.covered = np.repeat((self.pages * self.lines_per_page)[:, None], width, axis=1)
        self.prepared = np.repeat(self.activity[:, None], width, axis=1)
        # Ground truth for the analysis: what was spent and translated after hour 0.
        self.credits_added = 0
        self.lines_added = 0
        self.lines_unseen = 0
        self._static = self._static_columns()

    # -- one hour ----------------------------------------------------------------------

    def advance(self, hours: float = 1.0) -> Hour:
        """Move `change_share` of the chapters and return the workspace as it now is."""
        self.now += timedelta(hours=hours)
        now = _micros(self.now)
        moved = self.rng.choice(self.n, size=round(self.n * self.change_share), replace=False)
        draw = self.rng.random(len(moved))
        rescan = moved[draw < RESCAN_SHARE]
        grow = moved[draw >= RESCAN_SHARE]
        fail = moved[(draw >= RESCAN_SHARE) & (draw < RESCAN_SHARE + FAIL_SHARE)]
        review = moved[draw > 1 - REVIEW_SHARE]
        width = len(self.languages)
        # A re-scan that ends with the same lines, status and flags leaves its language
        # rows as they were: snapshots an hour apart cannot see it in those rows.
        unseen = (self.status[rescan] == 1) & ~self.failed[rescan][:, None]

        self.pages = self.pages.copy()
        self.credits = self.credits.copy()
        self.covered = self.covered.copy()
        self.status = self.status.copy()
        self.failed = self.failed.copy()
        self.reason = self.reason.copy()
        self.activity = self.activity.copy()
        self.prepared = self.prepared.copy()

        # New pages arrive until a chapter has MAX_PAGES; past that, a change is the rest
        # of a run's traces (status, files prepared again) without new pages.
        added = self.rng.integers(1, 5, len(grow)) * (self.pages[grow] < MAX_PAGES)
        self.pages[grow] += added
        self.credits[grow] += added * width * PRICE
        self.covered[grow] += (added * self.lines_per_page[grow])[:, None]
        self.status[grow] = 1
        # A re-scan pays for every page again and starts the count over.
        self.credits[rescan] += self.pages[rescan] * width * PRICE
        self.covered[rescan] = (self.pages[rescan] * self.lines_per_page[rescan])[:, None]
        self.status[rescan] = 1
        self.failed[rescan] = False
        self.reason[rescan] = None
        self.failed[fail] = True
        self.reason[fail] = "The run failed while translating page 2 into fr; re-scan it."
        self.status[review] = 2
        self.credits_added += int(
            ((added * width).sum() + (self.pages[rescan] * width).sum()) * PRICE
        )
        self.lines_unseen += int((self.covered[rescan] * unseen).sum())
        self.lines_added += int(
            (added * self.lines_per_page[grow]).sum() * width + self.covered[rescan].sum()
        )
        self.activity[moved] = now
        self.prepared[moved] = now
        return Hour(self.now, self.workspace(), len(moved))

    # -- tables ------------------------------------------------------------------------

    def workspace(self) -> Workspace:
        return Workspace(
            projects=self._projects(),
            chapters=self._chapters(),
            languages=self._languages(),
            exports=self._exports(),
            pulled_at=self.now,
            details="changed",
        )

    def _static_columns(self) -> dict[str, object]:
        width = len(self.languages)
        files = [FILES_PER_STEP[s] for s in self.steps[self.project_of]]
        counts = np.array([len(f) for f in files])
        per_chapter = counts * width
        export_chapter = np.repeat(np.arange(self.n), per_chapter)
        export_language = np.concatenate([np.repeat(np.arange(width), c) for c in counts]).astype(
            int
        )
        export_format = np.array(
            [fmt for f in files for _ in range(width) for fmt in f], dtype=object
        )
        stems = np.array(
            [f"{p}-ch{pos:03d}" for p, pos in zip(self.project_of, self.position, strict=True)],
            object,
        )
        names = [
            f"{stems[c]}-{self.languages[lang]}{SUFFIXES[fmt]}"
            for c, lang, fmt in zip(export_chapter, export_language, export_format, strict=True)
        ]
        return {
            "export_chapter": export_chapter,
            "export_language": export_language,
            "export_format": _text(export_format),
            "export_filename": _text(np.array(names, object)),
            "export_chapter_id": _text(self.chapter_ids[export_chapter]),
            "export_project_id": _text(self.project_ids[self.project_of[export_chapter]]),
            "export_language_code": _text(np.array(self.languages, object)[export_language]),
            "chapter_id": _text(self.chapter_ids),
            "project_id": _text(self.project_ids[self.project_of]),
            "title": _text(np.array([f"Chapter {p}" for p in self.position], object)),
            "lang_chapter_id": _text(np.repeat(self.chapter_ids, width)),
            "lang_project_id": _text(np.repeat(self.project_ids[self.project_of], width)),
            "lang_code": _text(np.tile(np.array(self.languages, object), self.n)),
            "models": pd.array(
                pa.array([[MODEL]] * (self.n * width), schema.TEXT_LIST),
                dtype=pd.ArrowDtype(schema.TEXT_LIST),
            ),
        }

    def _projects(self) -> pd.DataFrame:
        counts = np.bincount(self.project_of, minlength=len(self.project_ids))
        newest = np.zeros(len(self.project_ids), np.int64)
        np.maximum.at(newest, self.project_of, self.created)
        first = np.full(len(self.project_ids), np.iinfo(np.int64).max)
        np.minimum.at(first, self.project_of, self.created)
        table = pa.table(
            {
                "project_id": self.project_ids,
                "name": [f"Series {i}" for i in range(len(self.project_ids))],
                "kind": ["comic"] * len(self.project_ids),
                "source_language": ["ja"] * len(self.project_ids),
                "reading_direction": ["rtl"] * len(self.project_ids),
                "process_steps": self.steps,
                "translation_model": pa.nulls(len(self.project_ids), pa.string()),
                "target_languages": [list(self.languages)] * len(self.project_ids),
                "chapter_count": counts,
                "last_chapter_at": pa.array(newest, schema.TIME),
                "created_at": pa.array(first - 24 * 3600 * US, schema.TIME),
            }
        )
        return schema.to_pandas(table, schema.PROJECTS)

    def _chapters(self) -> pd.DataFrame:
        s = self._static
        worst = self.status.min(axis=1)
        frame = pd.DataFrame(
            {
                "chapter_id": s["chapter_id"],
                "project_id": s["project_id"],
                "position": pd.array(self.position, "Int64"),
                "title": s["title"],
                "summary": pd.array([None] * self.n, pd.StringDtype()),
                "page_count": pd.array(self.pages, "Int64"),
                "started": pd.array(np.ones(self.n, bool), "boolean"),
                "processing": pd.array(np.zeros(self.n, bool), "boolean"),
                "failed": pd.array(self.failed, "boolean"),
                "failure_reason": pd.array(self.reason, pd.StringDtype()),
                "status": _status(worst),
                "credits_spent": pd.array(self.credits, "Int64"),
                "last_activity_at": _times(self.activity),
                "created_at": _times(self.created),
            }
        )
        # `state`, as a pull works it out (toolkit.frames.states), so the store's write
        # is timed on the frames a take hands it, not deriving the column itself.
        idle = np.zeros(self.n, bool)
        reasons = frame["failure_reason"].astype(object)
        reasons = np.asarray(reasons.where(reasons.notna(), None))
        status = np.asarray(frame["status"].astype(object))
        state = states(~idle, idle, np.asarray(self.failed, bool), reasons, status, idle, idle)
        return frame.assign(state=pd.array(state, pd.StringDtype()))

    def _languages(self) -> pd.DataFrame:
        s = self._static
        return pd.DataFrame(
            {
                "chapter_id": s["lang_chapter_id"],
                "project_id": s["lang_project_id"],
                "language_code": s["lang_code"],
                "status": _status(self.status.ravel()),
                "covered": pd.array(self.covered.ravel(), "Int64"),
                "untranslated": pd.array(np.zeros(self.covered.size, np.int64), "Int64"),
                "failed": pd.array(np.repeat(self.failed, len(self.languages)), "boolean"),
                "exporting": pd.array(np.zeros(self.covered.size, bool), "boolean"),
                "models": s["models"],
            }
        )

    def _exports(self) -> pd.DataFrame:
        s = self._static
        chapter, language = s["export_chapter"], s["export_language"]
        lines = self.covered[chapter, language]
        pages = self.pages[chapter]
        return pd.DataFrame(
            {
                "chapter_id": s["export_chapter_id"],
                "project_id": s["export_project_id"],
                "language_code": s["export_language_code"],
                "format": s["export_format"],
                "filename": s["export_filename"],
                "byte_size": pd.array(128 + 64 * lines + 180_000 * pages, "Int64"),
                "page_count": pd.array(pages, "Int64"),
                "prepared_at": _times(self.prepared[chapter, language]),
            }
        )


def _micros(when: datetime) -> int:
    return int(when.timestamp() * US)


def _text(values: np.ndarray) -> pd.api.extensions.ExtensionArray:
    return pd.array(values, pd.StringDtype())


def _times(micros: np.ndarray) -> pd.DatetimeIndex:
    return pd.to_datetime(micros, unit="us", utc=True).as_unit("us")


def _status(codes: np.ndarray) -> pd.Categorical:
    return pd.Categorical.from_codes(codes, dtype=schema.STATUS_DTYPE)
