"""Pipeline knobs (the original's defaults), built from settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from memhub.pipeline.schedule import Retry, Schedule
from memhub.pipeline.types import PromptMode


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """How often each stage runs, how much it reads, and how failures are retried."""

    schedule: Schedule = field(default_factory=Schedule)
    mode: PromptMode = "chat"
    batch_size: int = 10  # new messages per L1 extraction call
    background: int = 5  # older messages given as context
    neighbours: int = 5  # existing memories offered to the deduplicator per candidate
    persona_every: int = 50  # L3 after this many new or changed memories
    max_scenes: int = 15
    max_attempts: int = 5  # then the job is dead-lettered (visible, replayable)
    backoff_ms: int = 2_000  # first retry delay; doubles per attempt
    max_backoff_ms: int = 300_000
    lease_ms: int = 300_000  # a crashed worker's job is taken over after this
    poll_ms: int = 500
    claim_limit: int = 4

    @property
    def retry(self) -> Retry:
        """How failed jobs are retried."""
        return Retry(self.max_attempts, self.backoff_ms, self.max_backoff_ms)
