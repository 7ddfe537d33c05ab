"""memhub's Python client SDK, wire-compatible with TencentDB Agent Memory's v3 Python SDK.

    from memhub.sdk import MemoryClient, TDAMError

    with MemoryClient("http://127.0.0.1:8420", "mh-gw-…", "svc-a",
                      team_id="team-1", agent_id="agent-1", user_id="user-1", session_id="s1") as memory:
        memory.add_conversation([{"role": "user", "content": "I prefer oolong tea"}])
        hits = memory.search_atomic("tea", limit=5)

Clients: `MemoryClient` (L0–L3 data plane), `MetadataClient` (management plane and knowledge
registry), `KnowledgeClient` (knowledge tools), `SkillClient` (skills: `/v3/skill/*`), each with an
`Async…` twin. Errors: `ParamError`
before sending, `TDAMError` for anything after (its `TransportError` subclass when no response
came). Depends on httpx and the standard library only, never on the memhub server.
"""

from typing import TYPE_CHECKING

from memhub.sdk._lazy import lazy_exports

if TYPE_CHECKING:
    from memhub.sdk._errors import ParamError, TDAMError, TransportError
    from memhub.sdk.knowledge import AsyncKnowledgeClient, KnowledgeClient
    from memhub.sdk.memory import AsyncMemoryClient, AtomicMemoryType, MemoryClient
    from memhub.sdk.metadata import AsyncMetadataClient, MetadataClient
    from memhub.sdk.skills import SKILL_ERROR_CODE, AsyncSkillClient, SkillClient, encode_base64, encode_utf8

__all__ = [
    "SKILL_ERROR_CODE",
    "AsyncKnowledgeClient",
    "AsyncMemoryClient",
    "AsyncMetadataClient",
    "AsyncSkillClient",
    "AtomicMemoryType",
    "KnowledgeClient",
    "MemoryClient",
    "MetadataClient",
    "ParamError",
    "SkillClient",
    "TDAMError",
    "TransportError",
    "encode_base64",
    "encode_utf8",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "ParamError": "memhub.sdk._errors",
        "TDAMError": "memhub.sdk._errors",
        "TransportError": "memhub.sdk._errors",
        "AsyncKnowledgeClient": "memhub.sdk.knowledge",
        "KnowledgeClient": "memhub.sdk.knowledge",
        "AsyncMemoryClient": "memhub.sdk.memory",
        "AtomicMemoryType": "memhub.sdk.memory",
        "MemoryClient": "memhub.sdk.memory",
        "AsyncMetadataClient": "memhub.sdk.metadata",
        "MetadataClient": "memhub.sdk.metadata",
        "SKILL_ERROR_CODE": "memhub.sdk.skills",
        "AsyncSkillClient": "memhub.sdk.skills",
        "SkillClient": "memhub.sdk.skills",
        "encode_base64": "memhub.sdk.skills",
        "encode_utf8": "memhub.sdk.skills",
    },
)
