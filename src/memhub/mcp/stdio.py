"""`memhub mcp`: the server on stdio, talking to a gateway over HTTP with the connection's settings.

stdout is the MCP wire, so everything else (logs, warnings) goes to stderr.
"""

from __future__ import annotations

import logging
import sys

import anyio
from mcp.server.stdio import stdio_server

from memhub.mcp.backend import ConnectionBackend
from memhub.mcp.server import MemhubMCP
from memhub.sdk.connection import Connection

log = logging.getLogger("memhub.mcp")


async def serve(connection: Connection) -> None:
    """Serve one host over this process's stdin/stdout until it closes them."""
    backend = ConnectionBackend(connection)
    server = MemhubMCP(backend).server()
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await backend.aclose()


def run(connection: Connection, *, log_level: str = "WARNING") -> None:
    """Log to stderr only, then serve (the gateway is reached at the first call, not here)."""
    logging.basicConfig(
        stream=sys.stderr, level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    log.info("memhub mcp on stdio, gateway %s", connection.url)
    anyio.run(serve, connection)
