"""`toolkit snapshot --workspace NAME`: several workspaces, each with its own key."""

from __future__ import annotations

import os

import pytest

from toolkit.agency import _env_suffix, read_workspaces_config, workspace_settings
from toolkit.cli import main
from toolkit.errors import ConfigError
from toolkit.store import SnapshotStore


@pytest.fixture
def two_workspaces(monkeypatch, emulator, tmp_path):
    """Studio A's key in the environment, studio B's named by a config file."""
    a = emulator.create_workspace(name="A", credits=100)
    b = emulator.create_workspace(name="B", credits=100)
    for ws, name in ((a, "Alpha"), (b, "Beta")):
        emulator.create_project(ws["id"], name=name, kind="comic", source_language="ja",
                                reading_direction="rtl", process_steps="text",
                                target_languages=["en"])  # fmt: skip
    for variable in [v for v in os.environ if v.startswith("CTS_")]:
        monkeypatch.delenv(variable)
    monkeypatch.setenv("CTS_BASE_URL", emulator.url)
    monkeypatch.setenv("CTS_API_KEY_STUDIO_A", a["apiKey"])
    monkeypatch.setenv("BETA_KEY", b["apiKey"])
    config = tmp_path / "workspaces.toml"
    config.write_text('[studio-b]\napi_key_env = "BETA_KEY"\n', encoding="utf-8")
    return tmp_path / "stores", config, (a["apiKey"], b["apiKey"])


def test_snapshot_takes_each_workspace_into_its_own_store(two_workspaces, capsys):
    root, config, keys = two_workspaces
    argv = ["snapshot", "--store", str(root), "--config", str(config),
            "--workspace", "studio-a", "--workspace", "studio-b"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("studio-a: snapshot ") and "\nstudio-b: snapshot " in out
    for name, project in (("studio-a", "Alpha"), ("studio-b", "Beta")):
        store = SnapshotStore(root / name)
        assert store.latest("projects")["name"].tolist() == [project]
    for key in keys:  # never printed, never stored
        assert key not in out
        for file in root.rglob("*"):
            assert not file.is_file() or key.encode() not in file.read_bytes()


def test_a_workspace_without_a_key_is_named_with_the_variable_to_set(two_workspaces, capsys):
    root, _, _ = two_workspaces
    assert main(["snapshot", "--store", str(root), "--workspace", "studio-c"]) == 1
    err = capsys.readouterr().err
    assert "no API key for workspace 'studio-c'" in err and "CTS_API_KEY_STUDIO_C" in err
    assert not root.exists()  # nothing taken when a workspace is not configured


def test_a_key_in_a_file_others_can_read_is_refused(tmp_path, monkeypatch):
    config = tmp_path / "workspaces.toml"
    config.write_text('[studio-a]\napi_key = "cts_secret"\nbase_url = "https://x.example"\n')
    config.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600") as caught:
        read_workspaces_config(config)
    assert "cts_secret" not in str(caught.value)
    config.chmod(0o600)
    settings = workspace_settings("studio-a", config=read_workspaces_config(config), store_root="s")
    assert settings.api_key.reveal() == "cts_secret" and "cts_secret" not in repr(settings)
    assert settings.store == os.path.join("s", "studio-a")
    assert _env_suffix("studio-a.eu") == "STUDIO_A_EU"
    config.write_text("[studio-a\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_workspaces_config(config)


def test_the_watchs_config_configures_the_snapshot_of_the_same_workspaces(
    two_workspaces, emulator, tmp_path, capsys
):
    """One format, one file: `toolkit watch`'s [workspaces.NAME] tables serve
    `toolkit snapshot` as they are, and the watch reads the same file."""
    from toolkit.watch import read_config as read_watch_config

    root, _, _ = two_workspaces
    shared = tmp_path / "watch.toml"
    shared.write_text(
        f'store = "{root}"\n'
        f'[workspaces.studio-a]\nbase_url = "{emulator.url}"\nkey_env = "CTS_API_KEY_STUDIO_A"\n'
        f'[workspaces.studio-b]\nbase_url = "{emulator.url}"\nkey_env = "BETA_KEY"\n'
        f'store = "{root}/b"\n',
        encoding="utf-8",
    )
    argv = ["snapshot", "--config", str(shared), "--workspace", "studio-a",
            "--workspace", "studio-b"]  # fmt: skip
    assert main(argv) == 0
    assert "note:" not in capsys.readouterr().err  # the one format: nothing to say
    assert SnapshotStore(root / "studio-a").latest("projects")["name"].tolist() == ["Alpha"]
    assert SnapshotStore(root / "b").latest("projects")["name"].tolist() == ["Beta"]
    watched = read_watch_config(shared).workspaces
    assert {n: w.store for n, w in watched.items()} == {
        "studio-a": f"{root}/studio-a",
        "studio-b": f"{root}/b",
    }


def test_the_earlier_format_is_still_read_with_a_one_line_note(two_workspaces, capsys):
    _, config, _ = two_workspaces  # [studio-b] api_key_env = ...
    assert read_workspaces_config(config) == {"studio-b": {"api_key_env": "BETA_KEY"}}
    note = capsys.readouterr().err.strip().splitlines()
    assert len(note) == 1 and note[0].startswith("note: workspaces config ")
    assert "[workspaces.NAME]" in note[0] and "key_env" in note[0]


@pytest.mark.slow
def test_report_per_workspace_shows_the_agency_spend(two_workspaces, emulator, tmp_path):
    import pandas as pd
    from page_images import make_page

    root, config, keys = two_workspaces
    argv = ["snapshot", "--store", str(root), "--config", str(config),
            "--workspace", "studio-a", "--workspace", "studio-b"]  # fmt: skip
    assert main(argv) == 0
    from toolkit.client import Client

    with Client(base_url=emulator.url, api_key=keys[0]) as client:
        project = client.list_projects()[0]
        client.create_chapter(project.id, pages=[make_page(1), make_page(2)])
    emulator.advance(3600)
    assert main(argv) == 0
    out = tmp_path / "report"
    assert main(["report", "--store", str(root), "--out", str(out),
                 "--workspace", "studio-a", "--workspace", "studio-b"]) == 0  # fmt: skip
    for name in ("studio-a", "studio-b"):
        spend = pd.read_csv(out / name / "spend_this_month.csv").set_index("workspace")
        assert spend.loc["studio-a", "this_month"] == 2  # two pages in one language
        assert spend.loc["studio-b", "this_month"] == 0
        assert (out / name / "burn_down.png").exists()
