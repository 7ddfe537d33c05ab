"""The gateway's shared secret: created on first start, shown once, stored only as a hash."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from memhub.store import MemoryStore

SETTING_NAME = "gateway_key_sha256"
KEY_PREFIX = "mh-gw-"


def new_key() -> str:
    """A fresh high-entropy gateway key."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """SHA-256 of a key; enough for a 256-bit random secret (no dictionary to attack)."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class GatewayKey:
    """Verifies presented Bearer tokens against the stored hash, in constant time."""

    digest: str

    def matches(self, presented: str) -> bool:
        """True when the presented token is the gateway key."""
        return hmac.compare_digest(hash_key(presented), self.digest)


@dataclass(frozen=True, slots=True)
class KeySetup:
    """The outcome of ensuring a key: the verifier, and the clear key if it was just created."""

    key: GatewayKey
    created_key: str | None


def ensure_gateway_key(store: MemoryStore, configured: str | None = None, *, rotate: bool = False) -> KeySetup:
    """Use the configured key, else the stored hash, else create a key and store its hash.

    Replicas sharing one store race safely: the first hash written wins and the losers
    report no new key.
    """
    if configured:
        return KeySetup(GatewayKey(hash_key(configured)), None)
    stored = store.get_setting(SETTING_NAME)
    if stored and not rotate:
        return KeySetup(GatewayKey(stored), None)
    key = new_key()
    winner = store.put_setting(SETTING_NAME, hash_key(key), only_if_absent=not rotate)
    if winner != hash_key(key):
        return KeySetup(GatewayKey(winner), None)
    return KeySetup(GatewayKey(winner), key)
