"""`python -m memhub.cli`: the `memhub` command."""

from memhub.cli.app import app

app()
