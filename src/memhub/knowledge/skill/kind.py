"""The skill as a kind of knowledge resource (registered in memhub.knowledge.kinds).

Skills share only tool dispatch with the other kinds: `/v3/tools/list` and `/v3/tools/call` on a `skl-…` id. They
are not entries of the /v3/knowledge registry (`knowledge/create` refuses the type, and `<knowledge_tools>` never
offers them: agents learn of skills from `<available_skills>`), and they live in the skill store, not in a
management-store table.
"""

from __future__ import annotations

from memhub.knowledge.kind import ResourceKind
from memhub.knowledge.skill.tools import SKILL_TOOLS

# The original's ids: `skl-` and 12 base62 characters from a CSPRNG.
SKILL_ID_LENGTH = 12
SKILL_ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

SKILL = ResourceKind(
    name="skill",
    noun="skill",
    id_prefix="skl",
    id_field="skill_id",
    meta_kind=None,
    asset_type="skill",
    tools=SKILL_TOOLS,
    id_pattern=f"[0-9A-Za-z]{{{SKILL_ID_LENGTH}}}",
    id_rule=f"{SKILL_ID_LENGTH} characters of [0-9A-Za-z]",
    in_registry=False,
)
