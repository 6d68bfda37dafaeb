"""Sparsity rules of adcore/ops/cumulative.py."""

from __future__ import annotations
