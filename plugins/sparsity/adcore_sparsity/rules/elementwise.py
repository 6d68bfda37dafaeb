"""Sparsity rules of adcore/ops/elementwise.py."""

from __future__ import annotations
