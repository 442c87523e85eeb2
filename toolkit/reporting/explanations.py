"""Every headline figure opened down to the rows that make it (`tk.explain`).

```python
rows = tk.explain(store, "rework_credits")             # the period figures() counts
rows = tk.explain(store, "lines", project="Moonlit Harbor", language="fr")
rows["value"].sum() == figures(store).totals["rework_credits"]
```

One row per contribution: the run, charge, snapshot or chapter it comes from
(`source`, `source_id`), the chapter and project, its times, the rule that counted it
(`rule`: the registry's definition, or the reason a chapter needs a person), a
`detail` in words and a `value` whose sum, per project, is the figure `figures` shows
for the same period (docs/figures.md, "Explanations"). Each figure is read from the
same analysis the figure is counted by, never counted a second way: runs that finished
(`cycle_times`), failed and stalled runs (`failures`), each run's charge (the runs
frame: `credits`, `rework`, seen at a snapshot), each chapter-language's lines at each
snapshot (the throughput's own query, not summed), and the chapters at the period's
last snapshot as the forecast sees them (`seen_at`, `is_open`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import numpy as np
import pandas as pd

from toolkit import metrics
from toolkit.analysis import STALL_AFTER, cycle_times, failures
from toolkit.analysis.calendar import sorted_by
from toolkit.analysis.forecast import DONE, is_open, seen_at
from toolkit.analysis.measures import LINES_SQL
from toolkit.analysis.observed import Observed, observe
from toolkit.analysis.runs import all_runs, rescans_seen
from toolkit.analysis.transitions import Transitions
from toolkit.formatting import count
from toolkit.reporting.figures import FIGURES, Period, period

if TYPE_CHECKING:
    from toolkit.store import SnapshotStore

# The figures `explain` opens: the headline figures of a period (reporting/figures.py).
EXPLAINED: Final = FIGURES
# Figures counted per target language: only these take `language=`.
BY_LANGUAGE: Final = ("lines", "open_lines")
COLUMNS: Final = ["figure", "project_id", "project", "chapter_id", "chapter", "language_code",
                  "source", "source_id", "at", "started_at", "finished_at", "rule", "detail",
                  "value"]  # fmt: skip
TEXT = pd.StringDtype()
TIME: Final = "datetime64[us, UTC]"
Reader = Callable[[Observed, Period], pd.DataFrame]


def explain(
    store: SnapshotStore | Observed,
    figure: str,
    *,
    project: str | None = None,
    language: str | None = None,
    since: pd.Timestamp | str | None = None,
    until: pd.Timestamp | str | None = None,
    tz: str = "UTC",
) -> pd.DataFrame:
    """The rows behind one headline figure of a period: one per contribution, whose
    `value` sums to the figure `tk.report` shows for the same period and scope.

    Args:
        store: A store (or its `Observed` view).
        figure: A headline figure's name (`credits`, `rework_credits`, `lines`,
            `chapters_finished`, `runs_failed`, `runs_stalled`, `open_lines`,
            `needs_action`); `tk.glossary()` lists every figure.
        project: Only this project, by id or by name.
        language: Only this target language (`lines` and `open_lines`: the figures
            counted per language).
        since: The period's start, as `figures` takes it (a naive time is read in `tz`);
            by default the midnight seven days before the last snapshot.
        until: The period's end, excluded; by default just after the last snapshot.
        tz: The zone of the period's midnights and of naive bounds.

    Returns:
        `figure, project_id, project, chapter_id, chapter, language_code, source`
        (`run`, `charge`, `snapshot` or `chapter`), `source_id` (the run id; for lines,
        `<chapter_id>/<language>@<snapshot time>`), `at` (when it counted), `started_at`,
        `finished_at`, `rule`, `detail`, `value`; sorted by `at`, then chapter. No rows
        when the period has no data (the figure is then unknown, not 0).

    Raises:
        ValueError: `figure` is not one `explain` opens, `language` was given for a
            figure not counted per language, or `project` names no project.
    """
    if figure not in EXPLAINED:
        what = "a figure explain cannot open yet" if figure in metrics.FIGURES else "no figure"
        raise ValueError(
            f"{figure!r} is {what}; explain opens the headline figures: "
            f"{', '.join(EXPLAINED)} (tk.glossary() says what each counts)"
        )
    if language is not None and figure not in BY_LANGUAGE:
        raise ValueError(
            f"{figure!r} is not counted per language; leave out language=, or explain "
            f"{' or '.join(BY_LANGUAGE)}"
        )
    obs = observe(store)
    when = period(obs, since=since, until=until, tz=tz)
    projects = _project_ids(obs, project)
    rows = _empty() if not when.has_data else _ROWS[figure](obs, when)
    if projects is not None:
        rows = rows[rows["project_id"].isin(projects)]
    if language is not None:
        rows = rows[rows["language_code"] == language]
    rows = rows.reindex(columns=COLUMNS).assign(figure=figure)
    rows["rule"] = rows["rule"].astype(object).fillna(metrics.FIGURES[figure].definition)
    return _shaped(rows, obs)


def _project_ids(obs: Observed, asked: str | None) -> list[str] | None:
    """The ids `project=` names (an id or a name); None for every project."""
    if asked is None:
        return None
    projects = obs.latest_projects
    ids = projects["project_id"].astype(object)
    found = ids[(ids == asked) | (projects["name"].astype(object) == asked)].tolist()
    if not found:
        names = ", ".join(sorted(str(name) for name in projects["name"].dropna()))
        raise ValueError(
            f"no project {asked!r} in the store; give a project's id or one of its names: "
            f"{names or '(none yet)'}"
        )
    return [str(found_id) for found_id in found]


def _empty() -> pd.DataFrame:
    return pd.DataFrame({column: pd.Series(dtype=object) for column in COLUMNS})


def _shaped(rows: pd.DataFrame, obs: Observed) -> pd.DataFrame:
    """The rows in `COLUMNS`' order and types, names filled in, sorted by time."""
    rows = rows.reindex(columns=COLUMNS)
    names = _project_names(obs)
    project = rows["project"].astype(object)
    rows["project"] = project.where(project.notna(), rows["project_id"].astype(object).map(names))
    chapter = rows["chapter"].astype(object)
    rows["chapter"] = chapter.where(chapter.notna(), rows["chapter_id"].astype(object).map(
        _chapter_names(obs)))  # fmt: skip
    for column in ("at", "started_at", "finished_at"):
        if rows[column].dtype != TIME:  # already so when every reader gave a time
            rows[column] = pd.to_datetime(rows[column], utc=True).astype(TIME)
    texts = [c for c in COLUMNS if c not in ("at", "started_at", "finished_at", "value")]
    for column in texts:
        if rows[column].dtype != TEXT:
            rows[column] = rows[column].astype(TEXT)
    rows["value"] = pd.to_numeric(rows["value"]).astype("Float64")
    if len(rows) and (rows["value"] == rows["value"].round()).all():
        rows["value"] = rows["value"].astype("Int64")  # counts and whole credits stay whole
    elif not len(rows):
        rows["value"] = rows["value"].astype("Int64")
    return sorted_by(rows, ["at", "chapter_id", "source_id"])


def _project_names(obs: Observed) -> pd.Series:
    projects = obs.latest_projects
    return pd.Series(
        projects["name"].astype(object).to_numpy(), index=projects["project_id"].astype(object)
    )


def _chapter_names(obs: Observed) -> pd.Series:
    """Each chapter's title by id, as its latest change names it (`Chapter <n>` without)."""
    rows = obs.stage(Transitions).rows
    if rows.empty:
        return pd.Series(dtype=object)
    last = rows[["chapter_id", "title", "position"]].astype(object)
    last = last.drop_duplicates("chapter_id", keep="last").set_index("chapter_id")
    fallback = "Chapter " + last["position"].astype(str)
    return last["title"].where(last["title"].notna(), fallback)


# -- one reader per figure -----------------------------------------------------------


def _finished(obs: Observed, when: Period) -> pd.DataFrame:
    """A chapter finished in the period: its last run that finished then (value 1);
    `detail` says how many did."""
    runs = cycle_times(obs, since=when.since, until=when.until)
    count = runs.groupby("chapter_id")["run_id"].transform("size")
    last = runs.assign(runs=count).drop_duplicates("chapter_id", keep="last")
    detail = [
        f"{count} run{'' if count == 1 else 's'} finished in the period ({kind} run last)"
        for count, kind in zip(last["runs"], last["kind"].astype(object), strict=True)
    ]
    return pd.DataFrame(
        {
            "project_id": last["project_id"], "project": last["project"],
            "chapter_id": last["chapter_id"], "chapter": last["chapter"], "source": "run",
            "source_id": last["run_id"], "at": last["finished_at"],
            "started_at": last["started_at"], "finished_at": last["finished_at"],
            "detail": pd.Series(detail, index=last.index, dtype=object),
            "value": 1,
        }
    )  # fmt: skip


def _failed(kind: str) -> Reader:
    def rows(obs: Observed, when: Period) -> pd.DataFrame:
        """A run that failed (or stalled) in the period, once, at its end (value 1)."""
        found = failures(obs, since=when.since, until=when.until)
        found = found[found["kind"] == kind]
        started = all_runs(obs).set_index("run_id")["started_at"]
        return pd.DataFrame(
            {
                "project_id": found["project_id"], "project": found["project"],
                "chapter_id": found["chapter_id"], "chapter": found["chapter"],
                "source": "run", "source_id": found["run_id"], "at": found["seen_at"],
                "started_at": found["run_id"].astype(object).map(started),
                "finished_at": found["seen_at"],
                "detail": found["run_kind"].astype(str) + " run: " +
                found["failure_reason"].astype(object).fillna("(no reason given)").astype(str),
                "value": 1,
            }
        )  # fmt: skip

    return rows


def _charges(column: str) -> Reader:
    def rows(obs: Observed, when: Period) -> pd.DataFrame:
        """A run's charge, at the snapshot that first showed it: `credits` (what it
        paid) or `rework` (what it paid again for pages already paid for)."""
        runs = all_runs(obs)
        seen = runs["seen_at"]
        keep = (seen >= when.since) & (seen < when.until) & (runs[column] != 0)
        runs = runs[keep.fillna(False).to_numpy(bool)]
        outcomes = runs["outcome"].astype(object).fillna("outcome unknown")
        detail = [
            f"{kind} run of {count(int(pages), 'page')} in {count(int(languages), 'language')}, "
            f"{outcome}"
            for kind, pages, languages, outcome in zip(
                runs["kind"].astype(object), runs["pages"].fillna(0), runs["languages"].fillna(0),
                outcomes, strict=True,
            )
        ]  # fmt: skip
        return pd.DataFrame(
            {
                "project_id": runs["project_id"], "project": runs["project"],
                "chapter_id": runs["chapter_id"], "chapter": runs["chapter"],
                "source": "charge", "source_id": runs["run_id"], "at": runs["seen_at"],
                "started_at": runs["started_at"], "finished_at": runs["finished_at"],
                "detail": pd.Series(detail, index=runs.index, dtype=object),
                "value": runs[column].astype("float64"),
            }
        )  # fmt: skip

    return rows


# The throughput's own query (`measures.LINES_SQL`), grouped by snapshot and
# chapter-language instead of summed per period: one period per snapshot position.
# A chapter-language as one text (the ids hold no tab), split again by DuckDB: a struct
# key would come back as a Python dict per row, seconds for a busy week's 100,000 rows.
_LINES_KEY = "project_id || chr(9) || chapter_id || chr(9) || language_code"
_LINES_ROWS = """
SELECT period AS idx, split_part(key, chr(9), 1) AS project_id,
       split_part(key, chr(9), 2) AS chapter_id, split_part(key, chr(9), 3) AS language_code,
       lines
FROM ({lines}) WHERE lines <> 0
"""
_RESTARTED = "re-scan seen: its coverage counts in full"
_ROSE = "the rise of its coverage since the snapshot before"


def _lines(obs: Observed, when: Period) -> pd.DataFrame:
    """Each chapter-language's lines at each snapshot of the period: the rise of
    `covered`, in full after a restart (the detail says which)."""
    times = obs.manifest["snapshot_at"]
    inside = ((times >= when.since) & (times < when.until)).to_numpy(bool)
    idx = np.flatnonzero(inside).astype("int64")
    if not len(idx):
        return _empty()
    resets = rescans_seen(obs).drop_duplicates(ignore_index=True)
    keys = obs.store.query(
        _LINES_ROWS.format(lines=LINES_SQL.format(key=_LINES_KEY)),
        frames={"resets": resets, "periods": pd.DataFrame({"idx": idx, "period": idx})},
    )
    position = keys["idx"].to_numpy("int64")
    marked = resets.assign(again=True)
    pairs = keys[["chapter_id", "idx"]].astype({"chapter_id": object})
    again = pairs.merge(marked, on=["chapter_id", "idx"], how="left")["again"].notna()
    # Each snapshot's time once, then by position: not a text per row.
    stamps = pd.Series(times.to_numpy()[position], dtype=TIME)
    shown = pd.Series(times.dt.strftime("%Y-%m-%dT%H:%M:%SZ").to_numpy(object)[position])
    return pd.DataFrame(
        {
            "project_id": keys["project_id"], "chapter_id": keys["chapter_id"],
            "language_code": keys["language_code"], "source": "snapshot",
            "source_id": keys["chapter_id"] + "/" + keys["language_code"] + "@" + shown,
            "at": stamps, "detail": np.where(again.to_numpy(bool), _RESTARTED, _ROSE),
            "value": keys["lines"].astype("int64"),
        }
    )  # fmt: skip


def _at_end(obs: Observed, when: Period) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """The chapters, languages and reasons at the period's last snapshot, as the
    forecast the figures read sees them."""
    assert when.end is not None  # has_data
    seen = seen_at(obs, when.end, stall_after=pd.Timedelta(STALL_AFTER))
    return seen.chapters, seen.languages, seen.reasons


def _needs_action(obs: Observed, when: Period) -> pd.DataFrame:
    """A chapter that will not go on without a person at the last snapshot (value 1);
    the rule is why, in the reasons table's words."""
    chapters, _, reasons = _at_end(obs, when)
    waiting = chapters[chapters["chapter_id"].astype(object).isin(set(reasons.index))]
    ids = waiting["chapter_id"].astype(object)
    return pd.DataFrame(
        {
            "project_id": waiting["project_id"], "chapter_id": ids, "source": "chapter",
            "source_id": ids, "at": when.end,
            "finished_at": waiting["last_activity_at"],
            "rule": ids.map(reasons).astype(object),
            "detail": "last activity " + waiting["last_activity_at"].astype(str),
            "value": 1,
        }
    )  # fmt: skip


def _open_lines(obs: Observed, when: Period) -> pd.DataFrame:
    """The untranslated lines of each open language of a chapter that goes on by
    itself, at the last snapshot."""
    chapters, languages, reasons = _at_end(obs, when)
    going = chapters[is_open(chapters, reasons).to_numpy(bool)]
    open_langs = languages[~languages["status"].isin(DONE)]
    projects = going.set_index(going["chapter_id"].astype(object))["project_id"].astype(object)
    rows = open_langs[open_langs["chapter_id"].astype(object).isin(set(projects.index))]
    rows = rows.assign(project_id=rows["chapter_id"].astype(object).map(projects))
    rows = rows[rows["untranslated"].fillna(1) != 0]
    return pd.DataFrame(
        {
            "project_id": rows["project_id"], "chapter_id": rows["chapter_id"],
            "language_code": rows["language_code"], "source": "chapter",
            "source_id": rows["chapter_id"].astype(str) + "/" + rows["language_code"].astype(str),
            "at": when.end, "detail": "status " + rows["status"].astype(str),
            "value": rows["untranslated"],
        }
    )  # fmt: skip


_ROWS: dict[str, Reader] = {
    "chapters_finished": _finished,
    "runs_failed": _failed("failed"),
    "runs_stalled": _failed("stalled"),
    "credits": _charges("credits"),
    "rework_credits": _charges("rework"),
    "lines": _lines,
    "open_lines": _open_lines,
    "needs_action": _needs_action,
}
