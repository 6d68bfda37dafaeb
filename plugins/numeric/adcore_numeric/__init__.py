"""adcore's numeric backend: finite differences with error estimates (seed 001, 数值微分)."""

from __future__ import annotations

from adcore_numeric.backend import NumericBackend

__all__ = ["NumericBackend"]
