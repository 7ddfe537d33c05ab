"""The limits and defaults of the skill service, as the original's (built from settings in memhub.runtime)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SearchMode = Literal["bm25", "embedding", "hybrid"]
DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class SkillConfig:
    """What a skill may hold and how long old versions stay readable."""

    max_name_chars: int = 64
    max_description_chars: int = 1024
    max_body_chars: int = 50_000
    # The YAML between the fences; the original has no bound, but a front matter is a few lines, and an
    # unbounded one lets a request make the parser work for nothing.
    max_front_matter_chars: int = 16_384
    max_resource_bytes: int = 5_000_000
    max_resources_per_call: int = 100
    max_skill_total_bytes: int = 50_000_000
    max_export_bytes: int = 50_000_000
    # Non-head versions older than this are unreadable (41002) and purged after the next write; 0: kept forever.
    version_ttl_days: float = 0
    search_mode: SearchMode = "bm25"  # `/v3/skill/search` without a `mode`: the original's default
    # A listing for a query and the composer's skill notes reach the prompt, where a paraphrase must still find
    # its skill; the agent kit's recall has usually embedded the same message just before, so the query vector
    # comes from the cache. Without an embedder this ranks by BM25.
    listing_mode: SearchMode = "hybrid"
    search_top_k: int = 20
    fast_path_min_name_length: int = 4
    listing_char_budget: int = 8_000

    @property
    def version_ttl_ms(self) -> int:
        """The version TTL in milliseconds; 0 when off."""
        return int(self.version_ttl_days * DAY_MS) if self.version_ttl_days > 0 else 0
