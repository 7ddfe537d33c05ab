"""Request bodies of the knowledge service: `/v3/wiki/*`, `/v3/code-graph/*`, `/v3/tools/*` and
`/v3/knowledge/tools-block`.

Fields follow the reference knowledge service's tools and management routes; memhub's additions
are marked. Unknown keys are ignored, as the reference's schemas strip them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from memhub.api.json_rules import (
    ABSOLUTE,
    BASE64,
    BRANCH,
    REPO_URL,
    REPO_URL_RULE,
    WIKI_REF,
    all_of,
    given,
    not_null,
    when,
    wiki_filename,
)
from memhub.api.meta_schemas import Id, MetaBody, Name
from memhub.knowledge.codegraph.service import CODE_GRAPH_ID_RE
from memhub.knowledge.kinds import KNOWLEDGE_ID_RE
from memhub.knowledge.wiki.index import INDEX_FILE
from memhub.knowledge.wiki.service import WIKI_ID_RE
from memhub.knowledge.wiki.sources import SUPPORTED_EXTENSIONS, TEXT_EXTENSIONS

WikiStatus = Literal["draft", "pending", "processing", "ready", "failed"]
Summary = Annotated[str, Field(max_length=256)]
LocalPath = Annotated[str, Field(min_length=1, max_length=4096, json_schema_extra={"pattern": ABSOLUTE})]
RepoUrl = Annotated[
    str,
    Field(min_length=1, max_length=2048, description=REPO_URL_RULE, json_schema_extra={"pattern": REPO_URL}),
]
Branch = Annotated[str, Field(min_length=1, max_length=255, json_schema_extra={"pattern": BRANCH})]
SOURCE_FILENAME = wiki_filename(SUPPORTED_EXTENSIONS, INDEX_FILE)
BINARY_FILE = wiki_filename(SUPPORTED_EXTENSIONS - TEXT_EXTENSIONS)  # sent base64-encoded
FileName = Annotated[str, Field(min_length=1, max_length=512, json_schema_extra={"pattern": SOURCE_FILENAME})]
# A page ref becomes a file `<ref>.md` of at most 512 characters.
Ref = Annotated[str, Field(min_length=1, max_length=512, json_schema_extra={"pattern": WIKI_REF, "maxLength": 509})]
# The formats the services check, stated in the schema too.
WikiId = Annotated[Id, Field(json_schema_extra={"pattern": WIKI_ID_RE.pattern})]
CodeGraphId = Annotated[Id, Field(json_schema_extra={"pattern": CODE_GRAPH_ID_RE.pattern})]
KnowledgeId = Annotated[Id, Field(json_schema_extra={"pattern": KNOWLEDGE_ID_RE.pattern})]
PathText = Annotated[str, Field(min_length=1, max_length=1024)]


class WikiCreate(MetaBody):
    team_id: Id
    name: Name
    user_id: Id | None = None
    agent_id: Id | None = None
    task_id: Id | None = None
    summary: Summary | None = None
    # memhub: read the sources from a local folder or git working tree (under MEMHUB_WIKI_SOURCE_ROOTS).
    source_path: LocalPath | None = None


class WikiList(MetaBody):
    team_id: Id
    status: WikiStatus | None = None
    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0, le=10_000_000)


class WikiRef(MetaBody):
    wiki_id: WikiId


class WikiUpdateMeta(WikiRef):
    name: Name | None = Field(None, json_schema_extra=not_null)  # null is refused: a wiki keeps a name
    summary: Summary | None = None


class WikiDelete(MetaBody):
    wiki_ids: Annotated[list[Id], Field(min_length=1, max_length=100)]


class WikiIngest(WikiRef):
    user_id: Id | None = None
    # memhub: build now and answer with the finished build's report instead of 202.
    wait: bool = False
    # memhub: "ai" has the configured LLM write the index summaries and tags authors left out.
    index: Literal["rules", "ai"] = "rules"


class RawRead(WikiRef):
    filenames: Annotated[list[FileName], Field(min_length=1, max_length=50)]


class RawFileIn(MetaBody):
    model_config = ConfigDict(
        json_schema_extra=all_of(
            when(given("filename", {"pattern": BINARY_FILE}), given("encoding", {"const": "base64"})),
            when(given("encoding", {"const": "base64"}), given("content", {"type": "string", "pattern": BASE64})),
        )
    )

    filename: FileName
    content: Annotated[str, Field(max_length=8 * 1024 * 1024)]
    # memhub: PDF and DOCX files are sent base64-encoded.
    encoding: Literal["utf-8", "base64"] = "utf-8"


class RawWrite(WikiRef):
    team_id: Id
    files: Annotated[list[RawFileIn], Field(min_length=1, max_length=10)]


class RawRm(WikiRef):
    team_id: Id
    filenames: Annotated[list[FileName], Field(min_length=1, max_length=50)]


class PageRead(WikiRef):
    refs: Annotated[list[Ref], Field(min_length=1, max_length=20)]


class PageIn(MetaBody):
    ref: Ref
    content: Annotated[str, Field(max_length=1024 * 1024)]


class PageWrite(WikiRef):
    team_id: Id
    pages: Annotated[list[PageIn], Field(min_length=1, max_length=20)]


class PageRm(WikiRef):
    team_id: Id
    refs: Annotated[list[Ref], Field(min_length=1, max_length=20)]


class WikiSearch(WikiRef):
    query: Annotated[str, Field(min_length=1, max_length=2000)]
    limit: int = Field(20, ge=1, le=100)
    hop: int = Field(0, ge=0, le=5)
    decay: float = Field(0.5, ge=0, le=1)
    minScore: float = Field(0.1, ge=0)  # the reference's wire name


class WikiRetrieve(WikiRef):
    """memhub: the two-layer index retrieval walk — the capped knowledge block for one question."""

    question: Annotated[str, Field(min_length=1, max_length=8000)]
    paths: Annotated[list[PathText], Field(max_length=50)] = Field(default_factory=list)
    conversation: Literal["workspace", "agent", "help"] = "workspace"
    # "bm25" adds the documents' full-text BM25 to the index scores; off by default, as the index alone is
    # cheap and predictable.
    rescore: Literal["none", "bm25"] = "none"


CodeGraphStatus = Literal["pending", "processing", "ready", "failed"]


class CodeGraphCreate(MetaBody):
    # Exactly one source; a branch only with repo_url.
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [given("repo_url"), given("source_path")],
            "if": given("source_path"),
            "then": {"not": given("branch")},
        }
    )

    team_id: Id
    repo_url: RepoUrl | None = None
    # memhub: index a local directory or git working tree (under MEMHUB_CODE_SOURCE_ROOTS) instead of a URL.
    source_path: LocalPath | None = None
    branch: Branch | None = None  # "main" for a repo_url
    repo_name: Name | None = None
    summary: Summary | None = None
    user_id: Id | None = None
    agent_id: Id | None = None
    task_id: Id | None = None
    # memhub: build now and answer with the finished build's report.
    wait: bool = False


class CodeGraphList(MetaBody):
    team_id: Id
    status: CodeGraphStatus | None = None
    limit: int = Field(20, ge=1, le=100)
    offset: int = Field(0, ge=0, le=10_000_000)


class CodeGraphRef(MetaBody):
    code_graph_id: CodeGraphId


class CodeGraphUpdateMeta(CodeGraphRef):
    repo_name: Name | None = Field(None, json_schema_extra=not_null)  # null is refused: a graph keeps a name
    summary: Summary | None = None


class CodeGraphDelete(MetaBody):
    code_graph_ids: Annotated[list[Id], Field(min_length=1, max_length=100)]


class CodeGraphSync(CodeGraphRef):
    user_id: Id | None = None
    # memhub: build now and answer with the finished build's report instead of 202.
    wait: bool = False


class CodeGraphQuery(CodeGraphRef):
    """A direct query route: `code_graph_id` plus the tool's params, checked against the tool's schema
    (an unknown field is 400 `unexpected field: x`, as in the reference)."""

    model_config = ConfigDict(strict=True, extra="allow")

    def params(self) -> dict[str, Any]:
        """Everything but `code_graph_id`: the tool's params."""
        return dict(self.model_extra or {})


class ToolsList(MetaBody):
    knowledge_id: KnowledgeId
    # memhub: tool descriptions in English (default) or Chinese.
    language: Literal["en", "zh"] | None = None


class ToolsCall(MetaBody):
    knowledge_id: KnowledgeId
    tool_name: Id
    params: dict[str, Any] = Field(default_factory=dict)


class ToolsBlock(MetaBody):
    """memhub: render the `<knowledge_tools>` prompt block for a team or an agent."""

    team_id: Id
    agent_id: Id | None = None
    user_id: Id | None = None
    language: Literal["en", "zh"] = "en"
    conversation_id: Annotated[str, Field(max_length=512)] | None = None
    agent_source: Annotated[str, Field(max_length=128)] | None = None
