"""Errors that stop a verb (exit 2). Standard library only: the CLI imports it before any verb."""

from __future__ import annotations


class UsageError(Exception):
    """Bad arguments or environment: the verb cannot run (exit 2)."""
