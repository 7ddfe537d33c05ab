"""The integration kit's knobs: deadlines, prompt budgets, capture queue and circuit breaker."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from memhub.sdk._errors import ParamError

# The gateway's own limits (a query over 2,048 characters or a message over 8,192 is a 400), so the kit
# trims to them instead of letting a long prompt turn into an error.
SERVER_MAX_QUERY_CHARS = 2048
SERVER_MAX_CONTENT_CHARS = 8192
SERVER_MAX_BATCH = 100
SERVER_MAX_SEARCH_LIMIT = 100
# `POST /v3/recall` takes at most this many recent turns as context.
SERVER_MAX_RECALL_MESSAGES = 20
SERVER_MAX_RECALL_TOKENS = 32_000
SERVER_MAX_RECALL_CHARS = 128_000
# `POST /v3/skill/listing` renders within at most this many characters.
SERVER_MAX_LISTING_CHARS = 64_000
# The gateway refuses bodies over 1 MiB; batches stay under this many bytes of messages, leaving room
# for the isolation fields and the JSON around them.
SERVER_MAX_BATCH_BYTES = 960 * 1024


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """How recall, capture and the tools behave; every field has a production-safe default."""

    # recall (the original's budget: three paths in parallel, 200 ms in total, late paths dropped)
    recall_deadline: float = 0.2
    max_memories: int = 5
    max_memory_chars: int = 500
    max_prepend_chars: int = 4000
    # Estimated tokens (one per CJK character, one per four other characters): for Chinese memories the
    # character budget alone would allow about four times the tokens it allows for English.
    max_prepend_tokens: int = 1000
    max_persona_chars: int = 4000
    max_scenes: int = 40
    include_persona: bool = True
    include_scene_nav: bool = True
    # Recall is one call (POST /v3/recall) where the gateway has it. A gateway that answers 404 for it (the
    # original, an older memhub) gets the three separate calls instead, and is asked again after this many
    # recalls, so an upgraded gateway is picked up without costing a failed call every turn.
    recall_reprobe_after: int = 50
    language: Literal["en", "zh"] = "en"
    # A fourth recall path: the gateway's runtime-context composer (POST /v3/context/compose: team and
    # agent knowledge, skills, the conversation excerpt). Off by default: it needs wikis to say anything.
    compose_context: bool = False
    # Skills, both off by default. `skills_listing`: recall adds the gateway's `<available_skills>` block
    # (POST /v3/skill/listing, ranked for the user's message) to the system prompt, within this many characters.
    # `skills_capture`: each captured turn, tool calls and results included, also goes to skill mining
    # (POST /v3/skill/conversation/add).
    skills_listing: bool = False
    skills_char_budget: int = 2000
    skills_capture: bool = False
    # capture
    capture_enabled: bool = True
    capture_queue_size: int = 1024
    capture_max_attempts: int = 8
    capture_backoff: float = 0.5
    capture_backoff_max: float = 30.0
    # tools
    tool_timeout: float = 5.0
    max_searches_per_turn: int = 3
    max_tool_chars: int = 8000
    # degradation: this many consecutive gateway failures open the breaker for `breaker_cooldown` seconds
    breaker_threshold: int = 5
    breaker_cooldown: float = 30.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or f.name == "language":
                continue
            if not isinstance(value, int | float) or value <= 0:
                raise ParamError(f"AgentConfig.{f.name}: must be a positive number (got {value!r})")
        if self.language not in ("en", "zh"):
            raise ParamError(f"AgentConfig.language: must be 'en' or 'zh' (got {self.language!r})")
        if self.max_memories > SERVER_MAX_SEARCH_LIMIT:
            raise ParamError("AgentConfig.max_memories: must be at most 100 (the gateway's search limit)")
        if self.skills_char_budget > SERVER_MAX_LISTING_CHARS:
            raise ParamError("AgentConfig.skills_char_budget: must be at most 64000 (the gateway's listing limit)")
        if self.capture_backoff > self.capture_backoff_max:
            raise ParamError("AgentConfig.capture_backoff: must not exceed capture_backoff_max")


# What the kit's scene index costs per listed path (`- `scene_blocks/….md``), in the recall budget.
SCENE_LINE_TOKENS = 12
SCENE_LINE_CHARS = 48


def recall_budget(config: AgentConfig) -> dict[str, int]:
    """The `/v3/recall` budget for this configuration: the prepend's, plus room for the persona and scene index.

    The gateway packs the persona, the scene index and the memories into one budget (the persona at most a
    quarter of it, the scene index a tenth); the kit puts the persona and the scenes in the system prompt under
    their own caps, so it asks for the prepend's budget plus theirs. Memories beyond the prepend's budget are
    then cut by the prepend.
    """
    persona_chars = config.max_persona_chars if config.include_persona else 0
    scenes = config.max_scenes if config.include_scene_nav else 0
    tokens = config.max_prepend_tokens + (persona_chars + 3) // 4 + scenes * SCENE_LINE_TOKENS
    chars = config.max_prepend_chars + persona_chars + scenes * SCENE_LINE_CHARS
    return {
        "max_tokens": max(1, min(tokens, SERVER_MAX_RECALL_TOKENS)),
        "max_chars": max(1, min(chars, SERVER_MAX_RECALL_CHARS)),
    }
