"""Sparsity rules of adcore/ops/linalg.py."""

from __future__ import annotations
