"""The runtime-context composer: one turn's prompt material, assembled as the original agent platform's
`composeLLMRuntimeContext` does it (docs/context.md).

`ContextComposer.compose` takes the caller, the isolation ids the turn acts under and the request, and answers a
`Composition`; it reads and never writes. The fork (help, system agent, workspace agent or plain), the retrieval
decision, the sources of each block (memhub.context.sources), the standards library and the layout under caps each
live in their own module; this one authorizes the turn, puts them in order and renders the `<knowledge_tools>` block.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from functools import partial

from memhub.context.decision import HELP_MODES, choose_mode, context_paths, decide
from memhub.context.excerpt import recent_excerpt, session_window
from memhub.context.knowledge import pick_documents, render_picks
from memhub.context.layout import Assembled, Section, assemble_help_user, assemble_system
from memhub.context.memory import relevant_memory
from memhub.context.model import (
    CAPABILITIES,
    Capabilities,
    ComposeRequest,
    Composition,
    Mode,
    Retrieval,
    StandardCheck,
)
from memhub.context.skills import NoSkills, SkillSource, render_notes
from memhub.context.sources import SYSTEM_TEAM, system_shelves, team_shelves
from memhub.context.standards import match_standards
from memhub.context.text import FENCES, HEADINGS, help_notes, help_role, runtime_notes
from memhub.errors import BadRequest
from memhub.knowledge.services import KnowledgeServices
from memhub.memory.conversation import ConversationService
from memhub.memory.recall import RecallService
from memhub.meta.access import AccessDenied, DataPlaneAccess
from memhub.meta.caller import Caller
from memhub.meta.config import ConfigParams
from memhub.meta.guards import membership
from memhub.scope import DEFAULT_ID, Isolation


def _named(value: str) -> str | None:
    """An isolation id the turn actually names (the `default` bucket names nothing)."""
    return None if value == DEFAULT_ID else value


@dataclass(frozen=True)
class ContextComposer:
    """Composes runtime context from the knowledge services, the L0 conversation and the caller's rights."""

    knowledge: KnowledgeServices
    conversation: ConversationService
    access: DataPlaneAccess
    config: ConfigParams
    skills: SkillSource = field(default_factory=NoSkills)
    recall: RecallService | None = None  # 【Relevant memory】; None leaves the section out

    def compose(
        self, caller: Caller, isolation: Isolation, request: ComposeRequest, *, day: date | None = None
    ) -> Composition:
        """The composition of one turn; `day` (UTC, default today) decides which standards are in force."""
        team, agent = _named(isolation.team_id), _named(isolation.agent_id)
        isolation = self._authorize(caller, isolation, team, agent)
        mode = choose_mode(help_mode=request.help_mode, system_agent=request.system_agent, team_id=team, agent_id=agent)
        flags = self._capabilities(caller, isolation, request)
        paths = context_paths(request.query, request.paths, request.attachments)
        retrieval = decide(
            mode, request.query, data_connection=request.data_connection, paths=paths, llm_wiki=flags.llm_wiki
        )
        if mode in HELP_MODES:
            return self._help(caller, request, mode, retrieval, flags)
        return self._runtime(caller, isolation, request, mode, retrieval, flags, day or datetime.now(UTC).date())

    # -- who may compose what ------------------------------------------------------------------------------

    def _authorize(self, caller: Caller, isolation: Isolation, team: str | None, agent: str | None) -> Isolation:
        """The data plane's rules: a user key acts as its user, in its teams, through agents it may use."""
        if team == SYSTEM_TEAM:
            raise BadRequest(
                f"team_id: {SYSTEM_TEAM} is reserved for system knowledge; use help_mode to read it",
                data={"errors": [{"field": "team_id", "rule": f"{SYSTEM_TEAM} is reserved for system knowledge"}]},
            )
        if team and agent:
            return self.access.authorize(caller, isolation)
        # Without an agent no memory scope is read (only workspace agent turns carry the conversation excerpt),
        # so the user and the team are all there is to check.
        if caller.is_service_key or caller.is_system_admin:
            return isolation
        if isolation.user_id != caller.user_id:
            raise AccessDenied("user_id", "a user key acts only as its own user")
        if team:
            with self.access.store.reading(caller.service_id) as r:
                if membership(r, team, caller.user_id or "") is None:
                    raise AccessDenied("team_id", "not a team this user is an active member of")
        return isolation

    def _capabilities(self, caller: Caller, isolation: Isolation, request: ComposeRequest) -> Capabilities:
        """The user's configured flags (default on), narrowed by the request's: a request never switches one on."""
        user = caller.user_id or _named(isolation.user_id)
        flags = {
            name: self.config.asset_type_enabled(caller.service_id, user, name) and request.capabilities.get(name, True)
            for name in CAPABILITIES
        }
        return Capabilities(**flags)

    # -- the help path (help mode and built-in system agents) ---------------------------------------------

    def _help(
        self, caller: Caller, request: ComposeRequest, mode: Mode, retrieval: Retrieval, flags: Capabilities
    ) -> Composition:
        lang, query = request.language, request.query
        shelves = system_shelves(self.knowledge.documents(), caller.service_id)
        picks = (
            pick_documents(shelves, query, paths=retrieval.paths, data_connection=request.data_connection)
            if retrieval.decision == "retrieve"
            else []
        )
        heads = HEADINGS[lang]
        render = partial(render_picks, "system", picks, query)
        notes, cap = help_notes(lang), request.caps.help
        assembled = assemble_help_user(notes, heads["system"], FENCES["system"], render, heads["question"], query, cap)
        return Composition(
            mode=mode,
            placement="user",
            retrieval=retrieval,
            system=help_role(lang),
            user_prepend=assembled.text,
            user=assembled.text + query,
            sources=assembled.sources,
            standards=(),
            caps=request.caps,
            capabilities=flags,
            knowledge_tools="",  # the help assistant does not use the team's knowledge tools
            warnings=assembled.warnings,
        )

    # -- the workspace agent path and the plain one -------------------------------------------------------

    def _runtime(
        self,
        caller: Caller,
        isolation: Isolation,
        request: ComposeRequest,
        mode: Mode,
        retrieval: Retrieval,
        flags: Capabilities,
        day: date,
    ) -> Composition:
        team, agent = _named(isolation.team_id), _named(isolation.agent_id)
        lang, query, caps = request.language, request.query, request.caps
        heads = HEADINGS[lang]
        sections: list[Section] = []
        checks: list[StandardCheck] = []
        warnings: list[str] = []
        standards = False
        if mode == "workspace_agent" and team:
            if retrieval.decision == "retrieve":
                found, checks, shelf_warnings = self._knowledge(caller, team, agent, request, retrieval, day)
                sections += found
                warnings += shelf_warnings
                standards = caps.standards > 0 and any(c.injected for c in checks)
            if flags.skill:
                skill_notes = self.skills.notes(caller, team, agent, query)
                warnings += skill_notes.warnings
                skills = partial(render_notes, skill_notes.notes)
                sections.append(Section("skills", heads["skills"], FENCES["skills"], caps.skills, skills))
            if flags.chat_memory:
                window = session_window(self.conversation, isolation)
                if self.recall is not None:
                    memory = partial(relevant_memory, self.recall, isolation, query, window)
                    sections.append(Section("memory", heads["memory"], FENCES["memory"], caps.memory, memory))
                excerpt = partial(recent_excerpt, window, isolation.session_id, language=lang)
                heading = heads["conversation"]
                sections.append(Section("conversation", heading, FENCES["conversation"], caps.conversation, excerpt))
        notes = runtime_notes(lang, workspace_agent=mode == "workspace_agent", standards=standards)
        assembled = assemble_system(notes, sections, caps.total)
        return Composition(
            mode=mode,
            placement="system",
            retrieval=retrieval,
            system=assembled.text,
            user_prepend="",
            user=query,
            sources=assembled.sources,
            standards=_injected(checks, assembled),
            caps=caps,
            capabilities=flags,
            knowledge_tools=self._tools_block(caller, isolation, request, flags) if team else "",
            warnings=(*warnings, *assembled.warnings),
        )

    def _knowledge(
        self, caller: Caller, team: str, agent: str | None, request: ComposeRequest, retrieval: Retrieval, day: date
    ) -> tuple[list[Section], list[StandardCheck], tuple[str, ...]]:
        """The workspace, agent and standards sections of a workspace agent turn, and the standards checked."""
        query, caps, heads = request.query, request.caps, HEADINGS[request.language]
        shelves = team_shelves(self.knowledge.documents(), caller, team, agent)
        pick = partial(pick_documents, paths=retrieval.paths, data_connection=request.data_connection)
        workspace, own = pick(shelves.workspace, query), pick(shelves.agent, query)
        everything = [*shelves.workspace, *shelves.agent]
        standards, checks = match_standards(everything, query, paths=retrieval.paths, day=day)
        blocks = [
            ("workspace", caps.workspace, "workspace", workspace),
            ("agent", caps.agent, "agent", own),
            ("standards", caps.standards, "standard", standards),
        ]
        sections = [
            Section(key, heads[key], FENCES[key], cap, partial(render_picks, kind, picks, query))
            for key, cap, kind, picks in blocks
        ]
        return sections, checks, shelves.warnings

    def _tools_block(self, caller: Caller, isolation: Isolation, request: ComposeRequest, flags: Capabilities) -> str:
        """`<knowledge_tools>` for the team (or the agent's bound resources), filtered by the flags in effect."""
        telemetry = {
            "x-conversation-id": request.conversation_id or "",
            "x-tdai-agent-source": request.agent_source or "",
        }
        block = self.knowledge.offer.block(
            caller,
            isolation.team_id,
            agent_id=_named(isolation.agent_id),
            user_id=_named(isolation.user_id),
            language=request.language,
            telemetry=telemetry,
            capabilities=flags.view(),
        )
        return str(block["text"])


def _injected(checks: list[StandardCheck], assembled: Assembled) -> tuple[StandardCheck, ...]:
    """The checks with `injected` true only for standards whose text made it into the prompt."""
    present = {(s.knowledge_id, s.id) for s in assembled.sources if s.kind == "standard"}
    return tuple(replace(c, injected=(c.knowledge_id, c.id) in present) for c in checks)
