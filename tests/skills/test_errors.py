"""Every business code of the original's map, with its message form and data, answered with HTTP 200."""

from __future__ import annotations

import pytest

from memhub.knowledge.skill import errors as e


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (e.SkillBadRequest("agent_id", "agent_id requires team_id"), 40001, "agent_id: agent_id requires team_id"),
        (e.InvalidFrontmatter("x"), 40001, "INVALID_FRONTMATTER: x"),
        (e.InvalidPath("x"), 40001, "INVALID_PATH: x"),
        (e.SkillNotOwner("x"), 40301, "SKILL_NOT_OWNER: x"),
        (e.SkillTeamMismatch("x"), 40302, "SKILL_TEAM_MISMATCH: x"),
        (e.SkillNotFound(), 40401, "SKILL_NOT_FOUND"),
        (e.SkillVersionStale(1, 2), 40901, "SKILL_VERSION_STALE: expected version 1, head is 2"),
        (e.SkillVersionExpired("old", 7), 41002, "SKILL_VERSION_EXPIRED: old"),
        (e.ResourceTooLarge("x"), 41301, "RESOURCE_TOO_LARGE: x"),
        (e.ExportTooLarge("x"), 41301, "SKILL_EXPORT_TOO_LARGE: x"),
        (e.SkillNameDuplicate("x"), 42201, "SKILL_NAME_DUPLICATE: x"),
        (e.PatchNotUnique("x"), 42202, "SKILL_PATCH_NOT_UNIQUE: x"),
        (e.FrontmatterInvalid("x"), 42203, "SKILL_FRONTMATTER_INVALID: x"),
        (e.StorageNotFound("x"), 50301, "STORAGE_NOT_FOUND: x"),
        (e.SkillIdCollision("x"), 50304, "SKILL_ID_COLLISION: x"),
    ],
)
def test_codes_messages_and_status(error: e.SkillError, code: int, message: str) -> None:
    assert (error.code, error.message, error.http_status) == (code, message, 200)


def test_stale_and_expired_carry_the_head() -> None:
    assert e.SkillVersionStale(1, 2).data == {"current_version": 2}
    assert e.SkillVersionExpired("old", 7).data == {"latest_version": 7}
