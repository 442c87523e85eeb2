"""Budgets per tag: `client = "Acme"` over all its projects across workspaces, each
workspace its own emulator and store; the spend checked against the emulators' ledgers."""

from __future__ import annotations

import pandas as pd
import pytest
from agency_stores import TAGS, Studio, two_studios
from epochs import SUITE_START
from grouped_studio import grouped_studio
from page_images import make_page

from toolkit.client import Client
from toolkit.emulator import Emulator
from toolkit.errors import ConfigError
from toolkit.store import SnapshotStore
from toolkit.watch import evaluate, read_config, run_cycle
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


def test_a_translation_group_s_budget_sums_the_group_s_projects_and_alerts_once(
    tmp_path, monkeypatch
):
    """`tag = "translation_group"` needs no [tags]: the group's projects are those the
    service puts in it (two of three here, on an emulator over loopback); the spend is the
    ledger's for those two, and the limit alerts once, then stays quiet a cycle later."""
    group = "5f0e9a77-2c1d-4b3e-8f6a-0d9c4e2b7a15"
    with Emulator(clock="manual", start=SUITE_START) as emulator:
        workspace, made = grouped_studio(emulator, group)
        monkeypatch.setenv("GROUP_TEST_KEY", workspace["apiKey"])
        with Client(base_url=emulator.url, api_key=workspace["apiKey"]) as client:
            SnapshotStore(tmp_path / "stores" / "studio").take(client)  # the baseline
            for n, project_id in enumerate(made.values()):
                client.create_chapter(project_id, pages=[make_page(40 + n), make_page(50 + n)])
            emulator.advance(3600)
            charges = emulator.ledger(workspace["id"])["charges"]
            ours = {made["Moonlit Harbor"], made["Paper Crane"]}
            by_chapter = {c.id: c.project_id for p in ours for c in client.list_chapters(p)}
            spent = sum(c["credits"] for c in charges if c["chapterId"] in by_chapter)
            others = sum(c["credits"] for c in charges if c["chapterId"] not in by_chapter)
            assert spent > 0 and others > 0  # the third project's spend is not the group's
            path = tmp_path / "watch.toml"
            path.write_text(
                f'store = "{tmp_path / "stores"}"\n[workspaces.studio]\n'
                f'base_url = "{emulator.url}"\nkey_env = "GROUP_TEST_KEY"\n'
                '[checks]\noff = ["anomaly", "snapshots"]\n'
                f'[[budgets]]\nscope = "tag"\ntag = "translation_group"\nname = "{group}"\n'
                f'period = "month"\ncredits = {spent}\n',
                encoding="utf-8",
            )
            first = run_cycle(read_config(path), retry_wait=0)
            found = [f for f in first.findings if f.check == "budget"]
            assert sorted(f.figures["level"] for f in found) == ["limit", "warn"]  # 80%, 100%
            assert {f.figures["spent"] for f in found} == {spent}
            assert {f.subject for f in found} == {f"translation_group {group}"}
            assert [a.event for a in first.changes if a.notifies] == ["opened", "opened"]
            emulator.advance(900)
            second = run_cycle(read_config(path), retry_wait=0)
            assert [f.check for f in second.findings].count("budget") == 2  # still over
            assert [a for a in second.changes if a.notifies] == []  # and not told again

            # A group no project is in is named at the first cycle, as a project is.
            typo = group[:-1] + "6"
            path.write_text(path.read_text().replace(group, typo), encoding="utf-8")
            with pytest.raises(ConfigError, match=f"no translation group '{typo}' in any "
                               f"workspace of the config; the nearest: '{group}'"):  # fmt: skip
                run_cycle(read_config(path), retry_wait=0)
