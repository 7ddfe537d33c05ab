"""An agent's own offload switch: `{"memhub": {"offload": "on" | "off"}}` in the agent's `metadata_json`.

The agent's owner turns context offload on (or off) for every session of that agent, whatever the server's
default; a request's `x-memhub-offload` header still decides for itself. Agent creation and update refuse any
other value (memhub.meta.agents), so a switch read here is one of the two, or absent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memhub.meta.agents import Agents
from memhub.meta.errors import MetaError
from memhub.proxy.injection.sources import caller_of
from memhub.proxy.model import ProxyIdentity

SWITCH_VALUES = {"on": True, "off": False}


def metadata_switch(metadata_json: Any) -> bool | None:
    """The offload switch an agent's metadata sets (None when it sets none)."""
    try:
        metadata = json.loads(metadata_json) if isinstance(metadata_json, str) else metadata_json
    except ValueError:
        return None
    ours = metadata.get("memhub") if isinstance(metadata, Mapping) else None
    value = ours.get("offload") if isinstance(ours, Mapping) else None
    return SWITCH_VALUES.get(value) if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class AgentOffloadSwitch:
    """Reads the session's agent as the user may see it (an agent the user may not see sets nothing)."""

    agents: Agents

    def __call__(self, identity: ProxyIdentity) -> bool | None:
        try:
            row = self.agents.get(caller_of(identity), identity.agent_id or "")
        except MetaError:
            return None
        return metadata_switch(row.get("metadata_json"))
