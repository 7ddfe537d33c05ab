"""List pages: `limit` 1..100 (default 20) and `offset`, answered as `{items, total, limit, offset}`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memhub.model.meta import MetaKind, Row, Where
from memhub.store.meta import MetaReader

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


@dataclass(frozen=True, slots=True)
class Page:
    """Which slice of a list a request wants."""

    limit: int = DEFAULT_LIMIT
    offset: int = 0

    def of(self, items: Sequence[Any], total: int) -> dict[str, Any]:
        """The wire shape of one page."""
        return {"items": list(items), "total": total, "limit": self.limit, "offset": self.offset}

    def cut(self, items: Sequence[Any]) -> dict[str, Any]:
        """One page of a list filtered in memory (its total is the filtered length)."""
        return self.of(items[self.offset : self.offset + self.limit], len(items))


FIRST_PAGE = Page()


def read_page(
    r: MetaReader,
    kind: MetaKind,
    where: Where,
    order_by: Sequence[str],
    page: Page,
    view: Callable[[Row], Row] | None = None,
) -> dict[str, Any]:
    """One page of stored entities and the total that match, from one snapshot."""
    rows = r.find(kind, where, order_by=order_by, limit=page.limit, offset=page.offset)
    return page.of([view(x) for x in rows] if view else rows, r.count(kind, where))
