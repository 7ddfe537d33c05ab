"""What the hooks keep between runs, in one directory (`MEMHUB_HOOKS_DIR`, default `~/.memhub/hooks`): a capture
cursor per Claude Code session, the ids a user key implies (`IdentityCache`), and the log file (every hook is
silent on stdout, so this is where a failure shows).

A cursor is the transcript position captured up to, plus the range being sent when the hook last stopped
(`pending`). The range is written before it is sent and cleared after: a hook killed in between leaves it behind,
and the next run sends exactly that range again, with the same idempotency keys, so the gateway stores it once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import logging.handlers
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from memhub.sdk.connection import Connection

STATE_DIR_ENV = "MEMHUB_HOOKS_DIR"
LOG_NAME = "hooks.log"
LOG_MAX_BYTES = 1024 * 1024
# How long the ids a user key implies are reused: a hook runs at every prompt and every turn, and reading them costs
# three requests; a team or agent changed on the gateway is picked up within this time.
IDENTITY_TTL_SECONDS = 600.0
# The attribute marking the handlers hook_logger added (with the log file they write to).
_LOG_PATH = "memhub_hooks_log"


def state_dir(environ: dict[str, str] | None = None) -> Path:
    """Where the hooks keep their cursors and log."""
    env = os.environ if environ is None else environ
    configured = env.get(STATE_DIR_ENV, "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".memhub" / "hooks"


def hook_logger(directory: Path) -> logging.Logger:
    """A logger writing to `<dir>/hooks.log` (rotated at 1 MiB), never to stdout or stderr.

    One process may run events for several state dirs (an embedding program, the tests): the log follows the
    directory of the latest run instead of staying with the first.
    """
    log = logging.getLogger("memhub.hooks")
    log.setLevel(logging.INFO)
    log.propagate = False
    path = str((directory / LOG_NAME).absolute())
    ours = [h for h in log.handlers if getattr(h, _LOG_PATH, None) is not None]
    if any(getattr(h, _LOG_PATH) == path for h in ours):
        return log
    for handler in ours:
        log.removeHandler(handler)
        handler.close()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=LOG_MAX_BYTES, backupCount=1, encoding="utf-8"
        )
    except OSError:
        handler = logging.NullHandler()  # an unwritable state dir must not make the hook fail
    setattr(handler, _LOG_PATH, path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    return log


@dataclass(slots=True)
class Cursor:
    """How far one session's transcript is captured."""

    transcript: str = ""
    offset: int = 0
    pending_start: int | None = None
    pending_end: int | None = None
    pending_now: str | None = None  # when the pending range was taken: the time of its untimed messages


class CursorStore:
    """Cursor files under `<dir>/cursors/`, one per session, written atomically and used under a lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory / "cursors"

    def _path(self, session_id: str) -> Path:
        # Hashed: the session id comes from the hook's input and must not choose the file name.
        digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]
        return self.directory / f"{digest}.json"

    @contextlib.contextmanager
    def locked(self, session_id: str) -> Iterator[None]:
        """Held while a session's transcript is read and sent: a Stop and a PreCompact hook of one session may
        run at the same time, and the second must see the first one's cursor."""
        self.directory.mkdir(parents=True, exist_ok=True)
        lock_path = self._path(session_id).with_suffix(".lock")
        with lock_path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def load(self, session_id: str) -> Cursor:
        """The session's cursor (a fresh one when there is none or it cannot be read)."""
        try:
            data: Any = json.loads(self._path(session_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Cursor()
        if not isinstance(data, dict):
            return Cursor()
        known = {k: data[k] for k in Cursor.__slots__ if k in data}  # type: ignore[attr-defined]
        try:
            return Cursor(**known)
        except TypeError:
            return Cursor()

    def save(self, session_id: str, cursor: Cursor) -> None:
        """Replace the session's cursor: written beside it, then renamed over it, so a crash leaves one whole."""
        path = self._path(session_id)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(cursor)), encoding="utf-8")
        os.replace(tmp, path)


class IdentityCache:
    """The team, agent and user a connection's user key implies (`Connection.resolve`), kept for IDENTITY_TTL_SECONDS
    under `<dir>/identity/`, one file per gateway, tenant and key (named by a digest; the key is never written)."""

    def __init__(self, directory: Path, ttl: float = IDENTITY_TTL_SECONDS) -> None:
        self.directory = directory / "identity"
        self.ttl = ttl

    def _path(self, connection: Connection) -> Path:
        name = "\n".join((connection.url, connection.service_id or "", connection.key or "", connection.user_key or ""))
        return self.directory / f"{hashlib.sha256(name.encode('utf-8')).hexdigest()[:32]}.json"

    def fill(self, connection: Connection) -> Connection:
        """`connection` with the remembered ids filled in where it gives none (unchanged when nothing fresh is kept)."""
        try:
            data: Any = json.loads(self._path(connection).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return connection
        if not isinstance(data, dict) or not isinstance(data.get("at"), int | float):
            return connection
        if not 0 <= time.time() - data["at"] < self.ttl:
            return connection
        ids = {k: data[k] for k in ("team_id", "agent_id", "user_id") if isinstance(data.get(k), str) and data[k]}
        return replace(connection, **{k: v for k, v in ids.items() if not getattr(connection, k)})

    def remember(self, connection: Connection) -> None:
        """Keep a resolved connection's ids (best effort: an unwritable state dir only costs the next hook a lookup)."""
        ids = {k: getattr(connection, k) for k in ("team_id", "agent_id", "user_id")}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self._path(connection)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({**ids, "at": time.time()}), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass
