"""The user's words out of a user message: injected blocks, client wrappers and echoed tool output never count."""

from __future__ import annotations

import pytest

from memhub.proxy.user_text import INJECTED_TAGS, UserText, clean_user_text


@pytest.mark.parametrize("tag", INJECTED_TAGS)
def test_every_block_the_proxy_injects_is_removed(tag: str) -> None:
    raw = f'<{tag} version="1">\nrecalled: the user likes tea\n</{tag}>\nWhat should I drink?'
    assert clean_user_text(raw) == UserText("What should I drink?")


def test_client_wrappers_and_echoed_tool_output_are_removed() -> None:
    raw = (
        "<system-reminder>The date is 2026-05-01.</system-reminder>\n"
        "<user_info>OS: linux</user_info>\n"
        "(Bash completed with no output)\n"
        "The file /src/app.py has been updated successfully.\n"
        "     1\timport os\n"
        "Now run the tests.\n"
        "<relevant-memories>old recall</relevant-memories>"
    )
    assert clean_user_text(raw) == UserText("Now run the tests.")


def test_a_user_query_block_is_the_whole_answer() -> None:
    raw = "<additional_data>cwd=/x</additional_data><user_query>\nfix the build\n</user_query> trailing noise"
    assert clean_user_text(raw) == UserText("fix the build")


@pytest.mark.parametrize(
    "raw",
    [
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>",
        "[SUGGESTION MODE: Suggest what the user might type next]",
        "[TITLE MODE: five words] Summarize this conversation",
        'Your questions have been answered: "Which team?"="A"',
        "/compact",
        "NO_REPLY",
    ],
)
def test_what_the_user_did_not_say_is_skipped(raw: str) -> None:
    assert clean_user_text(raw) == UserText("", skip=True)


def test_nothing_typed_is_empty_but_not_skipped() -> None:
    # A tool loop's continuation: the turn is still the user's, only without new words.
    assert clean_user_text("<system-reminder>files changed</system-reminder>\n  ") == UserText("")
    assert clean_user_text("") == UserText("")
