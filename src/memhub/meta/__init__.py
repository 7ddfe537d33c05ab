"""The management plane: users, teams, agents, tasks, assets, keys, config and the knowledge registry, with their
business rules and the authorization of every caller."""
