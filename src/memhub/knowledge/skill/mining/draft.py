"""A draft skill written from recurring work, without a model: name, description, SKILL.md and provenance.

The draft is a `candidate`: it lists the steps the agent took, with the arguments of one run as an example and
the request that started it, for a person to review and publish. Values under keys that look like secrets are
masked, and long values are clipped: the archive may hold what a draft must not repeat.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhub.knowledge.skill.mining.trace import Recurrence, Step

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_EXAMPLE_CHARS = 400
MAX_REQUEST_CHARS = 500
MAX_ARCHIVES = 50  # archive ids a draft remembers (more than the miner ever compares with)
MINED_KEY = "mined"  # the metadata key a mined draft keeps its provenance under
_SECRET_KEY = re.compile(r"pass(word|wd)?|secret|token|api[_-]?key|authorization|credential|private[_-]?key", re.I)
# Secrets written inside a command or a value: `--password=x`, `--token x`, `TOKEN: x`, `Bearer x`, provider keys.
_SECRET_ASSIGNMENT = re.compile(
    r"(?i)(\b(?:[\w-]*(?:pass(?:word|wd)?|secret|token|api[_-]?key|credential)[\w-]*)\s*[=:]\s*|\bbearer\s+"
    r"|(?<!\S)--?[\w-]*(?:pass(?:word|wd)?|secret|token|api[_-]?key|credential)[\w-]*\s+(?!-))"
    r"(\"[^\"]*\"|'[^']*'|[^\s\"';&|),\]}>]+)"
)
_SECRET_LITERAL = re.compile(r"\b(?:sk|pk|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{16,}\b|\bAKIA[0-9A-Z]{16}\b")


@dataclass(frozen=True, slots=True)
class Draft:
    """A candidate skill, ready for the skill service."""

    name: str
    description: str
    content: str  # the whole SKILL.md
    metadata: dict[str, Any]


def steps_signature(steps: Sequence[Step]) -> str:
    """One hash naming a step sequence: how a recurrence finds the draft it already wrote."""
    text = "\n".join(s.signature for s in steps)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def skill_name(steps: Sequence[Step], suffix: int = 1) -> str:
    """`run-pytest-then-git-commit`: the first and the last step (all distinct steps when those are the same)."""
    slugs = [s.slug for s in steps]
    parts = [slugs[0], slugs[-1]] if slugs[0] != slugs[-1] else list(dict.fromkeys(slugs))
    tail = f"-{suffix}" if suffix > 1 else ""
    name = "-then-".join(parts)[: MAX_NAME - len(tail)].rstrip("-")
    return name + tail


def _mask(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: "***" if _SECRET_KEY.search(str(k)) else _mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v) for v in value]
    if isinstance(value, str):
        return mask_text(value)
    return value


def mask_text(text: str) -> str:
    """Text with the secrets it spells out (`--password=x`, `Bearer x`, `sk-…` keys) replaced by `***`."""
    text = _SECRET_ASSIGNMENT.sub(lambda m: m.group(1) + "***", text)
    return _SECRET_LITERAL.sub("***", text)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _example(arguments: Any) -> str:
    text = mask_text(arguments) if isinstance(arguments, str) else json.dumps(_mask(arguments), ensure_ascii=False)
    return _clip(" ".join(text.split()), MAX_EXAMPLE_CHARS)


def _describe(step: Step) -> str:
    if step.program:
        return f"`{step.tool}`: run `{step.program}`"
    keys = f" with {', '.join(step.keys)}" if step.keys else ""
    return f"`{step.tool}`{keys}"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in _clip(text, MAX_REQUEST_CHARS).splitlines())


def draft_from(recurrence: Recurrence, name: str, previous: Mapping[str, Any] | None = None) -> Draft:
    """The candidate skill that writes down a recurring step sequence; with the metadata of the draft it
    already wrote (`previous`), the sessions counted before are kept and the new ones added."""
    steps = recurrence.steps
    again = seen_again(previous, recurrence.archive_ids) if previous is not None else None
    mined: Mapping[str, Any] = again[MINED_KEY] if again else {}
    archives = list(mined.get("archives", recurrence.archive_ids))
    seen = int(mined.get("seen", len(recurrence.archive_ids)))
    summary = ", then ".join(s.slug.replace("-", " ") for s in steps)
    description = _clip(
        f"Draft of a procedure this agent repeated in {seen} sessions: {summary}. Mined from tool calls; "
        "review before publishing.",
        MAX_DESCRIPTION,
    )
    title = name.replace("-", " ").capitalize()
    lines = [
        "---",
        f"name: {name}",
        f"description: {json.dumps(description, ensure_ascii=False)}",
        "---",
        "",
        f"# {title}",
        "",
        f"A draft written from tool calls the agent made the same way in {seen} sessions. The steps below are "
        "what it did; the arguments are one run's, as an example. Check them before publishing this skill.",
        "",
    ]
    request = next((c.request for c in recurrence.calls if c.request), None)
    if request:
        lines += ["## When to use", "", "When a request like this one comes in:", "", _quote(mask_text(request)), ""]
    lines += ["## Steps", ""]
    for number, call in enumerate(recurrence.calls, 1):
        lines.append(f"{number}. {_describe(call.step)}")
        example = _example(call.arguments).replace("`", "'")
        lines.append(f"   - example arguments: `{example}`")
    lines.append("")
    metadata = {
        **(previous or {}),
        MINED_KEY: {
            "by": "offline",
            "signature": steps_signature(steps),
            "steps": [s.signature for s in steps],
            "seen": seen,
            "archives": archives[-MAX_ARCHIVES:],
        },
    }
    return Draft(name, description, "\n".join(lines), metadata)


def seen_again(metadata: Mapping[str, Any], archive_ids: Sequence[str]) -> dict[str, Any] | None:
    """The metadata of a draft whose steps recurred in these archives, or None when none of them is new."""
    mined = metadata.get(MINED_KEY)
    if not isinstance(mined, Mapping):
        return None
    known = [a for a in mined.get("archives", []) if isinstance(a, str)]
    new = [a for a in archive_ids if a not in known]
    if not new:
        return None
    seen = mined.get("seen") if isinstance(mined.get("seen"), int) else len(known)
    archives = (known + new)[-MAX_ARCHIVES:]
    return {**metadata, MINED_KEY: {**mined, "archives": archives, "seen": seen + len(new)}}
