"""The management plane's store interface: typed entity kinds, snapshots and transactions.

The meta services (memhub.meta) hold every business rule; the store only reads and writes entity
rows of one tenant, each as a plain dict in the wire shape. A read snapshot or a write transaction
is one unit: a quota check and the insert it guards commit together, and a cascade either happens
whole or not at all.

A `where` mapping selects rows: `{"team_id": "t"}` is equality, a list value is `IN`, and a key
ending in an operator (`"created_at >="`, `"status !="`) compares with it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
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


class MetaReader(ABC):
    """Reads of one tenant inside one consistent snapshot."""

    service_id: str

    @abstractmethod
    def get(self, kind: MetaKind, entity_id: str) -> Row | None:
        """The entity with this id, or None."""

    @abstractmethod
    def find(
        self,
        kind: MetaKind,
        where: Where | None = None,
        *,
        order_by: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Row]:
        """Entities matching `where`, ordered (a leading `-` sorts descending), optionally one page."""

    @abstractmethod
    def count(self, kind: MetaKind, where: Where | None = None) -> int:
        """How many entities match."""


class MetaWriter(MetaReader):
    """Reads and writes of one tenant inside one transaction."""

    @abstractmethod
    def insert(self, kind: MetaKind, row: Row) -> None:
        """Add an entity; raises DuplicateEntry when a unique rule is broken."""

    @abstractmethod
    def update(self, kind: MetaKind, entity_id: str, changes: Row) -> bool:
        """Change fields of one entity; False when it does not exist."""

    @abstractmethod
    def delete(self, kind: MetaKind, where: Where) -> int:
        """Remove matching entities; returns how many."""


class MetaStore(ABC):
    """Management-plane persistence, shared by every tenant of a data dir."""

    @abstractmethod
    def reading(self, service_id: str) -> AbstractContextManager[MetaReader]:
        """A read snapshot of one tenant."""

    @abstractmethod
    def writing(self, service_id: str) -> AbstractContextManager[MetaWriter]:
        """A write transaction of one tenant: committed on success, rolled back on any error."""
