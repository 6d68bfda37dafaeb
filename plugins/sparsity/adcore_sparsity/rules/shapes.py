"""Sparsity rules of adcore/ops/shapes.py."""

from __future__ import annotations
