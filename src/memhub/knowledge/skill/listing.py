"""The `<available_skills>` block: the skills an agent may use, one `- name: description` line each.

It goes into a prompt, so two rules hold that the original's renderer did not keep:
- The block fits `char_budget` whole. Lines are taken best first and whole: a line that does not fit is left out
  (a shorter, lower-ranked one may still fit) and never cut, so no half description reads as an instruction; the
  original cut the text mid-line and then appended a marker that overran the budget. How many lines were left
  out is returned as `truncated`. When not one line fits, the block is empty rather than a frame that would
  claim the agent has no skills.
- Names and descriptions are user text: each line is folded onto one line and our prompt tags are escaped
  (memhub.formats.fence), so a description can neither add lines nor close the block. Each line names the skill's
  author (who wrote its current version) by username, so whoever reads the block knows whose words it is reading;
  a username that reads like an instruction is shown as the user's id instead.
Which skills reach the block (drafts, text that reads like an instruction) is decided before it is rendered
(memhub.knowledge.skill.finder, memhub.knowledge.skill.screen); `notes` says what was left out and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memhub.formats.fence import escape_tags
from memhub.knowledge.skill.screen import flagged_name
from memhub.model.skills import SkillHeadline, SkillVersion
from memhub.retrieval.packing import pack

LISTING_TAG = "available_skills"
OPEN, CLOSE = f"<{LISTING_TAG}>\n", f"\n</{LISTING_TAG}>"
EMPTY = f"{OPEN}(none){CLOSE}"
DEFAULT_CHAR_BUDGET = 8_000
SERVICE_AUTHOR = "gateway-key"  # the author of a version the gateway key wrote without naming a user
MAX_AUTHOR_CHARS = 64  # a longer username is shown as the user's id
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
    notes: tuple[str, ...] = ()  # what was withheld before rendering, and why
    authors: Mapping[str, str] = field(default_factory=dict)  # user id → the name its lines show

    def view(self) -> dict[str, Any]:
        """`{mode, listing, hits:[{skill_id, version, name, author_user_id}], truncated, notes?}`: the original's
        shape plus memhub's `truncated`, each hit's author, and `notes` when something was withheld."""
        out: dict[str, Any] = {
            "mode": self.mode,
            "listing": self.listing,
            "hits": [
                {"skill_id": s.skill_id, "version": s.version, "name": s.name, "author_user_id": s.user_id or None}
                for s in self.hits
            ],
            "truncated": self.truncated,
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def author_label(user_id: str, username: str | None) -> str:
    """How a prompt names the author of a version: the username on one line (the id when it has none, is too
    long or reads like an instruction), or the tenant's own key for a version written without a user."""
    if not user_id:
        return SERVICE_AUTHOR
    name = " ".join((username or "").split())
    if not name or len(name) > MAX_AUTHOR_CHARS or flagged_name(name):
        return user_id
    return name


def author_of(skill: Listed, authors: Mapping[str, str] | None = None) -> str:
    """The author label of the skill's current version (`authors`: user id → label, from the caller)."""
    return (authors or {}).get(skill.user_id) or author_label(skill.user_id, None)


def listing_line(skill: Listed, authors: Mapping[str, str] | None = None) -> str:
    """`- name: description (author: …)` on one line, with our prompt tags escaped."""
    name = escape_tags(" ".join(skill.name.split()))
    description = escape_tags(" ".join(skill.description.split()))
    return f"- {name}: {description} (author: {escape_tags(author_of(skill, authors))})"


def render_listing(
    skills: Sequence[Listed],
    char_budget: int,
    *,
    mode: ListingMode,
    left_out: int = 0,
    notes: Sequence[str] = (),
    authors: Mapping[str, str] | None = None,
) -> Listing:
    """The block of `skills` (best first) within `char_budget` characters; `left_out` counts skills the caller
    did not pass that the block also leaves out (beyond a listing's page); `notes` are carried as they are;
    `authors` labels the authors (user id → label; a user missing from it is named by id)."""
    if char_budget < 0:
        raise ValueError("char_budget: must be >= 0")
    named = dict(authors or {})
    if not skills:
        return Listing(mode, EMPTY if len(EMPTY) <= char_budget else "", (), left_out, tuple(notes), named)
    lines = {s.skill_id: listing_line(s, named) for s in skills}
    room = char_budget - len(OPEN) - len(CLOSE)
    kept = pack(skills, lambda s: lines[s.skill_id], max_chars=room) if room > 0 else []
    truncated = len(skills) - len(kept) + left_out
    if not kept:
        return Listing(mode, "", (), truncated, tuple(notes), named)
    text = OPEN + "\n".join(lines[s.skill_id] for s in kept) + CLOSE
    return Listing(mode, text, tuple(kept), truncated, tuple(notes), named)
