"""A skill as a meta asset: registered private and bound to its owner agent at create, removed at delete.

As the original's ensureSkillAsset: asset_id = skill_id, type `skill`, owned by the agent's owner, visibility
`private`, bound to the agent with injection mode `reference` and priority 50. Sharing it further is the
management plane's (asset/update visibility, ACL grants, fixed-asset bindings).
"""

from __future__ import annotations

from memhub.meta.assets import bind_asset, insert_auto_asset
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader, MetaWriter

SKILL_ASSET = "skill"
SKILL_INJECTION_MODE = "reference"
SKILL_PRIORITY = 50


def asset_id_taken(r: MetaReader, skill_id: str) -> bool:
    """Whether an asset already has this id (a new skill's id must be free as an asset id too)."""
    return r.get(MetaKind.ASSET, skill_id) is not None


def register_skill_asset(w: MetaWriter, agent: Row, skill_id: str, name: str) -> Row:
    """The skill's asset and its binding to the owner agent (inside the caller's transaction)."""
    asset = insert_auto_asset(w, agent, skill_id, SKILL_ASSET, name, source_type="extracted", visibility="private")
    bind_asset(
        w,
        agent["agent_id"],
        skill_id,
        SKILL_ASSET,
        injection_mode=SKILL_INJECTION_MODE,
        priority=SKILL_PRIORITY,
        created_by=agent["owner_user_id"],
    )
    return asset


def remove_skill_asset(w: MetaWriter, skill_id: str) -> None:
    """The skill's asset with every binding to it and its ACL entries."""
    w.delete(MetaKind.FIXED_ASSET, {"asset_id": skill_id})
    w.delete(MetaKind.ACL, {"asset_id": skill_id})
    w.delete(MetaKind.ASSET, {"asset_id": skill_id, "asset_type": SKILL_ASSET})
