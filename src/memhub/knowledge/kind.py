"""What a kind of knowledge resource (wiki, code graph, skill) is to the code every kind shares.

A kind registers two things: a `ResourceKind` (its facts: wire name, id format, table, asset type, tools) in
`knowledge/<kind>/kind.py`, listed in `memhub.knowledge.kinds`, and a service class implementing `KindService`
(`knowledge/<kind>/service.py`, usually on top of `memhub.knowledge.service.ResourceService`), listed in
`memhub.knowledge.services`. Tool dispatch, the `<knowledge_tools>` offer, build resume and shutdown, and the
HTTP mounting then iterate the registry instead of naming kinds.

Most kinds are entries of the `/v3/knowledge` registry (`in_registry`): built resources with a table in the
management store, offered to agents in `<knowledge_tools>`. A skill is not: it lives in the skill store, has its
own routes and its own prompt block (`<available_skills>`), and only shares tool dispatch (`/v3/tools/*`).
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
# What follows `<id_prefix>-` in the ids of most kinds, and how messages state it.
DEFAULT_ID_PATTERN = "[0-9a-z]{8}"
DEFAULT_ID_RULE = "8 characters of [0-9a-z]"


@dataclass(frozen=True, slots=True)
class ResourceKind:
    """The facts of one kind of knowledge resource."""

    name: str  # `type` on the wire (registry, tools/list, <knowledge_tools>) and the route prefix `/v3/<name>`
    noun: str  # how messages name one resource: "wiki", "code graph"
    id_prefix: str  # ids are `<id_prefix>-` followed by `id_pattern`
    id_field: str  # the id's field in rows and requests
    meta_kind: MetaKind | None  # the management-store table of its rows (None: they live in another store)
    asset_type: str  # its meta asset type: agents bind it as a fixed asset, users switch it on and off
    tools: tuple[ToolSpec, ...]  # in tools/list order
    about_in_block: bool = False  # whether <knowledge_tools> shows its summary as `about`
    context: ContextRole | None = None
    id_pattern: str = DEFAULT_ID_PATTERN  # a regex without anchors
    id_rule: str = DEFAULT_ID_RULE  # `id_pattern` in words, for messages
    # An entry of the /v3/knowledge registry: a `knowledge/create` type, offered in <knowledge_tools>, managed by
    # the shared knowledge routes under `route_prefix`.
    in_registry: bool = True
    id_re: re.Pattern[str] = field(init=False)
    tools_by_name: Mapping[str, ToolSpec] = field(init=False)

    def __post_init__(self) -> None:
        if self.in_registry and self.meta_kind is None:
            raise ValueError(f"{self.name}: a registry kind needs a management-store table")
        object.__setattr__(self, "id_re", re.compile(rf"^{self.id_body}$"))
        object.__setattr__(self, "tools_by_name", {t.name: t for t in self.tools})

    @property
    def id_body(self) -> str:
        """The id regex without anchors (for alternations over several kinds)."""
        return f"{re.escape(self.id_prefix)}-{self.id_pattern}"

    @property
    def route_prefix(self) -> str:
        """Where its management routes are mounted."""
        return f"/v3/{self.name}"

    def check_id(self, resource_id: str, field_name: str | None = None) -> None:
        """The kind's id format, or 400 naming the field."""
        if not self.id_re.match(resource_id):
            raise BadRequest(
                f"{field_name or self.id_field}: invalid {self.id_field} format "
                f"(expected {self.id_prefix}- and {self.id_rule})"
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
