"""Source files → wiki pages: the Markdown each source becomes, its page id, and the links between pages.

A Markdown source is its own page. Text, PDF and DOCX sources become a Markdown page rendered from
their extracted units (PDF pages as `## Page N` sections, DOCX headings as Markdown headings), with
front matter naming the title and the source, so the two-layer index and the passage splitter treat
every format alike. Page files keep the source's name plus `.md` when it is not Markdown already
(`specs/api.pdf` → `specs/api.pdf.md`, id `specs/api.pdf`), so two sources can never collide.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import unquote

import yaml

from memhub.knowledge.wiki.sources import ExtractedSource

PAGE_SUFFIX = ".md"
PAGE_PREFIX = "wiki/"
_WIKILINK = re.compile(r"\[\[([^\[\]|#]+)(?:#[^\[\]|]*)?(?:\|[^\[\]]*)?\]\]")
_MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_SLUG = re.compile(r"[^\w]+", re.UNICODE)
_PAGE_LOCATOR = re.compile(r"^page (\d+)$")


@dataclass(frozen=True, slots=True)
class Page:
    """One wiki page: id (`payments/refunds`), file under the pages root, title, kind and Markdown text."""

    id: str
    file: str
    title: str
    text: str
    source: str
    kind: str = "guide"
    summary: str = ""
    links: tuple[str, ...] = field(default=(), compare=False)
    body: str = field(default="", compare=False)  # the text without its front matter, when known

    @property
    def path(self) -> str:
        """The page's path as the reference's tools name it (`wiki/<file>`)."""
        return PAGE_PREFIX + self.file


def page_file(source_name: str) -> str:
    """The page file a source becomes: Markdown keeps its name, anything else gains `.md`."""
    return source_name if source_name.lower().endswith(PAGE_SUFFIX) else source_name + PAGE_SUFFIX


def page_id(file: str) -> str:
    """A page file's id: the file without its `.md`."""
    return file[: -len(PAGE_SUFFIX)] if file.lower().endswith(PAGE_SUFFIX) else file


def normalise_ref(ref: str) -> str:
    """A `read_page` ref → page id: `wiki/` prefix, leading `./` or `/` and a trailing `.md` are optional."""
    ref = ref.strip().replace("\\", "/")
    while ref.startswith(("./", "/")):
        ref = ref[2:] if ref.startswith("./") else ref[1:]
    if ref.startswith(PAGE_PREFIX):
        ref = ref[len(PAGE_PREFIX) :]
    return page_id(ref)


def _title_of(source: ExtractedSource) -> str:
    title = source.front_matter.get("title")
    if isinstance(title, str) and title.strip():
        return " ".join(title.split())
    for unit in source.units:
        if unit.heading:
            return unit.heading[0]
    return PurePosixPath(source.filename).name


def render_markdown(source: ExtractedSource) -> str:
    """The Markdown page of a non-Markdown source, with front matter (title, source) and its units."""
    title = _title_of(source)
    front = {"title": title, "source": source.filename}
    if source.truncation:
        # Readers of the page (people and agents) learn that it holds only part of the document.
        front["truncated"] = source.truncation
    lines = ["---", yaml.safe_dump(front, allow_unicode=True, sort_keys=False).strip(), "---", ""]
    if not any(u.heading and u.heading[0] == title for u in source.units):
        lines += [f"# {title}", ""]
    for unit in source.units:
        page = _PAGE_LOCATOR.match(unit.locator)
        if page:
            lines += [f"## Page {page.group(1)}", "", unit.text, ""]
            continue
        # A DOCX heading paragraph is the last entry of its own heading path (stored whitespace-collapsed).
        text = " ".join(unit.text.split())
        if unit.heading and text == unit.heading[-1]:
            lines += [f"{'#' * min(len(unit.heading), 6)} {text}", ""]
            continue
        lines += [unit.text, ""]
    return "\n".join(lines).rstrip() + "\n"


def _slug(text: str) -> str:
    return _SLUG.sub("-", text.casefold()).strip("-")


def link_targets(text: str, file: str) -> list[str]:
    """Raw link targets of a page: `[[wikilinks]]` as written, relative Markdown links resolved to files."""
    out: list[str] = [m.group(1).strip() for m in _WIKILINK.finditer(text)]
    base = posixpath.dirname(file)
    for match in _MD_LINK.finditer(text):
        target = unquote(match.group(1).split("#", 1)[0])  # editors write `my%20notes.md`
        if not target or "://" in target or target.startswith(("mailto:", "#")):
            continue
        resolved = posixpath.normpath(posixpath.join(base, target.lstrip("/") if target.startswith("/") else target))
        if target.startswith("/"):
            resolved = posixpath.normpath(target.lstrip("/"))
        if not resolved.startswith(".."):
            out.append(resolved)
    return out


class LinkResolver:
    """Resolves link targets to page ids: an exact file or id first, then a base-name slug, then a title slug
    (within one kind of key, the first page wins)."""

    def __init__(self, pages: Iterable[Page]) -> None:
        self._exact: dict[str, str] = {}
        self._names: dict[str, str] = {}
        self._titles: dict[str, str] = {}
        ordered = list(pages)
        for page in ordered:
            self._exact.setdefault(page.file, page.id)
            self._exact.setdefault(page.id, page.id)
        for page in ordered:
            self._names.setdefault(_slug(PurePosixPath(page.id).name), page.id)
            self._titles.setdefault(_slug(page.title), page.id)

    def resolve(self, target: str) -> str | None:
        """The page id a link target names, or None."""
        for key in (target, page_id(target)):
            if key in self._exact:
                return self._exact[key]
        name = _slug(PurePosixPath(page_id(target)).name)
        if name and name in self._names:
            return self._names[name]
        title = _slug(target)
        return self._titles.get(title) if title else None


def resolve_links(pages: Mapping[str, Page]) -> dict[str, tuple[str, ...]]:
    """Each page's outgoing links as page ids (self-links and unresolved targets dropped, order kept)."""
    resolver = LinkResolver(pages.values())
    out: dict[str, tuple[str, ...]] = {}
    for pid, page in pages.items():
        found = (resolver.resolve(t) for t in link_targets(page.text, page.file))
        out[pid] = tuple(dict.fromkeys(t for t in found if t is not None and t != pid))
    return out
