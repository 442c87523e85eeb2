"""Figures by a tag of the projects: client, vendor, team, any key a user names.

```python
tags = {"Moonlit Harbor": {"client": "Aster", "team": "north"}, "p2": {"client": "Brio"}}
by_tag(figures(store), tags, "client")      # client, projects, the headline figures
tagged(tk.explain(store, "credits"), tags, "client")   # the rows, with a client column
explained_by_tag(tk.explain(store, "median_cycle_hours"), projects, tags, "client",
                 "median_cycle_hours")   # the figure per client, remade from its rows
```

A project is named by its id or its
name (the id wins when both are given); a project
without the tag counts under `(untagged)`, so the groups add up to the workspace's
totals. A group's figure is unknown when any of its projects' is, as a total is.

The service's own translation group is the tag `translation_group`, which needs no
config (`with_groups` adds it from the stores) and which a config may not set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

import pandas as pd

from toolkit.analysis.groups import GROUP_KEY, group_tags, reserved
from toolkit.frames.schema import TEXT_DTYPE
from toolkit.reporting.explanations import recount
from toolkit.reporting.figures import FIGURES, Figures
from toolkit.timestamps import When

if TYPE_CHECKING:
    from toolkit.analysis.observed import Observed
    from toolkit.store import SnapshotStore

__all__ = ["UNTAGGED", "Tags", "by_tag", "check_tag", "explained_by_tag", "tagged", "with_groups"]

UNTAGGED: Final = "(untagged)"
Tags = Mapping[str, Mapping[str, str]]


def keys_of(tags: Tags) -> list[str]:
    """Every tag's name the mapping uses (`client`, `team`...), in name order."""
    return sorted({key for own in tags.values() for key in own})


def with_groups(
    tags: Tags | None,
    stores: Iterable[SnapshotStore | Observed],
    *,
    until: When | None = None,
    tz: str | None = None,
) -> dict[str, dict[str, str]]:
    """`tags` and, by project id, each project's translation group as the stores kept
    it up to `until` (`tk.analysis.project_groups`: `(unknown)` where none was kept)
    under `translation_group`. ValueError, in one line, for a tag of `tags` of that name."""
    merged = {name: dict(own) for name, own in (tags or {}).items()}
    for name, own in merged.items():
        if GROUP_KEY in own:
            raise ValueError(f"the tags of {name!r}: {reserved(GROUP_KEY)}")
    for project_id, own in group_tags(stores, until, tz).items():
        merged.setdefault(project_id, {}).update(own)
    return merged


def tag_values(projects: pd.DataFrame, tags: Tags, key: str) -> pd.Series:
    """Each row's value of tag `key`, from its `project_id` or its `project` name;
    `(untagged)` where neither is tagged with it."""
    ids = projects["project_id"].astype(object)
    names = projects["project"].astype(object) if "project" in projects else ids

    def value(project_id: object, name: object) -> str:
        for ident in (project_id, name):
            found = tags.get(str(ident), {}).get(key)
            if found is not None:
                return found
        return UNTAGGED

    said = [value(i, n) for i, n in zip(ids, names, strict=True)]
    return pd.Series(said, index=projects.index, dtype=TEXT_DTYPE, name=key)


def tagged(rows: pd.DataFrame, tags: Tags, key: str) -> pd.DataFrame:
    """`rows` (any frame with `project_id`, such as `tk.explain`'s) with a column `key`
    holding each row's project's tag, after `project`."""
    at = list(rows.columns).index("project") + 1 if "project" in rows else 0
    found = rows.copy()
    found.insert(at, key, tag_values(rows, tags, key))
    return found


def check_tag(tags: Tags, key: str, where: str, projects: pd.DataFrame | None = None) -> None:
    """Refuse to group by tag `key` in one line that says what to do (ValueError): the
    config `where` tags no project, uses no tag of that name, or none of `projects` (the
    one project asked for: `project_id`, `project`) carries it."""
    if not tags and key != GROUP_KEY:
        raise ValueError(
            f"{where} has no [tags]: tag the projects first, a table per project such as "
            f'[tags."Moonlit Harbor"] with {key} = "Acme" (docs/figures.md, "Figures by a tag")'
        )
    keys = keys_of(tags)
    if key == GROUP_KEY and key not in keys:
        raise ValueError(f"no project of {where} has a translation group on record: "
                         "take a snapshot with this toolkit first")  # fmt: skip
    if key not in keys:
        raise ValueError(f"no tag {key!r} in {where}; its [tags] use {', '.join(keys)}: "
                         f"group by one of those, or by {GROUP_KEY} (the service's group "
                         "of each project)")  # fmt: skip
    if (
        projects is not None
        and len(projects)
        and (tag_values(projects, tags, key) == UNTAGGED).all()
    ):
        name = str(projects["project"].iloc[0])
        if key == GROUP_KEY:
            raise ValueError(f"project {name!r} has no translation group from the service; "
                             f"leave out the project to see it under {UNTAGGED}")  # fmt: skip
        raise ValueError(
            f'project {name!r} has no {key} in {where}: add {key} = "..." under '
            f'[tags."{name}"], or leave out the project to see it under {UNTAGGED}'
        )


def explained_by_tag(
    rows: pd.DataFrame, projects: pd.DataFrame, tags: Tags, key: str, figure: str
) -> pd.DataFrame:
    """The figure `rows` explain (`tk.explain`'s rows of `figure`, of one workspace or
    several), remade per value of tag `key` from that value's rows as `recount` makes
    it: a sum summed, a median the median of the value's rows, a finish the latest of
    theirs. `<key>, projects, <figure>`, one row per value, in name order with
    `(untagged)` last, then `All projects` (every row). `projects` (`project_id`,
    `project`, and `workspace` for several) are the projects the rows may come from: a
    value whose projects have no row still has its line (a sum's 0, a median unknown)."""
    values = tag_values(rows, tags, key).astype(object) if len(rows) else pd.Series(dtype=object)
    own = tag_values(projects, tags, key).astype(object)
    seen = set(own) | set(values)
    order = [*sorted(seen - {UNTAGGED}), *([UNTAGGED] if UNTAGGED in seen else [])]
    said = [
        {key: value, "projects": int((own == value).sum()),
         figure: recount(rows[(values == value).to_numpy(bool)], figure)}
        for value in order
    ]  # fmt: skip
    said.append({key: "All projects", "projects": len(projects), figure: recount(rows, figure)})
    return pd.DataFrame(said, columns=[key, "projects", figure])


def by_tag(figs: Figures, tags: Tags, key: str) -> pd.DataFrame:
    """The headline figures summed per value of tag `key`: `<key>, projects` (how many)
    and the figures, one row per value, in name order with `(untagged)` last."""
    return sum_by_tag(figs.projects, tags, key)


def sum_by_tag(projects: pd.DataFrame, tags: Tags, key: str) -> pd.DataFrame:
    """`by_tag` over any frame of projects' figures (`project_id`, `project`, FIGURES),
    such as several workspaces' projects one after another."""
    table = projects.assign(**{key: tag_values(projects, tags, key)})
    rows = []
    for value, group in table.groupby(key, sort=False):
        row: dict[str, object] = {key: value, "projects": len(group)}
        for name in FIGURES:
            column = group[name]
            row[name] = pd.NA if column.isna().any() else int(column.sum())
        rows.append(row)
    frame = pd.DataFrame(rows, columns=[key, "projects", *FIGURES])
    frame[key] = frame[key].astype(TEXT_DTYPE)
    for name in ("projects", *FIGURES):
        frame[name] = frame[name].astype("Int64")
    last = frame[key] == UNTAGGED
    return pd.concat([frame[~last].sort_values(key), frame[last]], ignore_index=True).reset_index(
        drop=True
    )
