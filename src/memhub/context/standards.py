"""The standards library block: published standards in force at the request time, matched by
title / tags / document number; pending drafts never.

The marker is a wiki Markdown page's front matter (docs/context.md):

    kind: standard                  # the wiki index's own fields …
    lifecycle: published            # … published | in-force | draft
    standard:                       # memhub's: all optional
      number: GB/T 22239-2019
      effective_from: 2019-12-01    # inclusive
      effective_to: 2030-12-31      # inclusive: the last day in force

A standard is in force on a day when its lifecycle is `published` or `in-force`, the index does not archive it
and the day lies inside its effective dates (UTC dates). Malformed `standard:` metadata makes it `invalid`,
which is never injected: a standard whose validity cannot be read must not be presented as binding.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from memhub.context.knowledge import STANDARD_KIND, Pick
from memhub.context.model import StandardCheck
from memhub.context.sources import Shelf
from memhub.index.tokenize import query_terms
from memhub.knowledge.wiki.globs import glob_matches
from memhub.knowledge.wiki.index import WikiDocument
from memhub.knowledge.wiki.pages import Page, page_id
from memhub.knowledge.wiki.sources import split_front_matter
from memhub.knowledge.wiki.walk import DocumentHit, score_entry

PUBLISHED = ("published", "in-force")
MAX_STANDARDS = 3
# A document number named in the question is the strongest evidence there is: it outranks any word hit.
NUMBER_POINTS = 10
# "GB/T 22239-2019" is also asked for as "GB/T 22239": the year after the last separator is optional.
_YEAR_SUFFIX = re.compile(r"[-–—:/]\d{4}$")


@dataclass(frozen=True, slots=True)
class Standard:
    """A standard document of one wiki, with its marker read from the page's front matter."""

    shelf: Shelf
    doc: WikiDocument
    page: Page
    number: str | None = None
    effective_from: date | None = None
    effective_to: date | None = None
    problem: str | None = None

    def state_at(self, day: date) -> str:
        """in_force | draft | invalid | archived | not_yet_effective | expired, on that day."""
        if self.doc.lifecycle not in PUBLISHED:
            return "draft"
        if self.problem:
            return "invalid"
        if self.doc.status == "archived":
            return "archived"
        if self.effective_from is not None and day < self.effective_from:
            return "not_yet_effective"
        if self.effective_to is not None and day > self.effective_to:
            return "expired"
        return "in_force"

    def check(self, day: date, injected: bool = False) -> StandardCheck:
        """This standard's diagnostic record for the response."""
        return StandardCheck(
            knowledge_id=self.shelf.knowledge_id,
            id=self.doc.id,
            title=self.doc.title,
            number=self.number,
            lifecycle=self.doc.lifecycle,
            effective_from=self.effective_from.isoformat() if self.effective_from else None,
            effective_to=self.effective_to.isoformat() if self.effective_to else None,
            state=self.state_at(day),
            injected=injected,
        )


def _day(value: Any, key: str) -> date | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ValueError(f"standard.{key}: must be a date (YYYY-MM-DD)")


def read_marker(page: Page) -> tuple[str | None, date | None, date | None, str | None]:
    """(number, effective_from, effective_to, problem) from the page's `standard:` front matter."""
    meta, _, _, problem = split_front_matter(page.text.lstrip("\ufeff").replace("\r\n", "\n"))
    if problem:
        return None, None, None, problem
    marker = meta.get("standard")
    if marker is None:
        return None, None, None, None
    if not isinstance(marker, dict):
        return None, None, None, "standard: must be a mapping"
    number = marker.get("number")
    if isinstance(number, bool) or (number is not None and not isinstance(number, (str, int))):
        return None, None, None, "standard.number: must be a string"
    try:
        start = _day(marker.get("effective_from"), "effective_from")
        end = _day(marker.get("effective_to"), "effective_to")
    except ValueError as exc:
        return None, None, None, str(exc)
    if start and end and end < start:
        return None, None, None, "standard.effective_to: must not be before effective_from"
    text = " ".join(str(number).split()) if number is not None else None
    return text or None, start, end, None


def read_standards(shelf: Shelf) -> list[Standard]:
    """Every standard document of a wiki, in index order."""
    out: list[Standard] = []
    for doc in shelf.snapshot.index.all_documents():
        page = shelf.snapshot.pages.get(page_id(doc.file))
        if doc.kind != STANDARD_KIND or page is None:
            continue
        number, start, end, problem = read_marker(page)
        out.append(Standard(shelf, doc, page, number, start, end, problem))
    return out


def normalise_number(text: str) -> str:
    """Full-width folded, lower case, without whitespace: `ＧＢ/Ｔ 22239－2019` → `gb/t22239-2019`."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return "".join(folded.split())


def number_matches(number: str | None, question: str) -> bool:
    """Whether the question names the document number, with or without its year."""
    if not number:
        return False
    asked = normalise_number(question)
    full = normalise_number(number)
    core = _YEAR_SUFFIX.sub("", full)
    return full in asked or (len(core) >= 4 and core in asked)


def _applies(doc: WikiDocument, paths: Sequence[str]) -> bool:
    # Conditional loading: an entry with `paths` globs is a candidate only when a path of the turn matches one.
    return not doc.paths or any(glob_matches(g, p) for g in doc.paths for p in paths)


def match_standards(
    shelves: Sequence[Shelf], question: str, *, paths: Sequence[str], day: date, limit: int = MAX_STANDARDS
) -> tuple[list[Pick], list[StandardCheck]]:
    """Standards the question matches: the in-force ones to inject (best first, at most `limit`) and a check
    record for every match, whatever its state, so a caller can see why a draft or an expired one stayed out."""
    terms = query_terms(question)
    ranked: list[tuple[int, int, int, Standard]] = []
    for order, shelf in enumerate(shelves):
        for n, standard in enumerate(read_standards(shelf)):
            doc = standard.doc
            if not _applies(doc, paths):
                continue
            score = score_entry(terms.words, terms.grams, doc.title, "", doc.tags)
            score += NUMBER_POINTS if number_matches(standard.number, question) else 0
            if score > 0:
                ranked.append((score, order, n, standard))
    ranked.sort(key=lambda item: (-item[0], item[1], item[2]))
    picks: list[Pick] = []
    checks: list[StandardCheck] = []
    for score, _, _, standard in ranked:
        inject = standard.state_at(day) == "in_force" and len(picks) < limit
        if inject:
            doc = standard.doc
            hit = DocumentHit(doc.id, doc.title, doc.file, doc.theme, score, doc.status)
            where = f"{standard.number}, {doc.file}" if standard.number else doc.file
            picks.append(Pick(standard.shelf, hit, standard.page, where))
        checks.append(standard.check(day, inject))
    return picks, checks
