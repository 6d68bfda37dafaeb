"""Sparsity rules of adcore/ops/eig.py."""

from __future__ import annotations
