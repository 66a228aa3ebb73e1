"""One module per CLI command (discovered by fdp_core.cli)."""
