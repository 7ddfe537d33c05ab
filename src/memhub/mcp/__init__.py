"""The memhub MCP server: memory and knowledge tools for MCP hosts, on stdio (`memhub mcp`) and at `/mcp`."""
