"""Mining one archive of agent work for skills: the pipeline's handler for jobs of kind `skill`.

With a model configured, the review agent reads the archive and changes the agent's skills through the skill
service, for the user whose work it is: new skills are active, as the original's, when that user reviews the
agent's skills (its owner, a team admin), and drafts otherwise, like anything else she writes. Without one, the
offline miner looks for a sequence of at least three successful tool calls that the agent also made in another
recent archive and writes it down as a `candidate` skill: a draft no listing offers to agents until someone
publishes it. A sequence already written down is not written twice: its candidate is updated with how often it
was seen, and a published skill of the same steps is left alone.

The job is the unit of retry: a failure of the model or the store raises, and the pipeline retries the job
later and dead-letters it after its last attempt, with the archive kept for a replay.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from memhub.knowledge.skill.access import SkillIds
from memhub.knowledge.skill.errors import SkillNameDuplicate
from memhub.knowledge.skill.mining.draft import MINED_KEY, draft_from, skill_name, steps_signature
from memhub.knowledge.skill.mining.review import DEFAULT_MAX_ITERATIONS, ReviewAgent, format_transcript, review_prompt
from memhub.knowledge.skill.mining.review_tools import SkillTools
from memhub.knowledge.skill.mining.trace import Recurrence, find_recurrence, successful_calls
from memhub.knowledge.skill.search import SkillSearch
from memhub.knowledge.skill.service import SkillService
from memhub.llm.client import ChatClient
from memhub.meta.caller import Caller
from memhub.model.pipeline import Job, LeaseLost
from memhub.model.skills import Archive, SkillFilter, SkillVersion
from memhub.store import MemoryStore
from memhub.timeutil import now_ms

log = logging.getLogger("memhub.skills.mining")

MINER_REQUEST = "skill-miner"  # the request id the miner's writes carry
NAME_ATTEMPTS = 5  # `name`, `name-2` … when another skill holds the derived name


@dataclass(frozen=True, slots=True)
class MinerConfig:
    """How much the miner reads and how long the review may run."""

    max_iterations: int = DEFAULT_MAX_ITERATIONS  # model calls per review (an archive may ask for fewer or more)
    prefetch: int = 20  # of the agent's skills shown to the model up front
    recent_archives: int = 20  # the agent's archives the offline miner compares with
    min_steps: int = 3  # the shortest tool-call sequence worth a draft
    lease_ms: int = 300_000  # the job's lease is renewed for this long before each model call


class SkillMiner:
    """Runs `skill` jobs: `miner(job, owner)` mines the job's archive."""

    def __init__(
        self, store: MemoryStore, service: SkillService, client: ChatClient | None, config: MinerConfig | None = None
    ) -> None:
        self.store = store
        self.service = service
        self.config = config or MinerConfig()
        self.agent = ReviewAgent(client, self.config.max_iterations) if client is not None else None
        self.ranker = SkillSearch(service.skills)  # the review agent's skill_list query (BM25: no query vectors here)

    def __call__(self, job: Job, owner: str) -> None:
        archive = self.store.skills.archive(job.service_id, job.target)
        if archive is None:
            log.warning("skill job %s: archive %s is gone; nothing to mine", job.seq, job.target)
            return
        caller = Caller(service_id=archive.service_id, request_id=MINER_REQUEST)
        # As the tenant, narrowed to the archive's team and agent: every write is a skill that agent owns. The
        # review agent writes for the user whose work it read, so its versions are that user's: drafts unless
        # she reviews the agent's skills. The offline miner's drafts are its own (no user).
        ids = SkillIds(team_id=archive.team_id, agent_id=archive.agent_id)
        if self.agent is not None:
            self._review(
                job,
                owner,
                archive,
                SkillTools(self.service, caller, replace(ids, user_id=archive.user_id), self.ranker),
            )
        else:
            self._offline(archive, caller, ids)

    # -- with a model ------------------------------------------------------------------------------------------
    def _review(self, job: Job, owner: str, archive: Archive, tools: SkillTools) -> None:
        assert self.agent is not None
        existing, total = tools.listing(self.config.prefetch)
        prompt = review_prompt(format_transcript(archive.messages), existing, total, archive.note)

        def keep_lease() -> None:
            if not self.store.pipeline.renew(job, owner, now_ms() + self.config.lease_ms):
                raise LeaseLost(f"skill job {job.seq} is no longer leased to {owner}")

        outcome = self.agent.review(prompt, tools, archive.max_iterations, heartbeat=keep_lease)
        log.info(
            "skill review of %s: %s (%d writes: %s)",
            archive.archive_id,
            outcome.summary or "no summary",
            len(tools.written),
            ", ".join(f"{t} {s} v{v}" for t, s, v in tools.written) or "none",
        )

    # -- without a model ---------------------------------------------------------------------------------------
    def _offline(self, archive: Archive, caller: Caller, ids: SkillIds) -> None:
        calls = successful_calls(archive.messages)
        if len(calls) < self.config.min_steps:
            return
        recent = self.store.skills.recent_archives(
            archive.service_id, archive.team_id, archive.agent_id, self.config.recent_archives + 1
        )
        others = [
            (a.archive_id, [c.step for c in successful_calls(a.messages)])
            for a in recent
            if a.archive_id != archive.archive_id
        ]
        found = find_recurrence(archive.archive_id, calls, others, self.config.min_steps)
        if found is None:
            return
        known = self._mined(archive, steps_signature(found.steps))
        if known is None:
            self._create_candidate(found, caller, ids)
        elif known.status == "candidate":
            self._seen_again(found, known, caller, ids)
        else:
            log.info("offline miner: %s already holds these steps (%s)", known.skill_id, known.status)

    def _mined(self, archive: Archive, signature: str) -> SkillVersion | None:
        """The agent's live skill or candidate the offline miner wrote for these steps, if any."""
        flt = SkillFilter(team_id=archive.team_id, owner_agent_ids=[archive.agent_id], statuses=("active", "candidate"))
        offset, page = 0, 200
        while True:
            heads, total = self.store.skills.list_heads(archive.service_id, flt, page, offset)
            for head in heads:
                mined = head.metadata.get(MINED_KEY) if isinstance(head.metadata, Mapping) else None
                if isinstance(mined, Mapping) and mined.get("signature") == signature:
                    return head
            offset += page
            if not heads or offset >= total:
                return None

    def _create_candidate(self, found: Recurrence, caller: Caller, ids: SkillIds) -> None:
        for attempt in range(1, NAME_ATTEMPTS + 1):
            draft = draft_from(found, skill_name(found.steps, attempt))
            try:
                created: dict[str, Any] = self.service.create(
                    caller, ids, draft.name, draft.content, metadata=draft.metadata, status="candidate"
                )
            except SkillNameDuplicate:
                continue  # another skill of the agent has this name: try the next suffix
            log.info("offline miner: candidate %s (%s) from %s", created["skill_id"], draft.name, found.archive_ids)
            return
        log.warning("offline miner: no free name for %s", skill_name(found.steps))

    def _seen_again(self, found: Recurrence, head: SkillVersion, caller: Caller, ids: SkillIds) -> None:
        mined = head.metadata.get(MINED_KEY, {})
        known = set(mined.get("archives", [])) if isinstance(mined, Mapping) else set()
        if set(found.archive_ids) <= known:
            return  # a retried job, or no archive the draft has not counted yet
        draft = draft_from(found, head.name, previous=head.metadata)
        self.service.update(caller, ids, head.skill_id, head.version, draft.content, metadata=draft.metadata)
        log.info("offline miner: candidate %s seen again (%s)", head.skill_id, draft.metadata[MINED_KEY]["seen"])
