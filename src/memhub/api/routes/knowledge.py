"""`/v3/knowledge/*`: the registry of wiki and code-graph knowledge bases that agents may be offered."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import Guard, GuardedCall, GuardedRoute
from memhub.api.knowledge_schemas import ToolsBlock
from memhub.api.meta_schemas import KnowledgeCreate, KnowledgeDelete, KnowledgeGet, KnowledgeList, KnowledgeUpdate


def create(call: GuardedCall, body: KnowledgeCreate) -> Any:
    return call.meta.knowledge.create(call.caller, body.fields())


def get(call: GuardedCall, body: KnowledgeGet) -> Any:
    return call.meta.knowledge.get(call.caller, body.knowledge_id, body.team_id)


def update(call: GuardedCall, body: KnowledgeUpdate) -> Any:
    changes = {k: v for k, v in body.fields().items() if k not in ("knowledge_id", "team_id")}
    return call.meta.knowledge.update(call.caller, body.knowledge_id, changes, body.team_id)


def delete(call: GuardedCall, body: KnowledgeDelete) -> Any:
    return call.meta.knowledge.delete(call.caller, body.knowledge_ids, body.team_id)


def list_entries(call: GuardedCall, body: KnowledgeList) -> Any:
    return call.meta.knowledge.list(
        call.caller,
        body.team_id,
        type=body.type,
        knowledge_ids=body.knowledge_ids,
        limit=body.pagination.limit,
        offset=body.pagination.offset,
    )


ROUTES = [
    GuardedRoute("create", KnowledgeCreate, create, Guard.DATA, summary="Register a knowledge base (idempotent)"),
    GuardedRoute("get", KnowledgeGet, get, Guard.DATA, summary="Get a registered knowledge base"),
    GuardedRoute("update", KnowledgeUpdate, update, Guard.DATA, summary="Update a registration"),
    GuardedRoute("delete", KnowledgeDelete, delete, Guard.DATA, summary="Unregister knowledge bases"),
    GuardedRoute("list", KnowledgeList, list_entries, Guard.DATA, summary="A team's knowledge bases"),
]


def tools_block(call: GuardedCall, body: ToolsBlock) -> Any:
    assert call.knowledge is not None
    telemetry = {"x-conversation-id": body.conversation_id or "", "x-tdai-agent-source": body.agent_source or ""}
    return call.knowledge.offer.block(
        call.caller,
        body.team_id,
        agent_id=body.agent_id,
        user_id=body.user_id,
        language=body.language,
        telemetry=telemetry,
    )


OFFER_ROUTES = [
    GuardedRoute(
        "tools-block", ToolsBlock, tools_block, Guard.DATA, summary="The <knowledge_tools> prompt block for an agent"
    ),
]
