"""`memhub mcp` and `memhub hooks`: agents reach a running gateway over HTTP through the SDK.

Each command takes the same connection flags (memhub.sdk.connection: `--url`, `--key`, `--user-key`,
`--service-id`, `--team-id`, `--agent-id`, `--user-id`, each also from its `MEMHUB_*` variable). Only the SDK
and these commands' own packages are imported, and only when a command runs: a hook is a new process per event.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from memhub.sdk.connection import ENVIRONMENT, Connection

mcp_app = typer.Typer(
    help="The memhub MCP server: run it on stdio for a host (`memhub mcp`), or write a host's MCP config.",
    invoke_without_command=True,
)
hooks_app = typer.Typer(help="Claude Code hooks: recall into each prompt, capture each turn.", no_args_is_help=True)

Url = Annotated[str | None, typer.Option("--url", help="Gateway URL (env MEMHUB_URL, default http://127.0.0.1:8420)")]
Key = Annotated[str | None, typer.Option("--key", help="Gateway key or user key (env MEMHUB_API_KEY)")]
UserKey = Annotated[
    str | None, typer.Option("--user-key", help="User key, when --key is the gateway key (env MEMHUB_USER_KEY)")
]
ServiceId = Annotated[str | None, typer.Option("--service-id", help="Tenant (service id) (env MEMHUB_SERVICE_ID)")]
TeamId = Annotated[str | None, typer.Option("--team-id", help="Team (env MEMHUB_TEAM_ID)")]
AgentId = Annotated[str | None, typer.Option("--agent-id", help="Agent (env MEMHUB_AGENT_ID)")]
UserId = Annotated[str | None, typer.Option("--user-id", help="User (env MEMHUB_USER_ID)")]


def connection(
    url: str | None,
    key: str | None,
    user_key: str | None,
    service_id: str | None,
    team_id: str | None,
    agent_id: str | None,
    user_id: str | None,
) -> Connection:
    """The flags given, completed from the environment."""
    return Connection.from_env(
        url=url,
        key=key,
        user_key=user_key,
        service_id=service_id,
        team_id=team_id,
        agent_id=agent_id,
        user_id=user_id,
    )


# -- memhub mcp ------------------------------------------------------------------------------------------------------
@mcp_app.callback()
def mcp_main(
    ctx: typer.Context,
    url: Url = None,
    key: Key = None,
    user_key: UserKey = None,
    service_id: ServiceId = None,
    team_id: TeamId = None,
    agent_id: AgentId = None,
    user_id: UserId = None,
    log_level: Annotated[
        str, typer.Option("--log-level", envvar="MEMHUB_LOG_LEVEL", help="Log level of the server's stderr log")
    ] = "warning",
) -> None:
    """Run the MCP server on stdio for a host (Claude Code, Cursor, VS Code …); logs go to stderr.

    It starts even when the gateway is down: each tool call reaches the gateway, and says so when it cannot.
    """
    if ctx.invoked_subcommand is not None:
        return
    try:
        from memhub.mcp.stdio import run
    except ImportError as exc:  # the `mcp` package is an extra
        typer.echo(f"error: the MCP server needs the mcp package: pip install 'memhub[mcp]' ({exc})", err=True)
        raise typer.Exit(2) from exc
    run(connection(url, key, user_key, service_id, team_id, agent_id, user_id), log_level=log_level)


# -- hooks and host configs (memhub.hooks) -------------------------------------------------------------------------

UserScope = Annotated[
    bool,
    typer.Option(
        "--user/--project",
        help="Write the user's own config (may hold the key) instead of the project's (shared; never holds it)",
    ),
]
ProjectDir = Annotated[
    Path | None, typer.Option("--project-dir", help="The project's root (default: $CLAUDE_PROJECT_DIR or the cwd)")
]
Command = Annotated[
    str | None,
    typer.Option("--command", help="How the host starts memhub (default: `memhub` if on PATH, else this install's)"),
]
HookEvent = Annotated[str, typer.Argument(help="session-start | user-prompt-submit | stop | pre-compact")]
Deadline = Annotated[
    float | None, typer.Option("--deadline", help="Seconds before the hook gives up (exit 0, no output)")
]


def _project_dir(given: Path | None) -> Path:
    if given is not None:
        return given.resolve()
    return Path(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()).resolve()


def _given_env(**flags: str | None) -> dict[str, str]:
    """The connection flags given on this command line, as the variables `Connection.from_env` reads."""
    return {ENVIRONMENT[name]: value for name, value in flags.items() if value}


def _launcher(command: str | None) -> list[str]:
    from memhub.hooks.jsonfile import memhub_command

    return shlex.split(command) if command else memhub_command()


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _report(change: Callable[[], list[str]]) -> None:
    """Make a config change and print what it did; a refusal (a bad argument, a file that cannot be merged into,
    which memhub.hooks raises as ValueError) is an error naming it, exit 2, nothing written."""
    try:
        lines = change()
    except ValueError as exc:
        _fail(str(exc))
    for line in lines:
        typer.echo(line)


@hooks_app.command("run")
def hooks_run(
    event: HookEvent,
    deadline: Deadline = None,
    url: Url = None,
    key: Key = None,
    user_key: UserKey = None,
    service_id: ServiceId = None,
    team_id: TeamId = None,
    agent_id: AgentId = None,
    user_id: UserId = None,
) -> None:
    """Run one Claude Code hook: its JSON on stdin; always exits 0, silent when memhub cannot help."""
    from memhub.hooks.run import run_stdio

    run_stdio(event, connection(url, key, user_key, service_id, team_id, agent_id, user_id), deadline=deadline)


@hooks_app.command("install")
def hooks_install(
    host: Annotated[str, typer.Argument(help="claude-code")],
    user: UserScope = False,
    project_dir: ProjectDir = None,
    command: Command = None,
    url: Url = None,
    key: Key = None,
    user_key: UserKey = None,
    service_id: ServiceId = None,
    team_id: TeamId = None,
    agent_id: AgentId = None,
    user_id: UserId = None,
) -> None:
    """Add memhub's hooks to Claude Code's settings (merged; existing hooks kept)."""
    from memhub.hooks import claude_code

    if host != "claude-code":
        _fail(f"host: must be claude-code (got {host!r})")
    env = _given_env(
        url=url, key=key, user_key=user_key, service_id=service_id, team_id=team_id, agent_id=agent_id, user_id=user_id
    )
    where, launcher = _project_dir(project_dir), _launcher(command)
    _report(lambda: claude_code.install(user=user, project_dir=where, command=launcher, env=env).lines)


@hooks_app.command("uninstall")
def hooks_uninstall(
    host: Annotated[str, typer.Argument(help="claude-code")],
    user: UserScope = False,
    project_dir: ProjectDir = None,
) -> None:
    """Remove exactly the hooks (and MEMHUB_* env) that install added."""
    from memhub.hooks import claude_code

    if host != "claude-code":
        _fail(f"host: must be claude-code (got {host!r})")
    where = _project_dir(project_dir)
    _report(lambda: claude_code.uninstall(user=user, project_dir=where).lines)


@mcp_app.command("install")
def mcp_install(
    host: Annotated[str, typer.Argument(help="claude-code | cursor | vscode | claude-desktop")],
    user: UserScope = False,
    project_dir: ProjectDir = None,
    http: Annotated[
        bool, typer.Option("--http", help="Point the host at <url>/mcp instead of launching memhub")
    ] = False,
    command: Command = None,
    url: Url = None,
    key: Key = None,
    user_key: UserKey = None,
    service_id: ServiceId = None,
    team_id: TeamId = None,
    agent_id: AgentId = None,
    user_id: UserId = None,
) -> None:
    """Write the memhub MCP server into a host's MCP config (merged; other servers kept)."""
    from memhub.hooks import hosts

    env = _given_env(
        url=url, key=key, user_key=user_key, service_id=service_id, team_id=team_id, agent_id=agent_id, user_id=user_id
    )
    where, launcher = _project_dir(project_dir), _launcher(command)
    _report(lambda: hosts.install(host, user=user, project_dir=where, command=launcher, env=env, http=http))


@mcp_app.command("uninstall")
def mcp_uninstall(
    host: Annotated[str, typer.Argument(help="claude-code | cursor | vscode | claude-desktop")],
    user: UserScope = False,
    project_dir: ProjectDir = None,
) -> None:
    """Remove the memhub MCP server from a host's MCP config."""
    from memhub.hooks import hosts

    where = _project_dir(project_dir)
    _report(lambda: hosts.uninstall(host, user=user, project_dir=where))
