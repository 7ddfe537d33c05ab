"""The LLM-backed pipeline stages: L1 extraction and dedup, L2 scene planning, L3 persona writing.

Each stage makes one call (extraction: one per ≤10 new messages) through `ChatClient`, reads the answer with
`parse_json_loose` and validates every field against the contracts in `llm_prompts`: what fails validation is
dropped, never guessed. An answer that is not JSON at all gets one re-ask; if that fails too the stage raises
`PipelineError(retryable=True)` so the job is retried later and no input is skipped. `LLMError` from the
client propagates unchanged, with its own `retryable`, which the worker reads as it does a PipelineError's.

Usage for the generation log: after each call of `extract` / `decide` / `plan` / `write`, the stage's
`last_usage` (a `StageUsage`: model, calls, tokens, latency, re-asks) describes the LLM calls that call made,
also when it raised. It is kept per thread, so one stage object can serve several workers.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from memhub.llm.client import ChatClient, ChatResult
from memhub.llm.jsonrepair import parse_json_loose
from memhub.pipeline.llm_prompts import (
    CHAT_TYPES,
    CODE_TYPES,
    MAX_BACKGROUND,
    MAX_NEW_MESSAGES,
    PERSONA_CAPS,
    PRIORITY_THRESHOLDS,
    CustomPrompt,
    build_dedup_prompt,
    build_extraction_prompt,
    build_persona_prompt,
    build_scene_prompt,
    with_custom,
)
from memhub.pipeline.offline_speakers import read_speaker
from memhub.pipeline.types import Candidate, Decision, Neighbour, PipelineError, PromptMode, SourceMessage

__all__ = [
    "MAX_MEMORIES_PER_CALL",
    "LLMDeduplicator",
    "LLMExtractor",
    "LLMPersonaWriter",
    "LLMSceneWriter",
    "SceneOp",
    "StageUsage",
    "normalize_scene_filename",
    "truncate_at_paragraph",
]

log = logging.getLogger("memhub.pipeline.llm")

T = TypeVar("T")

MAX_MEMORIES_PER_CALL = 20  # the original's `maxMemoriesPerSession` default
MAX_MEMORY_CHARS = 2000  # longer "memories" are essays, not atomic facts
MAX_SCENE_NAME_CHARS = 120
MAX_SCENE_CHARS = 20_000
MAX_SUMMARY_CHARS = 200
DEFAULT_PRIORITY = 50  # the store's default, used when the model gives none
_REASK_CHARS = 4000  # how much of a bad answer is echoed back in the re-ask

_REASK_JSON = (
    "Your previous answer was not valid JSON in the required shape. Reply again with ONLY the JSON described in "
    "the system message: no Markdown fences, no explanations, no text before or after it."
)
_REASK_TEXT = (
    "Your previous answer was empty or unusable. Reply again with ONLY the Markdown document described in the "
    "system message."
)


@dataclass(frozen=True, slots=True)
class StageUsage:
    """The LLM calls behind one stage call: what a generation-log record needs."""

    model: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    reasks: int = 0

    def add(self, result: ChatResult) -> StageUsage:
        """This usage plus one more completion."""
        return StageUsage(
            model=result.model or self.model,
            calls=self.calls + 1,
            prompt_tokens=self.prompt_tokens + result.prompt_tokens,
            completion_tokens=self.completion_tokens + result.completion_tokens,
            latency_ms=self.latency_ms + result.latency_ms,
            reasks=self.reasks,
        )


SceneAction = Literal["create", "update", "delete", "merge"]


@dataclass(frozen=True, slots=True)
class SceneOp:
    """One file operation of an L2 plan; `content` is the complete new body (no META header), "" for delete.

    merge: `filename` is the resulting file, `merge_from` the other existing files it absorbs (to be removed).
    """

    action: SceneAction
    filename: str
    summary: str = ""
    content: str = ""
    merge_from: tuple[str, ...] = ()


class _Stage:
    """Shared plumbing: one client, per-thread usage, JSON calls with one re-ask."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self._local = threading.local()

    @property
    def last_usage(self) -> StageUsage | None:
        """Usage of this thread's latest stage call (None before the first)."""
        return getattr(self._local, "usage", None)

    def _begin(self) -> None:
        self._local.usage = StageUsage(model=self.client.model)

    def _record(self, result: ChatResult) -> None:
        self._local.usage = self._usage().add(result)

    def _usage(self) -> StageUsage:
        usage = getattr(self._local, "usage", None)
        return usage if usage is not None else StageUsage(model=self.client.model)

    def _ask(self, system: str, user: str, accept: Callable[[str], T | None], *, json_mode: bool, what: str) -> T:
        """Call the model; on an unusable answer re-ask once; raise a retryable PipelineError if still unusable."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        result = self.client.complete(messages, json_mode=json_mode)
        self._record(result)
        value = accept(result.text)
        if value is not None:
            return value
        log.info("%s: unusable model output (%d chars); asking again", what, len(result.text))
        self._local.usage = replace(self._usage(), reasks=self._usage().reasks + 1)
        messages += [
            {"role": "assistant", "content": result.text[:_REASK_CHARS]},
            {"role": "user", "content": _REASK_JSON if json_mode else _REASK_TEXT},
        ]
        result = self.client.complete(messages, json_mode=json_mode)
        self._record(result)
        value = accept(result.text)
        if value is not None:
            return value
        raise PipelineError(f"{what}: the model's answer was not usable {'JSON' if json_mode else 'text'} twice")


def _json_list(text: str, wrapper_keys: Sequence[str]) -> list[Any] | None:
    """The answer as a list: a bare array, or an object wrapping one; None when it is neither."""
    try:
        value = parse_json_loose(text)
    except ValueError:
        return None
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in wrapper_keys:
            if isinstance(value.get(key), list):
                return value[key]
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
        return [value]  # a single object where a list was asked for
    return None


def _shaped(text: str, wrapper_keys: Sequence[str], field: str) -> list[Any] | None:
    """`_json_list`, but None for a non-empty list in which no object has `field` (the wrong shape)."""
    items = _json_list(text, wrapper_keys)
    if items and not any(isinstance(i, dict) and field in i for i in items):
        return None
    return items


# -- L1 extraction -------------------------------------------------------------------------------------------------


class LLMExtractor(_Stage):
    """Extractor over an LLM: scene segmentation and memory extraction in one call per ≤10 new messages."""

    def __init__(self, client: ChatClient, *, max_memories: int = MAX_MEMORIES_PER_CALL) -> None:
        super().__init__(client)
        self.max_memories = max_memories

    def extract(
        self,
        batch: Sequence[SourceMessage],
        background: Sequence[SourceMessage],
        *,
        previous_scene: str | None = None,
        mode: PromptMode = "chat",
        custom_prompt: CustomPrompt | str | None = None,
    ) -> list[Candidate]:
        """Candidates from `batch` (background is context only); raises PipelineError on failure."""
        self._begin()
        out: list[Candidate] = []
        context = list(background)
        scene = previous_scene
        # More than 10 messages are taken in slices so each call keeps the prompt's contract; earlier slices
        # become the background of later ones.
        for start in range(0, len(batch), MAX_NEW_MESSAGES):
            chunk = list(batch[start : start + MAX_NEW_MESSAGES])
            if not any(read_speaker(m.role, m.content, m.metadata).extract for m in chunk):
                context.extend(chunk)
                continue  # nothing a person said (only an AI's replies): no memory can come from it
            system, user = build_extraction_prompt(chunk, context[-MAX_BACKGROUND:], scene, mode)
            system = with_custom(system, custom_prompt, "l1")
            found, last_scene = self._ask(
                system,
                user,
                lambda text, chunk=chunk: _parse_extraction(text, chunk, mode, self.max_memories),
                json_mode=True,
                what="L1 extraction",
            )
            out.extend(found)
            scene = last_scene or scene
            context.extend(chunk)
        return out


def _parse_extraction(
    text: str, batch: Sequence[SourceMessage], mode: PromptMode, cap: int
) -> tuple[list[Candidate], str | None] | None:
    """(validated candidates, last scene name) of one answer; None when it is not a list of scenes at all."""
    items = _json_list(text, ("scenes", "data", "result"))
    if items is None:
        return None
    # A flat list of memories (no scene objects) is accepted as one unnamed scene.
    if items and all(isinstance(i, dict) and "memories" not in i and "content" in i for i in items):
        items = [{"scene_name": None, "message_ids": [], "memories": items}]
    if items and not any(isinstance(i, dict) and isinstance(i.get("memories"), list) for i in items):
        return None  # JSON, but nothing shaped like a scene: worth a re-ask
    allowed = CODE_TYPES if mode == "code" else CHAT_TYPES
    batch_ids = [m.id for m in batch]
    known = set(batch_ids)
    user_ids = tuple(m.id for m in batch if read_speaker(m.role, m.content, m.metadata).extract) or tuple(batch_ids)
    found: list[Candidate] = []
    seen: set[str] = set()
    last_scene: str | None = None
    for scene in items:
        if not isinstance(scene, dict) or not isinstance(scene.get("memories"), list):
            continue
        scene_name = _clean_text(scene.get("scene_name"), MAX_SCENE_NAME_CHARS, cut=True)
        last_scene = scene_name or last_scene
        scene_ids = tuple(i for i in _id_list(scene.get("message_ids")) if i in known)
        for memory in scene["memories"]:
            candidate = _candidate(memory, allowed, known, scene_ids or user_ids, scene_name)
            if candidate is None or candidate.content in seen:
                continue
            seen.add(candidate.content)
            found.append(candidate)
    if len(found) > cap:
        # Keep the most important ones (an absolute instruction, -1, ranks first), in their original order.
        ranked = sorted(range(len(found)), key=lambda i: -(101 if found[i].priority == -1 else found[i].priority))
        keep = set(ranked[:cap])
        found = [c for i, c in enumerate(found) if i in keep]
    return found, last_scene


def _candidate(
    memory: Any, allowed: Sequence[str], known: set[str], fallback_ids: tuple[str, ...], scene_name: str | None
) -> Candidate | None:
    if not isinstance(memory, dict):
        return None
    content = _clean_text(memory.get("content"), MAX_MEMORY_CHARS)
    kind = memory.get("type")
    kind = kind.strip().lower() if isinstance(kind, str) else None
    if content is None or kind not in allowed:
        return None
    priority = _priority(memory.get("priority"), kind)
    if priority is None:
        priority = DEFAULT_PRIORITY
    if priority != -1 and priority < PRIORITY_THRESHOLDS[kind]:
        return None
    ids = tuple(dict.fromkeys(i for i in _id_list(memory.get("source_message_ids")) if i in known))
    return Candidate(
        content=content,
        type=kind,
        priority=priority,
        source_message_ids=ids or fallback_ids,
        scene_name=scene_name,
        metadata=_clean_metadata(memory.get("metadata")),
    )


def _priority(value: Any, kind: str | None) -> int | None:
    """An int in 0..100 (or -1 for an instruction); None when the value is not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float) or value != value:  # NaN
        return None
    number = round(value)
    if number == -1 and kind == "instruction":
        return -1
    return max(0, min(100, number))


def _clean_text(value: Any, limit: int, *, cut: bool = False) -> str | None:
    """Stripped non-empty text within `limit` chars (longer: None, or cut when `cut`)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return None
    if len(text) > limit:
        return text[:limit].rstrip() if cut else None
    return text


def _id_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value if isinstance(v, str | int) and not isinstance(v, bool)]


def _clean_metadata(value: Any) -> dict[str, Any]:
    """Metadata limited to short scalar values (and short lists of them) under string keys."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    for key, item in list(value.items())[:20]:
        if not isinstance(key, str) or not key or len(key) > 64:
            continue
        if isinstance(item, str):
            out[key] = item[:500]
        elif item is None or isinstance(item, bool | int | float):
            out[key] = item
        elif isinstance(item, list):
            out[key] = [v[:200] if isinstance(v, str) else v for v in item[:20] if isinstance(v, str | int | float)]
    return out


# -- L1 dedup ------------------------------------------------------------------------------------------------------


class LLMDeduplicator(_Stage):
    """Deduplicator over an LLM: one batched call for all candidates that have neighbours."""

    def decide(self, candidates: Sequence[Candidate], neighbours: Sequence[Sequence[Neighbour]]) -> list[Decision]:
        """One decision per candidate, in order; a candidate without neighbours (or without a usable decision)
        is stored, so nothing is lost to a model's omission."""
        if len(candidates) != len(neighbours):
            raise ValueError("one neighbour list per candidate")
        self._begin()
        decisions = [Decision("store") for _ in candidates]
        asked = [i for i, near in enumerate(neighbours) if near]
        if not asked:
            return decisions
        system, user = build_dedup_prompt([candidates[i] for i in asked], [neighbours[i] for i in asked])
        items = self._ask(
            system,
            user,
            lambda text: _shaped(text, ("decisions", "results", "data"), "action"),
            json_mode=True,
            what="dedup",
        )
        by_number: dict[int, Any] = {}
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            number = item.get("candidate", position + 1)
            if isinstance(number, str) and number.strip().isdigit():
                number = int(number.strip())
            if isinstance(number, int) and not isinstance(number, bool) and 1 <= number <= len(asked):
                by_number.setdefault(number, item)
        for number, index in enumerate(asked, start=1):
            item = by_number.get(number)
            if item is not None:
                decisions[index] = _decision(item, candidates[index], neighbours[index])
        return decisions


def _decision(item: Mapping[str, Any], candidate: Candidate, near: Sequence[Neighbour]) -> Decision:
    action = item.get("action")
    action = action.strip().lower() if isinstance(action, str) else ""
    if action == "skip":
        return Decision("skip")
    if action not in ("update", "merge"):
        return Decision("store")
    valid = {n.id for n in near}
    targets = tuple(dict.fromkeys(i for i in _id_list(item.get("target_ids")) if i in valid))
    if not targets:
        return Decision("store")  # an update of nothing is a new memory
    family = CODE_TYPES if candidate.type in CODE_TYPES else CHAT_TYPES
    kind = item.get("merged_type")
    kind = kind.strip().lower() if isinstance(kind, str) and kind.strip().lower() in family else None
    priority = _priority(item.get("merged_priority"), kind or candidate.type)
    return Decision(
        action,  # type: ignore[arg-type]
        target_ids=targets,
        content=_clean_text(item.get("merged_content"), MAX_MEMORY_CHARS),
        type=kind,
        priority=priority,
    )


# -- L2 scenes -----------------------------------------------------------------------------------------------------

_FILENAME_JUNK = re.compile(r"[^\w\-.]+")
_FORBIDDEN_STEM = re.compile(r"^(report|summary|batch)", re.IGNORECASE)
_ACTION_ORDER = {"delete": 0, "merge": 1, "update": 2, "create": 3}


def normalize_scene_filename(name: Any) -> str | None:
    """A safe scene filename (`stem.md`: letters, digits, CJK, -, _, .), or None when nothing usable is left."""
    if not isinstance(name, str):
        return None
    base = re.split(r"[\\/]", name.strip())[-1].strip()
    if base.lower().endswith(".md"):
        base = base[:-3]
    stem = _FILENAME_JUNK.sub("_", re.sub(r"\s+", "_", base))
    stem = re.sub(r"\.{2,}", ".", re.sub(r"_{2,}", "_", stem)).strip("._-")[:80].rstrip("._-")
    if not stem or _FORBIDDEN_STEM.match(stem):
        return None
    return f"{stem}.md"


class LLMSceneWriter(_Stage):
    """Plans L2 scene file operations with one JSON-producing call; the engine applies them."""

    def plan(
        self,
        new_memories: Sequence[Any],
        existing_scenes: Sequence[tuple[Any, ...]],
        max_scenes: int,
        *,
        custom_prompt: CustomPrompt | str | None = None,
        now_ms: int | None = None,
    ) -> list[SceneOp]:
        """Validated operations, deletes and merges first; never more than `max_scenes` files afterwards.

        `existing_scenes` items are (filename, summary, heat) or (filename, summary, heat, body); with bodies
        the model can rewrite a scene faithfully on update. `new_memories` are Candidates, records or mappings
        with content/type/priority (id, scene_name, time_ms optional).
        """
        if max_scenes < 1:
            raise ValueError("max_scenes must be at least 1")
        self._begin()
        if not new_memories:
            return []
        system, user = build_scene_prompt(new_memories, existing_scenes, max_scenes, now_ms)
        system = with_custom(system, custom_prompt, "l2")
        items = self._ask(
            system, user, lambda text: _shaped(text, ("operations", "ops"), "action"), json_mode=True, what="L2 scenes"
        )
        return _scene_ops(items, [str(s[0]) for s in existing_scenes], max_scenes)


def _scene_ops(items: Sequence[Any], existing: Sequence[str], max_scenes: int) -> list[SceneOp]:
    files = {name.casefold(): name for name in existing}
    raw: list[SceneOp] = []
    for item in items:
        if isinstance(item, dict):
            op = _scene_op(item, files)
            if op is not None:
                raw.append(op)
    raw.sort(key=lambda op: _ACTION_ORDER[op.action])  # free slots before using them

    out: list[SceneOp] = []
    touched: set[str] = set()
    for op in raw:
        key = op.filename.casefold()
        if key in touched:
            continue  # one write per file per plan; a second would silently undo the first
        if op.action == "delete":
            if key in files:
                del files[key]
                touched.add(key)
                out.append(op)
            continue
        sources = tuple(s for s in op.merge_from if s.casefold() in files and s.casefold() not in touched)
        action = op.action
        if action == "merge" and not sources:
            action = "update"
        if action in ("update", "create"):
            action = "update" if key in files else "create"
        adds = key not in files
        if adds and len(files) - len(sources) >= max_scenes:
            log.warning("L2 plan: dropping %s of %s (would exceed %d scenes)", action, op.filename, max_scenes)
            continue
        for source in sources:
            files.pop(source.casefold(), None)
            touched.add(source.casefold())
        name = files.get(key, op.filename)
        files[key] = name
        touched.add(key)
        out.append(SceneOp(action, name, op.summary, op.content, sources if action == "merge" else ()))  # type: ignore[arg-type]
    return out


def _scene_op(item: Mapping[str, Any], files: Mapping[str, str]) -> SceneOp | None:
    action = item.get("action")
    action = action.strip().lower() if isinstance(action, str) else ""
    if action not in _ACTION_ORDER:
        return None
    filename = normalize_scene_filename(item.get("filename"))
    if filename is None:
        return None
    filename = files.get(filename.casefold(), filename)
    content = item.get("content") if isinstance(item.get("content"), str) else ""
    content = content.strip()
    if action == "delete" or content == "[DELETED]":
        return SceneOp("delete", filename) if filename.casefold() in files else None
    if not content:
        return None
    if action in ("create", "update"):  # the model's wording matters less than whether the file exists
        action = "update" if filename.casefold() in files else "create"
    content = truncate_at_paragraph(content, MAX_SCENE_CHARS)
    summary = _clean_text(item.get("summary"), 10 * MAX_SUMMARY_CHARS) or _first_line(content)
    summary = " ".join(summary.split())[:MAX_SUMMARY_CHARS]
    merge_from: tuple[str, ...] = ()
    if action == "merge":
        names = (normalize_scene_filename(n) for n in _id_list(item.get("merge_from")))
        merge_from = tuple(
            dict.fromkeys(
                files[n.casefold()]
                for n in names
                if n and n.casefold() in files and n.casefold() != filename.casefold()
            )
        )
    return SceneOp(action, filename, summary, content, merge_from)  # type: ignore[arg-type]


def _first_line(content: str) -> str:
    for line in content.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""


# -- L3 persona ----------------------------------------------------------------------------------------------------

_NAVIGATION = re.compile(r"\n-{3,}\s*\n#+\s*\S*\s*Scene Navigation.*\Z", re.DOTALL | re.IGNORECASE)
_WHOLE_FENCE = re.compile(r"\A```[A-Za-z]*[ \t]*\n(.*?)\n?```\s*\Z", re.DOTALL)


def truncate_at_paragraph(text: str, cap: int) -> str:
    """`text` cut to at most `cap` chars at the last paragraph (else line, else sentence) break that keeps at
    least half of it; trailing headings left without a body are removed."""
    text = text.strip()
    if len(text) <= cap:
        return text
    cut = text[:cap]
    for boundary in ("\n\n", "\n"):
        index = cut.rfind(boundary)
        if index >= cap // 2:
            cut = cut[:index]
            break
    else:
        index = max(cut.rfind(". "), cut.rfind("。"), cut.rfind("! "), cut.rfind("? "))
        if index >= cap // 2:
            cut = cut[: index + 1]
    lines = cut.rstrip().split("\n")
    while len(lines) > 1 and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines.pop()
    return "\n".join(lines).rstrip()


class LLMPersonaWriter(_Stage):
    """Writes the L3 persona (chat) or team doctrine (code) in one call, within its size cap."""

    def write(
        self,
        current_persona: str | None,
        scenes: Sequence[tuple[str, str, str]],
        mode: PromptMode = "chat",
        *,
        custom_prompt: CustomPrompt | str | None = None,
    ) -> str:
        """The new persona Markdown (no Scene Navigation), at most 2000 (chat) / 1200 (code) chars."""
        self._begin()
        cap = PERSONA_CAPS["code" if mode == "code" else "chat"]
        system, user = build_persona_prompt(current_persona, scenes, mode)
        system = with_custom(system, custom_prompt, "l3")
        return self._ask(system, user, lambda text: _persona_text(text, cap), json_mode=False, what="L3 persona")


def _persona_text(text: str, cap: int) -> str | None:
    body = text.replace("\ufeff", "").strip()
    fenced = _WHOLE_FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    body = re.sub(r"<think>.*?</think>", "", body, flags=re.DOTALL).strip()
    body = _NAVIGATION.sub("", "\n" + body).strip()  # the engine appends the navigation itself
    if not body:
        return None
    return truncate_at_paragraph(body, cap)
