"""Skill search, the `<available_skills>` listing and the composer's skill notes, as one caller sees them.

What a caller considers is decided here, from the skill service's access rules (memhub.knowledge.skill.access):
- the team's published heads it may read (a user key: those whose asset it may read or that it wrote; the gateway
  key: all of them), and its own drafts (an author tries hers out; nobody else's draft reaches a prompt);
- with an agent, narrowed to the skills that agent may use: the ones it owns and the ones bound to it as fixed
  assets (bindings whose asset is archived, deprecated or failed do not count). `scope: "team"` drops this
  narrowing, as the original's handler drops `agent_id`.
Without a team the original narrows by the writing user instead; the service's filter does the same.

A listing without a query orders what the agent may use by binding priority (a skill it owns but that is not
bound counts as the default priority), then most recently updated; with a query it is the search's ranking.

Everything here goes to an agent: a skill whose name or description (or, in search and the notes, the excerpt of
its instructions) reads like an instruction to the agent is withheld, and the answer's notes name it
(memhub.knowledge.skill.screen).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from memhub.knowledge.skill.access import Actor, SkillIds
from memhub.knowledge.skill.assets import SKILL_ASSET, SKILL_PRIORITY
from memhub.knowledge.skill.config import SearchMode
from memhub.knowledge.skill.listing import Listed, Listing, author_label, author_of, render_listing
from memhub.knowledge.skill.screen import withheld_note, withhold
from memhub.knowledge.skill.search import DEFAULT_TOP_K, SkillHit, SkillResults, SkillSearch, skill_body
from memhub.knowledge.skill.service import SkillService
from memhub.memory.embedding import EmbeddingRuntime
from memhub.meta.caller import Caller
from memhub.meta.permissions import UNUSABLE_STATUSES
from memhub.model.meta import MetaKind
from memhub.model.skills import SkillFilter, SkillVersion

# The most heads a listing without a query reads: beyond a few hundred lines no prompt budget holds them.
LISTING_CANDIDATES = 500
NOTE_BODY_CHARS = 600


@dataclass(frozen=True, slots=True)
class SkillNoteText:
    """A skill as the composer's skill-notes section shows it."""

    skill_id: str
    name: str
    text: str
    author: str = ""  # who wrote its current version


@dataclass(frozen=True, slots=True)
class FoundNotes:
    """The composer's notes for a turn, and what was withheld from them (as notes saying so)."""

    notes: list[SkillNoteText]
    withheld: tuple[str, ...] = ()


def _listed_texts(skill: Listed) -> tuple[str, tuple[str, ...]]:
    return skill.skill_id, (skill.name, skill.description)


def _hit_texts(hit: SkillHit) -> tuple[str, tuple[str, ...]]:
    return hit.skill.skill_id, (hit.skill.name, hit.skill.description, hit.snippet)


class SkillFinder:
    """Search, listing and notes over the skill service's store and access rules."""

    def __init__(self, service: SkillService, embedding: EmbeddingRuntime | None = None) -> None:
        self.service = service
        self.ranker = SkillSearch(service.skills, embedding)

    # -- who considers what -------------------------------------------------------------------------

    def actor(self, caller: Caller, ids: SkillIds) -> Actor:
        """The ids the caller acts under (the skill routes' rules: AccessDenied naming a field it may not use)."""
        return self.service.access.actor(caller, ids)

    def bindings(self, service_id: str, agent_id: str) -> dict[str, int]:
        """The agent's usable skill bindings: skill id → priority."""
        with self.service.meta.reading(service_id) as r:
            bound = r.find(MetaKind.FIXED_ASSET, {"agent_id": agent_id, "asset_type": SKILL_ASSET})
            if not bound:
                return {}
            usable = {
                a["asset_id"]
                for a in r.find(
                    MetaKind.ASSET,
                    {"asset_id": [b["asset_id"] for b in bound], "status !=": list(UNUSABLE_STATUSES)},
                )
            }
        return {b["asset_id"]: b["priority"] for b in bound if b["asset_id"] in usable}

    def authors(self, service_id: str, user_ids: Iterable[str]) -> dict[str, str]:
        """How prompts name the authors of these versions: user id → label (memhub.knowledge.skill.listing)."""
        wanted = sorted({u for u in user_ids if u})
        if not wanted:
            return {}
        with self.service.meta.reading(service_id) as r:
            names = {u["user_id"]: u["username"] for u in r.find(MetaKind.USER, {"user_id": wanted})}
        return {u: author_label(u, names.get(u)) for u in wanted}

    def scope(self, actor: Actor, *, team_wide: bool = False) -> SkillFilter:
        """The heads the actor considers: readable ones, narrowed to its agent's unless `team_wide`."""
        reader = self.service.access.reader(actor)
        team_id = actor.ids.team_id or None
        # As the service's filter: without a team the original narrows by the writing user instead.
        team_filter = SkillFilter(
            team_id=team_id,
            user_id=None if team_id else actor.ids.user_id,
            reader=reader,
            drafts_of=actor.ids.user_id or None,
        )
        agent_id = actor.ids.agent_id
        if team_wide or not agent_id:
            return team_filter
        service_id = actor.caller.service_id
        # The store reads "owned by the agent, or bound to it" inside its query: an agent owning thousands of
        # skills costs no list of ids. Bound skills stay within what the caller may read (`skill_ids`).
        bound = sorted(self.bindings(service_id, agent_id))
        return replace(team_filter, owner_agent_ids=[agent_id], also_skill_ids=bound)

    # -- search -------------------------------------------------------------------------------------

    def search(
        self,
        caller: Caller,
        ids: SkillIds,
        query: str,
        *,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        team_wide: bool = False,
    ) -> SkillResults:
        """The skills the caller considers, ranked for the query (mode and top-k default to the settings')."""
        actor = self.actor(caller, ids)
        flt = self.scope(actor, team_wide=team_wide)
        config = self.service.config
        results = self.ranker.search(
            caller.service_id, flt, query, mode=mode or config.search_mode, top_k=top_k or DEFAULT_TOP_K
        )
        hits, withheld = withhold(results.hits, _hit_texts)
        if not withheld:
            return results
        return replace(results, hits=hits, notes=(*results.notes, withheld_note(withheld)))

    # -- listing ------------------------------------------------------------------------------------

    def listing(self, caller: Caller, ids: SkillIds, query: str | None, char_budget: int) -> Listing:
        """`<available_skills>` within `char_budget`: ranked for the query if one is given, else the agent's
        skills by binding priority, then most recently updated."""
        actor = self.actor(caller, ids)
        flt = self.scope(actor)
        config = self.service.config
        service_id = caller.service_id
        if query and query.strip():
            results = self.ranker.search(
                service_id, flt, query, mode=config.listing_mode, top_k=config.search_top_k, snippets=False
            )
            found, withheld = withhold([h.skill for h in results.hits], _listed_texts)
            authors = self.authors(service_id, (s.user_id for s in found))
            return render_listing(found, char_budget, mode="search", notes=_notes(withheld), authors=authors)
        heads, total = self.service.skills.headlines(service_id, flt, LISTING_CANDIDATES)
        heads, withheld = withhold(heads, _listed_texts)
        priority = self.bindings(service_id, actor.ids.agent_id) if actor.ids.agent_id else {}
        # headlines come most recently updated first; a stable sort by priority keeps that order within one.
        ordered = sorted(heads, key=lambda s: -priority.get(s.skill_id, SKILL_PRIORITY))
        left_out = total - len(heads) - len(withheld)
        authors = self.authors(service_id, (s.user_id for s in heads))
        listing = render_listing(
            ordered, char_budget, mode="full", left_out=left_out, notes=_notes(withheld), authors=authors
        )
        return listing if listing.truncated == 0 else replace(listing, mode="search")

    # -- the composer's notes -----------------------------------------------------------------------

    def notes(self, caller: Caller, team_id: str, agent_id: str | None, question: str, limit: int = 5) -> FoundNotes:
        """The team's skills the caller may read that match the question, the agent's own (or bound) first."""
        ids = SkillIds(team_id=team_id, agent_id=agent_id, user_id=caller.user_id)
        actor = self.actor(caller, ids)
        flt = self.scope(actor, team_wide=True)
        config = self.service.config
        results = self.ranker.search(
            caller.service_id, flt, question, mode=config.listing_mode, top_k=limit, snippets=False
        )
        own: set[str] = set()
        if agent_id:
            own = set(self.bindings(caller.service_id, agent_id))
            own |= {h.skill.skill_id for h in results.hits if h.skill.owner_agent_id == agent_id}
        ranked = sorted(results.hits, key=lambda h: h.skill.skill_id not in own)
        authors = self.authors(caller.service_id, (h.skill.user_id for h in ranked))
        notes = [note_of(h.skill, authors) for h in ranked]
        kept, withheld = withhold(notes, lambda n: (n.skill_id, (n.name, n.text)))
        return FoundNotes(kept, _notes(withheld))


def _notes(withheld: list[str]) -> tuple[str, ...]:
    return (withheld_note(withheld),) if withheld else ()


def note_of(skill: SkillVersion, authors: Mapping[str, str] | None = None) -> SkillNoteText:
    """The description, then the beginning of the instructions (`authors`: how to name the author)."""
    body = skill_body(skill.content)
    if len(body) > NOTE_BODY_CHARS:
        cut = body.rfind(" ", 0, NOTE_BODY_CHARS)
        body = body[: cut if cut > NOTE_BODY_CHARS // 2 else NOTE_BODY_CHARS].rstrip() + " …"
    text = " ".join(skill.description.split())
    return SkillNoteText(skill.skill_id, skill.name, f"{text}\n\n{body}" if body else text, author_of(skill, authors))
