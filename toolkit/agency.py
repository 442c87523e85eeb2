"""Several workspaces: where each one's key, base URL and store come from.

An agency runs several workspaces, each with its own API key. `toolkit snapshot
--workspace NAME` (as many as needed) finds each one's settings here:

- the key from `CTS_API_KEY_<NAME>` (the name upper-cased, anything but letters and
  digits as `_`: "studio-a" reads `CTS_API_KEY_STUDIO_A`), or from the config file;
- the base URL from `CTS_BASE_URL_<NAME>`, else the file, else `CTS_BASE_URL`;
- the store at `<store root>/<name>` (the root: `--store`, else `CTS_STORE`), or where the
  file says; a store holds one workspace and is labelled with its name.

The config file (`--config FILE`, else `CTS_WORKSPACES`) is TOML in the one format
`toolkit watch` reads too, so one file configures an agency's workspaces once (the
watch's config file serves as it is; its other tables are the watch's alone):

```toml
store = "data/snapshots"            # the stores' root: <root>/<name> unless a store is set
[workspaces.studio-a]
key_env = "STUDIO_A_KEY"            # the variable that holds its key
base_url = "https://translate.example.com"
[workspaces.studio-b]
key_env = "STUDIO_B_KEY"
store = "data/snapshots/studio-b"
```

The earlier format, one top-level table per workspace (`[studio-a]` with `api_key_env`,
`api_key`, `base_url`, `store`), is still read, with a one-line note on stderr saying
how to move to the one above.

The key is never written to a store, printed or shown in a repr (it stays a `Secret`).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.config import Secret, normalize_base_url, store_path
from toolkit.errors import ConfigError

__all__ = ["WorkspaceSettings", "read_workspaces_config", "workspace_settings", "workspace_store"]


@dataclass(frozen=True)
class WorkspaceSettings:
    """One workspace of the agency's file: its name, URL, API key and store folder."""

    name: str
    base_url: str
    api_key: Secret[str] = field(repr=False)
    store: str


def _env_suffix(name: str) -> str:
    """ "studio-a" -> "STUDIO_A": the suffix of a workspace's environment variables."""
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def read_workspaces_config(path: str | os.PathLike[str] | None = None) -> dict[str, dict[str, Any]]:
    """The workspaces config file (`path`, else `CTS_WORKSPACES`); empty when neither."""
    location = path or os.environ.get("CTS_WORKSPACES")
    if not location:
        return {}
    file = Path(location)
    try:
        tables = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"workspaces config {str(file)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"workspaces config {str(file)!r} is not valid TOML: {exc}") from None
    spaces = tables.get("workspaces")
    if isinstance(spaces, dict) and spaces and all(isinstance(t, dict) for t in spaces.values()):
        return {
            name: _from_shared(table, tables.get("store"), name) for name, table in spaces.items()
        }
    if tables:
        sys.stderr.write(
            f"note: workspaces config {str(file)!r} is in the earlier format ([NAME] tables); "
            "`toolkit watch` and `toolkit snapshot` both read [workspaces.NAME] tables with "
            "key_env, base_url and store (docs/watch.md)\n"
        )
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ConfigError(
                f"workspaces config {str(file)!r}: {name!r} must be a table ([{name}])"
            )
        shared = os.name == "posix" and file.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO)
        if "api_key" in table and shared:
            raise ConfigError(
                f"workspaces config {str(file)!r} holds an API key and others can read "
                f"it; run `chmod 600 {file}`, or name a variable with api_key_env instead"
            )
    return tables


def _from_shared(table: dict[str, Any], root: object, name: str) -> dict[str, Any]:
    """A `[workspaces.NAME]` table of the one format, as this module's settings read it."""
    settings: dict[str, Any] = {k: table[k] for k in ("base_url", "store") if k in table}
    if "key_env" in table:
        settings["api_key_env"] = table["key_env"]
    if "store" not in settings and isinstance(root, str):
        settings["store"] = f"{root}/{name}"  # as the watch places it
    return settings


def workspace_settings(
    name: str, *, config: dict[str, dict[str, Any]] | None = None, store_root: str | None = None
) -> WorkspaceSettings:
    """One workspace's settings, from the environment and the config file's tables."""
    table = (config or {}).get(name, {})
    suffix = _env_suffix(name)
    key_variable = table.get("api_key_env", f"CTS_API_KEY_{suffix}")
    key = os.environ.get(key_variable) or table.get("api_key")
    if not key:
        raise ConfigError(
            f"no API key for workspace {name!r}: set {key_variable}, or name the variable "
            f"that holds it with key_env in the config file's [workspaces.{name}] table"
        )
    url = (
        os.environ.get(f"CTS_BASE_URL_{suffix}")
        or table.get("base_url")
        or os.environ.get("CTS_BASE_URL")
    )
    if not url:
        raise ConfigError(
            f"no base URL for workspace {name!r}: set CTS_BASE_URL_{suffix} or CTS_BASE_URL"
        )
    store = table.get("store") or workspace_store(name, store_root)
    return WorkspaceSettings(name, normalize_base_url(str(url)), Secret(str(key)), str(store))


def workspace_store(name: str, store_root: str | None = None) -> str:
    """Where a workspace's store is by default: `<store root>/<name>`."""
    return os.path.join(store_path(store_root), name)
