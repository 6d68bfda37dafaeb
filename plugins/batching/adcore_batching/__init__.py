"""adcore's batching rules: the rule kind "batch", which `adcore.vmap` reads, and its rules for the core ops."""

from __future__ import annotations

from adcore_batching.plugin import BATCH

__all__ = ["BATCH"]
