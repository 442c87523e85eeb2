"""The pytest plugin, from a throwaway project that only has the installed toolkit.

Each pytester run is a fresh pytest in a subprocess, in a temporary folder with none of
this suite's conftest: the fixtures come from the `pytest11` entry point alone.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import toolkit.pytest_plugin as plugin

pytest_plugins = ("pytester",)

# The plugins this suite installs beside the toolkit are left out, as a project that only
# installs the toolkit would not have them: nbval, schemathesis and hypothesis cost every
# pytest process seconds to import, and pytest-rerunfailures starts a thread of its own
# when pytest-xdist is installed.
ONLY_THE_TOOLKIT = (
    "-p", "no:cacheprovider", "-W", "error",
    *("-p", "no:nbval", "-p", "no:schemathesis", "-p", "no:hypothesispytest"),
    *("-p", "no:rerunfailures"),
)  # fmt: skip

USING_EVERY_FIXTURE = """
import pytest

def test_a_chapter_runs_and_its_events_arrive(cts_client, cts_project, cts_pages, cts_advance,
                                                 cts_webhooks):
    project = cts_project("Moonlit Harbor", target_languages=["en", "fr"])
    assert [p.name for p in cts_client.list_projects()] == ["Moonlit Harbor"]
    chapter = cts_client.create_chapter(project.id, pages=cts_pages(2))
    assert cts_client.get_chapter(chapter.id).processing
    cts_advance(3600)
    detail = cts_client.get_chapter(chapter.id)
    assert (detail.processing, detail.status) == (False, "needs_review")
    kinds = sorted(event["type"] for event in cts_webhooks.events)  # sent concurrently
    assert kinds == ["chapter.finished"] + ["export.ready"] * 6  # txt, clean, cbz x 2
    assert cts_webhooks.of_type("chapter.finished")[0]["data"]["chapterId"] == chapter.id

def test_faults_make_runs_fail(cts_client, cts_project, cts_pages, cts_advance, cts_faults,
                               cts_webhooks):
    cts_faults(failure_rate=1.0, seed=7)
    project = cts_project(kind="novel", target_languages=["en"])
    chapter = cts_client.create_chapter(project.id, text="One.\\nTwo.\\nThree.")
    cts_advance(3600)
    assert cts_client.get_chapter(chapter.id).failed
    assert [e["type"] for e in cts_webhooks.events] == ["chapter.failed"]

def test_the_clock_starts_at_a_named_instant_not_the_wall_clock(cts_emulator, cts_client,
                                                                cts_project, cts_pages):
    from datetime import UTC, datetime
    assert cts_emulator.now() == datetime(2026, 1, 7, 9, 0, tzinfo=UTC)
    chapter = cts_client.create_chapter(cts_project().id, pages=cts_pages(1))
    assert chapter.created_at == datetime(2026, 1, 7, 9, 0, tzinfo=UTC)

class TestFewCredits:
    @pytest.fixture
    def cts_credits(self):
        return 3

    def test_credits_are_what_the_test_says(self, cts_client, cts_project, cts_pages,
                                              cts_workspace):
        import toolkit as tk
        project = cts_project(target_languages=["en", "fr"])
        with pytest.raises(tk.InsufficientCredits):
            cts_client.create_chapter(project.id, pages=cts_pages(2))
        assert cts_workspace.api_key not in repr(cts_workspace)

def test_retries_wait_on_the_emulators_clock(cts_emulator, cts_client, cts_project, cts_faults):
    cts_project("Flaky")
    cts_faults(error_rate=0.5, seed=3)  # half the requests answered 503
    before = cts_emulator.now()
    for _ in range(10):
        assert [p.name for p in cts_client.list_projects()] == ["Flaky"]
    waited = (cts_emulator.now() - before).total_seconds()
    assert waited > 0  # the backoff passed as simulated time, not the test's own

def test_waiting_for_a_chapter_passes_simulated_time(cts_client, cts_project, cts_pages):
    chapter = cts_client.create_chapter(cts_project().id, pages=cts_pages(2))
    detail = cts_client.wait_for_chapter(chapter.id, timeout=3600)
    assert (detail.processing, detail.status) == (False, "needs_review")

class TestNewYearsEve:
    @pytest.fixture
    def cts_start(self):
        from datetime import UTC, datetime
        return datetime(2026, 12, 31, 23, 30, tzinfo=UTC)

    def test_the_test_names_its_instant(self, cts_advance):
        assert cts_advance(3600).isoformat() == "2027-01-01T00:30:00+00:00"

@pytest.fixture
def anyio_backend():
    return "asyncio"

@pytest.mark.anyio
async def test_the_async_client(cts_async_client, cts_project):
    project = cts_project("Async")
    async with cts_async_client as client:
        assert [p.id for p in await client.list_projects()] == [project.id]

@pytest.mark.anyio
async def test_the_async_client_used_without_async_with(cts_async_client, cts_project):
    project = cts_project("Left open")
    assert [p.id for p in await cts_async_client.list_projects()] == [project.id]

def test_a_later_test_sees_no_socket_left_open():
    import gc
    gc.collect()  # a leaked socket would warn here, and -W error makes that a failure
"""


# docs/emulator.md's chaos examples, as a user's test file.
CHAOS_EXAMPLES = """
import pytest
import toolkit as tk

CREATE = "/projects/{project_id}/chapters"

def test_my_upload_survives_rate_limits(cts_chaos, cts_client, cts_project, cts_pages):
    cts_chaos("POST", CREATE, "status", status=429, retry_after=30, count=2)
    chapter = cts_client.create_chapter(cts_project().id, pages=cts_pages(2))
    assert chapter.position == 1

def test_a_lost_answer_is_never_taken_for_ours(cts_chaos, cts_client, cts_project, cts_pages):
    project = cts_project()
    cts_chaos("POST", CREATE, "drop", count=1)  # acted, then the answer was lost
    with pytest.raises(tk.UnconfirmedCreate) as lost:  # nothing tells whose it is
        cts_client.create_chapter(project.id, pages=cts_pages(2), position=1)
    assert [c.id for c in cts_client.list_chapters(project.id)] == [lost.value.chapter_id]

def test_cut_and_reset_reads_are_retried(cts_chaos, cts_client, cts_project, cts_emulator):
    cts_project("Flaky")
    cts_chaos("GET", "/projects", "cut", after_bytes=10, count=1)
    cts_chaos("GET", "/projects", "reset", count=1)
    assert [p.name for p in cts_client.list_projects()] == ["Flaky"]
    assert [r["applied"] for r in cts_emulator.chaos_rules()] == [1, 1]

def test_a_slow_answer_outlasts_my_timeout(cts_chaos, cts_workspace, cts_project, cts_pages):
    project = cts_project()
    cts_chaos("POST", CREATE, "trickle", chunk_bytes=1, interval_ms=2000, count=1)
    with tk.Client(base_url=cts_workspace.base_url, api_key=cts_workspace.api_key,
                   timeout=0.3, max_retries=0) as client:
        with pytest.raises(tk.TransportError):
            client.create_chapter(project.id, pages=cts_pages(1))

def test_latency_is_only_slower(cts_chaos, cts_client, cts_project):
    cts_chaos("GET", "*", "latency", latency_ms=20)
    assert cts_client.get_project(cts_project().id).name == "Test project"
"""


# docs/emulator.md's state-control example.
CONTROL_EXAMPLE = """
def test_my_dashboard_shows_a_chapter_stuck_in_french(cts_emulator, cts_client, cts_project,
                                                      cts_pages, cts_advance):
    project = cts_project(target_languages=["en", "fr"])
    chapter = cts_client.create_chapter(project.id, pages=cts_pages(3))
    cts_emulator.hold(chapter.id, "translate", language="fr")
    cts_advance(3 * 3600)
    languages = {l.language_code: l for l in cts_client.list_chapters(project.id)[0].languages}
    assert languages["en"].covered > 0 and languages["fr"].covered == 0
    cts_emulator.release(chapter.id)
"""


NOT_USING_ANY = """
import sys, threading

def test_nothing_of_the_toolkit_runs():
    loaded = {m for m in sys.modules if m.startswith("toolkit.")}
    assert "toolkit.pytest_plugin" in loaded
    assert not {"toolkit.emulator", "toolkit.client", "toolkit.webhooks"} & loaded
    # Other plugins may run threads of their own (pytest-rerunfailures does beside xdist):
    # none may be a server or clock of ours.
    modules = {t.name: getattr(getattr(t, "_target", None), "__module__", "")
               for t in threading.enumerate()}
    ours = [name for name, module in modules.items() if module.startswith(("toolkit", "uvicorn"))]
    assert ours == []
"""


def test_the_fixtures_work_in_a_project_that_only_installs_the_toolkit(pytester):
    # One pytest run (each takes seconds to start): the plain file is collected first,
    # so it sees the session before any fixture of the plugin has run.
    pytester.makepyfile(
        test_a_plain=NOT_USING_ANY,
        test_b_integration=USING_EVERY_FIXTURE,
        test_c_chaos=CHAOS_EXAMPLES,
        test_d_control=CONTROL_EXAMPLE,
    )
    result = pytester.runpytest_subprocess(*ONLY_THE_TOOLKIT, "-v")
    result.assert_outcomes(passed=17)
    result.stdout.fnmatch_lines(["*test_a_plain.py::test_nothing_of_the_toolkit_runs PASSED*"])


# The README's example, twice, each test noting which worker ran it against
# which emulator.
UNDER_XDIST = """
import json, os, uuid
import pytest

def my_uploader(client, project_id, pages):
    return client.create_chapter(project_id, pages=pages)

@pytest.mark.parametrize("run", range(2))
def test_my_uploader(run, cts_emulator, cts_client, cts_project, cts_pages, cts_advance,
                     cts_webhooks):
    project = cts_project("Moonlit Harbor", kind="comic", target_languages=["en", "fr"])
    chapter = my_uploader(cts_client, project.id, cts_pages(3))
    cts_advance(3600)
    assert cts_client.get_chapter(chapter.id).status == "needs_review"
    finished = cts_webhooks.of_type("chapter.finished")
    assert [event["data"]["chapterId"] for event in finished] == [chapter.id]
    seen = {"worker": os.environ["PYTEST_XDIST_WORKER"], "emulator": cts_emulator.url,
            "webhooks": cts_webhooks.url, "projects": len(cts_client.list_projects())}
    with open(os.path.join(SEEN, uuid.uuid4().hex), "w") as out:
        json.dump(seen, out)
"""


@pytest.mark.slow
def test_the_readme_example_runs_under_xdist_each_test_on_its_own_emulator(pytester):
    seen = pytester.mkdir("seen")
    pytester.makepyfile(test_example=f"SEEN = {str(seen)!r}\n" + UNDER_XDIST)
    result = pytester.runpytest_subprocess(*ONLY_THE_TOOLKIT, "-p", "xdist", "-n", "2")
    result.assert_outcomes(passed=2)
    runs = [json.loads(path.read_text()) for path in seen.iterdir()]
    # Two tests on two workers: xdist hands one to each.
    assert sorted(run["worker"] for run in runs) == ["gw0", "gw1"]
    # Free ports: the workers' emulators and receivers ran side by side on addresses of
    # their own, and neither test saw the other's project.
    assert len({run["emulator"] for run in runs}) == len({run["webhooks"] for run in runs}) == 2
    assert [run["projects"] for run in runs] == [1, 1]


# A project's conftest that refuses the data, plotting and notebook stacks, as if the
# slim install (docs/pytest-plugin.md: the toolkit with --no-deps and five packages)
# were all there is. The plugin has loaded before it; its fixtures import when they run.
WITHOUT_THE_HEAVY_STACK = """
import importlib.abc, sys

REFUSED = {"pandas", "pyarrow", "duckdb", "deltalake", "polars", "numpy", "matplotlib",
           "ipywidgets", "IPython"}
assert not REFUSED & {name.partition(".")[0] for name in sys.modules}, "loaded already"

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in REFUSED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Missing())
"""


def test_the_readme_example_and_the_chaos_examples_run_without_the_heavy_stack(pytester):
    readme = UNDER_XDIST.replace('@pytest.mark.parametrize("run", range(2))', "").replace(
        "def test_my_uploader(run, ", "def test_my_uploader("
    )
    seen = pytester.mkdir("seen")
    pytester.makeconftest(WITHOUT_THE_HEAVY_STACK)
    pytester.makepyfile(
        test_readme=f"SEEN = {str(seen)!r}\nimport os\nos.environ.setdefault("
        "'PYTEST_XDIST_WORKER', 'none')\n" + readme,
        test_chaos=CHAOS_EXAMPLES,
    )
    result = pytester.runpytest_subprocess(*ONLY_THE_TOOLKIT)
    result.assert_outcomes(passed=6)


def test_importing_the_plugin_imports_nothing_heavy():
    heavy = ("pandas", "pyarrow", "matplotlib", "httpx", "uvicorn", "starlette", "PIL")
    code = f"import sys, toolkit.pytest_plugin; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_fixture_is_prefixed_so_it_cannot_clash():
    fixtures = [name for name, value in vars(plugin).items() if _is_fixture(value)]
    assert len(fixtures) == 12
    assert all(name.startswith("cts_") for name in fixtures), fixtures


def test_the_webhook_sink_keeps_only_verified_deliveries(cts_webhooks, cts_emulator):
    import httpx

    assert cts_emulator.test_webhook(cts_webhooks.endpoint_id) == {"ok": True, "status": 200}
    forged = httpx.post(
        f"{cts_webhooks.url}/webhooks",
        content=b'{"type": "chapter.finished", "timestamp": "2026-01-01T00:00:00Z", "data": {}}',
        headers={"webhook-id": "msg_x", "webhook-timestamp": "1", "webhook-signature": "v1,AA=="},
    )
    assert forged.status_code == 401
    assert cts_webhooks.events == []


def _is_fixture(value: object) -> bool:
    return type(value).__name__ == "FixtureFunctionDefinition" or hasattr(
        value, "_pytestfixturefunction"
    )


@pytest.mark.parametrize("name", ["emulator", "client", "workspace"])
def test_the_suites_own_fixtures_still_resolve_beside_the_plugin(name, request):
    assert request.getfixturevalue(name) is not None
