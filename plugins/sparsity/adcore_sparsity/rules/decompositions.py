"""Sparsity rules of adcore/ops/decompositions.py."""

from __future__ import annotations
