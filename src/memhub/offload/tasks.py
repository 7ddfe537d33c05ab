"""The offline task stage (L1.5): what a new user prompt means for the session's tasks.

Four readings of a prompt, in English and Chinese, decide it:
- closing: a short thanks or sign-off with no request in it ("thanks, that's all", "好了，谢谢") ends the task;
- new task: an explicit switch ("new task:", "unrelated:", "换个任务") starts one;
- continuation: a cue that carries on ("continue", "go on", "also …", "now fix …", "继续", "接着", "还有");
- request: a verb of multi-step work ("fix", "implement", "refactor", "修复", "实现", "重构") in a prompt that
  is not an information question, or a long prompt (a spec) — what makes a task long.

A prompt that names an existing graph's goal (it shares most of the goal's content words) continues that
graph. With a task under way, every prompt continues it unless it closes it, switches explicitly, or is a
request that shares no content word with the task's goal or the recent turns (a different topic); follow-up
questions stay on the task. Without a task under way, a long prompt starts one, labelled by its first clause;
a bare "continue" resumes the most recent unfinished graph. Content words are lower-cased English words of
three letters or more without stop words, and the character pairs of Chinese runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memhub.index.tokenize import CJK_RUN, STEMMER, STOPWORDS, WORD, cjk_bigrams, fold
from memhub.model.offload import RecentTurn, TaskJudgment
from memhub.offload.stages import GraphDigest

__all__ = ["HeuristicTaskJudge", "content_words", "task_label"]

LABEL_MAX_WORDS = 8
LABEL_MAX_CHARS = 60
CLOSING_MAX_CHARS = 80  # a sign-off is short; a longer prompt that thanks usually asks for more
LONG_PROMPT_CHARS = 400  # a prompt this long is a specification, whatever its verbs
RECENT_TURNS = 4  # the turns whose words count as the current topic

_CLOSING = re.compile(
    r"\b(?:thanks?|thank you|thx|that'?s (?:all|it)|that is all|all done|we'?re done|done for (?:now|today)|"
    r"looks good|lgtm|perfect|nothing else|good job|great work|bye)\b|谢谢|多谢|感谢|好了|就这样|没事了|完成了|"
    r"搞定|可以了|没问题了|辛苦了|再见",
    re.IGNORECASE,
)
_NEW_TASK = re.compile(
    r"^\W*(?:new task|next task|another task|different task|unrelated|separate question|switch(?:ing)? to|"
    r"moving on|let'?s move on|forget (?:that|this|it)|instead)\b|新任务|另一个任务|换个任务|换一个任务|下一个任务|"
    r"先不管|不相关|另外一个问题",
    re.IGNORECASE,
)
_CONTINUE = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|yes|yep|good|great|nice|cool|right|sure|thanks|thank you)\W+)?(?:please\s+)?"
    r"(?:continue|go on|keep going|carry on|proceed|resume|go ahead|next|then|also|and|now|same|again|retry|"
    r"try again|one more|what about)\b|\b(?:continue|keep going|as well|also)\b|"
    r"^\W*(?:好的?|嗯|行|可以|对)?\W*(?:继续|接着|还有|另外|然后|接下来|顺便|再(?!见))|继续|接着",
    re.IGNORECASE,
)
# A request that points at something said before ("add tests for it", "把这个改一下") is about the same work.
_REFERS_BACK = re.compile(r"\b(?:it|this|that|these|those|them|the same)\b|这个|那个|它|上面|刚才|刚刚", re.IGNORECASE)
_REQUEST = re.compile(
    r"\b(?:implement|fix|refactor|add|build|create|write|debug|migrate|investigate|update|set ?up|port|rewrite|"
    r"optimi[sz]e|design|integrate|deploy|configure|upgrade|remove|delete|rename|convert|support|review|"
    r"analy[sz]e|make|change|improve|clean ?up|replace|move|split|merge|generate|install|run|test|export|"
    r"import|upload|schedule|automate|document|translate|benchmark|profile)\b|"
    r"实现|修复|修改|重构|添加|增加|编写|写一个|开发|调试|排查|优化|迁移|部署|配置|升级|删除|重命名|支持|集成|设计|"
    r"搭建|分析|测试|生成|安装|运行|改一下|处理",
    re.IGNORECASE,
)
# An information question: a question word first (not "can you …", which asks for work) or a question particle.
_QUESTION = re.compile(
    r"^\W*(?:what|why|how|when|where|who|which|whose|is|are|was|were|does|did|should|explain)\b(?!\s+you\b)|"
    r"什么|为什么|怎么|如何|是否|哪|吗[？?]?\s*$|呢[？?]?\s*$",
    re.IGNORECASE,
)
_POLITE_REQUEST = re.compile(
    r"(?:^|[.!?。！？]\s+)\W*(?:(?:can|could|would|will) you|please|pls|let'?s|i want you to|i need you to)\b|"
    r"帮我|请|麻烦",
    re.IGNORECASE,
)
_LABEL_PREFIX = re.compile(
    r"^\W*(?:(?:new|next|another|different) task\W*|unrelated\W*|(?:ok(?:ay)?|yes|great|thanks?)\W+|"
    r"(?:can|could|would|will) you (?:please )?|please |pls |let'?s |i want you to |i need you to |now |also |"
    r"新任务\W*|请|帮我|麻烦)+",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[,;:!?\n，；：！？。]|\.(?=\s|$)")
# Words of requests and cues that say nothing about what the work is on (beyond the index's stop words).
_FILLER = frozenset(
    re.findall(
        r"\w+",
        "also again ahead another any can could different get got going instead keep let lets like made make "
        "more most move moving need new next now okay please proceed resume retry same should some still switch "
        "task thank thanks then those try unrelated use using want what when where which while who why will "
        "would yes you your",
    )
)


class HeuristicTaskJudge:
    """TaskJudge without a model: cue phrases and shared content words (see the module docstring)."""

    def judge(
        self, prompt: str, recent: Sequence[RecentTurn], graphs: Sequence[GraphDigest], active: str | None
    ) -> TaskJudgment:
        """The judgment for `prompt` given the recent turns, the session's graphs and its active graph."""
        text = prompt.strip()
        request = _is_request(text)
        long_task = request or len(text) >= LONG_PROMPT_CHARS
        words = content_words(text)
        named = _named_graph(words, graphs)
        if _CLOSING.search(text) and not request and len(text) <= CLOSING_MAX_CHARS:
            return TaskJudgment(task_completed=True, is_long_task=False, is_continuation=False)
        if named is not None and named != active:
            return TaskJudgment(task_completed=True, is_long_task=True, is_continuation=True, continuation_graph=named)
        switching = _NEW_TASK.search(text) is not None
        # A request on another topic leaves the task under way; anything else stays on it.
        if active is not None and not switching and not (request and _off_topic(text, words, active, recent, graphs)):
            return TaskJudgment(
                task_completed=False, is_long_task=True, is_continuation=True, continuation_graph=active
            )
        if active is None and not switching and _CONTINUE.search(text):
            resumed = _latest_unfinished(graphs)
            if resumed is not None:
                return TaskJudgment(
                    task_completed=True, is_long_task=True, is_continuation=True, continuation_graph=resumed
                )
        return TaskJudgment(
            task_completed=True,
            is_long_task=long_task,
            is_continuation=False,
            new_task_label=task_label(text) if long_task else None,
        )


def task_label(prompt: str) -> str:
    """A short label for the task a prompt starts: its first clause, without politeness and task cues."""
    text = _LABEL_PREFIX.sub("", prompt.strip(), count=1)
    clause = next((c.strip() for c in _CLAUSE_END.split(text) if c.strip()), "")
    label = " ".join(clause.split()[:LABEL_MAX_WORDS])
    if len(label) > LABEL_MAX_CHARS:
        cut = label[:LABEL_MAX_CHARS]
        label = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return label.strip(" -_.") or "task"


def content_words(text: str) -> set[str]:
    """The words that say what a text is about: stemmed words of 3+ letters that are neither stop words nor
    request verbs, and the character pairs of Chinese runs."""
    words = {gram for run in CJK_RUN.findall(text) for gram in cjk_bigrams(run)}
    latin = (fold(w) for w in WORD.findall(CJK_RUN.sub(" ", text)))
    kept = [w for w in latin if len(w) >= 3 and w not in STOPWORDS and w not in _FILLER and not _REQUEST.fullmatch(w)]
    words.update(STEMMER.stemWords(kept))
    return words


def _off_topic(
    text: str, words: set[str], active: str, recent: Sequence[RecentTurn], graphs: Sequence[GraphDigest]
) -> bool:
    """Whether a request is about something else than the task under way: no cue that carries on, no words that
    point back at what was said, and no content word shared with the task's goal or the recent turns."""
    if _CONTINUE.search(text) or _REFERS_BACK.search(text):
        return False
    return not words & _topic(active, recent, graphs)


def _topic(active: str, recent: Sequence[RecentTurn], graphs: Sequence[GraphDigest]) -> set[str]:
    """The content words of the task under way: its goal, its file name and the recent turns."""
    words = content_words(active.removesuffix(".mmd").replace("-", " "))
    for graph in graphs:
        if graph.filename == active:
            words |= content_words(graph.goal)
    for turn in recent[-RECENT_TURNS:]:
        words |= content_words(turn.content)
    return words


def _is_request(text: str) -> bool:
    if not _REQUEST.search(text):
        return False
    return _POLITE_REQUEST.search(text) is not None or _QUESTION.search(text) is None


def _named_graph(words: set[str], graphs: Sequence[GraphDigest]) -> str | None:
    """The graph whose goal the prompt names: it shares at least half of the goal's content words, and two of
    them when the goal has two or more; the best share wins, a later graph on a tie."""
    best: tuple[float, str] | None = None
    for graph in graphs:
        goal = content_words(graph.goal)
        shared = len(words & goal)
        if not goal or shared < min(2, len(goal)) or shared * 2 < len(goal):
            continue
        share = shared / len(goal)
        if best is None or share >= best[0]:
            best = (share, graph.filename)
    return best[1] if best else None


def _latest_unfinished(graphs: Sequence[GraphDigest]) -> str | None:
    # Graph files are numbered in the order they were made, so the highest name is the latest.
    unfinished = [g.filename for g in graphs if g.doing + g.todo > 0]
    return max(unfinished) if unfinished else None
