"""The API key and the webhook secret are printed nowhere: not in messages, logs, CLI
output, tracebacks (locals included), nor echoed from a base URL they were pasted into."""

from __future__ import annotations

import base64
import logging
import traceback

import httpx
import pytest
from scripted import BASE_URL, KEY, Script, scripted_client

import toolkit as tk
from toolkit import cli
from toolkit.config import Secret
from toolkit.webhooks import Receiver, verify

WEBHOOK_SECRET = "whsec_" + base64.b64encode(b"a webhook key nobody may see").decode()
SECRET_PARTS = (
    WEBHOOK_SECRET,
    WEBHOOK_SECRET.removeprefix("whsec_"),
    repr(b"a webhook key nobody may see"),
)


def shown(exc: BaseException, *, with_locals: bool = True) -> str:
    """What a traceback printing every frame's locals shows of the toolkit's frames, with
    the text of every exception in the chain (the test's own frame holds the key, of course)."""
    report = traceback.TracebackException.from_exception(exc, capture_locals=True)
    lines = []
    while report is not None:
        lines += [str(report), repr(report.exc_type)]
        for frame in report.stack:
            if with_locals and "/toolkit/" in frame.filename:
                lines += [f"{name}={value}" for name, value in (frame.locals or {}).items()]
        report = report.__cause__ or (None if report.__suppress_context__ else report.__context__)
    return "\n".join(lines)


BAD_ENDINGS = [" ", "\r", "\n", "\r\n", "\t", "\x00", "\x7f"]


@pytest.mark.parametrize("ending", BAD_ENDINGS, ids=repr)
def test_a_key_with_whitespace_or_control_characters_is_refused_without_echo(ending):
    with pytest.raises(tk.ConfigError, match="API key") as caught:
        tk.Client(BASE_URL, Secret(KEY + ending))
    assert KEY not in shown(caught.value)


@pytest.mark.parametrize("key", [" " + KEY, KEY[:5] + " " + KEY[5:], KEY + "é"], ids=repr)
def test_a_key_with_a_space_inside_or_a_non_ascii_letter_is_refused(key):
    with pytest.raises(tk.ConfigError, match="API key") as caught:
        tk.AsyncClient(BASE_URL, key)
    assert KEY not in str(caught.value) and KEY[5:] not in str(caught.value)


@pytest.mark.parametrize("ending", ["\n", " ", "\r"], ids=repr)
def test_the_cli_refuses_a_key_read_from_a_file_in_one_line(monkeypatch, capsys, caplog, ending):
    monkeypatch.setenv("CTS_BASE_URL", BASE_URL)
    monkeypatch.setenv("CTS_API_KEY", KEY + ending)
    caplog.set_level(logging.DEBUG)
    assert cli.main(["snapshot", "--store", "unused"]) == 1
    out, err = capsys.readouterr()
    assert err.startswith("toolkit snapshot: ") and err.count("\n") == 1
    assert "whitespace" in err and "network" not in err
    assert KEY not in out + err + caplog.text


def test_the_key_from_the_environment_is_in_no_frame_of_a_traceback(monkeypatch):
    monkeypatch.setenv("CTS_API_KEY", KEY)
    monkeypatch.setenv("CTS_BASE_URL", "http://cts.example.com")  # refused: http elsewhere
    with pytest.raises(tk.ConfigError) as caught:
        tk.Client()
    assert KEY not in shown(caught.value)


def test_a_refused_header_value_is_not_quoted_in_a_transport_error():
    refused = httpx.LocalProtocolError(f"Illegal header value b'Bearer {KEY}\\n'")
    client, _ = scripted_client(Script(refused))
    with client, pytest.raises(tk.ToolkitError) as caught:
        client.list_projects()
    assert "header" in str(caught.value)
    assert "network" not in str(caught.value)
    assert KEY not in shown(caught.value)


@pytest.mark.parametrize(
    "url",
    [
        KEY,  # the key pasted where the URL goes
        f"https://{KEY}@cts.example.com",
        f"https://cts.example.com/?api_key={KEY}",
        f"https://cts.example.com/#{KEY}",
        f"http://{KEY}:x@cts.example.com",
    ],
)
def test_a_key_pasted_into_the_base_url_is_not_echoed(url):
    with pytest.raises(tk.ConfigError, match="base URL") as caught:
        tk.Client(url, "another-key")
    # Its message and causes; the URL itself is no secret, so locals may hold it.
    assert KEY not in shown(caught.value, with_locals=False)


def test_verify_keeps_the_secret_out_of_traceback_locals():
    headers = {
        "webhook-id": "msg_1",
        "webhook-timestamp": "1700000000",
        "webhook-signature": "v1,AAAA",
    }
    with pytest.raises(tk.WebhookVerificationError) as caught:
        verify(b"{}", headers, WEBHOOK_SECRET, now=1700000000)
    text = shown(caught.value)
    assert not [part for part in SECRET_PARTS if part in text]


def test_a_secret_holder_is_accepted_by_verify_and_the_receiver():
    holder = Secret(WEBHOOK_SECRET)
    headers = {
        "webhook-id": "msg_1",
        "webhook-timestamp": "1700000000",
        "webhook-signature": "v1,AAAA",
    }
    with pytest.raises(tk.WebhookVerificationError, match="no v1 signature"):
        verify(b"{}", headers, holder, now=1700000000)
    receiver = Receiver(holder)
    try:
        text = repr(vars(receiver))
        assert not [part for part in SECRET_PARTS if part in text]
    finally:
        receiver.close()


def test_a_bad_receiver_secret_is_refused_without_showing_it():
    bad = "whsec_" + "!" * 20 + "nobody-may-see-this"
    with pytest.raises(tk.ConfigError) as caught:
        Receiver(bad)
    assert "nobody-may-see-this" not in shown(caught.value)


@pytest.mark.parametrize("client_class", [tk.Client, tk.AsyncClient], ids=lambda c: c.__name__)
def test_a_plain_key_is_held_from_the_first_line_of_the_clients_init(monkeypatch, client_class):
    monkeypatch.delenv("CTS_BASE_URL", raising=False)
    with pytest.raises(tk.ConfigError, match="no base URL") as caught:
        client_class(None, KEY)  # the key is fine: the base URL is missing
    text = shown(caught.value)
    assert KEY not in text
    assert "api_key=Secret('" in text  # the holder is what the frames show


@pytest.mark.parametrize(
    "secret",
    ["whsec_" + "!" * 20 + "nobody-may-see-this", "whsec_nobody-may-see-this=="],
    ids=["not-base64", "bad-padding"],
)
def test_a_malformed_webhook_secret_is_held_in_the_signing_primitive(secret):
    from toolkit import _signing

    with pytest.raises(ValueError, match="not 'whsec_' followed by base64") as caught:
        _signing.decode_secret(secret)
    text = shown(caught.value)
    assert "nobody-may-see-this" not in text
    assert "secret=Secret('" in text
    with pytest.raises(ValueError) as caught:
        _signing.sign(secret, "msg_1", 1700000000, b"{}")
    assert "nobody-may-see-this" not in shown(caught.value)
