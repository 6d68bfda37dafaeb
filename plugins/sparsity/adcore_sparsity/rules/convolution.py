"""Sparsity rules of adcore/ops/convolution.py."""

from __future__ import annotations
