"""A local, faithful implementation of the Chapter Translation Service.

```python
from toolkit.emulator import Emulator

with Emulator(clock="manual") as emu:          # or: toolkit emulator --seed demo
    ws = emu.create_workspace("Team", credits=1_000)
    emu.advance(600)                           # ten simulated minutes of run steps
```

The layout and every decision where the spec is silent are in docs/emulator.md.
"""

from __future__ import annotations

from toolkit.emulator.recording import NotARecording, ReplayReport
from toolkit.emulator.server import AdminCallError, ChaosRuleError, Emulator, replay, run_server

__all__ = [
    "AdminCallError",
    "ChaosRuleError",
    "Emulator",
    "NotARecording",
    "ReplayReport",
    "replay",
    "run_server",
]
