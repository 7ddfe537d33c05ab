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
from collections.abc import Sequence
from contextlib import AbstractContextManager

from memhub.model.meta import MetaKind, Row, Where


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
