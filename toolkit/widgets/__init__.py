"""Notebook panels (ipywidgets 8), thin layers over the public API.

```python
import toolkit as tk

tk.widgets.Dashboard(client, store=None)    # a project's chapters, live
tk.widgets.UploadPanel(client)              # new chapters, added pages, held pages started
tk.widgets.RescanPanel(client)              # re-scan failed chapters, after confirming
```

Every panel calls the same client methods a user calls and shows errors (402, 409, a
refused file...) as readable messages in its own message area, never as a traceback.
"""

from __future__ import annotations

from toolkit.widgets.dashboard import Dashboard
from toolkit.widgets.rescan import RescanPanel
from toolkit.widgets.upload import UploadPanel

__all__ = ["Dashboard", "RescanPanel", "UploadPanel"]
