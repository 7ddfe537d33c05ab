"""The `<available_skills>` block: the skills an agent may use, one `- name: description` line each.

It goes into a prompt, so two rules hold that the original's renderer did not keep:
- The block fits `char_budget` whole. Lines are taken best first and whole: a line that does not fit is left out
  (a shorter, lower-ranked one may still fit) and never cut, so no half description reads as an instruction; the
  original cut the text mid-line and then appended a marker that overran the budget. How many lines were left
  out is returned as `truncated`. When not one line fits, the block is empty rather than a frame that would
  claim the agent has no skills.
- Names and descriptions are user text: each line is folded onto one line and our prompt tags are escaped
  (memhub.formats.fence), so a description can neither add lines nor close the block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memhub.formats.fence import escape_tags
from memhub.model.skills import SkillHeadline, SkillVersion
from memhub.retrieval.packing import pack

LISTING_TAG = "available_skills"
OPEN, CLOSE = f"<{LISTING_TAG}>\n", f"\n</{LISTING_TAG}>"
EMPTY = f"{OPEN}(none){CLOSE}"
DEFAULT_CHAR_BUDGET = 8_000
MAX_CHAR_BUDGET = 64_000

ListingMode = Literal["full", "search"]
# A search hit is a whole head; a listing without a query reads headlines only.
Listed = SkillHeadline | SkillVersion


@dataclass(frozen=True, slots=True)
class Listing:
    """A rendered block and the skills it names, in its order."""

    mode: ListingMode
    listing: str
    hits: tuple[Listed, ...]
    truncated: int  # lines left out for the budget

    def view(self) -> dict[str, Any]:
        """`{mode, listing, hits:[{skill_id, version, name}], truncated}` (the original's shape plus `truncated`)."""
        return {
            "mode": self.mode,
            "listing": self.listing,
            "hits": [{"skill_id": s.skill_id, "version": s.version, "name": s.name} for s in self.hits],
            "truncated": self.truncated,
        }


def listing_line(skill: Listed) -> str:
    """`- name: description` on one line, with our prompt tags escaped."""
    name = escape_tags(" ".join(skill.name.split()))
    description = escape_tags(" ".join(skill.description.split()))
    return f"- {name}: {description}"


def render_listing(skills: Sequence[Listed], char_budget: int, *, mode: ListingMode, left_out: int = 0) -> Listing:
    """The block of `skills` (best first) within `char_budget` characters; `left_out` counts skills the caller
    did not pass that the block also leaves out (beyond a listing's page)."""
    if char_budget < 0:
        raise ValueError("char_budget: must be >= 0")
    if not skills:
        return Listing(mode, EMPTY if len(EMPTY) <= char_budget else "", (), left_out)
    lines = {s.skill_id: listing_line(s) for s in skills}
    room = char_budget - len(OPEN) - len(CLOSE)
    kept = pack(skills, lambda s: lines[s.skill_id], max_chars=room) if room > 0 else []
    truncated = len(skills) - len(kept) + left_out
    if not kept:
        return Listing(mode, "", (), truncated)
    text = OPEN + "\n".join(lines[s.skill_id] for s in kept) + CLOSE
    return Listing(mode, text, tuple(kept), truncated)
