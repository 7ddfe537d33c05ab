"""What a hook process imports: Claude Code starts one per event, so the hook path must not load the SDK's HTTP stack
(httpx, asyncio), the command tree (typer) or the server's dependencies (pydantic, fastapi, numpy).

Each check is a fresh interpreter (this test process has imported all of them long ago) that reports `sys.modules`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.hooks.conftest import CLI_TIMEOUT, SCOPE, HookRig, Transcript, clean_env

FORBIDDEN = ("httpx", "asyncio", "typer", "pydantic", "fastapi", "numpy")

# Imports what is asked, then prints the forbidden modules that got loaded.
IMPORT = textwrap.dedent(
    """
    import importlib, json, sys

    for name in sys.argv[2:]:
        importlib.import_module(name)
    forbidden = json.loads(sys.argv[1])
    print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in forbidden)))
    """
)

# Runs `memhub hooks run <event>` as the console script does (memhub.cli.entry:main), stdin passed through, and
# reports the forbidden modules loaded by the time the process ends. The hook ends with os._exit, skipping atexit.
HOOK = textwrap.dedent(
    """
    import json, os, sys

    forbidden = json.loads(sys.argv[1])
    end = os._exit

    def report(status):
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in forbidden)
        sys.stderr.write(json.dumps({"status": status, "loaded": loaded}))
        sys.stderr.flush()
        end(status)

    os._exit = report
    sys.argv = ["memhub", "hooks", "run", sys.argv[2]]
    from memhub.cli.entry import main

    main()
    """
)


def loaded_by_import(*modules: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT, json.dumps(FORBIDDEN), *modules],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_the_hook_path_imports_none_of_the_heavy_packages() -> None:
    assert loaded_by_import("memhub.cli.entry", "memhub.hooks.run") == []


def test_the_check_sees_a_heavy_import() -> None:
    """The same check on the SDK's client and the command tree finds what they load (it can fail)."""
    assert {"httpx"} <= set(loaded_by_import("memhub.sdk.memory"))
    assert {"typer"} <= set(loaded_by_import("memhub.cli.commands"))


def test_a_hook_run_end_to_end_loads_none_of_them(rig: HookRig, tmp_path: Path) -> None:
    """Every event, run to its end against a real gateway (and once against none), imports nothing forbidden on
    the way: a handler's own imports count too."""
    t = Transcript(tmp_path / "s.jsonl", "s-startup")
    t.append(t.user("Our deploys go through the staging cluster named blue-heron first."))
    rig.gateway.ok("/v3/core/write", {**SCOPE, "content": "Prefers short answers."})
    rig.gateway.ok("/v3/atomic/add", {**SCOPE, "content": "The staging cluster is blue-heron.", "type": "work_fact"})
    events = [
        ("session-start", t.payload("SessionStart", source="startup")),
        ("user-prompt-submit", t.payload("UserPromptSubmit", prompt="Which staging cluster do we deploy to?")),
        ("stop", t.payload("Stop")),
        ("pre-compact", t.payload("PreCompact", trigger="auto")),
    ]
    outputs: dict[tuple[str, bool], str] = {}
    for gateway_up in (True, False):
        if not gateway_up:
            rig.served.stop()
        for event, payload in events:
            done = subprocess.run(
                [sys.executable, "-c", HOOK, json.dumps(FORBIDDEN), event],
                input=json.dumps(payload),
                env=clean_env(rig.env),
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stderr) == {"status": 0, "loaded": []}, event
            outputs[event, gateway_up] = done.stdout
    # The runs did their work: the gateway's answers reached stdout, and the transcript was captured.
    assert "Prefers short answers." in outputs["session-start", True]
    assert "blue-heron" in outputs["user-prompt-submit", True]
    assert outputs["session-start", False] == ""
    assert len(rig.messages("s-startup")) == 1
