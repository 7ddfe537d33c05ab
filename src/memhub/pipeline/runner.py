"""Runs one pipeline job: L1 extraction and dedup, L2 scenes, L3 persona."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from memhub.ids import atomic_id
from memhub.memory.services import MemoryServices
from memhub.pipeline.config import PipelineConfig
from memhub.pipeline.scenes import SceneDraft
from memhub.pipeline.stages import Stages
from memhub.pipeline.types import Candidate, Neighbour, SourceMessage
from memhub.retrieval.tokenize import query_terms
from memhub.scope import Isolation, MemoryScope, ProfileScope
from memhub.store import AtomicFilter, MemoryStore, NewAtomic
from memhub.store.pipeline import Job, L1Outcome, Revision
from memhub.timeutil import now_ms

log = logging.getLogger("memhub.pipeline")
PIPELINE_REQUEST = "pipeline"  # the request id of audit rows the pipeline writes
MAX_PROFILE_MEMORIES = 500


def _source(message: Any) -> SourceMessage:
    return SourceMessage(message.id, message.role, message.content, message.message_ms)


def _profile_isolation(job: Job) -> Isolation:
    scope = job.scope
    return Isolation(
        service_id=scope["service_id"],
        team_id=scope["team_id"],
        agent_id=scope["agent_id"],
        profile_team_id=scope["team_id"],
    )


class PipelineRunner:
    """Executes jobs claimed by the worker."""

    def __init__(self, store: MemoryStore, memory: MemoryServices, stages: Stages, config: PipelineConfig) -> None:
        self.store = store
        self.memory = memory
        self.stages = stages
        self.config = config

    def run(self, job: Job, owner: str) -> None:
        """Run one job to completion; raises on failure (the worker retries or dead-letters it)."""
        if job.kind == "l1":
            self._l1(job, owner)
        elif job.kind == "l2":
            self._l2(job, owner)
        else:
            self._l3(job, owner)

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
        return L1Outcome(new=new, revisions=revisions, skipped=skipped)

    def _l1(self, job: Job, owner: str) -> None:
        s = job.scope
        scope = MemoryScope(s["service_id"], s["team_id"], s["user_id"], s["agent_id"], s["task_id"])
        session_id = s["session_id"]
        batch = self.store.pipeline.l1_batch(scope, session_id, self.config.batch_size, self.config.background)
        if not batch.messages:
            self.store.pipeline.finish(job, owner, now_ms())
            return
        started = time.monotonic()
        candidates = self.stages.extractor.extract(
            [_source(m) for _, m in batch.messages],
            [_source(m) for m in batch.background],
            mode=self.config.mode,
        )
        stamp = now_ms()
        # An LLM call can be slow: keep the lease while deduplicating, so no other worker starts over.
        self.store.pipeline.renew(job, owner, stamp + self.config.lease_ms)
        outcome = self._outcome(scope, session_id, candidates, stamp)
        cursor = batch.messages[-1][0]
        stored = self.store.pipeline.commit_l1(
            job, owner, scope, session_id, cursor, outcome, stamp, self.config.schedule, batch.has_more
        )
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
    def _l2(self, job: Job, owner: str) -> None:
        iso = _profile_isolation(job)
        profile = iso.profile
        memories = self.store.pipeline.profile_memories(profile, MAX_PROFILE_MEMORIES)
        existing = [(d.path, d.summary or "", d.content) for d in self.store.list_documents(profile, "scene")]
        for draft in self.stages.scenes.scenes(memories, existing):
            if draft.deleted:
                self.memory.scenario.remove(iso, [draft.path], PIPELINE_REQUEST)
            else:
                self._write_scene(iso, draft)
        self.store.pipeline.after_l2(job, owner, profile, now_ms(), self.config.persona_every)

    def _write_scene(self, iso: Isolation, draft: SceneDraft) -> None:
        content = f"-----META-START-----\nheat: {draft.heat}\n-----META-END-----\n\n{draft.body}"
        if self.memory.scenario.read(iso, draft.path) is None:
            self.memory.scenario.create(iso, draft.path, content, draft.summary, PIPELINE_REQUEST)
        else:
            self.memory.scenario.write(iso, draft.path, content, draft.summary, PIPELINE_REQUEST)

    def _l3(self, job: Job, owner: str) -> None:
        iso = _profile_isolation(job)
        profile: ProfileScope = iso.profile
        memories = self.store.pipeline.profile_memories(profile, MAX_PROFILE_MEMORIES)
        scenes = [
            SceneDraft(d.path, d.summary or "", d.content, 0, ()) for d in self.store.list_documents(profile, "scene")
        ]
        current = self.memory.core.read(iso).document
        text = self.stages.persona.persona(current.content if current else None, memories, scenes)
        if text.strip():
            self.memory.core.write(iso, text, PIPELINE_REQUEST)
        self.store.pipeline.after_l3(job, owner, profile, now_ms())
