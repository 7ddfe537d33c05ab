"""Runs one pipeline job: L1 extraction and dedup, L2 scenes, L3 persona, and the kinds other services add.

A service whose work rides on the pipeline's durable jobs (skill mining) registers a handler for its job
kind; the pipeline runs it like its own stages, with the same lease, retries and dead-lettering, without
importing that service.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from memhub.formats.injection import looks_like_prompt_injection
from memhub.ids import atomic_id
from memhub.index.tokenize import query_terms
from memhub.memory.core import PERSONA_PATH
from memhub.memory.prompts import MemoryPromptService, prompt_ref
from memhub.memory.services import MemoryServices
from memhub.model import AtomicFilter, NewAtomic
from memhub.model.pipeline import Job, L1Outcome, LeaseLost, Revision
from memhub.model.prompts import PromptLayer, ResolvedPrompt, TokenUsage
from memhub.pipeline.config import PipelineConfig
from memhub.pipeline.generation_log import GenerationLogService
from memhub.pipeline.llm_prompts import CustomPrompt
from memhub.pipeline.quality import trusted
from memhub.pipeline.scenes import SceneDraft
from memhub.pipeline.schedule import persona_due
from memhub.pipeline.stages import Stages
from memhub.pipeline.types import Candidate, Neighbour, SourceMessage
from memhub.scope import Isolation, MemoryScope, ProfileScope
from memhub.store import MemoryStore
from memhub.timeutil import now_ms

log = logging.getLogger("memhub.pipeline")
PIPELINE_REQUEST = "pipeline"  # the request id of audit rows the pipeline writes
MAX_PROFILE_MEMORIES = 500

# Runs one job of an added kind to completion: (job, lease owner). Raising fails the job (retried, then
# dead-lettered, by the exception's `retryable`); returning marks it done.
JobHandler = Callable[[Job, str], None]


def _source(message: Any) -> SourceMessage:
    return SourceMessage(message.id, message.role, message.content, message.message_ms, message.metadata or {})


def _profile_isolation(job: Job) -> Isolation:
    """The profile's owner: an L2/L3 job reads and writes one user's scenes and persona."""
    scope = job.scope
    return Isolation(
        service_id=scope["service_id"],
        team_id=scope["team_id"],
        user_id=scope["user_id"],
        agent_id=scope["agent_id"],
        profile_team_id=scope["team_id"],
    )


@dataclass
class Generation:
    """What one job consumed and produced, for the generation log."""

    inputs: list[tuple[str, str]] = field(default_factory=list)
    outputs: list[tuple[str, str]] = field(default_factory=list)
    prompt: ResolvedPrompt | None = None


class PipelineRunner:
    """Executes jobs claimed by the worker."""

    def __init__(
        self,
        store: MemoryStore,
        memory: MemoryServices,
        stages: Stages,
        config: PipelineConfig,
        prompts: MemoryPromptService | None = None,
        generations: GenerationLogService | None = None,
        handlers: Mapping[str, JobHandler] | None = None,
    ) -> None:
        self.store = store
        self.memory = memory
        self.stages = stages
        self.config = config
        self.prompts = prompts
        self.generations = generations
        self.handlers: dict[str, JobHandler] = dict(handlers or {})

    def run(self, job: Job, owner: str) -> None:
        """Run one job to completion; raises on failure (the worker retries or dead-letters it)."""
        handler = self.handlers.get(job.kind)
        if handler is not None:
            handler(job, owner)
            self.store.pipeline.finish(job, owner, now_ms())
            return
        run = {"l1": self._l1, "l2": self._l2, "l3": self._l3}[job.kind]
        generation = Generation()
        started = time.monotonic()
        try:
            run(job, owner, generation)
        except Exception as exc:
            self._log(job, generation, started, error=f"{type(exc).__name__}: {exc}")
            raise
        self._log(job, generation, started)

    def _custom(self, job: Job, layer: PromptLayer, generation: Generation) -> CustomPrompt | None:
        """The team's or agent's custom strategy for this layer (a custom memory prompt), if any."""
        if self.prompts is None:
            return None
        resolved = self.prompts.resolve(job.service_id, job.scope["team_id"], job.scope["agent_id"], layer)
        if resolved.source == "system" or not resolved.prompt.strip():
            return None
        generation.prompt = resolved
        return CustomPrompt(resolved.prompt, resolved.source, resolved.memory_prompt_id, resolved.version)

    def _log(self, job: Job, generation: Generation, started: float, error: str | None = None) -> None:
        if self.generations is None or (not generation.inputs and error is None):
            return  # nothing was read: an empty batch is not a generation
        usage = getattr(self.stages.extractor if job.kind == "l1" else None, "last_usage", None)
        tokens = TokenUsage(usage.prompt_tokens, usage.completion_tokens) if usage else None
        prompt = generation.prompt
        try:
            self.generations.record(
                job.service_id,
                job.kind,
                "failed" if error else "succeeded",
                scope=job.scope,
                prompt=prompt_ref(prompt, prompt.prompt) if prompt else None,
                input_refs=generation.inputs,
                output_refs=generation.outputs,
                model=self.stages.generator,
                latency_ms=int((time.monotonic() - started) * 1000),
                tokens=tokens,
                error=error,
            )
        except Exception:  # the log is observability: it never fails the job it describes
            log.exception("generation log of job %s not recorded", job.seq)

    # -- L1 ------------------------------------------------------------------------------------
    def _neighbours(self, scope: MemoryScope, candidate: Candidate) -> list[Neighbour]:
        hits = self.store.search_atomic(scope, query_terms(candidate.content), AtomicFilter(), self.config.neighbours)
        return [Neighbour(a.id, a.content, a.type, a.priority, a.updated_ms) for a, _ in hits]

    def _outcome(self, scope: MemoryScope, session_id: str, candidates: Sequence[Candidate], stamp: int) -> L1Outcome:
        neighbours = [self._neighbours(scope, c) for c in candidates]
        decisions = self.stages.deduplicator.decide(candidates, neighbours) if candidates else []
        new: list[NewAtomic] = []
        revisions: list[Revision] = []
        skipped = 0
        for candidate, near, decision in zip(candidates, neighbours, decisions, strict=True):
            metadata = {**candidate.metadata, "generated_by": self.stages.generator}
            # Whichever extractor wrote it, a memory that reads like an order to the agent is flagged, not obeyed.
            if looks_like_prompt_injection(candidate.content):
                metadata["injection_suspect"] = True
            known = {n.id for n in near}
            targets = tuple(t for t in decision.target_ids if t in known)  # never touch what was not offered
            if decision.action == "skip":
                skipped += 1
            elif decision.action in ("update", "merge") and targets:
                revisions.append(
                    Revision(
                        target_id=targets[0],
                        content=decision.content or candidate.content,
                        type=decision.type or candidate.type,
                        priority=decision.priority if decision.priority is not None else candidate.priority,
                        source_message_ids=candidate.source_message_ids,
                        absorbed_ids=targets[1:] if decision.action == "merge" else (),
                        metadata=metadata,
                    )
                )
            else:
                new.append(
                    NewAtomic(
                        id=atomic_id(stamp),
                        type=candidate.type,
                        content=candidate.content,
                        priority=candidate.priority,
                        scene_name=candidate.scene_name,
                        session_id=session_id,
                        created_ms=stamp,
                        source_message_ids=candidate.source_message_ids,
                        metadata=metadata,
                    )
                )
        scenes = [c.scene_name for c in candidates if c.scene_name]
        return L1Outcome(new=new, revisions=revisions, skipped=skipped, last_scene=scenes[-1] if scenes else None)

    def _l1(self, job: Job, owner: str, generation: Generation) -> None:
        s = job.scope
        scope = MemoryScope(s["service_id"], s["team_id"], s["user_id"], s["agent_id"], s["task_id"])
        session_id = s["session_id"]
        batch = self.store.pipeline.l1_batch(scope, session_id, self.config.batch_size, self.config.background)
        if not batch.messages:
            self.store.pipeline.finish(job, owner, now_ms())
            return
        started = time.monotonic()
        generation.inputs = [("l0", m.id) for _, m in batch.messages]
        candidates = self.stages.extractor.extract(
            [_source(m) for _, m in batch.messages],
            [_source(m) for m in batch.background],
            previous_scene=batch.previous_scene,
            mode=self.config.mode,
            custom_prompt=self._custom(job, "l1", generation),
        )
        stamp = now_ms()
        # An LLM call can be slow: keep the lease while deduplicating, so no other worker starts over.
        self.store.pipeline.renew(job, owner, stamp + self.config.lease_ms)
        outcome = self._outcome(scope, session_id, candidates, stamp)
        cursor = batch.messages[-1][0]
        stored = self.store.pipeline.commit_l1(
            job, owner, scope, session_id, cursor, outcome, stamp, self.config.schedule, batch.has_more
        )
        generation.outputs = [("l1", a.id) for a in stored]
        log.info(
            "L1 %s: %d messages -> %d new, %d revised, %d skipped in %.0f ms",
            job.target,
            len(batch.messages),
            len(outcome.new),
            len(outcome.revisions),
            outcome.skipped,
            (time.monotonic() - started) * 1000,
        )
        if stored and self.memory.atomic.embedding is not None:
            self.memory.atomic.embedding.nudge()

    # -- L2 / L3 ---------------------------------------------------------------------------------
    def _still_leased(self, job: Job, owner: str) -> None:
        """Raise LeaseLost unless the job is still this worker's."""
        # Scenes and the persona are written before the job finishes, outside its commit: a chat-memory
        # clear during a slow generation settles the job, and its stale output must not land afterwards.
        if not self.store.pipeline.renew(job, owner, now_ms() + self.config.lease_ms):
            raise LeaseLost(f"job {job.seq} is no longer leased to {owner}")

    def _l2(self, job: Job, owner: str, generation: Generation) -> None:
        iso = _profile_isolation(job)
        profile = iso.profile
        memories = trusted(self.store.pipeline.profile_memories(profile, MAX_PROFILE_MEMORIES))
        existing = [(d.path, d.summary or "", d.content) for d in self.store.list_documents(profile, "scene")]
        changed = trusted(self.store.pipeline.changed_memories(profile, MAX_PROFILE_MEMORIES))
        generation.inputs = [("l1", m.id) for m in changed]
        drafts = self.stages.scenes.scenes(memories, existing, self._custom(job, "l2", generation), changed)
        generation.outputs = [("l2", d.path) for d in drafts if not d.deleted]
        self._still_leased(job, owner)
        for draft in drafts:
            if draft.deleted:
                self.memory.scenario.remove(iso, [draft.path], PIPELINE_REQUEST)
            else:
                self._write_scene(iso, draft)
        persona = partial(persona_due, every=self.config.persona_every)
        self.store.pipeline.after_l2(job, owner, profile, now_ms(), persona)

    def _write_scene(self, iso: Isolation, draft: SceneDraft) -> None:
        content = f"-----META-START-----\nheat: {draft.heat}\n-----META-END-----\n\n{draft.body}"
        if self.memory.scenario.read(iso, draft.path) is None:
            self.memory.scenario.create(iso, draft.path, content, draft.summary, PIPELINE_REQUEST)
        else:
            self.memory.scenario.write(iso, draft.path, content, draft.summary, PIPELINE_REQUEST)

    def _l3(self, job: Job, owner: str, generation: Generation) -> None:
        iso = _profile_isolation(job)
        profile: ProfileScope = iso.profile
        memories = trusted(self.store.pipeline.profile_memories(profile, MAX_PROFILE_MEMORIES))
        scenes = [
            SceneDraft(d.path, d.summary or "", d.content, 0, ()) for d in self.store.list_documents(profile, "scene")
        ]
        current = self.memory.core.read(iso).document
        generation.inputs = [("l2", s.path) for s in scenes] + [("l1", m.id) for m in memories]
        custom = self._custom(job, "l3", generation)
        text = self.stages.persona.persona(current.content if current else None, memories, scenes, custom)
        if text.strip():
            self._still_leased(job, owner)
            self.memory.core.write(iso, text, PIPELINE_REQUEST)
            generation.outputs = [("l3", PERSONA_PATH)]
        self.store.pipeline.after_l3(job, owner, profile, now_ms())
