"""`mem:` commands: typed by the user as a whole message, answered by the proxy, never sent upstream.

The original's rules: the message (trimmed, the client's wrappers removed) starts with `mem:` in any case; the
command name follows, optionally after spaces, up to the first whitespace; a command that takes no arguments
followed by more text is ordinary conversation (`mem:help me with this` goes to the model); an unknown name gets
a reply saying so, so a typo never reaches the model as if it were a question.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from anyio import to_thread

from memhub.knowledge.skill.mining.service import Archived, MiningService
from memhub.proxy.capture import skill_session_key
from memhub.proxy.model import ProxyIdentity
from memhub.proxy.user_text import clean_user_text

log = logging.getLogger("memhub.proxy.commands")

PREFIX = "mem:"
# Each known command, and whether it takes arguments.
TAKES_ARGS = {"help": False, "sync": False, "create-skill": True}
MAX_NOTE_CHARS = 2000  # the archive note's limit on `/v3/skill/conversation/force-archive`

HELP = """**Available mem: commands:**

| Command | What it does |
|------|------|
| `mem:sync` | Refresh everything injected into this session (skills / memory / knowledge / task & agent descriptions) |
| `mem:create-skill [note]` | Archive this conversation for skill extraction, which runs in the background |
| `mem:help` | Show this help |

**Examples:**
```
mem:sync
mem:create-skill focus on the database migration steps and the pitfalls
mem:help
```

The form is `mem:<command>`, with no space after the colon. Command names are case-insensitive."""
SYNCED = (
    "✅ Everything injected into this session was refreshed (skills / memory / knowledge / task & agent "
    "descriptions); the next turn computes it afresh"
)
SYNC_FAILED = "❌ Refreshing this session's injected assets failed: {error}"
ARCHIVED = "✅ This conversation was archived; skill extraction is under way"
NOTHING_TO_ARCHIVE = "⚠️ There is nothing in this conversation to archive yet; keep working and try again"
ARCHIVE_FAILED = "❌ Archiving this conversation failed: {error}"
NO_SCOPE = "no team and agent are set for this session (send x-team-id and x-agent-id)"
NOTE_TOO_LONG = f"the note after mem:create-skill must be at most {MAX_NOTE_CHARS} characters"
UNKNOWN = "❌ Unknown command: `mem:{command}`. Type `mem:help` to see the available commands."


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """A `mem:` command: its lower-case name and the text after it."""

    command: str
    args: str


def parse_command(text: str) -> ParsedCommand | None:
    """The command a message is, or None when it is ordinary conversation."""
    trimmed = text.strip()
    if not trimmed.lower().startswith(PREFIX):
        return None
    parts = trimmed[len(PREFIX) :].split(maxsplit=1)
    name = parts[0].lower() if parts else ""
    args = parts[1].strip() if len(parts) > 1 else ""
    if not name:
        return None
    if TAKES_ARGS.get(name) is False and args:
        return None
    return ParsedCommand(name, args)


class MemCommands:
    """The `Commands` port.

    `forget_session` is the injector's (`Injector.forget_session`): `mem:sync` drops the session's cached blocks
    so the next turn computes them afresh. `flush_capture(timeout)` (the capture's `drain`) runs before an archive
    is cut, so the turns just answered are in the buffer it archives.
    """

    def __init__(
        self,
        skill_mining: MiningService,
        forget_session: Callable[[ProxyIdentity], None],
        *,
        flush_capture: Callable[[float], bool] | None = None,
        flush_timeout_seconds: float = 30.0,
    ) -> None:
        self.skill_mining = skill_mining
        self.forget_session = forget_session
        self.flush_capture = flush_capture
        self.flush_timeout_seconds = flush_timeout_seconds

    async def run(self, identity: ProxyIdentity, user_text: str) -> str | None:
        """The reply when the user's message is a `mem:` command, else None."""
        if PREFIX not in user_text.lower():
            return None  # every main turn asks: most never need the cleaning a command is read from
        cleaned = clean_user_text(user_text)
        parsed = None if cleaned.skip else parse_command(cleaned.text)
        if parsed is None:
            return None
        if parsed.command == "help":
            return HELP
        if parsed.command == "sync":
            return self._sync(identity)
        if parsed.command == "create-skill":
            return await self._create_skill(identity, parsed.args)
        return UNKNOWN.format(command=parsed.command)

    def _sync(self, identity: ProxyIdentity) -> str:
        try:
            self.forget_session(identity)
        except Exception as exc:
            log.exception("mem:sync of session %s failed", identity.session_id)
            return SYNC_FAILED.format(error=exc)
        return SYNCED

    async def _create_skill(self, identity: ProxyIdentity, note: str) -> str:
        if not identity.has_memory_scope:
            return ARCHIVE_FAILED.format(error=NO_SCOPE)
        if len(note) > MAX_NOTE_CHARS:
            return ARCHIVE_FAILED.format(error=NOTE_TOO_LONG)
        try:
            # A store write (and maybe a wait for the capture queue): off the event loop.
            archived = await to_thread.run_sync(self._archive, identity, note or None)
        except Exception as exc:
            log.exception("mem:create-skill of session %s failed", identity.session_id)
            return ARCHIVE_FAILED.format(error=exc)
        return NOTHING_TO_ARCHIVE if archived is None else ARCHIVED

    def _archive(self, identity: ProxyIdentity, note: str | None) -> Archived | None:
        if self.flush_capture is not None and not self.flush_capture(self.flush_timeout_seconds):
            log.warning("mem:create-skill: capture not flushed in time; the newest turns may be missing")
        return self.skill_mining.force_archive(skill_session_key(identity), identity.task_id, note)
