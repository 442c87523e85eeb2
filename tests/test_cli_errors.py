"""Bad settings and paths end a command with one line `toolkit <command>: ...` and exit 1;
through the Python API they raise a `ToolkitError` subclass naming what is wrong."""

from __future__ import annotations

import pytest
from scripted import KEY

import toolkit as tk
from toolkit import cli

BAD_URLS = {
    "an IPv6 address without its ]": ("http://[::1", "closing"),
    "a port over 65535": ("http://127.0.0.1:70000", "port"),
    "a port that is not a number": ("http://127.0.0.1:eighty", "port"),
    "port 0": ("http://127.0.0.1:0", "port"),
}


@pytest.mark.parametrize(("url", "says"), BAD_URLS.values(), ids=BAD_URLS.keys())
def test_a_malformed_base_url_is_one_line_and_exit_1(monkeypatch, capsys, url, says):
    monkeypatch.setenv("CTS_BASE_URL", url)
    monkeypatch.setenv("CTS_API_KEY", KEY)
    assert cli.main(["snapshot", "--store", "unused"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("toolkit snapshot: the base URL") and err.count("\n") == 1
    assert says in err


@pytest.mark.parametrize(("url", "says"), BAD_URLS.values(), ids=BAD_URLS.keys())
def test_a_malformed_base_url_is_a_config_error_in_python(url, says):
    with pytest.raises(tk.ConfigError, match=says):
        tk.Client(url, KEY)


def test_report_out_pointing_at_a_file_is_one_line_and_exit_1(tmp_path, capsys):
    taken = tmp_path / "report.txt"
    taken.write_text("keep me")
    assert cli.main(["report", "--store", str(tmp_path / "store"), "--out", str(taken)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("toolkit report: ") and err.count("\n") == 1
    assert str(taken) in err and "is a file" in err
    assert taken.read_text() == "keep me"


def test_report_out_under_a_file_is_a_toolkit_error_naming_it(tmp_path):
    from toolkit.reporting import write_report

    taken = tmp_path / "report.txt"
    taken.write_text("keep me")
    with pytest.raises(tk.ToolkitError, match=r"report\.txt.* is a file"):
        write_report(tmp_path / "store", out=taken / "inside")
