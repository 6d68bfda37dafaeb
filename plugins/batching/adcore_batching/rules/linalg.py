"""Batch rules of contractions, linear algebra, decompositions, FFTs and convolutions (adcore/ops/contractions.py, contraction_forms.py, linalg.py, composite_linalg.py, decompositions.py, eig.py, fft.py, convolution.py)."""

from __future__ import annotations

from adcore_batching.rules.table import BATCH_RULES  # noqa: F401
