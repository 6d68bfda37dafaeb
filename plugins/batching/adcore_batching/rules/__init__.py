"""The batch rules of the core ops, one table per family of ops, gathered into BATCH_RULES."""

from __future__ import annotations

BATCH_RULES: dict = {}
