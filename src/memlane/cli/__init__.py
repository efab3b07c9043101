"""Command-line adapter: ``memlane`` and its subcommands."""

from memlane.cli.app import app, main

__all__ = ["app", "main"]
