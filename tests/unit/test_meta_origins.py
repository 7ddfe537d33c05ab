"""Trusted knowledge origins: how URLs are reduced to (scheme, host, port), and the allow-list setting."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memhub.meta.origins import KnowledgeOrigins, origin_of, origin_text, parse_allowlist_entry
from memhub.settings import Settings

TRUSTED = KnowledgeOrigins.of("https://memhub.example/v3", ["https://kb.example.com", "http://[::1]:9000/"])


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://memhub.example/v3", ("https", "memhub.example", 443)),
        ("HTTPS://MemHub.Example:443/v3", ("https", "memhub.example", 443)),
        ("https://memhub.example./v3", ("https", "memhub.example", 443)),
        ("http://memhub.example/v3", ("http", "memhub.example", 80)),
        ("https://memhub.example:/v3", ("https", "memhub.example", 443)),
        ("http://[0:0::1]:9000/v3", ("http", "::1", 9000)),
        ("http://knowledge_svc:8424/v3", ("http", "knowledge_svc", 8424)),
        ("https://evil.example#@memhub.example/v3", ("https", "evil.example", 443)),
        ("https://evil.example?@memhub.example/v3", ("https", "evil.example", 443)),
        # Refused as ambiguous: user info, odd characters, a percent-encoded or bracketed non-IPv6 host, a bad port.
        ("https://memhub.example@evil.example/v3", None),
        ("https://memhub.example:443@evil.example/v3", None),
        ("https://@memhub.example/v3", None),
        ("https://memhub.example\\@evil.example/v3", None),
        ("https://memhub%2eexample/v3", None),
        ("https://[memhub.example]/v3", None),
        ("https://memhub.example:99999/v3", None),
        ("https://memhub.example:x/v3", None),
        ("https://memhub.example /v3", None),
        ("https://memhub.example\n.evil.example/v3", None),
        ("https://bücher.example/v3", None),
        ("ftp://memhub.example/v3", None),
        ("//memhub.example/v3", None),
        ("https:///v3", None),
        ("", None),
    ],
)
def test_origin_of(url: str, origin: tuple[str, str, int] | None) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://memhub.example/v3", True),
        ("https://memhub.example:443/anything", True),
        ("https://kb.example.com/v3", True),
        ("http://[::1]:9000/v3", True),
        ("https://memhub.example.evil.com/v3", False),
        ("https://evil.com/memhub.example/v3", False),
        ("https://memhub.example@evil.com/v3", False),
        ("https://memhub.example:8443/v3", False),
        ("http://memhub.example/v3", False),
        ("https://kb.example.com:8443/v3", False),
        ("https://sub.kb.example.com/v3", False),
        ("http://[::1]:9001/v3", False),
        ("not a url", False),
    ],
)
def test_allows_compares_whole_origins(url: str, allowed: bool) -> None:
    assert TRUSTED.allows(url) is allowed


def test_nothing_is_trusted_without_origins() -> None:
    assert not KnowledgeOrigins().allows("https://memhub.example/v3")
    assert "(accepted: none configured)" in KnowledgeOrigins().rule()


def test_the_rule_names_the_accepted_origins() -> None:
    assert TRUSTED.rule() == (
        "must be on this gateway's public origin or an origin in MEMHUB_KNOWLEDGE_URL_ALLOWLIST"
        " (accepted: https://memhub.example, http://[::1]:9000, https://kb.example.com)"
    )
    assert origin_text(("https", "kb.example.com", 8443)) == "https://kb.example.com:8443"


@pytest.mark.parametrize(
    "entry",
    ["kb.example.com", "https://kb.example.com/v3", "https://u@kb.example.com", "https://kb.example.com?x", "*"],
)
def test_an_allow_list_entry_must_be_an_origin(entry: str) -> None:
    with pytest.raises(ValueError, match="is not an origin"):
        parse_allowlist_entry(entry)


def test_the_allow_list_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().knowledge_url_allowlist == []
    monkeypatch.setenv("MEMHUB_KNOWLEDGE_URL_ALLOWLIST", " https://kb.example.com , http://[::1]:9000/,")
    settings = Settings()
    assert settings.knowledge_url_allowlist == ["https://kb.example.com", "http://[::1]:9000/"]
    origins = settings.knowledge_origins()
    assert origins.allows("http://127.0.0.1:8420/v3") and origins.allows("https://kb.example.com/v3")
    monkeypatch.setenv("MEMHUB_KNOWLEDGE_URL_ALLOWLIST", "https://kb.example.com/v3")
    with pytest.raises(ValidationError, match="is not an origin"):
        Settings()


def test_the_public_url_must_have_a_plain_host() -> None:
    with pytest.raises(ValidationError, match="no user@ part"):
        Settings(knowledge_public_url="https://me@memhub.example/v3")
    assert Settings(knowledge_public_url="https://memhub.example/v3/").knowledge_origins().own == (
        "https",
        "memhub.example",
        443,
    )
