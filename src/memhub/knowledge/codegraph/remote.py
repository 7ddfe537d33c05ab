"""Which repository URLs a code graph may be cloned from, and the addresses a clone may connect to.

A code graph's `repo_url` makes this server open a connection for a user, so it is held to the rules
of any server-side fetch:
- Transports: `https://` and `http://`; `file://` under MEMHUB_CODE_SOURCE_ROOTS (checked by the
  service). `ssh://` and the scp form `user@host:path` would use the server's own SSH identity, and
  `git://` reaches any port: they are refused unless the operator sets MEMHUB_CODE_GRAPH_ALLOW_SSH.
  Every other transport (`ext::`, `fd::`, `rsync://`, …) is refused always.
- Hosts: the name is resolved and EVERY address must be public: loopback, private, link-local,
  multicast, reserved and unspecified addresses are refused, also when written another way (decimal
  `2130706433`, hex `0x7f000001`, octal, short `127.1`: the resolver reads them as the address they
  are) or carried inside an IPv6 address (IPv4-mapped, 6to4, Teredo, NAT64). The operator may allow
  hosts or networks with MEMHUB_CODE_GRAPH_HOST_ALLOWLIST (names, addresses, CIDRs).
- A URL is read strictly (no credentials, fragment, query or percent-escapes in the host), so git and
  this check cannot read a different host out of one URL.

The check runs when a graph is created (400 naming `repo_url` and the rule) and again before every
clone and fetch; the addresses it accepted are handed to git to connect to (see `git.py`), so a name
that resolves elsewhere a moment later (DNS rebinding) is not followed.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from memhub.errors import FieldError

URL_MAX = 2048
ALLOW_SSH_SETTING = "MEMHUB_CODE_GRAPH_ALLOW_SSH"
ALLOWLIST_SETTING = "MEMHUB_CODE_GRAPH_HOST_ALLOWLIST"
WEB_SCHEMES = ("https", "http")
SSH_SCHEMES = ("ssh", "git")  # with the scp form: only when the operator allows them
DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418}
# A host name as written in DNS (no trailing dot: git would then connect by a name the pinned one does not match).
_HOST = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)"
# host[:port], an optional login before it (ssh only); an IPv6 address in brackets.
_NETLOC = re.compile(rf"^(?:(?P<user>[A-Za-z0-9._-]+)@)?(?P<host>{_HOST}|\[[0-9A-Fa-f:.]+\])(?::(?P<port>\d{{1,5}}))?$")
# `user@host:path` (scp form); a `::` would be git's `<transport>::<address>` syntax.
_SCP = re.compile(rf"^(?:(?P<user>[A-Za-z0-9._-]+)@)?(?P<host>{_HOST}):(?!:)(?P<path>\S+)$")
PUBLIC_RULE = (
    "must resolve to a public address (loopback, private, link-local, multicast and reserved "
    f"addresses are refused; an operator may allow hosts with {ALLOWLIST_SETTING})"
)
# IPv6 prefixes that carry an IPv4 address in their last 32 bits (NAT64, RFC 6052 and RFC 8215).
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Remote:
    """An accepted repository URL: for a network transport its host, port and the checked addresses git
    must connect to; for `file://` the local path (checked against the source roots by the caller)."""

    url: str
    scheme: str  # https, http, ssh, git, file; "ssh" for the scp form
    host: str = ""
    port: int = 0
    addresses: tuple[str, ...] = ()
    local_path: Path | None = None


@dataclass(frozen=True, slots=True)
class RemotePolicy:
    """The operator's choices: whether SSH-like transports are on, and which hosts or networks are allowed
    even though they are not public."""

    allow_ssh: bool = False
    allowlist: tuple[str, ...] = ()

    def parse(self, value: str) -> Remote:
        """The URL read and its transport checked, without resolving its host; 400 naming the rule."""
        url = value.strip().rstrip("/")
        if not url or len(url) > URL_MAX or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
            raise _refused(f"must be a git URL of at most {URL_MAX} characters without spaces")
        if url.startswith("-"):
            raise _refused("must not start with '-'")
        if "://" not in url:
            scp = _SCP.match(url)
            if scp is None:
                raise _refused(
                    "must be an https or http URL (or a file:// URL under an allowed source root; "
                    "a local directory goes in source_path)"
                )
            self._ssh_allowed("scp-style (host:path)")
            return Remote(url, "ssh", scp["host"].lower(), DEFAULT_PORTS["ssh"])
        try:
            parts = urlsplit(url)
        except ValueError:
            raise _refused("must be a well-formed URL") from None
        scheme = parts.scheme.lower()
        if scheme == "file":
            return _file_remote(url)
        if scheme in SSH_SCHEMES:
            self._ssh_allowed(f"{scheme}://")
        elif scheme not in WEB_SCHEMES:
            raise _refused(f"unsupported scheme {scheme!r}; expected https or http")
        if "#" in url or "?" in url or "\\" in url:
            raise _refused("must not hold a query, a fragment or a backslash")
        user, at, _ = parts.netloc.rpartition("@")
        if at and (scheme in WEB_SCHEMES or ":" in user):
            raise _refused(
                "must not carry credentials (user:token@…); memhub never stores them — use a public URL, or a "
                "local clone under MEMHUB_CODE_SOURCE_ROOTS"
            )
        netloc = _NETLOC.match(parts.netloc)
        if netloc is None:
            raise _refused("must name a host (letters, digits, dots and hyphens, or [IPv6]) and port")
        port = int(netloc["port"]) if netloc["port"] else DEFAULT_PORTS[scheme]
        if not 0 < port < 65536:
            raise _refused("port must be 1-65535")
        host = netloc["host"].strip("[]").lower()
        return Remote(urlunsplit((scheme, parts.netloc, parts.path, "", "")), scheme, host, port)

    def check(self, value: str) -> Remote:
        """The URL parsed, its host resolved and every address allowed; 400 naming the rule otherwise."""
        remote = self.parse(value)
        if remote.local_path is not None:
            return remote
        addresses = resolve(remote.host, remote.port)
        if not self._host_allowed(remote.host, addresses):
            raise _refused(PUBLIC_RULE)
        return Remote(remote.url, remote.scheme, remote.host, remote.port, tuple(str(a) for a in addresses))

    def _ssh_allowed(self, what: str) -> None:
        if not self.allow_ssh:
            raise _refused(
                f"{what} URLs are off on this server: they would use the server's SSH identity or "
                f"reach any port (an operator may allow them with {ALLOW_SSH_SETTING}=1); use an https URL"
            )

    def _host_allowed(self, host: str, addresses: Sequence[Address]) -> bool:
        if host in self._allowed_names():
            return True
        networks = self._allowed_networks()
        return all(is_public(a) or any(a in n for n in networks if n.version == a.version) for a in addresses)

    def _allowed_names(self) -> set[str]:
        return {entry.strip().rstrip(".").lower() for entry in self.allowlist if not _network(entry)}

    def _allowed_networks(self) -> list[Network]:
        return [n for n in (_network(entry) for entry in self.allowlist) if n is not None]


class Unresolvable(FieldError):
    """The URL's host resolves to no address (now: it may at another time)."""

    def __init__(self) -> None:
        super().__init__("repo_url", "the host could not be resolved")


def _refused(rule: str) -> FieldError:
    """400 naming `repo_url` and the rule it breaks."""
    return FieldError("repo_url", rule)


def resolve(host: str, port: int) -> list[Address]:
    """Every address the host resolves to (numeric spellings included); 400 when it resolves to none."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        raise Unresolvable from None
    addresses: list[Address] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).partition("%")[0])  # drop an IPv6 zone id
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Unresolvable
    return addresses


def is_public(address: Address) -> bool:
    """Whether the address is a public unicast one, looking inside IPv6 forms that carry an IPv4 address."""
    if not address.is_global or address.is_multicast or address.is_reserved or address.is_unspecified:
        return False
    if address.is_loopback or address.is_link_local or address.is_private:
        return False
    return all(is_public(inner) for inner in _embedded(address))


def _embedded(address: Address) -> Iterable[ipaddress.IPv4Address]:
    if isinstance(address, ipaddress.IPv4Address):
        return ()
    inner = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    if any(address in network for network in _NAT64):
        inner.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [a for a in inner if a is not None]


def allowlist_entry(entry: str) -> str:
    """One MEMHUB_CODE_GRAPH_HOST_ALLOWLIST entry (a host name, an address or a CIDR), or ValueError."""
    value = entry.strip()
    if _network(value) is None and not re.fullmatch(_HOST, value):
        raise ValueError(f"{value!r} is not a host name, an address or a CIDR")
    return value


def _network(entry: str) -> Network | None:
    try:
        return ipaddress.ip_network(entry.strip().strip("[]"), strict=False)
    except ValueError:
        return None


def _file_remote(url: str) -> Remote:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise _refused("a file:// URL must name a path on this server (file:///path)")
    if "\x00" in unquote(parts.path):
        raise _refused("a file:// URL must not contain NUL characters (%00)")
    path = Path(unquote(parts.path))
    if not path.is_absolute():
        raise _refused("a file:// URL must hold an absolute path")
    return Remote(urlunsplit(("file", "", parts.path, "", "")), "file", local_path=path)


def public_remote(url: str) -> str:
    """A remote URL with any user and password removed, fit to show and to store."""
    if "://" not in url:
        return url  # scp form: the user is an SSH login, not a secret
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
