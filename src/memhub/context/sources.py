"""Which wikis feed which block of a turn: workspace, agent and system knowledge.

memhub keeps every wiki in a team, so the original agent platform's three knowledge layers map onto bindings:
- agent knowledge: the team's wikis bound to the agent as `llm_wiki` fixed assets whose asset is usable
  (not archived, deprecated or failed) and bindable to that agent, in binding priority order;
- workspace knowledge: the team's wikis that no agent has bound — a wiki bound to an agent is that agent's
  knowledge base, so one agent's specialised wiki never leaks into another agent's workspace block;
- system (help) knowledge: the wikis of the reserved team `__system__` of the tenant. Only the gateway key can
  create wikis there (no user can be a member of a team that does not exist), and every caller of the tenant
  may read them in help mode: they are the product's help documents, like the original's `help/` tree.

A wiki that never built has nothing to serve; it is left out with a warning instead of failing the turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from memhub.errors import ServiceUnavailable
from memhub.knowledge.access import visible
from memhub.knowledge.wiki.service import WikiService
from memhub.knowledge.wiki.snapshot import WikiSnapshot
from memhub.meta.caller import Caller
from memhub.meta.permissions import UNUSABLE_STATUSES, can_bind
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader

SYSTEM_TEAM = "__system__"
WIKI_ASSET = "llm_wiki"
HELP_NOT_READY = "help_docs_unavailable: Help documents are not ready"


@dataclass(frozen=True, slots=True)
class Shelf:
    """One built wiki the turn may read: its id, its name and the generation to read from."""

    knowledge_id: str
    name: str
    snapshot: WikiSnapshot


@dataclass(frozen=True, slots=True)
class Shelves:
    """The workspace and agent wikis of one turn, and why any was left out."""

    workspace: tuple[Shelf, ...] = ()
    agent: tuple[Shelf, ...] = ()
    warnings: tuple[str, ...] = ()


def _agent_wiki_ids(r: MetaReader, agent_id: str | None, team_wikis: dict[str, Row]) -> list[str]:
    """Ids of the team's wikis usable as this agent's knowledge, highest binding priority first."""
    if not agent_id:
        return []
    bindings = r.find(
        MetaKind.FIXED_ASSET,
        {"agent_id": agent_id, "asset_type": WIKI_ASSET},
        order_by=("-priority", "created_at", "asset_id"),
    )
    assets = {a["asset_id"]: a for a in r.find(MetaKind.ASSET, {"asset_id": [b["asset_id"] for b in bindings]})}
    agent = r.get(MetaKind.AGENT, agent_id)
    out: list[str] = []
    for binding in bindings:
        asset = assets.get(binding["asset_id"])
        if asset is None or asset["status"] in UNUSABLE_STATUSES or binding["asset_id"] not in team_wikis:
            continue
        # The same rule the reference's visibility filter applies to an agent's bound assets.
        if agent is not None and not can_bind(agent, asset):
            continue
        out.append(binding["asset_id"])
    return list(dict.fromkeys(out))


def _shelf(wikis: WikiService, service_id: str, row: Row, warnings: list[str]) -> Shelf | None:
    snapshot = wikis.snapshot_of(service_id, row)
    if snapshot is None:
        warnings.append(f"wiki {row['wiki_id']} ({row['name']}) has no built index yet; left out")
        return None
    return Shelf(row["wiki_id"], row["name"], snapshot)


def team_shelves(wikis: WikiService, caller: Caller, team_id: str, agent_id: str | None) -> Shelves:
    """The team's workspace wikis (unbound, by name) and the agent's wikis (by binding priority)."""
    with wikis.store.reading(caller.service_id) as r:
        rows = r.find(MetaKind.WIKI, {"team_id": team_id}, order_by=("name", "wiki_id"))
        # Defence in depth: the caller was authorized for the team, and every row is checked again.
        team_wikis = {row["wiki_id"]: row for row in rows if visible(r, caller, row)}
        agent_ids = _agent_wiki_ids(r, agent_id, team_wikis)
        bound = {
            b["asset_id"]
            for b in r.find(MetaKind.FIXED_ASSET, {"asset_id": list(team_wikis), "asset_type": WIKI_ASSET})
        }
    warnings: list[str] = []
    workspace = [_shelf(wikis, caller.service_id, row, warnings) for wid, row in team_wikis.items() if wid not in bound]
    agent = [_shelf(wikis, caller.service_id, team_wikis[wid], warnings) for wid in agent_ids]
    return Shelves(
        tuple(s for s in workspace if s is not None), tuple(s for s in agent if s is not None), tuple(warnings)
    )


def system_shelves(wikis: WikiService, service_id: str) -> tuple[Shelf, ...]:
    """The tenant's system knowledge wikis that have an index; 503 `help_docs_unavailable` when there are none."""
    with wikis.store.reading(service_id) as r:
        rows = r.find(MetaKind.WIKI, {"team_id": SYSTEM_TEAM}, order_by=("name", "wiki_id"))
    shelves = [s for row in rows if (s := _shelf(wikis, service_id, row, [])) is not None]
    if not shelves:
        why = "no wiki has been built in the reserved team __system__" if not rows else "no system wiki has an index"
        raise ServiceUnavailable(f"{HELP_NOT_READY} ({why})", data={"error": "help_docs_unavailable"})
    return tuple(shelves)
