"""Sparsity rules of adcore/ops/contractions.py."""

from __future__ import annotations
