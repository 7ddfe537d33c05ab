"""`python -m memhub.cli`: the `memhub` command."""

from memhub.cli.entry import main

main()
