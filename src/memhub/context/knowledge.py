"""Knowledge blocks of a turn: the two-layer walk over each wiki of a block, merged, then capped passages.

Each wiki is walked on its own (themes → documents, paths-conditional entries only with a matching path), then
the hits of all the block's wikis compete for the block's article budget (3, as the original's `BuildContext(top=3)`):
higher index score first, then the wiki's order in the block. Standards are taken out of the walk: they have
their own block, matched differently (memhub.context.standards), and must not mix with wiki / FAQ knowledge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from memhub.context.model import Rendered, SourceKind, SourceRef
from memhub.context.sources import Shelf
from memhub.formats.fence import neutralise
from memhub.knowledge.wiki.index import WikiIndex
from memhub.knowledge.wiki.pages import Page, page_id
from memhub.knowledge.wiki.passages import Source, assemble
from memhub.knowledge.wiki.walk import MAX_DOCUMENTS, DocumentHit, walk

STANDARD_KIND = "standard"


@dataclass(frozen=True, slots=True)
class Pick:
    """A document picked for a block: the wiki it is from, why it was picked, and its page."""

    shelf: Shelf
    hit: DocumentHit
    page: Page
    where: str  # the file as the source line names it (a standard's carries its number)

    @property
    def key(self) -> str:
        """Unique across the block's wikis (document ids are unique only inside one wiki)."""
        return f"{self.shelf.knowledge_id}:{self.hit.id}"


def guides_only(index: WikiIndex) -> WikiIndex:
    """The index without standards (the standards library is not mixed into knowledge)."""
    themes = tuple(replace(t, documents=tuple(d for d in t.documents if d.kind != STANDARD_KIND)) for t in index.themes)
    return WikiIndex(index.root, themes, tuple(d for d in index.documents if d.kind != STANDARD_KIND))


def pick_documents(
    shelves: Sequence[Shelf],
    question: str,
    *,
    paths: Sequence[str],
    data_connection: bool = False,
    limit: int = MAX_DOCUMENTS,
) -> list[Pick]:
    """The block's documents: each wiki's walk, merged by score, at most `limit`."""
    ranked: list[tuple[float, int, int, Pick]] = []
    for order, shelf in enumerate(shelves):
        result = walk(guides_only(shelf.snapshot.index), question, paths=paths, data_connection=data_connection)
        for n, hit in enumerate(result.documents):
            page = shelf.snapshot.pages.get(page_id(hit.file))
            if page is not None:
                ranked.append((hit.score, order, n, Pick(shelf, hit, page, hit.file)))
    # As inside one wiki: documents that hit crowd out the zero-score fallbacks of wikis where nothing hit.
    if any(score > 0 for score, _, _, _ in ranked):
        ranked = [item for item in ranked if item[0] > 0]
    ranked.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [pick for _, _, _, pick in ranked[:limit]]


def render_picks(kind: SourceKind, picks: Sequence[Pick], question: str, cap: int) -> Rendered:
    """The picks' passages with source lines, neutralised (memhub.formats.fence) and capped at `cap` characters (tail
    marked "excerpt truncated")."""
    if not picks or cap <= 0:
        return Rendered()
    sources = [Source(p.key, p.hit.title, p.where, p.page.body) for p in picks]
    # Documents are data: escaped passage by passage before the cap is applied, so the cap holds for what goes out.
    block = assemble(sources, question, cap=cap, clean=neutralise)
    chars: dict[str, int] = {}
    truncated: dict[str, bool] = {}
    for passage in block.passages:
        chars[passage.doc_id] = chars.get(passage.doc_id, 0) + passage.chars
        truncated[passage.doc_id] = truncated.get(passage.doc_id, False) or passage.truncated
    refs = tuple(
        SourceRef(kind, p.hit.id, p.shelf.knowledge_id, p.hit.title, p.page.path, chars[p.key], truncated[p.key])
        for p in picks
        if p.key in chars
    )
    if not refs:
        return Rendered()  # not even one passage fits: no block rather than a bare truncation marker
    return Rendered(block.text, refs)
