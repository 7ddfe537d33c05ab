"""Knowledge service: team wiki and code-graph assets that agents discover through /v3/tools."""
