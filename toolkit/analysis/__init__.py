"""Runs, throughput, credit spend, cycle and lead times, failures, measured from a store.

```python
tk.analysis.runs(store)                                         # one row per run
tk.analysis.throughput(store, freq="1h", by="language_code")   # lines per hour
tk.analysis.credit_spend(store, freq="1D", by="project_id")     # credits per day
tk.analysis.spend_in(store, since="2027-01-01", until="2027-02-01")   # at each charge's time
tk.analysis.cycle_times(store); tk.analysis.lead_times(store)
tk.analysis.failures(store); tk.analysis.failure_rates(store, by="project_id")
tk.analysis.finished(store, freq="D"); tk.analysis.stalled(store); tk.analysis.stuck(store)
tk.analysis.price_estimate(store, project_id, pages=20)
tk.analysis.forecast(store, by="project_id")     # when the open work will be done
tk.analysis.forecast_accuracy(store)             # how past forecasts held
tk.analysis.band_calibration(store)              # the band's width from that record
tk.analysis.compare_models(store)                # like-for-like cost, speed, failures
tk.analysis.review_backlog(store)                # chapters waiting for review, reviews a day
tk.analysis.project_groups(store)                # each project's translation group
tk.analysis.update_runs(store)                   # after a snapshot: the run stages kept up
```

Every function takes keyword-only `since`, `until` and `tz` (and `freq` where it has
periods). Two arguments mean the same in every call. Their text below is the one each
call's `Args:` gives word for word, then what that call adds (`tests/test_docstrings.py`
holds them equal), so that `help()` on any call shows it whole:

- `store`: A `SnapshotStore` or its `Observed` view; or several workspaces' stores at
  once (a mapping of label to store, or a list), and then the answer has a `workspace`
  column first, or is one dict per label where the call answers with a dict
  (`toolkit.analysis.workspaces`).
- `tz`: The time zone a naive `since` or `until` is read in; UTC by default.

How each figure is derived is in docs/analysis.md.
"""

from __future__ import annotations

from toolkit.analysis.accuracy import forecast_accuracy
from toolkit.analysis.calibration import Calibration, band_calibration
from toolkit.analysis.forecast import ForecastBy, burn_down, forecast
from toolkit.analysis.groups import GROUP_KEY, project_groups
from toolkit.analysis.measures import (
    SpendBy,
    ThroughputBy,
    credit_spend,
    price_estimate,
    price_per_chapter,
    price_per_page,
    throughput,
)
from toolkit.analysis.model_comparison import compare_models, price_by_language
from toolkit.analysis.monthly import monthly_spend
from toolkit.analysis.needs_person import needing_person
from toolkit.analysis.review import review_backlog
from toolkit.analysis.runs import runs
from toolkit.analysis.spent import charges, spend_in
from toolkit.analysis.timing import RunsBy, cycle_times, finished, lead_times
from toolkit.analysis.trouble import (
    REASONS,
    STALL_AFTER,
    advice,
    failure_rates,
    failures,
    reason_words,
    stalled,
    stuck,
)
from toolkit.analysis.update import update_runs

__all__ = [
    "GROUP_KEY",
    "REASONS",
    "STALL_AFTER",
    "Calibration",
    "ForecastBy",
    "RunsBy",
    "SpendBy",
    "ThroughputBy",
    "advice",
    "band_calibration",
    "burn_down",
    "charges",
    "compare_models",
    "credit_spend",
    "cycle_times",
    "failure_rates",
    "failures",
    "finished",
    "forecast",
    "forecast_accuracy",
    "lead_times",
    "monthly_spend",
    "needing_person",
    "price_by_language",
    "price_estimate",
    "price_per_chapter",
    "price_per_page",
    "project_groups",
    "reason_words",
    "review_backlog",
    "runs",
    "spend_in",
    "stalled",
    "stuck",
    "throughput",
    "update_runs",
]
