"""Watch: budgets, checks and alerts that reach people (`toolkit watch`, docs/watch.md).

```python
tk.watch.checks("data/snapshots/studio", "watch.toml")   # the open findings, a frame
tk.watch.open_alerts("data/snapshots/studio", "watch.toml")  # what the watch told people
config = tk.watch.read_config("watch.toml")
tk.watch.run_cycle(config)                               # snapshot, check, notify, record
```

The parts: `config` (the TOML file), `checks` (the evaluation, with `budget` and
`anomaly`), `findings` (what a check finds), `alerts` (the state in the store's `alerts`
table, each message owed), `outbox` (what each target got: the `deliveries` table, the
order and the retry schedule), `notify` (webhook, Slack, e-mail), `wording` (checks'
names and actions in words, ages) and `cycle` (one cycle, and the loop).
"""

from __future__ import annotations

from toolkit.watch.alerts import AlertLog
from toolkit.watch.checks import checks, evaluate, open_alerts
from toolkit.watch.config import WatchConfig, parse_duration, read_config
from toolkit.watch.cycle import Cycle, run_cycle, run_forever
from toolkit.watch.findings import Finding, Findings

__all__ = ["AlertLog", "Cycle", "Finding", "Findings", "WatchConfig", "checks", "evaluate",
           "open_alerts", "parse_duration", "read_config", "run_cycle", "run_forever"]  # fmt: skip
