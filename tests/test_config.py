from __future__ import annotations

import pytest

from toolkit.config import Secret, Settings, normalize_base_url
from toolkit.errors import ConfigError


def test_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("CTS_BASE_URL", "https://translate.example.com/api/v1/")
    monkeypatch.setenv("CTS_API_KEY", "sk-live-123")
    settings = Settings.resolve()
    assert settings.base_url == "https://translate.example.com"
    assert settings.api_url == "https://translate.example.com/api/v1"
    assert settings.api_key.reveal() == "sk-live-123"


def test_arguments_win_over_the_environment(monkeypatch):
    monkeypatch.setenv("CTS_BASE_URL", "https://a.example.com")
    monkeypatch.setenv("CTS_API_KEY", "from-env")
    settings = Settings.resolve("https://b.example.com", "from-arg")
    assert settings.base_url == "https://b.example.com"
    assert settings.api_key.reveal() == "from-arg"


@pytest.mark.parametrize("missing", ["CTS_BASE_URL", "CTS_API_KEY"])
def test_a_missing_setting_is_named(monkeypatch, missing):
    monkeypatch.setenv("CTS_BASE_URL", "https://a.example.com")
    monkeypatch.setenv("CTS_API_KEY", "k")
    monkeypatch.delenv(missing)
    with pytest.raises(ConfigError, match=missing):
        Settings.resolve()


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8765", "http://localhost:1", "http://[::1]:80", "https://x.org"]
)
def test_loopback_http_and_any_https_are_accepted(url):
    assert normalize_base_url(url) == url


@pytest.mark.parametrize("url", ["http://translate.example.com", "http://10.0.0.5:8000"])
def test_plain_http_elsewhere_is_refused_with_the_reason(url):
    with pytest.raises(ConfigError, match="in clear"):
        normalize_base_url(url)


def test_the_key_never_shows_in_a_repr():
    settings = Settings(base_url="https://x.org", api_key=Secret("sk-very-secret"))
    assert "sk-very-secret" not in repr(settings)
    assert "sk-very-secret" not in str(settings.api_key)
