"""User keys and entity ids: formats shared with the original, storage as keyed hashes only.

A user key (`sk-mem-` + 24 random bytes, base64url) is shown once, when it is created. The store
keeps HMAC-SHA256(server secret, key): a stolen database alone neither reveals a key nor lets an
attacker test guesses of a weak caller-chosen key (`user/create-with-key`) offline.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import string
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

KEY_PREFIX = "sk-mem-"
SECRET_FILENAME = "key-secret"
_BASE36 = string.digits + string.ascii_lowercase


def new_user_key() -> str:
    """A fresh user key: `sk-mem-` + base64url of 24 random bytes."""
    return KEY_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(24)).decode().rstrip("=")


def masked(key_last4: str) -> str:
    """How a key is shown after creation: `sk-mem-****<last4>`."""
    return f"{KEY_PREFIX}****{key_last4}"


def _base36(n: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = _BASE36[r] + out
    return out or "0"


def random_base36(length: int) -> str:
    """`length` random characters of [0-9a-z]."""
    return "".join(secrets.choice(_BASE36) for _ in range(length))


def entity_id(prefix: str) -> str:
    """`<prefix>-` + 4 base36 chars of the epoch second + 6 random base36 chars (`usr-`, `team-` …)."""
    stamp = _base36(int(time.time()))[-4:].rjust(4, "0")
    return f"{prefix}-{stamp}{random_base36(6)}"


def relation_id() -> str:
    """Id of a relation row (membership, binding, ACL entry …)."""
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True)
class KeyHasher:
    """Keyed hashing of user keys. A key is found by its digest in a unique index: without the
    secret nobody can compute a digest, so the lookup's timing tells an attacker nothing."""

    secret: bytes

    def digest(self, key: str) -> str:
        """HMAC-SHA256 of a key under the server secret, hex."""
        return hmac.new(self.secret, key.encode(), hashlib.sha256).hexdigest()


def load_key_hasher(data_dir: Path, configured: str | None = None) -> KeyHasher:
    """The configured secret, else the data dir's secret file, created (owner-only) on first use.

    Gateways that share a database must share the secret: set MEMHUB_KEY_SECRET on each of them.
    """
    if configured:
        return KeyHasher(configured.encode())
    path = Path(data_dir) / SECRET_FILENAME
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        pass
    else:
        # O_EXCL: when two processes start together exactly one writes the secret.
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
            handle.flush()
            os.fsync(handle.fileno())
    for _ in range(50):  # the winner of a start-up race may not have written yet
        text = path.read_text().strip()
        if text:
            return KeyHasher(text.encode())
        time.sleep(0.01)
    raise RuntimeError(f"{path} is empty; delete it only if no user key was ever issued")
