"""Which stages produce memories: the offline rules by default, an LLM when one is configured."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memhub.memory.scene_format import parse_heat, split_scene
from memhub.model import AtomicRecord
from memhub.pipeline.llm_prompts import CustomPrompt
from memhub.pipeline.persona import build_persona
from memhub.pipeline.scenes import SceneDraft, build_scenes
from memhub.pipeline.types import Deduplicator, Extractor, PromptMode

# How many of the most recently changed memories an LLM scene plan is shown.
LLM_SCENE_MEMORIES = 40


class SceneWriter(Protocol):
    """Turns a profile's memories into scene drafts (deterministic, or planned by an LLM)."""

    def scenes(
        self,
        memories: Sequence[AtomicRecord],
        existing: Sequence[tuple[str, str, str]],
        custom: CustomPrompt | None = None,
        changed: Sequence[AtomicRecord] = (),
    ) -> list[SceneDraft]:
        """Drafts to write or delete; `existing` is (path, summary, content) of the current scene files and
        `changed` the memories new or changed since the last run (a subset of `memories`)."""


class PersonaWriter(Protocol):
    """Writes the persona from memories and scenes."""

    def persona(
        self,
        current: str | None,
        memories: Sequence[AtomicRecord],
        scenes: Sequence[SceneDraft],
        custom: CustomPrompt | None = None,
    ) -> str:
        """The new persona text."""


@dataclass(frozen=True, slots=True)
class Stages:
    """The four producers the runner uses, and the name recorded with what they produce."""

    extractor: Extractor
    deduplicator: Deduplicator
    scenes: SceneWriter
    persona: PersonaWriter
    generator: str  # "offline" or the model name


@dataclass(frozen=True, slots=True)
class RuleScenes:
    """Scenes grouped by the extracted scene name (no LLM)."""

    max_scenes: int

    def scenes(
        self,
        memories: Sequence[AtomicRecord],
        existing: Sequence[tuple[str, str, str]],
        custom: CustomPrompt | None = None,
        changed: Sequence[AtomicRecord] = (),
    ) -> list[SceneDraft]:
        return build_scenes(memories, self.max_scenes)


@dataclass(frozen=True, slots=True)
class RulePersona:
    """The persona from the highest-priority memories (no LLM)."""

    mode: PromptMode = "chat"

    def persona(
        self,
        current: str | None,
        memories: Sequence[AtomicRecord],
        scenes: Sequence[SceneDraft],
        custom: CustomPrompt | None = None,
    ) -> str:
        return build_persona(memories, self.mode)


@dataclass(frozen=True, slots=True)
class LLMScenes:
    """Scenes planned by an LLM (create / update / delete / merge), applied by the runner."""

    writer: object  # memhub.pipeline.llm_stages.LLMSceneWriter
    max_scenes: int

    def scenes(
        self,
        memories: Sequence[AtomicRecord],
        existing: Sequence[tuple[str, str, str]],
        custom: CustomPrompt | None = None,
        changed: Sequence[AtomicRecord] = (),
    ) -> list[SceneDraft]:
        # As in the original: the model integrates what changed since its last run; nothing changed, nothing to do.
        recent = list(changed)[-LLM_SCENE_MEMORIES:]
        if not recent:
            return []
        heats = {path: parse_heat(split_scene(content)[0].get("heat"), 1) for path, _, content in existing}
        current = [(path, summary, heats[path], split_scene(content)[1]) for path, summary, content in existing]
        drafts: list[SceneDraft] = []
        for op in self.writer.plan(recent, current, self.max_scenes, custom_prompt=custom):  # type: ignore[attr-defined]
            if op.action == "delete":
                drafts.append(SceneDraft(op.filename, "", "", 0, (), deleted=True))
                continue
            # Heat, as the original counts it: a new scene 1, an update the old heat + 1, a merge the sum + 1.
            heat = heats.get(op.filename, 0) + sum(heats.get(f, 0) for f in op.merge_from) + 1
            drafts.append(SceneDraft(op.filename, op.summary, op.content, heat, ()))
            drafts += [SceneDraft(f, "", "", 0, (), deleted=True) for f in op.merge_from if f != op.filename]
        return drafts


@dataclass(frozen=True, slots=True)
class LLMPersona:
    """The persona written by an LLM from the current persona and the scenes."""

    writer: object  # memhub.pipeline.llm_stages.LLMPersonaWriter
    mode: PromptMode = "chat"

    def persona(
        self,
        current: str | None,
        memories: Sequence[AtomicRecord],
        scenes: Sequence[SceneDraft],
        custom: CustomPrompt | None = None,
    ) -> str:
        files = [(s.path, s.summary, split_scene(s.body)[1]) for s in scenes]
        return self.writer.write(current, files, self.mode, custom_prompt=custom)  # type: ignore[attr-defined]
