"""Slot splicing: each block lands at its client's section (Claude Code headings, CodeBuddy and WorkBuddy tags),
else at its point; the rest of the prompt is untouched byte for byte."""

from __future__ import annotations

from memhub.proxy.injection.profiles import CLAUDE_CODE, CODEBUDDY, WORKBUDDY, Placement, profile_for, splice

CLAUDE_PROMPT = (
    "You are Claude Code.\n"
    "\n"
    "# Harness\n"
    "Be careful.\n"
    "\n"
    "# Session-specific guidance\n"
    "Use /skills.\n"
    "\n"
    "# Memory\n"
    "You have a file memory.\n"
    "\n"
    "## Types of memory\n"
    "user, project\n"
    "\n"
    "```md\n"
    "# Environment\n"
    "```\n"
    "\n"
    "# Environment\n"
    "cwd: /repo\n"
)


def at(text: str, slot: str | None, relation: str = "after", *, prefix: bool = False) -> Placement:
    return Placement(text, slot, relation, prefix)  # type: ignore[arg-type]


def test_claude_code_blocks_land_around_the_memory_section_and_before_environment() -> None:
    placements = [
        at("SKILLS", "skills", "before"),
        at("KNOWLEDGE", "knowledge", "after"),
        at("TOOLS", "memory", "before"),
        at("PROFILE", "memory", "inside_append"),
        at("CONTEXT", None),
    ]
    (out,) = splice([CLAUDE_PROMPT], placements, CLAUDE_CODE)
    assert out == (
        "You are Claude Code.\n\n# Harness\nBe careful.\n\n"
        "SKILLS\n\n"
        "# Session-specific guidance\nUse /skills.\n\n"
        "TOOLS\n\n"
        "# Memory\nYou have a file memory.\n\n## Types of memory\nuser, project\n\n```md\n# Environment\n```\n\n"
        "PROFILE\n\n"
        "KNOWLEDGE\n\n"
        "# Environment\ncwd: /repo\n\n"
        "CONTEXT"
    )


def test_inside_prepend_goes_after_the_heading_line() -> None:
    (out,) = splice(["# Memory\nbody\n# Environment\nx"], [at("P", "memory", "inside_prepend")], CLAUDE_CODE)
    assert out == "# Memory\n\nP\n\nbody\n# Environment\nx"


def test_a_missing_slot_falls_back_to_the_point() -> None:
    prompt = "You are a helper.\nNo sections here."
    placements = [at("TOOLS", "memory", "before"), at("FIRST", "persona", prefix=True)]
    assert splice([prompt], placements, CLAUDE_CODE) == ["FIRST\n\nYou are a helper.\nNo sections here.\n\nTOOLS"]
    assert splice([prompt], placements, None) == ["FIRST\n\nYou are a helper.\nNo sections here.\n\nTOOLS"]


def test_no_system_prompt_gives_one_segment_of_the_blocks() -> None:
    assert splice([], [at("A", "memory"), at("B", None)], CLAUDE_CODE) == ["A\n\nB"]
    assert splice([], [], CLAUDE_CODE) == [""]


def test_segments_keep_their_number_and_only_the_anchored_one_changes() -> None:
    segments = ["x-anthropic-billing-header: cc", "You are Claude Code.", "# Memory\nm\n\n# Environment\ne"]
    out = splice(segments, [at("K", "knowledge", "after"), at("END", None)], CLAUDE_CODE)
    assert out[:2] == segments[:2]
    assert out[2] == "# Memory\nm\n\nK\n\n# Environment\ne\n\nEND"


def test_without_placements_the_prompt_is_unchanged() -> None:
    assert splice([CLAUDE_PROMPT, "tail"], [], CLAUDE_CODE) == [CLAUDE_PROMPT, "tail"]


def test_codebuddy_tags() -> None:
    skills = "preamble\n<agent_skills>\n<available_skills>x</available_skills>\n</agent_skills>\n"
    prompt = skills + '<memories attr="1">\nm\n</memories>\n<rules>r</rules>'
    placements = [
        at("SKILLS", "skills", "before"),
        at("KNOWLEDGE", "knowledge", "after"),
        at("TOOLS", "memory", "before"),
        at("PROFILE", "memory", "inside_append"),
    ]
    (out,) = splice([prompt], placements, CODEBUDDY)
    assert out == (
        "preamble\nSKILLS\n<agent_skills>\n<available_skills>x</available_skills>\n</agent_skills>\n"
        'TOOLS\n<memories attr="1">\nm\nPROFILE\n</memories>\nKNOWLEDGE\n<rules>r</rules>'
    )


def test_workbuddy_memory_slot_and_missing_rules_slot() -> None:
    prompt = "Hi www.workbuddy.cn\n<workbuddy_memory_slot_1></workbuddy_memory_slot_1>\n<agent_loop>a</agent_loop>"
    placements = [at("PROFILE", "memory", "inside_append"), at("RULES", "rules", "before")]
    (out,) = splice([prompt], placements, WORKBUDDY)
    assert out == (
        "Hi www.workbuddy.cn\n<workbuddy_memory_slot_1>\nPROFILE\n</workbuddy_memory_slot_1>\n"
        "<agent_loop>a</agent_loop>\n\nRULES"
    )


def test_an_unclosed_tag_is_not_a_section() -> None:
    prompt = "<memories>\nnever closed"
    assert splice([prompt], [at("P", "memory", "inside_append")], CODEBUDDY) == [f"{prompt}\n\nP"]


def test_profile_by_agent_source_else_by_the_prompt() -> None:
    assert profile_for("claude-code", []) is CLAUDE_CODE
    assert profile_for("codebuddy", []) is CODEBUDDY
    assert profile_for("proxy", ["# Memory\n# Environment\n"]) is CLAUDE_CODE
    assert (
        profile_for("proxy", ["<agent_skills></agent_skills><making_code_changes></making_code_changes>"]) is CODEBUDDY
    )
    assert profile_for("codex", ["plain"]) is None
