"""Batch rules of sums, means, extrema, statistics, cumulative ops, sorting, softmax and norms (adcore/ops/reductions.py, cumulative.py, ordering.py, norms.py, nn.py)."""

from __future__ import annotations

from adcore_batching.rules.table import BATCH_RULES  # noqa: F401
