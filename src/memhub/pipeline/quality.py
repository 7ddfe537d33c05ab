"""Text hygiene before extraction: what is worth extracting, what to strip, what looks like an attack.

These follow the original's server-side `sanitize` and `shouldCaptureL0` (both defined once in
`memhub.formats.sanitize`) and its L1 quality gate `shouldExtractL1`.
`looks_like_prompt_injection` (in `memhub.formats.injection`, shared with recall) flags a memory in its
metadata (`injection_suspect`): conversation text is data, and nothing in it changes what the pipeline does.
A flagged memory is kept (it is what the user said) but never placed in a prompt: scenes and the persona are
built without it (`trusted`), and recall leaves it out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memhub.formats.injection import looks_like_prompt_injection
from memhub.formats.sanitize import sanitize_server_text, should_capture_l0
from memhub.model import AtomicRecord

# ---------------------------------------------------------------- quality gate and sanitize

# One rule table serves client and gateway (the SDK never imports the server, the server may import the SDK).
# The gateway variant leaves out the client-only rule 5.
sanitize = sanitize_server_text
should_capture = should_capture_l0
__all__ = ["looks_like_prompt_injection", "sanitize", "should_capture", "should_extract", "trusted"]

# 1–5 characters of nothing but punctuation/symbols ("...", "👍", "?!") carry no memory.
_SYMBOLS_ONLY = re.compile(r"^(?:[^\w\s]|_){1,5}$")
_QUESTION_MARKS_ONLY = re.compile(r"^[?？\s]+$")


def should_extract(text: str) -> bool:
    """The original's `shouldExtractL1`: `should_capture`, and not 1–5 bare symbols or only question marks."""
    if not should_capture(text):
        return False
    stripped = text.strip()
    return not (_SYMBOLS_ONLY.match(stripped) or _QUESTION_MARKS_ONLY.match(stripped))


def trusted(memories: Sequence[AtomicRecord]) -> list[AtomicRecord]:
    """The memories not flagged `injection_suspect`: what may be built into scenes, the persona or a prompt."""
    return [m for m in memories if not (m.metadata or {}).get("injection_suspect")]
