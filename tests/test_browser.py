"""The operations notebook in a real browser: JupyterLab on loopback, headless Chromium.

The test starts an emulator, points JupyterLab's kernels at it (CTS_BASE_URL and
CTS_API_KEY in the server's environment), opens `notebooks/04-operations.ipynb`, runs
every cell, filters the dashboard to failed chapters, double-clicks "Create chapter"
(one chapter, one charge, the result kept), has a taken chapter number refused in the
panel's words, holds pages on a staged chapter and starts them, checks a folder with a
bad file (the headline says nothing will be sent, and names no price), uploads a folder
of chapters, and double-clicks the re-scan confirmation of a failed chapter; then the
dashboard's spend today, live since the store's one snapshot, has risen by exactly what
the ledger charged, as of the service's time. It checks what the page shows and what
the emulator received. Screenshots are saved to
`build/browser/` (the page, and each panel at the moments above).

It skips, saying why, where Debian's Chromium or the `browser` extra is missing.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from headless import launch, missing

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "04-operations.ipynb"
SCREENSHOT = ROOT / "build" / "browser" / "04-operations.png"
WAIT_MS = 60_000


pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,  # JupyterLab, its kernel and Chromium: several processes
    pytest.mark.skipif(
        missing("playwright", "jupyterlab") is not None,
        reason=str(missing("playwright", "jupyterlab")),
    ),
    # A real JupyterLab and Chromium on a loaded 2-core machine: one failure was seen in
    # about ten full-suite runs and never reproduced alone, so one fresh try is allowed
    # (new emulator, new JupyterLab); a second failure fails the suite.
    pytest.mark.flaky(reruns=1),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def store_root(tmp_path: Path) -> Path:
    """The snapshot store the notebook finds at CTS_STORE (the test takes its snapshot)."""
    return tmp_path / "snapshots"


@pytest.fixture
def lab(tmp_path: Path, emulator, workspace, store_root: Path) -> Iterator[str]:
    """JupyterLab serving a copy of the notebook, its kernels pointed at the emulator."""
    root = tmp_path / "lab"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "CTS_BASE_URL": emulator.url,
        "CTS_API_KEY": workspace["apiKey"],
        "CTS_STORE": str(store_root),
        # Keep JupyterLab's settings and workspaces out of the user's home.
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    news = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    log = (tmp_path / "lab.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
            "--ServerApp.port_retries=0", "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.token={token}", "--allow-root", f"--ServerApp.root_dir={root}",
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:  # start-up of a real server, not simulated time: poll briefly
            try:
                if httpx.get(f"{url}/api/status", params={"token": token}).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text())
            time.sleep(0.2)
        yield f"{url}/lab/tree/{NOTEBOOK.name}?token={token}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _failed_chapter(emulator, client, project_id: str, pages: list[bytes]) -> str:
    emulator.set_faults(failure_rate=1.0, seed=3)
    chapter = client.create_chapter(project_id, pages=pages)
    for _ in range(30):
        if not client.get_chapter(chapter.id).processing:
            break
        emulator.advance(600)
    emulator.set_faults(failure_rate=0.0)
    assert client.get_chapter(chapter.id).failed
    return chapter.id


def test_operations_notebook_in_jupyterlab(
    lab, emulator, workspace, comic_project, client, tmp_path, make_page, store_root
):
    from page_images import make_folder
    from playwright.sync_api import expect, sync_playwright

    from toolkit.store import SnapshotStore

    # The store's one snapshot, of a workspace that has not paid yet: prices stay estimates.
    baseline = SnapshotStore(str(store_root)).take(client).snapshot_at
    failed_id = _failed_chapter(
        emulator, client, comic_project["id"], [make_page(41), make_page(42)]
    )
    now = emulator.now()  # the manual clock stays there: every answer's Date says so
    page_files = []
    for number in (2, 1):
        path = tmp_path / f"scan-{number}.png"
        path.write_bytes(make_page(100 + number))
        page_files.append(path)
    scans = make_folder(tmp_path / "scans", {10: 2, 11: 1}, seed=500)
    bad_scans = make_folder(tmp_path / "bad-scans", {10: 1, 11: 1}, seed=600)
    (bad_scans / "chapter-11" / "cover.svg").write_bytes(
        b'<svg xmlns="http://www.w3.org/2000/svg"/>'
    )

    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            page.set_default_timeout(WAIT_MS)
            # Assertions wait 5 s by default, too short for a kernel starting on a loaded
            # machine (the failure the rerun below was added for): the same wait as actions.
            expect.set_options(timeout=WAIT_MS)
            page.goto(lab)
            page.wait_for_selector(".jp-Notebook")
            # "Run All" before the kernel is up asks which kernel to start: wait for it.
            expect(page.get_by_text(re.compile(r"\| Idle$")).first).to_be_visible(timeout=WAIT_MS)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

            # Every cell ran against the emulator, and the panels rendered.
            expect(page.get_by_text("Working on the service at CTS_BASE_URL")).to_be_visible()
            expect(page.get_by_text("refused with 404")).to_be_visible()
            table = page.locator(".tk-chapters").first
            expect(table).to_be_visible()
            outputs = page.locator(".jp-OutputArea-output")
            dashboard = outputs.filter(has=page.locator(".tk-chapters"))
            uploads = outputs.filter(has=page.get_by_text("Reload projects"))
            rescans = outputs.filter(has=page.locator(".tk-warning"))

            # Dashboard: spend counts from the store's one snapshot, live, on the service's clock.
            # The failed run's 4 credits were spent after the snapshot.
            spend = f"Spent today: 4 credits; this week: 4 credits, as of {now:%H:%M} UTC"
            expect(dashboard.locator("small", has_text="Spent today")).to_contain_text(spend)
            # The Failed filter keeps the failed chapter, with its reason.
            page.locator(".widget-toggle-button", has_text="Failed (1)").click()
            expect(table.locator("tr.tk-chapter")).to_have_count(1)
            expect(table.locator(".tk-failed")).to_be_visible()
            expect(table.locator(".tk-reason")).to_contain_text("re-scan the chapter to retry")
            _shoot(dashboard, "dashboard-failed-filter")
            page.locator(".widget-toggle-button", has_text="All (1)").click()

            # Upload panel: two pages priced, then a double click on "Create chapter".
            # ipywidgets' FileUpload opens a chooser from an input kept outside the DOM.
            with page.expect_file_chooser() as chooser:
                page.locator("button.widget-upload").first.click()
            chooser.value.set_files(page_files)
            expect(
                page.get_by_text("2 pages x 2 languages at an assumed 1 credit each")
            ).to_be_visible()
            page.locator("button", has_text="Create chapter").first.dblclick()
            created = page.get_by_text("Created chapter 2 in Moonlit Harbor with 2 pages")
            expect(created).to_be_visible()

            # A refused upload: the number is taken; the panel says so in its own words.
            # (The kernel handles messages in order: by now the second click was handled.)
            with page.expect_file_chooser() as chooser:
                page.locator("button.widget-upload").first.click()
            chooser.value.set_files(page_files[:1])
            page.locator("input[placeholder='next']").first.fill("1")
            page.locator("button", has_text="Create chapter").first.click()
            refusal = "Chapter 1 is taken in Moonlit Harbor; the next free number is 3."
            expect(page.get_by_text(refusal)).to_be_visible()
            _shoot(uploads, "upload-refused")

            # A staged chapter, two pages held in the third tab, then started.
            page.locator("input[placeholder='next']").first.fill("")
            expect(page.get_by_text(refusal)).to_have_count(0)  # the refusal went
            page.get_by_text("Staged: create it empty").click()
            page.locator("button", has_text="Create chapter").first.click()
            expect(page.get_by_text("Created staged chapter 3")).to_be_visible()
            page.locator(".lm-TabBar-tabLabel", has_text="Add & start pages").click()
            with page.expect_file_chooser() as chooser:
                page.locator("button.widget-upload:visible").first.click()
            chooser.value.set_files(page_files)
            page.get_by_text("Hold: keep the pages").click()
            expect(
                page.get_by_text("Held pages cost nothing until they are started")
            ).to_be_visible()
            page.locator("button", has_text="Add pages").click()
            expect(
                page.get_by_text("Added 2 pages to Chapter 3 of Moonlit Harbor: held")
            ).to_be_visible()
            expect(page.get_by_text("Starting them will cost about 4 credits")).to_be_visible()
            page.locator("button", has_text="Start held pages").click()
            expect(
                page.get_by_text("Started Chapter 3 of Moonlit Harbor: 2 pages running.")
            ).to_be_visible()

            # Upload a folder. The pages tab's message is not about it: it goes.
            page.locator(".lm-TabBar-tabLabel", has_text="Upload a folder").click()
            expect(page.get_by_text("Started Chapter 3 of Moonlit Harbor")).to_have_count(0)
            # A bad file: the headline says nothing will be sent, and no price is shown.
            folder_box = page.locator("input[placeholder^='a folder of chapter-01/']")
            folder_box.fill(str(bad_scans))
            page.locator("button", has_text="Check folder").click()
            headline = "Nothing will be sent to Moonlit Harbor until the 1 problem below is fixed."
            expect(page.get_by_text(headline)).to_be_visible()
            plan_view = uploads.locator(".widget-html", has=page.get_by_text(headline))
            expect(plan_view).not_to_contain_text("credits")
            expect(plan_view).to_contain_text("chapter-11/cover.svg: is an SVG")
            expect(page.locator("button", has_text="Upload").last).to_be_disabled()
            _shoot(uploads, "upload-folder-refused")
            # The good folder: checked and priced, then sent with its summary.
            folder_box.fill(str(scans))
            page.locator("button", has_text="Check folder").click()
            expect(page.get_by_text("Send 2 chapters, 3 pages")).to_be_visible()
            page.locator("button", has_text="Upload 2 chapters").click()
            expect(page.get_by_text("2 chapters created in Moonlit Harbor.")).to_be_visible()
            expect(page.locator(".tk-rows").last).to_contain_text("created")
            _shoot(uploads, "upload-folder")

            # Re-scan panel: its list shows whole entries (the reasons are below it).
            choices = page.locator(".widget-select-multiple select")
            assert choices.evaluate("e => e.scrollWidth <= e.clientWidth")
            expect(rescans.locator(".tk-reasons")).to_contain_text("re-scan the chapter")
            # Choose the failed chapter, ask, double click the confirmation.
            choices.select_option(index=0)
            page.locator("button", has_text="Re-scan").first.click()
            expect(page.get_by_text("Yes, discard and re-scan")).to_be_visible()
            expect(page.locator(".tk-question")).to_contain_text("about 4 credits")
            page.get_by_text("Yes, discard and re-scan").dblclick()
            queued = page.get_by_text(re.compile("Moonlit Harbor / Chapter 1: re-scan queued"))
            expect(queued).to_be_visible()
            # The kernel handled the second click before this refresh: the result stayed.
            page.locator("button", has_text="Refresh").last.click()
            expect(page.get_by_text("No failed chapters.")).to_be_visible()
            expect(queued).to_be_visible()
            _shoot(rescans, "rescan-double-click")

            # The dashboard's spend rose by what the panels spent: 4 (a chapter of 2
            # pages) + 4 (2 held pages started) + 6 (the folder) + 4 (the re-scan), all in
            # 2 languages; the ledger is checked below.
            dashboard.locator("button", has_text="Refresh").click()
            spend = f"Spent today: 22 credits; this week: 22 credits, as of {now:%H:%M} UTC"
            expect(dashboard.locator("small", has_text="Spent today")).to_contain_text(spend)
            expect(dashboard).to_contain_text(
                f"22 of it since the latest snapshot, {baseline:%a %d %b %H:%M} UTC, the store's "
                "first: nothing before it counts"
            )
            _shoot(dashboard, "dashboard-live-spend")

            # Running the dashboard's cell again stops the old one's background refresh.
            dashboard.locator("label", has_text="Auto-refresh").click()
            cell = page.locator(".jp-CodeCell", has_text="dashboard = tk.widgets.Dashboard")
            cell.locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            expect(page.get_by_text("that has stopped.")).to_be_visible()

            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
        finally:
            browser.close()

    ledger = emulator.ledger(workspace["id"])
    after = [c for c in ledger["charges"] if datetime.fromisoformat(c["at"]) >= baseline]
    assert sum(c["credits"] for c in after) == 22  # what the dashboard showed
    created_here = [c for c in ledger["charges"] if c["reason"] == "create"][1:]
    # One chapter for the double click, then the folder's two; the failed run was first.
    assert [(c["pages"], c["credits"]) for c in created_here] == [(2, 4), (2, 4), (1, 2)]
    assert [(c["reason"], c["pages"]) for c in ledger["charges"] if c["reason"] == "start"] == [
        ("start", 2)
    ]
    rescans = [c for c in ledger["charges"] if c["reason"] == "rescan"]
    assert [(c["chapterId"], c["credits"]) for c in rescans] == [(failed_id, 4)]
    assert client.get_chapter(failed_id).failed is False
    chapters = client.list_chapters(comic_project["id"])
    assert [(c.position, c.page_count, c.started) for c in chapters] == [
        (1, 2, True),
        (2, 2, True),
        (3, 2, True),
        (10, 2, True),
        (11, 1, True),
    ]
    assert SCREENSHOT.stat().st_size > 10_000


def _shoot(element, name: str) -> None:
    """A screenshot of one panel, to look at (build/browser/NAME.png)."""
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    element.scroll_into_view_if_needed()
    element.screenshot(path=str(SCREENSHOT.parent / f"{name}.png"))
