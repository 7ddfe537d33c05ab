"""The `memhub` console script.

Claude Code starts `memhub hooks run <event>` as a new process on every prompt and every turn, so that command
line skips the command tree (typer, rich, the server's settings and every subcommand's imports), which is most
of a hook's wall time, and ends without the interpreter's teardown (memhub.hooks.run.exit_now). Anything else, a hook
run with options included, goes through the full CLI.
"""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if len(args) == 3 and args[:2] == ["hooks", "run"]:
        from memhub.hooks.run import EVENTS, exit_now, run_stdio

        if args[2] in EVENTS:
            run_stdio(args[2])
            exit_now()
    from memhub.cli.commands import app

    app()
