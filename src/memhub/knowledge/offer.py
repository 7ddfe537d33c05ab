"""Which knowledge resources to offer an agent, rendered as the `<knowledge_tools>` block.

Resources: an agent's bound knowledge assets (fixed assets of a registered kind's asset type, `llm_wiki` /
`code_graph`, that are not archived, deprecated or failed) when the agent has any, otherwise every registered
resource of the team, ordered by id so the block is byte-stable. The user's capability flags (`asset_type.<asset
type>.enabled`) filter them. The reference capped the per-agent list at
20 silently; here the whole list is read.

The block tells agents to send their user key to each resource's URL, so a resource whose URL is not on a
trusted origin (this gateway's public URL or the operator's allow-list) is never offered, whatever the
registry holds: the registry refuses such URLs, and rows written before that rule, or by hand, are left out
here with a warning. An offered URL is shown in its canonical form (`memhub.meta.origins.canonical_url`), whatever
form an older row holds, and a row with no canonical form (a query, an `@` in the path) is left out the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memhub.errors import BadRequest, Forbidden
from memhub.knowledge.kinds import REGISTRY_ASSET_TYPES, REGISTRY_KINDS
from memhub.knowledge.tools_block import (
    KnowledgeResource,
    Language,
    cache_key,
    filter_by_capabilities,
    render_knowledge_tools,
)
from memhub.meta.access import refuse_archived
from memhub.meta.caller import Caller
from memhub.meta.config import ConfigParams
from memhub.meta.guards import membership
from memhub.meta.origins import NO_ORIGINS, KnowledgeOrigins, canonical_url
from memhub.model.meta import MetaKind
from memhub.store.meta import MetaStore

log = logging.getLogger("memhub.knowledge")

# Skills are bound as assets too, but never offered here (they have <available_skills>): a skill binding must
# neither show in the block nor count as a knowledge binding that narrows it.
KNOWLEDGE_ASSET_TYPES = REGISTRY_ASSET_TYPES
UNUSABLE_ASSET_STATUSES = ("archived", "deprecated", "failed")
CREDENTIAL_ENV = "MEMHUB_USER_KEY"


@dataclass(frozen=True, slots=True)
class KnowledgeOffer:
    """Builds the block from the registry, the agent's bindings and the user's flags."""

    store: MetaStore
    config: ConfigParams
    credential_env: str | None = CREDENTIAL_ENV
    public_url: str | None = None  # where this server's own wikis are reached
    origins: KnowledgeOrigins = NO_ORIGINS  # where an offered resource may live

    def resources(self, caller: Caller, team_id: str, agent_id: str | None) -> list[KnowledgeResource]:
        """The team's (or the agent's) registered resources, ordered by id."""
        with self.store.reading(caller.service_id) as r:
            gated = caller.user_id is not None and not caller.is_system_admin
            if gated and membership(r, team_id, caller.user_id or "") is None:
                raise Forbidden(f"team_id: the caller is not a member of team {team_id}")
            if agent_id:
                refuse_archived(r, agent_id)  # an archived agent is offered nothing, not the whole team's list
            where: dict[str, Any] = {"team_id": team_id}
            bound = (
                r.find(MetaKind.FIXED_ASSET, {"agent_id": agent_id, "asset_type": list(KNOWLEDGE_ASSET_TYPES)})
                if agent_id
                else []
            )
            if bound:
                # An agent with knowledge bindings gets exactly those that are usable (maybe none), never the
                # whole team's: an archived binding must not widen what the agent is offered.
                assets = r.find(
                    MetaKind.ASSET,
                    {"asset_id": [b["asset_id"] for b in bound], "status !=": list(UNUSABLE_ASSET_STATUSES)},
                )
                where["knowledge_id"] = [a["asset_id"] for a in assets]
            rows = r.find(MetaKind.KNOWLEDGE, where, order_by=("knowledge_id",))
            # Resources served here are reached at this server's current public URL, whatever URL was current
            # when they were registered (a restart on another address must not strand agents).
            ids = [x["knowledge_id"] for x in rows]
            tables = [(k.meta_kind, k.id_field) for k in REGISTRY_KINDS if k.meta_kind is not None]
            local = {x[field] for table, field in tables for x in r.find(table, {field: ids})}
        out: list[KnowledgeResource] = []
        for row in rows:
            url = self.public_url if row["knowledge_id"] in local and self.public_url else row["service_url"]
            if not self.origins.allows(url):
                log.warning(
                    "knowledge %s of team %s is not offered: its url %r is not on a trusted origin",
                    row["knowledge_id"],
                    team_id,
                    url,
                )
                continue
            try:
                url = canonical_url(url)
            except ValueError as exc:
                log.warning(
                    "knowledge %s of team %s is not offered: its url %r %s", row["knowledge_id"], team_id, url, exc
                )
                continue
            try:
                out.append(
                    KnowledgeResource(
                        type=row["type"],
                        id=row["knowledge_id"],
                        url=url,
                        name=row["name"],
                        summary=row["summary"],
                        repo_url=row["repo_url"],
                        branch=row["branch"],
                    )
                )
            except ValueError:
                # A registration the prompt cannot carry safely (an id or URL with quotes, spaces …) is left out.
                log.warning("knowledge %s is not offered: its id or url cannot be rendered", row["knowledge_id"])
        return out

    def block(
        self,
        caller: Caller,
        team_id: str,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        language: Language = "en",
        telemetry: Mapping[str, str] | None = None,
        capabilities: Mapping[str, bool] | None = None,
    ) -> dict[str, Any]:
        """`{text, resources, cache_key, chars}`; `text` is "" when nothing is offered.

        `capabilities` replaces the user's configured asset-type flags (the composer passes the flags in effect
        for one turn, which a request may narrow).
        """
        user = caller.user_id or user_id
        if capabilities is not None:
            flags = dict(capabilities)
        else:
            flags = {t: self.config.asset_type_enabled(caller.service_id, user, t) for t in KNOWLEDGE_ASSET_TYPES}
        resources = self.resources(caller, team_id, agent_id)
        headers = {
            **{k: v for k, v in (telemetry or {}).items() if v},
            "x-tdai-service-id": caller.service_id,
            "x-tdai-team-id": team_id,
        }
        if user:
            headers["x-tdai-user-id"] = user
        if agent_id:
            headers["x-tdai-agent-id"] = agent_id
        try:
            text = render_knowledge_tools(
                resources,
                capabilities=flags,
                headers=headers,
                language=language,
                credential_env=self.credential_env,
                origins=self.origins,
            )
        except ValueError as exc:
            raise BadRequest(f"x-tdai-service-id: {exc}") from None
        offered = [r.id for r in filter_by_capabilities(resources, flags)]
        return {"text": text, "resources": offered, "cache_key": cache_key(agent_id, team_id), "chars": len(text)}
