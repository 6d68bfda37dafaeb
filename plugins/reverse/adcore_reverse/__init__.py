"""adcore-reverse: reverse-mode (tape) differentiation for adcore, and an eager Tensor API."""

from __future__ import annotations

from adcore_reverse.backend import ReverseBackend
from adcore_reverse.grad_mode import enable_grad, no_grad
from adcore_reverse.graph import to_dot
from adcore_reverse.tensor import Tensor

__all__ = ["ReverseBackend", "Tensor", "enable_grad", "no_grad", "to_dot"]
