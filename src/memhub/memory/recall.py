"""Recall: what an agent should see this turn, in one call, within a prompt budget.

An agent recalls before every LLM call. L1 memories alone miss most of what a question needs (the
offline extractor keeps only what its rules recognise, and an LLM extractor summarises), while the raw
turns of L0 hold everything but cost more tokens per fact. Recall searches both and ranks them
together:

- both layers are searched with the same hybrid engine and the same query vector, so their scores
  (mostly the cosine to the query) are comparable, and one list is ranked by score;
- an L1 memory stands for the turns it was drawn from: once a memory is chosen, its source turns are
  not repeated, and a source turn chosen before it is taken out again (the memory says the same in
  fewer tokens, with the speaker named and relative dates resolved);
- near-duplicates (word-trigram Jaccard ≥ 0.9) and turns the agent already has in its window (the
  request's `messages`) are skipped;
- memories the extractor flagged as reading like instructions to the agent are never returned;
- the persona and the scene index take at most a fixed share of the budget and the memories fill the
  rest, best first, skipping any that no longer fit (see retrieval/packing.py);
- the query is read with the agent's window: a follow-up ("and what did she say?") is completed from the last
  user turn, and the participants it names are left out of its vector (memhub.retrieval.followup).

The work per call is bounded: one BM25 probe for the participants a query names, two searches with candidate
pools sized to the budget (the defaults at the default budget, at most `MAX_POOL_SCALE` times them), one
persona read, one scene listing cut to `MAX_SCENES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from memhub.formats.injection import looks_like_prompt_injection
from memhub.formats.scene_navigation import remove_generated
from memhub.memory.atomic import AtomicService
from memhub.memory.conversation import ConversationService
from memhub.memory.core import CoreService
from memhub.memory.scenario import ScenarioEntry, ScenarioService
from memhub.model import AtomicFilter, AtomicRecord, MessageFilter, MessageRecord
from memhub.retrieval.followup import candidate_names, contextual_query, participant_free
from memhub.retrieval.hybrid import SearchOptions, near_duplicates, shingles
from memhub.retrieval.packing import estimate_tokens, truncate_to_tokens
from memhub.scope import Isolation

DEFAULT_MAX_TOKENS = 1000
L1_CANDIDATES = 30
L0_CANDIDATES = 40
# The persona and the scene index are context, not answers: they never crowd the memories out.
PERSONA_SHARE = 0.25
SCENES_SHARE = 0.10
MAX_SCENES = 30
# A long pasted turn is cut, so one document does not take the whole budget.
L0_MAX_CHARS = 1200
# Room for the prefix a prompt writes before each item ("- [episodic] ", "- [conversation 2023-05-08, user] ").
ITEM_OVERHEAD_TOKENS = 10
ITEM_OVERHEAD_CHARS = 36
# A scene's summary is a hint of what to read in full, not the scene: one line at most.
SCENE_SUMMARY_CHARS = 100
ELLIPSIS = "…"
# The candidate pools above fit the budget memories get by default (about 700 tokens once the persona and the
# scene index took theirs); a larger budget scales them, up to MAX_POOL_SCALE times.
POOL_BUDGET_TOKENS = 700
MAX_POOL_SCALE = 8.0
_SEARCHES = ThreadPoolExecutor(max_workers=8, thread_name_prefix="memhub-recall")


@dataclass(frozen=True, slots=True)
class RecentMessage:
    """A turn the agent already has in its context window."""

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall: the query, the agent's recent turns and the budget (None: unbounded in that unit)."""

    query: str
    messages: Sequence[RecentMessage] = ()
    max_tokens: int | None = DEFAULT_MAX_TOKENS
    max_chars: int | None = None
    include_persona: bool = True
    include_scenes: bool = True


@dataclass(frozen=True, slots=True)
class RecalledItem:
    """One memory or turn chosen for the prompt."""

    layer: str  # "l1" | "l0"
    id: str
    content: str
    score: float
    time_ms: int
    type: str | None = None  # l1
    source_message_ids: tuple[str, ...] = ()  # l1
    session_id: str | None = None  # l0
    role: str | None = None  # l0
    truncated: bool = False  # l0: a long turn cut to L0_MAX_CHARS


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What recall returns, and how it was found."""

    memories: list[RecalledItem]
    persona: str | None
    scenes: list[ScenarioEntry]
    tokens: int
    strategy: str
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Candidates:
    """One search of both layers: its items best first, how each layer was searched, notes, how many withheld."""

    items: list[RecalledItem]
    strategies: tuple[str, str]
    notes: list[str]
    withheld: int


@dataclass(slots=True)
class Budget:
    """What is left of the character and token budgets (None: that unit is not limited)."""

    chars: int | None
    tokens: int | None

    def share(self, fraction: float) -> Budget:
        return Budget(
            None if self.chars is None else int(self.chars * fraction),
            None if self.tokens is None else int(self.tokens * fraction),
        )

    def fits(self, chars: int, tokens: int) -> bool:
        return (self.chars is None or chars <= self.chars) and (self.tokens is None or tokens <= self.tokens)

    def take(self, chars: int, tokens: int) -> None:
        self.chars = None if self.chars is None else self.chars - chars
        self.tokens = None if self.tokens is None else self.tokens - tokens

    def give_back(self, chars: int, tokens: int) -> None:
        self.take(-chars, -tokens)


def _cost(text: str) -> tuple[int, int]:
    return len(text) + ITEM_OVERHEAD_CHARS, estimate_tokens(text) + ITEM_OVERHEAD_TOKENS


def _clipped(text: str, limit: int) -> str:
    """At most `limit` characters, ending with an ellipsis when something was cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - len(ELLIPSIS), 0)].rstrip() + ELLIPSIS


def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def _is_suspect(record: AtomicRecord) -> bool:
    """Flagged by the pipeline, or (a memory written directly, a raw turn) reading like one."""
    return bool(record.metadata and record.metadata.get("injection_suspect") is True) or (
        looks_like_prompt_injection(record.content)
    )


def _l1_item(record: AtomicRecord, score: float) -> RecalledItem:
    return RecalledItem(
        "l1",
        record.id,
        record.content,
        score,
        record.updated_ms,
        type=record.type,
        source_message_ids=tuple(record.source_message_ids),
    )


def _l0_item(record: MessageRecord, score: float) -> RecalledItem:
    content = _clipped(record.content, L0_MAX_CHARS)
    return RecalledItem(
        "l0",
        record.id,
        content,
        score,
        record.message_ms,
        session_id=record.session_id,
        role=record.role,
        truncated=content != record.content,
    )


class RecallService:
    """One recall over a scope's L1 memories, L0 turns, persona and scenes."""

    def __init__(
        self,
        conversation: ConversationService,
        atomic: AtomicService,
        scenario: ScenarioService,
        core: CoreService,
    ) -> None:
        self.conversation = conversation
        self.atomic = atomic
        self.scenario = scenario
        self.core = core

    def recall(self, iso: Isolation, request: RecallRequest) -> RecallResult:
        """The persona, the scene index and the best memories and turns for the query, within the budget."""
        budget = Budget(request.max_chars, request.max_tokens)
        persona = self._persona(iso, budget.share(PERSONA_SHARE)) if request.include_persona else None
        if persona is not None:
            budget.take(*_cost(persona))
        scenes = self._scenes(iso, budget.share(SCENES_SHARE)) if request.include_scenes else []
        for entry in scenes:
            budget.take(*_cost(_scene_line(entry)))

        query = contextual_query(request.query, [m.content for m in request.messages if m.role == "user"])
        participants = self.conversation.participants(iso, candidate_names(query))
        vector_text = participant_free(query, participants) if participants else None
        window = [m.content for m in request.messages]
        scale = pool_scale(budget)
        first = self._search(iso, query, vector_text, round(L1_CANDIDATES * scale), round(L0_CANDIDATES * scale))
        memories = choose(first.items, budget, window)

        used = sum(_cost(item.content)[1] for item in memories)
        used += _cost(persona)[1] if persona is not None else 0
        used += sum(_cost(_scene_line(e))[1] for e in scenes)
        l1_strategy, l0_strategy = first.strategies
        strategy = l1_strategy if l1_strategy == l0_strategy else f"l1:{l1_strategy}+l0:{l0_strategy}"
        notes = sorted(set(first.notes))
        if first.withheld:
            notes.append(f"{first.withheld} withheld: they read like instructions to the agent")
        return RecallResult(memories, persona, scenes, used, strategy, notes)

    def _search(self, iso: Isolation, query: str, vector_text: str | None, l1_limit: int, l0_limit: int) -> _Candidates:
        """Both layers searched for `query` (its vector from `vector_text`), ranked together by score."""
        # Both layers are searched at once; the query is embedded once (the embedder shares a query in flight).
        l0_search = _SEARCHES.submit(
            self.conversation.search,
            iso,
            query,
            MessageFilter(),
            SearchOptions(limit=l0_limit, semantic_query=vector_text),
        )
        l1 = self.atomic.search(iso, query, AtomicFilter(), SearchOptions(limit=l1_limit, semantic_query=vector_text))
        l0 = l0_search.result()
        # Nothing that reads like an instruction to the agent reaches a prompt, from either layer.
        items = [_l1_item(h.record, h.score) for h in l1.hits if not _is_suspect(h.record)]
        items += [_l0_item(h.record, h.score) for h in l0.hits if not looks_like_prompt_injection(h.record.content)]
        items.sort(key=lambda item: item.score, reverse=True)
        withheld = len(l1.hits) + len(l0.hits) - len(items)
        return _Candidates(items, (l1.strategy, l0.strategy), [*l1.notes, *l0.notes], withheld)

    def _persona(self, iso: Isolation, budget: Budget) -> str | None:
        content = self.core.read(iso).content
        text = remove_generated(content).text.strip() if content else ""
        if not text:
            return None
        limit_tokens = None if budget.tokens is None else max(budget.tokens - ITEM_OVERHEAD_TOKENS, 0)
        limit_chars = budget.chars
        clipped = text
        if limit_tokens is not None and estimate_tokens(clipped) > limit_tokens:
            clipped = truncate_to_tokens(clipped, max(limit_tokens - 1, 0))
        if limit_chars is not None and len(clipped) > limit_chars:
            clipped = clipped[: max(limit_chars - len(ELLIPSIS), 0)]
        if clipped != text:
            clipped = clipped.rstrip()
            clipped = clipped + ELLIPSIS if clipped else ""
        return clipped or None

    def _scenes(self, iso: Isolation, budget: Budget) -> list[ScenarioEntry]:
        files = [_clipped_summary(e) for e in self.scenario.files(iso)]
        # The most recently touched scenes first when not all fit; returned in path order, so a prompt
        # built from them stays the same until the scenes change.
        files.sort(key=lambda e: e.updated_ms or 0, reverse=True)
        chosen: list[ScenarioEntry] = []
        for entry in files[:MAX_SCENES]:
            cost = _cost(_scene_line(entry))
            if budget.fits(*cost):
                chosen.append(entry)
                budget.take(*cost)
        return sorted(chosen, key=lambda e: e.path)


def _scene_line(entry: ScenarioEntry) -> str:
    return f"{entry.path}: {entry.summary}" if entry.summary else entry.path


def _clipped_summary(entry: ScenarioEntry) -> ScenarioEntry:
    summary = _clipped(" ".join((entry.summary or "").split()), SCENE_SUMMARY_CHARS)
    return replace(entry, summary=summary or None)


def choose(candidates: Sequence[RecalledItem], budget: Budget, in_window: Sequence[str] = ()) -> list[RecalledItem]:
    """Best first: skip covered turns, turns in the window, near-duplicates and what does not fit.

    A memory chosen after some of its source turns replaces them. `budget` is spent as items are chosen.
    """
    window = {_normalised(text) for text in in_window}
    chosen: dict[str, RecalledItem] = {}
    seen: dict[str, frozenset[str]] = {}
    covered: set[str] = set()
    for item in candidates:
        if item.layer == "l0" and (item.id in covered or _normalised(item.content) in window):
            continue
        grams = shingles(item.content)
        if any(near_duplicates(grams, other) for other in seen.values()):
            continue
        freed: list[RecalledItem] = []
        if item.layer == "l1":
            freed = [chosen[i] for i in item.source_message_ids if i in chosen]
        cost = _cost(item.content)
        refund = [_cost(f.content) for f in freed]
        room = Budget(budget.chars, budget.tokens)
        for chars, tokens in refund:
            room.give_back(chars, tokens)
        if not room.fits(*cost):
            continue
        for replaced in freed:  # the memory says what these turns said, in fewer tokens
            del chosen[replaced.id]
            del seen[replaced.id]
        budget.chars, budget.tokens = room.chars, room.tokens
        budget.take(*cost)
        chosen[item.id] = item
        seen[item.id] = grams
        covered.update(item.source_message_ids)
    return list(chosen.values())


def pool_scale(budget: Budget) -> float:
    """How many times the default candidate pools the budget left for memories calls for (1 to MAX_POOL_SCALE).

    The default pools hold about three candidates for every item the default budget takes; a larger budget
    would spend them and stop with room left, so the pools grow with it.
    """
    wanted = [
        room / default
        for room, default in ((budget.tokens, POOL_BUDGET_TOKENS), (budget.chars, POOL_BUDGET_TOKENS * 4))
        if room is not None
    ]
    return min(max(min(wanted, default=MAX_POOL_SCALE), 1.0), MAX_POOL_SCALE)
