"""The wiki as a kind of knowledge resource (registered in memhub.knowledge.kinds)."""

from __future__ import annotations

from memhub.knowledge.kind import ResourceKind
from memhub.knowledge.wiki.tools import WIKI_TOOLS
from memhub.model.meta import MetaKind

WIKI = ResourceKind(
    name="wiki",
    noun="wiki",
    id_prefix="wiki",
    id_field="wiki_id",
    meta_kind=MetaKind.WIKI,
    asset_type="llm_wiki",
    tools=WIKI_TOOLS,
    # The wiki summary is the only hint for "is this wiki relevant".
    about_in_block=True,
    context="documents",
)
