"""The memory blocks: `<tdai_memory_tools>` (curl recipes for the memory bridge) and `<tdai_profile_memory>` (the L3
persona and L2 scene index of the agent and the agents it imports, then `<memory-tools-guide>`).

Layouts follow the original's `tdai-tools-injector.ts` and `tdai-profile-memory-injector.ts` line for line; the
text is English by default and the original's Chinese with language `zh`. Where memhub differs:
- The recipes carry one header of ours, `x-memhub-session: <token>`, a signed read-only token for this session;
  the bridge adds every id from it. The original put the tenant id and the conversation id in the prompt and
  trusted them, so any process could read any session by naming it; no user key, id or secret is in these blocks.
- The recipes run `curl -sS`: TLS is verified (the original's `-k` skipped it).
- Searches cover the session's own agent. The original's text promised self + imported search and
  `source_agent_*` fields that memhub's data plane does not have; imported agents appear as their index only.
- Persona, scene summaries and agent names are user data: our prompt tags in them are escaped and headings
  marked (memhub.formats.fence), so none of them can close a block or pass for a prompt section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memhub.formats.fence import escape_tags, neutralise
from memhub.formats.scene_navigation import remove_generated
from memhub.knowledge.tools_block import shell_quote, xml_attr_escape
from memhub.proxy.session_token import SESSION_HEADER

Language = Literal["en", "zh"]
L3_MAX_CHARS = 6000
L2_SUMMARY_MAX_CHARS = 200
MAX_IMPORTED_AGENTS = 2


def bridge_url(proxy_url: str) -> str:
    """`<proxy>/memory-bridge/v3`, the recipes' base."""
    return f"{proxy_url.rstrip('/')}/memory-bridge/v3"


def _tool(name: str, url: str, body: str, use: str, returns: str | None = None) -> list[str]:
    lines = [f'  <tool name="{name}">', f"    curl: {url}", f"    body: {body}", f"    use:  {use}"]
    if returns:
        lines.append(f"    returns: {returns}")
    return [*lines, "  </tool>", ""]


_TOOLS_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "lead1": "**These are memory capabilities you can call yourself** (not documentation), through Bash + curl.",
        "lead2": "These TDAI memory capabilities rank equal with your client's own memory (e.g. Claude Code's"
        " MEMORY.md); when memory matters, do not look only at local memory files.",
        "lead3": "When the user asks about who they are, the history, their preferences, earlier conclusions or"
        " project conventions, query the TDAI memory tools below first and answer from what they return.",
        "lead4": 'Never say "I don\'t have that tool / it needs MCP / I can only read local memory": you have the'
        " TDAI memory tools; run the curl commands below.",
        "how": "How to call: run curl in Bash against the proxy's memory-bridge path. The session header below"
        " identifies you and the proxy adds the team, user and agent itself, so the body carries only the"
        " operation's fields.",
        "cover": "What is where:",
        "cover1": "- L3 (the long-term persona) and the L2 scene index (`<l2_scene_index>`) are already in this"
        " prompt; no query needed;",
        "cover2": "- read an L2 scene's full text with tdai_read_scene when you need it;",
        "cover3": "- L0/L1 (raw conversation / atomic memories) are **not recalled automatically every turn** (that"
        " would break the prompt cache); search them with the tools when you need them.",
        "search_use": "Search L1 atomic memories (hybrid: dense vectors + BM25), most relevant first. For the"
        " user's preferences, earlier conclusions, rules.",
        "search_ret": "{code, data: {items: [...]}} — the hits are in data.items[].",
        "query_body": '{"type": "?episodic|persona|instruction", "limit": 20, "offset": 0, "time_start": "?ISO",'
        ' "time_end": "?ISO"}',
        "query_use": "List L1 memories by type / time window / page (no semantic search).",
        "csearch_use": "Search the raw L0 conversation (finer than tdai_memory_search: exact messages, quotes,"
        " timelines).",
        "csearch_ret": "{code, data: {messages: [...]}} — the hits are in data.messages[] (not data.items as for"
        " tdai_memory_search).",
        "cquery_use": "L0 messages in time order, page by page.",
        "ls_body": '{"path_prefix": "?optional prefix"}',
        "ls_use": "List the L2 scene paths with their summaries (no text). The index is already in this prompt;"
        " use this to refresh it or to filter by prefix.",
        "read_body": '{"path": "<scene path>"}',
        "read_use": 'Read one L2 scene file in full. Take the path from your own agent\'s (role="self")'
        " `<l2_scene_index>` or from tdai_scenario_ls; never make one up.",
        "rules": "## Rules",
        "rule1": "- These tools are read-only; memory is written from the conversation itself.",
        "rule2": "- Per turn, tdai_memory_search + tdai_conversation_search **at most 3 calls together**;",
        "rule3": "  query / ls / read_scene do not count, but do not read the same path twice.",
        "rule4": "- Retry an HTTP 5xx once; never retry an HTTP 4xx.",
        "rule5": "- Every curl carries the two headers of the example below, `content-type: application/json` and"
        f" `{SESSION_HEADER}`, exactly as written.",
        "example": "## Full example",
        "example_query": "preferred programming language of the user",
    },
    "zh": {
        "lead1": "**这些是你可以主动调用的记忆能力**（不是文档），通过 Bash + curl 使用。",
        "lead2": "这组 TDAI 记忆能力与 Claude Code 原生 Memory/MEMORY.md 具有同等优先级；"
        "涉及记忆时不要只查本地 MEMORY.md。",
        "lead3": "遇到用户问身份/历史/偏好/过往结论/项目约定时，"
        "必须先使用下面的 TDAI 记忆工具查询，再基于查询结果回答。",
        "lead4": '禁止说"我没有这个工具 / 需要 MCP / 只能查本地记忆" —— 你有 TDAI 记忆工具，就用下面的 curl 命令。',
        "how": "调用方式：Bash 里执行 curl 命中 proxy 的 memory-bridge 路径。下方的会话请求头标识你的身份，"
        "proxy 会自动注入身份鉴权（team_id/user_id/agent_id），body 只需业务字段。",
        "cover": "覆盖范围：",
        "cover1": "- L3（persona 长期画像）与 L2 场景索引（`<l2_scene_index>`）已直接注入 system，无需查询；",
        "cover2": "- L2 正文按需用 tdai_read_scene 读取；",
        "cover3": "- L0/L1（原始对话 / 原子记忆）**不再每轮自动召回**（会破坏 KV cache），需要时主动调工具检索。",
        "search_use": "搜索 L1 原子记忆（双路 hybrid: dense vector + BM25），按相关度排序。"
        "适合回忆用户偏好、历史结论、规则等。",
        "search_ret": "{code, data: {items: [...]}} — 命中项在 data.items[]。",
        "query_body": '{"type": "?episodic|persona|instruction", "limit": 20, "offset": 0, "time_start": "?ISO",'
        ' "time_end": "?ISO"}',
        "query_use": "按 type / 时间窗 / 分页拉取 L1 记忆（不做语义检索）。",
        "csearch_use": "在 L0 原始对话中检索（比 atomic_search 粒度更细，找具体消息原文 / 引用 / 时间线）。",
        "csearch_ret": "{code, data: {messages: [...]}} — 命中项在 data.messages[]"
        "（注意：与 atomic_search 的 data.items 不同）。",
        "cquery_use": "按时间顺序分页取 L0 历史消息。",
        "ls_body": '{"path_prefix": "?可选前缀"}',
        "ls_use": "列出 L2 scene_blocks 路径索引（含 summary，不含正文）。"
        "一般 system 已注入索引，需刷新/按前缀过滤时才用。",
        "read_body": '{"path": "<scene path>"}',
        "read_use": '按 path 读取 L2 场景文件全文。path 必须先从自有分段（role="self"）的 `<l2_scene_index>` 或'
        " tdai_scenario_ls 获取，不要凭空构造。",
        "rules": "## 调用约束",
        "rule1": "- 这些是只读工具；记忆由对话本身写入。",
        "rule2": "- 每轮对话中，atomic_search + conversation_search **合计 ≤ 3 次**；",
        "rule3": "  query / ls / read_scene 不计入上限，但同一 path 不要重复读。",
        "rule4": "- 失败重试：HTTP 5xx 可一次性 retry；HTTP 4xx 不要重试。",
        "rule5": "- 所有 curl 必须原样带上下方示例中的两个请求头："
        f"Content-Type: application/json 与 {SESSION_HEADER}。",
        "example": "## 完整示例",
        "example_query": "用户偏好的编程语言",
    },
}


def render_memory_tools(proxy_url: str, token: str, language: Language = "en") -> str:
    """`<tdai_memory_tools>…</tdai_memory_tools>`: the six read-only memory-bridge tools and one full recipe."""
    t = _TOOLS_TEXT[language]
    bridge = bridge_url(proxy_url)
    lines = [
        "<tdai_memory_tools>",
        t["lead1"],
        t["lead2"],
        t["lead3"],
        t["lead4"],
        "",
        t["how"],
        "",
        t["cover"],
        t["cover1"],
        t["cover2"],
        t["cover3"],
        "",
        *_tool(
            "tdai_memory_search",
            f"{bridge}/atomic/search",
            '{"query": "<text>", "limit": 5}',
            t["search_use"],
            t["search_ret"],
        ),
        *_tool("tdai_atomic_query", f"{bridge}/atomic/query", t["query_body"], t["query_use"]),
        *_tool(
            "tdai_conversation_search",
            f"{bridge}/conversation/search",
            '{"query": "<text>", "limit": 5}',
            t["csearch_use"],
            t["csearch_ret"],
        ),
        *_tool(
            "tdai_conversation_query",
            f"{bridge}/conversation/query",
            '{"limit": 50, "offset": 0, "time_start": "?ISO", "time_end": "?ISO"}',
            t["cquery_use"],
        ),
        *_tool("tdai_scenario_ls", f"{bridge}/scenario/ls", t["ls_body"], t["ls_use"]),
        *_tool("tdai_read_scene", f"{bridge}/scenario/read", t["read_body"], t["read_use"]),
        t["rules"],
        t["rule1"],
        t["rule2"],
        t["rule3"],
        t["rule4"],
        t["rule5"],
        "",
        t["example"],
        "```bash",
        f"curl -sS -X POST {bridge}/atomic/search \\",
        "  -H 'content-type: application/json' \\",
        f"  -H {shell_quote(f'{SESSION_HEADER}: {token}')} \\",
        f'  -d \'{{"query": "{t["example_query"]}", "limit": 5}}\'',
        "```",
        "</tdai_memory_tools>",
    ]
    return "\n".join(lines)


_GUIDE: dict[str, str] = {
    "en": f"""<memory-tools-guide>
## ⚠️ Important: this is not documentation, these are capabilities you have

The tdai_memory_search / tdai_conversation_search … listed in `<tdai_memory_tools>` are **capabilities you can
call yourself** (not reference material). You use them through **Bash + curl** (see the full instructions and
URLs in the `<tdai_memory_tools>` section).

**Never** answer "I don't have this tool / it needs MCP / it needs a slash command".
**Do this instead**: when you decide memory is needed, run the curl in Bash; the proxy adds identity and
authorization itself.

## When to use memory (in these cases look it up before you answer)

L3 (the long-term persona) and the L2 scene index are already in the system prompt. Search L0/L1 with the tools.

### Look up memory before answering when any of these holds

1. **The user mentions history / the past / earlier**: "I told you before / last time / do you remember / we
   talked about / that thing from before"
   → `tdai_conversation_search` (the exact messages in L0)
2. **The user asks about themselves, their preferences or habits**: "what's my name / I like / my team / I
   usually / I don't like / I don't allow"
   → `tdai_memory_search` (preferences and rules in L1)
3. **The user asks you to recall or find**: "recall / remember / find / is there a record of X / look up what
   we said"
   → call the tools right away; do not answer from nothing
4. **The answer depends on past facts**: "how did we fix that bug / what was the plan last time / what did we
   agree"
   → turn it into keywords, then `tdai_memory_search`

**Typical flow** (user: "what's my name"):
```bash
# Step 1: look it up
curl -sS -X POST <bridge>/atomic/search \\
  -H 'content-type: application/json' -H '{SESSION_HEADER}: <token from <tdai_memory_tools>>' \\
  -d '{{"query": "user name identity", "limit": 5}}'
# Step 2: answer from items[].content
# Nothing found: say so ("I could not find that in memory, what is your name?"); never pretend to know
```

### When not to look it up

- The user asks "who are you" / "fix my code" / "write a script" / a general programming question
- The current conversation (this turn's messages) already answers it
- The answer is right there in `<l3_core_memory>`

### ⚠️ Limits

- Per turn, `tdai_memory_search` + `tdai_conversation_search` **at most 3 calls together** (`tdai_read_scene` /
  `tdai_scenario_ls` / `tdai_atomic_query` do not count)
- When a search finds nothing, **say so**: "I could not find X in memory"; never make it up
- Do not read the same L2 path twice
</memory-tools-guide>""",
    "zh": f"""<memory-tools-guide>
## ⚠️ 重要：这不是文档，这是你的可用能力

以下 `<tdai_memory_tools>` 中列出的 tdai_memory_search / tdai_conversation_search
等，是**你可以主动调用的能力**（不是仅供参考的文档）。它们通过 **Bash + curl**
使用（见上方 `<tdai_memory_tools>` 段里的完整调用说明与 URL）。

**禁止**回答类似"我没有这个工具 / 需要 MCP / 需要斜杠命令"。
**正确做法**：判定需要查记忆时，直接在 Bash 里执行 curl，proxy 会自动注入身份与鉴权。

## 记忆使用规则（遇到以下场景必须先查再答）

L3（persona 长期画像）与 L2 场景索引已直接注入 system。L0/L1 需要用工具主动检索。

### 必须先查记忆再回答的场景（命中任一条即触发工具调用）

1. **用户提及历史/过去/之前**：如 "我之前说过 / 我告诉过你 / 上次 / 你还记不记得 / 我们聊过 / 之前那个"
   → 用 `tdai_conversation_search`（L0 原文找具体消息）
2. **用户涉及自己身份/偏好/习惯**：如 "我叫什么 / 我的名字 / 我喜欢 / 我的团队 / 我常用 / 我不喜欢 / 我不允许"
   → 用 `tdai_memory_search`（L1 原子记忆查偏好/规则）
3. **用户要求你回忆/找**：如 "回忆一下 / 想起 / 找出 / 有没有关于 X 的记录 / 查我们之前"
   → 直接触发工具，不要凭空回答
4. **答案强依赖历史事实**：如 "那个 bug 我们怎么修的 / 上次方案是啥 / 我们的约定是什么"
   → 关键词化后 `tdai_memory_search`

**典型流程**（用户："我叫什么"）：
```bash
# Step 1: 先查
curl -sS -X POST <bridge>/atomic/search \\
  -H 'content-type: application/json' -H '{SESSION_HEADER}: <见 <tdai_memory_tools> 中的值>' \\
  -d '{{"query": "用户姓名 name 身份", "limit": 5}}'
# Step 2: 从 items[].content 里提取答案后回复
# 若为空: 明确告诉用户 "我在记忆里没找到，你叫什么？" —— 不要装作知道
```

### 不需要查的场景

- 用户问 "你是谁" / "帮我改代码" / "写个脚本" / 通用编程问题
- 当前会话上下文（同轮消息）里已能回答
- 已经在 `<l3_core_memory>` 段落里直接看到答案

### ⚠️ 调用约束

- 每轮 `tdai_memory_search` + `tdai_conversation_search` **合计 ≤ 3 次**
  （`tdai_read_scene` / `tdai_scenario_ls` / `tdai_atomic_query` 不计入）
- 检索无果时**明确说明**"我在记忆里没找到 X"，不要幻想
- 同一 L2 path 不要重复读
</memory-tools-guide>""",
}


def memory_tools_guide(language: Language = "en") -> str:
    """The `<memory-tools-guide>` text that follows the profile (alone when there is no profile yet)."""
    return _GUIDE[language]


@dataclass(frozen=True, slots=True)
class SceneEntry:
    """One line of an agent's L2 scene index."""

    path: str
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class AgentMemory:
    """One agent's section of the profile block: the session's own agent, or one it imports."""

    agent_id: str
    name: str
    is_self: bool
    persona: str | None  # L3 as stored (None: none yet)
    scenes: tuple[SceneEntry, ...] = ()


_PROFILE_INTRO = {
    "en": "The long-term working memory TDAI keeps for the current agent (own and imported sections; L2 is only an"
    " index, read the full text with the tools when needed):",
    "zh": "以下是 TDAI 为当前 agent 维护的长期工作记忆（自有 + 借入分段；L2 仅给索引，按需用工具读全文）：",
}


def _truncate(text: str, limit: int) -> str:
    """The original's cut: the first `limit` characters, then a line saying how many were left out."""
    return f"{text[:limit]}\n...[truncated {len(text) - limit} chars]" if len(text) > limit else text


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters on one line, an ellipsis marking a cut (an index line stays one line)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _persona_text(persona: str | None) -> str:
    """The persona without a generated Scene Navigation tail (the index is injected on its own), trimmed."""
    if not persona:
        return ""
    return remove_generated(persona).text.strip()


def render_profile_memory(agents: Sequence[AgentMemory], language: Language = "en") -> str:
    """`<tdai_profile_memory>` with one `<agent>` per agent that has a persona or scenes, then the guide; the guide
    alone when no agent has either."""
    groups = [(a, _persona_text(a.persona)) for a in agents]
    groups = [(a, p) for a, p in groups if p or a.scenes]
    guide = memory_tools_guide(language)
    if not groups:
        return guide
    lines = ["<tdai_profile_memory>", _PROFILE_INTRO[language]]
    for agent, persona in groups:
        role = "self" if agent.is_self else "imported_from"
        lines.append(
            f'<agent name="{xml_attr_escape(agent.name)}" role="{role}" agent_id="{xml_attr_escape(agent.agent_id)}">'
        )
        if persona:
            lines += ["<l3_core_memory>", _truncate(neutralise(persona), L3_MAX_CHARS), "</l3_core_memory>"]
        if agent.scenes:
            lines.append("<l2_scene_index>")
            for scene in agent.scenes:
                path = escape_tags(_one_line(scene.path)).replace("`", "'")
                summary = escape_tags(_one_line(scene.summary or ""))
                if summary:
                    lines.append(f"- `{path}` — {_clip(summary, L2_SUMMARY_MAX_CHARS)}")
                else:
                    lines.append(f"- `{path}`")
            lines.append("</l2_scene_index>")
        lines.append("</agent>")
    lines += ["</tdai_profile_memory>", "", guide]
    return "\n".join(lines)
