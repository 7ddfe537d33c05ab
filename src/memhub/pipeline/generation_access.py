"""Which memory-generation-log records a caller may read (/v3/memory-generation-log/list|get).

The original shows every generation of an instance to any key: prompt ids, user ids and the records
each run read and wrote. Here, as for the pipeline's own jobs and by analogy with memory prompts
(memhub.memory.prompt_access):

- the gateway key and a system admin read every generation of the tenant;
- a user key reads the L1 generations of the request's own (team, user, agent, task) scope and the
  L2/L3 generations of its (team, agent, user) profile, i.e. of the isolation the data plane authorized;
- a team admin (a team's owner is one), who manages the team's prompts, also reads every generation
  of the teams they administer through the agents they may use (not another member's private agent).

The result narrows the store's queries; a record outside it does not exist for the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from memhub.meta.agents import agent_visible
from memhub.meta.caller import Caller
from memhub.meta.guards import ACTIVE
from memhub.model.meta import MetaKind
from memhub.model.prompts import GenerationScope
from memhub.scope import Isolation
from memhub.store.meta import MetaReader, MetaStore


@dataclass(frozen=True, slots=True)
class GenerationAccess:
    """Works out a caller's GenerationScope from the management plane."""

    store: MetaStore

    def visible(self, caller: Caller, isolation: Isolation) -> GenerationScope | None:
        """What the caller reads, given the isolation the data plane authorized for it; None: everything."""
        if caller.is_instance_admin:
            return None
        user_id = caller.user_id
        assert user_id is not None
        with self.store.reading(caller.service_id) as r:
            admin_of = sorted(
                m["team_id"] for m in r.find(MetaKind.MEMBER, {"user_id": user_id, "status": ACTIVE, "role": "admin"})
            )
            team_agents = tuple((team_id, _usable_agents(r, team_id, user_id)) for team_id in admin_of)
        return GenerationScope((isolation.memory,), (isolation.profile,), team_agents)


def _usable_agents(r: MetaReader, team_id: str, user_id: str) -> tuple[str, ...]:
    """The team's agents the user may see and act through, as the data plane decides it."""
    agents = r.find(MetaKind.AGENT, {"team_id": team_id})
    return tuple(sorted(a["agent_id"] for a in agents if agent_visible(r, a, user_id)))
