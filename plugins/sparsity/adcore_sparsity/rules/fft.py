"""Sparsity rules of adcore/ops/fft.py."""

from __future__ import annotations
