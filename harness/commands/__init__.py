"""One module per CLI command (see harness/cli.py)."""
