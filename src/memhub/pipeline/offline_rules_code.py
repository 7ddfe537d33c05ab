"""Code-mode rules of the offline extractor: team conventions, decisions, tasks and resources.

In code mode (`promptMode: code`) memories are about the work, not the person: the original's code-mode types
`work_method | work_fact | work_task | work_artifact`, with owner/deadline/status, method type
and artifact references in metadata. Applied with `offline_rules.run_rules` like the chat rules.
"""

from __future__ import annotations

import re

from memhub.pipeline.offline_rules import (
    CODE_ARTIFACT,
    CODE_FACT,
    CODE_METHOD,
    CODE_TASK,
    Built,
    Context,
    Rule,
    clip,
    rule,
)
from memhub.pipeline.offline_rules_en import sentence_of, swap_pronouns, third_person_verb
from memhub.pipeline.offline_rules_en import topic_of as topic_en
from memhub.pipeline.offline_rules_zh import third_person
from memhub.pipeline.offline_rules_zh import topic_of as topic_zh

# ---------------------------------------------------------------- English

_TEAM = r"(?:we|our team|the team)"


@rule(
    "convention",
    CODE_METHOD,
    80,
    rf"{_TEAM}\s+(?:always\s+|usually\s+|now\s+|currently\s+|all\s+)?"
    r"(?P<v>use|are using|'re using|follow|stick to|uses|standardi[sz]e on|standardi[sz]ed on|prefer)\s+(?P<o>.+)",
)
def _convention(m: re.Match[str], ctx: Context) -> Built | None:
    verb = re.sub(r"^(?:'re|are)\s+", "is ", m["v"].lower())
    head, _, tail = verb.partition(" ")
    if head not in ("is", "uses") and not verb.endswith("ed on"):
        verb = f"{third_person_verb(head)} {tail}".strip()  # "we follow" → "the team follows"
    obj = clip(m["o"])
    return Built(f"The team {verb} {obj}.", obj, {"method_type": "convention"})


@rule(
    "convention",
    CODE_METHOD,
    80,
    r"our\s+(?P<w>(?:[\w-]+\s+){0,3}(?:convention|standard|style guide|style|rule|policy|workflow|process))"
    r"\s+is\s+(?P<o>.+)",
)
def _our_convention(m: re.Match[str], ctx: Context) -> Built | None:
    obj = clip(m["o"])
    return Built(f"The team's {m['w'].lower()} is {obj}.", m["w"].lower(), {"method_type": "convention"})


@rule(
    "decision",
    CODE_FACT,
    80,
    r"(?P<s>we|our team|the team|I)\s+(?:have\s+|'ve\s+|just\s+|finally\s+)?"
    r"(?P<v>decided|agreed|chose|settled on|picked)\s+(?P<o>.+)",
)
def _decision(m: re.Match[str], ctx: Context) -> Built | None:
    who = "User" if m["s"] == "I" else "The team"
    obj = clip(m["o"])
    return Built(f"{who} {m['v'].lower()} {swap_pronouns(obj)}.", topic_en(re.sub(r"^(?:to|on|that)\s+", "", obj)))


@rule("deadline", CODE_TASK, 85, r"(?:the\s+)?deadline(?:\s+for\s+(?P<w>.+?))?\s+is\s+(?P<o>.+)")
def _deadline(m: re.Match[str], ctx: Context) -> Built | None:
    what = f" for {clip(m['w'])}" if m["w"] else ""
    return Built(f"The deadline{what} is {clip(m['o'])}.", clip(m["w"] or "deadline"), {"status": "open"})


@rule("deadline", CODE_TASK, 85, r"(?P<w>.+?)\s+(?:is|are)\s+due\s+(?P<o>.+)")
def _due(m: re.Match[str], ctx: Context) -> Built | None:
    what = swap_pronouns(clip(m["w"]))
    return Built(sentence_of(f"{what} is due {clip(m['o'])}"), topic_en(what), {"status": "open"})


@rule("todo", CODE_TASK, 70, r"(?:TODO|to-?do|action item)\s*[:：-]\s*(?P<o>.+)")
def _todo(m: re.Match[str], ctx: Context) -> Built | None:
    obj = clip(m["o"])
    return Built(f"TODO: {obj}.", topic_en(obj), {"status": "open"})


@rule(
    "task", CODE_TASK, 75, rf"(?P<s>{_TEAM}|I)\s+(?:still\s+)?(?:need|needs|have|has|must)\s+to\s+(?P<o>.+?\s+by\s+.+)"
)
def _task(m: re.Match[str], ctx: Context) -> Built | None:
    who = "User needs" if m["s"].lower() == "i" else "The team needs"
    obj = clip(m["o"])
    return Built(f"{who} to {swap_pronouns(obj)}.", topic_en(obj.split(" by ")[0]), {"status": "open"})


_ARTIFACTS = (
    r"repo|repository|docs|documentation|dashboard|spec|design doc|wiki|runbook|config|endpoint|api|bucket|"
    r"board|tracker"
)


@rule(
    "artifact",
    CODE_ARTIFACT,
    75,
    rf"(?:the|our)\s+(?P<w>(?:[\w-]+\s+){{0,2}}(?:{_ARTIFACTS}))\s+(?:is|lives|are)\s+(?:at|in|under|on)\s+(?P<r>\S+)(?P<o>.*)",
)
def _artifact(m: re.Match[str], ctx: Context) -> Built | None:
    ref = m["r"].rstrip(".,;")
    return Built(f"The {m['w'].lower()} is at {ref}{clip(m['o'])}.", m["w"].lower(), {"artifact_ref": ref})


@rule(
    "project_fact",
    CODE_FACT,
    65,
    r"our\s+(?P<w>(?:[\w-]+\s+){0,3}?[\w-]+)\s+(?P<v>is|are|runs on|run on|uses|use)\s+(?P<o>.+)",
)
def _project_fact(m: re.Match[str], ctx: Context) -> Built | None:
    verb = {"run on": "runs on", "use": "uses"}.get(m["v"].lower(), m["v"].lower())
    return Built(f"The team's {m['w']} {verb} {clip(m['o'])}.", m["w"])


# ---------------------------------------------------------------- Chinese


@rule(
    "convention", CODE_METHOD, 80, r"我们(?:团队|组)?(?:一直|统一|都|现在|目前)*(?P<v>用|使用|采用|遵循|遵守)(?P<o>.+)"
)
def _convention_zh(m: re.Match[str], ctx: Context) -> Built | None:
    obj = clip(m["o"])
    return Built(f"团队{m['v']}{obj}。", topic_zh(obj), {"method_type": "convention"})


@rule("convention", CODE_METHOD, 80, r"我们(?:的|团队的)(?P<w>.{0,8}?(?:规范|约定|风格|流程|规则|标准))是(?P<o>.+)")
def _our_convention_zh(m: re.Match[str], ctx: Context) -> Built | None:
    return Built(f"团队的{m['w']}是{clip(m['o'])}。", m["w"], {"method_type": "convention"})


@rule("decision", CODE_FACT, 80, r"我们(?:已经|最终|最后)?(?P<v>决定|商定|定了)(?P<o>.+)")
def _decision_zh(m: re.Match[str], ctx: Context) -> Built | None:
    obj = clip(m["o"])
    return Built(f"团队{m['v']}{obj}。", topic_zh(obj))


@rule("convention", CODE_METHOD, 80, r"我们(?:已经)?约定(?P<o>.+)")
def _agreed_zh(m: re.Match[str], ctx: Context) -> Built | None:
    obj = clip(m["o"])
    return Built(f"团队约定{obj}。", topic_zh(obj), {"method_type": "convention"})


@rule("deadline", CODE_TASK, 85, r"(?P<w>.*?)的?截止(?:日期|时间)?(?:是|为|在)(?P<o>.+)")
def _deadline_zh(m: re.Match[str], ctx: Context) -> Built | None:
    what = third_person(clip(m["w"]))
    return Built(
        f"{what}的截止日期是{clip(m['o'])}。" if what else f"截止日期是{clip(m['o'])}。",
        what or "截止日期",
        {"status": "open"},
    )


@rule(
    "deadline",
    CODE_TASK,
    85,
    r"(?P<w>.+?)(?:要|需要|必须|得)在(?P<o>.+?)(?:之前|以前|前)(?P<v>完成|交付|上线|提交|搞定|发布)",
)
def _due_zh(m: re.Match[str], ctx: Context) -> Built | None:
    what = third_person(clip(m["w"])).replace("我们", "团队")
    return Built(f"{what}需要在{m['o']}之前{m['v']}。", topic_zh(what), {"status": "open"})


@rule("todo", CODE_TASK, 70, r"(?:TODO|todo|待办|待办事项)\s*[:：]\s*(?P<o>.+)")
def _todo_zh(m: re.Match[str], ctx: Context) -> Built | None:
    obj = clip(m["o"])
    return Built(f"待办：{obj}。", topic_zh(obj), {"status": "open"})


@rule(
    "artifact",
    CODE_ARTIFACT,
    75,
    r"(?:我们的)?(?P<w>.{0,6}?(?:仓库|代码库|文档|接口|配置|看板|设计稿))(?:在|地址是|位于)(?P<r>\S+)",
)
def _artifact_zh(m: re.Match[str], ctx: Context) -> Built | None:
    ref = clip(m["r"])
    return Built(f"{m['w']}在{ref}。", m["w"], {"artifact_ref": ref})


CODE_RULES_EN: tuple[Rule, ...] = (
    _convention,
    _our_convention,
    _decision,
    _deadline,
    _todo,
    _task,
    _due,
    _artifact,
    _project_fact,
)
CODE_RULES_ZH: tuple[Rule, ...] = (
    _convention_zh,
    _our_convention_zh,
    _decision_zh,
    _agreed_zh,
    _deadline_zh,
    _due_zh,
    _todo_zh,
    _artifact_zh,
)
