"""CLI subcommands, one module per command."""
