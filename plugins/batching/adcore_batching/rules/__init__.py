"""The batch rules of the core ops: the "batch" rule table `adcore.vmap` reads, one module per
family of ops. The rule form is in adcore.extend.batching's docstring; an elementwise op needs no
entry (its rule comes from its flag), and an op with none runs once per batch element."""

from __future__ import annotations

# each module fills the one table with the rules of its family of ops
from adcore_batching.rules import linalg, reductions, shapes  # noqa: F401
from adcore_batching.rules.table import BATCH_RULES

__all__ = ["BATCH_RULES"]
