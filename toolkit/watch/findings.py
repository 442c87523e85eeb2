"""A finding: one condition that needs attention, as the checks see it now.

A finding's `key` says which condition it is (the check, its workspace and subject, and
for a budget the level crossed), so the same condition found again next cycle is the
same alert, whatever its message's figures say by then.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from toolkit.frames.schema import TEXT_DTYPE

__all__ = ["Finding", "Findings", "as_frame"]

_COLUMNS = ["check", "scope", "subject", "workspace", "message", "figures"]


@dataclass(frozen=True)
class Finding:
    """One thing a watch check found, about one subject, with the figures behind it."""

    check: str
    scope: str  # project | workspace | agency | chapter | store
    subject: str  # what it is about, by name: a project, a chapter, a workspace
    workspace: str
    message: str
    figures: dict[str, Any] = field(default_factory=dict)
    detail: str = ""  # what tells this condition from others with the same subject

    @property
    def key(self) -> str:
        return "|".join((self.check, self.workspace, self.scope, self.subject, self.detail))

    def figures_json(self) -> str:
        return json.dumps(self.figures, sort_keys=True, default=str)


class Findings(pd.DataFrame):
    """The open findings, one row per finding: `check, scope, subject, workspace,
    message, figures` (a dict), shown in a notebook as a styled table."""

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame

    def _repr_html_(self) -> str | None:
        from toolkit.formatting import table

        if self.empty:
            return "<p>No open findings: nothing needs attention.</p>"
        shown = pd.DataFrame(self).drop(columns=["figures"])
        caption = f"{len(self)} open finding{'s' if len(self) != 1 else ''}"
        return table(shown, caption=caption).to_html()


def as_frame(findings: list[Finding]) -> Findings:
    """Findings as a `Findings` frame, one row each."""
    # Column by column (a cycle may find a finding for each of 25,000 stuck chapters).
    columns = {name: [getattr(f, name) for f in findings] for name in _COLUMNS}
    frame = pd.DataFrame(
        {name: pd.array(columns[name], dtype=TEXT_DTYPE) for name in _COLUMNS[:-1]}
    )
    frame["figures"] = pd.Series(columns["figures"], dtype=object)
    return Findings(frame)
