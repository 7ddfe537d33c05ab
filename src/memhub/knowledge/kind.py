"""What a kind of knowledge resource (wiki, code graph, …) is to the code every kind shares.

A kind registers two things: a `ResourceKind` (its facts: wire name, id prefix, table, asset type, tools) in
`knowledge/<kind>/kind.py`, listed in `memhub.knowledge.kinds`, and a service class implementing `KindService`
(`knowledge/<kind>/service.py`, usually on top of `memhub.knowledge.service.ResourceService`), listed in
`memhub.knowledge.services`. Tool dispatch, the `<knowledge_tools>` offer, build resume and shutdown, and the
HTTP mounting then iterate the registry instead of naming kinds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from memhub.errors import BadRequest, NotFound
from memhub.knowledge.tools import ToolSpec
from memhub.meta.caller import Caller
from memhub.model.meta import MetaKind, Row

# Which context block a kind's resources feed in the runtime-context composer, if any: "documents" are the
# workspace, agent and system knowledge blocks (and the standards library).
ContextRole = Literal["documents"]
ID_LENGTH = 8


@dataclass(frozen=True, slots=True)
class ResourceKind:
    """The facts of one kind of knowledge resource."""

    name: str  # `type` on the wire (registry, tools/list, <knowledge_tools>) and the route prefix `/v3/<name>`
    noun: str  # how messages name one resource: "wiki", "code graph"
    id_prefix: str  # ids are `<id_prefix>-` and 8 characters of [0-9a-z]
    id_field: str  # the id's field in rows and requests
    meta_kind: MetaKind  # the management-store table of its rows
    asset_type: str  # its meta asset type: agents bind it as a fixed asset, users switch it on and off
    tools: tuple[ToolSpec, ...]  # in tools/list order
    about_in_block: bool = False  # whether <knowledge_tools> shows its summary as `about`
    context: ContextRole | None = None
    id_re: re.Pattern[str] = field(init=False)
    tools_by_name: Mapping[str, ToolSpec] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id_re", re.compile(rf"^{re.escape(self.id_prefix)}-[0-9a-z]{{{ID_LENGTH}}}$"))
        object.__setattr__(self, "tools_by_name", {t.name: t for t in self.tools})

    @property
    def route_prefix(self) -> str:
        """Where its management routes are mounted."""
        return f"/v3/{self.name}"

    def check_id(self, resource_id: str, field_name: str | None = None) -> None:
        """The kind's id format, or 400 naming the field."""
        if not self.id_re.match(resource_id):
            raise BadRequest(
                f"{field_name or self.id_field}: invalid {self.id_field} format "
                f"(expected {self.id_prefix}- and {ID_LENGTH} characters of [0-9a-z])"
            )

    def not_found(self, resource_id: str) -> NotFound:
        """The one answer for a resource that is absent or belongs to a team the caller is not in."""
        return NotFound(f"{self.noun} not found: {resource_id}")


class KindService(Protocol):
    """What the shared knowledge code asks of each kind's service."""

    KIND: ClassVar[ResourceKind]

    def row(self, caller: Caller, resource_id: str) -> Row:
        """The resource's row if the caller may see it, else the kind's 404."""
        ...

    def tool_view(self, row: Row) -> Row:
        """The resource as tools/list shows it: `{name, summary, status, stale}`."""
        ...

    def call_tool(self, caller: Caller, row: Row, tool_name: str, params: dict[str, Any]) -> Row:
        """Run one of the kind's tools (its params already checked) on the resource."""
        ...

    def resume(self) -> int:
        """At start: queue again the builds a previous process left; how many."""
        ...

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until queued builds are done."""
        ...

    def close(self) -> None:
        """Stop the build workers (queued builds resume at the next start)."""
        ...
