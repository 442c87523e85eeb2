"""The watch config: the contract's example reads, problems name file, line and key."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest

from toolkit.errors import ConfigError
from toolkit.watch.config import _key_lines, parse_duration, read_config

EXAMPLE = """\
store = "data/snapshots"
interval = "15m"
[workspaces.studio]            # the label; any number of workspaces
base_url = "https://translate.example.com"
key_env = "CTS_API_KEY"        # keys only from the environment
[[budgets]]
scope = "project"              # project | workspace | agency
name = "Moonlit Harbor"        # a project's or workspace's name (not for agency)
period = "month"               # month | week
credits = 500
warn_at = 0.8
[checks]
stalled_after = "90min"
failed_waiting_after = "4h"
remind = "24h"
[due]
"Moonlit Harbor" = "2026-12-20"
[notify.webhook]
url = "https://hooks.example.com/cts"   # http only for loopback, with allow_private = true
secret_env = "WATCH_WEBHOOK_SECRET"     # whsec_...
[notify.slack]
url_env = "SLACK_WEBHOOK_URL"
[notify.email]
host = "smtp.example.com"
port = 587
from = "cts-watch@example.com"
to = ["lead@example.com"]
user_env = "SMTP_USER"
password_env = "SMTP_PASSWORD"
"""


def written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "watch.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_contracts_example_reads_into_typed_settings(tmp_path):
    config = read_config(written(tmp_path, EXAMPLE))
    assert config.store == str(tmp_path / "data/snapshots")
    assert config.interval == timedelta(minutes=15)
    assert config.workspaces["studio"].store == str(tmp_path / "data/snapshots/studio")
    (budget,) = config.budgets
    assert (budget.scope, budget.name, budget.period, budget.credits, budget.warn_at) == (
        "project", "Moonlit Harbor", "month", 500, (0.8,),
    )  # fmt: skip
    assert config.checks.stalled_after == timedelta(minutes=90)
    assert config.checks.remind == timedelta(hours=24)
    assert config.due == {"Moonlit Harbor": date(2026, 12, 20)}
    assert config.email is not None and config.email.sender == "cts-watch@example.com"
    assert config.slack is not None and config.slack.url_env == "SLACK_WEBHOOK_URL"


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("remind = ", "remnd = ", "line 15: checks.remnd: unknown key"),
        ("warn_at = 0.8", "warn_at = 8", "line 11: budgets[0].warn_at: is a share"),
        ("credits = 500", 'credits = "500"', "line 10: budgets[0].credits: must be a whole number"),
        ('period = "month"', 'period = "year"', "line 9: budgets[0].period: 'year' is not one of"),
        ('"4h"', '"4 hours later"', "line 14: checks.failed_waiting_after: '4 hours later'"),
        ("2026-12-20", "2026-13-20", "line 17: due.Moonlit Harbor: '2026-13-20' is not a date"),
        ("https://hooks.example.com/cts", "http://hooks.example.com/cts",
         "line 19: notify.webhook.url: the webhook URL (http://hooks.example.com) must be https"),
        ('key_env = "CTS_API_KEY"', 'key_env = "cts_live_abc 123"',
         "line 5: workspaces.studio.key_env: is not an environment variable's name (the value"),
    ],
)  # fmt: skip
def test_a_bad_key_or_value_is_refused_naming_the_file_the_line_and_the_key(
    tmp_path, old, new, where
):
    path = written(tmp_path, EXAMPLE.replace(old, new, 1))
    with pytest.raises(ConfigError) as caught:
        read_config(path)
    assert str(caught.value).startswith(f"{path}, {where}")


def test_plain_http_is_allowed_only_to_loopback_with_allow_private(tmp_path):
    local = EXAMPLE.replace("https://hooks.example.com/cts", "http://127.0.0.1:9/hook")
    with pytest.raises(ConfigError, match="allow_private = true"):
        read_config(written(tmp_path, local))
    allowed = local.replace('secret_env = "WATCH', 'allow_private = true\nsecret_env = "WATCH')
    assert read_config(written(tmp_path, allowed)).webhook.url == "http://127.0.0.1:9/hook"


def test_secrets_come_only_from_the_environment_and_are_never_shown(tmp_path, monkeypatch):
    config = read_config(written(tmp_path, EXAMPLE))
    for name in ("CTS_API_KEY", "WATCH_WEBHOOK_SECRET", "SLACK_WEBHOOK_URL", "SMTP_USER"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="set CTS_API_KEY"):
        config.check_secrets()
    monkeypatch.setenv("CTS_API_KEY", "cts_secret_value")
    assert "cts_secret_value" not in repr(config.workspaces["studio"].api_key())
    with pytest.raises(ConfigError, match="set WATCH_WEBHOOK_SECRET"):
        config.check_secrets()
    with pytest.raises(ConfigError, match="api_key"):
        read_config(written(tmp_path, EXAMPLE.replace("key_env =", "api_key =")))


def test_an_agency_budget_takes_no_name_and_a_project_budget_needs_one(tmp_path):
    agency = EXAMPLE.replace('scope = "project"', 'scope = "agency"')
    with pytest.raises(ConfigError, match=r"line 8: budgets\[0\]\.name: an agency budget"):
        read_config(written(tmp_path, agency))
    nameless = EXAMPLE.replace('name = "Moonlit Harbor"', "")
    with pytest.raises(ConfigError, match=r"line 6: budgets\[0\]: a project budget needs"):
        read_config(written(tmp_path, nameless))


def test_keys_are_found_on_their_lines_in_tables_and_arrays_of_tables():
    lines = _key_lines(EXAMPLE + '[[budgets]]\nscope = "agency"\n')
    assert lines[("budgets", 0, "credits")] == 10
    assert lines[("budgets", 1, "scope")] == 31
    assert lines[("due", "Moonlit Harbor")] == 17
    assert lines[("notify", "email", "from")] == 26


def test_durations_read_as_people_write_them():
    assert parse_duration("90min") == timedelta(minutes=90)
    assert parse_duration("15m") == timedelta(minutes=15)
    assert parse_duration("2d") == timedelta(days=2)
    with pytest.raises(ValueError):
        parse_duration("0h")


OWN = """\
[workspaces.studio.checks]
stalled_after = "2h"
off = ["anomaly"]
[checks.projects."Moonlit Harbor"]
failed_waiting_after = "8h"
[checks.projects."p-42"]
stalled_after = "20min"
"""


def test_a_project_overrides_its_workspace_which_overrides_the_checks(tmp_path):
    config = read_config(written(tmp_path, EXAMPLE + OWN))
    assert config.checks_for("other").stalled_after == timedelta(minutes=90)
    studio = config.checks_for("studio")
    assert studio.stalled_after == timedelta(hours=2) and studio.off == {"anomaly"}
    moonlit = config.checks_for("studio", "Moonlit Harbor", "p-7")
    assert moonlit.failed_waiting_after == timedelta(hours=8)
    assert moonlit.stalled_after == timedelta(hours=2)  # the rest is its workspace's
    assert config.checks_for("studio", "Moonlit Harbor", "p-42").stalled_after == timedelta(
        minutes=20
    )  # a table for the id wins over one for the name
    assert config.checks_for("studio", "Unlisted", "p-9") == studio


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ('failed_waiting_after = "8h"', 'failed_wait = "8h"',
         "line 34: checks.projects.Moonlit Harbor.failed_wait: unknown key"),
        ('failed_waiting_after = "8h"', 'remind = "1h"',
         "line 34: checks.projects.Moonlit Harbor.remind: reminders are set once, in [checks]"),
        ('failed_waiting_after = "8h"', 'off = ["snapshots"]',
         "line 34: checks.projects.Moonlit Harbor.off: 'snapshots' is not a check that can be "
         "switched off here; these can: anomaly, stalled"),
        ('off = ["anomaly"]', 'off = ["budget"]',
         "line 32: workspaces.studio.checks.off: 'budget' is not a check"),
        ('stalled_after = "2h"', 'stalled_after = 2',
         "line 31: workspaces.studio.checks.stalled_after: must be text, not 2"),
    ],
)  # fmt: skip
def test_a_bad_project_or_workspace_setting_is_refused_naming_its_line(tmp_path, old, new, where):
    path = written(tmp_path, EXAMPLE + OWN.replace(old, new, 1))
    with pytest.raises(ConfigError) as caught:
        read_config(path)
    assert str(caught.value).startswith(f"{path}, {where}")


# Every config the watch must refuse: (what is changed, the refusal's start after the
# file's name). Each is refused when the watch starts, exit 2, one line, no traceback,
# and no secret of the config or the environment in anything printed.
SECRETS = {
    "CTS_API_KEY": "cts_live_K3yNeverShown",
    "WATCH_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T000/B000/SlackPathNeverShown",
    "SMTP_USER": "watch@example.com",
    "SMTP_PASSWORD": "PasswordNeverShown",
}
DEEP = "[" * 500 + "]" * 500
REFUSED = [
    ("https://hooks.example.com/cts", "https://169.254.169.254/cts", {},
     "line 19: notify.webhook.url: the webhook host 169.254.169.254 is a private"),
    ("https://hooks.example.com/cts", "https://10.0.0.1/cts", {},
     "line 19: notify.webhook.url: the webhook host 10.0.0.1"),
    ("https://hooks.example.com/cts", "https://[fd00::1]/cts", {},
     "line 19: notify.webhook.url: the webhook host fd00::1"),
    ("https://hooks.example.com/cts", "https://metadata.google.internal/cts", {},
     "line 19: notify.webhook.url: the webhook host metadata.google.internal is an internal"),
    ("https://hooks.example.com/cts", "http://127.0.0.1:9/cts", {},
     "line 19: notify.webhook.url: the webhook URL (http://127.0.0.1) must be https"),
    ('host = "smtp.example.com"', 'host = "169.254.169.254"', {},
     "line 24: notify.email.host: the SMTP host 169.254.169.254"),
    ('host = "smtp.example.com"', 'host = "localhost"', {},
     "line 24: notify.email.host: the SMTP host localhost is an internal name"),
    ('interval = "15m"', 'interval = "15m"\nretries = 8', {},
     "line 3: retries: must be between 1 and 5, not 8"),
    ('interval = "15m"', 'interval = "15m"\nretry_wait = "10min"', {},
     "line 3: retry_wait: is at most 10s"),
    ('remind = "24h"', 'remind = "24h"\nanomaly_mads = nan', {},
     "line 16: checks.anomaly_mads: must be between"),
    ('remind = "24h"', 'remind = "24h"\nanomaly_mads = inf', {},
     "line 16: checks.anomaly_mads: must be between"),
    ("warn_at = 0.8", "warn_at = nan", {}, "line 11: budgets[0].warn_at: "),
    ("warn_at = 0.8", "warn_at = [0.5, 2]", {}, "line 11: budgets[0].warn_at: "),
    ("[workspaces.studio]", '[workspaces."../../escape"]', {},
     "line 3: workspaces.../../escape: a workspace's label is a name"),
    ('interval = "15m"', 'interval = "0.000000001s"', {},
     "line 2: interval: '0.000000001s' is shorter than a minute"),
    ('"90min"', '"99999999999999999d"', {},
     "line 13: checks.stalled_after: '99999999999999999d' is longer than ten years"),
    ('store = "data/snapshots"', f"store = {DEEP}", {}, "not valid TOML"),
    ('scope = "project"', 'scope = "workspace"', {},
     "line 8: budgets[0].name: no workspace 'Moonlit Harbor' in this config"),
    ('key_env = "CTS_API_KEY"', 'key_env = "cts_live_K3yNeverShown"', {},
     "line 5: workspaces.studio.key_env: is not an environment variable's name"),
    ('secret_env = "WATCH_WEBHOOK_SECRET"', 'secret_env = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"',
     {}, "line 20: notify.webhook.secret_env: is not an environment variable's name"),
    ('password_env = "SMTP_PASSWORD"', 'password_env = "PasswordNeverShown!"', {},
     "line 29: notify.email.password_env: is not an environment variable's name"),
    ('key_env = "CTS_API_KEY"', "key_env = 12345", {},
     "line 5: workspaces.studio.key_env: must be text"),
    ("port = 587", "port = 587\nstarttls = false", {},
     "line 26: notify.email.starttls: unknown key"),
    ("port = 587", 'port = 587\nallow_plaintext = "relay.example.com"', {},
     "line 26: notify.email.allow_plaintext: names 'relay.example.com', not the host"),
    ("url_env =", 'timeout = "5m"\nurl_env =', {}, "line 22: notify.slack.timeout: '5m' is not"),
    ("", "", {"WATCH_WEBHOOK_SECRET": "not base64 at all!"},
     "line 20: notify.webhook.secret_env: the webhook secret is not 'whsec_'"),
    ("", "", {"SMTP_PASSWORD": "PässwordNeverShown"},
     "line 29: notify.email.password_env: SMTP credentials must be plain ASCII"),
    ("", "", {"SLACK_WEBHOOK_URL": "https://10.0.0.1/services/T000/B000/SlackPathNeverShown"},
     "line 22: notify.slack.url_env: the Slack host 10.0.0.1"),
    ("", "", {"CTS_API_KEY": ""}, "line 5: workspaces.studio.key_env: the API key of workspace"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "env", "refusal"), REFUSED)
def test_every_bad_config_is_refused_with_file_line_and_key_exit_2_and_no_secret(
    tmp_path, monkeypatch, capsys, old, new, env, refusal
):
    from toolkit.cli import main

    for name, value in {**SECRETS, **env}.items():
        monkeypatch.setenv(name, value)
    path = written(tmp_path, EXAMPLE.replace(old, new, 1) if old else EXAMPLE)
    assert main(["watch", "--config", str(path), "--once"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"toolkit watch: {path}"), err
    assert refusal in err, err
    for secret in (*SECRETS.values(), "SlackPathNeverShown", "PässwordNeverShown"):
        assert secret not in err


TAGGED = """\
[tags."Moonlit Harbor"]
client = "Acme"
team = "north"
[tags.0f1e2d3c]
client = "Acme"
[[budgets]]
scope = "tag"
tag = "client"
name = "Acme"
period = "week"
credits = 900
"""


def test_tags_name_projects_and_a_tag_budget_covers_the_projects_tagged_so(tmp_path):
    config = read_config(written(tmp_path, EXAMPLE + TAGGED))
    assert config.tags == {
        "Moonlit Harbor": {"client": "Acme", "team": "north"},
        "0f1e2d3c": {"client": "Acme"},
    }
    budget = config.budgets[1]
    assert (budget.scope, budget.tag, budget.name, budget.credits) == ("tag", "client", "Acme", 900)
    assert budget.projects == {"Moonlit Harbor", "0f1e2d3c"}
    assert budget.covers("0f1e2d3c", "Other") and budget.covers("p9", "Moonlit Harbor")
    assert not budget.covers("p9", "Paper Crane")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('name = "Acme"', 'name = "Acme Inc"',
         r"line 38: budgets\[1\]\.name: no project is tagged client = 'Acme Inc' in \[tags\]; "
         r"the nearest: 'Acme'"),
        ('tag = "client"\n', "", r"line 35: budgets\[1\]: a tag budget names the tag"),
        ('team = "north"', "team = 3", r"line 32: tags\.Moonlit Harbor\.team: must be text"),
        ('team = "north"', 'team = " "', r"tags\.Moonlit Harbor\.team: a tag's value is a name"),
        ('scope = "tag"', 'scope = "project"',
         r"budgets\[1\]\.tag: only a budget with scope = \"tag\" names a tag"),
    ],
)  # fmt: skip
def test_a_bad_tag_or_tag_budget_is_refused_naming_its_line(tmp_path, old, new, message):
    # TAGGED starts on the example's line 30.
    with pytest.raises(ConfigError, match=message):
        read_config(written(tmp_path, EXAMPLE + TAGGED.replace(old, new, 1)))
