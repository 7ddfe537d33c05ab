"""What a composition is asked for and what it answers: plain values, no HTTP.

The output fields (`Composition.view()`) are the wire shape of `POST /v3/context/compose`; docs/context.md
describes each of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Mode = Literal["help", "system_agent", "workspace_agent", "plain"]
Placement = Literal["system", "user"]
Language = Literal["en", "zh"]
SourceKind = Literal["workspace", "agent", "system", "standard", "skill", "memory", "conversation"]
CAPABILITIES = ("llm_wiki", "code_graph", "skill", "chat_memory")

# The knowledge blocks (workspace ≈6,000, agent ≈8,000), the help content (≈8,000) and the memory excerpt (≈2,000)
# are the original agent platform's caps. The standards, skill and relevant-memory caps are memhub's (the original
# names no number; 3,000 characters hold about as much as `/v3/recall`'s default budget gives memories), and these
# keep one turn's system part near 24,000 characters.
DEFAULT_CAPS: dict[str, int] = {
    "workspace": 6000,
    "agent": 8000,
    "help": 8000,
    "standards": 4000,
    "skills": 2000,
    "memory": 3000,
    "conversation": 2000,
    "total": 24000,
}
# (min, max) a request may set; 0 for a section switches it off.
CAP_BOUNDS: dict[str, tuple[int, int]] = {
    "workspace": (500, 20000),
    "agent": (500, 20000),
    "help": (1000, 20000),
    "standards": (0, 20000),
    "skills": (0, 8000),
    "memory": (0, 12000),
    "conversation": (0, 8000),
    "total": (2000, 64000),
}


@dataclass(frozen=True, slots=True)
class Caps:
    """Character caps (code points, Python `len`) of each block and of the whole system part."""

    workspace: int = DEFAULT_CAPS["workspace"]
    agent: int = DEFAULT_CAPS["agent"]
    help: int = DEFAULT_CAPS["help"]
    standards: int = DEFAULT_CAPS["standards"]
    skills: int = DEFAULT_CAPS["skills"]
    memory: int = DEFAULT_CAPS["memory"]
    conversation: int = DEFAULT_CAPS["conversation"]
    total: int = DEFAULT_CAPS["total"]

    def view(self) -> dict[str, int]:
        """The caps on the wire."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The asset capability flags in effect (the original's `asset_type` switches); all on by default."""

    llm_wiki: bool = True
    code_graph: bool = True
    skill: bool = True
    chat_memory: bool = True

    def view(self) -> dict[str, bool]:
        """The flags on the wire (also the mapping `filter_by_capabilities` reads)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ComposeRequest:
    """One turn to compose for: the user's text and how the caller's client is set up.

    `capabilities` holds only the flags the request sets; a flag can switch an asset type off for this
    turn, never on against the user's configuration.
    """

    query: str
    help_mode: bool = False
    system_agent: bool = False
    paths: tuple[str, ...] = ()
    attachments: tuple[str, ...] = ()
    data_connection: bool = False
    capabilities: Mapping[str, bool] = field(default_factory=dict)
    caps: Caps = field(default_factory=Caps)
    language: Language = "en"
    conversation_id: str | None = None
    agent_source: str | None = None


@dataclass(frozen=True, slots=True)
class SourceRef:
    """One thing that went into the prompt: a wiki document, a skill note or the conversation tail."""

    kind: SourceKind
    id: str | None
    knowledge_id: str | None
    title: str | None
    path: str | None
    chars: int
    truncated: bool = False

    def view(self) -> dict[str, Any]:
        """The source on the wire."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Rendered:
    """One block's text for the prompt and the sources it holds ("" and () when it has nothing to say)."""

    text: str = ""
    sources: tuple[SourceRef, ...] = ()


@dataclass(frozen=True, slots=True)
class StandardCheck:
    """A standard the question matched, whether it is in force at the request time and whether it went in."""

    knowledge_id: str
    id: str
    title: str
    number: str | None
    lifecycle: str | None
    effective_from: str | None
    effective_to: str | None
    state: str  # in_force | draft | expired | not_yet_effective | archived | invalid
    injected: bool = False

    def view(self) -> dict[str, Any]:
        """The check on the wire."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Whether this turn retrieves knowledge (not for data questions or look-ups of the
    conversation itself) and why; `paths` is the path context used."""

    decision: Literal["retrieve", "skip"]
    reason: str
    paths: tuple[str, ...] = ()

    def view(self) -> dict[str, Any]:
        """The decision on the wire."""
        return {"decision": self.decision, "reason": self.reason, "paths": list(self.paths)}


@dataclass(frozen=True, slots=True)
class Composition:
    """The composed runtime context of one turn.

    Invariant: `user == user_prepend + query`; `user_prepend` is "" when the user's text goes unchanged.
    """

    mode: Mode
    placement: Placement
    retrieval: Retrieval
    system: str
    user_prepend: str
    user: str
    sources: tuple[SourceRef, ...]
    standards: tuple[StandardCheck, ...]
    caps: Caps
    capabilities: Capabilities
    knowledge_tools: str
    warnings: tuple[str, ...] = ()

    def view(self) -> dict[str, Any]:
        """The composition on the wire."""
        return {
            "mode": self.mode,
            "placement": self.placement,
            "retrieval": self.retrieval.view(),
            "system": self.system,
            "user_prepend": self.user_prepend,
            "user": self.user,
            "sources": [s.view() for s in self.sources],
            "standards": [s.view() for s in self.standards],
            "caps": self.caps.view(),
            "capabilities": self.capabilities.view(),
            "knowledge_tools": self.knowledge_tools,
            "chars": {"system": len(self.system), "user": len(self.user), "knowledge_tools": len(self.knowledge_tools)},
            "warnings": list(self.warnings),
        }
