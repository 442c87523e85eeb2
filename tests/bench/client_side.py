"""The client side of the benchmarks, run in a process of its own.

A real service runs on another machine; here the emulator runs in the benchmark's
process and everything a user's notebook would do runs in a separate Python process
(`ClientProcess`), so the two do not share one interpreter lock and the client's
figures are the client's. Each function below is called in that process and returns
plain numbers.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class ClientProcess:
    """One spawned Python process that runs benchmark functions one at a time."""

    def __init__(self) -> None:
        self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._pool.submit(function, *args, **kwargs).result()

    def close(self) -> None:
        self._pool.shutdown()

    def __enter__(self) -> ClientProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time a process (this one by default) has used, all threads, user and system."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    with open(f"/proc/{pid}/stat") as stat:
        # Fields 14 and 15 (utime, stime), counted after the parenthesised command name.
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- pulls ---------------------------------------------------------------------------------


def time_pulls(
    url: str,
    key: str,
    *,
    runs: int,
    concurrency: int | None,
    server_pid: int,
    details: str = "all",
    warm_up: bool = True,
) -> dict[str, Any]:
    """`runs` pulls (every chapter's detail by default), after one warm-up pull without;
    with the CPU time the client and the server (process `server_pid`) spent on each, and
    how the last pull's pace moved (`concurrency=None` adapts)."""
    from toolkit import Client, pull
    from toolkit.frames import pacing

    paces: list[pacing.Pace] = []
    made = pacing.Pace.__init__

    def record(pace: pacing.Pace, *args: Any, **kwargs: Any) -> None:
        made(pace, *args, **kwargs)
        paces.append(pace)

    pacing.Pace.__init__ = record  # type: ignore[method-assign]
    with Client(base_url=url, api_key=key, timeout=120) as client:
        if warm_up:
            pull(client, details="none", concurrency=concurrency, progress=False)
        times, cpu, server_cpu, requests = [], [], [], 0
        for _ in range(runs):
            started, used = time.perf_counter(), cpu_seconds()
            served = cpu_seconds(server_pid)
            workspace = pull(client, details=details, concurrency=concurrency, progress=False)
            times.append(time.perf_counter() - started)
            cpu.append(cpu_seconds() - used)
            server_cpu.append(cpu_seconds(server_pid) - served)
            requests = workspace.requests
    pacing.Pace.__init__ = made  # type: ignore[method-assign]
    pace = paces[-1]
    return {
        "times": times,
        "cpu": cpu,
        "server_cpu": server_cpu,
        "requests": requests,
        "chapters": len(workspace.chapters),
        "languages": len(workspace.languages),
        "exports": len(workspace.exports),
        "pace": {
            "peak": pace.peak,
            "final": pace.size,
            "backoffs": pace.backoffs,
            "retries": pace.retries,
        },
    }


def naive_loop(url: str, key: str, *, project_limit: int | None) -> dict[str, Any]:
    """What a user writes first: one GET after another, with plain httpx.

    `project_limit` stops after that many projects' chapters (all are listed).
    """
    import httpx

    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=f"{url}/api/v1", headers=headers, timeout=120) as http:
        http.get("/projects").raise_for_status()  # warm-up: the connection
        started, requests = time.perf_counter(), 0
        projects = _get(http, "/projects")
        requests += 1
        details = []
        for project in projects[:project_limit]:
            chapters = _get(http, f"/projects/{project['id']}/chapters")
            requests += 1
            for chapter in chapters:
                details.append(_get(http, f"/chapters/{chapter['id']}"))
                requests += 1
        return {"seconds": time.perf_counter() - started, "requests": requests}


def _get(http: Any, path: str) -> Any:
    response = http.get(path)
    response.raise_for_status()
    return response.json()


def route_times(url: str, key: str, paths: dict[str, str], *, repeat: int) -> dict[str, float]:
    """Median seconds of one sequential GET of each path (no injected latency expected)."""
    import statistics

    import httpx

    headers = {"Authorization": f"Bearer {key}"}
    medians = {}
    with httpx.Client(base_url=f"{url}/api/v1", headers=headers, timeout=120) as http:
        for name, path in paths.items():
            _get(http, path)
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                _get(http, path)
                times.append(time.perf_counter() - started)
            medians[name] = statistics.median(times)
    return medians


# -- snapshots -----------------------------------------------------------------------------


def take_snapshot(url: str, key: str, root: str, *, details: str) -> dict[str, Any]:
    """One `SnapshotStore(root).take`, as `toolkit snapshot` runs it: a fresh process
    state each time, the previous snapshot read back from the store."""
    from toolkit import Client, SnapshotStore

    store = SnapshotStore(root)
    with Client(base_url=url, api_key=key, timeout=120) as client:
        started = time.perf_counter()
        info = store.take(client, details=details, progress=False)  # type: ignore[arg-type]
        seconds = time.perf_counter() - started
    return {"seconds": seconds, "pull_seconds": info.seconds, "requests": info.requests}
