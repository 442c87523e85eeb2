"""Regenerate the committed outputs of `notebooks/*.ipynb` from the current code.

    python -m tests.notebooks_refresh                   # every notebook
    python -m tests.notebooks_refresh 02-throughput     # some of them

Each notebook runs top to bottom in a fresh kernel of this Python (nbclient), as a
reader without a service runs it: `CTS_BASE_URL` and `CTS_API_KEY` unset, so it starts
its own emulator; this checkout's `toolkit` comes first on the kernel's path. The
outputs are written back (not the widgets' state), and the hash of the notebook's code
(`code_hash`) is kept in its metadata: tests/test_notebooks.py fails when a notebook's
code changed since its outputs were made, or when an output is not what the code's
`tk.table` draws (docs/testing.md).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KEY = "toolkit"  # the notebook metadata this command writes: {"code_sha256": ...}


def code_hash(notebook: dict[str, Any]) -> str:
    """The sha256 of the notebook's code cells, in order: what its outputs were made from."""
    digest = hashlib.sha256()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            source = cell["source"]
            digest.update(("".join(source) if isinstance(source, list) else source).encode())
            digest.update(b"\0")
    return digest.hexdigest()


def refresh(path: Path) -> float:
    """Run `path` and write its new outputs into it; returns the seconds it took."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    started = time.monotonic()
    NotebookClient(
        notebook,
        timeout=900,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        # The panels' live state (some 230 KB for notebook 04) is not kept: it means
        # nothing without the kernel and its emulator, and a reader reruns the cells.
        store_widget_state=False,
    ).execute()
    notebook.metadata[KEY] = {"code_sha256": code_hash(notebook)}
    nbformat.write(notebook, path)
    return time.monotonic() - started


def main(names: list[str]) -> int:
    for variable in ("CTS_BASE_URL", "CTS_API_KEY"):
        os.environ.pop(variable, None)
    # The kernel inherits this environment: this checkout's toolkit first.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if names:
        paths = [p for p in paths if p.stem in names or p.name in names]
        if not paths:
            print(f"no notebook named {' '.join(names)} in {NOTEBOOKS}", file=sys.stderr)
            return 1
    for path in paths:
        print(f"{path.name}: refreshed in {refresh(path):.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
