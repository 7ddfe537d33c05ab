"""How many tokens a model's context holds: what a request's share of the window is measured against.

The providers' published input windows, by model name (matched by prefix, a routing prefix such as
`anthropic/` or `us.anthropic.` aside). Anthropic's 1M window is a beta the client asks for in the
`anthropic-beta` header; without it a Claude model has 200k. A model not listed gets the default, the window
the original system's client assumes (200,000); the operator can set one window for every model instead.
"""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_CONTEXT_WINDOW = 200_000
LONG_CONTEXT_BETA = "context-1m"
LONG_CONTEXT_WINDOW = 1_000_000

# Longest prefix first where one prefix extends another (gpt-4o before gpt-4).
_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o4", 200_000),
    ("o3", 200_000),
    ("o1", 200_000),
    ("codex", 400_000),
    ("gemini", 1_048_576),
    ("deepseek", 128_000),
    ("qwen", 131_072),
    ("kimi", 262_144),
    ("glm", 131_072),
)


def context_window(
    model: object, headers: Mapping[str, str], *, override: int | None = None, default: int = DEFAULT_CONTEXT_WINDOW
) -> int:
    """The window of the model a request names (`override` for every model when the operator set one)."""
    if override is not None:
        return override
    name = model.lower() if isinstance(model, str) else ""
    name = name[name.index("claude") :] if "claude" in name else name.rsplit("/", 1)[-1]
    if name.startswith("claude") and LONG_CONTEXT_BETA in headers.get("anthropic-beta", "").lower():
        return LONG_CONTEXT_WINDOW
    return next((window for prefix, window in _WINDOWS if name.startswith(prefix)), default)
