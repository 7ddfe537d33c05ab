"""The retrieval walk: question → themes → documents, over the two-layer index.

1. Skip entirely for data questions (numbers / reports against a data connection) and for questions
   about the conversation itself ("what did we discuss"), so unrelated text is not put in the prompt.
2. Score themes by the question's words (CJK-aware, `memhub.index.tokenize`) on title / summary /
   tags; take the top 2 that hit, else fall back to the first 2.
3. Score each picked theme's documents, at most 2 per theme; root documents compete when they hit;
   the total is capped at 3.
Archived entries are candidates only when the question asks about the past; standard drafts never are;
entries with `paths` globs are candidates only when a path or file name in the message matches one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from memhub.index.tokenize import index_text, query_terms
from memhub.knowledge.wiki.globs import glob_matches
from memhub.knowledge.wiki.index import WikiDocument, WikiIndex, WikiTheme

MAX_THEMES = 2
MAX_PER_THEME = 2
MAX_DOCUMENTS = 3
# Word hits on titles and tags say more about the topic than a hit somewhere in a summary.
_TITLE, _TAGS, _SUMMARY = 3, 3, 1
# A path in the message that matches an entry's globs is the strongest evidence the entry applies.
_PATH_BONUS = 5
# When the question asks about the past, an archived notice is what it is looking for.
_ARCHIVED_BONUS = 1

SKIP_DATA = "data_question"
SKIP_CONVERSATION = "conversation_recall"

_PAST_EN = re.compile(
    r"\b(previous(ly)?|history|historical|old|older|last year|formerly|former|archived?|used to|"
    r"in the past|back then|legacy|outdated|superseded|earlier version)\b",
    re.IGNORECASE,
)
_PAST_ZH = re.compile(r"以前|历史|之前|旧|过去|往年|去年|曾经|归档|老版|早期|原先")

_CONVERSATION_EN = re.compile(
    r"\bwhat (did|have) (we|i|you) (discuss|discussed|talk about|talked about|ask|asked|say|said)\b|"
    r"\bwhat were we (discussing|talking about)\b|"
    r"\b(recap|summari[sz]e) (our|this|the) (conversation|chat|discussion)\b|"
    r"\bearlier in (this|our) (conversation|chat)\b|\bwhat questions did i ask\b",
    re.IGNORECASE,
)
_CONVERSATION_ZH = re.compile(
    r"(我们|咱们|刚才|之前|上次|最近).{0,6}(讨论|聊|谈|说|问)(了|过).{0,6}(什么|哪些|啥)|"
    r"(聊天|对话|会话)记录|(讨论|聊)过(什么|哪些|啥)|问过(什么|哪些|啥)"
)

# Asking for numbers or a report ...
_NUMBERS_EN = re.compile(
    r"\b(how many|how much|number of|count of|total|sum of|average|avg|median|percentage|ratio|"
    r"top \d+|trend|breakdown|report|statistics|stats|revenue|growth)\b",
    re.IGNORECASE,
)
_NUMBERS_ZH = re.compile(r"多少|几个|几位|几笔|统计|总数|总额|合计|平均|占比|排名|前\d+|趋势|同比|环比|报表|明细")
# ... against a data source (or the caller says the turn targets a data connection).
_DATA_EN = re.compile(r"\b(database|db|sql|query|dataset|data source|warehouse|dashboard|metrics?|crm|erp)\b", re.I)
_DATA_ZH = re.compile(r"数据库|数据源|数据连接|数据表|查询|查一下|查下|报表|看板|指标|库里")

# A path fragment (`src/payments/api.py`, `./web/App.tsx`) or a bare file name with an extension.
_PATH_TOKEN = re.compile(r"[\w.~\-/\\]*[/\\][\w.~\-/\\]*|[\w\-]*[A-Za-z_][\w\-]*\.[A-Za-z][A-Za-z0-9]{0,7}\b")
# Links are not file paths; they are removed before looking for path fragments.
_URL = re.compile(r"\b[a-z][a-z0-9+.\-]*://\S+", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ThemeHit:
    """A theme the walk opened, with its score (0 when picked by fallback)."""

    id: str
    title: str
    score: int
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class DocumentHit:
    """A picked document: where it lives, why it scored, which glob let a `paths` entry in."""

    id: str
    title: str
    file: str
    theme: str | None
    score: float
    status: str
    matched_globs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WalkResult:
    """Themes and documents picked for one question, or why retrieval was skipped."""

    themes: tuple[ThemeHit, ...] = ()
    documents: tuple[DocumentHit, ...] = ()
    skipped_reason: str | None = None
    past: bool = False
    paths: tuple[str, ...] = ()


def asks_about_past(question: str) -> bool:
    """Whether the question asks about earlier / old / archived material (English and Chinese)."""
    return bool(_PAST_EN.search(question) or _PAST_ZH.search(question))


def is_conversation_recall(question: str) -> bool:
    """Whether the question asks about this conversation ("what did we discuss", "刚才聊了什么")."""
    return bool(_CONVERSATION_EN.search(question) or _CONVERSATION_ZH.search(question))


def is_data_question(question: str, *, data_connection: bool = False) -> bool:
    """Whether the question asks numbers / a report of a data source rather than how things are done."""
    numbers = _NUMBERS_EN.search(question) or _NUMBERS_ZH.search(question)
    if not numbers:
        return False
    return data_connection or bool(_DATA_EN.search(question) or _DATA_ZH.search(question))


def skip_reason(question: str, *, data_connection: bool = False) -> str | None:
    """Why this turn needs no knowledge retrieval, or None when it does."""
    if is_conversation_recall(question):
        return SKIP_CONVERSATION
    if is_data_question(question, data_connection=data_connection):
        return SKIP_DATA
    return None


def extract_paths(message: str) -> tuple[str, ...]:
    """Path fragments and file names mentioned in a message, in order, without duplicates."""
    found: list[str] = []
    for match in _PATH_TOKEN.finditer(_URL.sub(" ", message)):
        token = match.group(0).strip(".,;:!?)('\"`")
        if token.replace("/", "").replace("\\", ""):
            found.append(token)
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=8192)
def _terms(text: str) -> tuple[frozenset[str], frozenset[str]]:
    indexed = index_text(text)
    return frozenset(indexed.words.split()), frozenset(indexed.grams.split())


def score_entry(words: Sequence[str], grams: Sequence[str], title: str, summary: str, tags: Sequence[str]) -> int:
    """Integer relevance of one index entry's title / summary / tags to the question's terms."""
    fields = ((_terms(title), _TITLE), (_terms(" ".join(tags)), _TAGS), (_terms(summary), _SUMMARY))
    score = 0
    for (field_words, field_grams), weight in fields:
        score += weight * sum(1 for w in words if w in field_words)
        # CJK bigrams catch a Chinese question the segmenter split differently from the index text.
        score += weight * sum(1 for g in grams if g in field_grams)
    return score


def _matched(globs: Sequence[str], paths: Sequence[str]) -> tuple[str, ...]:
    return tuple(g for g in globs if any(glob_matches(g, p) for p in paths))


def _eligible(status: str, globs: Sequence[str], paths: Sequence[str], past: bool) -> tuple[bool, tuple[str, ...]]:
    if status == "archived" and not past:
        return False, ()
    if not globs:
        return True, ()
    matched = _matched(globs, paths)
    return bool(matched), matched


def _doc_eligible(doc: WikiDocument, paths: Sequence[str], past: bool) -> tuple[bool, tuple[str, ...]]:
    # Only published / in-force standards reach ordinary Q&A; pending drafts never do.
    if doc.kind == "standard" and doc.lifecycle == "draft":
        return False, ()
    return _eligible(doc.status, doc.paths, paths, past)


def _score_doc(
    doc: WikiDocument,
    words: Sequence[str],
    grams: Sequence[str],
    matched: Sequence[str],
    past: bool,
    rescore: Mapping[str, float] | None = None,
) -> float:
    score: float = score_entry(words, grams, doc.title, doc.summary, doc.tags)
    if rescore:
        score += rescore.get(doc.id, 0.0)
    if matched:
        score += _PATH_BONUS
    if past and doc.status == "archived" and score:
        score += _ARCHIVED_BONUS
    return score


def _pick_themes(
    index: WikiIndex, words: Sequence[str], grams: Sequence[str], paths: Sequence[str], past: bool, limit: int
) -> list[tuple[WikiTheme, ThemeHit]]:
    scored: list[tuple[int, int, WikiTheme]] = []
    eligible: list[WikiTheme] = []
    for order, theme in enumerate(index.themes):
        ok, matched = _eligible(theme.status, theme.paths, paths, past)
        if not ok:
            continue
        eligible.append(theme)
        # A theme is opened for a path match of its own globs or of one of its documents' globs: a coding
        # standard for `src/api/*.py` must be reachable even when the question's words miss its theme.
        doc_matched = any(_doc_eligible(d, paths, past)[1] for d in theme.documents) if paths else False
        score = score_entry(words, grams, theme.title, theme.summary, theme.tags)
        score += _PATH_BONUS if matched or doc_matched else 0
        if score > 0:
            scored.append((score, order, theme))
    if scored:
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [(t, ThemeHit(t.id, t.title, s)) for s, _, t in scored[:limit]]
    return [(t, ThemeHit(t.id, t.title, 0, fallback=True)) for t in eligible[:limit]]


def walk(
    index: WikiIndex,
    question: str,
    *,
    paths: Sequence[str] = (),
    data_connection: bool = False,
    past: bool | None = None,
    max_themes: int = MAX_THEMES,
    per_theme: int = MAX_PER_THEME,
    total: int = MAX_DOCUMENTS,
    rescore: Mapping[str, float] | None = None,
) -> WalkResult:
    """Pick themes and documents for one question (`paths`: attachment names / paths in context).

    `rescore` adds evidence per document id to its index score (e.g. BM25 of the full text, scaled to a
    few points); off by default: the index alone is cheap and predictable.
    """
    reason = skip_reason(question, data_connection=data_connection)
    if reason:
        return WalkResult(skipped_reason=reason)
    past = asks_about_past(question) if past is None else past
    context_paths = tuple(dict.fromkeys([*extract_paths(question), *paths]))
    terms = query_terms(question)
    words, grams = terms.words, terms.grams

    # (score, discovery order, hit): discovery order keeps ties deterministic — root docs, then themes.
    candidates: list[tuple[float, int, DocumentHit]] = []
    for doc in index.documents:
        ok, matched = _doc_eligible(doc, context_paths, past)
        score = _score_doc(doc, words, grams, matched, past, rescore) if ok else 0
        if score > 0:  # root documents have no theme to vouch for them, so they must hit on their own
            candidates.append((score, len(candidates), _hit(doc, score, matched)))

    themes = _pick_themes(index, words, grams, context_paths, past, max_themes)
    for theme, _ in themes:
        ranked: list[tuple[float, int, DocumentHit]] = []
        for order, doc in enumerate(theme.documents):
            ok, matched = _doc_eligible(doc, context_paths, past)
            if ok:
                score = _score_doc(doc, words, grams, matched, past, rescore)
                ranked.append((score, order, _hit(doc, score, matched)))
        ranked.sort(key=lambda item: (-item[0], item[1]))
        for score, _, hit in ranked[:per_theme]:
            candidates.append((score, len(candidates), hit))

    # Documents that hit crowd out zero-score ones: those only fill in when nothing hit at all (fallback).
    if any(score > 0 for score, _, _ in candidates):
        candidates = [item for item in candidates if item[0] > 0]
    candidates.sort(key=lambda item: (-item[0], item[1]))
    picked = tuple(hit for _, _, hit in candidates[:total])
    return WalkResult(tuple(hit for _, hit in themes), picked, None, past, context_paths)


def _hit(doc: WikiDocument, score: float, matched: tuple[str, ...]) -> DocumentHit:
    return DocumentHit(doc.id, doc.title, doc.file, doc.theme, score, doc.status, matched)
