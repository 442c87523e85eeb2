"""Benchmark 4: 400 MB of pages through `Client.create_chapter`, memory and time.

The pages are 10 MB PNGs of noise (stored, not compressed, so they stay 10 MB), written
to a temporary folder; the same files go up once through the toolkit and once as a raw
httpx multipart upload of open files, the most economical upload httpx offers. Each
upload runs in a new Python process, so its baseline is clean: the process imports what
the upload needs, resets its peak-RSS mark (`/proc/self/clear_refs`), uploads, and
reports how far its peak rose above where it started. The emulator, in this process,
does the same work for both (it parses, checks and stores every page).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from tests.bench.client_side import ClientProcess
from tests.bench.table import Table, megabytes, peak, reset_peak
from toolkit.emulator import Emulator

PAGE_BYTES = 10 * 1_048_576
DISTINCT_PAGES = 8
LIMIT_BYTES = 64 * 1_048_576


@dataclass(frozen=True)
class UploadOptions:
    megabytes: int = 400
    runs: int = 2


def run(options: UploadOptions) -> list[Table]:
    folder = tempfile.mkdtemp(prefix="bench-pages-")
    try:
        paths = _pages(folder, count=max(1, options.megabytes * 1_048_576 // PAGE_BYTES))
        total = sum(os.path.getsize(p) for p in paths)
        with Emulator(clock="manual") as emulator:
            workspace = emulator.create_workspace("Uploads", credits=1_000_000)
            project = emulator.create_project(
                workspace["id"],
                name="Large pages",
                kind="comic",
                source_language="ja",
                reading_direction="rtl",
                process_steps="full",
                target_languages=["en", "fr", "es"],
            )
            results: dict[str, list[dict[str, Any]]] = {"toolkit": [], "raw": []}
            for _ in range(options.runs):
                for mode in results:
                    with ClientProcess() as client:  # a new process: a clean baseline
                        results[mode].append(
                            client.call(
                                upload,
                                emulator.url,
                                workspace["apiKey"],
                                project["id"],
                                paths,
                                mode=mode,
                            )
                        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [_table(results, total, len(paths), options.runs)]


def _table(results: dict[str, list[dict[str, Any]]], total: int, pages: int, runs: int) -> Table:
    table = Table(f"4. Uploads: {megabytes(total)} in {pages} pages, one create_chapter call")
    seconds = {mode: statistics.median(r["seconds"] for r in rs) for mode, rs in results.items()}
    growth = {mode: max(r["peak_growth"] for r in rs) for mode, rs in results.items()}
    table.verdict(
        "toolkit create_chapter: peak RSS growth",
        megabytes(growth["toolkit"]),
        growth["toolkit"] < LIMIT_BYTES,
        f"< {megabytes(LIMIT_BYTES)}; the largest of {runs}",
    )
    table.add("raw httpx multipart upload: peak RSS growth", megabytes(growth["raw"]), "")
    for mode, label in (("toolkit", "toolkit create_chapter"), ("raw", "raw httpx upload")):
        rate = total / seconds[mode] / 1_048_576
        table.add(f"{label}: time", f"{seconds[mode]:.1f} s", f"median of {runs}; {rate:.0f} MiB/s")
    table.add(
        "toolkit / raw time",
        f"{seconds['toolkit'] / seconds['raw']:.2f}x",
        "the toolkit also checks every page (PNG CRCs) before sending",
    )
    return table


def _pages(folder: str, *, count: int) -> list[str]:
    """`count` paths to 10 MB PNGs; a few distinct files, repeated."""
    import numpy as np
    from PIL import Image

    side = int((PAGE_BYTES / 3) ** 0.5)
    rng = np.random.default_rng(3)
    distinct = []
    for number in range(min(count, DISTINCT_PAGES)):
        pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
        path = os.path.join(folder, f"page-{number:02d}.png")
        Image.fromarray(pixels, "RGB").save(path, compress_level=0)
        distinct.append(path)
    return [distinct[n % len(distinct)] for n in range(count)]


# -- in the upload's own process ------------------------------------------------------------


def upload(url: str, key: str, project_id: str, paths: list[str], *, mode: str) -> dict[str, Any]:
    import httpx
    import PIL.Image  # noqa: F401  (imported before the baseline, like the toolkit's own)

    from toolkit import Client

    with Client(base_url=url, api_key=key, timeout=600) as client:
        client.list_projects()  # warm: the connection and the imports it needs
        baseline = reset_peak()
        started = time.perf_counter()
        if mode == "toolkit":
            chapter = client.create_chapter(project_id, pages=paths)
            count = len(chapter.pages)
        else:
            opened = [open(path, "rb") for path in paths]  # noqa: SIM115
            try:
                files = [("pages", (os.path.basename(f.name), f, "image/png")) for f in opened]
                response = httpx.post(
                    f"{url}/api/v1/projects/{project_id}/chapters",
                    files=files,
                    headers={"Authorization": f"Bearer {key}"},
                    timeout=600,
                )
                response.raise_for_status()
                count = len(response.json()["pages"])
            finally:
                for f in opened:
                    f.close()
        seconds = time.perf_counter() - started
    if count != len(paths):
        raise RuntimeError(f"{count} pages arrived of {len(paths)}")
    return {"seconds": seconds, "peak_growth": peak() - baseline}
