"""Passages of picked articles and the capped knowledge block (the last two steps of the
retrieval walk).

An article under ~5,000 characters is one passage (one table, one data dictionary stays whole);
a longer one is cut by heading and merged back up to ~1,200 characters, never inside a Markdown
table or a fenced code block. The assembled block is capped in code points (Python `len`): ~6,000
for workspace knowledge, ~8,000 for agent / help knowledge; an over-long tail ends with the marker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from memhub.index.tokenize import index_text, query_terms
from memhub.knowledge.wiki.index import split_front_matter

WHOLE_ARTICLE_LIMIT = 5000
PASSAGE_TARGET = 1200
CAP_WORKSPACE = 6000
CAP_AGENT = 8000
CAP_HELP = 8000
TRUNCATION_MARKER = "\n…(excerpt truncated)"

_HEADING = re.compile(r"^#{1,6}[ \t]+\S")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage of an article: the nearest heading above it and its Markdown text."""

    heading: str
    text: str


@dataclass(frozen=True, slots=True)
class Block:
    """An atomic run of lines: a table or fenced code is never split, prose may be."""

    text: str
    atomic: bool


@dataclass(frozen=True, slots=True)
class Source:
    """One picked article handed to `assemble`: its id, title, root-relative file and Markdown text."""

    id: str
    title: str
    file: str
    text: str


@dataclass(frozen=True, slots=True)
class PickedPassage:
    """A passage that made it into the block (possibly cut short when `truncated`)."""

    doc_id: str
    file: str
    heading: str
    chars: int
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class KnowledgeBlock:
    """The capped text for the prompt and what it is made of; `chars` counts code points."""

    text: str
    passages: tuple[PickedPassage, ...]
    truncated: bool
    chars: int
    cap: int


def cap_for(kind: Literal["workspace", "agent", "help"]) -> int:
    """The character cap of a knowledge block for a conversation kind."""
    return {"workspace": CAP_WORKSPACE, "agent": CAP_AGENT, "help": CAP_HELP}[kind]


def blocks(markdown: str) -> list[Block]:
    """Blank-line-separated blocks; tables and fenced code are atomic, headings start their own block."""
    out: list[Block] = []
    current: list[str] = []
    kind = "prose"  # prose | table | code

    def flush() -> None:
        nonlocal current, kind
        if current:
            out.append(Block("\n".join(current), kind != "prose"))
        current, kind = [], "prose"

    for line in markdown.split("\n"):
        if kind == "code":
            current.append(line)
            if _FENCE.match(line):
                flush()
            continue
        is_table = line.lstrip().startswith("|")
        if _FENCE.match(line):
            flush()
            current, kind = [line], "code"
        elif is_table:
            if kind != "table":
                flush()
                kind = "table"
            current.append(line)
        elif not line.strip():
            flush()
        elif _HEADING.match(line):
            flush()
            out.append(Block(line, False))
        else:
            if kind == "table":
                flush()
            current.append(line)
    flush()
    return out


def _sections(body: str) -> list[Passage]:
    """The article cut at every heading; text before the first heading gets an empty heading."""
    sections: list[Passage] = []
    heading, parts = "", []
    for block in blocks(body):
        if not block.atomic and _HEADING.match(block.text):
            if parts:
                sections.append(Passage(heading, "\n\n".join(parts)))
            heading, parts = block.text.lstrip("#").strip(), [block.text]
        else:
            parts.append(block.text)
    if parts:
        sections.append(Passage(heading, "\n\n".join(parts)))
    return sections


def _split_section(section: Passage, target: int) -> list[Passage]:
    """A section over the target split between blocks; an atomic block larger than target stays whole."""
    pieces: list[Passage] = []
    parts: list[str] = []
    size = 0
    for block in blocks(section.text):
        extra = len(block.text) + (2 if parts else 0)
        if parts and size + extra > target:
            pieces.append(Passage(section.heading, "\n\n".join(parts)))
            parts, size, extra = [], 0, len(block.text)
        parts.append(block.text)
        size += extra
    if parts:
        pieces.append(Passage(section.heading, "\n\n".join(parts)))
    return pieces


def split_passages(
    markdown: str, *, whole_limit: int = WHOLE_ARTICLE_LIMIT, target: int = PASSAGE_TARGET
) -> list[Passage]:
    """Passages of one article: the whole body when short, else heading sections merged to ~target."""
    try:
        _, body = split_front_matter(markdown)
    except ValueError:
        body = markdown  # a broken front matter is the index's problem; the text is still readable
    body = body.strip("\n")
    if not body.strip():
        return []
    if len(body) < whole_limit:
        sections = _sections(body)
        return [Passage(sections[0].heading if sections else "", body)]
    merged: list[Passage] = []
    for section in _sections(body):
        for piece in _split_section(section, target) if len(section.text) > target else [section]:
            last = merged[-1] if merged else None
            if last is not None and len(last.text) + 2 + len(piece.text) <= target:
                merged[-1] = Passage(last.heading, last.text + "\n\n" + piece.text)
            else:
                merged.append(piece)
    return merged


def _passage_score(passage: Passage, words: Sequence[str], grams: Sequence[str]) -> int:
    score = 0
    # A hit in the passage's heading says more than one in its body, as titles do in the index.
    for text, weight in ((passage.text, 1), (passage.heading, 2)):
        indexed = index_text(text)
        have_words, have_grams = set(indexed.words.split()), set(indexed.grams.split())
        score += weight * (sum(1 for w in words if w in have_words) + sum(1 for g in grams if g in have_grams))
    return score


def select_passages(markdown: str, question: str, *, limit: int | None = None) -> list[Passage]:
    """The passages of one article worth sending: all of a short one, else those the question hits."""
    passages = split_passages(markdown)
    if len(passages) <= 1:
        return passages
    terms = query_terms(question)
    scored = [(_passage_score(p, terms.words, terms.grams), i, p) for i, p in enumerate(passages)]
    hits = [item for item in scored if item[0] > 0]
    if not hits:
        return passages[:1]  # nothing hits: the opening passage usually says what the article is
    hits.sort(key=lambda item: (-item[0], item[1]))
    chosen = sorted(hits[:limit] if limit else hits, key=lambda item: item[1])  # back to reading order
    return [p for _, _, p in chosen]


def _header(source: Source, passage: Passage) -> str:
    where = f" § {passage.heading}" if passage.heading and passage.heading != source.title else ""
    return f"[source: {source.file} — {source.title}{where}]\n"


def _cut(text: str, budget: int) -> str:
    """The longest prefix of whole blocks within budget; prose may be cut at a line or word, tables never."""
    kept: list[str] = []
    used = 0
    for block in blocks(text):
        sep = 2 if kept else 0
        if used + sep + len(block.text) <= budget:
            kept.append(block.text)
            used += sep + len(block.text)
            continue
        room = budget - used - sep
        if not block.atomic and room > 0:
            piece = block.text[:room]
            cut = max(piece.rfind("\n"), piece.rfind(" "))
            # Cut at a line or word end when one is near; CJK text has no spaces, so cut at the budget.
            piece = piece[:cut] if cut > room // 2 else piece
            if piece.strip():
                kept.append(piece.rstrip())
        break
    return "\n\n".join(kept)


def _same(text: str) -> str:
    return text


def assemble(
    sources: Sequence[Source],
    question: str,
    *,
    cap: int = CAP_WORKSPACE,
    marker: str = TRUNCATION_MARKER,
    clean: Callable[[str], str] = _same,
) -> KnowledgeBlock:
    """The knowledge block for the prompt: each source's passages with a source line, capped in code points.

    `clean` rewrites each passage and source line after the passages are chosen and before they are measured
    (the composer escapes document text there), so the cap holds for the text that goes out.
    """
    parts: list[str] = []
    picked: list[PickedPassage] = []
    used = 0
    budget = cap - len(marker)  # room for the marker is kept so the capped block never exceeds the cap
    truncated = False
    pending = [(s, p) for s in sources for p in select_passages(s.text, question)]
    for n, (source, passage) in enumerate(pending):
        header, text = clean(_header(source, passage)), clean(passage.text)
        chunk = header + text
        sep = 2 if parts else 0
        fits_all = used + sep + len(chunk) <= cap and n == len(pending) - 1
        if fits_all or used + sep + len(chunk) <= budget:
            parts.append(chunk)
            used += sep + len(chunk)
            picked.append(PickedPassage(source.id, source.file, passage.heading, len(text)))
            continue
        truncated = True
        room = budget - used - sep - len(header)
        body = _cut(text, room) if room > 0 else ""
        if body:
            parts.append(header + body)
            picked.append(PickedPassage(source.id, source.file, passage.heading, len(body), truncated=True))
        break
    text = "\n\n".join(parts) + (marker if truncated else "")
    return KnowledgeBlock(text, tuple(picked), truncated, len(text), cap)
