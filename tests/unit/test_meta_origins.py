"""Trusted knowledge origins: how URLs are reduced to (scheme, host, port), their canonical form, and the allow-list
setting."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memhub.meta.origins import (
    KnowledgeOrigins,
    canonical_url,
    origin_of,
    origin_text,
    parse_allowlist_entry,
    remove_dot_segments,
)
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


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("https://memhub.example/v3", "https://memhub.example/v3"),
        ("https://memhub.example", "https://memhub.example"),
        ("HTTPS://MemHub.Example.:443/v3", "https://memhub.example/v3"),
        ("http://[0:0::1]:9000/v3", "http://[::1]:9000/v3"),
        # The fragment never reaches the server; after the host it only misleads a reader.
        ("https://memhub.example#@evil.example", "https://memhub.example"),
        ("https://memhub.example/v3#@evil.example/v3", "https://memhub.example/v3"),
        ("https://memhub.example/v3#", "https://memhub.example/v3"),
        # Dot segments resolved as a server resolves them, escaped dots included; never above the root.
        ("https://memhub.example/evil.example/../v3", "https://memhub.example/v3"),
        ("https://memhub.example/v3/./knowledge/..", "https://memhub.example/v3/"),
        ("https://memhub.example/../../v3", "https://memhub.example/v3"),
        ("https://memhub.example/x/%2e%2E/v3", "https://memhub.example/v3"),
        ("https://memhub.example/%7Euser/a%2fb", "https://memhub.example/~user/a%2Fb"),
    ],
)
def test_canonical_url(url: str, canonical: str) -> None:
    assert canonical_url(url) == canonical
    assert canonical_url(canonical) == canonical  # a fixed point: stored URLs read back unchanged


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("https://memhub.example@evil.example/v3", "no user@ part"),
        ("https://memhub.example/@evil.example/v3", "must have no @ in its path"),
        ("https://memhub.example/v3?x=1", "must not have a query"),
        ("https://memhub.example/v3?", "must not have a query"),
        ("https://memhub.example/v3?@evil.example", "must not have a query"),
        ("https://memhub.example/v3%zz", "must write a % only as an escape"),
        ("https://memhub.example/v3%2", "must write a % only as an escape"),
    ],
)
def test_a_url_without_a_canonical_form_is_refused_naming_the_rule(url: str, rule: str) -> None:
    with pytest.raises(ValueError, match=rule):
        canonical_url(url)


@pytest.mark.parametrize(
    ("path", "resolved"),
    [
        ("", ""),
        ("/", "/"),
        ("/a/b/c/./../../g", "/a/g"),
        ("/mid/content=5/../6", "/mid/6"),
        ("/..", "/"),
        ("/.", "/"),
        ("/a/..", "/"),
        ("/a/b/..", "/a/"),
        ("/a/.../b", "/a/.../b"),
        ("/a/..b/c", "/a/..b/c"),
    ],
)
def test_remove_dot_segments(path: str, resolved: str) -> None:
    assert remove_dot_segments(path) == resolved


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
