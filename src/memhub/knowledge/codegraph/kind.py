"""The code graph as a kind of knowledge resource (registered in memhub.knowledge.kinds)."""

from __future__ import annotations

from memhub.knowledge.codegraph.tools import CODE_GRAPH_TOOLS
from memhub.knowledge.kind import ResourceKind
from memhub.model.meta import MetaKind

CODE_GRAPH = ResourceKind(
    name="code-graph",
    noun="code graph",
    id_prefix="cg",
    id_field="code_graph_id",
    meta_kind=MetaKind.CODE_GRAPH,
    asset_type="code_graph",
    tools=CODE_GRAPH_TOOLS,
    # A code-graph summary is just counts: the block leaves it out.
    about_in_block=False,
)
