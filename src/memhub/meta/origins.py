"""Which origins a knowledge `service_url` may point at: this gateway's own public URL and an operator allow-list.

The `<knowledge_tools>` block tells agents to send their user key to a registered entry's URL, so the registry
accepts, and the offer renders, only URLs whose origin is trusted. Origins are compared as (scheme, host, port)
after normalisation, never as string prefixes: `https://memhub.example.evil.com`, `https://good@evil` and
`https://memhub.example:8443` are all different from `https://memhub.example`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

Origin = tuple[str, str, int]

DEFAULT_PORTS = {"http": 80, "https": 443}
ALLOWLIST_SETTING = "MEMHUB_KNOWLEDGE_URL_ALLOWLIST"
# Characters a URL may hold here. Anything else (space, quotes, `<>`, backslash, control characters, `%` in the
# host) is either read differently by different URL parsers or could break the prompt the URL is rendered into.
_URL_CHARS = re.compile(r"^[A-Za-z0-9._~:/?#\[\]@!$&()*+,;=%-]+$")
_HOST_NAME = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)*$")


def origin_of(url: str) -> Origin | None:
    """`(scheme, host, port)` of an http(s) URL, normalised; None when it is not one or is ambiguous.

    Refused as ambiguous: user info (`user@host`), characters outside the URL set, a host that is neither a DNS
    name nor an IP literal (an internationalised name is accepted in its `xn--` form), an invalid port. The host
    is lower-cased and loses a trailing dot, an IPv6 literal is written in its canonical form, and a missing port
    is the scheme's default.
    """
    if not url or not _URL_CHARS.match(url):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or "@" in parts.netloc or not parts.hostname:
        return None
    host = parts.hostname.rstrip(".")
    if parts.netloc.startswith("[") or ":" in host:
        try:
            host = str(ipaddress.IPv6Address(host))
        except ValueError:
            return None
    elif not _HOST_NAME.match(host):
        return None
    return scheme, host, port if port is not None else DEFAULT_PORTS[scheme]


def origin_text(origin: Origin) -> str:
    """`https://host[:port]`, the port only when it is not the scheme's default."""
    scheme, host, port = origin
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" if DEFAULT_PORTS[scheme] == port else f"{scheme}://{host}:{port}"


def parse_allowlist_entry(entry: str) -> Origin:
    """One allow-list entry: an origin such as `https://kb.example.com` (a trailing `/` is fine, a path is not)."""
    origin = origin_of(entry)
    parts = urlsplit(entry) if origin is not None else None
    if origin is None or parts is None or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"{entry!r} is not an origin (scheme://host[:port], e.g. https://kb.example.com)")
    return origin


@dataclass(frozen=True, slots=True)
class KnowledgeOrigins:
    """The trusted origins: this gateway's public URL (when known) and the operator's allow-list."""

    own: Origin | None = None
    allowed: frozenset[Origin] = frozenset()

    @classmethod
    def of(cls, public_url: str | None, allowlist: Iterable[str] = ()) -> KnowledgeOrigins:
        """From the public knowledge URL and allow-list entries (each checked by `parse_allowlist_entry`)."""
        own = origin_of(public_url) if public_url else None
        return cls(own, frozenset(parse_allowlist_entry(e) for e in allowlist))

    def allows(self, url: str) -> bool:
        """True when the URL's origin is this gateway's or allow-listed."""
        origin = origin_of(url)
        return origin is not None and (origin == self.own or origin in self.allowed)

    def rule(self) -> str:
        """The rule in words, for error messages: which origins are accepted."""
        trusted = [origin_text(self.own)] if self.own else []
        trusted += sorted(origin_text(o) for o in self.allowed - {self.own})
        listed = ", ".join(trusted) if trusted else "none configured"
        return f"must be on this gateway's public origin or an origin in {ALLOWLIST_SETTING} (accepted: {listed})"


# Trusts nothing: the default of services built without the gateway's settings.
NO_ORIGINS = KnowledgeOrigins()
