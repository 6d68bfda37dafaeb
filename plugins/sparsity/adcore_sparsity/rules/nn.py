"""Sparsity rules of adcore/ops/nn.py."""

from __future__ import annotations
