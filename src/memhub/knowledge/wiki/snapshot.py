"""One built wiki generation, loaded for reading: pages, index, links, page search and source search.

Everything a query needs is tokenised once at load time; the tools then answer from memory. A
snapshot is immutable, so any number of requests may read it while a new generation is built.
Result shapes follow the reference's wiki tools.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memhub.knowledge.wiki.globs import glob_matches
from memhub.knowledge.wiki.index import INDEX_FILE, WikiDocument, WikiIndex, load_index
from memhub.knowledge.wiki.indexer import PAGES_DIR, read_manifest, read_units
from memhub.knowledge.wiki.keywords import SourceIndex
from memhub.knowledge.wiki.pages import Page, normalise_ref, page_id, resolve_links
from memhub.knowledge.wiki.pagesearch import PageSearch, query_snippet
from memhub.knowledge.wiki.passages import Source, assemble, cap_for
from memhub.knowledge.wiki.sources import ExtractedSource, SourceError, source_kind, split_front_matter
from memhub.knowledge.wiki.walk import walk

RELATED_MAX = 10
# BM25 re-scoring: the best page earns as much as one title-word hit of the index (walk._TITLE).
RESCORE_POINTS = 3.0
RESCORE_POOL = 50
Rescore = Literal["none", "bm25"]
EXPANSION_MAX = 200
Conversation = Literal["workspace", "agent", "help"]


def _title(meta: dict[str, Any], body: str, fallback: str) -> str:
    title = meta.get("title")
    if isinstance(title, str) and title.strip():
        return " ".join(title.split())
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return fallback


@dataclass(frozen=True, slots=True)
class Related:
    """A neighbour of a page in the link graph."""

    id: str
    direction: Literal["out", "in", "both"]


class WikiSnapshot:
    """A read-only view of one generation directory."""

    def __init__(self, generation: int, directory: Path) -> None:
        self.generation = generation
        self.directory = directory
        self.root = directory / PAGES_DIR
        self.index: WikiIndex = load_index(self.root)
        by_file = {d.file: d for d in self.index.all_documents()}
        manifest = read_manifest(directory)
        built = manifest.get("hashes", {})
        self.pages: dict[str, Page] = {}
        for path in sorted(self.root.rglob("*.md"), key=lambda p: p.as_posix()):
            file = path.relative_to(self.root).as_posix()
            text = path.read_text(encoding="utf-8")
            meta, body, _, _ = split_front_matter(text)
            doc = by_file.get(file)
            # The file the page was made from (front matter may say anything; the build's hashes do not).
            source = file if file in built else file[: -len(".md")] if file[: -len(".md")] in built else file
            self.pages[page_id(file)] = Page(
                id=page_id(file),
                file=file,
                title=doc.title if doc else _title(meta, body, page_id(file)),
                text=text,
                source=str(source),
                kind=doc.kind if doc else "page",
                summary=doc.summary if doc else "",
                body=body,
            )
        self.documents: dict[str, WikiDocument] = by_file
        self.links = resolve_links(self.pages)
        self.backlinks: dict[str, list[str]] = {pid: [] for pid in self.pages}
        for source_id, targets in self.links.items():
            for target in targets:
                self.backlinks[target].append(source_id)
        self._order = list(self.pages)
        self._search = PageSearch([p.title for p in self.pages.values()], [p.body for p in self.pages.values()])
        units = read_units(directory)
        self.source_names = sorted(units)
        self._units = units
        self._hashes: dict[str, str] = built
        self._notes = [e for e in manifest.get("errors", []) if isinstance(e, dict) and e.get("kind") == "truncated"]
        self._sources = SourceIndex(ExtractedSource(name, source_kind(name), us) for name, us in sorted(units.items()))
        self._index_json: dict[str, Any] = {}
        for path in self.root.rglob(INDEX_FILE):
            self._index_json[path.relative_to(self.root).as_posix()] = json.loads(path.read_text(encoding="utf-8"))

    def extracted(self, name: str, digest: str) -> ExtractedSource | None:
        """What this generation's build extracted from a source file, if the file still has that content."""
        if self._hashes.get(name) != digest or name not in self._units:
            return None
        notes = [SourceError(name, e["reason"], "truncated") for e in self._notes if e.get("filename") == name]
        return ExtractedSource(name, source_kind(name), list(self._units[name]), hash=digest, errors=notes)

    # -- reference tools ------------------------------------------------------------------------------

    def related(self, pid: str) -> list[dict[str, Any]]:
        """Up to 10 neighbours, best connected first: `{title, path, type, direction}`."""
        out_links, in_links = set(self.links.get(pid, ())), set(self.backlinks.get(pid, ()))
        neighbours = [
            Related(n, "both" if n in out_links and n in in_links else "out" if n in out_links else "in")
            for n in dict.fromkeys([*self.links.get(pid, ()), *self.backlinks.get(pid, ())])
        ]
        neighbours.sort(key=lambda r: (-self.degree(r.id), r.id))
        return [
            {
                "title": self.pages[r.id].title,
                "path": self.pages[r.id].path,
                "type": self.pages[r.id].kind,
                "direction": r.direction,
            }
            for r in neighbours[:RELATED_MAX]
        ]

    def degree(self, pid: str) -> int:
        """Links in and out of a page."""
        return len(self.links.get(pid, ())) + len(self.backlinks.get(pid, ()))

    def search(
        self, query: str, limit: int, *, hop: int = 0, decay: float = 0.5, min_score: float = 0.1
    ) -> dict[str, Any]:
        """BM25 over titles and bodies: `{results, links, count}` with query-aware snippets.

        With `hop` > 0, pages linked to the hits (up to `hop` links away) join with score × decay^hop and
        `via` naming the page they were reached from; seeds keep hop 0 and expansion stops at 200 pages.
        """
        hits = self._search.search(query, limit)
        scored: dict[str, tuple[float, int, str | None]] = {self._order[h.position]: (h.score, 0, None) for h in hits}
        frontier = list(scored)
        for depth in range(1, hop + 1):
            reached: list[str] = []
            for pid in frontier:
                base = scored[pid][0]
                for neighbour in (*self.links.get(pid, ()), *self.backlinks.get(pid, ())):
                    score = round(base * decay, 4)
                    if neighbour in scored or score < min_score or len(scored) >= EXPANSION_MAX:
                        continue
                    scored[neighbour] = (score, depth, pid)
                    reached.append(neighbour)
            frontier = reached
        ranked = sorted(scored.items(), key=lambda item: (item[1][1], -item[1][0]))[: max(limit, len(hits))]
        results: list[dict[str, Any]] = []
        for pid, (score, depth, via) in ranked:
            page = self.pages[pid]
            result: dict[str, Any] = {
                "id": page.id,
                "path": page.path,
                "title": page.title,
                "snippet": query_snippet(page.body, query),
                "score": score,
                "type": page.kind,
                "hop": depth,
                "related": self.related(page.id),
            }
            if via is not None:
                result["via"] = self.pages[via].path
            results.append(result)
        found = {r["id"] for r in results}
        links = [
            {"source": self.pages[s].path, "target": self.pages[t].path, "weight": 1}
            for s in found
            for t in self.links.get(s, ())
            if t in found
        ]
        links.sort(key=lambda link: (link["source"], link["target"]))
        return {"results": results, "links": links, "count": len(results)}

    def list_pages(self) -> dict[str, Any]:
        """Every page: `{items:[{id, title, type, path, description}]}`."""
        return {
            "items": [
                {"id": p.id, "title": p.title, "type": p.kind, "path": p.path, "description": p.summary}
                for p in self.pages.values()
            ]
        }

    def read_pages(self, refs: Sequence[str]) -> dict[str, Any]:
        """`{items:[{ref, content} | {ref, not_found: true}]}` in the order asked."""
        items: list[dict[str, Any]] = []
        for ref in refs:
            page = self.pages.get(normalise_ref(ref))
            items.append({"ref": ref, "content": page.text} if page else {"ref": ref, "not_found": True})
        return {"items": items}

    def graph(self) -> dict[str, Any]:
        """Nodes, undirected edges and connected components as communities."""
        component = self._components()
        nodes = [
            {
                "id": p.id,
                "label": p.title,
                "type": p.kind,
                "path": p.path,
                "linkCount": self.degree(p.id),
                "community": component[p.id],
            }
            for p in self.pages.values()
        ]
        edges = [{"source": s, "target": t, "weight": 1} for s, targets in self.links.items() for t in targets]
        members: dict[int, list[str]] = {}
        for pid, c in component.items():
            members.setdefault(c, []).append(pid)
        communities = [{"id": c, "size": len(ids), "nodes": ids} for c, ids in sorted(members.items())]
        return {"nodes": nodes, "edges": edges, "communities": communities}

    def _components(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for start in self.pages:
            if start in out:
                continue
            label = len({*out.values()})
            stack = [start]
            while stack:
                pid = stack.pop()
                if pid in out:
                    continue
                out[pid] = label
                stack.extend(n for n in (*self.links.get(pid, ()), *self.backlinks.get(pid, ())) if n not in out)
        return out

    def _bm25_points(self, question: str) -> dict[str, float]:
        hits = self._search.search(question, RESCORE_POOL)
        if not hits or hits[0].score <= 0:
            return {}
        best = hits[0].score
        points: dict[str, float] = {}
        for hit in hits:
            doc = self.documents.get(self.pages[self._order[hit.position]].file)
            if doc is not None:
                points[doc.id] = round(RESCORE_POINTS * hit.score / best, 3)
        return points

    # -- memhub's index tools ----------------------------------------------------------------------------

    def list_themes(self) -> dict[str, Any]:
        """The root index's themes."""
        return {
            "items": [
                {
                    "id": t.id,
                    "title": t.title,
                    "summary": t.summary,
                    "tags": list(t.tags),
                    "status": t.status,
                    "paths": list(t.paths),
                    "documents": len(t.documents),
                }
                for t in self.index.themes
            ],
            "root_documents": len(self.index.documents),
        }

    def get_index(self, theme: str | None) -> dict[str, Any] | None:
        """The root index.json, or a theme's; None for an unknown theme."""
        if theme is None:
            return {"theme": None, "index": self._index_json[INDEX_FILE]}
        found = self.index.theme(theme)
        if found is None or found.index not in self._index_json:
            return None
        return {"theme": theme, "index": self._index_json[found.index]}

    def docs_for_paths(self, paths: Sequence[str]) -> dict[str, Any]:
        """Documents (and documents of themes) whose `paths` globs match one of the given paths."""
        items: list[dict[str, Any]] = []
        for theme in (None, *self.index.themes):
            theme_globs = theme.paths if theme else ()
            docs = theme.documents if theme else self.index.documents
            for doc in docs:
                globs = doc.paths or theme_globs
                matched = [g for g in globs if any(glob_matches(g, p) for p in paths)]
                if matched:
                    items.append(
                        {
                            "id": doc.id,
                            "title": doc.title,
                            "path": self.pages[page_id(doc.file)].path if page_id(doc.file) in self.pages else None,
                            "theme": doc.theme,
                            "summary": doc.summary,
                            "status": doc.status,
                            "matched_globs": matched,
                        }
                    )
        return {"items": items, "count": len(items)}

    def search_sources(self, keywords: str | Sequence[str], limit: int = 10) -> dict[str, Any]:
        """Keyword hits in the extracted sources with their locators (page, paragraph, heading)."""
        matches = self._sources.search(keywords if isinstance(keywords, str) else list(keywords), limit)
        results = [
            {"filename": m.filename, "locator": m.locator, "snippet": m.snippet, "score": m.score, "matched": m.matched}
            for m in matches
        ]
        return {"results": results, "count": len(results)}

    def retrieve(
        self,
        question: str,
        *,
        paths: Sequence[str] = (),
        conversation: Conversation = "workspace",
        rescore: Rescore = "none",
    ) -> dict[str, Any]:
        """The retrieval walk: themes → documents → passages under the conversation's character cap.

        `rescore="bm25"` adds the documents' full-text BM25 (scaled so the best page earns as much as one
        title word) to the index scores, for wikis whose summaries say too little.
        """
        result = walk(
            self.index, question, paths=paths, rescore=self._bm25_points(question) if rescore == "bm25" else None
        )
        cap = cap_for(conversation)
        if result.skipped_reason:
            return {"skipped": result.skipped_reason, "themes": [], "documents": [], "text": "", "cap": cap}
        sources = []
        for hit in result.documents:
            page = self.pages.get(page_id(hit.file))
            if page is not None:
                sources.append(Source(hit.id, hit.title, hit.file, page.body))
        block = assemble(sources, question, cap=cap)
        return {
            "skipped": None,
            "themes": [{"id": t.id, "title": t.title, "score": t.score, "fallback": t.fallback} for t in result.themes],
            "documents": [
                {"id": d.id, "title": d.title, "file": d.file, "theme": d.theme, "score": d.score, "status": d.status}
                for d in result.documents
            ],
            "passages": [
                {"doc_id": p.doc_id, "heading": p.heading, "chars": p.chars, "truncated": p.truncated}
                for p in block.passages
            ],
            "text": block.text,
            "chars": block.chars,
            "cap": cap,
            "truncated": block.truncated,
        }
