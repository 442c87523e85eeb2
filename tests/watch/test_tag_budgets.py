"""Budgets per tag: `client = "Acme"` over all its projects across workspaces, each
workspace its own emulator and store; the spend checked against the emulators' ledgers."""

from __future__ import annotations

import pandas as pd
import pytest
from agency_stores import TAGS, Studio, two_studios
from epochs import SUITE_START

from toolkit.watch import evaluate, read_config
from toolkit.watch.budget import bounds


@pytest.fixture(scope="module")
def studios(tmp_path_factory) -> dict[str, Studio]:
    return two_studios(tmp_path_factory.mktemp("stores"), SUITE_START)


def config_with(tmp_path, studios: dict[str, Studio], budgets: str):
    lines = []
    for name, studio in studios.items():
        lines += [f"[workspaces.{name}]", f'base_url = "{studio.url}"', 'key_env = "UNUSED_KEY"',
                  f'store = "{studio.store.root}"']  # fmt: skip
    for project, tags in TAGS.items():
        lines.append(f'[tags."{project}"]')
        lines += [f'{key} = "{value}"' for key, value in tags.items()]
    path = tmp_path / "watch.toml"
    path.write_text("\n".join(lines) + "\n[checks]\noff = [\"anomaly\", \"snapshots\", "
                    "\"stalled\", \"failed_waiting\", \"held_pages\", \"due\", "
                    "\"missing_events\"]\n" + budgets, encoding="utf-8")  # fmt: skip
    return read_config(path)


def charged(studios: dict[str, Studio], client: str, since: pd.Timestamp) -> int:
    """What the emulators charged the client's projects, in every workspace, since then."""
    total = 0
    for studio in studios.values():
        ours = studio.charges["project"].map(lambda p: TAGS[p].get("client")) == client
        total += int(studio.charges.loc[ours & (studio.charges["at"] >= since), "credits"].sum())
    return total


def test_a_client_s_budget_sums_its_projects_in_every_workspace_and_says_so(studios, tmp_path):
    stores = {name: studio.store for name, studio in studios.items()}
    now = max(store.snapshots()["snapshot_at"].iloc[-1] for store in stores.values())
    week, _ = bounds(now, "week")
    month, _ = bounds(now, "month")
    acme_week, acme_month = charged(studios, "Acme", week), charged(studios, "Acme", month)
    assert 0 < acme_week < acme_month  # week one's chapters count in the month only
    budgets = f"""\
[[budgets]]
scope = "tag"
tag = "client"
name = "Acme"
period = "week"
credits = {acme_week + 5}
warn_at = 0.5
[[budgets]]
scope = "tag"
tag = "client"
name = "Acme"
period = "month"
credits = {acme_month}
[[budgets]]
scope = "tag"
tag = "client"
name = "Brio"
period = "month"
credits = 1000
"""
    found = [f for f in evaluate(stores, config_with(tmp_path, studios, budgets))
             if f.check == "budget"]  # fmt: skip
    said = {(f.figures["period"], f.figures["level"]): f for f in found}
    assert sorted(said) == [("month", "limit"), ("month", "warn"), ("week", "warn")]  # not Brio
    weekly = said[("week", "warn")]
    assert (weekly.scope, weekly.subject, weekly.workspace) == ("tag", "client Acme", "agency")
    assert weekly.figures["spent"] == acme_week
    assert weekly.message.startswith(
        f"client Acme has spent {acme_week:,} of its {acme_week + 5:,} credits for the week "
        f"from {week.day} {week:%b}"
    )
    assert said[("month", "limit")].figures["spent"] == acme_month
    assert "over the limit" in said[("month", "limit")].message
