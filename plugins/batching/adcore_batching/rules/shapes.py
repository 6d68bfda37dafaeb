"""Batch rules of transpose, reshape, broadcasting, indexing, concatenate, stack, the ops that move elements (adcore/ops/shapes.py, rearrangements.py, composite_shapes.py)."""

from __future__ import annotations

from adcore_batching.rules.table import BATCH_RULES  # noqa: F401
