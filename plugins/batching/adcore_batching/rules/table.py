"""The "batch" rule table itself, which the modules of this package fill (one per family of core
ops). What a rule receives and returns: adcore.extend.batching's docstring."""

from __future__ import annotations

from adcore.extend import RuleTable

BATCH_RULES = RuleTable("batch", "adcore_batching.rules")
