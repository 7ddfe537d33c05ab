"""SKILL.md parsing and its limits: every failure is 42203 naming the field."""

from __future__ import annotations

import pytest

from memhub.knowledge.skill.config import SkillConfig
from memhub.knowledge.skill.errors import FrontmatterInvalid
from memhub.knowledge.skill.format import content_hash, parse_skill

CONFIG = SkillConfig()


def doc(front: str, body: str = "Do the thing.\n") -> str:
    return f"---\n{front}\n---\n{body}"


def refused(text: str) -> str:
    with pytest.raises(FrontmatterInvalid) as info:
        parse_skill(text, CONFIG)
    assert info.value.code == 42203
    assert info.value.http_status == 200
    assert info.value.message.startswith("SKILL_FRONTMATTER_INVALID: content: ")
    return info.value.message


def test_parses_name_description_and_body() -> None:
    parsed = parse_skill(doc("name: deploy-app\ndescription: Deploy the app\ncategory: ops", "\n# Steps\n"), CONFIG)
    assert (parsed.name, parsed.description) == ("deploy-app", "Deploy the app")
    assert parsed.front_matter["category"] == "ops"
    assert parsed.body == "# Steps\n"


def test_crlf_is_read_as_lf() -> None:
    parsed = parse_skill("---\r\nname: a1\r\ndescription: d\r\n---\r\nbody\r\n", CONFIG)
    assert (parsed.name, parsed.body) == ("a1", "body\n")


def test_front_matter_may_end_the_text() -> None:
    assert parse_skill("---\nname: a1\ndescription: d\n---", CONFIG).body == ""


def test_non_string_values_are_read_as_text() -> None:
    parsed = parse_skill(doc("name: 123\ndescription: true"), CONFIG)
    assert (parsed.name, parsed.description) == ("123", "true")
    assert parse_skill(doc("name: a1\ndescription: 2024-01-02"), CONFIG).description == "2024-01-02"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("name: a\ndescription: d\n", "must start with a '---' line"),
        ("---\nname: a\ndescription: d\n", "missing the closing '---'"),
        (doc("name: [unclosed"), "not valid YAML"),
        (doc("- a\n- b"), "must be a YAML mapping"),
        (doc("description: d"), "'name' is required"),
        (doc("name: a1"), "'description' is required"),
        (doc("name: ''\ndescription: d"), "'name' is required"),
        (doc("name: a1\ndescription: '  '"), "'description' is required"),
        (doc("name: Deploy\ndescription: d"), "must match ^[a-z0-9][a-z0-9-]*$"),
        (doc("name: -lead\ndescription: d"), "must match"),
        (doc("name: a_b\ndescription: d"), "must match"),
        (doc("name: " + "a" * 65 + "\ndescription: d"), "name must be at most 64 characters"),
        (doc("name: a1\ndescription: " + "d" * 1025), "description must be at most 1024 characters"),
        (doc("name: a1\ndescription: d", "x" * 50_001), "body must be at most 50000 characters"),
        (doc("name: a1\ndescription: d\nresources:\n  - {path: x.sh, type: script}"), "resources[0].type"),
        (doc("name: a1\ndescription: d\nx: &a [1]\ny: *a"), "aliases are not allowed"),
        (doc("name: a1\ndescription: d\nnote: " + "n" * 17_000), "front matter must be at most"),
    ],
)
def test_refusals_name_the_rule(text: str, needle: str) -> None:
    assert needle in refused(text)


def test_limits_are_inclusive() -> None:
    parsed = parse_skill(doc("name: " + "a" * 64 + "\ndescription: " + "d" * 1024, "x" * 50_000), CONFIG)
    assert len(parsed.body) == 50_000


def test_limits_come_from_the_config() -> None:
    with pytest.raises(FrontmatterInvalid):
        parse_skill(doc("name: a1\ndescription: d", "x" * 11), SkillConfig(max_body_chars=10))


def test_content_hash_is_md5_of_the_text() -> None:
    assert content_hash("abc") == "900150983cd24fb0d6963f7d28e17f72"
