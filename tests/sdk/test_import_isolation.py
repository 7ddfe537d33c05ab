"""memhub.sdk is a client: importing it (every submodule) must never pull in the server or its heavy dependencies.

A fresh interpreter installs an import hook that refuses the server's packages, then imports the whole
`memhub.sdk` tree. A subprocess, because this test process has long since imported the server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

FORBIDDEN = (
    "fastapi",
    "uvicorn",
    "starlette",
    "numpy",
    "memhub.api",
    "memhub.store",
    "memhub.memory",
    "memhub.knowledge",
    "memhub.pipeline",
    "memhub.meta",
    "memhub.retrieval",
)

SCRIPT = textwrap.dedent(
    """
    import importlib, importlib.abc, json, pkgutil, sys

    FORBIDDEN = tuple(json.loads(sys.argv[1]))

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                raise ImportError(f"memhub.sdk must not import {name}")
            return None

    sys.meta_path.insert(0, Refuse())
    import memhub.sdk

    def refuse_walk_error(name):
        raise ImportError(f"could not import {name}")

    names = ["memhub.sdk"]
    for info in pkgutil.walk_packages(memhub.sdk.__path__, "memhub.sdk.", onerror=refuse_walk_error):
        importlib.import_module(info.name)
        names.append(info.name)
    leaked = sorted(m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    print(json.dumps({"modules": names, "leaked": leaked}))
    """
)


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_sdk_and_every_submodule_import_without_the_server() -> None:
    result = _run(SCRIPT, json.dumps(FORBIDDEN))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["leaked"] == []
    # The walk really covered the client modules (an empty walk would pass vacuously).
    assert {"memhub.sdk._errors", "memhub.sdk._http", "memhub.sdk._isolation"} <= set(report["modules"])
    assert {"memhub.sdk.memory", "memhub.sdk.metadata", "memhub.sdk.knowledge"} <= set(report["modules"])


def test_the_hook_does_refuse_a_server_import() -> None:
    """The guard itself works: the same hook makes importing the server fail."""
    probe = SCRIPT.replace("import memhub.sdk\n", "import memhub.sdk\nimport memhub.api\n", 1)
    result = _run(probe, json.dumps(FORBIDDEN))
    assert result.returncode != 0
    assert "memhub.sdk must not import memhub.api" in result.stderr
