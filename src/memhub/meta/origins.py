"""Which origins a knowledge `service_url` may point at: this gateway's own public URL and an operator allow-list.

The `<knowledge_tools>` block tells agents to send their user key to a registered entry's URL, so the registry
accepts, and the offer renders, only URLs whose origin is trusted. Origins are compared as (scheme, host, port)
after normalisation, never as string prefixes: `https://memhub.example.evil.com`, `https://good@evil` and
`https://memhub.example:8443` are all different from `https://memhub.example`.

The URL an agent is shown is the registry's, so it is kept in one canonical form (`canonical_url`): whatever
trails a trusted host in the text (`#@evil.example`, `/../`) can make a human reader, or a model, take another
host for the one the request really goes to.
"""

from __future__ import annotations

import ipaddress
import re
import string
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
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_BROKEN_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")


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


def _normal_escapes(text: str) -> str:
    """Escapes of unreserved characters decoded (`%2e` is `.`), the others upper-cased (`%2f` is `%2F`)."""

    def one(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else f"%{match.group(1).upper()}"

    return _ESCAPE.sub(one, text)


def remove_dot_segments(path: str) -> str:
    """A path with its `.` and `..` segments resolved, as a server resolves them (RFC 3986, section 5.2.4).

    `/v3/../admin` is `/admin`, and a `..` above the root stays at the root: `/../../v3` is `/v3`.
    """
    out: list[str] = []
    while path:
        if path.startswith("../"):
            path = path[3:]
        elif path.startswith("./"):
            path = path[2:]
        elif path.startswith("/./") or path == "/.":
            path = "/" + path[3:]
        elif path.startswith("/../") or path == "/..":
            path = "/" + path[4:]
            if out:
                out.pop()
        elif path in (".", ".."):
            path = ""
        else:
            end = path.find("/", 1)
            end = len(path) if end == -1 else end
            out.append(path[:end])
            path = path[end:]
    return "".join(out)


def canonical_url(url: str) -> str:
    """The URL as the knowledge registry stores it and agents are shown it; ValueError naming the rule otherwise.

    The origin is written as `origin_text` writes it (scheme and host in lower case, no trailing dot, no default
    port), the fragment is dropped (it never reaches the server: `#@evil.example` only misleads the reader), escapes
    of unreserved characters are decoded and the dot segments resolved, so the text shows the path the request
    really asks for. Refused: what `origin_of` refuses (user info among it: `good@evil` names the host `evil`), an
    `@` anywhere else (it only serves to make a reader take what follows it for the host), a query (agents append
    `/tools/list` to the URL, which a query would swallow) and a `%` that starts no escape.
    """
    origin = origin_of(url)
    if origin is None:
        raise ValueError("must be an http(s) URL with a plain host: no user@ part, spaces, quotes or backslashes")
    parts = urlsplit(url)
    if "@" in parts.path:
        raise ValueError("must have no @ in its path (it only makes a reader take what follows for the host)")
    if parts.query or url.split("#", 1)[0].endswith("?"):
        raise ValueError("must not have a query (agents append /tools/list to it)")
    if _BROKEN_ESCAPE.search(parts.path):
        raise ValueError("must write a % only as an escape of two hex digits (%2F)")
    return origin_text(origin) + remove_dot_segments(_normal_escapes(parts.path))


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
