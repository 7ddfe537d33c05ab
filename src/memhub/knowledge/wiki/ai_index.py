""" "Generate index with AI": an LLM writes the summaries and tags the authors did not.

The deterministic index takes a document's summary from its front matter, else its first paragraph,
which is often an introduction rather than what the document is about. When an LLM is configured and
an ingest asks for `index: "ai"`, each document without an authored summary (and each theme without
one) is described by the LLM instead. Front matter always wins; answers are cached by content hash in
the generation's manifest, so an incremental re-ingest only asks about pages that changed. A failed
call keeps the rule-based text for that entry: the index is never worse than the deterministic one.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memhub.knowledge.wiki.index import INDEX_FILE
from memhub.knowledge.wiki.sources import split_front_matter
from memhub.llm.client import ChatClient, LLMError
from memhub.llm.jsonrepair import parse_json_loose

log = logging.getLogger("memhub.wiki")

SUMMARY_MAX = 200
TAGS_MAX = 6
TEXT_SENT = 4000
Describe = Callable[[str, str], tuple[str, list[str]]]

SYSTEM_PROMPT = (
    "You write the index of a team knowledge base. For the document you are given, reply with one JSON object "
    '{"summary": "...", "tags": ["...", ...]}: the summary is one sentence (at most 200 characters) saying what '
    "questions the document answers; tags are 3 to 6 short topic words a reader would search for. Write in the "
    "document's own language. Reply with the JSON object only."
)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class Described:
    """The outcome of enriching one index: the entries the LLM wrote, reused, or failed to write."""

    written: int = 0
    reused: int = 0
    failed: int = 0
    cache: dict[str, dict[str, Any]] = field(default_factory=dict)


def llm_describer(client: ChatClient) -> Describe:
    """A describer that asks the configured chat model; raises ValueError on an unusable answer."""

    def describe(title: str, text: str) -> tuple[str, list[str]]:
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Title: {title}\n\n{text[:TEXT_SENT]}"},
        ]
        answer = parse_json_loose(client.complete(messages, json_mode=True).text)
        if not isinstance(answer, dict) or not isinstance(answer.get("summary"), str):
            raise ValueError("the model's answer has no summary")
        summary = " ".join(answer["summary"].split())[:SUMMARY_MAX]
        tags = answer.get("tags") if isinstance(answer.get("tags"), list) else []
        clean = [" ".join(t.split()) for t in tags if isinstance(t, str) and t.strip()]
        return summary, list(dict.fromkeys(clean))[:TAGS_MAX]

    return describe


def _authored(page: Path) -> tuple[bool, bool]:
    """Whether the page's front matter gives a summary (or description) and tags."""
    meta, _, _, _ = split_front_matter(page.read_text(encoding="utf-8"))
    return bool(meta.get("summary") or meta.get("description")), bool(meta.get("tags"))


def _ask(
    describe: Describe, key: str, title: str, text: str, cache: Mapping[str, dict[str, Any]], out: Described
) -> tuple[str, list[str]] | None:
    digest = _digest(title + "\n" + text)
    hit = cache.get(key)
    if hit and hit.get("hash") == digest:
        out.reused += 1
        out.cache[key] = hit
        return hit["summary"], list(hit["tags"])
    try:
        summary, tags = describe(title, text)
    except (LLMError, ValueError) as exc:
        log.warning("AI index: %s kept its rule-based entry: %s", key, exc)
        out.failed += 1
        return None
    out.written += 1
    out.cache[key] = {"hash": digest, "summary": summary, "tags": tags}
    return summary, tags


def enrich(
    root: Path, generated: dict[str, dict[str, Any]], describe: Describe, cache: Mapping[str, dict[str, Any]]
) -> Described:
    """Fill summaries and tags the authors left out, in place; themes are described from their documents."""
    out = Described()
    for rel, data in generated.items():
        base = root / rel.rsplit("/", 1)[0] if "/" in rel else root
        for entry in data.get("documents", []):
            page = base / entry["file"]
            has_summary, has_tags = _authored(page)
            if has_summary and has_tags:
                continue
            _, body, _, _ = split_front_matter(page.read_text(encoding="utf-8"))
            answer = _ask(describe, f"doc:{page.relative_to(root).as_posix()}", entry["title"], body, cache, out)
            if answer is not None:
                if not has_summary:
                    entry["summary"] = answer[0]
                if not has_tags:
                    entry["tags"] = answer[1]
    root_index = generated[INDEX_FILE]
    for theme in root_index.get("themes", []):
        docs = generated.get(theme["index"], {}).get("documents", [])
        if not theme.get("summary") and docs:
            listing = "\n".join(f"- {d['title']}: {d.get('summary', '')}" for d in docs)
            answer = _ask(describe, f"theme:{theme['id']}", theme["title"], listing, cache, out)
            if answer is not None:
                theme["summary"] = answer[0]
                theme["tags"] = list(dict.fromkeys([*answer[1], *theme.get("tags", [])]))
    return out


def cache_of(manifest: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The previous generation's AI descriptions, keyed `doc:<file>` / `theme:<id>`."""
    cached = manifest.get("ai_index")
    return cached if isinstance(cached, dict) else {}


__all__ = ["Describe", "Described", "cache_of", "enrich", "llm_describer"]
