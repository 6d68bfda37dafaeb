"""The `sparsity` rules of the core ops, one table per group of ops, as the reverse and forward
plugins keep theirs (adcore.extend.sparsity says what a rule receives and returns)."""

from __future__ import annotations

RULES: dict = {}
