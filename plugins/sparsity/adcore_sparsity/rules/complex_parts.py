"""Sparsity rules of adcore/ops/complex_parts.py."""

from __future__ import annotations
