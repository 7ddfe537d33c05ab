"""`memhub hooks run <event>` as Claude Code runs it: a subprocess, the hook JSON on stdin, a real gateway."""

from __future__ import annotations

import json
from pathlib import Path

from memhub.hooks.state import CursorStore
from tests.hooks.conftest import SCOPE, HookRig, Transcript, memhub, text, thinking, tool_use
from tests.meta.org import Org

SESSION = "7f1c2a9e-0b6d-4c39-9a51-2b1f8e0c4d10"


def first_turn(t: Transcript) -> None:
    """A turn as Claude Code logs it: the prompt, a reply in several blocks around a tool call, noise around it."""
    t.append(
        {"type": "summary", "summary": "Earlier work", "leafUuid": "x"},
        t.user("<command-name>/clear</command-name>", isMeta=True),
        t.user("Our deploys go through the staging cluster named blue-heron first."),
        t.assistant("msg-1", thinking("the user describes their deploy flow")),
        t.assistant("msg-1", text("Understood, staging is blue-heron.")),
        t.assistant("msg-1", tool_use("tool-1", "kubectl get ns")),
        t.tool_result("tool-1", "default kube-system"),
        t.assistant("msg-2", text("The cluster has the default namespaces.")),
        t.user("a sub-agent's prompt", isSidechain=True),
    )


def test_stop_captures_the_turn_from_the_transcript_once(rig: HookRig, tmp_path: Path) -> None:
    t = Transcript(tmp_path / f"{SESSION}.jsonl", SESSION)
    first_turn(t)

    first = rig.run("stop", t.payload("Stop", stop_hook_active=False))
    assert (first.returncode, first.stdout) == (0, "")
    stored = rig.messages(SESSION)
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "Our deploys go through the staging cluster named blue-heron first."),
        ("assistant", "Understood, staging is blue-heron."),
        ("assistant", "The cluster has the default namespaces."),
    ]

    # Stop again (and SessionEnd, which runs the same hook) with nothing new: nothing more is stored.
    again = rig.run("stop", t.payload("SessionEnd", reason="other"))
    assert (again.returncode, again.stdout) == (0, "")
    assert len(rig.messages(SESSION)) == 3

    # The next turn, with a line Claude Code is still writing: only whole lines are taken.
    t.append(t.user("Remember that releases happen on Thursdays."), partial='{"type": "assistant", "mess')
    compact = rig.run("pre-compact", t.payload("PreCompact", trigger="auto", custom_instructions=""))
    assert (compact.returncode, compact.stdout) == (0, "")
    assert [m["content"] for m in rig.messages(SESSION)][3:] == ["Remember that releases happen on Thursdays."]

    # The line is finished; the next Stop takes it (and only it).
    with t.path.open("a", encoding="utf-8") as f:
        f.write("\n")
    t.append(t.assistant("msg-3", text("Noted: releases on Thursdays.")))
    rig.run("stop", t.payload("Stop"))
    assert [m["content"] for m in rig.messages(SESSION)][3:] == [
        "Remember that releases happen on Thursdays.",
        "Noted: releases on Thursdays.",
    ]


def test_a_range_sent_before_a_crash_is_stored_once(rig: HookRig, tmp_path: Path) -> None:
    t = Transcript(tmp_path / f"{SESSION}.jsonl", SESSION)
    first_turn(t)
    assert rig.run("stop", t.payload("Stop")).returncode == 0
    assert len(rig.messages(SESSION)) == 3

    # The state a hook killed after the gateway stored the range, before it moved the cursor, leaves behind.
    store = CursorStore(rig.state_dir)
    cursor = store.load(SESSION)
    end = cursor.offset
    assert end == t.path.stat().st_size
    cursor.offset, cursor.pending_start, cursor.pending_end = 0, 0, end
    store.save(SESSION, cursor)
    t.append(t.user("And hotfixes skip staging."))

    assert rig.run("stop", t.payload("Stop")).returncode == 0
    assert [m["content"] for m in rig.messages(SESSION)] == [
        "Our deploys go through the staging cluster named blue-heron first.",
        "Understood, staging is blue-heron.",
        "The cluster has the default namespaces.",
        "And hotfixes skip staging.",
    ]
    resumed = store.load(SESSION)
    assert (resumed.offset, resumed.pending_start) == (t.path.stat().st_size, None)


def test_session_start_gives_persona_and_scene_index(rig: HookRig, tmp_path: Path) -> None:
    rig.gateway.ok("/v3/core/write", {**SCOPE, "content": "Prefers concise answers. Works on the payments team."})
    rig.gateway.ok("/v3/scenario/create", {**SCOPE, "path": "deploys.md", "content": "Staging first, then prod."})
    t = Transcript(tmp_path / f"{SESSION}.jsonl", SESSION)

    done = rig.run("session-start", t.payload("SessionStart", source="startup", model="claude"))

    assert done.returncode == 0
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "<user-persona>" in context and "Works on the payments team." in context
    assert "- `deploys.md`" in context
    assert "tdai_" not in context  # no tool is named that Claude Code was not given


def test_session_start_with_nothing_remembered_prints_nothing(rig: HookRig, tmp_path: Path) -> None:
    t = Transcript(tmp_path / f"{SESSION}.jsonl", SESSION)
    done = rig.run("session-start", t.payload("SessionStart", source="startup"))
    assert (done.returncode, done.stdout) == (0, "")


def test_user_prompt_submit_recalls_for_the_prompt(rig: HookRig, tmp_path: Path) -> None:
    rig.gateway.ok("/v3/atomic/add", {**SCOPE, "content": "The user drinks green tea, not coffee.", "type": "persona"})
    t = Transcript(tmp_path / f"{SESSION}.jsonl", SESSION)

    done = rig.run("user-prompt-submit", t.payload("UserPromptSubmit", prompt="Which tea should I order for me?"))

    assert done.returncode == 0
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    assert out["additionalContext"].startswith("<relevant-memories>")
    assert "green tea" in out["additionalContext"]
    assert len(out["additionalContext"]) <= 8000

    for trivial in ("ok", "/compact", "/review please"):
        skipped = rig.run("user-prompt-submit", t.payload("UserPromptSubmit", prompt=trivial))
        assert (skipped.returncode, skipped.stdout) == (0, "")


def test_gateway_down_every_hook_exits_0_silently(rig: HookRig, tmp_path: Path) -> None:
    t = Transcript(tmp_path / f"{SESSION}.jsonl", SESSION)
    first_turn(t)
    rig.served.stop()

    for event, name, extra in [
        ("session-start", "SessionStart", {"source": "startup"}),
        ("user-prompt-submit", "UserPromptSubmit", {"prompt": "What do we deploy to first?"}),
        ("stop", "Stop", {}),
        ("pre-compact", "PreCompact", {"trigger": "manual"}),
    ]:
        done = rig.run(event, t.payload(name, **extra))
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), event
    assert rig.log().count("WARNING") >= 4

    # Nothing was lost: the range stays pending and goes out once the gateway is back.
    assert CursorStore(rig.state_dir).load(SESSION).pending_start == 0


def test_bad_input_exits_0_silently(rig: HookRig) -> None:
    for stdin in ("", "not json", "[1, 2]", json.dumps({"session_id": "s"})):
        done = memhub("hooks", "run", "stop", stdin=stdin, env=rig.env)
        assert (done.returncode, done.stdout) == (0, ""), stdin
    unknown = memhub("hooks", "run", "bogus-event", stdin="{}", env=rig.env)
    assert (unknown.returncode, unknown.stdout) == (0, "")
    assert "bogus-event" in rig.log()


def test_a_user_key_alone_is_resolved_once_and_its_ids_reused(rig: HookRig, tmp_path: Path) -> None:
    org = Org(rig.gateway, service="svc-hooks")
    scope = {"team_id": org.team_id, "agent_id": org.admin_agent_id, "user_id": org.admin.user_id}
    org.ok(
        org.admin,
        "/v3/atomic/add",
        {**scope, "content": "The user's staging cluster is blue-heron.", "type": "persona"},
    )
    env = {k: v for k, v in rig.env.items() if k not in ("MEMHUB_TEAM_ID", "MEMHUB_AGENT_ID", "MEMHUB_USER_ID")}
    env |= {"MEMHUB_API_KEY": org.admin.key, "MEMHUB_SERVICE_ID": "svc-hooks"}
    t = Transcript(tmp_path / f"{SESSION}.jsonl", SESSION)
    prompt = t.payload("UserPromptSubmit", prompt="Which staging cluster do we use?")

    first = memhub("hooks", "run", "user-prompt-submit", stdin=json.dumps(prompt), env=env)
    assert first.returncode == 0 and "blue-heron" in first.stdout
    (kept,) = (rig.state_dir / "identity").glob("*.json")
    remembered = json.loads(kept.read_text(encoding="utf-8"))
    assert {k: remembered[k] for k in scope} == scope
    assert org.admin.key not in kept.read_text(encoding="utf-8")

    # The next hook takes the ids from the state dir, not from the gateway: pointed at another team, it recalls
    # from that team (nothing) instead of resolving the key's own again.
    kept.write_text(json.dumps({**remembered, "team_id": "team-elsewhere"}), encoding="utf-8")
    second = memhub("hooks", "run", "user-prompt-submit", stdin=json.dumps(prompt), env=env)
    assert (second.returncode, second.stdout) == (0, "")
    # Stale ids are not kept: past the time limit the key is resolved again.
    kept.write_text(json.dumps({**remembered, "team_id": "team-elsewhere", "at": 0}), encoding="utf-8")
    third = memhub("hooks", "run", "user-prompt-submit", stdin=json.dumps(prompt), env=env)
    assert third.returncode == 0 and "blue-heron" in third.stdout


def test_a_follow_up_prompt_is_recalled_with_the_turns_before_it(rig: HookRig, tmp_path: Path) -> None:
    turns = [
        {"role": "user", "content": "Alice: I work as a pastry chef in Lisbon"},
        {"role": "assistant", "content": "Bob: I work as a nurse at the city hospital"},
    ]
    rig.gateway.ok("/v3/conversation/add", {**SCOPE, "session_id": "earlier", "messages": turns})

    def first_recalled(earlier_prompt: str) -> str:
        t = Transcript(tmp_path / f"{earlier_prompt[:9]}.jsonl", SESSION)
        t.append(t.user(earlier_prompt), t.assistant("msg-1", text("Lisbon, I think.")))
        done = rig.run("user-prompt-submit", t.payload("UserPromptSubmit", prompt="And what does she do for work?"))
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        return next(line for line in context.splitlines() if line.startswith("- ")).split("] ", 1)[1]

    # The same prompt, after a question about Alice or about Bob in the transcript, recalls that person first.
    assert first_recalled("Where did Alice move to?").startswith("Alice:")
    assert first_recalled("Where did Bob move to?").startswith("Bob:")
