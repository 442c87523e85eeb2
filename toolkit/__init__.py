"""Work with the Chapter Translation Service from Jupyter.

```python
import toolkit as tk

with tk.Client() as client:              # CTS_BASE_URL and CTS_API_KEY from the environment
    chapters = tk.chapters_frame(client)
```

Names are loaded on first use, so `import toolkit` stays quick; `__all__` lists every
public name and a test keeps it in step with what resolves. `toolkit.__version__` is the
installed distribution's version (`chapter-translation-toolkit`: the name `toolkit` is
someone else's in the package index).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolkit.errors import (
    ApiError,
    AuthenticationError,
    BadRequest,
    ConfigError,
    Conflict,
    DamagedStore,
    IncompletePull,
    InsufficientCredits,
    InvalidUpload,
    NotFound,
    OldStoreLayout,
    PayloadTooLarge,
    QueryError,
    RateLimited,
    ServerError,
    StoreError,
    ToolkitError,
    TransportError,
    UnconfirmedCreate,
    UnexpectedAnswer,
    Unprocessable,
    UnsupportedMediaType,
    WaitTimeout,
    WebhookVerificationError,
)
from toolkit.models import (
    AddedPages,
    Chapter,
    ChapterDetail,
    ChapterListItem,
    LanguageDetail,
    LanguageProgress,
    NewChapter,
    Page,
    PreparedExport,
    Project,
    RescanResult,
    StartResult,
    TargetLanguage,
)

if TYPE_CHECKING:  # the lazy names below, for type checkers and editors
    from toolkit import analysis, emulator, plots, watch, webhooks, widgets
    from toolkit.client import AsyncClient, Client, RetryPolicy
    from toolkit.frames import (
        UnknownStatus,
        Workspace,
        chapters_frame,
        exports_frame,
        languages_frame,
        projects_frame,
        pull,
    )
    from toolkit.metrics import glossary
    from toolkit.reporting import explain
    from toolkit.store import SnapshotInfo, SnapshotStore

    __version__: str

_DISTRIBUTION = "chapter-translation-toolkit"

_LAZY: dict[str, str] = {
    "AsyncClient": "toolkit.client",
    "Client": "toolkit.client",
    "RetryPolicy": "toolkit.client",
    "SnapshotInfo": "toolkit.store",
    "SnapshotStore": "toolkit.store",
    "UnknownStatus": "toolkit.frames",
    "Workspace": "toolkit.frames",
    "chapters_frame": "toolkit.frames",
    "explain": "toolkit.reporting",
    "exports_frame": "toolkit.frames",
    "glossary": "toolkit.metrics",
    "languages_frame": "toolkit.frames",
    "projects_frame": "toolkit.frames",
    "pull": "toolkit.frames",
    "report": "toolkit.reporting",
    "table": "toolkit.formatting",
}
_SUBMODULES = {"analysis", "batch", "emulator", "plots", "pricing", "watch", "webhooks", "widgets"}

__all__ = [
    "AddedPages",
    "ApiError",
    "AsyncClient",
    "AuthenticationError",
    "BadRequest",
    "Chapter",
    "ChapterDetail",
    "ChapterListItem",
    "Client",
    "ConfigError",
    "Conflict",
    "DamagedStore",
    "IncompletePull",
    "InsufficientCredits",
    "InvalidUpload",
    "LanguageDetail",
    "LanguageProgress",
    "NewChapter",
    "NotFound",
    "OldStoreLayout",
    "Page",
    "PayloadTooLarge",
    "PreparedExport",
    "Project",
    "QueryError",
    "RateLimited",
    "RescanResult",
    "RetryPolicy",
    "ServerError",
    "SnapshotInfo",
    "SnapshotStore",
    "StartResult",
    "StoreError",
    "TargetLanguage",
    "ToolkitError",
    "TransportError",
    "UnconfirmedCreate",
    "UnexpectedAnswer",
    "UnknownStatus",
    "Unprocessable",
    "UnsupportedMediaType",
    "WaitTimeout",
    "WebhookVerificationError",
    "Workspace",
    "analysis",
    "batch",
    "chapters_frame",
    "emulator",
    "explain",
    "exports_frame",
    "glossary",
    "languages_frame",
    "plots",
    "pricing",
    "projects_frame",
    "pull",
    "report",
    "table",
    "watch",
    "webhooks",
    "widgets",
]


def _installed_version() -> str:
    # Read on first use: importlib.metadata alone would add tens of ms to `import toolkit`.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(_DISTRIBUTION)
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _installed_version()
    if name in _SUBMODULES:
        return importlib.import_module(f"toolkit.{name}")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'toolkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
