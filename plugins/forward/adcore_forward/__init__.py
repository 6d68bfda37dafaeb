"""adcore's forward backend: dual numbers carrying a batch of tangents (seed 001, 二元数求导法)."""

from __future__ import annotations

from adcore_forward.backend import ForwardBackend
from adcore_forward.dual import Dual, ForwardTrace

__all__ = ["Dual", "ForwardBackend", "ForwardTrace"]
