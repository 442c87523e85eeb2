"""Notebook panels (ipywidgets 8), thin layers over the public API.

```python
import toolkit as tk

tk.widgets.Dashboard(client, store=None)     # a project's chapters, live; spend today
tk.widgets.UploadPanel(client, store=None)   # new chapters, added pages, held pages, a folder
tk.widgets.RescanPanel(client, store=None)   # re-scan failed chapters, after confirming
```

Every panel calls the same public functions a user calls (the client, `tk.batch`,
`tk.pricing`, `tk.analysis`), options are keyword-only, and errors (402, 409, a refused
file...) show as readable messages in the panel's own message area, never as a
traceback. While an action runs its buttons are disabled and say what they are doing.
"""

from __future__ import annotations

try:
    import ipywidgets  # noqa: F401  # the notebook stack is an extra since 0.1.0
except ModuleNotFoundError as error:
    raise ModuleNotFoundError(
        "toolkit.widgets needs ipywidgets, which a plain install of the toolkit leaves out; "
        "install the notebooks extra: pip install 'chapter-translation-toolkit[notebooks]'",
        name=error.name,
    ) from error

from toolkit.widgets.dashboard import Dashboard
from toolkit.widgets.rescan import RescanPanel
from toolkit.widgets.upload import UploadPanel

__all__ = ["Dashboard", "RescanPanel", "UploadPanel"]
