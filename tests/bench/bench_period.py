"""Issue 43, item 2: the questions that read their period, side by side with the code
before them on the same store in the same run.

The stores are the growth benchmark's (`bench_growth`, kept under `--store-root` as
`<root>/<CHAPTERS>x<DAYS>`, written first when absent). The code before is the toolkit of
`--against` (a commit; by default the seventh round's final main, before this work),
taken out of git into a temporary folder; the code now is this checkout's. Each timing
runs in a fresh process with one of the two first on `sys.path`, old and new in turn, so
a swing of the shared machine's load falls on both; the medians and their ratio
(now / before) are printed with the load. Each question is asked once by each before
timing: both read the run stages they keep in the store (`_runs/`, one state per
toolkit source), as every question after the first of a snapshot's state does. The
week's throughput is timed with those stages already read (its re-scans come from
them): what is timed is its read of the lines.

The answers are compared too: each child prints a digest of its frame (of a page, its
bytes: a page holds no time of making), and the table says whether the two paths
answered the same. Each child also reports its peak resident memory. The weekly page
is asked twice: as `toolkit report --html` writes it, and by a tag (`weekly_tags`: each
project tagged with one of three clients), whose drill-down carries every chapter's row.

Command: `python -m tests.bench period --sizes 10000x30,30000x30 --store-root DIR`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

from tests.bench.bench_growth import Size
from tests.bench.bench_history import kept
from tests.bench.table import Table, spread

# The seventh round's final main: before the period reads (`SnapshotStore.query(window=)`).
BEFORE = "c494611"
QUESTIONS = ("watch_checks", "throughput_week", "forecast", "weekly", "weekly_tags")
# The eighth round's second pass (issue 43, item 2, what the first left whole); asked by
# by name (`--figures`), and all of them by `--figures all`.
MORE = ("store_check", "model_week", "explain_lines_week", "spend_week", "finished_week",
        "dashboard")  # fmt: skip
LABELS = {
    "watch_checks": "tk.watch.checks (budgets, due dates, anomalies)",
    "throughput_week": "throughput of the last week, daily by project",
    "forecast": "forecast by project",
    "weekly": "the weekly page (tk.report, HTML)",
    "store_check": "the watch's store check (a day's cycles of 15 min)",
    "model_week": "throughput of the last week, daily by model",
    "explain_lines_week": "tk.explain lines rows of the last week",
    "spend_week": "credit_spend of the last week, daily by project",
    "finished_week": "finished of the last week, daily by model",
    "dashboard": "the Dashboard's store figures at a new snapshot (spend, stuck, review)",
    "weekly_tags": "the weekly page by a tag (tk.report, HTML, a client tag on every project)",
}
# The pages hold no time of making: both sides' pages are compared byte for byte.
PAGES = ("weekly", "weekly_tags")
HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass(frozen=True)
class PeriodOptions:
    sizes: tuple[Size, ...] = (Size(10_000, 30),)
    store_root: str | None = None
    against: str = BEFORE
    runs: int = 3
    questions: tuple[str, ...] = QUESTIONS


def run(options: PeriodOptions) -> list[Table]:
    if options.store_root is None:
        raise SystemExit("period: give --store-root (the growth stores are kept there)")
    tables = []
    with tempfile.TemporaryDirectory(prefix="bench-period-") as folder:
        old = _checkout(options.against, folder)
        for size in options.sizes:
            root = os.path.join(options.store_root, size.name)
            kept(root, size.options())
            tables.append(_measure(root, size, old, options))
    return tables


def _checkout(commit: str, folder: str) -> str:
    """The toolkit package of `commit`, in `folder`."""
    archive = subprocess.run(
        ["git", "-C", HERE, "archive", commit, "toolkit"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
    return folder


def _measure(root: str, size: Size, old: str, options: PeriodOptions) -> Table:
    table = Table(
        f"Issue 43, item 2: questions that read their period ({size.name}; now against "
        f"{options.against}; load {os.getloadavg()[0]:.1f} at the start)"
    )
    for question in options.questions:
        # Asked once by each first: each keeps its run stages for this state.
        digests = {path: _child(question, root, path)["digest"] for path in (old, HERE)}
        times: dict[str, list[float]] = {old: [], HERE: []}
        peaks: dict[str, list[float]] = {old: [], HERE: []}
        loads = []
        for _ in range(options.runs):
            for path in (old, HERE):
                answer = _child(question, root, path)
                times[path].append(answer["seconds"])
                peaks[path].append(answer["peak_mib"])
                loads.append(answer["load"])
        before, now = (statistics.median(times[p]) for p in (old, HERE))
        same = "equal answers" if digests[old] == digests[HERE] else "ANSWERS DIFFER"
        if question in PAGES:
            same = "equal pages" if digests[old] == digests[HERE] else "PAGES DIFFER"
        table.add(
            LABELS[question],
            f"{now:.2f} s against {before:.2f} s ({now / before:.2f}x); peak "
            f"{max(peaks[HERE]):,.0f} MiB against {max(peaks[old]):,.0f} MiB",
            f"now {spread(times[HERE])}, before {spread(times[old])}; {same}; "
            f"load {min(loads):.1f}-{max(loads):.1f}",
        )
        print(f"  {size.name}: {question} {now:.2f} s against {before:.2f} s", flush=True)
    return table


def _child(question: str, root: str, path: str) -> dict[str, Any]:
    # `-m` puts the working directory first on sys.path, before PYTHONPATH: the child
    # runs in the folder whose toolkit it times (this checkout's `tests` found after it).
    env = {**os.environ, "PYTHONPATH": HERE}
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench.bench_period", question, root],
        env=env, cwd=path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"period: {question} under {path} failed:\n{done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not answer["toolkit"].startswith(os.path.join(os.path.realpath(path), "")):
        raise SystemExit(f"period: the child under {path} imported {answer['toolkit']}")
    return answer


# -- the child: one question, timed ----------------------------------------------------


def _prepare(question: str, root: str) -> Any:
    """What is read before the clock starts: for the week's throughput (by project or
    model) and its lines rows, the re-scans they take from the run stages (kept in the
    store; loading them is not the lines' read, which is what changed)."""
    from toolkit import SnapshotStore
    from toolkit.analysis.observed import observe
    from toolkit.analysis.runs import rescans_seen

    store = SnapshotStore(root)
    if question in ("throughput_week", "model_week", "explain_lines_week"):
        rescans_seen(observe(store))
    return store


def _ask(question: str, store: Any, folder: str) -> Any:
    from datetime import timedelta

    import toolkit as tk
    from tests.bench.watch_config import WATCH_CONFIG
    from toolkit import analysis

    if question == "watch_checks":
        config = os.path.join(folder, "watch.toml")
        due = "\n".join(f'"Series {n}" = 2025-01-01' for n in range(5))
        with open(config, "w") as file:
            file.write(
                WATCH_CONFIG.format(root=folder, url="http://127.0.0.1:9", project="Series 1",
                                    due=due)
            )  # fmt: skip
        return tk.watch.checks(store, config)
    last = store.snapshots()["snapshot_at"].iloc[-1]
    since, until = last - timedelta(days=7), last + timedelta(hours=1)
    if question == "throughput_week":
        return analysis.throughput(store, "1D", "project_id", since=since, until=until)
    if question == "model_week":
        return analysis.throughput(store, "1D", "model", since=since, until=until)
    if question == "explain_lines_week":
        return tk.explain(store, "lines", since=since, until=until)
    if question == "spend_week":
        return analysis.credit_spend(store, "1D", "project_id", since=since, until=until)
    if question == "finished_week":
        return analysis.finished(store, freq="1D", by="model", since=since, until=until)
    if question == "store_check":
        return _store_check(store)
    if question == "dashboard":
        return _dashboard(store, last)
    if question == "forecast":
        return analysis.forecast(store, by="project_id")
    if question == "weekly":
        return tk.report(store, os.path.join(folder, "weekly.html"))
    if question == "weekly_tags":
        names = store.latest("projects")["name"].dropna().astype(str)
        tags = {name: {"client": CLIENTS[n % len(CLIENTS)]} for n, name in enumerate(names)}
        return tk.report(store, os.path.join(folder, "weekly.html"), tags=tags)
    raise SystemExit(f"no question {question!r}; the questions are {', '.join(QUESTIONS + MORE)}")


def _store_check(store: Any) -> Any:
    """What the watch's cycle asks of the store check: bounded where the toolkit has the
    rotation (`toolkit.store.rotation`), whole before it."""
    import pandas as pd

    from toolkit.store import check_report

    try:
        from toolkit.store.rotation import CheckRotation
    except ImportError:
        found = check_report(store.root).findings
    else:
        rotation = CheckRotation(store.root, cycles=96)
        found = check_report(store.root, rotation=rotation).findings
    return pd.DataFrame({"finding": [str(f) for f in found]})


def _dashboard(store: Any, last: Any) -> Any:
    """The Dashboard's store figures when a new snapshot comes (`widgets._spend`'s
    spend today and this week, the stalled chapters, the review line)."""
    import pandas as pd

    from toolkit import analysis
    from toolkit.reporting import period, spend

    today = last.normalize()
    monday = today - pd.Timedelta(days=today.weekday())
    spent = [float(spend(store, period(store, since=day))["credits"].sum())
             for day in (today, monday)]  # fmt: skip
    store.latest("chapters")
    stuck = analysis.stuck(store, threshold=analysis.STALL_AFTER)
    backlog = analysis.review_backlog(store)
    return pd.concat([pd.DataFrame({"spent": spent}), stuck.astype(str), backlog.astype(str)])


# The tag the tagged page groups by: each project one of three clients, in turn.
CLIENTS = ("Acme", "Globex", "Initech")


def _digest(answer: Any) -> str:
    import hashlib
    from pathlib import Path

    import pandas as pd

    if isinstance(answer, Path):  # a page: its bytes
        return hashlib.sha256(answer.read_bytes()).hexdigest()[:16]
    if not isinstance(answer, pd.DataFrame):
        return ""
    text = answer.astype(str).to_csv(index=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def main(argv: list[str]) -> None:
    import resource
    import time

    question, root = argv
    import toolkit
    import toolkit.analysis
    import toolkit.reporting
    import toolkit.watch  # imported before the clock starts, as the others

    store = _prepare(question, root)
    with tempfile.TemporaryDirectory(prefix="bench-period-") as folder:
        began = time.perf_counter()
        answer = _ask(question, store, folder)
        seconds = time.perf_counter() - began
        digest = _digest(answer)  # a page is read before its folder goes
    # The process's peak resident memory (Linux counts it in KiB).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "digest": digest, "peak_mib": peak,
                      "load": os.getloadavg()[0],
                      "toolkit": os.path.realpath(toolkit.__file__)}))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
