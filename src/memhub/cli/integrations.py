"""`memhub mcp` and `memhub hooks`: agents reach a running gateway over HTTP through the SDK.

Each command takes the same connection flags (memhub.sdk.connection: `--url`, `--key`, `--user-key`,
`--service-id`, `--team-id`, `--agent-id`, `--user-id`, each also from its `MEMHUB_*` variable). Only the SDK
and these commands' own packages are imported, and only when a command runs: a hook is a new process per event.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memhub.sdk.connection import Connection

mcp_app = typer.Typer(
    help="The memhub MCP server: run it on stdio for a host (`memhub mcp`), or write a host's MCP config.",
    invoke_without_command=True,
)
hooks_app = typer.Typer(help="Claude Code hooks: recall into each prompt, capture each turn.", no_args_is_help=True)

Url = Annotated[str | None, typer.Option("--url", help="Gateway URL [env MEMHUB_URL, default http://127.0.0.1:8420]")]
Key = Annotated[str | None, typer.Option("--key", help="Gateway key or user key [env MEMHUB_API_KEY]")]
UserKey = Annotated[
    str | None, typer.Option("--user-key", help="User key, when --key is the gateway key [env MEMHUB_USER_KEY]")
]
ServiceId = Annotated[str | None, typer.Option("--service-id", help="Tenant (service id) [env MEMHUB_SERVICE_ID]")]
TeamId = Annotated[str | None, typer.Option("--team-id", help="Team [env MEMHUB_TEAM_ID]")]
AgentId = Annotated[str | None, typer.Option("--agent-id", help="Agent [env MEMHUB_AGENT_ID]")]
UserId = Annotated[str | None, typer.Option("--user-id", help="User [env MEMHUB_USER_ID]")]


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
