"""Throughput, credit spend, runs, cycle times and failures, measured from a snapshot store.

```python
tk.analysis.throughput(store, freq="1h", by="language_code")   # lines per hour
tk.analysis.credit_spend(store, freq="1D", by="project_id")     # credits per day
tk.analysis.cycle_times(store); tk.analysis.failures(store); tk.analysis.stalled(store)
tk.analysis.price_estimate(store, project_id, pages=20)
```

How each figure is derived is in docs/analysis.md.
"""

from __future__ import annotations

from toolkit.analysis.forecast import ForecastBy, burn_down, forecast
from toolkit.analysis.measures import (
    SpendBy,
    ThroughputBy,
    credit_spend,
    price_estimate,
    price_per_chapter,
    price_per_page,
    throughput,
)
from toolkit.analysis.runs import cycle_times, failures, stalled

__all__ = [
    "ForecastBy",
    "SpendBy",
    "ThroughputBy",
    "burn_down",
    "credit_spend",
    "cycle_times",
    "failures",
    "forecast",
    "price_estimate",
    "price_per_chapter",
    "price_per_page",
    "stalled",
    "throughput",
]
