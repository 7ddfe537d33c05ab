"""The fork (which path a turn takes) and the retrieval decision (whether the turn retrieves knowledge).

Modes:
- `help`: the request sets `help_mode`; system knowledge only, assembled into the user-side content.
- `system_agent`: a built-in system agent (memhub's meta has no `is_system` notion, so the request says so with
  `system_agent`); the same help path as `help`.
- `workspace_agent`: an agent in a selected workspace (team); runtime material goes into the system part.
- `plain`: no agent, so no workspace or agent knowledge; fixed notes only.

Knowledge retrieval is skipped for numbers / reports asked of a data connection and for look-ups of the
conversation itself ("what did we discuss…", "刚才聊了什么"), so unrelated policy text stays out of the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence

from memhub.context.model import Mode, Retrieval
from memhub.knowledge.wiki.walk import extract_paths, skip_reason

HELP_MODES: tuple[Mode, ...] = ("help", "system_agent")

# Retrieval reasons on the wire (docs/context.md lists them).
NEEDS_KNOWLEDGE = "needs_knowledge"
NO_AGENT = "no_agent"
LLM_WIKI_OFF = "llm_wiki_disabled"


def choose_mode(*, help_mode: bool, system_agent: bool, team_id: str | None, agent_id: str | None) -> Mode:
    """Which path of the fork a turn takes; `help_mode` wins over everything else."""
    if help_mode:
        return "help"
    if system_agent:
        return "system_agent"
    if team_id and agent_id:
        return "workspace_agent"
    return "plain"


def context_paths(query: str, paths: Sequence[str], attachments: Sequence[str]) -> tuple[str, ...]:
    """Path fragments and file names of the turn: named in the text, sent as paths, attached; in that order."""
    return tuple(dict.fromkeys([*extract_paths(query), *paths, *attachments]))


def decide(mode: Mode, query: str, *, data_connection: bool, paths: Sequence[str], llm_wiki: bool) -> Retrieval:
    """Whether this turn retrieves knowledge, and the reason code."""
    if mode == "plain":
        return Retrieval("skip", NO_AGENT, tuple(paths))
    reason = skip_reason(query, data_connection=data_connection)
    if reason:
        return Retrieval("skip", reason, tuple(paths))
    # The help documents are the product's, not one of the user's assets: the llm_wiki switch does not apply.
    if mode == "workspace_agent" and not llm_wiki:
        return Retrieval("skip", LLM_WIKI_OFF, tuple(paths))
    return Retrieval("retrieve", NEEDS_KNOWLEDGE, tuple(paths))
