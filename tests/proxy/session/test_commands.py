"""`mem:` commands: the original's parsing rules, `mem:sync` forgetting the session's blocks and `mem:create-skill`
archiving the session's work (the turns just captured included)."""

from __future__ import annotations

import asyncio

import pytest

from memhub.proxy.capture import BackgroundCapture
from memhub.proxy.commands import (
    ARCHIVED,
    HELP,
    NOTHING_TO_ARCHIVE,
    SYNCED,
    MemCommands,
    ParsedCommand,
    parse_command,
)
from memhub.proxy.model import ProxyIdentity, ToolCall, TurnOutput, WireProtocol
from tests.proxy.session.conftest import Crew

WAIT = 600.0


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("mem:help", ParsedCommand("help", "")),
        ("  MEM: Sync \n", ParsedCommand("sync", "")),
        ("mem:create-skill", ParsedCommand("create-skill", "")),
        (
            "mem:create-skill  focus on the migration\nand its pitfalls ",
            ParsedCommand("create-skill", "focus on the migration\nand its pitfalls"),
        ),
        ("mem:helpp", ParsedCommand("helpp", "")),
        ("mem:help me write a poem", None),  # a command without arguments, followed by words: conversation
        ("mem:sync now", None),
        ("mem:", None),
        ("tell me about mem:help", None),
        ("memory: help", None),
    ],
)
def test_parsing_follows_the_original(text: str, parsed: ParsedCommand | None) -> None:
    assert parse_command(text) == parsed


class Forgotten:
    """The injector's forget function, as far as these tests need it: which sessions it was told to drop."""

    def __init__(self) -> None:
        self.sessions: list[ProxyIdentity] = []

    def __call__(self, identity: ProxyIdentity) -> None:
        self.sessions.append(identity)


def identity_of(crew: Crew, *, agent_id: str | None = "at") -> ProxyIdentity:
    agent = crew.at if agent_id == "at" else agent_id
    return ProxyIdentity(crew.service, crew.alice.user_id, "uky-any", "sess-cmd", team_id=crew.team_a, agent_id=agent)


def run(commands: MemCommands, identity: ProxyIdentity, text: str) -> str | None:
    return asyncio.run(commands.run(identity, text))


def test_help_sync_and_unknown_commands(crew: Crew) -> None:
    forgotten = Forgotten()
    commands = MemCommands(crew.hub.skill_mining, forgotten)
    me = identity_of(crew)
    # Claude Code sends its reminders in the same message: they are not part of the command.
    assert run(commands, me, "<system-reminder>date</system-reminder>\nmem:help") == HELP
    assert forgotten.sessions == []
    assert run(commands, me, "mem:SYNC") == SYNCED
    assert forgotten.sessions == [me]
    assert run(commands, me, "mem:forget-all") == (
        "❌ Unknown command: `mem:forget-all`. Type `mem:help` to see the available commands."
    )
    assert run(commands, me, "what does mem:sync do?") is None
    assert run(commands, me, "<command-name>/mem:help</command-name>") is None


def test_create_skill_archives_the_session_with_the_turns_just_captured(crew: Crew) -> None:
    hub = crew.hub
    capture = BackgroundCapture(hub.memory.conversation, hub.skill_mining, hub.meta)
    commands = MemCommands(hub.skill_mining, Forgotten(), flush_capture=capture.drain)
    me = identity_of(crew)
    assert run(commands, me, "mem:create-skill") == NOTHING_TO_ARCHIVE
    output = TurnOutput(text="Migrating.", tool_calls=[ToolCall("c1", "Bash", '{"command": "alembic upgrade"}')])
    capture.submit(me, WireProtocol.ANTHROPIC, "Migrate the database.", output)
    # No drain here: the command flushes the capture before it cuts the archive.
    assert run(commands, me, "mem:create-skill the migration steps") == ARCHIVED
    (archive,) = hub.store.skills.recent_archives(crew.service, crew.team_a, crew.at, 5)
    assert archive.note == "the migration steps" and archive.session_id == "sess-cmd"
    assert [m["role"] for m in archive.messages] == ["user", "assistant", "tool_call"]
    assert run(commands, me, "mem:create-skill") == NOTHING_TO_ARCHIVE
    assert capture.close(WAIT)


def test_create_skill_needs_a_scope_and_a_bounded_note(crew: Crew) -> None:
    commands = MemCommands(crew.hub.skill_mining, Forgotten())
    no_agent = run(commands, identity_of(crew, agent_id=None), "mem:create-skill")
    assert no_agent == (
        "❌ Archiving this conversation failed: no team and agent are set for this session "
        "(send x-team-id and x-agent-id)"
    )
    long_note = run(commands, identity_of(crew), "mem:create-skill " + "n" * 2001)
    assert long_note is not None and long_note.endswith("must be at most 2000 characters")
    assert crew.hub.store.skills.recent_archives(crew.service, crew.team_a, crew.at, 5) == []
