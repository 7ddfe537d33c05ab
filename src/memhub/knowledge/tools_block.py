"""The `<knowledge_tools>` prompt block (the original proxy's
`renderKnowledgeToolsBlock` contract): resource tags plus curl recipes.

The block tells an agent which team knowledge resources it may use and how to reach them in two steps
(`POST <url>/tools/list`, then `POST <url>/tools/call`). It goes into the system prompt once per session, so
the output must be byte-stable for the same inputs: no timestamps, no dict-order or set-order dependence, and
resources rendered in the order the caller gives them (the caller must pass a stable order, e.g. by id).

Deliberate tightenings over the reference renderer, each identical to it for well-formed input:
- `match` for a URL with a scheme is taken after the host, so `https://host:8443/org/repo` and
  `https://user:token@host/org/repo` give `org/repo` (the reference would emit `8443/org/repo` or leak
  `token@host/...` into the prompt);
- control characters in attribute and header values become a space / are dropped, so one value can never
  break the tag or curl layout or start a new prompt line;
- only `x-tdai-service-id` and the six telemetry headers are ever rendered: a secret passed in by mistake
  (Authorization, api keys, `x-tdai-user-key`) never reaches the prompt.

Two differences for every input: the recipes run `curl -sS`, not the reference's `curl -sSk`, so TLS is
verified before the key is sent; and a key recipe is rendered only next to resources whose URL is on a trusted
origin (this gateway's or the operator's allow-list): a resource elsewhere is left out of the block.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from memhub.knowledge.kinds import REGISTRY_TYPES, kind_named
from memhub.meta.origins import KnowledgeOrigins

Language = Literal["en", "zh"]
ResourceType = str  # the name of a kind the registry holds (memhub.knowledge.kinds.REGISTRY_TYPES)

SERVICE_ID_HEADER = "x-tdai-service-id"
# The original's order; the renderer emits them in exactly this order, whatever order the caller's mapping has.
TELEMETRY_HEADERS: tuple[str, ...] = (
    "x-conversation-id",
    "x-tdai-user-id",
    "x-tdai-team-id",
    "x-tdai-agent-id",
    "x-tdai-agent-source",
    "x-tdai-space-id",
)
CACHE_KEY_PREFIX = "knowledge-tools-injector"

# The KS accepts only this charset for the tenant id, so anything else is a caller bug.
_SERVICE_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
_RESOURCE_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
# `url` is rendered raw, as by the original, so it must not contain anything that could close the attribute or the tag.
_URL_RE = re.compile(r"^https?://[^\s\"<>'`\\]+$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]+")
_SCHEME_RE = re.compile(r"^[a-z0-9+.-]+://", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class KnowledgeResource:
    """One bound knowledge resource as the registry describes it (the original's `KnowledgeEntity`)."""

    type: ResourceType
    id: str
    url: str
    name: str
    summary: str | None = None
    repo_url: str | None = None
    branch: str | None = None
    repo_slug: str | None = None

    def __post_init__(self) -> None:
        """Reject values that the original renders raw but that would break the tag."""
        if self.type not in REGISTRY_TYPES:
            raise ValueError(f"unknown knowledge type: {self.type!r}")
        if not _RESOURCE_ID_RE.match(self.id):
            raise ValueError(f"invalid knowledge id: {self.id!r}")
        if not _URL_RE.match(self.url):
            raise ValueError(f"invalid service url: {self.url!r}")


def xml_attr_escape(value: str) -> str:
    """Escape `& < > "` for a double-quoted XML attribute (control characters become one space)."""
    value = _CONTROL_RE.sub(" ", value)
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def shell_quote(value: str) -> str:
    """Single-quote a value for POSIX sh: `'` becomes `'"'"'`."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


def derive_repo_slug(repo_url: str | None) -> str | None:
    """`org/.../repo` from a clone URL (https, ssh:// or scp-style `git@host:org/repo.git`); None if empty."""
    if not repo_url or not repo_url.strip():
        return None
    url = repo_url.strip()
    scheme = _SCHEME_RE.match(url)
    if scheme:
        # A URL: the path starts after the authority, which may hold `user:token@` or `:port`.
        rest = url[scheme.end() :]
        rest = re.split(r"[?#]", rest, maxsplit=1)[0]
        path = rest.split("/", 1)[1] if "/" in rest else ""
    elif ":" in url and ("/" not in url or url.index(":") < url.index("/")):
        path = url.split(":", 1)[1]  # scp-style: host before the first ':'
    else:
        path = url.split("/", 1)[1] if "/" in url else ""
    path = path.strip("/")
    if path.lower().endswith(".git"):
        path = path[:-4]
    path = path.strip("/")
    return path or None


def cache_key(agent_id: str | None, team_id: str | None) -> str:
    """Block cache key: `knowledge-tools-injector:agent:<id>` when an agent is known, else `…:team:<id>`."""
    if agent_id:
        return f"{CACHE_KEY_PREFIX}:agent:{agent_id}"
    if team_id:
        return f"{CACHE_KEY_PREFIX}:team:{team_id}"
    raise ValueError("cache_key needs an agent_id or a team_id")


def filter_by_capabilities(
    resources: Sequence[KnowledgeResource], capabilities: Mapping[str, bool] | None
) -> list[KnowledgeResource]:
    """Drop the resources whose kind's asset type is switched off (`llm_wiki: False` drops wikis, `code_graph:
    False` code graphs); absent flags mean enabled."""
    caps = capabilities or {}
    return [r for r in resources if caps.get(kind_named(r.type).asset_type, True) is not False]


def _attr(name: str, value: str | None) -> str:
    """`\\n  name="escaped"`, or "" when the value is absent or blank."""
    if value is None:
        return ""
    value = _CONTROL_RE.sub(" ", value).strip()
    if not value:
        return ""
    return f'\n  {name}="{xml_attr_escape(value)}"'


def render_resource_tag(resource: KnowledgeResource) -> str:
    """One self-closing `<knowledge …/>` tag, attributes on their own lines indented two spaces."""
    slug = resource.repo_slug.strip() if resource.repo_slug and resource.repo_slug.strip() else None
    match = slug or derive_repo_slug(resource.repo_url)
    has_repo = bool(resource.repo_url and resource.repo_url.strip())
    branch = ((resource.branch or "").strip() or "main") if has_repo else None
    # Only kinds whose summary says what the resource is about show it (a code-graph summary is just counts).
    about = resource.summary if kind_named(resource.type).about_in_block else None
    return (
        f'<knowledge type="{resource.type}" id="{resource.id}"'
        f'\n  url="{resource.url}"'
        f'\n  name="{xml_attr_escape(resource.name)}"'
        f"{_attr('match', match)}{_attr('branch', branch)}{_attr('about', about)} />"
    )


def _header_lines(headers: Mapping[str, str]) -> tuple[str, list[str]]:
    """The service id and the `-H` lines: service id first, then the telemetry headers present, the original's order."""
    by_name = {k.strip().lower(): v for k, v in headers.items() if isinstance(v, str)}
    service_id = (by_name.get(SERVICE_ID_HEADER) or "").strip()
    if not _SERVICE_ID_RE.match(service_id):
        raise ValueError("x-tdai-service-id must match ^[A-Za-z0-9_-]+$ (at most 200 characters)")
    lines = [f"  -H {shell_quote(f'{SERVICE_ID_HEADER}: {service_id}')} \\"]
    for name in TELEMETRY_HEADERS:
        # Drop control characters: a newline in a client-sent session key must not add prompt lines.
        value = _CONTROL_RE.sub("", by_name.get(name) or "").strip()
        if value:
            lines.append(f"  -H {shell_quote(f'{name}: {value}')} \\")
    return service_id, lines


# -- static text -------------------------------------------------------------------------------------------
# Each list is joined with "\n"; "{tags}", "{sid}", "{headers}" are substituted by _render, nothing else.

_EN: tuple[str, ...] = (
    "**Team knowledge resources**: a code-graph is a prebuilt index of a repository (symbols, call graph,"
    " structure); a wiki holds engineering design documents. Each has its own rule for when to use it, below.",
    "",
    "## code-graph: when to call",
    "**Precondition**: the resource's `match` fits the current workspace (compare with the git remote or the"
    " repository name). No fit → the index belongs to another repository; search locally and do not probe it.",
    "",
    "When it fits, **use it for anything that needs cross-file structure, relationships or breadth**, e.g.:",
    "- getting to know the project, understanding the module architecture, finding entry points (cold start)",
    "- locating a symbol, a file, or where a concept is implemented",
    "- following call chains, dependencies and data flow",
    "- judging the impact of a change, the scope of a refactor, whether something is safe to delete"
    " (**still use it when you are already editing code**)",
    "- finding suspicious code paths while debugging, or related implementations during review",
    "- when you cannot recall what a capability is called, or whether it already exists (avoid duplicates)",
    "",
    "**The one case not to use it**: you need the **exact current content** of some code — editing by line or"
    " character, code you just changed, uncommitted changes under review. The index is a branch snapshot and"
    " lags the workspace; read the local source then.",
    "Building the big picture with the index first and confirming in specific files afterwards is the normal"
    " combination, not a conflict.",
    "",
    "## wiki: when to call",
    "A wiki is design documentation and **does not correspond to the workspace, so no anchor match is needed**"
    " (a missing `match` attribute is normal). Judge relevance by the `about` attribute.",
    'Use it for "why is it designed this way / background and trade-offs / what a concept means in this team /'
    ' past decisions and pitfalls / the design intent of a module" — answers that are not in the code.',
    "How the code is written → code-graph; what some code says right now → read the source.",
    "",
    "## Intent → first call",
    "Architecture / getting to know the project → explore (returns the source along the way); where is X →"
    " search; a single symbol's definition → node; who calls X / what X calls → callers / callees; impact of"
    " changing X → search, then impact; why is it designed this way → wiki search, then read_page.",
    "Combination: refactor assessment = search → callers → impact.",
    "Source returned by explore / node is verbatim: **do not Read the same code again** (except in the"
    " exact-current-content case above).",
    "",
    "## Bound resources",
    "{tags}",
    "",
    "## How to call (one service-level endpoint; build the URL from the resource's url)",
    "The target resource is chosen by `knowledge_id` in the body; **do not** put the knowledge_id in the URL path.",
    "**Every request must carry the header** `x-tdai-service-id: {sid}` (the tenant id; requests without it"
    " are rejected).",
    "",
    "### Step 1: get the tool list (once per resource, the **first** time you use it)",
    "curl -sS -X POST <url>/tools/list \\",
    "  -H 'content-type: application/json' \\",
    "{headers}",
    '  -d \'{"knowledge_id":"<knowledge_id>"}\'',
    "",
    "Returns: {code, message, data:{knowledge_id, type, name, summary, status, tools:[{name, description,"
    " params}, ...]}}",
    "Remember the returned tool names and params and **reuse them for the rest of the session**; do not call"
    " tools/list again for the same resource (unless you have forgotten them).",
    "",
    "### Step 2: run a tool",
    "curl -sS -X POST <url>/tools/call \\",
    "  -H 'content-type: application/json' \\",
    "{headers}",
    '  -d \'{"knowledge_id":"<knowledge_id>", "tool_name":"<name from Step 1>", "params":{...}}\'',
    "",
    "Returns: {code, message, data}; code=0 means success.",
    "",
    "## Conventions",
    "- tool_name is **exactly** the name tools/list returned, with no prefix. params is always a JSON object;"
    " send {} when there are none.",
    '- Find files with explore / search (query accepts file names, e.g. "session-manager.ts"); files is only'
    " for a one-off overview of the directory tree, at most once per resource per session.",
    "- For a wiki, search first and read_page the hits; never list_pages everything.",
    "- Several resources may be queried in parallel. Give up on a call after 2 consecutive failures and fall"
    " back to local search.",
    "- Responses are always {code, message, data}; code=0 means success.",
)

_ZH: tuple[str, ...] = (
    "**团队知识库资源**：code-graph 是代码仓库的预建索引（符号、调用图、结构），"
    "wiki 是工程设计文档。两者各有使用判据，见下文。",
    "",
    "## code-graph：何时调",
    "**前提**：资源的 `match` 与当前工作区相符（对照 git remote 或仓库名）。"
    "不相符 → 这个索引属于别的仓库，请在本地检索，不要试探调用。",
    "",
    "相符时，**凡是需要跨文件的结构、关系或全局信息都用它**，例如：",
    "- 熟悉项目、理解模块架构、寻找入口（冷启动）",
    "- 定位某个符号、文件，或某个概念在哪里实现",
    "- 追踪调用链、依赖关系和数据流",
    "- 评估改动影响、重构范围、能否安全删除（**已经在改代码时也照样用它**）",
    "- 排查问题时找可疑代码路径，评审时找相关实现",
    "- 想不起某个功能叫什么、不确定是否已有实现（避免重复实现）",
    "",
    "**唯一不该用的情况**：你需要某段代码**当前的确切内容**——按行或字符编辑、刚刚改过的代码、评审中未提交的改动。索引是分支快照，"
    "会落后于工作区，此时请读本地源码。",
    "先用索引建立全局认识、再到具体文件里确认，是常规组合，并不冲突。",
    "",
    "## wiki：何时调",
    "wiki 是设计文档，**与工作区没有对应关系，不需要锚点匹配**"
    "（没有 `match` 属性是正常的）。根据 `about` 属性判断是否相关即可。",
    "问“为什么这样设计 / 背景与取舍 / "
    "某个概念在团队里的含义 / 过去的决策和踩过的坑 / 某个模块的设计意图”时用它——这些答案不在代码里。",
    "代码怎么写的 → code-graph；某段代码现在是什么 → 读源码。",
    "",
    "## 意图 → 起手",
    "架构 / 熟悉项目 → explore（顺带返回相关源码）；X 在哪 → search；单个符号的定义 → node；"
    "谁调用 X / X 调用谁 → callers / callees；"
    "改 X 的影响 → 先 search 再 impact；为什么这样设计 → wiki 先 search 再 read_page。",
    "组合：重构评估 = search → callers → impact。",
    "explore / node 返回的源码是原文，**不要再 Read 一遍同一段代码**（上面需要确切当前内容的情况除外）。",
    "",
    "## 已绑定资源",
    "{tags}",
    "",
    "## 调用方式（服务级统一端点，用资源的 url 拼出 URL）",
    "目标资源由请求体中的 `knowledge_id` 指定；**不要**把 knowledge_id 放进 URL 路径。",
    "**每个请求都必须带请求头** `x-tdai-service-id: {sid}`（租户标识，缺少会被拒绝）。",
    "",
    "### Step 1: 获取工具清单（每个资源**第一次**使用时调用一次）",
    "curl -sS -X POST <url>/tools/list \\",
    "  -H 'content-type: application/json' \\",
    "{headers}",
    '  -d \'{"knowledge_id":"<知识id>"}\'',
    "",
    "返回：{code, message, data:{knowledge_id, type, name, summary, status, tools:[{name, description, params}, ...]}}",
    "记住返回的工具名和参数，**本会话内复用**；不要对同一资源重复调用 tools/list（忘记了再调）。",
    "",
    "### Step 2: 执行工具",
    "curl -sS -X POST <url>/tools/call \\",
    "  -H 'content-type: application/json' \\",
    "{headers}",
    '  -d \'{"knowledge_id":"<知识id>", "tool_name":"<Step1返回的name>", "params":{...}}\'',
    "",
    "返回：{code, message, data}；code=0 表示成功。",
    "",
    "## 约定",
    "- tool_name 与 tools/list 返回的 name **完全一致**，不加前缀。params 必须是 JSON 对象，没有参数也传 {}。",
    '- 找文件用 explore / search（query 支持文件名，如 "session-manager.ts"）；'
    "files 只用于一次性浏览目录结构，每个资源每个会话最多一次。",
    "- wiki 先 search，再 read_page 命中的页面；不要 list_pages 全量列出。",
    "- 多个资源可以并行查询。同一调用连续失败 2 次就放弃，回退到本地检索。",
    "- 响应格式统一为 {code, message, data}，code=0 表示成功。",
)

_TEXT: dict[str, tuple[str, ...]] = {"en": _EN, "zh": _ZH}
_CONTENT_TYPE_LINE = "  -H 'content-type: application/json' \\"
_SERVICE_HEADER_RULE = {"en": "**Every request must carry the header**", "zh": "**每个请求都必须带请求头**"}
_CREDENTIAL_RULE = {
    "en": "The recipes authenticate with your key from the environment variable `${env}`; keep it there and never"
    " paste a key into a command or a message.",
    "zh": "示例命令从环境变量 `${env}` 读取你的密钥完成认证；密钥只放在环境变量里，不要写进命令或消息。",
}
_ENV_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
SESSION_TOKEN_HEADER = "x-memhub-session"
_SESSION_TOKEN_RE = re.compile(r"^[A-Za-z0-9._-]{1,2048}$")
_SESSION_RULE = {
    "en": "The recipes carry this session's token in `x-memhub-session`; send it exactly as written, and only to the"
    " url of the resources above.",
    "zh": "示例命令在 `x-memhub-session` 中携带本会话的令牌；请原样发送，且只发往上面资源的 url。",
}


def render_knowledge_tools(
    resources: Sequence[KnowledgeResource],
    *,
    capabilities: Mapping[str, bool] | None,
    headers: Mapping[str, str],
    language: Language = "en",
    credential_env: str | None = None,
    origins: KnowledgeOrigins | None = None,
    session_token: str | None = None,
) -> str:
    """The `<knowledge_tools>…</knowledge_tools>\\n` block, or "" when no resource survives the capability filter
    (and the origin check).

    `headers` must hold `x-tdai-service-id`; of the rest only the six telemetry headers are rendered (names are
    matched case-insensitively, values single-quote shell-escaped). Resources keep the given order; a resource
    whose id was already rendered is skipped so a duplicated registry row cannot double a tag.

    `credential_env` names an environment variable holding the agent's key (e.g. `MEMHUB_USER_KEY`): the
    recipes then send `authorization: Bearer ${NAME}`, which the agent's shell expands, so a server that
    requires a key is reachable while the key itself never enters the prompt. The recipes are shared by every
    resource, so a key recipe needs `origins`: a resource whose URL is not on one of them is left out.

    `session_token` (the memory proxy's, instead of `credential_env`) is sent as `x-memhub-session` by every
    recipe; like a key recipe it needs `origins`.
    """
    if session_token is not None and (credential_env is not None or not _SESSION_TOKEN_RE.match(session_token)):
        raise ValueError("session_token: a token of [A-Za-z0-9._-], and never beside credential_env")
    if session_token is not None and origins is None:
        raise ValueError("session_token needs origins: the token may only be sent to trusted origins")
    if credential_env is not None and not _ENV_NAME_RE.match(credential_env):
        raise ValueError("credential_env must be an environment variable name ([A-Z_][A-Z0-9_]*)")
    if credential_env is not None and origins is None:
        raise ValueError("credential_env needs origins: the key may only be sent to trusted origins")
    if language not in _TEXT:
        raise ValueError(f"unsupported language: {language!r} (expected 'en' or 'zh')")
    kept = filter_by_capabilities(resources, capabilities)
    seen: set[str] = set()
    unique: list[KnowledgeResource] = []
    for r in kept:
        if origins is not None and not origins.allows(r.url):
            continue
        if r.id not in seen:
            seen.add(r.id)
            unique.append(r)
    if not unique:
        return ""
    service_id, header_lines = _header_lines(headers)
    tags = "\n\n".join(render_resource_tag(r) for r in unique)
    out: list[str] = ["<knowledge_tools>"]
    for line in _TEXT[language]:
        # Whole-line placeholders only, so no user value is ever re-scanned for placeholders.
        if line == "{tags}":
            out.append(tags)
        elif line == "{headers}":
            out.extend(header_lines)
        elif line == _CONTENT_TYPE_LINE and credential_env:
            out.extend([line, f'  -H "authorization: Bearer ${{{credential_env}}}" \\'])
        elif line == _CONTENT_TYPE_LINE and session_token:
            out.extend([line, f"  -H {shell_quote(f'{SESSION_TOKEN_HEADER}: {session_token}')} \\"])
        elif line.startswith(_SERVICE_HEADER_RULE[language]) and credential_env:
            out.extend([line.replace("{sid}", service_id), _CREDENTIAL_RULE[language].format(env=credential_env)])
        elif line.startswith(_SERVICE_HEADER_RULE[language]) and session_token:
            out.extend([line.replace("{sid}", service_id), _SESSION_RULE[language]])
        else:
            out.append(line.replace("{sid}", service_id))
    out.append("</knowledge_tools>\n")
    return "\n".join(out)


__all__ = [
    "SERVICE_ID_HEADER",
    "SESSION_TOKEN_HEADER",
    "TELEMETRY_HEADERS",
    "KnowledgeResource",
    "Language",
    "cache_key",
    "derive_repo_slug",
    "filter_by_capabilities",
    "render_knowledge_tools",
    "render_resource_tag",
    "shell_quote",
    "xml_attr_escape",
]
