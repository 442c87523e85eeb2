"""`toolkit upload DIR --project NAME [--yes]`: a folder of chapters from the command line."""

from __future__ import annotations

import io

import pytest
from page_images import make_folder

from toolkit.cli import main
from toolkit.client import Client


@pytest.fixture
def env(monkeypatch, emulator, workspace, tmp_path):
    monkeypatch.setenv("CTS_BASE_URL", emulator.url)
    monkeypatch.setenv("CTS_API_KEY", workspace["apiKey"])
    monkeypatch.setenv("CTS_STORE", str(tmp_path / "no-store-here"))


def answer(monkeypatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def charges(emulator, workspace) -> list[tuple[str, int]]:
    return [(c["reason"], c["credits"]) for c in emulator.ledger(workspace["id"])["charges"]]


def test_priced_confirmed_sent_and_summed_up(
    env, emulator, workspace, comic_project, tmp_path, capsys, monkeypatch
):
    folder = make_folder(tmp_path / "scans", {1: 2, 2: 1})
    answer(monkeypatch, "y\n")
    assert main(["upload", str(folder), "--project", "Moonlit Harbor"]) == 0
    out = capsys.readouterr()
    plan, _, summary = out.out.partition("Send it? [y/N] ")
    assert "Ch.  From         Pages  Size    Credits  Plan" in plan
    assert "Send 2 chapters, 3 pages" in plan and "about 6 credits (estimate)." in plan
    assert "created" in summary and summary.rstrip().endswith(
        "2 chapters created in Moonlit Harbor."
    )
    assert "2/2 chapters: 100%" in out.err  # the progress bar, over bytes, counting chapters
    assert charges(emulator, workspace) == [("create", 4), ("create", 2)]

    assert main(["upload", str(folder), "--project", "Moonlit Harbor", "--yes"]) == 0
    assert (
        "Nothing to send to Moonlit Harbor: every chapter is already there."
        in capsys.readouterr().out
    )
    assert len(charges(emulator, workspace)) == 2


def test_no_answer_sends_nothing(
    env, emulator, workspace, comic_project, tmp_path, capsys, monkeypatch
):
    folder = make_folder(tmp_path / "scans", {1: 1})
    for reply in ("n\n", ""):  # a no, and no terminal at all
        answer(monkeypatch, reply)
        assert main(["upload", str(folder), "--project", "Moonlit Harbor"]) == 0
        assert capsys.readouterr().out.rstrip().endswith("Nothing was sent.")
    assert charges(emulator, workspace) == []


def test_bad_files_are_listed_and_nothing_is_sent(
    env, emulator, workspace, comic_project, tmp_path, capsys
):
    folder = make_folder(tmp_path / "scans", {1: 1, 2: 1})
    (folder / "chapter-02" / "cover.svg").write_bytes(b'<svg xmlns="http://www.w3.org/2000/svg"/>')
    assert main(["upload", str(folder), "--project", "Moonlit Harbor", "--yes"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolkit upload: nothing was sent; fix these first:\n")
    assert "  chapter-02/cover.svg: is an SVG" in err
    assert charges(emulator, workspace) == []


def test_over_the_budget_asks_again_or_refuses_with_yes(
    env, emulator, workspace, comic_project, tmp_path, capsys, monkeypatch
):
    folder = make_folder(tmp_path / "scans", {1: 3})  # 3 pages x 2 languages: 6 credits
    args = ["upload", str(folder), "--project", "Moonlit Harbor", "--budget", "5"]
    assert main([*args, "--yes"]) == 1
    assert "over the budget of 5 credits; raise --budget to send it" in capsys.readouterr().err
    answer(monkeypatch, "y\nn\n")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "That is over your budget of 5 credits: send it anyway? [y/N] Nothing was sent." in out
    assert charges(emulator, workspace) == []
    answer(monkeypatch, "y\ny\n")
    assert main(args) == 0
    assert charges(emulator, workspace) == [("create", 6)]


def test_an_unknown_project_is_named_with_the_ones_there_are(env, comic_project, tmp_path, capsys):
    folder = make_folder(tmp_path / "scans", {1: 1})
    assert main(["upload", str(folder), "--project", "Nope", "--yes"]) == 1
    assert capsys.readouterr().err == (
        "toolkit upload: no project named 'Nope'; the workspace has: Moonlit Harbor\n"
    )


def test_a_stopped_upload_says_so_and_fails(
    env, emulator, workspace, comic_project, tmp_path, capsys
):
    folder = make_folder(tmp_path / "scans", {1: 1, 2: 1})
    emulator.set_credits(workspace["id"], 2)
    assert main(["upload", str(folder), "--project", "Moonlit Harbor", "--yes"]) == 1
    out, err = capsys.readouterr()
    assert "refused: Not enough credits. Add credits to the workspace, or send fewer pages." in out
    assert "run the same upload again to continue" in out
    assert err.endswith("toolkit upload: the upload stopped before the end (see above)\n")


def test_ctrl_c_says_what_was_created_and_that_a_rerun_continues(
    env, emulator, workspace, comic_project, tmp_path, capsys, monkeypatch
):
    folder = make_folder(tmp_path / "scans", {1: 1, 2: 1, 3: 1})
    create = Client.create_chapter
    calls = []

    def interrupted_on_the_second(self, *args, **kwargs):
        calls.append(kwargs["position"])
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C while chapter 2 is being sent
        return create(self, *args, **kwargs)

    monkeypatch.setattr(Client, "create_chapter", interrupted_on_the_second)
    assert main(["upload", str(folder), "--project", "Moonlit Harbor", "--yes"]) == 130
    out = capsys.readouterr().out
    assert out.rstrip().endswith(
        "1 chapter created in Moonlit Harbor, 1 interrupted while sent, 1 not sent. "
        "Interrupted: run the same upload again to continue where it stopped."
    )
    assert "interrupted: stopped while being sent: it may be in the project now" in out
    assert charges(emulator, workspace) == [("create", 2)]

    monkeypatch.setattr(Client, "create_chapter", create)
    assert main(["upload", str(folder), "--project", "Moonlit Harbor", "--yes"]) == 0
    assert "2 chapters created in Moonlit Harbor, 1 already there." in capsys.readouterr().out
    assert len(charges(emulator, workspace)) == 3


def test_ctrl_c_before_sending_says_nothing_was_sent(
    env, emulator, workspace, comic_project, tmp_path, capsys, monkeypatch
):
    folder = make_folder(tmp_path / "scans", {1: 1})

    def ctrl_c(question):
        raise KeyboardInterrupt

    monkeypatch.setattr("toolkit.cli._agree", ctrl_c)
    assert main(["upload", str(folder), "--project", "Moonlit Harbor"]) == 130
    assert capsys.readouterr().out.rstrip().endswith("Interrupted: nothing was sent.")
    assert charges(emulator, workspace) == []
