"""Activations: ReLU, GELU, Tanh, Sigmoid, Softmax, LogSoftmax (torch.nn's), on adcore.numpy's ops.

Constants are Python floats, so a float32 input gives a float32 output (NumPy's weak scalars).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import adcore.numpy as anp
from adcore.errors import InvalidValueError, MissingDependencyError
from adcore_nn.module import Module

__all__ = ["GELU", "LogSoftmax", "ReLU", "Sigmoid", "Softmax", "Tanh", "gelu"]

_SQRT1_2 = 1 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _erf() -> Any:
    try:
        return anp.erf  # registered by the adcore-scipy plugin
    except Exception as error:
        raise MissingDependencyError(
            "GELU(approximate='none') needs the op 'erf' from the adcore-scipy plugin, which is not loaded; "
            "install/enable adcore-scipy or use GELU(approximate='tanh')"
        ) from error


def gelu(x: Any, approximate: str = "none") -> Any:
    """x * Phi(x) with Phi the normal CDF via erf; 'tanh': torch's tanh approximation."""
    if approximate == "tanh":
        return 0.5 * x * (1.0 + anp.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    return x * 0.5 * (1.0 + _erf()(x * _SQRT1_2))


def _softmax_dim(name: str, ndim: int) -> int:
    # torch's legacy implicit dim (torch.nn.functional._get_softmax_dim), with its warning
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


class ReLU(Module):
    """max(x, 0), derivative 0 at 0 as torch's. `inplace=True` is accepted for ported code but does not
    overwrite the input (adcore's values are never written in place); the output is the same."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Any) -> Any:
        return anp.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x * Phi(x); approximate='tanh' uses torch's tanh form. 'none' needs the adcore-scipy plugin's erf."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise InvalidValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Any) -> Any:
        return gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """tanh(x)."""

    def forward(self, input: Any) -> Any:
        return anp.tanh(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), computed without overflow."""

    def forward(self, input: Any) -> Any:
        return anp.sigmoid(input)


class Softmax(Module):
    """exp(x) / sum(exp(x)) along dim; dim=None picks torch's legacy dim, with torch's warning."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Any) -> Any:
        dim = _softmax_dim("softmax", input.ndim) if self.dim is None else self.dim
        return anp.softmax(input, axis=dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along dim, computed stably; dim=None as Softmax's."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Any) -> Any:
        dim = _softmax_dim("log_softmax", input.ndim) if self.dim is None else self.dim
        return anp.log_softmax(input, axis=dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
