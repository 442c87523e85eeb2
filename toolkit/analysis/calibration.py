"""The forecast's band set by its own record: split-conformal widths from past replays.

```python
record = tk.analysis.band_calibration(store, by="project_id")   # from past replays
tk.analysis.forecast(store, by="project_id", calibration=record)
```

Each replay `forecast_accuracy` scores gives a conformity score: how far outside its
p10-p90 band the true finish fell (negative: how far inside), in shares of the time
from the replay to its p50 (`accuracy._score`; a band not yet known to hold is left
out, a miss whose work is still not done counts from the horizon). Over the `n` scores
of one kind of group (`by`), the width is their `ceil((n + 1) x level)`-th smallest,
the split-conformal quantile: widening every band by that share of its time to p50 on
both sides would have held the true finish in at least `level` of the past replays, and
does so for a new one as far as the future is like the past. A workspace whose pace
swings gets a positive width (a wider band); a steady one a negative width (narrower,
never past its p50). With fewer than `(1 / (1 - level)) - 1` scores the quantile does
not exist: the record is too short, and the band is left as the model set it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from toolkit.analysis.accuracy import replay_scores
from toolkit.analysis.observed import observe
from toolkit.analysis.trouble import STALL_AFTER
from toolkit.frames.schema import TEXT_DTYPE

if TYPE_CHECKING:
    from toolkit.analysis.forecast import ForecastBy
    from toolkit.analysis.observed import Observed
    from toolkit.store import SnapshotStore
    from toolkit.timestamps import When

__all__ = ["Calibration", "band_calibration", "calibrated"]


@dataclass(frozen=True)
class Calibration:
    """The band's width from the record of one kind of group: `width` (a share of the
    time to p50, added below p10 and above p90; None: too few replays), the `replays`
    scored, how many `held` (inside the band as made) and the `level` aimed at."""

    by: str
    width: float | None
    replays: int
    held: int
    level: float

    def says(self) -> str:
        """How the band was set, in a sentence for a page."""
        if self.width is None:
            return (
                f"the model's band: {self.replays} past replays are too few to calibrate it "
                f"at {self.level:.0%} ({self.held} held)"
            )
        way = "widened" if self.width >= 0 else "narrowed"
        return (
            f"calibrated on {self.replays} past replays, of which {self.held} held: "
            f"{way} by {abs(self.width):.0%} of the time to p50 on each side, to hold "
            f"{self.level:.0%}"
        )

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """A forecast's frame with its bands set by this record (p10 never after p50, p90
        never before it; an open p90 stays open) and the sentence added to `band`."""
        if self.width is None or frame.empty:
            return frame.assign(band=_joined(frame["band"], self.says()))
        span = frame["finish_p50"] - frame["as_of"]
        low = frame["finish_p10"] - span * self.width
        high = frame["finish_p90"] + span * self.width
        return frame.assign(
            finish_p10=low.where(low <= frame["finish_p50"], frame["finish_p50"]),
            finish_p90=high.where(high >= frame["finish_p50"], frame["finish_p50"]).where(
                frame["finish_p90"].notna()
            ),
            band=_joined(frame["band"], self.says()),
        )


def band_calibration(
    store: SnapshotStore | Observed,
    *,
    by: ForecastBy = "project_id",
    level: float = 0.8,
    horizon: str | pd.Timedelta = "24h",
    every: str | pd.Timedelta = "1D",
    window: str | pd.Timedelta = "7D",
    freq: str = "1D",
    stall_after: str | pd.Timedelta = STALL_AFTER,
    since: When | None = None,
    until: When | None = None,
    tz: str | None = None,
) -> Calibration:
    """The band's width from the forecast's replays over the store's history (the same
    replays and arguments as `forecast_accuracy`), for groups `by`.

    Raises:
        ValueError: `level` is not between 0 and 1.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1 (say 0.8), not {level!r}")
    obs = observe(store)
    if obs.manifest.empty:
        return Calibration(by, None, 0, 0, level)
    scores = replay_scores(obs, by=by, horizon=horizon, every=every, window=window, freq=freq,
                           stall_after=stall_after, since=since, until=until, tz=tz)  # fmt: skip
    return calibrated(scores, by=by, level=level)


def calibrated(scores: pd.DataFrame, *, by: ForecastBy, level: float = 0.8) -> Calibration:
    """The band's width from `replay_scores`' rows: their split-conformal quantile at
    `level` (a caller that also shows `forecast_accuracy` from the same rows, as the
    weekly page does, replays once)."""
    values = np.sort(scores["score"].to_numpy(float))
    n = len(values)
    rank = math.ceil((n + 1) * level)
    width = float(values[rank - 1]) if 0 < rank <= n else None
    return Calibration(by, width, n, int(scores["hit"].sum()), level)


def _joined(said: pd.Series, more: str) -> pd.Series:
    return said.where(said.isna(), said.astype(TEXT_DTYPE) + "; " + more).astype(TEXT_DTYPE)
