"""Errors shared by the edges (CLI, referee, tournaments)."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in what the user asked for: printed as one line, exit code 2."""
