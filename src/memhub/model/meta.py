"""The management plane's vocabulary: entity kinds, their id fields, row and filter shapes."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

Row = dict[str, Any]
Where = Mapping[str, Any]


class MetaKind(StrEnum):
    """Entity kinds of the management plane; the value names the entity in messages."""

    USER = "user"
    USER_KEY = "user_key"
    TEAM = "team"
    MEMBER = "team_member"
    AGENT = "agent"
    TASK = "task"
    TASK_AGENT = "task_agent"
    PARTICIPATION = "participation_log"
    ASSET = "asset"
    FIXED_ASSET = "agent_fixed_asset"
    ACL = "acl"
    CONFIG = "config_param"
    KNOWLEDGE = "knowledge"
    WIKI = "wiki"
    WIKI_SOURCE = "wiki_source"
    CODE_GRAPH = "code_graph"
    AUDIT = "audit"


# The field that identifies one entity of each kind inside its tenant.
ID_FIELD: dict[MetaKind, str] = {
    MetaKind.USER: "user_id",
    MetaKind.USER_KEY: "key_id",
    MetaKind.TEAM: "team_id",
    MetaKind.MEMBER: "id",
    MetaKind.AGENT: "agent_id",
    MetaKind.TASK: "task_id",
    MetaKind.TASK_AGENT: "id",
    MetaKind.PARTICIPATION: "id",
    MetaKind.ASSET: "asset_id",
    MetaKind.FIXED_ASSET: "id",
    MetaKind.ACL: "id",
    MetaKind.CONFIG: "id",
    MetaKind.KNOWLEDGE: "knowledge_id",
    MetaKind.WIKI: "wiki_id",
    MetaKind.WIKI_SOURCE: "id",
    MetaKind.CODE_GRAPH: "code_graph_id",
    MetaKind.AUDIT: "id",
}


class DuplicateEntry(Exception):
    """An insert hit a unique rule (same id, same member twice, a second system admin …)."""

    def __init__(self, kind: MetaKind, detail: str) -> None:
        super().__init__(f"{kind.value}: {detail}")
        self.kind = kind
        self.detail = detail
