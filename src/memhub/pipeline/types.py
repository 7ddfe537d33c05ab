"""What flows between the pipeline's stages: source messages in, candidate memories and decisions out.

Extractors (offline rules or an LLM) and deduplicators share these shapes, so the job that writes
L1 does not care which produced them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

PromptMode = Literal["chat", "code"]
Action = Literal["store", "skip", "update", "merge"]


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """One L0 message as an extractor sees it."""

    id: str
    role: str  # "user" | "assistant"
    content: str
    time_ms: int  # when it was said (message time)
    metadata: Mapping[str, Any] = field(default_factory=dict)  # the L0 message's metadata (e.g. `speaker`)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory an extractor proposes; nothing is stored until a decision says so."""

    content: str
    type: str  # persona | episodic | instruction (chat); work_fact | work_task | work_method | work_artifact (code)
    priority: int  # 0..100; -1 marks an absolute, global instruction
    source_message_ids: tuple[str, ...]
    scene_name: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An existing L1 memory close to a candidate (same scope), offered to the deduplicator."""

    id: str
    content: str
    type: str
    priority: int
    time_ms: int


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one candidate.

    store: keep it as a new memory; skip: drop it (already known); update: it supersedes
    `target_ids[0]`; merge: it and the targets become one memory (`content`/`type`/`priority`
    give the merged memory; None keeps the candidate's).
    """

    action: Action
    target_ids: tuple[str, ...] = ()
    content: str | None = None
    type: str | None = None
    priority: int | None = None


class Extractor(Protocol):
    """Turns a batch of new messages (with older ones as background) into candidate memories."""

    def extract(
        self,
        batch: Sequence[SourceMessage],
        background: Sequence[SourceMessage],
        *,
        previous_scene: str | None = None,
        mode: PromptMode = "chat",
        custom_prompt: str | None = None,
    ) -> list[Candidate]:
        """Candidates in the user's language; raises PipelineError or the LLM client's LLMError (each retryable
        or not) on failure."""


class Deduplicator(Protocol):
    """Decides, for each candidate, against its nearest existing memories."""

    def decide(self, candidates: Sequence[Candidate], neighbours: Sequence[Sequence[Neighbour]]) -> list[Decision]:
        """One decision per candidate, in order."""


class PipelineError(Exception):
    """A stage failed; `retryable` says whether the job should be tried again later.

    The LLM client's `LLMError` is not one (the client knows nothing of the pipeline) but carries the same
    `retryable`; the worker reads that attribute from whatever a job raises.
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable
