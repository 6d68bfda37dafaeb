"""Sparsity rules of adcore/ops/reductions.py."""

from __future__ import annotations
