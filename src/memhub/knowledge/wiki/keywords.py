"""Keyword search over extracted source archives: which file, where in it, and a snippet.

Source archives are found by keywords on extracted text, with no vectors. Terms
follow `memhub.index.tokenize`: English words are case-folded and Snowball-stemmed (so
"limits" finds "limit"), while a Chinese keyword is matched as a substring, because a segmenter
can split the document differently from the query and a substring never misses.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memhub.index.tokenize import CJK_RUN, STEMMER, STOPWORDS, WORD, fold
from memhub.knowledge.wiki.sources import ExtractedSource

SNIPPET_CHARS = 200
# How far before the first hit the snippet starts, so the reader sees the hit in context.
SNIPPET_LEAD = 60
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Match:
    """A unit of a source file that matched: file name, locator, snippet around the first hit, score."""

    filename: str
    locator: str
    snippet: str
    score: float
    matched: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Terms:
    """A query's English stems and CJK substrings, each with the keyword it came from."""

    stems: tuple[tuple[str, str], ...]
    substrings: tuple[str, ...]

    @property
    def count(self) -> int:
        """Number of distinct terms, the denominator of coverage."""
        return len(self.stems) + len(self.substrings)


def parse_keywords(keywords: str | Sequence[str]) -> Terms:
    """Turn keywords (a string or a list) into stemmed English terms and CJK substrings, deduplicated.

    Stop words are dropped across all keywords together (`["how", "to", "quokka"]` searches `quokka`),
    unless nothing else would be left.
    """
    parts = [keywords] if isinstance(keywords, str) else list(keywords)
    words: list[str] = []
    subs: dict[str, None] = {}
    for part in parts:
        pos = 0
        latin: list[str] = []
        for run in CJK_RUN.finditer(part):
            latin.extend(WORD.findall(part[pos : run.start()]))
            subs[run.group(0)] = None
            pos = run.end()
        latin.extend(WORD.findall(part[pos:]))
        words.extend(fold(w) for w in latin)
    content = [w for w in words if w not in STOPWORDS]
    if not content and not subs:
        content = words
    stems: dict[str, str] = {}
    for word, stem in zip(content, STEMMER.stemWords(content), strict=True):
        stems.setdefault(stem, word)
    return Terms(tuple((s, w) for s, w in stems.items()), tuple(subs))


@dataclass(slots=True)
class _Unit:
    filename: str
    locator: str
    text: str
    folded: str
    # stem -> (occurrences, offset of the first occurrence in `text`)
    stems: dict[str, tuple[int, int]]


def _index_unit(filename: str, locator: str, text: str) -> _Unit:
    matches = list(WORD.finditer(text))
    stems = STEMMER.stemWords([fold(m.group(0)) for m in matches])
    table: dict[str, tuple[int, int]] = {}
    for m, stem in zip(matches, stems, strict=True):
        seen = table.get(stem)
        table[stem] = (seen[0] + 1, seen[1]) if seen else (1, m.start())
    # casefold keeps offsets aligned for CJK (no case) and is only used to find CJK substrings.
    return _Unit(filename, locator, text, text.casefold(), table)


class SourceIndex:
    """Pre-tokenised units of many sources with postings, so a search reads only the units that can match."""

    def __init__(self, sources: Iterable[ExtractedSource]) -> None:
        """Tokenise every unit once; order follows the sources and their units."""
        self.units: list[_Unit] = [
            _index_unit(source.filename, unit.locator, unit.text) for source in sources for unit in source.units
        ]
        self._by_stem: dict[str, list[int]] = {}
        # CJK characters → units containing them: a Chinese keyword's candidates are the units holding
        # all of its characters (then checked as a substring), instead of every unit of the wiki.
        self._by_char: dict[str, set[int]] = {}
        for position, unit in enumerate(self.units):
            for stem in unit.stems:
                self._by_stem.setdefault(stem, []).append(position)
            for run in CJK_RUN.findall(unit.folded):
                for char in set(run):
                    self._by_char.setdefault(char, set()).add(position)

    def _candidates(self, terms: Terms) -> list[int]:
        found: set[int] = set()
        for stem, _ in terms.stems:
            found.update(self._by_stem.get(stem, ()))
        for sub in terms.substrings:
            sets = sorted((self._by_char.get(c, set()) for c in set(sub)), key=len)
            if sets:
                found.update(set.intersection(*sets) if len(sets) > 1 else sets[0])
        return sorted(found)

    def search(self, keywords: str | Sequence[str], limit: int = 10) -> list[Match]:
        """Best-matching units: more distinct keywords matched first, then more hits; ties by file order."""
        terms = parse_keywords(keywords)
        if terms.count == 0 or limit <= 0:
            return []
        scored: list[tuple[float, int, int, tuple[str, ...]]] = []
        for position in self._candidates(terms):
            unit = self.units[position]
            matched: list[str] = []
            hits = 0
            first = len(unit.text)
            for stem, word in terms.stems:
                found = unit.stems.get(stem)
                if found:
                    matched.append(word)
                    hits += found[0]
                    first = min(first, found[1])
            for sub in terms.substrings:
                at = unit.folded.find(sub)
                if at >= 0:
                    matched.append(sub)
                    hits += unit.folded.count(sub)
                    first = min(first, at)
            if matched:
                scored.append((round(score_of(len(matched), terms.count, hits), 4), position, first, tuple(matched)))
        # Deterministic: score descending, then the order sources and units were given in.
        top = heapq.nsmallest(limit, scored, key=lambda item: (-item[0], item[1]))
        # Snippets are built for the returned hits only: on a broad query most units match.
        return [
            Match(self.units[pos].filename, self.units[pos].locator, snippet(self.units[pos].text, first), score, words)
            for score, pos, first, words in top
        ]


def score_of(matched: int, total: int, hits: int) -> float:
    """Coverage dominates (all keywords beat some); hit count breaks ties, saturating so it never outweighs coverage."""
    coverage = matched / total
    return coverage + 0.1 * (1 - 1 / (1 + math.log1p(hits)))


def snippet(text: str, offset: int, size: int = SNIPPET_CHARS) -> str:
    """About `size` characters around `offset`, whitespace collapsed, cut at word boundaries, marked with … when cut."""
    start = max(0, offset - SNIPPET_LEAD)
    end = min(len(text), start + size)
    start = max(0, min(start, end - size))
    if start > 0:
        # Move forward to the next whitespace so the snippet does not begin mid-word (CJK has none: keep).
        space = text.find(" ", start, offset)
        if 0 <= space < offset:
            start = space + 1
    if end < len(text):
        space = text.rfind(" ", max(offset, start + size // 2), end)
        if space > 0:
            end = space
    body = _SPACE.sub(" ", text[start:end]).strip()
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")


def search_sources(
    sources: Iterable[ExtractedSource] | SourceIndex,
    keywords: str | Sequence[str],
    limit: int = 10,
) -> list[Match]:
    """Keyword-match extracted source units (English stemmed, Chinese by substring); best first, at most `limit`."""
    index = sources if isinstance(sources, SourceIndex) else SourceIndex(sources)
    return index.search(keywords, limit)
