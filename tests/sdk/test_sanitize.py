"""The 17 sanitize rules, code-block stripping and the L0 capture filter, as the original behaves."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhub.formats.sanitize import (
    SANITIZE_RULES,
    SanitizeRule,
    sanitize_server_text,
    sanitize_text,
    should_capture_l0,
    strip_code_blocks,
)
from memhub.pipeline import quality

PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def rule(number: int) -> SanitizeRule:
    return SANITIZE_RULES[number - 1]


def test_table_holds_the_17_rules_in_order_and_only_rule_5_is_client_only() -> None:
    assert [r.number for r in SANITIZE_RULES] == list(range(1, 18))
    assert len({r.name for r in SANITIZE_RULES}) == 17
    assert [r.number for r in SANITIZE_RULES if r.client_only] == [5]


# ---------------------------------------------------------------- one test per rule


def test_rule_01_relevant_memories() -> None:
    raw = (
        "<relevant-memories>\n- [persona] Prefers green tea over coffee\n"
        "- [episodic] Moved to Shenzhen in March 2025\n</relevant-memories>\n\nWhat should I drink this afternoon?"
    )
    assert sanitize_text(raw) == "What should I drink this afternoon?"
    # Only the block goes, not the whitespace around it.
    raw = "Reminder: <relevant-memories>- [instruction] answer in Chinese</relevant-memories> book the flight"
    assert sanitize_text(raw) == "Reminder:  book the flight"


def test_rule_02_user_persona() -> None:
    raw = "<user-persona>\n## Basics\nBackend engineer in Beijing, likes hiking.\n</user-persona>\nPlan my weekend"
    assert sanitize_text(raw) == "Plan my weekend"


def test_rule_03_relevant_scenes() -> None:
    raw = "<relevant-scenes>\n- scene_blocks/travel.md: trip to Chengdu\n</relevant-scenes>\nAny restaurant tips?"
    assert sanitize_text(raw) == "Any restaurant tips?"


def test_rule_04_scene_navigation() -> None:
    raw = (
        "What did I tell you about my sister?\n"
        "<scene-navigation>\n- `scene_blocks/work.md`\n- `scene_blocks/family.md`\n</scene-navigation>"
    )
    assert sanitize_text(raw) == "What did I tell you about my sister?"


def test_rule_05_memory_tools_guide_is_client_only() -> None:
    raw = (
        "Sure, noted.\n<memory-tools-guide>\n## Memory tools\n- tdai_memory_search: at most 3 calls per turn\n"
        "</memory-tools-guide>"
    )
    assert sanitize_text(raw) == "Sure, noted."
    assert sanitize_server_text(raw) == raw
    assert sanitize_text(raw, server=True) == raw


def test_rule_06_current_task_context() -> None:
    raw = (
        "<current_task_context>\n```mermaid\nflowchart TD\n  A[parse logs] --> B[fix bug]\n```\n"
        "</current_task_context>\nContinue with the bug fix"
    )
    assert sanitize_text(raw) == "Continue with the bug fix"


def test_rule_07_history_task_context_with_attributes() -> None:
    raw = (
        '<history_task_context task_id="t-17" updated="2026-03-20T08:00:00Z">\nflowchart TD\n  A --> B\n'
        "</history_task_context>\nWhat did we decide last week?"
    )
    assert sanitize_text(raw) == "What did we decide last week?"


def test_rule_08_inbound_metadata_blocks() -> None:
    raw = (
        'Conversation info (untrusted metadata):\n```json\n{"message_id": "om_7f3a", "chat_type": "group"}\n```\n\n'
        'Sender (untrusted metadata):\n```json\n{"label": "Alice", "id": "ou_91c2"}\n```\n\n'
        'Replied message (untrusted, for context):\n```json\n{"body": "lunch at 12?"}\n```\n\n'
        "Can you book the room for 3pm?"
    )
    assert sanitize_text(raw) == "Can you book the room for 3pm?"


def test_rule_09_legacy_session_json() -> None:
    raw = '```json\n{"session_key": "agent:main:main", "channel": "webchat"}\n```\nRemind me to call mom tomorrow'
    assert sanitize_text(raw) == "Remind me to call mom tomorrow"
    ordinary = 'My config:\n```json\n{"name": "x"}\n```'
    assert sanitize_text(ordinary) == ordinary


def test_rule_09_never_crosses_fences() -> None:
    # The original ran from the first json fence to the fence after the first "session, eating "keep me".
    raw = '```json\n{"a": 1}\n```\nkeep me\n```json\n{"session": "x"}\n```\nafter'
    assert sanitize_text(raw) == '```json\n{"a": 1}\n```\nkeep me\n\nafter'


def test_rule_10_reply_directives() -> None:
    raw = "[[reply_to_current]] Sure, I added the dentist appointment to your calendar."
    assert sanitize_text(raw) == "Sure, I added the dentist appointment to your calendar."
    assert sanitize_text("Thanks! [[reply_to:8421]]  See you") == "Thanks! See you"


def test_rule_11_skill_wrappers() -> None:
    raw = "¥¥[skill: weather-lookup; reason: user asks about rain]¥¥ Will it rain in Beijing tomorrow?"
    assert sanitize_text(raw) == "Will it rain in Beijing tomorrow?"
    assert sanitize_text("Check ¥¥[skill: calendar]¥¥this week") == "Check this week"


def test_rule_12_line_leading_timestamps() -> None:
    raw = "[Tue 2026-03-24 20:21 GMT+8] ok, let's ship it\n[Thu 2026-03-26 01:51 GMT+5:30] wait, one more test"
    assert sanitize_text(raw) == "ok, let's ship it\nwait, one more test"
    # Mid-line brackets are content.
    assert sanitize_text("see footnote [1] below") == "see footnote [1] below"


def test_rule_13_media_attached_markers() -> None:
    raw = (
        "[media attached: /home/u/.openclaw/media/inbound/3f2a.png (image/png) | "
        "/home/u/.openclaw/media/inbound/3f2a.png]\nWhat's in this picture?"
    )
    assert sanitize_text(raw) == "What's in this picture?"
    # As in the original, the colon is part of the marker.
    assert sanitize_text("look [media attached 2 files] here") == "look [media attached 2 files] here"


def test_rule_14_image_reply_instructions() -> None:
    raw = (
        "What is this?\nTo send an image back, prefer the message tool (media/path/filePath). "
        "If you must inline, use MEDIA:https://example.com/image.jpg (spaces ok, quote if needed). "
        "Keep caption in the text body.\n"
    )
    assert sanitize_text(raw) == "What is this?"


def test_rule_15_system_exec_notices_keep_their_line_break() -> None:
    raw = (
        "Done with the build.\nSystem: [2026-03-24 10:00:01 GMT+8] Exec completed (brisk-sh, code 0) :: ok\n"
        "Anything else?"
    )
    assert sanitize_text(raw) == "Done with the build.\n\nAnything else?"


def test_rule_16_base64_image_uris() -> None:
    raw = f"Here is the screenshot data:image/png;base64,{PNG_1PX} what do you see?"
    assert sanitize_text(raw) == "Here is the screenshot  what do you see?"
    assert sanitize_text("logo: DATA:IMAGE/SVG+XML;BASE64,PHN2Zz4= ok") == "logo:  ok"


def test_rule_17_nul_blank_lines_and_trim() -> None:
    raw = "\n first line\x00\n\n\n\n\nsecond line\n\n \t\u3000"
    assert sanitize_text(raw) == "first line\n\nsecond line"


# ---------------------------------------------------------------- order and faithfulness


def test_order_rule_8_runs_before_rule_9() -> None:
    raw = (
        'Conversation info (untrusted metadata):\n```json\n{"session_key": "agent:main", "sender": "ou_1"}\n```\n'
        "hi there"
    )
    assert sanitize_text(raw) == "hi there"
    # The other way round rule 9 would take the fence and leave the label behind.
    assert rule(8).apply(rule(9).apply(raw)) == "Conversation info (untrusted metadata):\n\nhi there"


def test_order_rule_11_exposes_a_timestamp_to_rule_12() -> None:
    raw = "¥¥[skill: calendar]¥¥[Mon 2026-03-23 09:00 GMT+8] what's on today?"
    assert sanitize_text(raw) == "what's on today?"


def test_order_rule_12_exposes_a_system_notice_to_rule_15() -> None:
    raw = "[Mon 2026-03-23 09:00 GMT+8] System: [09:00:02] Exec completed (code 0)\nall green?"
    assert sanitize_text(raw) == "all green?"


def test_order_rule_16_runs_before_the_blank_line_collapse() -> None:
    assert sanitize_text(f"a\n\ndata:image/png;base64,{PNG_1PX}\n\nb") == "a\n\nb"


def test_rule_12_takes_one_bracket_per_line_in_a_single_pass() -> None:
    assert sanitize_text("[Mon 2026-03-23 09:00 GMT+8] [msg_id: 42] hello") == "[msg_id: 42] hello"


def test_every_block_is_removed_not_just_the_first() -> None:
    raw = "<relevant-memories>a</relevant-memories>x<relevant-memories>b</relevant-memories>y"
    assert sanitize_text(raw) == "xy"


def test_whitespace_follows_javascript() -> None:
    # JavaScript's trim() strips U+FEFF but not U+001C; Python's str.strip() does the opposite.
    assert sanitize_text("\ufeffhello\x1c") == "hello\x1c"


def test_server_variant_is_what_the_pipeline_uses() -> None:
    raw = "<relevant-memories>x</relevant-memories>\n[[reply_to_current]] hello"
    assert quality.sanitize(raw) == sanitize_server_text(raw) == sanitize_text(raw) == "hello"
    assert quality.should_capture("/new") is should_capture_l0("/new") is False


# ---------------------------------------------------------------- stripCodeBlocks


def test_strip_code_blocks_keeps_the_explanation() -> None:
    raw = (
        "Here's the fix:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\n\nIt now handles ints.\n"
        "```\nmake test\n```"
    )
    assert strip_code_blocks(raw) == "Here's the fix:\n\nIt now handles ints."


@pytest.mark.parametrize(
    "text",
    [
        "Run `make test` first.",  # inline code is prose
        "```not a block```",  # no newline after the opening fence
        "```python\nprint(1)",  # never closed
    ],
)
def test_strip_code_blocks_leaves_non_blocks(text: str) -> None:
    assert strip_code_blocks(text) == text


def test_strip_code_blocks_is_not_part_of_sanitize() -> None:
    raw = "Try this:\n```bash\nls -la\n```"
    assert sanitize_text(raw) == raw
    assert strip_code_blocks(raw) == "Try this:"


# ---------------------------------------------------------------- shouldCaptureL0


@pytest.mark.parametrize("text", ["", "   \n\t", "\u3000\ufeff\u00a0"])
def test_capture_drops_empty_text(text: str) -> None:
    assert not should_capture_l0(text)


@pytest.mark.parametrize(
    "text",
    [
        "(session bootstrap)",
        "  (session bootstrap)\n",
        "A new session was started via /new or /reset. Greet the user briefly.",
        "✅ New session started · model: gpt-5",
        "✅New session started",
        "Pre-compaction memory flush. Store durable memories now (use memory/2026-03-24.md).",
        "NO_REPLY",
        " NO_REPLY \n",
    ],
)
def test_capture_drops_framework_noise(text: str) -> None:
    assert not should_capture_l0(text)


@pytest.mark.parametrize("text", ["/new", "/reset", "/model gpt-4", "  /status"])
def test_capture_drops_slash_commands(text: str) -> None:
    assert not should_capture_l0(text)


@pytest.mark.parametrize(
    "text",
    [
        "I like green tea",
        "我喜欢绿茶",
        "a/b testing is fun",
        "see https://example.com/x",
        "NO_REPLY please",
        "we discussed the (session bootstrap) turn yesterday",
        "?",
    ],
)
def test_capture_keeps_real_text(text: str) -> None:
    assert should_capture_l0(text)


# ---------------------------------------------------------------- properties

_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCXYZ0123456789,.!?'中文绿茶", min_size=1, max_size=12)
_LINES = st.lists(_WORDS, min_size=1, max_size=6).map(" ".join)
_TAGS = [
    "relevant-memories",
    "user-persona",
    "relevant-scenes",
    "scene-navigation",
    "memory-tools-guide",
    "current_task_context",
    "history_task_context",
]
_INJECTED = st.one_of(
    st.builds(lambda tag, body: f"<{tag}>\n{body}\n</{tag}>", st.sampled_from(_TAGS), _LINES),
    st.builds(lambda body: f'Sender (untrusted metadata):\n```json\n{{"label": "{body}"}}\n```', _WORDS),
    st.just("[[reply_to_current]] "),
    st.builds(lambda body: f"¥¥[{body}]¥¥", _WORDS),
    st.just("[media attached: /tmp/a.png (image/png)]"),
    st.just(f"data:image/png;base64,{PNG_1PX} "),
    st.just("\x00"),
)
_SEPARATORS = st.sampled_from(["\n", " ", "\n\n\n\n", "\t", ""])


_FRAGMENTS = st.one_of(_LINES.map(lambda text: (text, True)), _INJECTED.map(lambda text: (text, False)))


@given(st.lists(st.tuples(_FRAGMENTS, _SEPARATORS), max_size=12))
def test_sanitize_removes_injections_keeps_text_and_is_idempotent(parts: list[tuple[tuple[str, bool], str]]) -> None:
    raw = "".join(fragment + sep for (fragment, _), sep in parts)
    clean = sanitize_text(raw)
    assert sanitize_text(clean) == clean
    for tag in _TAGS:
        assert f"<{tag}>" not in clean
    assert "\x00" not in clean and "base64," not in clean and "¥¥" not in clean and "\n\n\n" not in clean
    assert clean == clean.strip()
    for (fragment, is_text), _ in parts:
        if is_text:
            for word in fragment.split(" "):
                assert word in clean
