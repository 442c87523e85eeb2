"""Runs, throughput, credit spend, cycle and lead times, failures, measured from a store.

```python
tk.analysis.runs(store)                                         # one row per run
tk.analysis.throughput(store, freq="1h", by="language_code")   # lines per hour
tk.analysis.credit_spend(store, freq="1D", by="project_id")     # credits per day
tk.analysis.cycle_times(store); tk.analysis.lead_times(store)
tk.analysis.failures(store); tk.analysis.failure_rates(store, by="project_id")
tk.analysis.finished(store, freq="D"); tk.analysis.stalled(store); tk.analysis.stuck(store)
tk.analysis.price_estimate(store, project_id, pages=20)
```

Every function takes keyword-only `since`, `until` and `tz` (and `freq` where it has
periods). How each figure is derived is in docs/analysis.md.
"""

from __future__ import annotations

from toolkit.analysis.measures import (
    SpendBy,
    ThroughputBy,
    credit_spend,
    price_estimate,
    price_per_chapter,
    price_per_page,
    throughput,
)
from toolkit.analysis.runs import runs
from toolkit.analysis.timing import RunsBy, cycle_times, finished, lead_times
from toolkit.analysis.trouble import failure_rates, failures, stalled, stuck

__all__ = [
    "RunsBy",
    "SpendBy",
    "ThroughputBy",
    "credit_spend",
    "cycle_times",
    "failure_rates",
    "failures",
    "finished",
    "lead_times",
    "price_estimate",
    "price_per_chapter",
    "price_per_page",
    "runs",
    "stalled",
    "stuck",
    "throughput",
]
